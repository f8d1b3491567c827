"""numba's compiles seen through its event API: a compile (a cache miss) is counted once with the
kernels it compiles inside it, a load from the cache is not, and a watch entered before numba
is loaded listens from the moment it is."""

import importlib.util
import os
import sys

import numba

from simcollective.network.compile_watch import CompileWatch


def _waiting() -> list:
    """The watches' finder on ``sys.meta_path`` (there while a watch waits for numba)."""
    return [f for f in sys.meta_path if type(f).__module__ == CompileWatch.__module__]


def test_a_compile_is_counted_once_with_the_kernels_it_calls():
    @numba.njit
    def inner(x):
        return x + 1

    @numba.njit
    def outer(x):
        return inner(x) * 2

    seen = []     # compiles finished when on_first is called: 0, it comes before the wait
    with CompileWatch(on_first=lambda w: seen.append((w, w.compiles))) as watch:
        assert outer(1) == 4 and outer(2) == 6      # the second call runs the compiled code
    assert seen == [(watch, 0)] and watch.compiles == 1 and watch.seconds > 0
    assert watch.cache is None                      # no cache=True: numba caches it nowhere
    assert outer(3) == 8 and watch.compiles == 1    # left: no longer listening


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kernel_loaded_from_numba_cache_is_no_compile(tmp_path):
    path = tmp_path / "cached_kernel.py"
    path.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    with CompileWatch() as cold:
        assert _load(path, "cached_kernel_a").twice(3) == 6
    with CompileWatch() as warm:                    # a new dispatcher of the same source: a cache hit
        assert _load(path, "cached_kernel_b").twice(4) == 8
    assert cold.compiles == 1 and cold.cache is not None
    if not os.environ.get("NUMBA_CACHE_DIR"):
        assert cold.cache == str(tmp_path / "__pycache__")     # beside the source
    assert warm.compiles == 0 and warm.seconds == 0.0 and warm.cache is None


def test_a_watch_entered_before_numba_is_loaded_listens_once_it_is(monkeypatch):
    event = sys.modules["numba.core.event"]
    monkeypatch.delitem(sys.modules, "numba.core.event")     # as in a command that has not loaded numba
    with CompileWatch() as watch:
        assert len(_waiting()) == 1
        monkeypatch.setitem(sys.modules, "numba.core.event", event)     # numba loaded ...
        assert importlib.util.find_spec("no_such_module_anywhere") is None  # ... and the next import
        assert _waiting() == []
        assert numba.njit(lambda x: x - 1)(1) == 0
    assert watch.compiles == 1 and watch.seconds > 0


def test_a_watch_left_before_numba_is_loaded_leaves_no_finder(monkeypatch):
    monkeypatch.delitem(sys.modules, "numba.core.event")
    with CompileWatch(), CompileWatch():
        pass
    assert _waiting() == []
