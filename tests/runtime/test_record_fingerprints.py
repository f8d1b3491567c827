"""The recorded programs stay identical byte for byte: every array of every configuration
of :mod:`fingerprints` (every dense algorithm of every collective, real and size-only
data, several machines and sizes) against the digests stored in ``record_fingerprints.json``
(taken from the recording as it was; the compiled loop reads these arrays)."""

from __future__ import annotations

import json

import pytest

from . import fingerprints as F

STORED = json.loads(F.STORE.read_text())


@pytest.mark.parametrize("collective", F.COLLECTIVES)
def test_recorded_arrays_and_results_are_unchanged(collective):
    names = [(name, cfg) for name, cfg in F.configurations() if name.startswith(collective + "/")]
    assert names
    diff = [name for name, cfg in names if F.fingerprint(cfg) != STORED[name]]
    assert not diff, f"{len(diff)} of {len(names)} recordings changed, e.g. {diff[:5]}"


def test_every_configuration_is_stored():
    assert sorted(name for name, _ in F.configurations()) == sorted(STORED)
