"""Running tasks: a local pool of worker processes with a hard limit per solve and crash isolation,
or a dask.distributed cluster whose workers each drive one such process.

Each worker is a separate process (:mod:`nsopt.studies.worker`) with one BLAS thread; the parent
sends it a batch of tasks (with one worker, all it can hold; with several, about 20 ms of work by the
tasks' mean time so far, so that no task waits behind a long solve while another worker is free),
and the worker sends back one message per finished task, recorded at once. The parent follows the
task the worker is on (the head of its batch: ``start`` messages when there is a time limit). When
a solve runs past its hard limit the worker's process group is killed (status ``timeout``), the
rest of its batch goes back to the queue and a fresh worker takes the next task; when a worker dies
(a segfault in a compiled kernel, ``os._exit``, the out-of-memory killer) its task is recorded as
``crashed`` with the exit signal and the tail of the worker's stderr. Nothing a solver does can stop
the campaign. With short tasks (mean under 2 ms) the parent reads the results at most every
millisecond (several per wake-up, and the workers' writes do not wake it).

**Starting workers.** When the parent runs no other thread (the ``nsopt`` command; check
``threading.active_count() == 1``), a worker is an ``os.fork()`` of the parent, which has already
imported nsopt's solvers and the plugins (:func:`worker.prepare_parent`; the first workers of a
pool initialise numba themselves, in parallel with the parent, which meanwhile imports what the
tables and the figures need: :func:`prefetch`; a replacement worker inherits numba from the parent):
about a millisecond instead of the second or more of a fresh interpreter that imports numpy, scipy
and numba. Otherwise (a Jupyter kernel runs threads; forking a process with threads is unsafe) it is
a fresh interpreter (``python -m nsopt.studies.worker``). ``NSOPT_WORKER_START=spawn`` (or ``fork``)
forces the choice. (The only other threads of a forking parent are then the BLAS libraries' pools,
which are fork-safe; the forked worker sets its BLAS to one thread.)

**The pool is kept.** The workers of a finished campaign stay alive, idle, for the next
:func:`~nsopt.studies.compare` call of the same process (as loky's reusable executor does), with
their imports, numba kernels and warm-ups: a notebook pays the start once. They are replaced when
what they inherited changes (the plugins, ``sys.path``, the environment, the registered methods) and
stopped when the process exits (or by :func:`shutdown`). A campaign interrupted (Ctrl-C, an error)
stops its workers.

Limits: the soft limit ``timeout`` is passed to :func:`nsopt.solve` as ``time_limit`` (the method
stops with ``time_limit`` and its best iterate); the hard limit, after which the worker is killed, is
``timeout + max(1 s, 10 % of timeout)``, counted from the start of the timed solve (loading the
problem has its own allowance, the warm-up gets the hard limit plus 10 s). Without a timeout nothing
is killed (a crash is still recorded as such).
"""

from __future__ import annotations

import atexit
import importlib
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
import warnings
from collections import deque

from .records import failure_record
from .worker import _HEADER, _THREAD_VARS, pack_frame, run_metadata, write_frame

LOAD_ALLOWANCE = 300.0      # seconds to load a problem file before the worker counts as hung
WARMUP_ALLOWANCE = 10.0     # seconds added to the hard limit for the untimed warm-up (JIT, imports)


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


def start_method() -> str:
    """``"fork"`` when this process may fork its workers (POSIX, no other Python thread), else
    ``"spawn"``; ``NSOPT_WORKER_START`` overrides."""
    forced = os.environ.get("NSOPT_WORKER_START", "").strip().lower()
    if forced in ("fork", "spawn"):
        return forced if hasattr(os, "fork") else "spawn"
    return "fork" if hasattr(os, "fork") and threading.active_count() == 1 else "spawn"


