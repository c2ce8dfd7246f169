"""The worker side of a campaign: load one problem, solve it with one method, return one record.

A worker is a separate process that reads tasks from a pipe and writes messages to the parent on
another (the solvers' own prints go to its log). It is started in one of two ways
(:mod:`nsopt.studies.runner` chooses):

- **fork** (the default on Linux and macOS when the parent runs no other thread, e.g. the ``nsopt``
  command): ``os.fork()`` of the parent, which has already imported nsopt and its solvers and
  initialised numba, so that a worker is up in about a millisecond (:func:`child_main`);
- **spawn** (a parent with threads, e.g. a Jupyter kernel, or ``NSOPT_WORKER_START=spawn``): a fresh
  interpreter, ``python -m nsopt.studies.worker [PLUGIN ...]``, which imports nsopt's solvers (about a
  second) before its first task (:func:`main`).

Messages are length-prefixed pickles:

- ``("loaded", id, info)`` once the problem is loaded, when a warm-up follows (``info``: kind and
  sizes);
- ``("start", id, info)`` right before the timed solve, when the task has a time limit (the
  parent's clock of the hard limit; without a limit nothing is killed and the message is not sent);
- ``("done", id, records)`` with a list of flat records (one per row of the results table).

The parent times the solve between ``start`` and ``done`` and kills the worker when the hard limit
passes (status ``timeout``); a worker that dies (segfault, ``os._exit``) is recorded as ``crashed``.
A task ``{"control": "log", "path": P}`` sends the worker's stderr to the file ``P`` from then on (a
worker kept for the next campaign writes to that campaign's ``logs/``).

**Loading**: a worker keeps the problems it loaded (keyed by reference and content hash, at most 512
problems and 128 MB of arrays) and gives each method a deep copy, so that a file is parsed once for
all its methods (and, in a kept worker, for the next campaigns on the same files) while every method
starts from a problem with empty caches (a new object on the same read-only arrays when the problem
holds nothing else, else a deep copy). ``load_time`` is the time of that load or copy.

**Warm-up** (numba compile time is not in the timings): the numba kernels of nsopt are compiled with
``cache=True``, but loading or compiling them, and importing a method's backends (CVXPY), still costs
up to seconds on a process' first call. Before its first timed solve of a (kind, method, matrix
storage) a worker therefore solves a tiny generated problem of the kind and a copy of the problem
(two iterations), untimed, and throws the results away. A worker serves many tasks (and, kept in the
runner's pool, many campaigns of one process), so this is paid once per worker and method.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import pickle
import socket
import statistics
import struct
import sys
import time
from types import MappingProxyType

from .records import failure_record, now_utc, task_columns  # noqa: F401  (the records' vocabulary)

_HEADER = struct.Struct("!Q")
_WARM: set = set()


# ------------------------------------------------------------------------------- framing
def pack_frame(obj) -> bytes:
    """A message as sent through a pipe: its length (8 bytes) and its pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def write_frame(f, obj) -> None:
    f.write(pack_frame(obj))
    f.flush()


def read_frame(f):
    head = f.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    return pickle.loads(f.read(n))


# ------------------------------------------------------------------------------- metadata
def versions() -> dict:
    """nsopt's and its main dependencies' versions, and Python's (without importing them)."""
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for d in ("numpy", "scipy", "numba", "cvxpy", "clarabel"):
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            out[d] = None
    return out


@functools.lru_cache(maxsize=1)
def run_metadata() -> dict:
    """The columns every record of this process shares: versions and host."""
    from .. import __version__

    return {"nsopt_version": __version__, "versions": json.dumps(versions(), sort_keys=True),
            "host": socket.gethostname()}


# ------------------------------------------------------------------------------- peak memory
_PROC: dict = {}


def _proc_fd(name: str, flags: int):
    """A descriptor of ``/proc/self/NAME`` kept open (per process: a forked worker opens its own)."""
    key = (name, os.getpid())
    if key not in _PROC:
        _PROC[key] = os.open(f"/proc/self/{name}", flags)
    return _PROC[key]


def _reset_peak() -> bool:
    """Reset this process' peak resident set size (Linux ``/proc/self/clear_refs``)."""
    try:
        os.pwrite(_proc_fd("clear_refs", os.O_WRONLY), b"5", 0)
        return True
    except OSError:
        return False


