"""numba for nsopt's kernels: :func:`njit` (compiled once, cached on disk by numba's own
``cache=True``), the time spent loading and compiling kernels (:func:`compile_seconds`: it does not
count against a solve's ``time_limit``), and the guard of their compilation against Ctrl-C.

**numba is used as it comes.** Nothing of numba is patched: each process loads a kernel from
numba's cache (``__pycache__`` beside the sources, or ``NUMBA_CACHE_DIR``) or compiles and saves it,
as numba does; processes that miss the same kernel at the same moment both compile it (wasted
work, never a wrong result: numba writes its cache files under a temporary name and renames them).

**Loading and compiling are not solving.** The first call of a kernel in a process loads it from
numba's cache (tens to hundreds of milliseconds for the large ones) or compiles it (seconds). numba
announces both under its ``numba:compiler_lock`` event; a listener adds up their wall time
(:func:`compile_seconds`), and :class:`nsopt.monitor.Monitor` counts it as ``build_time``, not
against ``time_limit`` (a first solve with ``time_limit=0.05`` runs its iterations as a later one
does).

A Ctrl-C (SIGINT) that arrives while numba compiles one of nsopt's kernels is held until that
compilation (with the compilations of the kernels it calls) has ended, then delivered: the user
gets a ``KeyboardInterrupt`` at once after it, and every kernel numba kept in this process or wrote
to its cache is whole, so the next call works. Without the guard the interrupt can be raised inside
one of LLVM's callbacks, where ctypes swallows it and leaves a compiled library without its object
code, and numba then fails with ``RuntimeError: no compiled object yet`` (issue 20 §3). The guard
acts in the main thread only (where Python handles signals) and for nsopt's kernels only; a
compilation takes a few seconds at most, a kernel call returns within tens of milliseconds.
"""

from __future__ import annotations

import signal
import threading
import time

from numba import njit as _njit
from numba.core import event

__all__ = ["compile_seconds", "entry_point", "njit"]


def njit(*args, **options):
    """``numba.njit`` with ``cache=True`` and NumPy's error model unless told otherwise: a division by
    zero gives inf or nan (which the kernels' finiteness checks turn into a status) instead of
    raising, and the code numba generates has no exception path per division (a shorter compile)."""
    options.setdefault("cache", True)
    options.setdefault("error_model", "numpy")
    return _njit(*args, **options)


def entry_point(kernel, args):
    """The compiled function of the njit ``kernel`` for the types of ``args`` (loaded from numba's
    cache, or compiled, as a call would), to be called with arguments of those same types.

    A call of the dispatcher types every argument and looks the signature up before it runs the
    compiled code (~40 ns an argument: ~0.8 µs for the 19 of ``nsgs``' kernel); the entry point
    only converts them. For a kernel that a solve calls once or a few times, with arrays it made
    itself and a problem's vectors (read-only, float64, 1-D, contiguous: the invariant of every
    problem, ``tests/test_contract.py``), whose types are fixed when its state is built: the state
    keeps the entry point (:class:`nsopt.solvers.nsgs._Sweeper`, the small dense Newton's
    ``_LocalFrictionSystem``). Arguments of other types must go through the dispatcher: the entry point does not
    check them."""
    if not hasattr(kernel, "compile"):     # (NUMBA_DISABLE_JIT=1: the Python function itself)
        return kernel
    return kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))


class _HoldInterrupt(event.Listener):
    """Holds SIGINT from the start of the outermost compilation of an nsopt kernel to its end."""

    def __init__(self):
        self.depth = 0
        self.previous = None     # the SIGINT handler in place before the outermost compilation
        self.pending = False

    def _hold(self, signum, frame):
        self.pending = True

    def on_start(self, ev):
        self.depth += 1
        if self.depth > 1 or self.previous is not None:
            return
        d = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(d, "py_func", None), "__module__", "") or ""
        if not module.startswith("nsopt.") or threading.current_thread() is not threading.main_thread():
            return
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):          # SIG_IGN / SIG_DFL: nothing Python would raise
            return
        self.previous, self.pending = handler, False
        signal.signal(signal.SIGINT, self._hold)

    def on_end(self, ev):
        self.depth -= 1
        if self.depth > 0 or self.previous is None:
            return
        previous, self.previous = self.previous, None
        signal.signal(signal.SIGINT, previous)
        if self.pending:
            self.pending = False
            signal.raise_signal(signal.SIGINT)      # delivered now, to the handler it was meant for


_GUARD = _HoldInterrupt()
event.register("numba:compile", _GUARD)


class _CompileClock(event.Listener):
    """Adds up the wall time of numba's compiler lock (a kernel loaded from the cache or compiled,
    with the kernels it calls), outermost holds only, per thread."""

    def __init__(self):
        self.total = 0.0
        self._local = threading.local()

    def on_start(self, ev):
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            local.start = time.perf_counter()
        local.depth = depth + 1

    def on_end(self, ev):
        local = self._local
        local.depth -= 1
        if local.depth == 0:
            self.total += time.perf_counter() - local.start


_CLOCK = _CompileClock()
event.register("numba:compiler_lock", _CLOCK)
#: The clock itself: ``COMPILE_CLOCK.total`` is :func:`compile_seconds` read without a call (what a
#: solve's :class:`~nsopt.monitor.Monitor` reads at its start and end: a re-solve's per-call cost).
COMPILE_CLOCK = _CLOCK


def compile_seconds() -> float:
    """Seconds spent so far in this process loading kernels from numba's cache or compiling them
    (every thread; a kernel already loaded costs nothing). :class:`nsopt.monitor.Monitor` moves a
    solve's deadline by what this grows during the solve."""
    return _CLOCK.total
