"""The array store's per-slot path rows and the step that skips its removal walk, checked at
every step of runs that enter the store: the rows against the path table, the controls
against the slots, and each step against the same step made to walk the slots."""

from __future__ import annotations

import numpy as np
import pytest

from simcollective.network import bulk, bulk_kernels as K, engine
from simcollective.network.tuning import Tuning
from simcollective.simulate import RunConfig, run

# unit weights and coefficients (nccl), penalty weights (cm02), cross traffic (smpi); low
# thresholds make a small run enter the store and stay (its sums refreshed every other solve)
CASES = [dict(topology="dgx-h100", nodes=2, algorithm="nccl", profile=p, elements=2**22) for p in ("nccl", "cm02", "smpi")]
LOW = Tuning(bulk_min=4, walk_limit=2, bulk_off=0, refresh=2)


def _rows_follow_the_table(sf, si, sr, pres, pcoef, pwb, n):
    for s in np.flatnonzero(si[K.ALIVE]):
        p = si[K.SPID, s]
        length = int((pres[p] != n).sum())
        assert (pres[p, length:] == n).all()
        assert sr[s, 0] == length and (sr[s, 2:2 + length] == pres[p, :length]).all()
        assert bool(sr[s, 1]) == (pwb[K.W, p] == 1.0 and bool((pcoef[p, :length] == 1.0).all()))
        assert (sf[K.WEIGHT, s], sf[K.BOUND, s]) == (pwb[K.W, p], pwb[K.B, p])


def _controls_follow_the_slots(sf, si, ctl):
    live = si[K.ALIVE] == 1
    assert ctl[K.NEXT] == (sf[K.TDONE, live].min() if live.any() else np.inf)
    assert ctl[K.UNRATED] == (sf[K.RATE, live] == 0.0).sum()


def checked_run(kw, tuning):
    """Run ``kw`` with every store step checked; returns (steps, steps that skipped the walk,
    steps of a flow with weight or coefficients other than 1.0)."""
    real = bulk._step
    seen = dict(steps=0, skipped=0, other=0)

    def checking(now, nnew, ct, lt, sf, si, rf, ri, sr, pres, pcoef, pwb, ctl, X):
        skips = now < ctl[K.NEXT] and ctl[K.UNRATED] == 0
        walked = [a.copy() for a in (sf, si, rf, ri, sr, ctl)]
        walked[5][K.NEXT] = -np.inf  # no completion known: the step walks the slots
        wout = real(now, nnew, ct, lt, *walked[:5], pres, pcoef, pwb, walked[5],
                    K.work(K.no_work(), sf.shape[1], pres.shape[1]))
        out = real(now, nnew, ct, lt, sf, si, rf, ri, sr, pres, pcoef, pwb, ctl, X)
        k, nch = out[0], out[1]
        assert out == wout
        assert np.array_equal(sf, walked[0]) and np.array_equal(rf, walked[2]) and np.array_equal(ctl, walked[5])
        assert np.array_equal(si[:2], walked[1][:2]) and np.array_equal(ri[K.COUNT], walked[3][K.COUNT])
        assert np.array_equal(si[K.DUE, :k], walked[1][K.DUE, :k])
        assert np.array_equal(si[K.CHANGED, :nch], walked[1][K.CHANGED, :nch])
        _rows_follow_the_table(sf, si, sr, pres, pcoef, pwb, rf.shape[1] - 1)
        _controls_follow_the_slots(sf, si, ctl)
        seen["steps"] += 1
        seen["skipped"] += skips
        seen["other"] += not sr[si[K.ALIVE] == 1, 1].all()
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bulk, "_step", checking)
        if tuning is not None:
            mp.setattr(engine, "DEFAULT_TUNING", tuning)
        run(RunConfig(engine="simpy", **kw))
    return seen


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: f"{kw['topology']}-{kw['algorithm']}-{kw['profile']}")
def test_each_step_equals_the_walking_step_and_the_rows_follow_the_table(kw):
    seen = checked_run(kw, LOW)
    assert seen["steps"] > 60 and 10 < seen["skipped"] < seen["steps"]
    if kw["profile"] != "nccl":
        assert seen["other"] > 0


def test_the_rows_grow_keeping_their_contents():
    sr = K.rows(np.zeros((0, 2), np.int32), 3, 2)
    assert sr.shape == (3, 4) and sr.dtype == np.int32
    sr[:] = np.arange(12).reshape(3, 4)
    assert K.rows(sr, 3, 2) is sr and K.rows(sr, 2, 1) is sr
    wider = K.rows(sr, 5, 4)
    assert wider.shape == (5, 6)
    assert (wider[:3, :4] == sr).all() and (wider[3:] == 0).all() and (wider[:, 4:] == 0).all()
