"""The per-message paths made lighter in issue 17: one posting function for isend/irecv/
sendrecv (a posted receive is its event), traces from those paths, ring passes on flat
lists with blocks cut when reached, size-only arrays holding one bitset, and the
verification that skips results made of the very parts of one already verified."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topologies
from conftest import mesh_graph
from simcollective.patterns.dense import flatten, split
from simcollective.patterns.rings import ring_allgather, ring_reduce_scatter
from simcollective.data.verify import verify_symbolic
from simcollective.data.symbolic import SymbolicArray, concat, symbolic_input
from simcollective.errors import DeadlockError, VerificationError
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from simcollective.simulate import RunConfig, make_inputs, resolve, simulate, verify

IDEAL = load_profile("ideal")


class Blob:
    def __init__(self, nbytes):
        self.nbytes = nbytes


def run(main, P=4, args=lambda r: (), trace=False, profile=IDEAL):
    g = mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P], main, args, profile, trace=trace)


# -- point to point -------------------------------------------------------------------------------
def test_trace_spans_of_sendrecv_give_each_side_its_posting_time_and_bytes():
    """Rank 1 posts its receive 1 ms late: its recv span starts then; rank 0's send span
    starts at 0 and both end when the 10 MB have arrived (1e-6 s latency + 10 ms)."""
    def main(comm):
        if comm.rank == 0:
            yield comm.sendrecv(1, Blob(10**7), 1)
        else:
            yield comm.delay(1e-3)
            yield comm.sendrecv(0, Blob(8), 0)

    res = run(main, P=2, trace=True)
    s0 = {kind: (t0, t1, info) for kind, _, t0, t1, info in res.spans[0]}
    s1 = {kind: (t0, t1, info) for kind, _, t0, t1, info in res.spans[1]}
    assert s0["send"][0] == 0.0 and s0["send"][2] == {"peer": 1, "bytes": 10**7}
    assert s1["recv"][0] == pytest.approx(1e-3) and s1["recv"][2] == {"peer": 0, "bytes": 10**7}
    assert s0["send"][1] == s1["recv"][1] == pytest.approx(1e-3 + 1e-6 + 1e-2)
    # rank 1's 8-byte message is eager: its send span is empty, at its posting
    assert s1["send"][0] == s1["send"][1] == pytest.approx(1e-3)
    assert s0["recv"][2] == {"peer": 1, "bytes": 8}


def test_receive_of_an_arrived_message_completes_at_posting_with_the_payload():
    got = {}

    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, Blob(8))          # eager: arrives after the latency
        else:
            yield comm.delay(1.0)
            t = comm.now
            x = yield comm.irecv(0)
            got["x"], got["dt"] = x, comm.now - t

    run(main, P=2)
    assert isinstance(got["x"], Blob) and got["x"].nbytes == 8 and got["dt"] == 0.0


def test_two_receives_waiting_on_one_key_are_reported_and_matched_in_order():
    def main(comm):
        if comm.rank == 0:
            a = comm.irecv(1, tag=5)
            b = comm.irecv(1, tag=5)
            first = yield a
            second = yield b
            return first.nbytes, second.nbytes
        yield comm.send(0, Blob(3), tag=5)
        yield comm.send(0, Blob(4), tag=5)

    assert run(main, P=2).outputs[0] == (3, 4)

    def stuck(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.irecv(1, tag=5), comm.irecv(1, tag=5)])
        return None

    with pytest.raises(DeadlockError, match=r"rank 0 waits for: recv from rank 1 \(tag 5, world\); "
                                            r"recv from rank 1 \(tag 5, world\)"):
        run(stuck, P=2)


# -- ring passes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
def test_flat_ring_with_blocks_cut_when_reached_equals_the_chunk_list_ring(P):
    """The same ring written with chunk lists and split at the start, and with a flat list
    whose reduce-scatter cuts each block from x when it reaches it: the same results (each
    block holding every rank once), simulated times and message counts."""
    n = 1000 + P  # uneven last block

    def chunk_lists(comm, x):
        blocks = [[b] for b in split(x, comm.size)]
        yield from ring_reduce_scatter(comm, blocks, owns=(comm.rank + 1) % comm.size)
        yield from ring_allgather(comm, blocks, owns=(comm.rank + 1) % comm.size)
        return flatten(blocks)

    def flat(comm, x):
        blocks = [None] * comm.size
        yield from ring_reduce_scatter(comm, blocks, owns=(comm.rank + 1) % comm.size, source=x, flat=True)
        yield from ring_allgather(comm, blocks, owns=(comm.rank + 1) % comm.size, flat=True)
        return blocks

    inputs = lambda r: (symbolic_input(r, n, "float32"),)
    a, b = run(chunk_lists, P, inputs), run(flat, P, inputs)
    assert a.makespan == b.makespan and a.messages == b.messages == 2 * P * (P - 1)
    for out_a, out_b in zip(a.outputs, b.outputs):
        assert [(p.start, p.stop, p.segments) for p in out_a] == [(p.start, p.stop, p.segments) for p in out_b]
        verify_symbolic(out_b, n, P)


# -- size-only arrays -------------------------------------------------------------------------------
def _model(arr):
    """Per-element rank sets of a symbolic array (the reference model)."""
    out = []
    for s, e, m in arr.segments:
        out += [m] * (e - s)
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_slices_and_sums_match_a_per_element_model(data):
    n = data.draw(st.integers(1, 40))
    P = data.draw(st.integers(1, 6))
    xs = [symbolic_input(r, n, "float32") for r in range(P)]
    # a sum of random slices of random ranks laid end to end: any segment structure
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=4)) if n > 1 else []))
    bounds = list(zip([0] + cuts, cuts + [n]))
    parts = []
    for a, b in bounds:
        ranks = data.draw(st.sets(st.integers(0, P - 1), min_size=1))
        acc = None
        for r in sorted(ranks):
            acc = xs[r][a:b] if acc is None else acc + xs[r][a:b]
        parts.append(acc)
    arr = concat(parts)
    model = _model(arr)
    assert len(model) == len(arr) == n and arr.nbytes == 4 * n
    assert (arr.mask is not None) == (len(arr.segments) == 1)  # one bitset: kept as .mask
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    sub = arr[lo:hi]
    assert _model(sub) == model[lo:hi] and (sub.start, sub.stop) == (lo, hi)
    other = xs[data.draw(st.integers(0, P - 1))][lo:hi]
    total = sub + other
    om = _model(other)
    assert _model(total) == [m | o for m, o in zip(model[lo:hi], om)]
    assert (total.error is not None) == any(m & o for m, o in zip(model[lo:hi], om))


def test_one_bitset_arrays_still_record_double_counts_and_misuse():
    a = symbolic_input(0, 10, "float32")
    b = symbolic_input(1, 10, "float32")
    s = a[2:6] + b[2:6]
    assert s.mask == 3 and s.segments == ((2, 6, 3),) and s.error is None
    assert "count rank(s) 0 twice" in (s + a[2:6]).error
    assert "misaligned" in (a[0:4] + b[2:6]).error
    assert (a[0:0] + b[0:0]).segments == () and a[5:5].segments == ()
    assert SymbolicArray(0, 4, "float32", ((0, 4, 5),)).mask == 5
    with pytest.raises(VerificationError, match="twice"):
        verify_symbolic([s + a[2:6]], 4, 2)


def test_flatten_walks_deeper_nesting():
    x, y, z, w = (symbolic_input(r, 4, "float32") for r in range(4))
    assert flatten([[x, [y, z]], w, (x,)]) == [x, y, z, w, x]
    assert flatten([[x], [y, z]]) == [x, y, z]


# -- verification ---------------------------------------------------------------------------------
def _ring_run(collective="allreduce", P=4, n=64):
    cfg = RunConfig(topology="fat-tree", nodes=P, algorithm="ring" if collective == "allreduce" else "ring",
                    elements=n, dtype="float32", verify="symbolic", collective=collective)
    plan = resolve(cfg)
    return plan, simulate(plan, make_inputs(plan))


def test_results_made_of_the_parts_of_a_verified_rank_are_accepted():
    plan, res = _ring_run()
    outs = res.outputs
    assert all(o[i] is outs[0][i] for o in outs for i in range(len(o)))  # the allgather shares parts
    assert verify(plan, res).startswith("symbolic")


def test_a_result_differing_in_one_part_from_the_verified_one_is_walked_and_fails():
    plan, res = _ring_run()
    bad = list(res.outputs[0])
    bad[1] = bad[1] + bad[1]  # rank contributions counted twice in block 1
    res.outputs[2] = bad
    with pytest.raises(VerificationError, match="rank 2: part 1"):
        verify(plan, res)


def test_the_same_parts_expected_at_another_place_are_walked_and_fail():
    """Reduce-scatter: rank r must hold block r. Every rank returning rank 0's (correct)
    block is the very same part, but against other pieces: rank 1 fails."""
    cfg = RunConfig(topology="fat-tree", nodes=4, algorithm="ring", elements=16, dtype="float32",
                    verify="symbolic", collective="reduce-scatter")
    plan = resolve(cfg)
    res = simulate(plan, make_inputs(plan))
    verify(plan, res)
    res.outputs[1:] = [res.outputs[0]] * 3
    with pytest.raises(VerificationError, match="rank 1"):
        verify(plan, res)