def fork() -> int:
    """``os.fork()`` with this process' output flushed first (nothing printed twice) and without
    Python 3.12's warning about a process with OS threads: here only the BLAS libraries' pools
    (forks happen while no other Python thread runs; OpenBLAS and MKL reset their pools in the
    child through ``pthread_atfork``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


_LOG_DIR = None


def _default_log_dir() -> str:
    """A folder for the logs of workers that serve campaigns without a folder (removed at exit)."""
    global _LOG_DIR
    if _LOG_DIR is None:
        import shutil

        _LOG_DIR = tempfile.mkdtemp(prefix="nsopt_workers_")
        atexit.register(shutil.rmtree, _LOG_DIR, True)
    return _LOG_DIR


class WorkerHandle:
    """One worker process, driven by the parent: ``submit`` a task, then ``poll`` until it is done."""

    def __init__(self, plugins=(), log_dir=None, name="worker", method=None):
        self.plugins, self.name = tuple(plugins), name
        self.log_dir = log_dir
        self.method = method or start_method()
        self.proc = self.pid = self.rfd = self.wfile = None
        self.queue: deque = deque()
        self.started: list = []
        self.buf = b""
        self.log = self.log_path = None
        self.last_problem = None
        self.starts = 0            # forks of this handle so far
        self.n_done, self.t_done = 0, 0.0  # tasks finished, and their wall time (from head to done)
        self.sent_bytes: deque = deque()   # pickled size of each queued task (pipe capacity)

    # -- process ---------------------------------------------------------------------------
    def _env(self):
        env = dict(os.environ)
        for v in _THREAD_VARS:
            env[v] = "1"
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        return env

    def _open_log(self):
        path = os.path.join(self.log_dir or _default_log_dir(), f"{self.name}.log")
        if path != self.log_path:
            if self.log is not None:
                self.log.close()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.log, self.log_path = open(path, "ab+"), path
            return True
        return False

    def start(self):
        self._open_log()
        self.buf, self.last_problem = b"", None
        join_prefetch()            # (a thread importing modules must not be forked mid-import)
        if self.method == "fork" and start_method() == "fork":   # no thread started since
            from .worker import child_main, prepare_parent

            # a new pool's workers initialise numba themselves (in parallel with the parent's
            # prefetch, or with each other); a replacement inherits it from the parent
            prepare_parent(self.plugins, jit=self.starts > 0)
            self.starts += 1
            r_task, w_task = os.pipe()
            r_res, w_res = os.pipe()
            pid = fork()
            if pid == 0:   # the worker (never returns)
                child_main(r_task, w_res, self.log_path, self.plugins)
            os.close(r_task)
            os.close(w_res)
            self.pid, self.rfd, self.wfile = pid, r_res, os.fdopen(w_task, "wb")
            self.returncode = None
        else:
            self.proc = subprocess.Popen([sys.executable, "-m", "nsopt.studies.worker", *self.plugins],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                         env=self._env(), start_new_session=True)
            self.pid, self.rfd, self.wfile = self.proc.pid, self.proc.stdout.fileno(), self.proc.stdin

    def _wait(self, block: bool):
        """The worker's exit status (``Popen.returncode`` convention), None while it runs."""
        if self.proc is not None:
            try:
                return self.proc.wait(timeout=10) if block else self.proc.poll()
            except subprocess.TimeoutExpired:
                return None
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return -1
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    @property
    def alive(self) -> bool:
        return self.pid is not None and self._wait(False) is None

    def fileno(self) -> int:
        return self.rfd

    def kill(self):
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)   # the worker and any program it started
        except (ProcessLookupError, PermissionError):
            pass
        self._wait(True)
        for f in (self.wfile, self.proc.stdout if self.proc is not None else None):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        if self.proc is None:
            try:
                os.close(self.rfd)
            except OSError:
                pass
        self.proc = self.pid = self.rfd = self.wfile = None
        self.queue.clear()
        self.sent_bytes.clear()

    def close(self):
        """Stop the worker (between tasks it holds nothing to save: no need to wait for its exit)."""
        self.kill()
        if self.log is not None:
            self.log.close()
            self.log = self.log_path = None

    def retarget(self, log_dir):
        """Send the worker's stderr to ``log_dir`` (a kept worker serving a new campaign)."""
        self.log_dir = log_dir
        if self._open_log() and self.pid is not None:
            self._send({"control": "log", "path": self.log_path})

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

    # -- tasks ------------------------------------------------------------------------------
    @property
    def task(self) -> dict | None:
        """The task the worker is on (the head of the tasks sent to it), None when idle."""
        return self.queue[0] if self.queue else None

    def _send(self, obj):
        try:
            write_frame(self.wfile, obj)
        except (BrokenPipeError, OSError):
            pass   # seen as a crash by poll()

    def _begin(self, now):
        """The head task starts now (loading its problem): its clock and its load allowance."""
        task = self.queue[0]
        self.info, self.t_start, self.t_phase = None, None, now
        self.limit = task.get("hard_limit") or hard_limit(task.get("timeout"))
        self.deadline = now + LOAD_ALLOWANCE if math.isfinite(self.limit) else math.inf
        self.started.append(task)
        self.head_since = now

    def submit(self, tasks, frames=None):
        """Send tasks (a dict or a list; ``frames``: their :func:`~nsopt.studies.worker.pack_frame`
        when already made); they wait in the pipe, written with one ``write``, while the worker
        finishes the ones sent before."""
        if isinstance(tasks, dict):
            tasks = [tasks]
        if not tasks:
            return
        if not self.queue and not self.alive:   # (a worker that died busy is seen by poll)
            self.kill()
            self.start()
        frames = frames or [pack_frame(t) for t in tasks]
        for task, frame in zip(tasks, frames):
            self.queue.append(task)
            self.sent_bytes.append(len(frame))
            if len(self.queue) == 1:
                self._begin(time.monotonic())
        self.last_problem = tasks[-1].get("problem")
        try:
            self.wfile.write(b"".join(frames))
            self.wfile.flush()
        except (BrokenPipeError, OSError):
            pass   # seen as a crash by poll()

    @property
    def queued_bytes(self) -> int:
        return sum(self.sent_bytes)

    def _lost(self, status, message):
        """The head task fails (the worker is gone); the tasks queued behind it are handed back."""
        task, rest = self.queue[0], list(self.queue)[1:]
        rec = failure_record(task, status, message, self.info)
        rec.update(run_metadata())
        self.kill()
        return [(task, [rec])], rest

    def expire(self):
        """``([(task, records)], requeue)``: the timeout record, after killing the worker, when the
        head task ran past its deadline (``requeue``: the tasks that were queued behind it)."""
        if not self.queue or time.monotonic() < self.deadline:
            return [], []
        phase = "solve" if self.t_start is not None else ("warm-up" if self.info else "load")
        waited = time.monotonic() - self.t_phase
        return self._lost("timeout", f"killed after {waited:.1f} s in the {phase} "
                                     f"(hard limit {self.limit:.3g} s)")

    def poll(self):
        """``([(task, records)], requeue)``: read what the worker sent; the tasks finished (or the
        head task crashed, and then the tasks to run again elsewhere)."""
        try:
            chunk = os.read(self.fileno(), 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:      # the worker died
            rc = self._wait(True)
            tail = self.log_tail()
            return self._lost("crashed", f"worker died ({_signal_name(rc)})" +
                              (f"; stderr: {tail}" if tail else ""))
        buf = self.buf + chunk if self.buf else chunk
        done, at, end = [], 0, len(buf)
        now = time.monotonic()
        while end - at >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf, at)
            if end - at < _HEADER.size + n:
                break
            msg = pickle.loads(buf[at + _HEADER.size:at + _HEADER.size + n])
            at += _HEADER.size + n
            if msg[0] == "loaded":
                self.info, self.t_phase = msg[2], now
                self.deadline = now + self.limit + WARMUP_ALLOWANCE
            elif msg[0] == "start":
                if len(msg) > 2:
                    self.info = msg[2]
                self.t_start = self.t_phase = now
                self.deadline = now + self.limit
            elif msg[0] == "done":
                done.append((self.queue.popleft(), msg[2]))
                self.sent_bytes.popleft()
                self.n_done += 1
                self.t_done += now - self.head_since
                if self.queue:
                    self._begin(now)
        self.buf = buf[at:]
        return done, []

    def run_one(self, task: dict) -> list[dict]:
        """Submit one task and block until its records come back (the dask path)."""
        self.submit(task)
        while True:
            wait = max(0.0, self.deadline - time.monotonic())
            ready, _, _ = select.select([self.fileno()], [], [], min(wait, 3600.0))
            done, _ = self.poll() if ready else self.expire()
            if done:
                self.started.clear()
                return done[0][1]


