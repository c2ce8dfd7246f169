"""Running tasks: a local pool of worker processes with a hard limit per solve and crash isolation,
or a dask.distributed cluster whose workers each drive one such process.

Each worker is a separate process (:mod:`nsopt.studies.worker`) started with one BLAS thread; the
parent sends it one task at a time and waits. When a solve runs past its hard limit the worker's
process group is killed (status ``timeout``) and a fresh worker takes the next task; when a worker
dies (a segfault in a compiled kernel, ``os._exit``, the out-of-memory killer) its task is recorded
as ``crashed`` with the exit signal and the tail of the worker's stderr. Nothing a solver does can
stop the campaign.

Limits: the soft limit ``timeout`` is passed to :func:`nsopt.solve` as ``time_limit`` (the method
stops with ``time_limit`` and its best iterate); the hard limit, after which the worker is killed, is
``timeout + max(1 s, 10 % of timeout)``, counted from the start of the timed solve (loading the
problem has its own allowance, the warm-up gets the hard limit plus 10 s).
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque

from .worker import _HEADER, failure_record, run_metadata

LOAD_ALLOWANCE = 300.0      # seconds to load a problem file before the worker counts as hung
WARMUP_ALLOWANCE = 10.0     # seconds added to the hard limit for the untimed warm-up (JIT, imports)
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def hard_limit(timeout: float | None) -> float:
    """Seconds after which a solve's worker is killed (inf without a timeout)."""
    if timeout is None:
        return math.inf
    return float(timeout) + max(1.0, 0.1 * float(timeout))


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