def _peak_mb() -> float | None:
    """This process' peak resident set size since the last reset, in MB (Linux ``VmHWM``).

    ``getrusage``'s ``ru_maxrss`` (2 µs, against ~15-50 µs to read ``/proc/self/status``) is the
    same number unless the process inherited a larger peak at ``exec`` (a spawned worker started by
    a big parent): it is used when the two agree once, after a reset."""
    pid = os.getpid()
    use = _PROC.get(("rusage", pid))
    if use is None:
        status = _status_peak_mb()
        _PROC[("rusage", pid)] = use = (
            status is not None and getrusage is not None and abs(_rusage_peak_mb() - status) < 1.0
            and _reset_peak())
        return status
    return _rusage_peak_mb() if use else _status_peak_mb()


try:
    from resource import RUSAGE_SELF, getrusage
except ImportError:  # (not POSIX: no peak memory)
    RUSAGE_SELF = getrusage = None


def _rusage_peak_mb() -> float | None:
    return None if getrusage is None else getrusage(RUSAGE_SELF).ru_maxrss / 1024.0


def _status_peak_mb() -> float | None:
    try:
        data = os.pread(_proc_fd("status", os.O_RDONLY), 1 << 14, 0)
        i = data.index(b"VmHWM:")
        return int(data[i + 6:data.index(b"\n", i)].split()[0]) / 1024.0
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------------------- one task
def _storage(problem) -> str:
    return "sparse" if any(hasattr(v, "tocsr") for v in vars(problem).values()) else "dense"


_TINY = MappingProxyType({"lcp": lambda g: g.lcp(6, seed=0)[0], "mlcp": lambda g: g.mlcp(2, 4, seed=0)[0],
         "relay": lambda g: g.relay(4, seed=0)[0],
         "fc2d": lambda g: g.friction_contact(3, dim=2, seed=0)[0],
         "fc3d": lambda g: g.friction_contact(3, dim=3, seed=0)[0],
         "gfc3d": lambda g: g.global_friction_contact(2, 8, seed=0)[0]})


def _warm_key(problem, task) -> tuple:
    return (problem.kind, task["method"], _storage(problem), task.get("options_key"))


def needs_warm_up(problem, task) -> bool:
    """Whether this worker has not yet warmed up the task's (kind, method, storage, options)."""
    return bool(task.get("warmup", True)) and _warm_key(problem, task) not in _WARM


def warm_up(problem, task) -> None:
    """Compile (or load from numba's cache) and import what the method needs, untimed: a full solve
    of a tiny generated problem of the same kind, then two iterations on a copy of the problem (its
    storage may need other compiled specialisations)."""
    if not needs_warm_up(problem, task):
        return
    _WARM.add(_warm_key(problem, task))
    from .. import generate, solve

    opts = task.get("options", {})
    tries = [copy.deepcopy(problem)]
    if problem.kind in _TINY:
        tries.insert(0, _TINY[problem.kind](generate))
    for i, p in enumerate(tries):
        try:
            solve(p, method=task["method"], tol=task["tol"], max_iter=None if i == 0 and
                  len(tries) == 2 else 2, time_limit=task.get("timeout"), **opts)
        except Exception:  # noqa: BLE001  the timed run reports it
            pass


_CACHE: dict = {}
_CACHE_SIZE = [0]            # the array bytes in _CACHE
CACHE_PROBLEMS = 512         # problems a worker keeps loaded (least recently used dropped first)
CACHE_BYTES = 128 << 20      # and their array bytes


