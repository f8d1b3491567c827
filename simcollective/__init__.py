"""simcollective: flow-level simulation of dense and sparse allreduce on GPU clusters.

From Python (the command line's names; see the README section "From Python")::

    import simcollective as sc
    r = sc.run(topology="dgx1", nodes=2, algorithm="ring-ring", elements="32M")
    r.phases, r.links                 # pandas DataFrames
    df = sc.sweep(algorithm=["ring", "ring-ring"], elements="1M", nodes=[1, 2])
    fig = sc.plot(df, x="nodes", hue="algorithm")

The heavy modules load on first use (``import simcollective`` stays fast for the CLI).
"""
__version__ = "0.1.0"

__all__ = ["run", "job", "sweep", "plot", "draw_topology", "load_results", "load_plugins", "Result", "RunConfig", "Report", "run_allreduce",
           "SimCollectiveError", "UserInputError", "TopologyError", "VerificationError", "DeadlockError"]

_LAZY = {
    "run": "api", "job": "api", "sweep": "api", "plot": "api", "draw_topology": "api", "load_results": "api", "Result": "api",
    "load_plugins": "api",
    "RunConfig": "simulate", "Report": "simulate", "run_allreduce": "simulate",
    "SimCollectiveError": "errors", "UserInputError": "errors", "TopologyError": "errors",
    "VerificationError": "errors", "DeadlockError": "errors",
}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'simcollective' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
