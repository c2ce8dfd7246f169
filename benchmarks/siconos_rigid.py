"""Siconos' side of the rigid-body comparison (issue 23 §4): build a scene of ``rigid_scenes.py`` with
``siconos.io.mechanics_run.MechanicsHdf5Runner`` (Bullet contact detection, NewtonEulerDS bodies,
MoreauJeanOSI, FrictionContact(3) or, with joints, GenericMechanical), run it and record per step what
compares across collision libraries.

Run by /usr/bin/python3 (Debian's python3-siconos 4.4):

    /usr/bin/python3 benchmarks/siconos_rigid.py SCENE OUT_PREFIX [--h 5e-3] [--theta 0.50001]
        [--solver NSGS] [--tol 1e-6] [--max-iter 1000] [--T T] [--time-budget SECONDS]

SCENE is a key of rigid_scenes.SCENES (cube, pile10, pile100, pile1000, spheres, chain) or pileN.
Writes OUT_PREFIX.csv (one row per step: t, kinetic energy, contacts detected, contacts in the one-step
problem, solver iterations and residual, failure (residual > tol), the deepest penetration -min(y0)
over the contacts, the highest body, the centre of mass, wall and CPU time of the step (the process's
CPU time, one BLAS thread: the measure that a machine shared with other jobs does not inflate), peak RSS) and
OUT_PREFIX.npz (final poses, the per-step arrays, the run's parameters). ``--time-budget`` stops the
run after that many seconds of stepping (the rows written so far stay; ``completed`` says so).
"""

from __future__ import annotations

import csv
import json
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one BLAS thread (2 shared cores; as nsopt's side)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes  # noqa: E402


class _Budget(Exception):
    """The time budget is spent: leave the run loop after the step just recorded."""


def main(argv=None):
    ap = rigid_scenes.arguments(__doc__.splitlines()[0])
    ap.add_argument("--solver", default="NSGS", help="NSGS (fc3d) or a sn.SICONOS_FRICTION_3D_* suffix")
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--T", type=float, default=None)
    ap.add_argument("--time-budget", type=float, default=None)
    args = ap.parse_args(argv)

    import siconos.kernel as sk
    import siconos.numerics as sn
    from siconos.io.mechanics_run import MechanicsHdf5Runner
    from siconos.mechanics.collision.tools import Contactor

    sc = rigid_scenes.scene(args.scene)
    h = args.h or sc["h"]
    T = args.T or sc["T"]
    joints = sc["joints"]
    tmp = tempfile.mkdtemp(prefix="siconos_rigid_")
    path = os.path.join(tmp, "scene.hdf5")
    masses = {b[0]: (b[2], np.asarray(b[3], dtype=float)) for b in sc["bodies"]}

    with MechanicsHdf5Runner(mode="w", io_filename=path, verbose=False) as io:
        for name, (kind, params) in sc["shapes"].items():
            io.add_primitive_shape(name, kind, list(params))
        io.add_Newton_impact_friction_nsl("contact", mu=sc["mu"], e=sc["e"])
        for name, shape, mass, inertia, pose, twist in sc["bodies"]:
            io.add_object(name, [Contactor(shape)], translation=pose[:3], orientation=pose[3:], velocity=twist,
                          mass=mass, inertia=inertia)
        for name, shape, pose in sc["statics"]:
            io.add_object(name, [Contactor(shape)], translation=pose[:3], orientation=pose[3:])
        for name, kind, b1, b2, points, axes in joints:
            io.add_joint(name, b1, b2, points=points, axes=axes, joint_class=kind, absolute=True)

    if joints:
        so = sk.solver_options_create(sn.SICONOS_GENERIC_MECHANICAL_NSGS)
    else:
        so = sk.solver_options_create(getattr(sn, "SICONOS_FRICTION_3D_" + args.solver))
    so.iparam[sn.SICONOS_IPARAM_MAX_ITER] = args.max_iter
    so.dparam[sn.SICONOS_DPARAM_TOL] = args.tol

    rows = []
    state = {"t0": None, "start": time.perf_counter(), "stopped": False}
    bodies = [b[0] for b in sc["bodies"]]

    def start_hook(io):
        state["t0"] = time.perf_counter()
        state["c0"] = time.process_time()

    def end_hook(io):
        dt = time.perf_counter() - state["t0"]
        dc = time.process_time() - state["c0"]
        sim = io._simulation
        nsds = io._nsds
        topo = nsds.topology()
        E, com, top = 0.0, np.zeros(3), -np.inf
        mtot = 0.0
        for name in bodies:
            ds = topo.getDynamicalSystem(name)
            q, v = np.asarray(ds.q()), np.asarray(ds.velocity())
            m, I = masses[name]
            E += 0.5 * m * v[:3] @ v[:3] + 0.5 * v[3:] @ (I * v[3:])
            com += m * q[:3]
            mtot += m
            top = max(top, q[2])
        detected, pen = 0, 0.0
        for inter in topo.indexSet0().interactions():
            if inter.nonSmoothLaw().size() == 3:          # contacts (joints have 3, 5 or 6 equality rows:
                if joints and not isinstance(sk.cast_NewtonImpactFrictionNSL(inter.nonSmoothLaw()),
                                             sk.NewtonImpactFrictionNSL):
                    continue
                detected += 1
                pen = max(pen, -inter.y(0)[0])
        osnspb = sim.oneStepNSProblem(0)
        size = osnspb.getSizeOutput()
        opts = osnspb.numericsSolverOptions()
        nit = int(opts.iparam[sn.SICONOS_IPARAM_ITER_DONE]) if size else 0
        res = float(opts.dparam[sn.SICONOS_DPARAM_RESIDU]) if size else 0.0
        rows.append(dict(step=len(rows) + 1, t=sim.startingTime(), kinetic_energy=E, contacts_detected=detected,
                         osns_size=size, nit=nit, residual=res, failed=int(size > 0 and res > args.tol),
                         penetration=pen, top_z=top, com_x=com[0] / mtot, com_y=com[1] / mtot, com_z=com[2] / mtot,
                         step_time=dt, step_cpu=dc, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
        if args.time_budget is not None and time.perf_counter() - state["start"] > args.time_budget:
            state["stopped"] = True
            raise _Budget

    t_start = time.perf_counter()
    with MechanicsHdf5Runner(mode="r+", io_filename=path, verbose=False) as io:
        try:
            io.run(t0=0.0, T=T, h=h, theta=args.theta, Newton_max_iter=1, solver_options=so,
                   output_frequency=10 ** 9, verbose=False, verbose_progress=False,
                   start_run_iteration_hook=start_hook, end_run_iteration_hook=end_hook)
        except _Budget:
            pass
        topo = io._nsds.topology()
        final = np.array([np.asarray(topo.getDynamicalSystem(n).q()) for n in bodies])
    wall = time.perf_counter() - t_start
    keys = list(rows[0]) if rows else []
    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    meta = dict(scene=args.scene, bodies=len(bodies), h=h, theta=args.theta, solver=args.solver, tol=args.tol,
                max_iter=args.max_iter, T=T, steps=len(rows), completed=not state["stopped"], wall_time=wall,
                osns="GenericMechanical" if joints else "FrictionContact(3)", collision="Bullet (siconos 4.4)")
    np.savez(args.out + ".npz", final_q=final, names=np.array(bodies),
             **{k: np.array([r[k] for r in rows]) for k in keys}, meta=json.dumps(meta))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
