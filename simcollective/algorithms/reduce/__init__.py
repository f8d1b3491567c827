"""reduce algorithms, one file each."""
