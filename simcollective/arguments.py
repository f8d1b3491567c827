"""The argparse pieces the command line's subcommands share: the parser class, the rule on
options given but not used, the hardware options, their conflicts, and the machine they
describe.

The one rule of every command: an option given explicitly (on the command line, whatever
its value, the default included) that the chosen command, algorithm, topology or profile
does not use is an error, and so is a single-valued option given twice. :class:`Parser`
records which options were given (:func:`given`) and refuses a repeat; a command names
what it does not use with :func:`refuse_unused`.

``cli`` and every command module (``sweeps``, ``figures``, ``drawings``, ``bench``,
``p2p``, the compare command) import these; this module imports none of them.
"""

from __future__ import annotations

import argparse

from .errors import UserInputError

__all__ = ["Parser", "given", "refuse_unused", "check_distinct_outputs", "add_topology_arguments",
           "add_nccl_version_argument",
           "check_topology_conflicts", "topology_config", "add_plugin_argument", "load_plugin_arguments",
           "add_engine_argument", "add_yes_argument"]

#: the namespace attribute in which :class:`Parser` records the options given: dest -> flag
GIVEN = "given_options"


def _mark(action, namespace, option_string, values=None) -> None:
    """Record that ``action`` was given (as ``option_string``); a second time is an error."""
    seen = getattr(namespace, GIVEN, None)
    if seen is None:
        seen = {}
        setattr(namespace, GIVEN, seen)
    if action.dest in seen and not isinstance(action, _Append):
        what = "" if action.nargs == 0 else f" ({getattr(namespace, action.dest)!r}, then {values!r})"
        raise argparse.ArgumentError(action, f"given twice{what}; it is single-valued: give it once")
    seen.setdefault(action.dest, option_string or action.metavar or action.dest)


class _StoreOnce(argparse.Action):
    """``store``, refusing a second value."""

    def __call__(self, parser, namespace, values, option_string=None):
        _mark(self, namespace, option_string, values)
        setattr(namespace, self.dest, values)


class _StoreTrueOnce(argparse.Action):
    """``store_true``, refusing a repeat."""

    def __init__(self, option_strings, dest, default=False, required=False, help=None):
        super().__init__(option_strings, dest, nargs=0, const=True, default=default, required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        _mark(self, namespace, option_string)
        setattr(namespace, self.dest, True)


class _Append(argparse.Action):
    """``append`` (repeatable), recorded as given."""

    def __call__(self, parser, namespace, values, option_string=None):
        _mark(self, namespace, option_string)
        items = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, items + [values])


