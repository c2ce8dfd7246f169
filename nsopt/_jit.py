"""numba for nsopt's kernels: :func:`njit` (compiled once, cached on disk), one compilation of a
kernel across processes, and the guard of their compilation against Ctrl-C.

**One compilation across processes.** Processes that share numba's cache (pytest-xdist's workers,
a campaign's workers, the demo and its compile-ahead helper, :mod:`nsopt._ahead`) and miss the
same nsopt kernel at the same time would each compile it. On a cache miss of an nsopt kernel a
process takes an exclusive lock (``flock``) on a file beside the kernel's cache index: the first
compiles and saves (the lock is released once the kernel is in the cache, or when the compilation
fails, or when the process ends: the kernel releases a dead process's ``flock``); the others wait
for the lock, then load the saved kernel. A process holds only the locks of the kernels on its own
compile stack, callers before callees, and nsopt's call graph has no cycle: no deadlock; a wait
longer than ``LOCK_WAIT`` seconds gives up and compiles. Installed on numba's ``FunctionCache``
for functions of nsopt's modules only (POSIX; elsewhere each process compiles on its own).

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

import os
import signal
import threading
import time

from numba import njit as _njit
from numba.core import caching, event

try:
    import fcntl
except ImportError:         # (not POSIX: no lock, each process compiles what it misses)
    fcntl = None

__all__ = ["entry_point", "njit"]


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
    ``_Local``). Arguments of other types must go through the dispatcher: the entry point does not
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


# ------------------------------------------------------------ one compilation across processes
LOCK_WAIT = 300.0           # seconds a process waits for another's compilation before compiling
_HELD = {}                  # id(cache) -> (the cache, {signature: lock file descriptor})


def _ours(cache) -> bool:
    return (getattr(getattr(cache, "_py_func", None), "__module__", "") or "").startswith("nsopt.")


def _lock(cache):
    """An exclusive flock on the kernel's lock file (waiting for another process's compilation),
    or None (no lock to be had: compile without)."""
    try:
        cache._impl.locator.ensure_cache_path()
        fd = os.open(os.path.join(cache._cache_path, cache._cache_file._index_name + ".lock"),
                     os.O_RDWR | os.O_CREAT, 0o666)
    except (OSError, AttributeError):
        return None
    end = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > end:
                os.close(fd)
                return None
            time.sleep(0.02)
        except OSError:
            os.close(fd)
            return None


def _release(fd) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# numba's cache class, wrapped below where this numba has the two methods (else each process compiles alone)
_load_overload = getattr(caching.Cache, "load_overload", None)
_save_overload = getattr(caching.Cache, "save_overload", None)


def _load_once(self, sig, target_context):
    data = _load_overload(self, sig, target_context)
    if data is not None or not _ours(self):
        return data
    held = _HELD.setdefault(id(self), (self, {}))[1]
    if sig in held:                 # (this process holds it already: it compiles)
        return None
    fd = _lock(self)
    if fd is None:
        return None
    data = _load_overload(self, sig, target_context)    # another process saved it while we waited
    if data is not None:
        _release(fd)
        return data
    held[sig] = fd                  # this process compiles it: released once saved (or failed)
    return None


def _save_once(self, sig, data):
    try:
        _save_overload(self, sig, data)
    finally:
        entry = _HELD.get(id(self))
        fd = entry[1].pop(sig, None) if entry else None
        if fd is not None:
            _release(fd)


class _ReleaseOnFailure(event.Listener):
    """A compilation that raised is never saved: release its dispatcher's locks at its end."""

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        exc = getattr(ev, "_exc_details", None)     # (numba's Event.is_failed reads it inverted)
        if not exc or exc[0] is None:
            return
        cache = getattr((ev.data or {}).get("dispatcher"), "_cache", None)
        entry = _HELD.pop(id(cache), None) if cache is not None else None
        for fd in (entry[1].values() if entry else ()):
            _release(fd)


if fcntl is not None and _load_overload is not None and _save_overload is not None:
    caching.Cache.load_overload = _load_once
    caching.Cache.save_overload = _save_once
    event.register("numba:compile", _ReleaseOnFailure())
