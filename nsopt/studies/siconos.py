"""Siconos' solvers in the same campaign, run through the external program ``siconos_bench.py``.

``nsopt compare ... --siconos NSGS,NSN_AC,PROX`` runs those Siconos 4.4 solvers on the same files; their
rows join the results table with ``method = "siconos:NSGS"`` and ``source = "siconos"`` (labelled
"Siconos NSGS", dashed, in the profiles). The labels are those of the tool's catalogue for each kind
(e.g. fc3d: NSGS, NSN_AC, NSN_FB, PROX, ADMM, ...; lcp: LEMKE, PGS, ...); a label that has no solver
for a problem's kind gives a ``skipped`` row, left out of the profiles.

The tool is an external program, found in this order:

1. the ``tool=`` argument (``--siconos-bench PATH``);
2. the environment variable ``NSOPT_SICONOS_BENCH``;
3. documented fallback: ``../shared/tools/siconos_bench.py`` relative to the project root (the
   checkout that holds ``nsopt/``).

It runs under the interpreter named by ``python=`` (``--siconos-python``), else
``NSOPT_SICONOS_PYTHON``, else the interpreter of the tool's ``#!`` line; that interpreter must
``import siconos.numerics``. When the tool or Siconos is missing, :func:`unavailable` says why and the
campaign goes on without the Siconos rows.

Each task runs the tool on one file (a temporary folder that links to it) with the missing solvers,
``--tol``, ``--max-iter``, ``--timeout`` (the tool kills a solve after ``timeout + 15`` s) and one BLAS
thread, with ``--repeat-under 0`` (one timed run, as nsopt's rows; with ``compare(repeat=3)``,
``--repeat-under repeat_under``: the median of 3 runs under that time). The tool reports the time of the
driver call alone and the error recomputed by Siconos' own error function of the kind (the measure
nsopt computes too); a row is ``solved`` when that error is at most ``tol``, as for nsopt's rows.
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

ENV_TOOL = "NSOPT_SICONOS_BENCH"
ENV_PYTHON = "NSOPT_SICONOS_PYTHON"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def find_tool(tool=None) -> Path:
    """The path of ``siconos_bench.py`` (see the module docstring for the search order)."""
    if tool:
        return Path(tool).expanduser().resolve()
    env = os.environ.get(ENV_TOOL)
    if env:
        return Path(env).expanduser().resolve()
    return (_PROJECT_ROOT / ".." / "shared" / "tools" / "siconos_bench.py").resolve()


def find_python(tool: Path, python=None) -> str | None:
    """The interpreter that runs the tool: argument, ``NSOPT_SICONOS_PYTHON``, the tool's ``#!``."""
    if python:
        return python
    env = os.environ.get(ENV_PYTHON)
    if env:
        return env
    try:
        with open(tool) as f:
            first = f.readline()
    except OSError:
        return None
    if first.startswith("#!"):
        parts = shlex.split(first[2:])
        if parts and Path(parts[0]).name == "env" and len(parts) > 1:
            return shutil.which(parts[1])
        return parts[0] if parts else None
    return shutil.which("python3")


