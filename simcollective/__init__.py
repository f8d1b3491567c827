"""simcollective: flow-level simulation of dense and sparse allreduce on GPU clusters."""
__version__ = "0.1.0"
