"""alltoallv algorithms (all-to-all with a size per pair), one file each."""
