"""nsopt.studies: problem sources, the store (resume, repair, merge), performance profiles, summary."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from conftest import need_extra

need_extra("studies")
import pandas as pd  # noqa: E402

import nsopt  # noqa: E402
from nsopt.io import write_siconos_dat  # noqa: E402
from nsopt.studies import (
    builtin_problems,
    find_problems,
    load_problem,
    merge,
    parse_methods,
    performance_profile,
    summary,
)  # noqa: E402
from nsopt.studies import load_results  # noqa: E402
from nsopt.studies import records as rec_mod  # noqa: E402
from nsopt.studies.profiles import measure_table, profile_curves  # noqa: E402

MURTY = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])   # z* = (4/3, 7/3)


# ------------------------------------------------------------------------------- files
def test_find_problems_walks_subfolders_and_warns(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    write_siconos_dat(MURTY, deep / "murty.dat")
    (tmp_path / "a" / "x.h5").write_bytes(b"not hdf5")
    (tmp_path / "a" / "notes.txt").write_text("ignored")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    found, warns = find_problems([tmp_path / "a", tmp_path / "empty", tmp_path / "missing"])
    assert [p.rsplit("/", 1)[1] for p in found] == ["murty.dat", "x.h5"]
    assert len(warns) == 2
    assert "empty" in warns[0] and "no problem file" in warns[0]
    assert "missing" in warns[1] and "no such file" in warns[1]


def test_builtin_problems_have_known_solutions():
    refs = builtin_problems()
    kinds = {r.split("/")[-1].split("-")[0] for r in refs}
    assert {"lcp", "fc3d", "fc2d", "mlcp", "relay", "gfc3d"} <= kinds
    for r in refs:
        p = load_problem(r)
        assert p.kind == r.split("/")[-1].split("-")[0]
    # deterministic: the same reference gives the same data (the resume key relies on it)
    assert load_problem(refs[0]) == load_problem(refs[0])
    from nsopt.studies.files import content_hash

    assert content_hash(refs[0]) == content_hash(refs[0])
    assert content_hash(refs[0]) != content_hash(refs[1])


def test_parse_methods():
    assert parse_methods("nsgs, psor[omega=1.2,max_iter_inner=3],lemke") == [
        ("nsgs", {}), ("psor", {"omega": 1.2, "max_iter_inner": 3}), ("lemke", {})]
    assert parse_methods([("pgs", {"omega": 1.0}), "lemke"]) == [("pgs", {"omega": 1.0}), ("lemke", {})]
    with pytest.raises(nsopt.OptionError, match="key=value"):
        parse_methods("psor[omega]")


# ------------------------------------------------------------------------------- store
def _rec(problem, method, status="solved", time=1.0, it=10, kind="lcp", **kw):
    return {"problem": problem, "problem_hash": "h" + problem, "kind": kind, "method": method,
            "options": "{}", "tol": 1e-8, "status": status, "error": 1e-9, "nit": it, "time": time,
            "timeout": None, "source": "nsopt", **kw}


def test_store_appends_resumes_and_repairs_a_cut_line(tmp_path):
    with rec_mod.Store(tmp_path) as s:
        assert s.add(_rec("p1", "a"))
        assert s.add(_rec("p2", "a"))
        assert not s.add(_rec("p1", "a", time=5.0))          # same key: kept once
    # a kill in the middle of a write leaves a partial last line
    with open(tmp_path / "records.jsonl", "a") as f:
        f.write('{"problem": "p3", "method": "a", "tol')
    with rec_mod.Store(tmp_path) as s:
        assert [r["problem"] for r in s.records] == ["p1", "p2"]
        assert s.records[0]["nit"] == 10 and s.records[0]["time"] == 1.0
        assert s.add(_rec("p3", "a"))
        s.export()
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert [json.loads(x)["problem"] for x in lines] == ["p1", "p2", "p3"]
    csv = pd.read_csv(tmp_path / "results.csv")
    assert list(csv["problem"]) == ["p1", "p2", "p3"] and list(csv.columns) == list(rec_mod.COLUMNS)
    pq = pd.read_parquet(tmp_path / "results.parquet")
    assert list(pq["problem"]) == ["p1", "p2", "p3"]


def test_one_campaign_per_folder_at_a_time(tmp_path):
    with rec_mod.Store(tmp_path):
        with pytest.raises(nsopt.NsoptError, match="another campaign is writing"):
            rec_mod.Store(tmp_path)
    with rec_mod.Store(tmp_path) as s:           # released on close
        assert s.add(_rec("p1", "a"))


def test_retried_run_replaces_the_old_row(tmp_path):
    with rec_mod.Store(tmp_path) as s:
        s.add(_rec("p1", "a", status="error"))
        s.add(_rec("p1", "a", status="solved"), replace=True)
    assert [r["status"] for r in rec_mod.read_records(tmp_path)] == ["solved"]


def test_merge_shards_each_row_once(tmp_path):
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "all"
    with rec_mod.Store(a) as s:
        s.add(_rec("p1", "x"))
        s.add(_rec("p2", "x"))
    with rec_mod.Store(b) as s:
        s.add(_rec("p2", "x", time=9.0))     # also in shard a: a's row wins
        s.add(_rec("p3", "x"))
    assert merge(out, a, b) == 3
    df = rec_mod.load_results(out)
    assert sorted(df["problem"]) == ["p1", "p2", "p3"]
    assert float(df.loc[df["problem"] == "p2", "time"].iloc[0]) == 1.0
    assert merge(out, a, b) == 0             # idempotent


# ------------------------------------------------------------------------------- profiles
def _table():
    # times: p1: a=1, b=2 ; p2: a=4 (solved), b=1 ; p3: a solved 3, b fails ; p4: both fail
    rows = [_rec("p1", "a", time=1.0, it=10), _rec("p1", "b", time=2.0, it=5),
            _rec("p2", "a", time=4.0, it=40), _rec("p2", "b", time=1.0, it=8),
            _rec("p3", "a", time=3.0, it=30), _rec("p3", "b", status="max_iter", time=0.1, it=1000),
            _rec("p4", "a", status="timeout", time=None, it=None),
            _rec("p4", "b", status="crashed", time=None, it=None),
            _rec("p1", "siconos:NSGS", time=0.5, it=3, source="siconos"),
            _rec("p2", "siconos:NSGS", status="skipped", time=None, it=None, source="siconos")]
    return rec_mod.to_frame(rec_mod.normalize(r) for r in rows)


def test_profile_ratios_by_hand():
    df = _table()
    T = measure_table(df, "time", "lcp")
    assert list(T.index) == ["p1", "p2", "p3", "p4"]
    assert T.loc["p3", "b"] == math.inf and T.loc["p4", "a"] == math.inf
    assert T.loc["p2", "Siconos NSGS"] == math.inf     # no row (the skipped one is left out)
    curves = profile_curves(T)
    # ratios: a: p1 1/0.5=2, p2 4/1=4, p3 3/3=1 -> log2: 1, 2, 0
    tau, rho = curves["a"]
    np.testing.assert_allclose(tau, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(rho, [0.25, 0.5, 0.75])
    tau, rho = curves["b"]       # p1 2/0.5 = 4 -> 2, p2 -> 0
    np.testing.assert_allclose(tau, [0.0, 2.0])
    np.testing.assert_allclose(rho, [0.25, 0.5])
    tau, rho = curves["Siconos NSGS"]
    np.testing.assert_allclose(tau, [0.0])
    np.testing.assert_allclose(rho, [0.25])
    # iterations: p1 best 3 (Siconos), p2 best 8, p3 only a
    it = profile_curves(measure_table(df, "nit", "lcp"))
    np.testing.assert_allclose(it["a"][0], sorted([np.log2(10 / 3), np.log2(40 / 8), 0.0]))


def test_summary_by_hand():
    s = summary(_table()).set_index("method")
    assert s.loc["a", "problems"] == 4 and s.loc["a", "solved"] == 3
    assert s.loc["a", "share_solved"] == 0.75 and s.loc["a", "median_time"] == 3.0
    assert s.loc["b", "solved"] == 2 and s.loc["b", "crashed"] == 1 and s.loc["a", "timeout"] == 1
    # shifted geometric mean over p1..p3 (p4 unsolved by all); failure at 10x the slowest solved
    # time (4 s) without a timeout: b on p3 -> 40 / 3
    ra = np.array([1.0 / 0.5, 4.0 / 1.0, 3.0 / 3.0])
    rb = np.array([2.0 / 0.5, 1.0 / 1.0, 40.0 / 3.0])
    g = lambda r: np.exp(np.mean(np.log(r + 1))) - 1  # noqa: E731
    assert s.loc["a", "shgeom_time_ratio"] == pytest.approx(g(ra))
    assert s.loc["b", "shgeom_time_ratio"] == pytest.approx(g(rb))
    assert s.loc["Siconos NSGS", "source"] == "siconos"


def test_performance_profile_figure_one_panel_per_kind():
    df = pd.concat([_table(), rec_mod.to_frame([rec_mod.normalize(_rec("q1", "a", kind="fc3d"))])])
    fig = performance_profile(df, "time")
    axes = fig.get_axes()
    assert [a.get_title() for a in axes] == ["fc3d: 1 problems", "lcp: 4 problems"]
    labels = [t.get_text() for t in axes[1].get_legend().get_texts()]
    assert labels == ["Siconos NSGS", "a", "b"]
    dashed = {ln.get_label(): ln.get_linestyle() for ln in axes[1].get_lines()}
    assert dashed["Siconos NSGS"] == "--" and dashed["a"] == "-"
    fig2 = performance_profile(df, "nit", kinds=["lcp"])
    assert "iterations" in fig2.get_axes()[0].get_xlabel()
    with pytest.raises(nsopt.OptionError):
        performance_profile(df, "memory")


# ------------------------------------------------------------------------------- a real campaign
def test_compare_api_on_files_and_objects(tmp_path):
    """compare() on a folder with a corrupt file and on problem objects: every row judged by the
    error measure; the corrupt file is a load_error row and the campaign goes on."""
    d = tmp_path / "data" / "sub"
    d.mkdir(parents=True)
    write_siconos_dat(MURTY, d / "murty.dat")
    (d / "broken.dat").write_text("3\n1 2\n")
    from nsopt import generate

    p, _ = generate.lcp(12, seed=3)
    df = nsopt.studies.compare([tmp_path / "data", p], "lemke,newton-fb", tol=1e-10, timeout=60,
                               out=tmp_path / "camp", progress=False)
    assert len(df) == 6
    by = {(r.problem.rsplit("/", 1)[1], r.method): r for r in df.itertuples()}
    assert by[("broken.dat", "lemke")].status == "load_error"
    assert "FormatError" in by[("broken.dat", "lemke")].message
    for m in ("lemke", "newton-fb"):
        r = by[("murty.dat", m)]
        assert r.status == "solved" and r.error <= 1e-10 and r.kind == "lcp" and r.size == 2
        r = by[("00000-lcp.pkl", m)]
        assert r.status == "solved" and r.error <= 1e-10
    assert df["nsopt_version"].eq(nsopt.__version__).all() and df["host"].notna().all()
    assert json.loads(df["versions"].iloc[0])["numpy"] == np.__version__
    assert df["problem_hash"].str.len().eq(16).all()
    for f in ("summary.csv", "profile_time.png", "profile_time.svg", "profile_nit.png",
              "profile_nit.svg", "results.parquet", "results.csv"):
        assert (tmp_path / "camp" / f).is_file(), f
    # report redraws from the stored results only
    for f in ("summary.csv", "profile_time.png"):
        (tmp_path / "camp" / f).unlink()
    written = nsopt.studies.write_report(tmp_path / "camp")
    assert tmp_path / "camp" / "profile_time.png" in written
    s = pd.read_csv(tmp_path / "camp" / "summary.csv")
    assert list(s.loc[s["kind"] == "?", "load_error"]) == [1, 1]      # the unreadable file
    s = s[s["kind"] == "lcp"]
    assert sorted(s["method"]) == ["lemke", "newton-fb"] and list(s["solved"]) == [2, 2]
    assert list(s["problems"]) == [2, 2]


def test_median_time_repeats_fast_solves_only():
    from nsopt.studies.timing import median_time

    made = []

    def fresh():
        made.append(1)
        return nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])

    nsopt.solve(MURTY, method="lemke")        # warm-up: JIT and imports are not timed
    sol, t = median_time(fresh, "lemke", tol=1e-12)
    assert len(made) == 3 and t > 0
    np.testing.assert_allclose(sol.z, [4 / 3, 7 / 3], rtol=1e-12)
    made.clear()
    sol, _ = median_time(fresh, "lemke", under=0.0)     # "slow": one run only
    assert len(made) == 1 and sol.success
    sol, _ = median_time(MURTY, "pgs", repeat=2, tol=1e-6)
    assert sol.problem is MURTY and sol.error <= 1e-6


# ------------------------------------------------------------------------------- tables
def test_tables_side_by_side_and_time_ratios_by_hand():
    from nsopt.studies.records import normalize, to_frame
    from nsopt.studies.tables import by_problem, fmt_time, time_ratio

    recs = [_rec("d/p1.dat", "a", time=2.0, nc=3), _rec("d/p1.dat", "siconos:X", time=4.0, nc=3),
            _rec("d/p2.dat", "a", time=3.0), _rec("d/p2.dat", "siconos:X", status="failed", time=1.0),
            _rec("d/p3.dat", "a", time=1.0)]
    df = to_frame([normalize(r) for r in recs])
    w = by_problem(df, ("status", "time"))
    assert list(w.index) == ["d/p1.dat", "d/p2.dat", "d/p3.dat"]
    assert list(w[("name", "")]) == ["p1.dat", "p2.dat", "p3.dat"] and w.loc["d/p1.dat", ("nc", "")] == 3
    assert w.loc["d/p2.dat", ("status", "Siconos X")] == "failed"
    assert w.loc["d/p1.dat", ("time", "a")] == 2.0 and np.isnan(w.loc["d/p3.dat", ("time", "Siconos X")])
    r = time_ratio(df, "a", "Siconos X")                      # both solved: p1 only
    assert r.to_dict() == {"d/p1.dat": 0.5}
    r = time_ratio(df, "a", "Siconos X", both_solved=False)   # every pair of times
    assert r.to_dict() == {"d/p1.dat": 0.5, "d/p2.dat": 3.0}
    assert (fmt_time(None), fmt_time(float("nan")), fmt_time(2e-3), fmt_time(2.5)) == \
        ("-", "-", "2.000ms", "2.500s")


def test_compare_repeats_fast_solves_and_keeps_the_method_info():
    p = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30"]
    df = nsopt.studies.compare(p, "lemke", repeat=3, progress=False)
    assert df["runs"].eq(3).all() and (df["time"] > 0).all() and df["status"].eq("solved").all()
    assert all(json.loads(i)["pivots"] == n for i, n in zip(df["info"], df["nit"]))
    df = nsopt.studies.compare(p, "lemke", repeat=3, repeat_under=0.0, progress=False)
    assert df["runs"].eq(1).all()


def test_describe_is_kept_while_the_file_is_unchanged(tmp_path, monkeypatch):
    from nsopt.studies import files

    f = tmp_path / "murty.dat"
    write_siconos_dat(MURTY, f)
    ref, kind, h = files.describe(str(f))
    assert (ref, kind, h) == (str(f), "lcp", files.content_hash(str(f)))
    write_siconos_dat(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -7.0]), f, overwrite=True)  # rewritten:
    assert files.describe(str(f))[2] == files.content_hash(str(f)) != h      # same size, maybe mtime
    old = os.stat(f).st_mtime_ns - 10**10                                       # a file 10 s old
    os.utime(f, ns=(old, old))
    first = files.describe(str(f))
    calls = []
    monkeypatch.setattr(files, "content_hash", lambda r: calls.append(r) or "x")
    assert files.describe(str(f)) == first and calls == []                      # kept
    os.utime(f, ns=(old + 1, old + 1))                                          # touched
    assert files.describe(str(f))[2] == "x" and calls == [str(f)]


# ------------------------------------------------------------------------------- harness overhead cuts
def test_find_problems_resolves_links_like_path_resolve(tmp_path):
    """Files listed or found in a folder come out as Path.resolve() gives them (a link to a file is
    followed; a link to a folder is not walked, as os.walk does), sorted as Paths."""
    real = tmp_path / "real"
    real.mkdir()
    for name in ("b.dat", "a-1.dat", "a.dat"):
        write_siconos_dat(MURTY, real / name)
    (tmp_path / "set").mkdir()
    os.symlink(real / "b.dat", tmp_path / "set" / "link.dat")
    os.symlink(real, tmp_path / "set" / "dirlink")
    write_siconos_dat(MURTY, tmp_path / "set" / "own.dat")
    found, warns = find_problems([tmp_path / "set"])
    assert found == [str(real / "b.dat"), str(tmp_path / "set" / "own.dat")] and not warns
    listed = [real / "b.dat", tmp_path / "set" / "dirlink" / "a.dat", real / "a-1.dat",
              tmp_path / "set" / "link.dat", os.path.relpath(real / "a.dat")]
    found, _ = find_problems(listed)
    from pathlib import Path

    assert found == [str(p) for p in sorted({Path(p).resolve() for p in listed})]


def test_memory_store_and_append_store(tmp_path):
    """Store(None) keeps the records in memory and writes nothing; a folder's store has each line in
    records.jsonl as soon as add() returns (no flush, no close needed)."""
    r = {"problem": "p", "problem_hash": "h", "method": "m", "options": "{}", "tol": 1e-8,
         "status": "solved", "nit": 3, "time": float("nan"), "info": {"pivots": 3}}
    with rec_mod.Store(None) as mem:
        assert mem.add(r) and not mem.add(r)
        df = mem.frame()
        mem.export()
    assert len(df) == 1 and df["nit"].iloc[0] == 3 and json.loads(df["info"].iloc[0]) == {"pivots": 3}
    assert pd.isna(df["time"].iloc[0])
    assert list(tmp_path.iterdir()) == []
    store = rec_mod.Store(tmp_path / "c")
    store.add(r)
    lines = (tmp_path / "c" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["info"] == '{"pivots": 3}'
    store.close()
    assert len(rec_mod.read_records(tmp_path / "c")) == 1


def test_compare_without_folder_writes_nothing(tmp_path, monkeypatch):
    """out=None: the same rows as with a folder, and no file written (no temporary campaign
    folder either)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    probs = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30"]
    a = nsopt.studies.compare(probs, "lemke,pgs", out=None, progress=False)
    b = nsopt.studies.compare(probs, "lemke,pgs", out=tmp_path / "c", progress=False, report=False)
    key = ["problem", "method"]
    a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    for c in ("problem", "problem_hash", "method", "status", "nit", "kind", "size"):
        assert a[c].tolist() == b[c].tolist(), c
    # (only the kept workers' log folder, made once per process, may be there)
    assert [p.name for p in (tmp_path / "tmp").iterdir() if not p.name.startswith("nsopt_workers_")] == []
    assert set(a.attrs["timings"]) >= {"problems", "run", "frame", "total"}