# ------------------------------------------------------------------------------------ prefetch
_PREFETCH: dict = {"thread": None}


def prefetch(modules, then=None) -> None:
    """Import ``modules`` (and call ``then()``) in a background thread of the parent while the
    workers run: the campaign's tables and figures need pandas, pyarrow and matplotlib (about a
    second of imports) only after the run. A worker forked later waits for the thread first
    (:func:`join_prefetch`)."""
    import threading

    join_prefetch()

    def body():
        for mod in modules:
            try:
                importlib.import_module(mod)
            except Exception:  # noqa: BLE001, S112  (imported again, and reported, where used)
                continue
        if then is not None:
            try:
                then()
            except Exception:  # noqa: BLE001, S110  (a warm-up only)
                pass

    t = threading.Thread(target=body, name="nsopt-prefetch", daemon=True)
    _PREFETCH["thread"] = t
    t.start()


def join_prefetch() -> None:
    """Wait for the :func:`prefetch` thread, if any."""
    t = _PREFETCH["thread"]
    if t is not None:
        t.join()
        _PREFETCH["thread"] = None


# ------------------------------------------------------------------------------------ the pool
_POOL: dict = {"key": None, "handles": []}


def _pool_key(plugins, method) -> tuple:
    """What kept workers inherited: a change means new workers."""
    from .. import registry

    methods = tuple(sorted((k, id(m.func)) for k, m in registry._REGISTRY.items()))
    return (tuple(plugins), method, tuple(sys.path), tuple(sorted(os.environ.items())), methods)


