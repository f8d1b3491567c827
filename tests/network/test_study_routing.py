"""``--routing study``: SimGrid's Floyd routes over the study's declared routes (docs/study.md
sections 1-2), against closed forms and the worked checks."""

from types import SimpleNamespace

import numpy as np
import pytest

import topologies
from simcollective.network.routing import Router
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import run_cli, run_routed_flows as run


def test_dgx2_study_route_crosses_gpu15_link_twice():
    g = topologies.build("dgx2", 1, {})
    router = Router(g, "study")
    r = router.route("n0/gpu1", "n0/gpu2")
    link15 = router.edge_resource[("n0/gpu15", "n0/nvswitch")]
    assert list(r.resources).count(link15) == 2
    assert r.latency == pytest.approx(4 * 5e-6, rel=1e-15)
    S = 10**8
    done, net = run(g, router, [("n0/gpu1", "n0/gpu2", S)])
    assert done[0] == pytest.approx(20e-6 + S / 25e9, rel=1e-12)
    stats = {ls.name: ls.bytes for ls in net.link_stats()}
    assert stats["n0/gpu15<->n0/nvswitch"] == 2 * S


def abci_rule(a, b, per_rack=34):
    """The closed form of the study's ABCI routes (docs/study.md)."""
    sa, la = map(int, a[1:].replace("/gpu", " ").split())
    sb, lb = map(int, b[1:].replace("/gpu", " ").split())
    if sa == sb:
        return (a, b)
    ra, rb = sa // per_rack, sb // per_rack
    pa, pb = la // 2, lb // 2

    def leaf(s, p):
        return f"r{s // per_rack}/leaf{(s % per_rack) % 2 * 2 + p}"

    if ra != rb:
        return (a, f"n{sa}/plx{pa}", leaf(sa, pa), f"r{ra}/fbb0", "spine0", f"r{rb}/fbb0",
                leaf(sb, pb), f"n{sb}/plx{pb}", b)
    if (sa % per_rack) % 2 != (sb % per_rack) % 2:
        return (a, f"n{sa}/plx{pa}", leaf(sa, pa), f"r{ra}/fbb0", leaf(sb, pb), f"n{sb}/plx{pb}", b)
    if pa == pb:
        return (a, f"n{sa}/plx{pa}", leaf(sa, pa), f"n{sb}/plx{pb}", b)
    # a tie of cost-7 routes: always through both PLX0 ports, NVLink to / from GPU 0
    if pa == 0:
        return (a, f"n{sa}/plx0", leaf(sa, 0), f"n{sb}/plx0", f"n{sb}/gpu0", b)
    return (a, f"n{sa}/gpu0", f"n{sa}/plx0", leaf(sa, 0), f"n{sb}/plx0", b)


@pytest.mark.parametrize("nodes", [34, 68])
def test_abci_routes_match_the_closed_form_on_every_gpu_pair(nodes):
    g = topologies.build("abci", nodes, {})
    router = Router(g, "study")
    gpus = [n for n in g if g.nodes[n]["kind"] == "gpu"]
    bad = []
    for a in gpus:
        for b in gpus:
            if a != b and router.path(a, b) != abci_rule(a, b):
                bad.append((a, b, router.path(a, b), abci_rule(a, b)))
    assert not bad, bad[:3]
    assert len(gpus) * (len(gpus) - 1) == {34: 18360, 68: 73712}[nodes]


def test_abci_route_latencies_are_simgrids():
    # the barrier offsets measured on ABCI (docs/study.md): leaf crossing in
    # and out of a declared switch route counts twice
    r = Router(topologies.build("abci", 8, {}), "study")
    lat = {d: r.route("n0/gpu0", d).latency for d in ("n0/gpu1", "n4/gpu0", "n1/gpu0", "n4/gpu2")}
    assert lat["n0/gpu1"] == pytest.approx(9.000e-6, abs=1e-12)
    assert lat["n4/gpu0"] == pytest.approx(15.232e-6, abs=1e-12)
    assert lat["n1/gpu0"] == pytest.approx(15.464e-6, abs=1e-12)
    assert lat["n4/gpu2"] == pytest.approx(24.232e-6, abs=1e-12)


def _all_to_all(comm, payload):
    P, r = comm.size, comm.rank
    sends = [comm.isend((r + i) % P, payload) for i in range(1, P)]
    recvs = [comm.irecv((r - i) % P) for i in range(1, P)]
    yield comm.waitall(sends + recvs)
    return None


