"""Campaign robustness: hard timeouts, crashed workers, and resuming after Ctrl-C and kill -9.

The misbehaving methods are test-only: a plugin module written by the fixture registers them, and
the campaign imports it in every worker (``plugins=`` / ``--plugin``). They only apply when
``NSOPT_TEST_PLUGIN=1`` (set by the fixture), so no other test sees them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import need_extra

need_extra("studies")

import nsopt
from nsopt import registry
from nsopt.io import write_siconos_dat
from nsopt.studies import records

MOD = "nsopt_studies_test_plugin"
ROOT = Path(nsopt.__file__).resolve().parent.parent
PLUGIN = '''
"""Test-only methods for the campaign tests (registered for LCPs)."""
import os, signal, time
from nsopt.registry import Outcome, register

def _on(problem):
    return None if os.environ.get("NSOPT_TEST_PLUGIN") == "1" else "test-only (NSOPT_TEST_PLUGIN=1)"

@register("lcp", "test-hang", "never returns", applies=_on)
def hang(problem, mon):
    while True:
        time.sleep(0.05)

@register("lcp", "test-exit", "ends its own process with os._exit(3)", applies=_on)
def die(problem, mon):
    os._exit(3)

@register("lcp", "test-segv", "a segmentation fault", applies=_on)
def segv(problem, mon):
    os.kill(os.getpid(), signal.SIGSEGV)

@register("lcp", "test-sleep", "sleeps NSOPT_TEST_SLEEP seconds, then Lemke", applies=_on)
def sleepy(problem, mon):
    time.sleep(float(os.environ.get("NSOPT_TEST_SLEEP", "0.2")))
    from nsopt import solve
    s = solve(problem, method="lemke", tol=1e-12)
    return Outcome(x={"z": s.z}, nit=s.nit)
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugin")
    (d / f"{MOD}.py").write_text(PLUGIN)
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(d))
    mp.setenv("NSOPT_TEST_PLUGIN", "1")
    yield d
    mp.undo()
    for name in ("test-hang", "test-exit", "test-segv", "test-sleep"):
        registry._REGISTRY.pop(("lcp", name), None)
    sys.modules.pop(MOD, None)


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_timeout_and_crashes_are_recorded_and_the_campaign_finishes(plugin, tmp_path, start,
                                                                     monkeypatch):
    monkeypatch.setenv("NSOPT_WORKER_START", start)
    probs = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30"]
    t0 = time.monotonic()
    df = nsopt.studies.compare(probs, "test-hang,test-exit,test-segv", timeout=1.0, jobs=2,
                               out=tmp_path / "c", plugins=[MOD], progress=False, warmup=False)
    assert time.monotonic() - t0 < 120
    # the same campaign folder goes on with a method that works
    df = nsopt.studies.compare(probs, "test-hang,test-exit,test-segv,lemke", timeout=60, jobs=2,
                               out=tmp_path / "c", plugins=[MOD], progress=False)
    assert len(df) == 8
    st = {(r.problem.rsplit("/", 1)[1], r.method): r for r in df.itertuples()}
    for p in ("lcp-spd-10", "lcp-p-30"):
        assert st[(p, "test-hang")].status == "timeout"
        assert "in the solve (hard limit 2 s)" in st[(p, "test-hang")].message
        assert st[(p, "test-hang")].kind == "lcp"
        assert st[(p, "test-exit")].status == "crashed"
        assert "exit code 3" in st[(p, "test-exit")].message
        assert st[(p, "test-segv")].status == "crashed"
        assert "SIGSEGV" in st[(p, "test-segv")].message
        r = st[(p, "lemke")]
        assert r.status == "solved" and r.error <= 1e-8


def test_tasks_queued_behind_a_crash_run_again(plugin, tmp_path, monkeypatch):
    """One worker, two tasks in flight: the task queued behind a crash or a timeout is not lost, it
    runs on the next worker."""
    monkeypatch.setenv("NSOPT_WORKER_START", "fork")
    probs = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30", "nsopt:generated/lcp-spd-50"]
    df = nsopt.studies.compare(probs, "test-exit,lemke,test-hang", timeout=1.0, jobs=1,
                               out=tmp_path / "c", plugins=[MOD], progress=False, report=False)
    assert len(df) == 9
    by = df.groupby("method")["status"].agg(set).to_dict()
    assert by == {"test-exit": {"crashed"}, "lemke": {"solved"}, "test-hang": {"timeout"}}


def _lcp_folder(d: Path, n=8) -> Path:
    from nsopt import generate

    d.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        write_siconos_dat(generate.lcp(8 + i, seed=100 + i)[0], d / f"gen_lcp_{i:02d}.dat")
    return d


def _lines(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    text = path.read_text()
    return [json.loads(x) for x in text.splitlines(keepends=True) if x.endswith("\n") and x.strip()]


def _wait_rows(path: Path, n: int, proc, limit=180.0):
    t0 = time.monotonic()
    while len(_lines(path)) < n:
        assert proc.poll() is None, "the campaign ended before it could be interrupted"
        assert time.monotonic() - t0 < limit, "the campaign made no progress"
        time.sleep(0.05)


def test_kill_and_resume_every_row_exactly_once(plugin, tmp_path):
    data = _lcp_folder(tmp_path / "data" / "lcp")
    out = tmp_path / "camp"
    store = out / "records.jsonl"
    env = dict(os.environ, NSOPT_TEST_PLUGIN="1", NSOPT_TEST_SLEEP="0.25",
               PYTHONPATH=os.pathsep.join([str(plugin), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "nsopt", "compare", str(tmp_path / "data"), "--methods",
           "test-sleep,lemke", "--plugin", MOD, "--out", str(out), "--timeout", "60", "--no-progress"]
    expected = {(f, m) for f in os.listdir(data) for m in ("test-sleep", "lemke")}

    # 1. Ctrl-C after 3 rows: the workers are stopped, the rows kept, exit code 130
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_rows(store, 3, p)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=60) == 130, p.stderr.read().decode()[-2000:]
    after_int = _lines(store)
    assert 3 <= len(after_int) < len(expected)

    # 2. resume, then kill -9 a few rows later
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_rows(store, len(after_int) + 3, p)
    p.kill()
    p.wait(timeout=30)
    before = _lines(store)
    assert len(before) < len(expected)
    assert before[:len(after_int)] == after_int
    with open(store, "a") as f:       # a write cut by the kill
        f.write('{"problem": "' + str(data / "gen_lcp_07.dat"))

    # 3. the same command again finishes the campaign
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    final = _lines(store)
    keys = [records.key(x) for x in final]
    assert len(keys) == len(set(keys)) == len(expected)
    assert {(Path(x["problem"]).name, x["method"]) for x in final} == expected
    by_key = {records.key(x): x for x in final}
    for x in before:                  # rows finished before the kill are unchanged
        assert by_key[records.key(x)] == x
    assert all(x["status"] == "solved" and x["error"] <= 1e-8 for x in final)
    csv_rows = records.load_results(out)
    assert len(csv_rows) == len(expected)
    import pandas as pd

    assert len(pd.read_csv(out / "results.csv")) == len(expected)
    assert len(pd.read_parquet(out / "results.parquet")) == len(expected)
    assert "resuming" in r.stderr
