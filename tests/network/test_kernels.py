"""The kernels run as plain Python with the JIT disabled."""




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
