"""allgather algorithms, one file each."""
