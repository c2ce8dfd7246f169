"""The campaign's worker pool: forked workers, kept across compare() calls, replaced when what they
inherited changes; a problem loaded once for its methods; one BLAS thread per worker."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

from conftest import need_extra

need_extra("studies")

import nsopt
import nsopt.studies as st
from nsopt import registry
from nsopt.registry import Outcome
from nsopt.studies import records, runner, worker

PROBLEMS = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30"]


@pytest.fixture(params=["fork", "spawn"])
def start(request, monkeypatch):
    """Each test once with forked workers, once with fresh interpreters."""
    monkeypatch.setenv("NSOPT_WORKER_START", request.param)
    yield request.param
    runner.shutdown()


def _pids():
    return [h.pid for h in runner._POOL["handles"]]


def test_pool_is_kept_and_the_folder_lock_released(start, tmp_path):
    df = st.compare(PROBLEMS, "lemke", jobs=2, out=tmp_path / "a", progress=False, report=False)
    assert len(df) == 2 and df["status"].eq("solved").all()
    pids = _pids()
    assert len(pids) == 2 and all(pids)
    # the kept workers hold no descriptor of the campaign folder: another writer may lock it
    records.Store(tmp_path / "a").close()
    # a second campaign (another folder, fewer jobs) runs on the same processes
    df = st.compare(PROBLEMS, "lemke,newton-fb", jobs=1, out=tmp_path / "b", progress=False,
                    report=False)
    assert len(df) == 4 and (df["error"] <= 1e-8).all()
    assert _pids() == pids[:1]
    # its stderr went to the new campaign's logs
    assert (tmp_path / "b" / "logs" / "worker-0.log").is_file()
    assert json.loads((tmp_path / "b" / "logs" / "timings.json").read_text())["run"] > 0


def test_a_new_method_replaces_the_forked_pool(monkeypatch, tmp_path):
    monkeypatch.setenv("NSOPT_WORKER_START", "fork")
    try:
        st.compare(PROBLEMS[:1], "lemke", out=None, progress=False)
        before = _pids()

        @registry.register("lcp", "test-pool-threads", "BLAS threads in this process as nit")
        def threads(problem, mon):
            n = 0
            with open("/proc/self/maps") as f:
                maps = f.read().splitlines()
            for line in maps:
                if "openblas" in line and line.rstrip().endswith(".so"):
                    lib = ctypes.CDLL(line.split()[-1])
                    for sym in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
                        if hasattr(lib, sym):
                            n = max(n, getattr(lib, sym)())
            return Outcome(x={"z": np.zeros(problem.size)}, nit=n)

        df = st.compare(PROBLEMS[:1], "test-pool-threads", tol=1e300, out=None, progress=False)
        # the method exists in the worker: the pool was forked again after it was registered
        assert _pids() != before
        assert df["status"].iloc[0] == "solved", df["message"].iloc[0]
        assert df["nit"].iloc[0] in (0, 1)     # 0: no OpenBLAS loaded; else one thread
        assert "timings" in df.attrs and df.attrs["timings"]["run"] > 0
    finally:
        registry._REGISTRY.pop(("lcp", "test-pool-threads"), None)
        runner.shutdown()


def test_interrupted_campaign_stops_its_workers(monkeypatch):
    monkeypatch.setenv("NSOPT_WORKER_START", "fork")
    tasks = [{"problem": p, "problem_hash": None, "kind": "lcp", "method": "lemke", "options": {},
              "options_key": "{}", "tol": 1e-8, "max_iter": None, "timeout": None, "id": i}
             for i, p in enumerate(PROBLEMS * 2)]
    gen = runner.run_local(tasks, jobs=1)
    _, recs = next(gen)
    assert recs[0]["status"] == "solved"
    handle = runner._POOL["handles"][0]
    gen.close()                     # the consumer stops early (Ctrl-C): the pool is stopped
    assert runner._POOL["handles"] == [] and handle.pid is None


def test_worker_loads_a_problem_once_for_its_methods(monkeypatch):
    loads = []

    def load(ref):
        loads.append(ref)
        return nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0 - len(loads)])

    monkeypatch.setattr("nsopt.studies.files.load_problem", load)
    monkeypatch.setattr(worker, "_CACHE", {})
    monkeypatch.setattr(worker, "_CACHE_SIZE", [0])
    monkeypatch.setattr(worker, "CACHE_PROBLEMS", 2)
    a = worker._load({"problem": "a.dat", "problem_hash": "h1"})
    b = worker._load({"problem": "a.dat", "problem_hash": "h1"})
    assert loads == ["a.dat"]
    # each method its own problem and cache, on the same read-only arrays
    assert a is not b and a._store is not b._store and np.array_equal(a.q, b.q)
    assert a.M is b.M and not a.M.flags.writeable
    a.cached("k", lambda: 1)
    assert "k" in a._store and not b._store
    worker._load({"problem": "a.dat", "problem_hash": "h2"})             # the file changed
    assert loads == ["a.dat"] * 2
    worker._load({"problem": "b.dat", "problem_hash": "h3"})             # drops the oldest (h1)
    worker._load({"problem": "a.dat", "problem_hash": "h1"})
    assert loads == ["a.dat", "a.dat", "b.dat", "a.dat"] and len(worker._CACHE) == 2
    worker._load({"problem": "c.dat", "problem_hash": None})             # no hash: never kept
    worker._load({"problem": "c.dat", "problem_hash": None})
    assert loads[-2:] == ["c.dat", "c.dat"]
    assert worker._CACHE_SIZE[0] == sum(v[1] for v in worker._CACHE.values()) == 2 * (4 + 2) * 8
    monkeypatch.setattr(worker, "CACHE_BYTES", 50)                      # 48 bytes each
    worker._load({"problem": "d.dat", "problem_hash": "h4"})             # over the bytes: keeps one
    assert list(worker._CACHE) == [("d.dat", "h4")] and worker._CACHE_SIZE[0] == 48


def test_copies_share_only_read_only_data():
    """A problem whose attributes are all read-only arrays or immutable values is shared by its
    copies (a new object, its own cache); anything else (a writable array, a sparse matrix, a list)
    gives a deep copy."""
    import copy

    import scipy.sparse as sp

    p = nsopt.LCP(np.eye(3), np.ones(3))
    fresh = worker._copier(p)
    assert fresh is not copy.deepcopy
    q = fresh(p)
    assert type(q) is type(p) and q == p and q.q is p.q and q._store == {} and q._store is not p._store
    with pytest.raises(AttributeError):
        q.q = np.zeros(3)                                  # still frozen
    assert worker._copier(nsopt.LCP(sp.csr_matrix(np.eye(3)), np.ones(3))) is copy.deepcopy
    object.__setattr__(p, "extra", np.zeros(2))            # a writable array
    assert worker._copier(p) is copy.deepcopy
    object.__setattr__(p, "extra", [1.0])
    assert worker._copier(p) is copy.deepcopy


def test_nbytes_counts_dense_and_sparse_arrays():
    import scipy.sparse as sp

    p = nsopt.LCP(sp.csr_matrix(np.eye(50)), np.ones(50))
    assert worker._nbytes(p) >= 50 * 8 + 50 * 8 + 50 * 4
    assert worker._nbytes(nsopt.LCP(np.eye(3), np.ones(3))) == 9 * 8 + 3 * 8


def test_batches_bounded_by_the_pipe_bytes(monkeypatch):
    """A worker's batch never holds more pickled bytes than QUEUE_BYTES (a write to its pipe never
    blocks); with a bound of about two tasks every task still runs, in batches."""
    monkeypatch.setenv("NSOPT_WORKER_START", "fork")
    monkeypatch.setattr(runner, "QUEUE_BYTES", 900)
    seen = []
    submit = runner.WorkerHandle.submit

    def spy(self, tasks, frames=None):
        submit(self, tasks, frames)
        seen.append((len(tasks) if isinstance(tasks, list) else 1, self.queued_bytes))

    monkeypatch.setattr(runner.WorkerHandle, "submit", spy)
    probs = [f"nsopt:generated/{n}" for n in ("lcp-spd-10", "lcp-p-30", "lcp-psd-40", "lcp-spd-50")]
    df = st.compare(probs, "lemke,pgs,newton-fb", out=None, progress=False)
    assert len(df) == 12 and df["status"].notna().all()
    assert max(b for _, b in seen) <= 900                    # (each task's pickle is < 900 bytes)
    assert max(n for n, _ in seen) >= 2                       # several tasks sent at once