def test_queue_depth_by_hand():
    from nsopt.studies import runner

    assert runner._depth(1, None, 1000) == runner.QUEUE_MAX        # one worker: all it can hold
    assert runner._depth(2, None, 1000) == 2                       # no task timed yet
    assert runner._depth(2, 1e-3, 1000) == int(runner.QUEUE_TIME / 1e-3)
    assert runner._depth(2, 10.0, 1000) == 2                       # long tasks: one waiting
    assert runner._depth(2, 1e-6, 1000) == runner.QUEUE_MAX
    assert runner._depth(2, 1e-4, 9) == 5                          # the rest shared out


def test_report_figures_drawn_even_if_the_drawing_child_fails(tmp_path, monkeypatch):
    """write_report draws the first figure in a forked child; if the child fails, this process
    draws it."""
    from nsopt.studies import report

    df = nsopt.studies.compare(["nsopt:generated/lcp-spd-10"], "lemke,pgs", out=tmp_path / "c",
                               progress=False, report=False)
    parent = os.getpid()
    save = report._save

    def failing_in_child(job):
        if os.getpid() != parent:
            raise RuntimeError("child fails")
        save(job)

    monkeypatch.setattr(report, "_save", failing_in_child)
    written = nsopt.studies.write_report(tmp_path / "c", df)
    for m in ("time", "nit"):
        for ext in ("png", "svg"):
            p = tmp_path / "c" / f"profile_{m}.{ext}"
            assert p in written and p.stat().st_size > 1000, p
    assert df.attrs["summary"]["method"].tolist() == ["lemke", "pgs"]


