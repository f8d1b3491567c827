"""The kernels run as plain Python with the JIT disabled, and compile one specialisation each."""




def test_kernels_run_as_plain_python_with_the_jit_disabled():
    # one code path: NUMBA_DISABLE_JIT=1 runs the same kernels as Python, with the same
    # results (a run through the per-flow solve and the array store, entered and left)
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, random, topologies\n"
        "from simcollective.network.engine import Network, SimEnvironment, Tuning\n"
        "from simcollective.profiles import load_profile\n"
        "import numba\n"
        "g = topologies.fat_tree(16, oversubscription=3.0); gp = topologies.gpus(g)\n"
        "env = SimEnvironment(); rnd = random.Random(2)\n"
        "net = Network(env, g, load_profile('cm02').network, tuning=Tuning(bulk_min=6, walk_limit=3, bulk_off=4))\n"
        "out = []\n"
        "for i in range(14):\n"
        "    net.transfer(gp[i], gp[14 + i % 2], 10**6 * (1 + i % 3), lambda f: out.append((f.seq, env.now)))\n"
        "env.run()\n"
        "print(json.dumps([numba.config.DISABLE_JIT, sorted(out), net.modes]))\n"
    )
    runs = []
    for disable in ("1", "0"):
        env = dict(os.environ, NUMBA_DISABLE_JIT=disable)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout))
    (jit_off, plain, modes), (jit_on, compiled, modes2) = runs
    assert jit_off and not jit_on
    assert plain == compiled and modes == modes2 and modes["arrays"] > 0


def test_every_kernel_compiles_one_specialisation():
    # no second specialisation for a literal argument (a constant passed to a compiled
    # callee), and helpers inlined into their callers compile no code of their own. Read
    # from each kernel's cache index (numba's own record of the specialisations compiled
    # for the current source), so it holds with a warm cache too, whatever other tests
    # compiled before: kernels taking arrays of several dtypes (the sparse union) keep one
    # specialisation per dtype, which is not what this checks.
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, numba\n"
        "from benchmarks.jit import compile_all\n"
        "from simcollective.simulate import RunConfig, run\n"
        "compile_all()\n"
        "run(RunConfig(topology='abci', nodes=2, algorithm='ring', elements=65536, engine='compiled'))\n"
        "from simcollective.network import bulk_kernels, kernels, replay_bulk, replay_flows, replay_heaps, replay_kernels\n"
        "from simcollective.network import replay_rows\n"
        "from simcollective.runtime import program_rows\n"
        "from simcollective.data import merge_kernel\n"
        "seen = {}\n"
        "for mod in (bulk_kernels, kernels, replay_bulk, replay_flows, replay_heaps, replay_kernels, replay_rows,\n"
        "            program_rows, merge_kernel):\n"
        "    for name, d in vars(mod).items():\n"
        "        if isinstance(d, numba.core.registry.CPUDispatcher) and d.py_func.__module__ == mod.__name__:\n"
        "            seen[mod.__name__.rsplit('.', 1)[1] + '.' + name] = d\n"
        "seen['kernels.fill'] = kernels.fill\n"
        "seen = {k: [d.targetoptions.get('inline') == 'always', [repr(key[0]) for key in d._cache._cache_file._load_index()]]\n"
        "        for k, d in seen.items()}\n"
        "print(json.dumps(seen))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=root)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    # the entry points called from Python ran (each compiled or loaded) ...
    for entry in ("bulk_kernels.step", "bulk_kernels.enter", "replay_kernels.events", "kernels.fill",
                  "merge_kernel.union", "replay_rows.message_rows", "program_rows.message_columns"):
        assert seen[entry][1], (entry, seen[entry])
    # ... and no kernel has a specialisation for a literal value (an inlined helper that a
    # test calls from Python has its own code, once)
    for name, (inlined, sigs) in seen.items():
        assert not any("Literal" in sig for sig in sigs), (name, sigs)
        assert not inlined or len(sigs) <= 1, (name, sigs)


def _slice_stores(tree):
    """(function, line) of every store of a non-constant into a slice in ``tree``'s functions."""
    import ast

    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assign) or isinstance(node.value, (ast.Constant, ast.UnaryOp)):
                continue
            targets = [t for x in node.targets for t in (x.elts if isinstance(x, ast.Tuple) else [x])]
            if any(isinstance(t, ast.Subscript) and any(isinstance(s, ast.Slice) for s in ast.walk(t.slice))
                   for t in targets):
                found.append((fn.name, node.lineno))
    return found


def test_no_kernel_assigns_an_array_to_a_slice():
    # ``a[:n] = b`` in a kernel compiles numba's error text for mismatched shapes (its string
    # formatting: seconds of every fresh cache's first compile); the kernels copy with loops.
    # A store of a constant (``a[k, :] = 0.0``) compiles no such text.
    import ast
    import pathlib

    import simcollective

    root = pathlib.Path(simcollective.__file__).parent
    kernels = [p for p in root.rglob("*.py") if "@njit" in p.read_text()] + [root / "network" / "filling.py"]
    stores = {str(p.relative_to(root)): _slice_stores(ast.parse(p.read_text())) for p in kernels}
    assert {k: v for k, v in stores.items() if v} == {}
    tree = ast.parse("def f(out, sr):\n    out[: sr.shape[0], : sr.shape[1]] = sr\n    out[1, :] = 0.0\n")
    assert _slice_stores(tree) == [("f", 2)]
