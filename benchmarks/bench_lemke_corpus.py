"""Lemke on every LCP of the Siconos corpus: pivots and errors of nsopt's ``lemke`` and Siconos 4.4's
LEMKE, measured in the same run.

    python benchmarks/bench_lemke_corpus.py [--data DIR] [--extra FILE ...] [--siconos-src GITDIR]
                                            [--tol 1e-8] [--no-siconos]

Runs ``../shared/tools/siconos_bench.py --folders lcp --solvers LEMKE`` under ``/usr/bin/python3``
(skipped with a message when unavailable) on a temporary copy of the corpus folder ``lcp`` (plus the
``--extra`` files, and Siconos' ``lcp_tobenna.dat`` taken from ``--siconos-src`` — a Siconos git dir
or source tree — when the corpus lacks it), then nsopt's ``method="lemke"`` on the same files. Prints
per file: n, nsopt's status, error and pivots, Siconos' status, error and iterations (pivots), and
the pivot ratio nsopt/Siconos; then the solved counts. Success is the problem's own error <= tol
(nsopt's error; Siconos' ``err_check``, recomputed by its own error function).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nsopt  # noqa: E402
from nsopt.data import data_dir  # noqa: E402

TOOL = ROOT.parent / "shared" / "tools" / "siconos_bench.py"
TOBENNA = "numerics/src/LCP/test/data/lcp_tobenna.dat"


def _gather(data: Path, extra, siconos_src, dest: Path):
    dest.mkdir(parents=True)
    for f in sorted((data / "lcp").glob("*.dat")):
        shutil.copy(f, dest / f.name)
    for f in extra or ():
        shutil.copy(f, dest / Path(f).name)
    if not (dest / "lcp_tobenna.dat").exists() and siconos_src:
        src = Path(siconos_src)
        if (src / TOBENNA).is_file():
            shutil.copy(src / TOBENNA, dest / "lcp_tobenna.dat")
        else:
            r = subprocess.run(["git", "-C", str(src), "show", f"HEAD:{TOBENNA}"], capture_output=True, text=True)
            if r.returncode == 0:
                (dest / "lcp_tobenna.dat").write_text(r.stdout)
    return sorted(dest.glob("*.dat"))


def _siconos(root: Path, tol: float):
    """{file name: (status, err_check, iterations)} from Siconos' LEMKE, or None."""
    py = Path("/usr/bin/python3")
    if not TOOL.is_file() or not py.is_file():
        print(f"Siconos run skipped: {TOOL} or {py} missing")
        return None
    out = root / "siconos.csv"
    r = subprocess.run([str(py), str(TOOL), "--data", str(root), "--folders", "lcp", "--solvers", "LEMKE",
                        "--tol", str(tol), "--out", str(out)], capture_output=True, text=True)
    if r.returncode != 0 or not out.is_file():
        print("Siconos run failed:", r.stderr.strip()[-500:])
        return None
    res = {}
    with open(out) as fh:
        for row in csv.DictReader(fh):
            it = row.get("iterations") or ""
            err = row.get("err_check") or ""
            res[Path(row["file"]).name] = (row["status"], float(err) if err else float("nan"),
                                           int(float(it)) if it else None)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="siconos-data folder (default: NSOPT_DATA / nsopt.data)")
    ap.add_argument("--extra", nargs="*", help="more LCP .dat files")
    ap.add_argument("--siconos-src", help="Siconos git dir or source tree (for lcp_tobenna.dat)")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--no-siconos", action="store_true")
    a = ap.parse_args(argv)
    data = Path(a.data) if a.data else data_dir()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = _gather(data, a.extra, a.siconos_src, root / "lcp")
        sic = None if a.no_siconos else _siconos(root, a.tol)
        print(f"{'file':32s} {'n':>4s} | {'nsopt':9s} {'error':>9s} {'pivots':>6s} | "
              f"{'siconos':9s} {'error':>9s} {'pivots':>6s} | ratio")
        ok_n = ok_s = 0
        for f in files:
            p = nsopt.io.load(f)
            s = nsopt.solve(p, method="lemke", tol=a.tol)
            ok_n += s.success
            line = f"{f.name:32s} {p.size:4d} | {s.status.value:9s} {s.error:9.2e} {s.info.get('pivots', s.nit):6d} | "
            if sic is not None and f.name in sic:
                st, err, it = sic[f.name]
                good = st == "ok" and err <= a.tol
                ok_s += good
                ratio = f"{s.info.get('pivots', s.nit) / it:5.2f}" if it else "  -"
                line += f"{'solved' if good else st:9s} {err:9.2e} {it if it is not None else '-':>6} | {ratio}"
            print(line)
        print(f"solved (error <= {a.tol:g}): nsopt {ok_n}/{len(files)}"
              + (f", Siconos LEMKE {ok_s}/{len(files)}" if sic is not None else ""))


if __name__ == "__main__":
    main()
