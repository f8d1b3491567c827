"""The argparse pieces the command line's subcommands share: the hardware options, their
conflicts, and the machine they describe.

``cli`` and every command module (``sweeps``, ``figures``, ``drawings``, ``bench``,
``p2p``, the compare command) import these; this module imports none of them.
"""

from __future__ import annotations

import argparse

from .errors import UserInputError

__all__ = ["add_topology_arguments", "check_topology_conflicts", "topology_config"]


def add_topology_arguments(p: argparse.ArgumentParser, network: bool = True, profile: str | None = None) -> None:
    """The hardware options shared by ``run``, ``p2p`` and ``draw-topology``.

    ``network=False`` (``draw-topology``): no ``--profile``/``--routing``, which would be ignored.
    ``profile``: the command's own default profile (``compare``: nccl), else the run default.
    """
    import topologies

    from .simulate import run_defaults

    D = run_defaults()
    g = p.add_argument_group("hardware")
    g.add_argument("--topology", default=D["topology"], metavar="NAME",
                   help=f"preset: {', '.join(topologies.PRESETS)} (default: {D['topology']})")
    g.add_argument("--nodes", default=str(D["nodes"]), metavar="N",
                   help=f"number of servers (for fat-tree: single-GPU hosts) (default: {D['nodes']})")
    g.add_argument("--topology-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="builder parameter, repeatable (e.g. oversubscription=3)")
    g.add_argument("--topology-file", metavar="PATH", help="a user graph (.graphml or node-link .json)")
    if not network:
        return
    profile = profile or D["profile"]
    g.add_argument("--profile", default=profile, metavar="NAME|PATH",
                   help=f"network profile: ideal, cm02, smpi, nccl or a TOML file (default: {profile})")
    g.add_argument("--routing", default=D["routing"], choices=("first", "hash", "study"),
                   help="equal-cost path choice: first (static) or hash (ECMP), or study: SimGrid's "
                        f"Floyd routes over the study's platform files (abci, dgx1, dgx2) (default: {D['routing']})")


def check_topology_conflicts(args) -> None:
    """``--topology-file`` replaces the preset: ``--topology/--nodes/--topology-opt`` with it are errors."""
    if getattr(args, "topology_file", None):
        for flag, value, default in (("--topology", args.topology, "abci"), ("--nodes", args.nodes, "1"),
                                     ("--topology-opt", args.topology_opt, [])):
            if value != default:
                raise UserInputError(f"{flag} and --topology-file do not combine: the file is the whole machine; "
                                     f"drop {flag}")




def topology_config(args):
    """The :class:`~simcollective.simulate.RunConfig` of the machine alone (``--topology``,
    ``--nodes``, ``--topology-opt``, ``--topology-file``), conflicts refused."""
    from .simulate import RunConfig

    check_topology_conflicts(args)
    return RunConfig(topology=args.topology, nodes=args.nodes, topology_opts=args.topology_opt,
                     topology_file=args.topology_file)
