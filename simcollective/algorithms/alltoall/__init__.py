"""alltoall algorithms, one file each."""
