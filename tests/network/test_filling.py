"""The max-min filling: interpreted and compiled give bit-identical rates, in fresh or kept
scratch, the JIT budget, the reference filling, feasibility and bottlenecks, independent groups."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.network import filling
from simcollective.network.engine import max_min_rates
from simcollective.network.kernels import fill as compiled_fill, fill_with as compiled_fill_with


@st.composite
def problems(draw):
    m = draw(st.integers(1, 12))
    n = draw(st.integers(1, 6))
    entries = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1),
                                      st.sampled_from([1.0, 2.0, 0.5, 1.25])), max_size=40))
    w = draw(st.lists(st.sampled_from([1.0, 0.5, 2.0, 1 / 3]), min_size=m, max_size=m))
    b = draw(st.lists(st.floats(0.1, 100.0), min_size=m, max_size=m))
    c = draw(st.lists(st.floats(0.1, 100.0), min_size=n, max_size=n))
    return w, b, entries, c


@settings(max_examples=200, deadline=None)
@given(problems())
def test_interpreted_and_compiled_filling_give_bit_identical_rates(p):
    w, b, entries, c = p
    fi = np.array([e[0] for e in entries], dtype=np.intp)
    rj = np.array([e[1] for e in entries], dtype=np.intp)
    av = np.array([e[2] for e in entries], dtype=np.float64)
    outs = []
    for kernel in (filling.fill, compiled_fill):
        rates, cap = np.zeros(len(w)), np.array(c)
        passes = kernel(np.array(w), np.array(b), fi, rj, av, cap, rates, 1e-12)
        outs.append((rates.tobytes(), cap.tobytes(), passes))
    assert outs[0] == outs[1]


def _arrays(p):
    w, b, entries, c = p
    fi = np.array([e[0] for e in entries], dtype=np.intp)
    rj = np.array([e[1] for e in entries], dtype=np.intp)
    av = np.array([e[2] for e in entries], dtype=np.float64)
    return np.array(w), np.array(b), fi, rj, av, np.array(c)


@settings(max_examples=60, deadline=None)
@given(st.lists(problems(), min_size=1, max_size=5))
def test_solves_in_kept_scratch_equal_fresh_solves_to_the_bit(ps):
    # the array store keeps the filling's scratch across solves (sized for the largest,
    # left dirty by the one before): each solve equals one in fresh arrays
    k = max(max(len(p[2]), len(p[0]) + 1) for p in ps) + 3
    for kernel in (filling.fill_with, compiled_fill_with):
        iw, fw, bw = np.full((filling.NIW, k), 7, np.intp), np.full((1, k), np.nan), np.ones((2, k), np.bool_)
        for p in ps:
            w, b, fi, rj, av, c = _arrays(p)
            outs = []
            for run in (lambda r, cap: compiled_fill(w, b, fi, rj, av, cap, r, 1e-12),
                        lambda r, cap: kernel(w, b, fi, rj, av, cap, r, 1e-12, iw, fw, bw)):
                rates, cap = np.zeros(len(w)), c.copy()
                passes = run(rates, cap)
                outs.append((rates.tobytes(), cap.tobytes(), passes))
            assert outs[0] == outs[1]


def test_the_stores_scratch_grows_with_its_slots_and_is_kept_otherwise():
    from simcollective.network import bulk_kernels as K

    def same(X, Y):
        return all(a is b for a, b in zip(X, Y))

    X1 = K.work(K.no_work(), 256, 3)
    assert all(a.shape[1] >= 768 for a in X1)
    assert same(K.work(X1, 256, 3), X1) and same(K.work(X1, 128, 5), X1)
    X2 = K.work(X1, 512, 3)
    assert all(a.shape[1] >= 1536 for a in X2)
    assert [a.dtype for a in X2] == [np.intp, np.float64, np.bool_]


_RUN = (
    "import json, sys\n"
    "from simcollective.simulate import RunConfig, run_allreduce\n"
    "from simcollective.network import filling, tuning\n"
    "{patch}"
    "rep = run_allreduce(RunConfig(topology='abci', nodes=4, algorithm='ring-ring', elements=2**20, dtype='int32'))\n"
    "print(json.dumps([rep.fields['time_s'], 'numba' in sys.modules, filling.interpreted_work()]))\n"
)


def _run(patch: str) -> list:
    p = subprocess.run([sys.executable, "-c", _RUN.format(patch=patch)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_small_run_solves_interpreted_without_loading_numba_and_past_jit_after_compiled():
    # ring-ring on 16 GPUs solves six components (measured): interpreted with the default
    # budget, numba never imported; with a budget of 0 every solve is compiled; same result
    t_interp, numba_interp, work = _run("")
    assert not numba_interp and work > 0
    patch = ("import dataclasses\n"
             "tuning.DEFAULT_TUNING = dataclasses.replace(tuning.DEFAULT_TUNING, jit_after=0)\n"
             "import simcollective.network.engine as e; e.DEFAULT_TUNING = tuning.DEFAULT_TUNING\n")
    t_comp, numba_comp, work0 = _run(patch)
    assert numba_comp and work0 == 0
    assert t_interp == t_comp


def test_the_budget_counts_interpreted_work_and_then_switches(monkeypatch):
    # (this process has loaded the compiled kernel, which is then always used: forget it)
    monkeypatch.delitem(sys.modules, "simcollective.network.kernels")
    saved = filling._WORK[0]
    try:
        filling._WORK[0] = 0
        # A: x->y, B: y->z, C: x->z: 4 entries + 3 flows + 2 resources, one pass
        args = ([1, 1, 1], [9, 9, 9], [0, 1, 2, 2], [0, 1, 0, 1], [1, 1, 1, 1], [1.0, 1.0])
        assert filling.max_min_rates(*args, jit_after=100).tolist() == [0.5, 0.5, 0.5]
        assert filling.interpreted_work() == 9
        # a problem whose first pass would pass the budget runs compiled, uncounted
        assert filling.max_min_rates(*args, jit_after=17).tolist() == [0.5, 0.5, 0.5]
        assert filling.interpreted_work() == 9
    finally:
        filling._WORK[0] = saved


# The plain filling (every pass over every entry, flow and resource) is the oracle: the incremental filling (a pass updates only the
# resources of the flows it fixed) must give the same rates and capacities to the bit.
def _reference_fill(w, b, fi, rj, av, c, rates, level_tol):
    m, n, k = w.shape[0], c.shape[0], fi.shape[0]
    fl = b / w
    aw = av * w[fi]
    fixed = np.zeros(m, dtype=np.bool_)
    left, passes = m, 0
    while left > 0:
        passes += 1
        wsum = np.zeros(n)
        for e in range(k):
            if not fixed[fi[e]]:
                wsum[rj[e]] += aw[e]
        level = np.full(n, np.inf)
        level[wsum > 0] = c[wsum > 0] / wsum[wsum > 0]
        lam = min(fl[~fixed].min(initial=np.inf), level.min(initial=np.inf))
        if lam == np.inf:
            break
        thresh = lam * (1.0 + level_tol)
        fix = (fl <= thresh) & ~fixed
        for e in range(k):
            if not fixed[fi[e]] and level[rj[e]] <= thresh:
                fix[fi[e]] = True
        dec = np.zeros(n)
        for i in np.flatnonzero(fix):
            rates[i] += min(w[i] * lam, b[i])
        for e in range(k):
            if fix[fi[e]]:
                dec[rj[e]] += av[e] * min(w[fi[e]] * lam, b[fi[e]])
        fixed |= fix
        left -= int(fix.sum())
        c[:] = np.maximum(c - dec, 0.0)
    return passes


@settings(max_examples=300, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_the_filling_gives_the_reference_filling_rates_to_the_bit(p, rnd):
    w, b, entries, c = p
    entries = list(entries)
    rnd.shuffle(entries)  # any entry order (the engine's are grouped by flow)
    fi = np.array([e[0] for e in entries], dtype=np.intp)
    rj = np.array([e[1] for e in entries], dtype=np.intp)
    av = np.array([e[2] for e in entries], dtype=np.float64)
    outs = []
    for kernel in (_reference_fill, filling.fill, compiled_fill):
        rates, cap = np.zeros(len(w)), np.array(c)
        passes = kernel(np.array(w), np.array(b), fi, rj, av, cap, rates, 1e-12)
        outs.append((rates.tobytes(), cap.tobytes(), passes))
    assert outs[0] == outs[1] == outs[2]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_max_min_solution_is_feasible_and_every_flow_has_a_bottleneck(data):
    m = data.draw(st.integers(1, 8))
    n = data.draw(st.integers(1, 6))
    caps = [data.draw(st.floats(0.5, 10.0)) for _ in range(n)]
    w = [data.draw(st.floats(0.1, 5.0)) for _ in range(m)]
    b = [data.draw(st.floats(0.1, 20.0)) for _ in range(m)]
    fi, rj, av = [], [], []
    for i in range(m):
        rs = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
        for r in sorted(rs):
            fi.append(i)
            rj.append(r)
            av.append(data.draw(st.sampled_from([1.0, 1.05, 0.05])))
    rates = max_min_rates(w, b, fi, rj, av, caps)
    load = [0.0] * n
    for i, r, a in zip(fi, rj, av):
        load[r] += a * rates[i]
    for r in range(n):
        assert load[r] <= caps[r] * (1 + 1e-9)
    for i in range(m):
        assert rates[i] <= b[i] * (1 + 1e-12)
        if rates[i] >= b[i] * (1 - 1e-9):
            continue
        # weighted bottleneck: a saturated resource on which i has the largest rate/weight
        ok = False
        for e, (fi_e, r) in enumerate(zip(fi, rj)):
            if fi_e != i or load[r] < caps[r] * (1 - 1e-9):
                continue
            others = [rates[j] / w[j] for j, rr in zip(fi, rj) if rr == r]
            if rates[i] / w[i] >= max(others) * (1 - 1e-9):
                ok = True
        assert ok, (i, rates, load, caps)


def _random_max_min_problem(rng, groups, ties):
    """Independent groups of flows over their own resources (the racks of a cluster),
    with exact ties (unit capacities, weights and coefficients) or random figures."""
    w, b, fi, rj, av, caps = [], [], [], [], [], []
    for _ in range(groups):
        n0, m0 = len(caps), len(w)
        n = int(rng.integers(1, 6))
        caps += [1.0] * n if ties else rng.uniform(0.5, 10.0, n).tolist()
        for i in range(int(rng.integers(1, 12))):
            w.append(1.0 if ties else float(rng.uniform(0.1, 5.0)))
            b.append(float(rng.choice([0.25, 2.0, 50.0])) if ties else float(rng.uniform(0.1, 20.0)))
            for r in sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist()):
                fi.append(m0 + i)
                rj.append(n0 + r)
                av.append(1.0 if ties else float(rng.choice([1.0, 1.05, 0.05])))
    return w, b, fi, rj, av, caps


@pytest.mark.parametrize("ties", [True, False])
def test_independent_groups_solved_together_match_solved_apart(ties):
    # the compiled filling raises all groups together, one level per pass: each group's
    # rates must be those it gets alone (to the level tolerance, which may fix a group's
    # level together with another group's within 1e-12)
    import numpy as np

    rng = np.random.default_rng(7)
    levels = []
    for _ in range(200):
        groups = [_random_max_min_problem(rng, 1, ties) for _ in range(int(rng.integers(1, 9)))]
        w, b, fi, rj, av, caps, apart = [], [], [], [], [], [], []
        for gw, gb, gfi, grj, gav, gcaps in groups:
            m0, n0 = len(w), len(caps)
            w += gw
            b += gb
            fi += [m0 + i for i in gfi]
            rj += [n0 + j for j in grj]
            av += gav
            caps += gcaps
            apart += max_min_rates(gw, gb, gfi, grj, gav, gcaps).tolist()
        together = max_min_rates(w, b, fi, rj, av, caps)
        assert together.tolist() == pytest.approx(apart, rel=1e-11)
        levels.append(len(set(np.round(together / np.array(w), 9))))
    assert max(levels) > 4


def test_max_min_without_binding_resources_gives_the_bounds():
    assert max_min_rates([1.0, 2.0], [3.0, 4.0], [], [], [], []).tolist() == [3.0, 4.0]