def test_drawer_process_draws_and_a_failed_drawer_falls_back(tmp_path, monkeypatch):
    """The drawer forked for a campaign's report is kept for the next reports of the process; one
    that fails is stopped, and write_report draws the figures itself."""
    from nsopt.studies import report, runner

    monkeypatch.setenv("NSOPT_WORKER_START", "fork")
    df = nsopt.studies.compare(["nsopt:generated/lcp-spd-10"], "lemke,pgs", out=tmp_path / "c",
                               progress=False, report=False)
    d = report.Drawer.get()
    assert d is not None and d.alive and report.Drawer.get() is d
    files_ = ("profile_time.png", "profile_time.svg", "profile_nit.png", "profile_nit.svg")
    for _ in range(2):                      # the same process draws both reports
        for f in files_:
            (tmp_path / "c" / f).unlink(missing_ok=True)
        written = nsopt.studies.write_report(tmp_path / "c", df, drawer=d)
        for f in files_:
            assert tmp_path / "c" / f in written and (tmp_path / "c" / f).stat().st_size > 1000
        assert d.alive and report.Drawer.get() is d
    assert not d.draw([("profile", ("not panels", "time"), [tmp_path / "x.png"])])
    assert not d.alive and report.Drawer._kept is None
    for f in ("profile_time.png", "profile_nit.svg"):
        (tmp_path / "c" / f).unlink()
    nsopt.studies.write_report(tmp_path / "c", df, drawer=d)           # a dead drawer: drawn here
    assert (tmp_path / "c" / "profile_time.png").is_file() and (tmp_path / "c" / "profile_nit.svg").is_file()
    d2 = report.Drawer.get()
    runner.shutdown()
    assert not d2.alive and report.Drawer._kept is None


def test_an_old_campaign_with_an_iterations_column_still_loads_and_reports(tmp_path, capsys):
    """Campaign folders written before the column was named ``nit`` (as on a Solution) keep working:
    load_results, merge and ``nsopt report`` read their ``iterations`` as ``nit``."""
    from nsopt.cli import main as cli_main

    old = tmp_path / "old"
    old.mkdir()
    rows = [{"problem": f"p{i}", "problem_hash": "h", "kind": "lcp", "size": 3, "method": m, "options": "{}",
             "tol": 1e-8, "status": "solved", "error": 1e-10, "iterations": 2 + i + j, "time": 1e-3 * (1 + j)}
            for i in range(3) for j, m in enumerate(("lemke", "pgs"))]
    (old / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = load_results(old)
    assert "iterations" not in df.columns and df["nit"].tolist() == [r["iterations"] for r in rows]
    assert cli_main(["report", str(old)]) == 0
    summ = pd.read_csv(old / "summary.csv")
    assert "median_nit" in summ.columns and (old / "profile_nit.png").is_file()
    assert merge(tmp_path / "new", old) == len(rows)
    assert load_results(tmp_path / "new")["nit"].tolist() == df["nit"].tolist()
    capsys.readouterr()
