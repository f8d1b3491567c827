"""How long numba compiles kernels while a block of code runs (its cache misses).

numba compiles a ``cache=True`` kernel on its first call after installing, or after the
kernel's sources change, writes the machine code to its cache (``__pycache__`` beside the
sources, or ``NUMBA_CACHE_DIR``) and loads it from there afterwards. numba's event API
(``numba.core.event``) broadcasts a ``"numba:compile"`` event around each compile and none
for a load from the cache; :class:`CompileWatch` listens to it::

    with CompileWatch(on_first=notice) as watch:    # notice(watch) before the first compile
        ...
    watch.seconds                                   # wall seconds spent compiling in the block

A command that needs no compiled kernel never imports numba (0.3 s): a watch entered
before numba is loaded waits for it, and listens from the moment numba's event module is
imported, before any kernel can compile. One thread: the watches of one process share the
listeners' list numba keeps.
"""

from __future__ import annotations

import functools
import sys
import time

__all__ = ["CompileWatch", "COMPILE_EVENT"]

#: numba's event kind for a compile (fired on a cache miss only; numba/core/dispatcher.py)
COMPILE_EVENT = "numba:compile"
_EVENT_MODULE = "numba.core.event"

_WATCHES: list = []     # the watches entered and not left, oldest first


class CompileWatch:
    """Listens to numba's compiles while entered. ``seconds``: wall seconds from the start of
    each outermost compile to its end (a kernel compiles the kernels it calls inside its own
    compile: counted once); ``compiles``: those outermost compiles; ``cache``: where numba
    caches the first kernel compiled (``None`` for a kernel without ``cache=True``);
    ``on_first(watch)``: called once, as the first compile starts (before the wait)."""

    def __init__(self, on_first=None):
        self.on_first = on_first
        self.seconds = 0.0
        self.compiles = 0
        self.cache = None
        self._depth = 0
        self._since = 0.0
        self._leave = []    # the listeners' exits (numba's install_listener contexts)

    def __enter__(self) -> CompileWatch:
        _WATCHES.append(self)
        event = _loaded_event_module()
        if event is not None:
            self.listen(event)
        elif _AWAIT not in sys.meta_path:
            sys.meta_path.insert(0, _AWAIT)
        return self

    def __exit__(self, *exc) -> None:
        _WATCHES.remove(self)
        while self._leave:
            self._leave.pop().__exit__(None, None, None)
        if not _WATCHES and _AWAIT in sys.meta_path:
            sys.meta_path.remove(_AWAIT)

    def listen(self, event) -> None:
        """Install this watch's listener through ``event`` (numba's event module)."""
        context = event.install_listener(COMPILE_EVENT, _listener_class(event)(self))
        context.__enter__()
        self._leave.append(context)

    def started(self, data) -> None:
        if self._depth == 0:
            if self.compiles == 0:
                self.cache = _cache_path(data)
                if self.on_first is not None:
                    self.on_first(self)
            self._since = time.perf_counter()
        self._depth += 1

    def ended(self) -> None:
        if self._depth == 0:
            return      # a compile that started before the watch listened
        self._depth -= 1
        if self._depth == 0:
            self.compiles += 1
            self.seconds += time.perf_counter() - self._since


def _cache_path(data):
    """The cache directory of the dispatcher compiling (``Dispatcher.stats.cache_path``)."""
    stats = getattr(data.get("dispatcher"), "stats", None) if isinstance(data, dict) else None
    return getattr(stats, "cache_path", None)


def _loaded_event_module():
    """numba's event module once it defines what a watch uses, else None (no import here)."""
    event = sys.modules.get(_EVENT_MODULE)
    return event if event is not None and hasattr(event, "install_listener") else None


@functools.cache
def _listener_class(event):
    """A ``numba.core.event.Listener`` passing a compile's start and end to a watch (defined
    once numba is loaded: the module does not import numba)."""

    class Forward(event.Listener):
        def __init__(self, watch):
            self.watch = watch

        def on_start(self, ev):
            self.watch.started(ev.data)

        def on_end(self, ev):
            self.watch.ended()

    return Forward


class _AwaitNumba:
    """On ``sys.meta_path`` while a watch waits for numba: asked about every import, it finds
    none; at the first import after numba's event module is loaded, the watches listen and it
    leaves. numba imports many modules of its own after its event module and before it can
    compile a kernel, so no compile is missed."""

    # NOTE: a finder that never finds anything, used as an import hook (the import system's
    # documented protocol, PEP 451): numba's events need numba loaded, and loading it in
    # every command to listen would cost each command 0.3 s.
    @staticmethod
    def find_spec(name, path=None, target=None):
        event = _loaded_event_module()
        if event is not None:
            if _AWAIT in sys.meta_path:
                sys.meta_path.remove(_AWAIT)
            for watch in list(_WATCHES):
                watch.listen(event)
        return None


_AWAIT = _AwaitNumba()
