"""allreduce algorithms, one file each."""