@pytest.mark.parametrize("nodes,plx0,plx1", [(8, 285.2e6, 184.5e6), (4, 117.4e6, 83.9e6)])
def test_plx0_skew_of_a_direct_all_to_all(nodes, plx0, plx1):
    # 2 MiB per pair: with study routing the PLX0 EDR ports carry more than PLX1
    # (32 GPUs: 285.2 MB against 184.5 MB, docs/study.md)
    g = topologies.build("abci", nodes, {})
    gpus = [n for n in g if g.nodes[n]["kind"] == "gpu"]
    payload = np.zeros(2 * 2**20, dtype=np.uint8)
    res = run_ranks(g, gpus, _all_to_all, lambda r: (payload,), load_profile("ideal"), "study")
    ports = {ls.name: ls.bytes for ls in res.links if "plx" in ls.name and "leaf" in ls.name}
    assert len(ports) == 2 * nodes
    for name, nbytes in ports.items():
        want = plx0 if "/plx0<->" in name else plx1
        assert nbytes == pytest.approx(want, abs=0.05e6), name
    # without study routing the ports are balanced
    res = run_ranks(g, gpus, _all_to_all, lambda r: (payload,), load_profile("ideal"), "first")
    ports = {ls.bytes for ls in res.links if "plx" in ls.name and "leaf" in ls.name}
    assert len(ports) == 1


def test_dgx2_declared_routes_only_towards_gpu15():
    r = Router(topologies.build("dgx2", 2, {}), "study")
    for i in range(16):
        for j in range(16):
            if i == j:
                continue
            p = r.path(f"n0/gpu{i}", f"n0/gpu{j}")
            if 15 in (i, j):
                assert p == (f"n0/gpu{i}", "n0/nvswitch", f"n0/gpu{j}")
            elif i // 2 == j // 2:
                assert p == (f"n0/gpu{i}", f"n0/plx{i // 2}", f"n0/gpu{j}")
            else:
                assert p == (f"n0/gpu{i}", "n0/nvswitch", "n0/gpu15", "n0/nvswitch", f"n0/gpu{j}")
    # between nodes: own PLX, the leaf, the other PLX
    assert r.path("n0/gpu3", "n1/gpu8") == ("n0/gpu3", "n0/plx1", "leaf0", "n1/plx4", "n1/gpu8")


def cli(capsys, *args):
    """``simcollective ARGS`` in this process (the console script's own subprocess runs are
    tests/test_cli.py's): (exit code, stdout, stderr)."""
    code, out, err = run_cli(capsys, *args)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_dgx2_ring_worked_check():
    # docs/study.md: CM02, 16 GPUs, ring, N = 32M int32: about 80.8 ms
    # (10.4 ms with the NVSwitch routed as built)
    from simcollective.simulate import RunConfig, run_allreduce

    t = run_allreduce(RunConfig(topology="dgx2", nodes=1, algorithm="ring", elements=32 * 2**20,
                                dtype="int32", profile="cm02", routing="study")).fields["time_s"]
    assert t == pytest.approx(80.8e-3, rel=1e-3)
    t0 = run_allreduce(RunConfig(topology="dgx2", nodes=1, algorithm="ring", elements=32 * 2**20,
                                 dtype="int32", profile="cm02")).fields["time_s"]
    assert t0 == pytest.approx(10.4e-3, rel=1e-2)


@pytest.mark.parametrize("topo", ["fat-tree", "dgx-h100"])
def test_study_routing_refused_where_it_has_no_meaning(topo, capsys):
    out = cli(capsys, "run", "--topology", topo, "--nodes", "2", "--algorithm", "ring", "--elements", "1M",
              "--routing", "study", "--quiet")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--routing study" in out.stderr and topo in out.stderr
    assert "Traceback" not in out.stderr


def test_user_files_saved_from_the_study_presets_work_others_refused(tmp_path, capsys):
    g = topologies.build("abci", 2, {})
    path = tmp_path / "abci.json"
    topologies.save(g, path)
    loaded = topologies.load(path)
    assert Router(loaded, "study").path("n0/gpu2", "n1/gpu0") == Router(g, "study").path("n0/gpu2", "n1/gpu0")
    g.graph["name"] = "my-cluster"
    other = tmp_path / "other.json"
    topologies.save(g, other)
    out = cli(capsys, "run", "--topology-file", str(other), "--algorithm", "ring", "--elements", "1M",
              "--routing", "study", "--quiet")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "'my-cluster' is not one of them" in out.stderr


def test_study_on_another_machine_names_study_not_routing(capsys):
    """``--study`` (which sets ``--routing study``) on a machine the study did not model is
    refused naming the option given."""
    out = cli(capsys, "run", "--topology", "dgx-h100", "--algorithm", "ring", "--elements", "1M", "--study")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--study reproduces" in out.stderr and "'dgx-h100' is not one of them" in out.stderr
    assert "--routing" not in out.stderr
