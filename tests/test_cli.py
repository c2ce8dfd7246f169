"""The ``nsopt`` command line: the demo table's defects fixed, info, solve, compare, report, merge."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nsopt
from nsopt import generate
from nsopt.cli import main
from nsopt.io import write_fclib, write_siconos_dat

from conftest import need_extra

ROOT = Path(nsopt.__file__).resolve().parent.parent
MURTY = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])   # z* = (4/3, 7/3)


@pytest.fixture
def pd():
    """pandas, for the tests of ``nsopt compare``, ``report`` and ``merge`` (the extra nsopt[studies])."""
    need_extra("studies")
    import pandas

    return pandas


@pytest.fixture
def folder(tmp_path):
    """A folder of subfolders: a .dat deep down with a long name, an FCLIB .h5, a corrupt file."""
    deep = tmp_path / "set" / "lcp" / "more"
    deep.mkdir(parents=True)
    write_siconos_dat(MURTY, deep / ("murty_" + "x" * 70 + ".dat"))
    fc, _ = generate.friction_contact(4, dim=3, seed=2)
    write_fclib(fc, tmp_path / "set" / "fc4.h5")
    return tmp_path / "set"


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_says_nsopt_and_shows_defaults(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0
    assert out.startswith("usage: nsopt ") and "(default: 1e-08)" in out
    assert "compare" in out and "warmed up" in out
    r = subprocess.run([sys.executable, "-m", "nsopt", "compare", "--help"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("usage: nsopt compare")
    assert "(default: nsopt-campaign)" in r.stdout and "(default: 1)" in r.stdout


def test_demo_walks_subfolders_reads_h5_and_keeps_the_table(capsys, folder):
    rc, out, err = run(capsys, "--no-demo", str(folder), "--methods", "lemke,nsgs")
    assert rc == 0, err
    lines = out.splitlines()
    head = lines[0]
    rows = [ln for ln in lines[2:] if ln.strip() and not ln.startswith(("1 of", "2 of", "times"))]
    assert len(rows) == 2
    # columns stay aligned whatever the names' lengths: kind starts where the header says
    col = head.index("kind")
    assert all(r[col:col + 4] in ("lcp ", "fc3d") for r in rows)
    assert any(re.search(r"^murty_x+…x+\.dat lcp ", r) for r in rows)   # long name: cut in the middle
    assert "2 of 2 solves reached" in out and "warmed up" in out


def test_demo_exit_codes(capsys, folder, tmp_path):
    (folder / "lcp" / "broken.dat").write_text("2\n1 2\n3\n")
    rc, out, _ = run(capsys, "--no-demo", str(folder), "--methods", "lemke")
    assert rc == 1 and "load error" in out and "FormatError" in out
    rc, out, _ = run(capsys, "--no-demo", str(folder / "fc4.h5"), "--methods", "nsgs", "--max-iter", "1")
    assert rc == 1 and "max_iter" in out
    rc, _, err = run(capsys, "--no-demo", str(tmp_path / "absent"))
    assert rc == 2 and "no such file" in err


def test_demo_empty_folder_warns(capsys, tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    rc, out, err = run(capsys, "--no-demo", str(tmp_path / "a"))
    assert rc == 1
    assert "no problem file" in err and "0 solves" in err


def test_demo_usage_errors_say_why(capsys, folder, tmp_path):
    rc, out, err = run(capsys, "--methods", "bogus")
    assert rc == 2 and "unknown method(s) 'bogus'" in err and "lemke" in err and out == ""
    rc, out, err = run(capsys, "--tol", "-1")
    assert rc == 2 and "tol must be a finite positive number" in err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    target = ro / "x.csv" if os.geteuid() != 0 else tmp_path / "nofolder" / "x.csv"
    rc, out, err = run(capsys, "--no-demo", str(folder), "--csv", str(target))
    assert rc == 2 and "cannot write --csv" in err and "Traceback" not in err


def test_demo_option_error_message_in_row_and_csv(capsys, folder, tmp_path):
    csv = tmp_path / "rows.csv"
    rc, out, _ = run(capsys, "--no-demo", str(folder / "fc4.h5"), "--methods", "nsgs", "--csv", str(csv),
                     "--max-iter", "-1")
    assert rc == 1
    assert "n/a" in out and "OptionError: max_iter must be a non-negative integer" in out
    assert "OptionError: max_iter must be" in csv.read_text() and csv.read_text().count("\n") == 1


def test_info(capsys, folder):
    rc, out, _ = run(capsys, "info", str(folder))
    assert rc == 0
    assert "kind: fc3d" in out and "nc=4" in out and "mu: [0.3, 0.3]" in out
    assert "kind: lcp" in out and "M: 2x2 dense, 4 nonzeros (100 %)" in out
    assert re.search(r"methods: auto, .*lemke", out)


def test_solve_writes_npz_and_fclib(capsys, folder, tmp_path):
    f = next(folder.rglob("*.dat"))
    rc, out, _ = run(capsys, "solve", str(f), "--method", "lemke", "--tol", "1e-12",
                     "--out", str(tmp_path / "s.npz"))
    assert rc == 0 and "status    solved" in out
    z = np.load(tmp_path / "s.npz")["z"]
    np.testing.assert_allclose(z, [4 / 3, 7 / 3], rtol=1e-12)
    rc, out, _ = run(capsys, "solve", str(folder / "fc4.h5"), "--method", "nsn-ac",
                     "--out", str(tmp_path / "s.h5"))
    assert rc == 0
    p = nsopt.io.load(tmp_path / "s.h5")
    import h5py

    with h5py.File(tmp_path / "s.h5") as h:
        r = h["solution"]["r"][()]
    assert p.error(r) <= 1e-8
    rc, _, err = run(capsys, "solve", str(f), "--method", "nsgs")
    assert rc == 2 and "nsgs" in err
    rc, _, err = run(capsys, "solve", str(f), "--method", "psor", "--option", "omega=7")
    assert rc == 2 and "omega" in err


def test_compare_report_merge(capsys, folder, tmp_path, pd):
    a, b, both = tmp_path / "a", tmp_path / "b", tmp_path / "both"
    rc, out, err = run(capsys, "compare", str(folder / "lcp"), "--methods", "lemke,newton-fb",
                       "--out", str(a), "--no-progress", "--timeout", "60", "--history", "murty")
    assert rc == 0, err
    assert re.search(r"lcp\s+lemke\s+1\s+1", out)
    for f in ("results.csv", "results.parquet", "summary.csv", "profile_time.png", "profile_time.svg",
              "profile_nit.png", "profile_nit.svg", "history.png"):
        assert (a / f).is_file(), f
    rc, out, err = run(capsys, "compare", str(folder / "fc4.h5"), "--methods", "nsgs,lemke",
                       "--out", str(b), "--no-progress")
    assert rc == 0, err
    assert len(pd.read_csv(b / "results.csv")) == 1          # lemke does not apply to fc3d
    # report redraws without solving
    (a / "profile_time.png").unlink()
    rc, out, _ = run(capsys, "report", str(a))
    assert rc == 0 and (a / "profile_time.png").is_file()
    rc, _, err = run(capsys, "report", str(a), str(b))
    assert rc == 2 and "--out" in err
    rc, out, _ = run(capsys, "merge", str(both), str(a), str(b))
    assert rc == 0 and "3 row(s) added" in out
    df = pd.read_csv(both / "results.csv")
    assert sorted(df["method"]) == ["lemke", "newton-fb", "nsgs"]
    assert (both / "profile_time.png").is_file()
    rc, _, err = run(capsys, "compare", str(folder), "--methods", "bogus", "--out", str(a))
    assert rc == 2 and "unknown method" in err
    rc, _, err = run(capsys, "compare", str(folder), "--methods", "lemke", "--timeout", "-3")
    assert rc == 2


def test_compare_without_siconos_says_why(capsys, folder, tmp_path, pd):
    rc, out, err = run(capsys, "compare", str(folder / "fc4.h5"), "--methods", "nsgs", "--out",
                       str(tmp_path / "c"), "--no-progress", "--siconos", "NSGS",
                       "--siconos-bench", str(tmp_path / "nowhere.py"))
    assert rc == 0
    assert "Siconos skipped: siconos_bench.py not found at" in err
    assert list(pd.read_csv(tmp_path / "c" / "results.csv")["method"]) == ["nsgs"]


def test_command_exit_codes_and_output_with_the_fast_exit(folder, tmp_path, pd):
    """``python -m nsopt`` ends with os._exit after flushing its output and running the exit
    handlers: the exit codes and the printed summary are those of main()."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "nsopt", "compare", str(folder / "lcp"), "--methods", "lemke",
           "--out", str(tmp_path / "c"), "--no-progress"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"lcp\s+lemke\s+1\s+1", r.stdout) and "results:" in r.stdout
    assert len(pd.read_parquet(tmp_path / "c" / "results.parquet")) == 1
    r = subprocess.run(cmd[:5] + ["--methods", "bogus"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "unknown method" in r.stderr
    # main() called by a program returns its code instead of ending the process
    from nsopt.__main__ import main as entry

    assert entry(["compare", str(folder / "lcp"), "--methods", "bogus"]) == 2


# ------------------------------------------------------------------------------------ bad inputs (issue 20)

def test_compare_on_a_file_name_that_is_not_utf8(capsys, tmp_path, pd):
    """A Latin-1 file name (bytes that are not UTF-8): the campaign ran it, wrote its row (the name with
    \\xNN escapes) and resumes without redoing it; it crashed with UnicodeEncodeError and left results.csv
    with its header only."""
    if sys.platform == "darwin":
        pytest.skip("macOS file systems refuse names that are not UTF-8")
    d = tmp_path / "set"
    d.mkdir()
    name = os.fsdecode(b"caf\xe9.dat")
    write_siconos_dat(MURTY, d / name)
    out_dir = tmp_path / "camp"
    rc, out, err = run(capsys, "compare", str(d), "--methods", "lemke", "--out", str(out_dir), "--no-progress")
    assert rc == 0, err
    df = pd.read_csv(out_dir / "results.csv")
    assert len(df) == 1 and df["problem"].iloc[0].endswith("caf\\xe9.dat") and df["status"].iloc[0] == "solved"
    assert pd.read_parquet(out_dir / "results.parquet")["problem"].iloc[0].endswith("caf\\xe9.dat")
    rc, out, err = run(capsys, "compare", str(d), "--methods", "lemke", "--out", str(out_dir), "--no-progress")
    assert rc == 0 and len(pd.read_csv(out_dir / "results.csv")) == 1       # resumed: nothing redone
    rc, out, err = run(capsys, "info", str(d))
    assert rc == 0 and "caf\\xe9.dat" in out


@pytest.mark.parametrize("spec, message", [
    ("nsgs[omega=abc]", r"--methods nsgs\[omega='abc'\]: nsgs: omega must be a number in \(0, 2\)"),
    ("lemke,psor[omega=abc]", r"--methods psor\[omega='abc'\]: psor: omega must be a number"),
    ("nsgs[omeg=1.2]", r"unknown option\(s\) \['omeg'\] for nsgs \(its options: .*omega"),
])
def test_compare_bad_option_value_is_a_usage_error(capsys, folder, tmp_path, spec, message, pd):
    """Exit 2 before the campaign (it exited 1 with a row of errors per problem)."""
    rc, out, err = run(capsys, "compare", str(folder), "--methods", spec, "--out", str(tmp_path / "c"),
                       "--no-progress")
    assert rc == 2 and re.search(message, err), err
    assert not (tmp_path / "c" / "records.jsonl").exists()


def test_compare_good_options_still_run(capsys, folder, tmp_path, pd):
    rc, out, err = run(capsys, "compare", str(folder), "--methods", "nsgs[omega=1.2],lemke", "--out",
                       str(tmp_path / "c"), "--no-progress")
    assert rc == 0, err
    assert set(pd.read_csv(tmp_path / "c" / "results.csv")["status"]) == {"solved"}


def test_unknown_command_suggests_the_commands(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "frobnicate")
    assert rc == 2
    assert "no such file or folder: frobnicate (and not a command: info, solve, compare, report, merge)" in err
    rc, _, err = run(capsys, "comprae", "x")
    assert rc == 2 and "did you mean 'nsopt compare'?" in err
    rc, _, err = run(capsys, "missing.dat")           # a file name: no command hint
    assert rc == 2 and err.strip() == "nsopt: error: no such file or folder: missing.dat"


def test_info_on_a_missing_file_is_one_error(capsys, tmp_path):
    rc, out, err = run(capsys, "info", str(tmp_path / "missing.dat"))
    assert rc == 2
    assert err.strip().splitlines() == [f"nsopt info: error: no such file or folder: {tmp_path / 'missing.dat'}"]


def test_summary_timeout_counts_the_time_limit(capsys, tmp_path, pd):
    """A run stopped at its (soft) time limit has status time_limit: the summary's timeout column counted
    only the hard kills (status timeout) and showed 0."""
    from nsopt.studies import summary

    rows = []
    for prob, (st_a, st_b) in {"p1": ("solved", "time_limit"), "p2": ("solved", "timeout"),
                               "p3": ("time_limit", "solved")}.items():
        for meth, st in (("a", st_a), ("b", st_b)):
            rows.append({"problem": prob, "problem_hash": prob, "kind": "lcp", "size": 2, "nc": None,
                         "method": meth, "source": "nsopt", "options": "{}", "tol": 1e-8, "max_iter": None,
                         "timeout": 1.0, "status": st, "error": 0.0 if st == "solved" else 1.0,
                         "iterations": 3, "time": 0.5 if st == "solved" else 1.0})
    s = summary(pd.DataFrame(rows)).set_index("method")
    assert s.loc["a", "timeout"] == 1 and s.loc["b", "timeout"] == 2
    assert s.loc["a", "solved"] == 2 and s.loc["b", "solved"] == 1