def _nbytes(obj, depth=0) -> int:
    """The bytes of the arrays (dense and sparse) in a problem's fields, nested ones included."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if hasattr(obj, "tocsr"):
        return sum(getattr(obj, a).nbytes for a in ("data", "indices", "indptr", "row", "col")
                   if isinstance(getattr(obj, a, None), np.ndarray))
    if depth > 3:
        return 0
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v, depth + 1) for v in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(v, depth + 1) for v in obj.values())
    if hasattr(obj, "__dict__"):
        return sum(_nbytes(v, depth + 1) for v in vars(obj).values())
    return 0


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None))


def _shareable(v) -> bool:
    """Whether a problem's attribute can be shared by its copies: a read-only array of numbers, an
    immutable scalar, or a tuple of such."""
    import numpy as np

    if isinstance(v, np.ndarray):
        return not v.flags.writeable and v.dtype != object
    if isinstance(v, tuple):
        return all(_shareable(x) for x in v)
    return isinstance(v, _IMMUTABLE)


def _copier(problem):
    """How to give each method its own copy of a loaded problem: when every field is shareable (the
    validated problems of nsopt hold read-only arrays), a new object on the same fields with its own
    cache (a few µs); otherwise :func:`copy.deepcopy`."""
    d = getattr(problem, "__dict__", None)
    if d is None or not isinstance(d.get("_store"), dict) or not all(
            _shareable(v) for k, v in d.items() if k not in ("_store", "_frozen")):
        return copy.deepcopy

    def fresh(p):
        new = object.__new__(type(p))
        nd = new.__dict__
        nd.update(p.__dict__)
        nd["_store"] = copy.deepcopy(p._store) if p._store else {}
        return new

    return fresh


def _load(task: dict):
    """The task's problem, each method getting its own deep copy (no cache left on the problem by
    one method speeds up the next). A worker keeps the problems it loaded, keyed by reference and
    content hash (:data:`CACHE_PROBLEMS`, :data:`CACHE_BYTES`): a file is parsed once for all the
    methods run on it, and again only when its content changed."""
    from .files import load_problem

    key = (task["problem"], task.get("problem_hash"))
    if key[1] is None:
        return load_problem(task["problem"])
    hit = _CACHE.pop(key, None)
    if hit is None:
        p = load_problem(task["problem"])
        hit = (p, _nbytes(p), _copier(p))
        _CACHE_SIZE[0] += hit[1]
    _CACHE[key] = hit                       # most recently used last
    while len(_CACHE) > CACHE_PROBLEMS or (len(_CACHE) > 1 and _CACHE_SIZE[0] > CACHE_BYTES):
        _CACHE_SIZE[0] -= _CACHE.pop(next(iter(_CACHE)))[1]
    return hit[2](hit[0])


def _plain_info(info) -> dict | None:
    """The numbers and short strings of a solution's ``info`` (one level of nesting flattened:
    ``{"timings": {"solver": 0.1}}`` -> ``{"timings.solver": 0.1}``); None when empty. (The
    parent stores it as JSON: :func:`nsopt.studies.records.normalize`.)"""
    out = {}
    for k, v in (info or {}).items():
        items = v.items() if isinstance(v, dict) else [(None, v)]
        for k2, x in items:
            if isinstance(x, (bool, int, float, str)) and not (isinstance(x, str) and len(x) > 200):
                out[k if k2 is None else f"{k}.{k2}"] = x.item() if hasattr(x, "item") else x
    return out or None


def run_task(task: dict, send=lambda *msg: None) -> list[dict]:
    """Run one task: load the problem, warm up, solve, and return its records.

    ``task``: ``problem`` (reference), ``method``, ``options`` (dict), ``tol``, ``max_iter``,
    ``timeout`` (passed to ``solve`` as its soft ``time_limit``), ``history`` (keep the error history
    in the record), ``warmup``, ``repeat`` and ``repeat_under`` (a solve faster than
    ``repeat_under`` seconds is run ``repeat`` times on fresh copies of the problem; ``time`` is the
    median, ``runs`` the count; the other columns are the first run's); Siconos tasks carry ``source="siconos"`` and are run by
    :func:`nsopt.studies.siconos.run_task`.
    """
    if task.get("source") == "siconos":
        from . import siconos

        send("start", task["id"])
        return siconos.run_task(task)
    from .. import solve
    from ..exceptions import MethodNotFound, NotApplicable

    t0 = time.perf_counter()
    try:
        problem = _load(task)
    except Exception as e:  # noqa: BLE001  a corrupt file is a row, the campaign goes on
        return [failure_record(task, "load_error", f"{type(e).__name__}: {e}")]
    t1 = time.perf_counter()
    info = {"kind": problem.kind, "size": int(getattr(problem, "size", 0)),
            "nc": getattr(problem, "nc", None)}
    if needs_warm_up(problem, task):
        send("loaded", task["id"], info)
        warm_up(problem, task)
    t2 = time.perf_counter()
    limited = task.get("timeout") is not None
    if limited:         # the parent's clock of the hard limit (nothing to time without a limit)
        send("start", task["id"], info)
    measured = _reset_peak()

    def timed(p):
        return solve(p, method=task["method"], tol=task["tol"], max_iter=task.get("max_iter"),
                     time_limit=task.get("timeout"), history=bool(task.get("history")),
                     **task.get("options", {}))

    try:
        sol = timed(problem)
    except (NotApplicable, MethodNotFound) as e:
        return [failure_record(task, "not_applicable", f"{type(e).__name__}: {e}", info)]
    except Exception as e:  # noqa: BLE001  OptionError, SolverError, bugs: recorded, not fatal
        return [failure_record(task, "error", f"{type(e).__name__}: {e}", info)]
    peak = _peak_mb() if measured else None
    times = [sol.solve_time]
    while len(times) < int(task.get("repeat") or 1) and times[0] < task.get("repeat_under", 1.0):
        again = _load(task)                  # a fresh copy: no cache left by the first run
        if limited:
            send("start", task["id"], info)  # each run gets the whole hard limit
        try:
            times.append(timed(again).solve_time)
        except Exception:  # noqa: BLE001  (it ran once: keep what was measured)
            break
    rec = sol.to_record()
    rec.update(task_columns(task))
    rec.pop("solve_time")
    rec["time"], rec["runs"] = times[0] if len(times) == 1 else statistics.median(times), len(times)
    rec["info"] = _plain_info(sol.info)
    rec["peak_rss_mb"] = peak
    rec["load_time"], rec["warmup_time"] = t1 - t0, t2 - t1
    rec["finished_at"] = now_utc()
    if task.get("history"):
        rec["history"] = [float(x) for x in (sol.history or [])]
    return [rec]


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def _limit_threads() -> None:
    """One BLAS thread: the environment (for libraries not loaded yet) and, in a forked worker whose
    parent already loaded OpenBLAS or MKL, the loaded libraries themselves."""
    for v in _THREAD_VARS:
        os.environ[v] = "1"
    if "numpy" not in sys.modules:
        return
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower() or "mkl" in line.lower()}
    except OSError:
        return
    for path in libs:
        if not path.endswith(".so") and ".so." not in path:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                    "openblas_set_num_threads64_", "openblas_set_num_threads", "MKL_Set_Num_Threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(1)
                break


def prepare_parent(plugins=(), jit: bool = True) -> None:
    """What a forked worker inherits instead of doing it itself: nsopt's solvers and the plugins
    imported, and (``jit``) numba's compiler initialised (by loading one trivial kernel from its
    on-disk cache, ~0.3 s once; no solver runs in the parent). The first workers of a pool are
    forked without it: each initialises numba in its first warm-up, in parallel with the parent."""
    from .. import solvers  # noqa: F401

    for mod in plugins:
        importlib.import_module(mod)
    if not jit:
        return
    from . import _jit

    try:
        _jit.ready()
    except Exception:  # noqa: BLE001, S110  (no numba cache here: each worker initialises numba)
        pass


def _reopen_log(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 2)
    os.dup2(fd, 1)
    os.close(fd)


def serve(inp, out, plugins=()) -> int:
    """The worker loop: run the tasks read from ``inp`` (binary file) until it closes, writing the
    messages to ``out``."""
    import warnings

    for mod in plugins:
        importlib.import_module(mod)
    warnings.simplefilter("ignore")

    def send(*msg):
        write_frame(out, msg)

    while True:
        task = read_frame(inp)
        if task is None:
            return 0
        if task.get("control") == "log":
            _reopen_log(task["path"])
            continue
        records = run_task(task, send)
        meta = run_metadata()
        for r in records:
            for k, v in meta.items():
                r.setdefault(k, v)
        send("done", task["id"], records)


def child_main(task_fd: int, result_fd: int, log_path: str, plugins=()) -> None:
    """The body of a forked worker (never returns: the process ends with ``os._exit``).

    The child leaves the parent's world first: a session of its own (the parent kills its group),
    stderr and stdout to its log, stdin from /dev/null, every other inherited file descriptor closed
    (the campaign folder's lock, the other workers' pipes), the parent's objects frozen (never
    collected here), one BLAS thread, Ctrl-C ignored (the parent's to handle)."""
    import gc
    import io
    import signal

    code = 1
    try:
        gc.freeze()
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        _reopen_log(log_path)
        keep = sorted({task_fd, result_fd})
        lo = 3
        for fd in keep + [None]:
            os.closerange(lo, fd if fd is not None else os.sysconf("SC_OPEN_MAX"))
            lo = (fd or 0) + 1
        sys.stdin = open(os.devnull)  # noqa: SIM115  (for the life of the process)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        _limit_threads()
        _WARM.clear()
        _CACHE.clear()
        _CACHE_SIZE[0] = 0
        _PROC.clear()
        code = serve(os.fdopen(task_fd, "rb"), os.fdopen(result_fd, "wb"), plugins)
    except BaseException:  # noqa: BLE001  reported in the log; the parent records the crash
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def main(argv=None) -> int:
    """Spawned worker: import the plugin modules named in ``argv``, then run tasks until stdin closes."""
    import signal

    for v in _THREAD_VARS:   # effective when numpy is not imported yet (the parent also sets them)
        os.environ.setdefault(v, "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                                  # stray prints go to the log, not the protocol
    from .. import solvers  # noqa: F401  (imports are not part of any solve's time)

    return serve(sys.stdin.buffer, out, argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