def _clean_env() -> dict:
    """The environment for another interpreter: without this one's module search path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def unavailable(tool=None, python=None) -> str | None:
    """None when Siconos can run, else the reason why not (shown to the user)."""
    path = find_tool(tool)
    if not path.is_file():
        return (f"siconos_bench.py not found at {path} (give --siconos-bench PATH or set {ENV_TOOL})")
    py = find_python(path, python)
    if not py or not (Path(py).is_file() or shutil.which(py)):
        return (f"no interpreter for {path} (its #! line names {py!r}; set {ENV_PYTHON} or "
                f"--siconos-python)")
    try:
        r = subprocess.run([py, "-c", "import siconos.numerics"], capture_output=True, text=True,
                           timeout=120, env=_clean_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {py}: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"{py} cannot import siconos.numerics ({last})"
    return None


def hard_limit(n_solvers: int, timeout) -> float:
    """Seconds after which the whole tool run on one file is killed."""
    per = (float(timeout) if timeout is not None else 600.0) + 30.0
    return 60.0 + n_solvers * per


def _status(row, tol, timeout):
    st = row.get("status", "")
    if st in ("timeout", "skipped", "load_error", "error"):
        return st
    if st == "crash":
        return "crashed"
    try:
        err = float(row.get("err_check") or row.get("err_solver") or "nan")
    except ValueError:
        err = float("nan")
    t = float(row["time_s"]) if row.get("time_s") else None
    if timeout and t is not None and t > timeout:
        return "time_limit"
    if err <= tol:
        return "solved"
    return "inaccurate" if row.get("info") == "0" else "failed"


def _num(x, cast=float):
    try:
        return cast(x) if x not in ("", None) else None
    except ValueError:
        return None


def run_task(task: dict) -> list[dict]:
    """Run the tool on one problem with the task's Siconos solver labels; one record per label."""
    from .records import failure_record, now_utc, task_columns

    labels = task["siconos_solvers"]
    tool = Path(task["tool"])
    ref, kind = task["problem"], task.get("kind") or "fc3d"
    with tempfile.TemporaryDirectory(prefix="nsopt_siconos_") as tmp:
        folder = Path(tmp, kind)
        folder.mkdir()
        from .files import GENERATED, load_problem

        if ref.startswith(GENERATED) or ref.endswith(".pkl"):
            from ..io import write_siconos_dat

            link = folder / (Path(ref).stem.replace("/", "_") + ".dat")
            write_siconos_dat(load_problem(ref), link)
        else:
            suffix = ".hdf5" if ref.lower().endswith((".h5", ".hdf5")) else Path(ref).suffix
            link = folder / (Path(ref).stem + suffix)
            os.symlink(os.path.abspath(ref), link)
        out = Path(tmp, "out.csv")
        cmd = [task["python"], str(tool), "--data", tmp, "--folders", kind, "--out", str(out),
               "--tol", repr(task["tol"]), "--repeat-under", repr(float(task.get("repeat_under") or 0)),
               "--threads", "1",
               "--solvers", *labels]
        if task.get("timeout") is not None:
            cmd += ["--timeout", repr(float(task["timeout"]))]
        if task.get("max_iter") is not None:
            cmd += ["--max-iter", str(task["max_iter"])]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=_clean_env())
        rows = []
        if out.is_file():
            with open(out) as f:
                rows = list(csv.DictReader(f))
    by_label = {r["solver"]: r for r in rows if r.get("solver")}
    load_err = next((r for r in rows if r.get("status") == "load_error"), None)
    recs = []
    for lab in labels:
        sub = dict(task, method=f"siconos:{lab}")
        r = by_label.get(lab)
        if r is None:
            if load_err is not None:
                recs.append(failure_record(sub, "load_error", f"Siconos: {load_err.get('note', '')}"))
            elif proc.returncode != 0:
                tail = " ".join(proc.stderr.split())[-400:]
                recs.append(failure_record(sub, "error", f"siconos_bench.py exit {proc.returncode}: {tail}"))
            else:
                recs.append(failure_record(sub, "skipped", f"no Siconos solver {lab} for {kind} "
                                                          f"in siconos_bench.py's catalogue"))
            continue
        recs.append({**task_columns(sub), "kind": r.get("kind") or kind,
                     "size": _num(r.get("n"), int), "nc": _num(r.get("nc"), int),
                     "status": _status(r, task["tol"], task.get("timeout")),
                     "error": _num(r.get("err_check")) if r.get("err_check") else _num(r.get("err_solver")),
                     "nit": _num(r.get("iterations"), int), "time": _num(r.get("time_s")),
                     "build_time": None, "peak_rss_mb": None,
                     "message": "; ".join(x for x in (f"info={r.get('info')}" if r.get("info") else "",
                                                      r.get("note", "")) if x),
                     "finished_at": now_utc()})
    return recs


def run_folders(data, folders, solvers, out, *, tol=None, timeout=None, max_iter=None, threads=None,
                tool=None, python=None, what="Siconos") -> dict:
    """Run the tool once over whole corpus folders (the benchmark scripts' launcher).

    ``data``: the corpus root holding ``folders``; ``solvers``: catalogue labels; ``out``: the tool's
    CSV. Returns ``{"folder/file": row}`` of the tool's CSV rows (``status``, ``err_check``,
    ``iterations``, ``time_s``, ...), or ``{}`` after printing ``# <what> skipped: <reason>`` when
    Siconos is not available or the tool failed."""
    import sys
    import time

    why = unavailable(tool, python)
    if why:
        print(f"# {what} skipped: {why}")
        return {}
    path = find_tool(tool)
    cmd = [find_python(path, python), str(path), "--data", str(data), "--folders", *folders,
           "--solvers", *solvers]
    for flag, v in (("--tol", tol), ("--timeout", timeout), ("--max-iter", max_iter),
                    ("--threads", threads)):
        if v is not None:
            cmd += [flag, str(v)]
    cmd += ["--out", str(out)]
    print("# running:", " ".join(cmd), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env())
    print(f"# {what} done in {time.time() - t0:.0f} s (exit {r.returncode})", flush=True)
    if r.returncode or not Path(out).is_file():
        print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stdout)
        return {}
    with open(out) as f:
        return {row["file"]: row for row in csv.DictReader(f)}
