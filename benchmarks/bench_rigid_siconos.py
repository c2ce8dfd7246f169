"""nsopt and Siconos side by side on the rigid-body scenes of issue 23 §4, in one run.

    python benchmarks/bench_rigid_siconos.py [--scenes cube spheres chain pile10 pile100 pile1000] [--out DIR]
        [--tol 1e-6] [--max-iter 1000] [--recorded pile1000] [--budget SECONDS] [--summary-only]
        [--plot docs/img/rigid_scaling.png] [--corpus pile1000]

For each scene, one at a time, one BLAS thread: Siconos' side (``siconos_rigid.py`` under /usr/bin/python3:
Bullet, NewtonEulerDS, MoreauJeanOSI, NSGS with ``--tol`` and ``--max-iter``) and nsopt's (``nsopt_rigid.py``:
coal, the same bodies, step h = 5e-3, θ = 0.50001, the same OSNS kind and tolerance, nsopt's method: nsn-ac for
friction contact, nsgs for GenericMechanical), each writing DIR/{siconos,nsopt}_SCENE.csv|npz. The scenes
listed in ``--recorded`` keep Siconos' files found in DIR (its 1000-cube run took 72 min of wall time) instead of
re-running it. For the scenes listed in ``--corpus``, nsopt's run also writes its HDF5 record
(DIR/nsopt_SCENE.h5) and every step's FCLIB problem (DIR/corpus_SCENE/, a corpus for ``nsopt compare``; both are
written outside the timed step). Then one table per side and one comparison per scene:

- agreement: the rest height (highest body centre at the end), the time to settle (the last step whose kinetic
  energy exceeds 1e-3 of its maximum), the kinetic energy at t = 0.5, 1, 1.5, 2 s, the contacts detected (mean
  over the last 50 steps), the final centre of mass and the deepest penetration;
- the solver: failed solves (error above tol) of the steps with a problem, mean iterations;
- speed: CPU ms per step with contacts (the process's CPU time: a machine shared with other jobs inflates wall
  time), steps per second (CPU), peak RSS; the growth exponent of the CPU time per step with contacts against the
  number of cubes (log-log slope over the piles) and the plot ``--plot``: CPU ms per step against bodies for both,
  with Siconos' time without its interaction-graph consistency checks (Debian's build keeps the asserts on: 68.8 %
  of its 1000-cube time, 12 % at 100 cubes, benchmarks/siconos_perf_share.py) where it was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SICONOS_PY = "/usr/bin/python3"
# the share of Siconos' CPU time in its interaction-graph checks, measured by perf (benchmarks/README.md)
GRAPH_CHECK_SHARE = {100: 0.12, 1000: 0.688}


def summarize(out: Path, side: str):
    rows = {}
    for npz in sorted(out.glob(f"{side}_*.npz")):
        d = np.load(npz)
        if "meta" not in d:
            continue
        meta = json.loads(str(d["meta"]))
        busy = d["osns_size"] > 0
        t, E = d["t"], d["kinetic_energy"]
        moving = np.flatnonzero(E > 1e-3 * E.max()) if E.size and E.max() > 0 else np.zeros(0, int)
        cpu = d["step_cpu"]
        at = {tt: float(E[np.argmin(np.abs(t - tt))]) if t.size and t[-1] >= tt - 1e-9 else np.nan for tt in (0.5, 1.0, 1.5, 2.0)}
        rows[meta["scene"]] = dict(
            scene=meta["scene"], bodies=meta["bodies"], steps=meta["steps"], completed=meta["completed"],
            solver=meta["solver"], osns=meta["osns"], tol=meta["tol"],
            cpu_ms_contact_step=1e3 * (cpu[busy].mean() if busy.any() else np.nan),
            cpu_ms_step=1e3 * cpu.mean(), steps_per_s=1.0 / cpu.mean(),
            failed=int(d["failed"].sum()), solves=int(busy.sum()),
            nit_mean=float(d["nit"][busy].mean()) if busy.any() else 0.0,
            contacts_end=float(d["contacts_detected"][-50:].mean()), top_z=float(d["top_z"][-1]),
            com=(float(d["com_x"][-1]), float(d["com_y"][-1]), float(d["com_z"][-1])),
            settle_t=float(t[moving[-1]]) if moving.size else 0.0, E=at, energy_end=float(E[-1]),
            penetration_max=float(d["penetration"].max()), rss_mb=float(d["peak_rss_mb"].max()),
            wall_s=meta["wall_time"], t=t, kinetic_energy=E, contacts=d["contacts_detected"])
    return rows


def slope(rows, key="cpu_ms_contact_step"):
    piles = sorted((r["bodies"], r[key]) for r in rows.values() if r["scene"].startswith("pile") and np.isfinite(r[key]))
    if len(piles) < 2:
        return None, piles
    return float(np.polyfit(np.log([p[0] for p in piles]), np.log([p[1] for p in piles]), 1)[0]), piles


def print_side(rows, side):
    cols = ["scene", "bodies", "steps", "completed", "solver", "cpu_ms_contact_step", "steps_per_s", "failed", "solves",
            "nit_mean", "contacts_end", "top_z", "settle_t", "energy_end", "penetration_max", "rss_mb", "wall_s"]
    print(f"\n{side}: " + " | ".join(cols))
    for r in rows.values():
        print(" | ".join(f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols))
    s, piles = slope(rows)
    if s is not None:
        print(f"{side}: CPU ms per step with contacts ~ cubes^{s:.2f} over {[p[0] for p in piles]}")


def compare(sic, nso):
    print("\nscene | quantity | Siconos | nsopt")
    for name in [k for k in nso if k in sic]:
        a, b = sic[name], nso[name]
        lines = [("rest height (highest centre)", a["top_z"], b["top_z"]), ("time to settle (s)", a["settle_t"], b["settle_t"]),
                 ("kinetic energy at the end (J)", a["energy_end"], b["energy_end"])]
        lines += [(f"kinetic energy at t = {tt:g} s", a["E"][tt], b["E"][tt]) for tt in (0.5, 1.0, 1.5)]
        lines += [("contacts detected (last 50 steps)", a["contacts_end"], b["contacts_end"]),
                  ("final centre of mass z", a["com"][2], b["com"][2]),
                  ("final centre of mass x, y", f"{a['com'][0]:.3f}, {a['com'][1]:.3f}", f"{b['com'][0]:.3f}, {b['com'][1]:.3f}"),
                  ("deepest penetration", a["penetration_max"], b["penetration_max"]),
                  ("failed solves / solves", f"{a['failed']} / {a['solves']}", f"{b['failed']} / {b['solves']}"),
                  ("CPU ms per step with contacts", a["cpu_ms_contact_step"], b["cpu_ms_contact_step"]),
                  ("steps per second (CPU)", a["steps_per_s"], b["steps_per_s"]), ("peak RSS (MB)", a["rss_mb"], b["rss_mb"])]
        share = GRAPH_CHECK_SHARE.get(a["bodies"]) if name.startswith("pile") else None
        if share is not None:
            lines.append(("Siconos CPU ms without its graph checks", a["cpu_ms_contact_step"] * (1 - share),
                          b["cpu_ms_contact_step"]))
            lines.append(("nsopt step / Siconos step without checks", "", b["cpu_ms_contact_step"]
                          / (a["cpu_ms_contact_step"] * (1 - share))))
        for q, x, y in lines:
            fx = f"{x:.4g}" if isinstance(x, float) else str(x)
            fy = f"{y:.4g}" if isinstance(y, float) else str(y)
            print(f"{name} | {q} | {fx} | {fy}")


def plot(sic, nso, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for rows, label, mark in ((sic, "Siconos 4.4 (NSGS, Bullet)", "s-"), (nso, "nsopt (coal)", "o-")):
        s, piles = slope(rows)
        if piles:
            ax.loglog([p[0] for p in piles], [p[1] for p in piles], mark,
                      label=f"{label}: slope {s:.2f}" if s is not None else label)
    pts = [(r["bodies"], r["cpu_ms_contact_step"] * (1 - GRAPH_CHECK_SHARE[r["bodies"]]))
           for r in sic.values() if r["scene"].startswith("pile") and r["bodies"] in GRAPH_CHECK_SHARE]
    if pts:
        ax.loglog(*zip(*sorted(pts)), "s--", mfc="none", label="Siconos without its graph checks (perf)")
    n = np.array([10, 1000])
    ax.loglog(n, 1.0 * (n / 10.0) ** 1.2, ":", color="0.5", label="slope 1.2 (target)")
    ax.set_xlabel("cubes in the pile")
    ax.set_ylabel("CPU time per step with contacts [ms]")
    ax.set_title("Cost of a step against the number of bodies (h = 5 ms, tol 1e-6)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.stderr.write(r.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd[:3])}: failed")
    print(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=["cube", "spheres", "chain", "pile10", "pile100", "pile1000"])
    ap.add_argument("--out", default=str(HERE / "results" / "rigid"))
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--recorded", nargs="*", default=["pile1000"], help="scenes whose Siconos files in --out are kept")
    ap.add_argument("--budget", type=float, default=None, help="seconds of stepping per run (either side)")
    ap.add_argument("--corpus", nargs="*", default=[], help="scenes whose record and FCLIB corpus nsopt writes in --out")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--plot", default=str(HERE.parent / "docs" / "img" / "rigid_scaling.png"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if not args.summary_only:
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        budget = ["--time-budget", str(args.budget)] if args.budget else []
        for s in args.scenes:
            if not (s in args.recorded and (out / f"siconos_{s}.npz").exists()):
                run([SICONOS_PY, str(HERE / "siconos_rigid.py"), s, str(out / f"siconos_{s}"), "--tol", str(args.tol),
                     "--max-iter", str(args.max_iter)] + budget, env)
            else:
                print(f"{s}: Siconos' recorded run kept ({out / f'siconos_{s}.npz'})")
            corpus = (["--record", str(out / f"nsopt_{s}.h5"), "--write-problems", str(out / f"corpus_{s}")]
                      if s in args.corpus else [])
            run([sys.executable, str(HERE / "nsopt_rigid.py"), s, str(out / f"nsopt_{s}"), "--tol", str(args.tol),
                 "--projection", "off", "--activation", "siconos"] + budget + corpus, env)   # Siconos' scheme on both sides
    sic, nso = summarize(out, "siconos"), summarize(out, "nsopt")
    print_side(sic, "Siconos")
    print_side(nso, "nsopt")
    compare(sic, nso)
    if args.plot:
        plot(sic, nso, args.plot)


if __name__ == "__main__":
    main()
