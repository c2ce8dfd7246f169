"""Compiling ahead: a second process fills numba's on-disk cache with the kernels a run needs later,
while the run works on its first items (issue 19 §6).

A first run (numba's cache empty) spends most of its time compiling nsopt's kernels, on one core. A
run that knows its work in advance (the rows of ``python -m nsopt``'s table, a campaign's tasks, a
simulation's solvers) writes it down as *jobs*: picklable ``(function, args)`` calls, each of which
compiles what one item needs (typically its warm-up), listed in the order the helper should take
them, usually the reverse of the run's. :func:`compile_ahead` starts the helper process; the run calls
:meth:`CompileAhead.reached` with a job's number when it starts that item itself, and the helper
skips every job the run has reached. numba loads a dispatcher's cached overload at the dispatcher's
first call in a process, so a kernel the helper compiled first costs the run only its loading (ms).
When the run needs a kernel that the helper is compiling at that moment, the run waits for the
helper's and loads it instead of compiling it a second time (:mod:`nsopt._jit`: one compilation
of a kernel across processes, a lock per kernel beside numba's cache).

* **Races.** Without the lock (not POSIX, or a wait past ``nsopt._jit.LOCK_WAIT``) both processes
  may compile the same kernel at once: wasted work, never a wrong result. numba writes each cache
  file under a temporary name and renames it (``os.replace``, atomic); each nsopt kernel has one
  signature (``tests/test_first_run.py``), so both processes write the same index key and the same
  data file; a process that reads an index entry whose data file is not written yet compiles the
  kernel itself.
* **When.** With fewer than two cores for this process (``os.sched_getaffinity``) nothing starts;
  nor when the cores are busy (a 1-minute load average above the cores less a half: the two processes
  would share them with others, and the helper's extra work, the jobs the run would not have
  needed, slowed a cold demo from 31-36 s to 40-45 s at load 4-5 here); nor when less than a quarter
  of the nsopt kernels loaded so far lacks a cache entry (a warm run: a few kernels the run does not
  use are never cached; a partly warm cache: the run compiles the rest itself, as without a
  helper). ``NSOPT_COMPILE_AHEAD=0`` in the environment: never; ``=1``: whenever two cores are there.
* **Ending.** The helper ignores SIGINT (a Ctrl-C in a terminal reaches the whole process group: the
  run handles it) and exits at once when its standard input closes: when the run calls
  :meth:`CompileAhead.close` (or leaves the ``with`` block), when the run's interpreter exits
  (``atexit``), and when the run dies in any other way, SIGKILL included (the kernel closes the pipe).
  An exit while numba writes a cache file leaves at most a ``*.tmp.*`` file beside it, never a torn one.
* **The cache folder.** The helper runs the same interpreter on the same nsopt source files with the
  same environment (``NUMBA_CACHE_DIR`` included), so numba picks the same folder: ``__pycache__``
  beside the sources, or, for a read-only install, the user-wide cache that numba falls back to.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["CompileAhead", "compile_ahead", "uncached"]

ENV = "NSOPT_COMPILE_AHEAD"       # "0": never start the helper; "1": whenever there are two cores
WORTH = 0.25    # start the helper when at least this fraction of the loaded kernels is not cached


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # (not on Linux)
        return os.cpu_count() or 1


def _busy_cores() -> bool:
    """Whether the machine has no idle core for the helper: a 1-minute load average above the
    number of cores less a half (other processes would share the cores with both of ours, and the
    helper's extra work would slow the run down instead)."""
    try:
        return os.getloadavg()[0] > _cores() - 0.5
    except (OSError, AttributeError):      # (no load average on this system)
        return False


def uncached() -> float:
    """The fraction of the compiled kernels of the nsopt modules loaded in this process that are
    neither compiled here nor in numba's cache (a fresh index file, for this numba and this source);
    1 when none is loaded yet."""
    n = missing = 0
    for obj in _nsopt_dispatchers():
        n += 1
        if obj.signatures:
            continue
        try:
            missing += not obj._cache._cache_file._load_index()   # {}: no index, or a stale one
        except Exception:  # noqa: BLE001  numba's private layout changed: count it as missing
            missing += 1
    return missing / n if n else 1.0          # no kernel loaded yet: nothing known, as a first run


def _nsopt_dispatchers():
    from numba.core.registry import CPUDispatcher

    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("nsopt."):
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                yield obj


class CompileAhead:
    """The helper process of :func:`compile_ahead` (or none: then every method does nothing)."""

    def __init__(self, process: subprocess.Popen | None = None):
        self.process = process
        if process is not None:
            atexit.register(self.close)

    @property
    def active(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def reached(self, job: int) -> None:
        """The run has started job ``job`` itself: the helper skips it and every job before it in the
        run's order (numbers are positions in the list given to :func:`compile_ahead`)."""
        if self.process is None:
            return
        try:
            self.process.stdin.write(b"%d\n" % job)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):     # the helper has ended: nothing to tell
            pass

    def close(self) -> None:
        """End the helper now (it exits when its standard input closes) and reap it."""
        p, self.process = self.process, None
        if p is None:
            return
        atexit.unregister(self.close)
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def compile_ahead(jobs, order=None) -> CompileAhead:
    """Start a helper process that runs ``jobs`` (a list of picklable ``(function, args)``; job ``i``
    is the run's ``i``-th item) in ``order`` (job numbers; default: from the last to the first),
    skipping the jobs the run has reached (:meth:`CompileAhead.reached`). Returns the handle (use it
    as a context manager); it holds no process when there is nothing to gain (see the module)."""
    how = os.environ.get(ENV, "")
    if (not jobs or how == "0" or os.environ.get("NUMBA_DISABLE_JIT", "0") != "0" or _cores() < 2
            or (how != "1" and (_busy_cores() or uncached() < WORTH))):
        return CompileAhead()
    order = list(range(len(jobs) - 1, -1, -1)) if order is None else [int(i) for i in order]
    try:
        payload = pickle.dumps((jobs, order), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001  an unpicklable job: compile in the run, as without a helper
        return CompileAhead()
    root = str(Path(__file__).resolve().parents[1])          # the folder holding this nsopt
    code = f"import sys; sys.path.insert(0, {root!r}); from nsopt._ahead import _helper; _helper()"
    try:
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p.stdin.write(payload)
        p.stdin.flush()
    except OSError:
        return CompileAhead()
    return CompileAhead(p)


# ------------------------------------------------------------------------------- the helper
def _helper() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    jobs, order = pickle.load(stdin)
    reached = [-1]

    def listen():                   # the run's progress, line by line; end of input: the run ended
        for line in stdin:
            try:
                reached[0] = max(reached[0], int(line))
            except ValueError:
                pass
        os._exit(0)

    threading.Thread(target=listen, daemon=True).start()
    for i in order:
        if i <= reached[0]:
            continue
        fn, args = jobs[i]
        try:
            fn(*args)
        except Exception:  # noqa: BLE001  the run compiles (and reports) whatever failed here
            pass
    os._exit(0)
