"""The compiled loop's per-resource flow lists: one flat pool, relocated and compacted."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcollective.network.replay_flows import POOL, PTOP, RCAP, ROFF, _relocate, pool_room


def _lists(rl, rcnt):
    pool, off = rl[POOL], rl[ROFF]
    return [pool[off[r]:off[r] + rcnt[r]].tolist() for r in range(len(rcnt))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=60))
def test_appends_with_relocation_and_compaction_keep_every_list(resources):
    """Appending slot ``i`` to resource ``resources[i]`` (relocating a full list to the
    pool's end, compacting when the room runs short) gives each resource its slots in order."""
    n = 4
    C = np.zeros(13, np.int64)
    C[PTOP] = 2 * n
    rl = (np.empty(2 * n, np.int64), np.arange(n) * 2, np.full(n, 2, np.int64))
    rcnt = np.zeros(n, np.int64)
    for s, r in enumerate(resources):
        rl = pool_room(rl, rcnt, C, 4 * (s + 1) + 8 * n)
        before = rl[POOL].shape[0] - C[PTOP]
        k = rcnt[r]
        if k == rl[RCAP][r]:
            _relocate(r, k, rl, C)
            assert rl[RCAP][r] == 2 * k + 4 and before - (rl[POOL].shape[0] - C[PTOP]) == 2 * k + 4
        rl[POOL][rl[ROFF][r] + k] = s
        rcnt[r] = k + 1
    assert _lists(rl, rcnt) == [[s for s, q in enumerate(resources) if q == r] for r in range(n)]
    assert C[PTOP] <= rl[POOL].shape[0]


def test_pool_room_compacts_only_when_short():
    C = np.zeros(13, np.int64)
    rl = (np.array([7, 8, -1, -1, 9, -1], np.int64), np.array([0, 4]), np.array([3, 2]))
    rcnt = np.array([2, 1])
    C[PTOP] = 6
    same = pool_room((rl[0], rl[1], rl[2]), rcnt, C, 0)
    assert same[POOL] is rl[POOL]
    new = pool_room(rl, rcnt, C, 10)
    assert _lists(new, rcnt) == [[7, 8], [9]] and new[ROFF].tolist() == [0, 3] and C[PTOP] == 5
    assert new[POOL].shape[0] - C[PTOP] >= 10
