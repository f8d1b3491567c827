"""Benchmarks: scripts that print wall time, event rates and peak memory (not timed tests)."""