class KeyValueAppend(_Append):
    """A repeatable ``KEY=VALUE`` option: the same KEY twice is an error (different keys are
    the point of repeating it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        key = str(values).split("=", 1)[0].strip()
        for old in getattr(namespace, self.dest, None) or []:
            if str(old).split("=", 1)[0].strip() == key:
                raise argparse.ArgumentError(self, f"key {key!r} given twice ({old!r} and {values!r}); "
                                                   "give each key once")
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """The command line's parser (its subcommands' too): errors are one line
    (``PROG: error: ...``, exit 2, no usage dump), single-valued options refuse a repeat,
    and every option given is recorded (:func:`given`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        self.register("action", "store_true", _StoreTrueOnce)
        self.register("action", "append", _Append)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def help_when_shown(self, action, text) -> None:
        """``action``'s help is ``text()``, computed when the help is shown (a listing that
        would import modules the command does not need, such as every algorithm)."""
        self.__dict__.setdefault("_help_when_shown", []).append((action, text))

    def format_help(self):
        for action, text in self.__dict__.pop("_help_when_shown", ()):
            action.help = text()
        return super().format_help()


def given(args) -> dict:
    """``{dest: flag as typed}`` of the options given on the command line."""
    return dict(getattr(args, GIVEN, None) or {})


def refuse_unused(args, unused: dict) -> None:
    """``unused``: ``{dest: why it is not used}``; the first one that was given is an error
    naming the flag as typed."""
    seen = given(args)
    for dest, why in unused.items():
        if dest in seen:
            raise UserInputError(f"{seen[dest]} is not used {why}; drop it")


def check_distinct_outputs(**paths) -> None:
    """``flag=path`` of a command's output files: two flags on one path would overwrite each
    other (``-`` is stdout: two on it would interleave)."""
    import os

    seen = {}
    for flag, path in paths.items():
        if path is None:
            continue
        flag = "--" + flag.replace("_", "-")
        where = path if path == "-" else os.path.realpath(path)
        if where in seen:
            raise UserInputError(f"{seen[where][0]} {seen[where][1]} and {flag} {path} are the same "
                                 f"{'stream' if path == '-' else 'file'}: each writes its own output; "
                                 "give them different paths")
        seen[where] = (flag, path)


def add_yes_argument(p, also: str = "") -> None:
    """``--yes``: run what the guard estimates beyond its wall limit (10 min by default;
    ``simcollective.guard``); ``main`` lifts the limit when it is given. ``also``: what else
    the command's ``--yes`` confirms."""
    p.add_argument("--yes", action="store_true",
                   help=f"run even when the estimate is beyond the wall limit (10 min){also}")


def add_topology_arguments(p: argparse.ArgumentParser, network: bool = True, profile: str | None = None,
                           nodes_default: str | None = None) -> None:
    """The hardware options shared by ``run``, ``p2p`` and ``draw-topology``.

    ``network=False`` (``draw-topology``): no ``--profile``/``--routing``, which would be ignored.
    ``profile``: the command's own default profile (``compare``: nccl), else the run default.
    ``nodes_default``: what the command does without ``--nodes``, said in its help.
    """
    import topologies

    from .run_config import ROUTINGS
    from .simulate import run_defaults

    D = run_defaults()
    g = p.add_argument_group("hardware")
    g.add_argument("--topology", default=D["topology"], metavar="NAME",
                   help=f"preset: {', '.join(topologies.PRESETS)} (default: {D['topology']})")
    g.add_argument("--nodes", default=str(D["nodes"]), metavar="N",
                   help=f"number of servers (for fat-tree: single-GPU hosts) (default: {nodes_default or D['nodes']})")
    g.add_argument("--topology-opt", action=KeyValueAppend, default=[], metavar="KEY=VALUE",
                   help="builder parameter, repeatable with different keys (e.g. oversubscription=3)")
    g.add_argument("--topology-file", metavar="PATH", help="a user graph (.graphml or node-link .json)")
    if not network:
        return
    profile = profile or D["profile"]
    g.add_argument("--profile", default=profile, metavar="NAME|PATH",
                   help=f"network profile: ideal, cm02, smpi, nccl or a TOML file (default: {profile})")
    g.add_argument("--routing", default=D["routing"], choices=ROUTINGS, metavar="POLICY",
                   help="equal-cost path choice: first (static), hash (ECMP), dest (by destination, D-mod-k: "
                        "InfiniBand's fat-tree routing), study (SimGrid's Floyd routes over the study's platform "
                        "files: abci, dgx1, dgx2), or auto: the machine's own, on a hardware preset over several "
                        "scalable units dest (InfiniBand) or hash (Ethernet), first elsewhere; "
                        f"one of {', '.join(ROUTINGS)} (default: {D['routing']})")


def add_nccl_version_argument(p, default_text: str | None = None) -> None:
    """``--nccl-version X.Y[.Z]``: the NCCL release whose tuner the nccl algorithms model
    (:mod:`simcollective.nccl.versions`); ``default_text`` says what happens without it."""
    from .nccl.versions import NEWEST, modelled_range

    p.add_argument("--nccl-version", metavar="X.Y[.Z]",
                   help=f"NCCL release whose tuner (algorithms, protocols, latency tables) the nccl algorithms "
                        f"model; modelled: {modelled_range()} (default: {default_text or 'the newest, ' + NEWEST})")


def check_topology_conflicts(args) -> None:
    """``--topology-file`` replaces the preset: ``--topology/--nodes/--topology-opt`` with it
    are errors, given with any value (the default included)."""
    if getattr(args, "topology_file", None):
        seen = given(args)
        for flag, value, default in (("--topology", args.topology, "abci"), ("--nodes", args.nodes, "1"),
                                     ("--topology-opt", args.topology_opt, [])):
            if flag[2:].replace("-", "_") in seen or value != default:
                raise UserInputError(f"{flag} and --topology-file do not combine: the file is the whole machine; "
                                     f"drop {flag}")




def topology_config(args):
    """The :class:`~simcollective.simulate.RunConfig` of the machine alone (``--topology``,
    ``--nodes``, ``--topology-opt``, ``--topology-file``), conflicts refused."""
    from .simulate import RunConfig

    check_topology_conflicts(args)
    return RunConfig(topology=args.topology, nodes=args.nodes, topology_opts=args.topology_opt,
                     topology_file=args.topology_file)


# -- plugins (benchcli) ----------------------------------------------------------------------
def add_plugin_argument(p: argparse.ArgumentParser) -> None:
    """``--plugin MODULE_OR_FILE`` (repeatable) of the commands that take an algorithm."""
    p.add_argument("--plugin", action="append", metavar="MODULE_OR_FILE",
                   help="import this module or .py file first: the algorithms it registers (with "
                        "@simcollective.algorithms.register) can be named; repeatable")


def load_plugin_arguments(args) -> None:
    """Load the ``--plugin`` modules given (if the command has the option): an import error
    is one line naming the plugin."""
    specs = getattr(args, "plugin", None)
    if specs:
        from .algorithms.plugins import load_plugins

        load_plugins(specs)


# -- the execution path (engine) ------------------------------------------------------------
ENGINE_HELP = ("execution path: auto (the compiled event loop where it applies, else SimPy; the output "
               "names the one used and why), compiled (required: an error where it does not apply), "
               "simpy (the per-rank SimPy reference) (default: auto)")


def add_engine_argument(p) -> None:
    """``--engine auto|compiled|simpy`` (``RunConfig.engine``) on parser or group ``p``."""
    p.add_argument("--engine", default="auto", choices=("auto", "compiled", "simpy"), help=ENGINE_HELP)
