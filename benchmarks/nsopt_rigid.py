"""nsopt's side of the rigid-body comparison (issue 23 §4): run a scene of ``rigid_scenes.py`` with
``nsopt.mechanics.Scene.run`` (coal contact detection, NewtonEulerDS bodies, Moreau–Jean, FrictionContact(3) or,
with joints, GenericMechanical) and record per step what ``siconos_rigid.py`` records for Siconos, in the same
files and columns, so that ``bench_rigid_siconos.py`` summarises both sides with one function.

    python benchmarks/nsopt_rigid.py SCENE OUT_PREFIX [--h 5e-3] [--theta 0.50001] [--method nsn-ac]
        [--tol 1e-6] [--max-iter N] [--T T] [--time-budget SECONDS] [--record RUN.h5] [--write-problems DIR]
        [--projection on|off] [--activation lookahead|siconos]

Writes OUT_PREFIX.csv (one row per step: t, kinetic energy, contacts detected, contacts in the one-step problem
(``osns_size``: rows), solver iterations and error (nsopt's measure, Siconos' definition), failure (error > tol),
the deepest penetration over the contacts after the step, the highest body, the centre of mass, wall and CPU time
of the whole step (the process's CPU time from the detection to the end of the recording), peak RSS) and OUT_PREFIX.npz (final poses, the
per-step arrays, the run's parameters, and the split of each step's wall time: detection, step, solve).
``--record`` also writes the scene's HDF5 record (viewer page and stills from it); ``--write-problems`` each
step's FCLIB problem (a corpus for ``nsopt compare``). ``--projection`` and ``--activation``: Moreau–Jean's
position projection and activation rule (``Scene.run(projection=, activation=)``); the defaults are nsopt's
(``Scene.run``'s: the look-ahead rule and the projection); ``--projection off --activation siconos`` is Siconos'
MoreauJeanOSI, the scheme the side-by-side numbers of benchmarks/README.md before issue 32 were measured with.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one BLAS thread (2 shared cores; as Siconos' side)
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes  # noqa: E402


def main(argv=None):
    ap = rigid_scenes.arguments(__doc__.splitlines()[0])
    ap.add_argument("--method", default=None, help="nsopt method (default: nsn-ac, nsgs for GenericMechanical)")
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--T", type=float, default=None)
    ap.add_argument("--time-budget", type=float, default=None)
    ap.add_argument("--record", default=None)
    ap.add_argument("--write-problems", default=None)
    ap.add_argument("--projection", choices=("off", "on"), default="on")
    ap.add_argument("--activation", choices=("lookahead", "siconos"), default="lookahead")
    args = ap.parse_args(argv)

    sc = rigid_scenes.scene(args.scene)
    h, T = args.h or sc["h"], args.T or sc["T"]
    scene = rigid_scenes.nsopt_scene(sc)
    method = args.method or ("nsgs" if sc["joints"] else "nsn-ac")
    opts = {} if args.max_iter is None else {"max_iter": args.max_iter}
    names = [b[0] for b in sc["bodies"]]
    rows = []
    state = {"start": time.perf_counter(), "stopped": False}

    def hook(step):
        tm = step.times
        rows.append(dict(step=step.k, t=step.t, kinetic_energy=step.kinetic_energy,
                         contacts_detected=step.contacts, osns_size=3 * step.active, nit=step.nit,
                         residual=0.0 if step.status is None else float(step.error),
                         failed=int(step.status is not None and not step.error <= args.tol),
                         penetration=step.penetration, top_z=step.top,
                         com_x=step.com[0], com_y=step.com[1], com_z=step.com[2],
                         step_time=tm["total"], step_cpu=tm["cpu"],
                         detect_time=tm["detect"], integrate_time=tm["step"] - tm["solve"],
                         solve_time=tm["solve"],
                         peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
        if args.time_budget is not None and time.perf_counter() - state["start"] > args.time_budget:
            state["stopped"] = True
            raise StopIteration

    t0 = time.perf_counter()
    run = scene.run(T, h, theta=args.theta, method=method, tol=args.tol, keep_states=False, record=args.record,
                    overwrite=True, write_problems=args.write_problems, on_step=hook,
                    projection=None if args.projection == "on" else False, activation=args.activation, **opts)
    wall = time.perf_counter() - t0
    final = run.model.poses()
    keys = list(rows[0]) if rows else []
    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    meta = dict(scene=args.scene, bodies=len(names), h=h, theta=args.theta, solver=method, tol=args.tol,
                projection=args.projection, activation=args.activation,
                max_iter=args.max_iter, T=T, steps=len(rows), completed=not state["stopped"], wall_time=wall,
                osns=run.sim.osns_kind, collision="coal (nsopt.mechanics)", side="nsopt")
    np.savez(args.out + ".npz", final_q=final, names=np.array(names), **{k: np.array([r[k] for r in rows]) for k in keys},
             meta=json.dumps(meta))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
