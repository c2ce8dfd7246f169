"""Before and after in one run: the speed benchmarks on two source trees, in turns, each in its own process.

    python benchmarks/before_after.py --base /tmp/base_tree [--new .] [--repeat 2] [--quick]
                                      [--benches resolve nsgs newton modeling pile] [--pile-steps 100]

``--base`` is an nsopt tree (e.g. ``git archive <commit> | tar -x -C /tmp/base_tree``), ``--new`` this one.
Every benchmark runs as the tree's own copy of its script, with that tree first on ``PYTHONPATH`` (the
process checks that ``nsopt`` is imported from it), ``OPENBLAS_NUM_THREADS=1``, ``nice``-free (run the
whole command under ``nice`` if wanted); ``--repeat`` rounds, each round running every benchmark on both
trees (base then new, then new then base in the next round), so that the drift of a shared machine's load
hits both alike. Numba's compilation stays outside the timings: the scripts warm their kernels up before
timing (solves, runs or the campaign worker's untimed warm-up), and the pile runs a 10-cube pile in the
same process first.

Benchmarks and the figures taken from them (times are the scripts' own: CPU or best/median of runs):

- ``resolve``: ``bench_resolve.py --no-siconos`` (``bench_resolve.csv``): per sequence and method the
  fresh solve, the re-solve, nsgs' kernel alone and the fixed cost, µs per solve.
- ``nsgs``: ``bench_nsgs.py --no-siconos`` (its campaign's ``results.csv``): per folder the total time of
  ``nsgs``, the problems solved and the sweeps; the fixed cost of one ``nsopt.solve`` (µs).
- ``newton``: ``bench_newton.py --no-siconos --profile`` (no profile): per method the total time over the
  fc3d corpus, solved and iterations.
- ``modeling``: ``bench_modeling_speed.py --quick`` without Siconos' side: the bouncing ball's µs per step (batched
  and one by one) and the spheres' steps per second (lattice, packed, dropped).
- ``pile``: ``nsopt_rigid.py pile1000 --projection on`` for ``--pile-steps`` steps from the scene's start
  (the cubes fall, the lowest layer lands after ~60 steps), each tree's ``Scene.run`` scheme (the new tree:
  look-ahead activation, issue 32), then on a tree that has it ``--activation siconos`` (Siconos' rule, the
  base's only one: the same scheme on both sides): CPU ms per step (all steps and the steps with
  contacts), Newton iterations and contacts per step with contacts, failed steps.
- ``newton-corpus`` (only when named): ``newton_before_after.py`` (nsn-ac, nsn-fb and prox on every fc3d
  problem above 24 unknowns, 30 s each): per method the total CPU time, solved and iterations.

For the campaigns the per-problem ratios new/base are summarised too (their median and the problems more
than 15 % slower in every round). Printed: per figure base, new (medians over the rounds), new/base, and
the load average over the run. ``--json OUT`` keeps every round's figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = ("resolve", "nsgs", "newton", "modeling", "pile")
OPTIONAL = ("newton-corpus",)          # run only when named in --benches

# The process each benchmark runs in: the tree's script, run as __main__ (``modeling``: Siconos' side off;
# ``pile``: a 10-cube warm-up run first, in the same process).
RUNNER = r'''
import os, runpy, sys
tree, kind, script, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, os.path.join(tree, "benchmarks"))
import nsopt
if not os.path.realpath(nsopt.__file__).startswith(os.path.realpath(tree) + os.sep):
    sys.exit(f"nsopt imported from {nsopt.__file__}, not from {tree}")
if kind == "modeling":
    import bench_modeling_siconos
    bench_modeling_siconos.have_siconos = lambda: False
if kind == "pile":
    import nsopt_rigid
    nsopt_rigid.main(["pile10", args[1] + "_warm", "--T", "0.6", "--projection", "on"])
    nsopt_rigid.main(args)
    if "--activation" in open(nsopt_rigid.__file__).read():        # the rule before look-ahead (issue 32)
        nsopt_rigid.main([*args[:1], args[1] + "_siconos", *args[2:], "--activation", "siconos"])
else:
    sys.argv = [script, *args]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
'''


def _argv(bench, tree, tmp, a):
    """(script, arguments) of one benchmark on one tree."""
    q = a.quick
    if bench == "resolve":
        return "bench_resolve.py", ["--no-siconos", "--repeat", "5" if q else "11"] + (
            ["--skip-big", "--n", "300", "--n-lcp", "2000"] if q else ["--n-big", "30"])
    if bench == "nsgs":
        return "bench_nsgs.py", ["--no-siconos", "--out", str(tmp)] + (["--folders", "fc3d"] if q else [])
    if bench == "newton":
        return "bench_newton.py", ["--no-siconos", "--profile"] + (["--methods", "nsn-ac", "--timeout", "20"] if q
                                                                   else ["--timeout", "30"])
    if bench == "modeling":      # its --quick settings in both (the full script is ~5 min a run under load)
        return "bench_modeling_speed.py", ["--quick"]
    if bench == "newton-corpus":
        return "newton_before_after.py", [str(tmp / "corpus.json")]
    if bench == "pile":
        steps = 30 if q else a.pile_steps
        return "nsopt_rigid.py", ["pile1000", str(tmp / "pile"), "--T", f"{steps * 5e-3:.6g}", "--projection", "on"]
    raise ValueError(bench)


def _campaign(folder):
    """{(kind, method): rows} of a campaign folder's results.csv."""
    out = {}
    with open(Path(folder) / "results.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            out.setdefault((r["kind"], r["method"]), []).append(r)
    return out


def _campaign_figures(folder, label):
    figs, per = {}, {}
    for (kind, method), rows in sorted(_campaign(folder).items()):
        t = [float(r["time"] or "nan") for r in rows]
        key = f"{label} {kind} {method}"
        figs[f"{key}: total time s"] = sum(x for x in t if not math.isnan(x))
        figs[f"{key}: solved"] = sum(r["status"] == "solved" for r in rows)
        figs[f"{key}: iterations"] = sum(float(r["nit"] or 0) for r in rows)
        per.update({f"{key} {Path(r['problem']).name}": x for r, x in zip(rows, t)})
    return figs, per


def _pile(path, label):
    """Figures of one nsopt_rigid.py run (its CSV)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    hit = [r for r in rows if int(r["osns_size"]) > 0]
    nan = float("nan")

    def mean(xs):
        return statistics.mean(xs) if xs else nan

    return {f"{label}: steps": len(rows), f"{label}: CPU ms per step": 1e3 * mean([float(r["step_cpu"]) for r in rows]),
            f"{label}: steps with contacts": len(hit),
            f"{label}: CPU ms per step with contacts": 1e3 * mean([float(r["step_cpu"]) for r in hit]),
            f"{label}: Newton iterations per step with contacts": mean([int(r["nit"]) for r in hit]),
            f"{label}: contacts per step with contacts": mean([int(r["osns_size"]) // 3 for r in hit]),
            f"{label}: failed steps": sum(int(r["failed"]) for r in rows)}


def _parse(bench, tree, tmp, stdout):
    """(figures {name: value}, per-problem times {name: seconds}) of one run."""
    res = Path(tree) / "benchmarks" / "results"
    if bench == "resolve":
        figs = {}
        with open(res / "bench_resolve.csv", newline="") as fh:
            for r in csv.DictReader(fh):
                for k in ("fresh_us", "resolve_us", "kernel_us", "fixed_us"):
                    if r.get(k):
                        figs[f"{Path(r['problem']).stem} {r['method']}: {k.replace('_us', '')} µs"] = float(r[k])
        return figs, {}
    if bench == "nsgs":
        figs, per = _campaign_figures(tmp / "bench_nsgs_campaign", "nsgs")
        with open(tmp / "bench_nsgs_fixed.csv", newline="") as fh:
            figs["nsgs fixed cost of a solve µs"] = float(next(csv.DictReader(fh))["solve_us"])
        return figs, per
    if bench == "newton":
        return _campaign_figures(res / "bench_newton_campaign", "newton")
    if bench == "modeling":
        figs = {}
        for m in re.finditer(r"^\s+(nsopt(?:, one by one)?[^:]*?)\s*:\s+([\d.]+) µs/step", stdout, re.MULTILINE):
            figs[f"ball {m.group(1).strip()}: µs/step"] = float(m.group(2))
        section = "lattice"
        for line in stdout.splitlines():
            if "packed lattice" in line and "baseline" not in line:
                section = "packed"
            elif "example's default" in line:
                section = "dropped"
            elif "baseline" in line:
                section = "one by one"
            m = re.search(r"(\d+) spheres: +([\d.]+) steps/s", line)
            if m:
                # steps/s turned into ms per step: larger is slower, as every other figure here
                figs[f"spheres {m.group(1)} {section}: ms/step"] = 1e3 / float(m.group(2))
        return figs, {}
    if bench == "newton-corpus":
        figs, per = {}, {}
        for key, (status, _, nit, t) in json.loads((tmp / "corpus.json").read_text()).items():
            name, method = key.split("|")
            k = f"corpus fc3d {method}"
            figs[f"{k}: total time s"] = figs.get(f"{k}: total time s", 0.0) + (t or 0.0)
            figs[f"{k}: solved"] = figs.get(f"{k}: solved", 0) + (status == "solved")
            figs[f"{k}: iterations"] = figs.get(f"{k}: iterations", 0) + (nit or 0)
            per[f"{k} {name}"] = t if t is not None else float("nan")
        return figs, per
    if bench == "pile":
        figs = _pile(tmp / "pile.csv", "pile1000")
        # Siconos' activation rule: the new tree's second run, the base's only rule (issue 32 came after)
        other = tmp / "pile_siconos.csv"
        figs.update(_pile(other if other.is_file() else tmp / "pile.csv", "pile1000, Siconos' activation"))
        return figs, {}
    raise ValueError(bench)


def run_one(bench, tree, a, log=print):
    """Run one benchmark on one tree in a fresh process; (figures, per-problem times, seconds, load)."""
    tree = str(Path(tree).resolve())
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        script, args = _argv(bench, tree, tmp, a)
        env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        load0, t0 = os.getloadavg()[0], time.perf_counter()
        r = subprocess.run([sys.executable, "-c", RUNNER, tree, bench, str(Path(tree) / "benchmarks" / script), *args],
                           env=env, capture_output=True, text=True, cwd=tree, check=False)
        wall, load1 = time.perf_counter() - t0, os.getloadavg()[0]
        if r.returncode:
            raise RuntimeError(f"{bench} on {tree} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
        figs, per = _parse(bench, tree, tmp, r.stdout)
    log(f"# {bench:8s} {tree}: {wall:6.1f} s wall, load {load0:.2f} -> {load1:.2f}", flush=True)
    return figs, per, wall, (load0, load1)


def in_turns(trees, repeat, run, start=0):
    """Run ``run(tag, tree)`` ``repeat`` rounds over ``trees`` ({tag: tree}), the order reversed every other
    round (base, new; new, base; ...; ``start``: the parity of the first round): {tag: [result per round]}."""
    out = {tag: [] for tag in trees}
    items = list(trees.items())
    for k in range(start, start + repeat):
        for tag, tree in (items if k % 2 == 0 else items[::-1]):
            out[tag].append(run(tag, tree))
    return out


def _fmt(x):
    if math.isnan(x):
        return "-"
    return f"{x:.0f}" if abs(x) >= 1000 or float(x).is_integer() else f"{x:.4g}"


def report(results, loads, log=print):
    """The table: per figure base, new (medians over the rounds) and new/base."""
    base, new = results["base"], results["new"]
    names = list(dict.fromkeys(k for f, _ in base + new for k in f))
    log(f"| {'figure':62s} | {'base':>10s} | {'new':>10s} | new/base | rounds new/base |")
    log(f"|{'-' * 64}|-----------:|-----------:|---------:|-----------------|")
    rows = []
    for k in names:
        b = [f[k] for f, _ in base if k in f]
        n = [f[k] for f, _ in new if k in f]
        mb = statistics.median(b) if b else float("nan")
        mn = statistics.median(n) if n else float("nan")
        ratio = mn / mb if mb and not math.isnan(mb) and not math.isnan(mn) else float("nan")
        each = " ".join(f"{y / x:.2f}" if x else "-" for x, y in zip(b, n))
        log(f"| {k[:62]:62s} | {_fmt(mb):>10s} | {_fmt(mn):>10s} | {ratio:8.3f} | {each:15s} |")
        rows.append({"figure": k, "base": mb, "new": mn, "ratio": ratio, "rounds": each})
    # per problem (campaigns): the median ratio, and the problems slower by more than 15 % in every round
    per = {}
    for (_, pb), (_, pn) in zip(base, new):
        for k, x in pb.items():
            y = pn.get(k)
            if y is not None and x > 1e-3 and not math.isnan(y):
                per.setdefault(k, []).append(y / x)
    if per:
        by = {}
        for k, rs in per.items():
            by.setdefault(" ".join(k.split()[:3]), []).append(statistics.median(rs))
        for g, rs in by.items():
            log(f"per problem ({g}, > 1 ms): median new/base {statistics.median(rs):.3f} over {len(rs)} problems")
        slow = {k: rs for k, rs in per.items() if min(rs) > 1.15}
        for k, rs in sorted(slow.items()):
            log(f"  slower in every round: {k}: {' '.join(f'{r:.2f}' for r in rs)}")
    lo = [x for pair in loads for x in pair]
    log(f"load average (1 min) over the run: {min(lo):.2f} .. {max(lo):.2f}, median {statistics.median(lo):.2f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the tree before (e.g. /tmp/base_tree)")
    ap.add_argument("--new", default=str(HERE.parent), help="the tree after (default: this one)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds (each runs every benchmark on both trees)")
    ap.add_argument("--quick", action="store_true", help="smaller settings of every benchmark (a smoke run)")
    ap.add_argument("--benches", nargs="+", default=list(BENCHES), choices=BENCHES + OPTIONAL)
    ap.add_argument("--pile-steps", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None, help="write every round's figures there")
    a = ap.parse_args(argv)
    trees = {"base": a.base, "new": a.new}
    print(f"# before/after: base {Path(a.base).resolve()}, new {Path(a.new).resolve()}, {a.repeat} rounds, "
          f"{'quick' if a.quick else 'full'} settings, started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    results, loads = {tag: [] for tag in trees}, []
    for k in range(a.repeat):            # a round: every benchmark on both trees, in turns
        figs = {tag: ({}, {}) for tag in trees}
        for i, b in enumerate(a.benches):
            done = in_turns(trees, 1, lambda tag, tree, b=b: run_one(b, tree, a), start=k + i)
            for tag, [(f, p, _, ld)] in done.items():
                figs[tag][0].update(f)
                figs[tag][1].update(p)
                loads.append(ld)
        for tag in trees:
            results[tag].append(figs[tag])
    print(f"\n# finished {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    rows = report(results, loads)
    if a.json:
        a.json.write_text(json.dumps({"results": results, "loads": loads, "table": rows}, indent=1))


if __name__ == "__main__":
    main()
