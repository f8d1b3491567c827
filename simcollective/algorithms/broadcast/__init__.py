"""broadcast algorithms, one file each."""
