"""The small scene's fixed cost (issue 32 §6), before and after in one run: a ``Scene`` step of the 10- and 100-cube
piles of ``rigid_scenes.py`` on two source trees, in turns, each in its own process, and the Python calls and module
changes of one 3-cube Scene step (``issue31_counts.py``'s count).

    python benchmarks/bench_scene_fixed_cost.py --base /tmp/base_tree [--new .] [--sizes 10 100] [--T 1.0]
                                                [--repeat 2] [--no-count]

``--base`` is an nsopt tree (``git archive main | tar -x -C /tmp/base_tree``), ``--new`` this one. Per tree and
pile: a warm-up run of the same scene (numba's kernels loaded or compiled, coal's objects made), then ``Scene.run``
to ``--T`` (the cubes fall for ~0.3 s, land and settle), ``nsn-ac`` to 1e-6, ``keep_states=False``. Reported per
step, from :attr:`nsopt.mechanics.SceneStep.times`: the median over the run's steps of the wall seconds of the whole
step ("total"), of the detection ("detect": the collision detection, the contacts' update and their outputs), of
the solver alone ("solve") and of the rest (total - detect - solve: the assembly, the integration, the step's
figures and the record) — the median, because a shared machine preempts some steps for milliseconds —, and the
means over the run of the process's CPU time of a step ("cpu") and of its wall time ("wall"). The rounds
alternate the trees' order (base then new, then new then base), and each figure is the best over rounds. The trajectories are compared step by step: the largest
difference of the bodies' poses between the trees over the run (0.0: identical).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

RUN = r'''
import json, os, sys
import numpy as np
tree, n, T, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sys.path.insert(0, os.path.join(tree, "benchmarks"))
import nsopt
assert os.path.realpath(nsopt.__file__).startswith(os.path.realpath(tree)), nsopt.__file__
import rigid_scenes as rs
sc = rs.pile(n)
rs.nsopt_scene(sc).run(min(T, 0.5), sc["h"], method="nsn-ac", keep_states=False)      # warm-up
Q, tm = [], []
def hook(step):
    Q.append(step.q.copy())
    t = step.times
    tm.append((t["total"], t["detect"], t["solve"], t["cpu"]))
rs.nsopt_scene(sc).run(T, sc["h"], method="nsn-ac", keep_states=False, on_step=hook)
np.save(out, np.array(Q))
tm = np.array(tm)
med = np.median
print(json.dumps({"steps": len(tm), "total": med(tm[:, 0]), "detect": med(tm[:, 1]), "solve": med(tm[:, 2]),
                  "rest": med(tm[:, 0] - tm[:, 1] - tm[:, 2]), "cpu": tm[:, 3].mean(), "wall": tm[:, 0].mean()}))
'''


def run_tree(tree, n, T, out):
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", RUN, str(tree), str(n), str(T), out], capture_output=True, text=True,
                       env=env, cwd=tree, check=False)
    if r.returncode:
        raise RuntimeError(f"{tree}, {n} cubes:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the tree before (e.g. main exported by git archive)")
    ap.add_argument("--new", default=os.path.dirname(HERE), help="the tree after (default: this one)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--T", type=float, default=1.0, help="the run's duration [s] (h = 5 ms)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-count", action="store_true", help="skip the 3-cube step's call count")
    a = ap.parse_args(argv)
    trees = {"base": os.path.abspath(a.base), "new": os.path.abspath(a.new)}
    print(f"load before: {os.getloadavg()}")
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.sizes:
            for r in range(a.repeat):
                for tag in (("base", "new") if r % 2 == 0 else ("new", "base")):
                    res = run_tree(trees[tag], n, a.T, os.path.join(tmp, f"{tag}{n}.npy"))
                    b = best.setdefault((tag, n), res)
                    for k in ("total", "detect", "solve", "rest", "cpu", "wall"):
                        b[k] = min(b[k], res[k])
            qb, qn = np.load(os.path.join(tmp, f"base{n}.npy")), np.load(os.path.join(tmp, f"new{n}.npy"))
            diff = float(np.abs(qb - qn).max()) if qb.shape == qn.shape else float("nan")
            best[("diff", n)] = diff
    print(f"load after: {os.getloadavg()}")
    print(f"\n{a.T:g} s of each pile (h = 5 ms), ms per step, best of {a.repeat} rounds (medians over the steps of "
          f"wall times; cpu, wall: means of the process time and of the wall time)\n")
    cols = ("total", "detect", "solve", "rest", "cpu", "wall")
    print("| cubes | tree | " + " | ".join(cols) + " | largest pose difference base/new |")
    print("|---" * (len(cols) + 3) + "|")
    for n in a.sizes:
        for tag in ("base", "new"):
            b = best[(tag, n)]
            print(f"| {n} | {tag} | " + " | ".join(f"{1e3 * b[k]:.3f}" for k in cols) + f" | {best[('diff', n)]:.3g} |")
        print(f"| {n} | new/base | " + " | ".join(f"{best[('new', n)][k] / best[('base', n)][k]:.2f}x" for k in cols)
              + " | |")
    if not a.no_count:
        from issue31_counts import scene_step
        print("\n| one 3-cube Scene step | base | new |\n|---|---|---|")
        s = {tag: scene_step(t) for tag, t in trees.items()}
        for k in ("calls per step", "module changes per step"):
            print(f"| {k} | {s['base'].get(k, float('nan')):.0f} | {s['new'].get(k, float('nan')):.0f} |")
        print(f"| modules | {len(s['base'].get('modules', ()))} | {len(s['new'].get('modules', ()))} |")


if __name__ == "__main__":
    main()
