"""reduce_scatter algorithms, one file each."""
