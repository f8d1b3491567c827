"""Pipelined trees (:func:`pipelined_trees`) react through ``Comm.completions`` with counted
sends: the same results, simulated times and messages as the same pipeline written with
``waitany`` over its posted receives and a request per send."""

import networkx as nx
from hypothesis import given, settings, strategies as st

import topologies
from simcollective.data.symbolic import symbolic_input
from simcollective.patterns.dense import split
from simcollective.patterns.trees import TreeJob, chain_tree_links, double_tree_parents, pipelined_trees
from simcollective.profiles import Profile, load_profile
from simcollective.runtime import ComputeModel, run_ranks

IDEAL = load_profile("ideal")
COSTED = Profile(name="costed", compute=ComputeModel(dense_bytes_per_second=3e9))


def _by_waitany(comm, jobs, up=True, down=True):
    """The reference: the tree pipeline of :func:`pipelined_trees` reacting by ``waitany``
    over the list of its posted receives, each send a request waited for at the end."""
    waiting, actions, sends = [], [], []

    def post(job, src, j, kind):
        if j < len(job.chunks):
            waiting.append(comm.irecv(src, tag=(job.tag, kind, j)))
            actions.append((job, src, j, kind))

    def send_up(job, j):
        if job.parent is not None:
            sends.append(comm.isend(job.parent, job.acc[j], tag=(job.tag, "up", j)))
        else:
            deliver(job, j, job.acc[j])

    def deliver(job, j, payload):
        job.out[j] = payload
        if down:
            sends.extend(comm.isend(c, payload, tag=(job.tag, "down", j)) for c in job.children)

    for job in jobs:
        k = len(job.chunks)
        job.out, job.acc, job.missing = [None] * k, list(job.chunks), [len(job.children)] * k
        if up:
            for c in job.children:
                post(job, c, 0, "up")
            if not job.children:
                for j in range(k):
                    send_up(job, j)
        elif job.parent is None:
            for j in range(k):
                deliver(job, j, job.chunks[j])
        if down and job.parent is not None:
            post(job, job.parent, 0, "down")
    while waiting:
        i, got = yield comm.waitany(waiting)
        del waiting[i]
        job, src, j, kind = actions.pop(i)
        post(job, src, j + 1, kind)
        if kind == "down":
            deliver(job, j, got)
        else:
            job.acc[j] = yield comm.add(job.acc[j], got)
            job.missing[j] -= 1
            if job.missing[j] == 0:
                send_up(job, j)
    if sends:
        yield comm.waitall(sends)
    return jobs


def _star(P: int) -> nx.DiGraph:
    """P GPUs on one switch: a rank's concurrent messages share its link (contention)."""
    g = nx.DiGraph(name=f"star{P}", description="test star", gpus_per_node=1, default_group_size=P)
    g.add_node("s", kind="switch")
    for i in range(P):
        g.add_node(f"g{i}", kind="gpu", server=i, local=0)
        for u, v in ((f"g{i}", "s"), ("s", f"g{i}")):
            g.add_edge(u, v, bandwidth=1e9, latency=1e-6, duplex="full", link_type="nvlink")
    return g


@st.composite
def forests(draw):
    """P ranks, a few trees over them (random shapes and roots), chunk counts and sizes
    from eager (under 64 KiB) to rendezvous."""
    P = draw(st.integers(2, 7))
    trees = []
    for _ in range(draw(st.integers(1, 3))):
        order = draw(st.permutations(range(P)))
        parents = {order[0]: None}
        for i in range(1, P):
            parents[order[i]] = order[draw(st.integers(0, i - 1))]
        trees.append((parents, draw(st.integers(1, 4))))
    n = draw(st.sampled_from([50, 5_000, 40_000, 100_000]))
    return P, trees, n


@settings(max_examples=40, deadline=None)
@given(forests(), st.sampled_from([IDEAL, COSTED]), st.sampled_from([(True, True), (True, False), (False, True)]))
def test_pipelined_trees_run_as_the_waitany_pipeline(forest, profile, updown):
    P, trees, n = forest
    up, down = updown

    def main(comm, x, pipeline):
        jobs = []
        for t, (half, (parents, k)) in enumerate(zip(split(x, len(trees)), trees)):
            kids = [c for c in range(comm.size) if parents[c] == comm.rank]
            jobs.append(TreeJob(split(half, k), parents[comm.rank], kids, tag=t))
        yield from pipeline(comm, jobs, up, down)
        return [[(p.start, p.stop, p.segments) if p is not None else None for p in job.out] for job in jobs]

    g = _star(P)
    inputs = lambda r: (symbolic_input(r, n, "float32"),)
    new = run_ranks(g, topologies.gpus(g), main, lambda r: inputs(r) + (pipelined_trees,), profile)
    ref = run_ranks(g, topologies.gpus(g), main, lambda r: inputs(r) + (_by_waitany,), profile)
    assert new.outputs == ref.outputs
    assert new.finish == ref.finish and new.makespan == ref.makespan
    assert new.messages == ref.messages and new.message_bytes == ref.message_bytes
    assert new.events <= ref.events   # (no event per rendezvous send)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=12))
def test_chain_tree_links_join_chains_by_their_first_gpus(sizes):
    """Every rank's links, made for all ranks at once: chains in rank order inside a node,
    first GPUs joined as the node tree joins the nodes (children in node order)."""
    nodes, r = [], 0
    for n in sizes:
        nodes.append(list(range(r, r + n)))
        r += n
    for parents in double_tree_parents(len(nodes)):
        links = chain_tree_links(nodes, parents)
        assert sorted(links) == list(range(r))
        for n, chain in enumerate(nodes):
            for i, q in enumerate(chain):
                parent, children = links[q]
                below = [nodes[c][0] for c in range(len(nodes)) if parents[c] == n] if i == 0 else []
                assert children == chain[i + 1:i + 2] + below
                if i:
                    assert parent == chain[i - 1]
                else:
                    assert parent == (None if parents[n] is None else nodes[parents[n]][0])
