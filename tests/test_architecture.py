"""The house plan, read from the code: every import runs down the floors, no circles, no private
names taken from another module, and modules and functions of a readable size.

The floors (``docs/design.md`` explains what each owns), lowest first. A module belongs to the
floor of the longest prefix that names it; a module no prefix names fails the test, so a new
module is placed on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest


ROOT = Path(__file__).resolve().parents[1]


FLOORS = (
    ("physical graphs", ("topologies",)),
    ("base", ("simcollective.errors", "simcollective.units", "simcollective.parsing", "simcollective.files",
              "simcollective.data")),
    ("network", ("simcollective.network",)),
    ("runtime", ("simcollective.runtime",)),
    ("patterns", ("simcollective.patterns",)),
    ("nccl model", ("simcollective.nccl",)),
    ("algorithms", ("simcollective.algorithms",)),
    ("simulate", ("simcollective.simulate", "simcollective.run_config", "simcollective.resolve",
                  "simcollective.placement", "simcollective.memory", "simcollective.guard",
                  "simcollective.guard_table", "simcollective.profiles",
                  "simcollective.jobs")),
    ("validation", ("simcollective.validation",)),
    ("front ends", ("simcollective.cli", "simcollective.arguments", "simcollective.summary",
                    "simcollective.p2p", "simcollective.compare_command", "simcollective.sweeps",
                    "simcollective.figures", "simcollective.drawings", "simcollective.bench",
                    "simcollective.trace", "simcollective.job_command", "simcollective.listing", "simcollective.bench_flags")),
    ("api", ("simcollective.api", "simcollective")),
)


#: deliberate circles (each a set of modules), with the reason
DELIBERATE_CIRCLES: dict[frozenset, str] = {
    frozenset({"simcollective.network.filling", "simcollective.network.kernels"}):
        "one code path: kernels compiles filling's plain max-min function with numba, and filling "
        "reaches the compiled one lazily (NUMBA_DISABLE_JIT=1 runs the same function interpreted)",
}


#: files over 400 lines or with functions over 60 lines, each with its reason
SIZE_EXCEPTIONS: dict[str, str] = {
    "simcollective/patterns/rings.py":
        "ring_pass is the per-message hot loop of every ring; written in one frame on purpose "
        "(a call per step costs measurably at 1024 ranks)",
    "simcollective/patterns/trees.py":
        "pipelined_trees shares its per-tree state through closures; 17 of its lines are docstring",
}

MAX_FILE_LINES = 400

MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, Path]:
    out = {}
    for top in ("simcollective", "topologies"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out

MODULES = _modules()


def floor_of(module: str) -> int:
    best, floor = -1, None
    for i, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, floor = len(p), i
    if floor is None:
        raise AssertionError(f"{module} is on no floor of the plan: add it to FLOORS")
    return floor


def _type_checking_lines(tree) -> set:
    """Lines inside ``if TYPE_CHECKING:`` blocks (imports for annotations only, never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for sub in node.body:
                lines.update(range(sub.lineno, sub.end_lineno + 1))
    return lines


def _imports(module: str, path: Path):
    """(imported module, line, imported names) for every import of ``module`` that runs (lazy
    ones too; not those under ``if TYPE_CHECKING:``)."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for a in node.names:
                sub = f"{name}.{a.name}"
                yield (sub, node.lineno, ()) if sub in MODULES else (name, node.lineno, (a.name,))


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for module, path in MODULES.items():
        g.add_node(module)
        for target, line, names in _imports(module, path):
            if target.split(".")[0] not in ("simcollective", "topologies") or target == module:
                continue
            while target not in MODULES:
                target = target.rsplit(".", 1)[0]
            if target != module:
                g.add_edge(module, target, line=line, names=names)
    return g

GRAPH = _graph()


def test_every_module_is_on_a_floor():
    for module in MODULES:
        floor_of(module)


def test_every_import_runs_down():
    up = [f"{a} (floor {FLOORS[floor_of(a)][0]}) line {d['line']} imports {b} (floor {FLOORS[floor_of(b)][0]})"
          for a, b, d in GRAPH.edges(data=True)
          if floor_of(b) > floor_of(a) and not (b == "simcollective" and a.startswith("simcollective."))]
    assert not up, "\n".join(up)


def test_no_import_circles():
    # a package importing its own modules (its __init__ re-exporting) is not a circle of the plan
    g = nx.DiGraph((a, b) for a, b in GRAPH.edges if not a.startswith(b + "."))
    circles = [frozenset(c) for c in nx.simple_cycles(g)]
    unexplained = [sorted(c) for c in circles if c not in DELIBERATE_CIRCLES]
    assert not unexplained, unexplained


def test_no_module_takes_another_modules_private_names():
    bad = [f"{a} line {d['line']}: {n} from {b}" for a, b, d in GRAPH.edges(data=True)
           for n in d["names"] if n.startswith("_") and not n.startswith("__")]
    assert not bad, "\n".join(bad)


def test_private_modules_are_not_imported_from_outside_their_package():
    bad = []
    for a, b in GRAPH.edges:
        last = b.rsplit(".", 1)[-1]
        if last.startswith("_") and not last.startswith("__") and a.rsplit(".", 1)[0] != b.rsplit(".", 1)[0]:
            bad.append(f"{a} imports {b}")
    assert not bad, bad


def _sizes(path: Path):
    text = path.read_text()
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    long = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                long.append(f"{node.name} ({n} lines)")
    return lines, long


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_functions_are_readable_sizes(module):
    path = MODULES[module]
    rel = str(path.relative_to(ROOT))
    if rel in SIZE_EXCEPTIONS:
        pytest.skip(SIZE_EXCEPTIONS[rel])
    lines, long = _sizes(path)
    assert lines <= MAX_FILE_LINES, f"{rel}: {lines} lines > {MAX_FILE_LINES}"
    assert not long, f"{rel}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"


def test_size_exceptions_are_still_needed():
    for rel in SIZE_EXCEPTIONS:
        lines, long = _sizes(ROOT / rel)
        assert lines > MAX_FILE_LINES or long, f"{rel} fits the rule now: remove its exception"


def test_the_reader_sees_lazy_relative_and_type_checking_imports(tmp_path, monkeypatch):
    src = tmp_path / "simcollective" / "network"
    src.mkdir(parents=True)
    path = src / "probe.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..api import run\n"
                    "def f():\n    from ..simulate import run\n    from . import engine\n")
    monkeypatch.setitem(MODULES, "simcollective.network.probe", path)
    got = {(t, line) for t, line, _ in _imports("simcollective.network.probe", path)}
    assert ("simcollective.simulate", 5) in got            # lazy and relative: seen, and it runs up
    assert ("simcollective.network.engine", 6) in got
    assert not any(t == "simcollective.api" for t, _ in got)  # annotations only: not an arrow
    assert floor_of("simcollective.simulate") > floor_of("simcollective.network.probe")


def test_network_package_keeps_files_and_functions_small():
    # one idea per file: no file over 400 lines, no function over 60 lines
    import ast
    import pathlib

    import simcollective.network as pkg

    for p in sorted(pathlib.Path(pkg.__file__).parent.glob("*.py")):
        text = p.read_text()
        assert text.count("\n") <= 400, p.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno < 60, (p.name, node.name)


# -- code health ----------------------------------------------------------------------------------------

def test_no_module_imports_another_modules_private_names():
    """Front ends share parsing/formatting through the public simcollective.parsing, not
    cli._int / plot._fmt_*. Within one package, private helper modules (``_common``)
    are fine; a private *name* taken from another module is not."""
    import ast

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*(root / "simcollective").rglob("*.py"), *(root / "experiments").glob("*.py")]:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(root)}: from {node.module} import {alias.name}")
    # algorithm files share the algorithms package's private helpers module by design
    offenders = [o for o in offenders if "algorithms/" not in o and "from _common import" not in o]
    assert not offenders, offenders
