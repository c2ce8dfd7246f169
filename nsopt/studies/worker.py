"""The worker side of a campaign: load one problem, solve it with one method, return one record.

A worker is a separate process (``python -m nsopt.studies.worker [PLUGIN ...]``) that reads tasks
from its stdin and writes messages to the parent on its original stdout (the solvers' own prints go
to stderr). Messages are length-prefixed pickles:

- ``("loaded", id, info)`` once the problem is loaded (``info``: kind and sizes);
- ``("start", id)`` after the warm-up, right before the timed solve;
- ``("done", id, records)`` with a list of flat records (one per row of the results table).

The parent times the solve between ``start`` and ``done`` and kills the worker when the hard limit
passes (status ``timeout``); a worker that dies (segfault, ``os._exit``) is recorded as ``crashed``.

**Warm-up** (numba compile time is not in the timings): the numba kernels of nsopt are compiled with
``cache=True``, but loading or compiling them, and importing a method's backends (CVXPY), still costs
up to seconds on a process' first call. Before its first timed solve of a (kind, method, matrix
storage) a worker therefore solves a copy of the problem once with ``max_iter=1`` and throws the
result away.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import pickle
import socket
import struct
import sys
import time
from datetime import datetime, timezone

_HEADER = struct.Struct("!Q")
_WARM: set = set()


# ------------------------------------------------------------------------------- framing
def write_frame(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_HEADER.pack(len(data)) + data)
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


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------- peak memory
def _reset_peak() -> bool:
    """Reset this process' peak resident set size (Linux ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mb() -> float | None:
    """This process' peak resident set size since the last reset, in MB (Linux ``VmHWM``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


# ------------------------------------------------------------------------------- one task
def failure_record(task: dict, status: str, message: str, info: dict | None = None) -> dict:
    """The record of a run that produced no solution (load error, exception, timeout, crash)."""
    info = info or {}
    return {**task_columns(task), "kind": info.get("kind", task.get("kind")),
            "size": info.get("size"), "nc": info.get("nc"), "status": status, "error": None,
            "nit": None, "time": None, "build_time": None, "peak_rss_mb": None, "message": message,
            "finished_at": now_utc()}


def task_columns(task: dict) -> dict:
    """The identifying columns of a task's row (the same whoever writes the record)."""
    return {"problem": task["problem"], "problem_hash": task.get("problem_hash"),
            "method": task["method"], "source": task.get("source", "nsopt"),
            "options": task.get("options_key", "{}"), "tol": task["tol"],
            "max_iter": task.get("max_iter"), "timeout": task.get("timeout")}


def _storage(problem) -> str:
    import scipy.sparse as sp

    return "sparse" if any(sp.issparse(v) for v in vars(problem).values()) else "dense"


_TINY = {"lcp": lambda g: g.lcp(6, seed=0)[0], "mlcp": lambda g: g.mlcp(2, 4, seed=0)[0],
         "relay": lambda g: g.relay(4, seed=0)[0],
         "fc2d": lambda g: g.friction_contact(3, dim=2, seed=0)[0],
         "fc3d": lambda g: g.friction_contact(3, dim=3, seed=0)[0],
         "gfc3d": lambda g: g.global_friction_contact(2, 8, seed=0)[0]}


def warm_up(problem, task) -> None:
    """Compile (or load from numba's cache) and import what the method needs, untimed: a full solve
    of a tiny generated problem of the same kind, then two iterations on a copy of the problem (its
    storage may need other compiled specialisations)."""
    key = (problem.kind, task["method"], _storage(problem), task.get("options_key"))
    if key in _WARM or not task.get("warmup", True):
        return
    _WARM.add(key)
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


def run_task(task: dict, send=lambda *msg: None) -> list[dict]:
    """Run one task: load the problem, warm up, solve, and return its records.

    ``task``: ``problem`` (reference), ``method``, ``options`` (dict), ``tol``, ``max_iter``,
    ``timeout`` (passed to ``solve`` as its soft ``time_limit``), ``history`` (keep the error history
    in the record), ``warmup``; Siconos tasks carry ``source="siconos"`` and are run by
    :func:`nsopt.studies.siconos.run_task`.
    """
    if task.get("source") == "siconos":
        from . import siconos

        send("start", task["id"])
        return siconos.run_task(task)
    from .. import solve
    from ..exceptions import MethodNotFound, NotApplicable
    from .files import load_problem

    t0 = time.perf_counter()
    try:
        problem = load_problem(task["problem"])
    except Exception as e:  # noqa: BLE001  a corrupt file is a row, the campaign goes on
        return [failure_record(task, "load_error", f"{type(e).__name__}: {e}")]
    t1 = time.perf_counter()
    info = {"kind": problem.kind, "size": int(getattr(problem, "size", 0)),
            "nc": getattr(problem, "nc", None)}
    send("loaded", task["id"], info)
    warm_up(problem, task)
    t2 = time.perf_counter()
    send("start", task["id"])
    measured = _reset_peak()
    try:
        sol = solve(problem, method=task["method"], tol=task["tol"], max_iter=task.get("max_iter"),
                    time_limit=task.get("timeout"), history=bool(task.get("history")),
                    **task.get("options", {}))
    except (NotApplicable, MethodNotFound) as e:
        return [failure_record(task, "not_applicable", f"{type(e).__name__}: {e}", info)]
    except Exception as e:  # noqa: BLE001  OptionError, SolverError, bugs: recorded, not fatal
        return [failure_record(task, "error", f"{type(e).__name__}: {e}", info)]
    rec = sol.to_record()
    rec.update(task_columns(task))
    rec["time"] = rec.pop("solve_time")
    rec["peak_rss_mb"] = _peak_mb() if measured else None
    rec["load_time"], rec["warmup_time"] = t1 - t0, t2 - t1
    rec["finished_at"] = now_utc()
    if task.get("history"):
        rec["history"] = [float(x) for x in (sol.history or [])]
    return [rec]


def _limit_threads() -> None:
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ.setdefault(v, "1")


def main(argv=None) -> int:
    """Worker loop: import the plugin modules named in ``argv``, then run tasks until stdin closes."""
    import signal
    import warnings

    _limit_threads()   # effective when numpy is not imported yet (the parent also sets them)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                                  # stray prints go to the log, not the protocol
    inp = sys.stdin.buffer
    from .. import solvers  # noqa: F401  (imports are not part of any solve's time)

    for mod in (argv if argv is not None else sys.argv[1:]):
        importlib.import_module(mod)
    warnings.simplefilter("ignore")

    def send(*msg):
        write_frame(out, msg)

    while True:
        task = read_frame(inp)
        if task is None:
            return 0
        records = run_task(task, send)
        meta = run_metadata()
        for r in records:
            for k, v in meta.items():
                r.setdefault(k, v)
        send("done", task["id"], records)


if __name__ == "__main__":
    sys.exit(main())
