"""numba for nsopt's kernels: :func:`njit` (compiled once, cached on disk) and the guard of their
compilation against Ctrl-C.

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

from numba import njit as _njit
from numba.core import event

__all__ = ["njit"]


def njit(*args, **options):
    """``numba.njit`` with ``cache=True`` and NumPy's error model unless told otherwise: a division by
    zero gives inf or nan (which the kernels' finiteness checks turn into a status) instead of
    raising, and the code numba generates has no exception path per division (a shorter compile)."""
    options.setdefault("cache", True)
    options.setdefault("error_model", "numpy")
    return _njit(*args, **options)


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