class WorkerHandle:
    """One worker process, driven by the parent: ``submit`` a task, then ``poll`` until it is done."""

    def __init__(self, plugins=(), log_dir=None, name="worker"):
        self.plugins, self.name = tuple(plugins), name
        self.log_dir = log_dir
        self.proc = None
        self.task = None
        self.buf = b""
        self.log = None

    # -- process ---------------------------------------------------------------------------
    def _env(self):
        env = dict(os.environ)
        for v in _THREAD_VARS:
            env[v] = "1"
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        return env

    def start(self):
        if self.log is None:
            if self.log_dir is not None:
                os.makedirs(self.log_dir, exist_ok=True)
                self.log = open(os.path.join(self.log_dir, f"{self.name}.log"), "ab+")
            else:
                self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "nsopt.studies.worker", *self.plugins],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=self._env(), start_new_session=True)
        self.buf = b""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def kill(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # the worker and any program it started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None

    def close(self):
        """Stop the worker (between tasks it holds nothing to save: no need to wait for its exit)."""
        self.kill()
        if self.log is not None:
            self.log.close()
            self.log = None

    def log_tail(self, n=400) -> str:
        try:
            self.log.flush()
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - n))
            tail = self.log.read().decode(errors="replace").strip()
            return " ".join(tail.split())[-n:]
        except (OSError, AttributeError):
            return ""

    # -- one task --------------------------------------------------------------------------
    def submit(self, task: dict):
        if not self.alive:
            self.start()
        from .worker import write_frame

        self.task, self.info, self.t_start = task, None, None
        self.limit = task.get("hard_limit") or hard_limit(task.get("timeout"))
        self.t_phase = time.monotonic()
        self.deadline = self.t_phase + LOAD_ALLOWANCE
        try:
            write_frame(self.proc.stdin, task)
        except (BrokenPipeError, OSError):
            pass   # seen as a crash by poll()

    def _failure(self, status, message):
        rec = failure_record(self.task, status, message, self.info)
        rec.update(run_metadata())
        self.task = None
        return [rec]

    def expire(self) -> list[dict] | None:
        """The timeout record, after killing the worker, when the task ran past its deadline."""
        if self.task is None or time.monotonic() < self.deadline:
            return None
        phase = "solve" if self.t_start is not None else ("warm-up" if self.info else "load")
        waited = time.monotonic() - self.t_phase
        self.kill()
        return self._failure("timeout", f"killed after {waited:.1f} s in the {phase} "
                                        f"(hard limit {self.limit:.3g} s)")

    def poll(self) -> list[dict] | None:
        """Read what the worker sent; the task's records once it is done (or crashed), else None."""
        try:
            chunk = os.read(self.fileno(), 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:      # the worker died
            rc = self.proc.wait()
            tail = self.log_tail()
            self.kill()
            return self._failure("crashed", f"worker died ({_signal_name(rc)})" +
                                 (f"; stderr: {tail}" if tail else ""))
        self.buf += chunk
        while len(self.buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self.buf)
            if len(self.buf) < _HEADER.size + n:
                break
            msg = pickle.loads(self.buf[_HEADER.size:_HEADER.size + n])
            self.buf = self.buf[_HEADER.size + n:]
            now = time.monotonic()
            if msg[0] == "loaded":
                self.info, self.t_phase = msg[2], now
                self.deadline = now + self.limit + WARMUP_ALLOWANCE
            elif msg[0] == "start":
                self.t_start = self.t_phase = now
                self.deadline = now + self.limit
            elif msg[0] == "done":
                self.task = None
                return msg[2]
        return None

    def run_one(self, task: dict) -> list[dict]:
        """Submit one task and block until its records come back (the dask path)."""
        self.submit(task)
        while True:
            wait = max(0.0, self.deadline - time.monotonic())
            ready, _, _ = select.select([self.fileno()], [], [], min(wait, 3600.0))
            if ready:
                out = self.poll()
                if out is not None:
                    return out
            else:
                out = self.expire()
                if out is not None:
                    return out


def run_local(tasks, jobs=1, plugins=(), log_dir=None, on_dispatch=None):
    """Run ``tasks`` on ``jobs`` local worker processes; yield ``(task, records)`` as each finishes.

    ``on_dispatch(task)`` is called when a task is handed to a worker (progress display). Closing the
    generator (or Ctrl-C) kills the workers; the tasks in flight are then not recorded."""
    pending = deque(tasks)
    handles = [WorkerHandle(plugins, log_dir, name=f"worker-{i}") for i in range(max(1, jobs))]
    busy: dict[int, WorkerHandle] = {}
    try:
        while pending or busy:
            for h in handles:
                if pending and h.task is None:
                    task = pending.popleft()
                    if on_dispatch:
                        on_dispatch(task)
                    h.submit(task)
                    busy[id(h)] = h
            now = time.monotonic()
            wait = min(h.deadline for h in busy.values()) - now
            ready, _, _ = select.select([h.fileno() for h in busy.values()], [], [],
                                        max(0.0, min(wait, 3600.0)))
            ready = set(ready)
            for h in list(busy.values()):
                if h.task is None:
                    continue
                task = h.task
                out = h.poll() if h.fileno() in ready else h.expire()
                if out is not None:
                    del busy[id(h)]
                    yield task, out
    finally:
        for h in handles:
            h.close()


# ------------------------------------------------------------------------------------ dask
_LOCAL = threading.local()


def _dask_run(task: dict, plugins: tuple) -> list[dict]:
    """Executed on a dask worker: run the task in this worker thread's own worker process."""
    h = getattr(_LOCAL, "handle", None)
    if h is None or h.plugins != tuple(plugins):
        if h is not None:
            h.close()
        h = _LOCAL.handle = WorkerHandle(plugins, name="dask-worker")
    return h.run_one(task)


def run_dask(tasks, scheduler: str, jobs=1, plugins=(), on_dispatch=None):
    """Run ``tasks`` on a dask.distributed cluster; yield ``(task, records)`` as each finishes.

    ``scheduler``: ``"local"`` starts a ``LocalCluster`` of ``jobs`` single-threaded worker processes
    on the loopback interface; otherwise the address of a running scheduler
    (``tcp://host:8786``). Each dask worker thread drives its own nsopt worker process, so hard
    limits and crash isolation are the same as in the local pool."""
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futures = {}
        for t in tasks:
            f = client.submit(_dask_run, t, tuple(plugins), pure=False, retries=0)
            futures[f] = t
        for f in as_completed(futures):
            task = futures[f]
            if on_dispatch:
                on_dispatch(task)
            try:
                recs = f.result()
            except Exception as e:  # noqa: BLE001  the dask task itself failed (worker lost, ...)
                recs = [failure_record(task, "crashed", f"dask: {type(e).__name__}: {e}")]
            yield task, recs
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
