"""SMPI's small-message semantics as a profile key (docs/study.md): under ``cm02``
and ``smpi`` a send of < 65536 bytes completes when posted and every flow starts only once its
message is matched; ``ideal`` keeps eager flows."""

import numpy as np
import pytest

import topologies
from simcollective.errors import UserInputError
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks


LAT = 15.464e-6  # ABCI n0/gpu0 -> n1/gpu0 via FBB 0 under --routing study (SimGrid's route)


def micro(profile, nbytes, delay=100e-6):
    g = topologies.build("abci", 2, {})
    payload = np.zeros(nbytes, dtype=np.uint8)
    times = {}

    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, payload)
            times["send"] = comm.now
        else:
            yield comm.compute(delay)
            t = comm.now
            yield comm.recv(0)
            times["recv"] = comm.now - t
        return None

    run_ranks(g, ["n0/gpu0", "n1/gpu0"], main, lambda r: (), load_profile(profile), "study")
    return times


@pytest.mark.parametrize("profile", ["cm02", "smpi"])
def test_profiles_set_smpi_semantics(profile):
    assert load_profile(profile).network.small_messages == "smpi"
    assert load_profile("ideal").network.small_messages == "eager"


def test_micro_check_cm02():
    # a 1,000 B send returns at once; its receive, posted 100 us later, completes
    # latency + 1000 / 12.5e9 after being posted (the flow starts only when matched).
    # SimGrid gives 15.555 us; the flow model gives 15.544 us (the
    # 11 ns left are not explained by the latency or the 12.5e9 bottleneck)
    t = micro("cm02", 1000)
    assert t["send"] == 0.0
    assert t["recv"] == pytest.approx(LAT + 1000 / 12.5e9, rel=1e-9)  # 15.544 us


def test_micro_check_ideal_is_eager():
    # under ideal the small flow starts at the send: the receive finds it arrived
    t = micro("ideal", 1000)
    assert t["send"] == 0.0
    assert t["recv"] == 0.0


def test_threshold_is_strict():
    # 65536 B is not detached under SMPI semantics: the send completes with the data
    t = micro("cm02", 65536, delay=0.0)
    assert t["send"] == pytest.approx(LAT + 65536 / 12.5e9, rel=1e-9)
    t = micro("cm02", 65535, delay=0.0)
    assert t["send"] == 0.0
    # ideal: <= threshold is eager
    assert micro("ideal", 65536, delay=0.0)["send"] == 0.0


def test_bad_small_messages_value(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('[network]\nsmall_messages = "fast"\n')
    with pytest.raises(UserInputError, match="small_messages 'fast' must be one of: eager, smpi"):
        load_profile(str(p))
