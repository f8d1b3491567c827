"""Placeholder until ``python -m benchmarks.guard_costs`` writes the measured table."""

__all__ = ["BASE_RSS", "COSTS"]

BASE_RSS = 0
COSTS: dict = {}