_STOP: list = []     # what else is kept for the next campaigns and stopped with the workers (the drawer)


def on_shutdown(stop) -> None:
    """Have :func:`shutdown` call ``stop()`` too (the report's drawer process registers itself)."""
    _STOP.append(stop)


def shutdown() -> None:
    """Stop the kept workers and drawer (they are also stopped when the process exits).

    A campaign keeps its worker processes (and the report's drawer) for the next campaign of the
    process; call this to free them sooner. Calling it again does nothing.

    Returns
    -------
    None

    Examples
    --------
    >>> from nsopt.studies import shutdown
    >>> shutdown()
    """
    for h in _POOL["handles"]:
        h.close()
    _POOL["handles"], _POOL["key"] = [], None
    for stop in _STOP:
        stop()


atexit.register(shutdown)


def _handles(jobs, plugins, log_dir) -> list[WorkerHandle]:
    """``jobs`` workers for a campaign: the kept ones when they fit, else new ones."""
    method = start_method()
    key = _pool_key(plugins, method)
    if _POOL["key"] != key:
        shutdown()
        _POOL["key"] = key
    hs = _POOL["handles"]
    while len(hs) > jobs:
        hs.pop().close()
    while len(hs) < jobs:
        hs.append(WorkerHandle(plugins, log_dir, name=f"worker-{len(hs)}", method=method))
    for h in hs:
        h.retarget(log_dir)
    return list(hs)


def _next_task(pending: deque, h: WorkerHandle):
    """The next task for worker ``h``: one on the problem it loaded last if one is near the head of
    the queue (the problem is parsed once for all its methods), else the head."""
    if h.last_problem is not None:
        for i, t in enumerate(pending):
            if i >= 8:
                break
            if t.get("problem") == h.last_problem and t.get("source") != "siconos":
                del pending[i]
                return t
    return pending.popleft()


QUEUE_TIME = 0.02        # seconds of work queued per worker (by the tasks' mean time so far)
QUEUE_MAX = 256          # tasks queued per worker at most
QUEUE_BYTES = 32 << 10   # pickled bytes queued per worker at most (below a pipe's 64 KB: a
                         # write to the worker never blocks)


COALESCE = 0.001         # seconds the parent waits for more results, when tasks are short
COALESCE_UNDER = 0.002   # (the mean task time under which it does)


