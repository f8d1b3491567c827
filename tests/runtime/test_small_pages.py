"""The compiled path runs with NumPy's huge-page advice off, and leaves it as it was."""

import numpy as np
import pytest

from simcollective.runtime import compiled
from simcollective.runtime.compiled import small_pages

switch = getattr(np._core.multiarray if hasattr(np, "_core") else np.core.multiarray, "_set_madvise_hugepage", None)
pytestmark = pytest.mark.skipif(switch is None, reason="this NumPy has no huge-page switch")


def advice() -> bool:
    """NumPy's huge-page advice now (read by setting it to what it is)."""
    was = switch(True)
    switch(was)
    return was


def test_off_inside_and_restored_after(monkeypatch):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    was = switch(True)
    try:
        with small_pages():
            assert advice() is False
        assert advice() is True
        with pytest.raises(RuntimeError), small_pages():
            raise RuntimeError
        assert advice() is True
    finally:
        switch(was)


def test_the_users_environment_is_kept(monkeypatch):
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
    was = switch(True)
    try:
        with small_pages():
            assert advice() is True
    finally:
        switch(was)


def test_the_compiled_path_records_and_replays_with_small_pages(monkeypatch):
    from simcollective import api

    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    seen = []
    for name in ("record", "replay"):
        real = getattr(compiled, name)
        monkeypatch.setattr(compiled, name, lambda *a, _real=real, **k: seen.append(advice()) or _real(*a, **k))
    was = switch(True)
    try:
        r = api.run(topology="fat-tree", nodes=8, algorithm="ring", elements=1024, engine="compiled")
        assert r["engine"] == "compiled" and seen == [False, False] and advice() is True
    finally:
        switch(was)