def _depth(jobs: int, mean: float | None, pending: int) -> int:
    """How many tasks a worker should have queued: with one worker, as many as fit (it runs them
    in order whatever their time); with several, about :data:`QUEUE_TIME` of work by the tasks'
    mean time so far (2 before any is done), so that a task does not wait behind a long solve
    while another worker is free."""
    if jobs == 1:
        return QUEUE_MAX
    if mean is None:
        return 2
    return max(2, min(QUEUE_MAX, int(QUEUE_TIME / max(mean, 1e-6)), -(-pending // jobs)))


def run_local(tasks, jobs=1, plugins=(), log_dir=None, on_dispatch=None, on_start=None):
    """Run ``tasks`` on ``jobs`` local worker processes; yield ``(task, records)`` as each finishes.

    Each worker has several tasks sent to it at once (:func:`_depth`: all of them with one worker;
    about 20 ms of work each with several), written to its pipe with one ``write``: it goes from
    one task to the next without waiting for the parent, which records each result as its message
    arrives (the worker sends one per finished task). ``on_dispatch(task)`` is called when a worker
    starts on a task (progress display); ``on_start()`` once the workers are started (the parent may
    then start threads). The workers are kept for the next call when every task is done; closing
    the generator early (or Ctrl-C) kills them, and the tasks in flight are then not recorded."""
    pending = deque(tasks)
    handles = _handles(max(1, jobs), plugins, log_dir)
    finished = False
    base = [(h.n_done, h.t_done) for h in handles]
    got = False
    try:
        first = True
        while True:
            n_done = sum(h.n_done for h in handles) - sum(b[0] for b in base)
            t_done = sum(h.t_done for h in handles) - sum(b[1] for b in base)
            mean = t_done / n_done if n_done else None
            batches = []
            for h in handles:      # every worker one task first, then topped up to its depth
                batches.append([_next_task(pending, h)] if pending and not h.queue else [])
            for h, batch in zip(handles, batches):
                want = _depth(len(handles), mean, len(pending)) - len(h.queue) - len(batch)
                frames = [pack_frame(t) for t in batch]
                room = QUEUE_BYTES - h.queued_bytes - sum(map(len, frames))
                while pending and want > 0:
                    t = _next_task(pending, h)
                    frame = pack_frame(t)
                    if len(frame) > room:      # (the pipe never holds more than QUEUE_BYTES)
                        pending.appendleft(t)
                        break
                    batch.append(t)
                    frames.append(frame)
                    want -= 1
                    room -= len(frame)
                h.submit(batch, frames)
            if first:
                first = False
                if on_start:
                    on_start()
            busy = [h for h in handles if h.queue]
            if not busy:
                break
            if on_dispatch:
                for h in busy:
                    for t in h.started:
                        on_dispatch(t)
                    h.started.clear()
            wait = min(h.deadline for h in busy) - time.monotonic()
            if (got and mean is not None and mean < COALESCE_UNDER and wait > COALESCE
                    and sum(len(h.queue) for h in busy) > len(busy)):   # (not for the last ones)
                # short tasks: let a few results gather in the pipes (one wake-up of this process
                # for several results, none of the workers' writes waking it)
                time.sleep(COALESCE)
                wait -= COALESCE
            ready, _, _ = select.select([h.fileno() for h in busy], [], [], max(0.0, min(wait, 3600.0)))
            ready = set(ready)
            got = False
            for h in busy:
                done, requeue = h.poll() if h.fileno() in ready else h.expire()
                pending.extendleft(reversed(requeue))
                got = got or bool(done)
                yield from done
        finished = True
    finally:
        if not finished:
            shutdown()


# ------------------------------------------------------------------------------------ dask
_LOCAL = threading.local()


def _dask_run(task: dict, plugins: tuple) -> list[dict]:
    """Executed on a dask worker: run the task in this worker thread's own worker process."""
    h = getattr(_LOCAL, "handle", None)
    if h is None or h.plugins != tuple(plugins):
        if h is not None:
            h.close()
        h = _LOCAL.handle = WorkerHandle(plugins, name="dask-worker", method="spawn")
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
