"""Siconos-kernel side of the modeling benchmarks, run by /usr/bin/python3 (siconos.kernel 4.4).

Usage: /usr/bin/python3 _siconos_modeling.py {ball|ball_speed|diode} OUT.npz [T]
       /usr/bin/python3 _siconos_modeling.py spheres OUT.npz IN.npz
Writes every step's state, output and multiplier (ball, diode), or the figures of the spheres run,
and the time of the stepping loop.
Parameters: siconos-tutorials 4.4.0 examples/mechanics/BouncingBall/BouncingBallTS.py and
examples/electronics/DiodeBridge/DiodeBridge.py; the spheres' lattice, walls and parameters come
from the nsopt side in IN.npz (benchmarks/bench_modeling_speed.py).
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn


def _ball_simulation(T):
    t0, h, r, g, m, e, theta = 0.0, 0.005, 0.1, 9.81, 1.0, 0.9, 0.5
    mass = np.eye(3)
    mass[2, 2] = 2.0 / 5 * r * r
    ds = sk.LagrangianLinearTIDS([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], mass)
    ds.setFExtPtr([-m * g, 0.0, 0.0])
    inter = sk.Interaction(sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR([[1.0, 0.0, 0.0]]))
    nsds = sk.NonSmoothDynamicalSystem(t0, T)
    nsds.insertDynamicalSystem(ds)
    nsds.link(inter, ds)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), sk.MoreauJeanOSI(theta), sk.LCP())
    return s, ds, inter, int(round((T - t0) / h))


def ball(T=10.0):
    s, ds, inter, N = _ball_simulation(T)
    out = {k: np.zeros((N + 1, 3)) for k in ("q", "v", "p")}
    out.update({k: np.zeros((N + 1, 1)) for k in ("y0", "y1", "lam")})
    q, v, p = ds.q(), ds.velocity(), ds.p(1)
    k = 0

    def rec(k):
        out["q"][k], out["v"][k], out["p"][k] = q, v, p
        out["y0"][k], out["y1"][k], out["lam"][k] = inter.y(0), inter.y(1), inter.lambda_(1)
    rec(0)
    tic = time.process_time()
    while s.hasNextEvent():
        s.computeOneStep()
        k += 1
        rec(k)
        s.nextStep()
    out["time"] = np.array(time.process_time() - tic)
    out["steps"] = np.array(k)
    return out


def ball_speed(T=10.0):
    """The same simulation, nothing recorded: the kernel's CPU time per step (``thread_time``)."""
    s, ds, inter, N = _ball_simulation(T)
    s.initialize()          # as nsopt's TimeStepping(...) does at construction: not timed
    k = 0
    tic = time.thread_time()
    while s.hasNextEvent():
        s.computeOneStep()
        s.nextStep()
        k += 1
    return {"time": np.array(time.thread_time() - tic), "steps": np.array(k)}


def diode(T=5.0e-3):
    t0, h = 0.0, 1.0e-6
    L, C, R, V0 = 1e-2, 1e-6, 1e3, 10.0
    A = np.zeros((2, 2))
    A.flat[...] = [0.0, -1.0 / C, 1.0 / L, 0.0]
    ds = sk.FirstOrderLinearDS([V0, 0.0], A)
    Cm = [[0.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]
    D = [[1.0 / R, 1.0 / R, -1.0, 0.0], [1.0 / R, 1.0 / R, 0.0, -1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    B = [[0.0, 0.0, -1.0 / C, 1.0 / C], [0.0, 0.0, 0.0, 0.0]]
    rel = sk.FirstOrderLinearTIR(Cm, B)
    rel.setDPtr(D)
    inter = sk.Interaction(sk.ComplementarityConditionNSL(4), rel)
    nsds = sk.NonSmoothDynamicalSystem(t0, T)
    nsds.insertDynamicalSystem(ds)
    nsds.link(inter, ds)
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), sk.EulerMoreauOSI(0.5), sk.LCP())
    N = int(round((T - t0) / h))
    out = {"x": np.zeros((N + 1, 2)), "y": np.zeros((N + 1, 4)), "lam": np.zeros((N + 1, 4))}
    x, y, lam = ds.x(), inter.y(0), inter.lambda_(0)
    out["x"][0], out["y"][0], out["lam"][0] = x, y, lam
    k = 0
    tic = time.process_time()
    while s.hasNextEvent():
        s.computeOneStep()
        k += 1
        out["x"][k], out["y"][k], out["lam"][k] = x, y, lam
        s.nextStep()
    out["time"] = np.array(time.process_time() - tic)
    out["steps"] = np.array(k)
    return out


# The sphere-sphere contact as a compiled Siconos plug-in (LagrangianScleronomousR("lib:h", "lib:G0")):
# the formulas of examples/modeling_spheres_box.py (_pair_h, _pair_G0), q = (x1, r1, x2, r2), G0 3 x 12
# stored column-major as Siconos' matrices.
_PAIR_PLUGIN = r"""
#include <math.h>
static const double R = %(R).17g;
void pair_h(unsigned int nq, double* q, unsigned int ny, double* y, unsigned int nz, double* z)
{
  double d0 = q[0] - q[6], d1 = q[1] - q[7], d2 = q[2] - q[8];
  y[0] = sqrt(d0 * d0 + d1 * d1 + d2 * d2) - 2 * R;
  y[1] = 0.0;
  y[2] = 0.0;
}
void pair_G0(unsigned int nq, double* q, unsigned int ny, double* G, unsigned int nz, double* z)
{
  double d0 = q[0] - q[6], d1 = q[1] - q[7], d2 = q[2] - q[8];
  double s = 1.0 / sqrt(d0 * d0 + d1 * d1 + d2 * d2);
  double n[3] = {d0 * s, d1 * s, d2 * s}, a[3], b[3];
  if (fabs(n[0]) < 0.9) { a[0] = 0.0; a[1] = n[2]; a[2] = -n[1]; }
  else { a[0] = -n[2]; a[1] = 0.0; a[2] = n[0]; }
  s = 1.0 / sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  a[0] *= s; a[1] *= s; a[2] *= s;
  b[0] = n[1] * a[2] - n[2] * a[1]; b[1] = n[2] * a[0] - n[0] * a[2]; b[2] = n[0] * a[1] - n[1] * a[0];
  const double* rows[3] = {n, a, b};
  for (int i = 0; i < 36; i++) G[i] = 0.0;
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 3; j++) { G[r + 3 * j] = rows[r][j]; G[r + 3 * (6 + j)] = -rows[r][j]; }
  for (int j = 0; j < 3; j++) {
    G[1 + 3 * (3 + j)] = -R * b[j]; G[1 + 3 * (9 + j)] = -R * b[j];
    G[2 + 3 * (3 + j)] = R * a[j];  G[2 + 3 * (9 + j)] = R * a[j];
  }
}
"""


def _pair_plugin(R, folder):
    """Compile the pair plug-in for radius R in ``folder``; its Siconos name ("path/lib")."""
    src = os.path.join(folder, "spheres_plugin.c")
    with open(src, "w") as f:
        f.write(_PAIR_PLUGIN % {"R": R})
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", os.path.join(folder, "spheres_plugin.so"), src, "-lm"],
                   check=True)
    return os.path.join(folder, "spheres_plugin")


def spheres(inp):
    """Spheres in a box (examples/modeling_spheres_box.py, the lattice and walls given in ``inp``):
    LagrangianLinearTIDS spheres, LagrangianLinearTIR walls, the compiled pair plug-in, Newton impact
    friction laws, MoreauJeanOSI(θ), FrictionContact(3, NSN_AC) with nsopt's tol and max_iter; the
    walls and pairs within the margin linked (``Simulation.link``/``unlink``) every ``every`` steps,
    detection timed apart. Two runs: ``computeOneStep`` as a user writes it (the steps/s), then the
    same steps driven from Python one phase at a time, one Newton pass (``SICONOS_TS_LINEAR``), to
    time ``computeOneStepNSProblem`` apart (the OSNS problem's assembly from the interaction blocks,
    and its solve: Siconos assembles W inside it)."""
    P = {k: inp[k] for k in inp.files}
    R, h, steps, every = float(P["R"]), float(P["h"]), int(P["steps"]), int(P["every"])
    # Siconos 4.4 prints "BLOCK COPY !!!!" each time a two-system relation's plug-in is called: to
    # /dev/null (the cheapest sink), not to the caller's pipe
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        with tempfile.TemporaryDirectory() as d:
            plugin = _pair_plugin(R, d)
            out = {}
            for split in (False, True):
                r = _spheres_run(P, plugin, R, h, steps, every, split)
                for k, v in r.items():
                    out[("split_" if split else "") + k] = v
    finally:
        os.dup2(saved, 1)
        os.close(null)
    return out


def _spheres_run(P, plugin, R, h, steps, every, split):
    q0, walls_H, walls_b, walls_n, walls_d = P["q0"], P["walls_H"], P["walls_b"], P["walls_n"], P["walls_d"]
    mass, inertia, g, en, mu, margin = (float(P[k]) for k in ("mass", "inertia", "g", "en", "mu", "margin"))
    n = q0.shape[0]
    T = steps * h
    nsds = sk.NonSmoothDynamicalSystem(0.0, T)
    dss = []
    for i in range(n):
        ds = sk.LagrangianLinearTIDS(q0[i].copy(), np.zeros(6), np.diag([mass] * 3 + [inertia] * 3))
        ds.setFExtPtr(np.array([0.0, 0.0, -mass * g, 0.0, 0.0, 0.0]))
        nsds.insertDynamicalSystem(ds)
        dss.append(ds)
    links = {}
    sim_box = [None]

    def detect():
        X = np.array([ds.q()[:3] for ds in dss])
        want = set()
        for w in range(walls_n.shape[0]):
            for i in np.flatnonzero(X @ walls_n[w] - walls_d[w] - R < margin):
                want.add(("w", int(i), w))
        D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
        for i, j in zip(*np.nonzero(np.triu(D <= 2 * R + margin, 1))):
            want.add(("p", int(i), int(j)))
        for key in [k for k in links if k not in want]:
            inter = links.pop(key)
            if sim_box[0] is None:
                nsds.removeInteraction(inter)
            else:
                sim_box[0].unlink(inter)
        for key in sorted(want - set(links)):
            law = sk.NewtonImpactFrictionNSL(en, 0.0, mu, 3)
            if key[0] == "w":
                rel = sk.LagrangianLinearTIR(walls_H[key[2]].copy(), walls_b[key[2]].copy())
                inter, pair = sk.Interaction(law, rel), (dss[key[1]],)
            else:
                rel = sk.LagrangianScleronomousR(plugin + ":pair_h", plugin + ":pair_G0")
                inter, pair = sk.Interaction(law, rel), (dss[key[1]], dss[key[2]])
            if sim_box[0] is None:
                nsds.link(inter, *pair)
            else:
                sim_box[0].link(inter, *pair)
            links[key] = inter

    detect()
    osnspb = sk.FrictionContact(3, sn.SICONOS_FRICTION_3D_NSN_AC)
    so = osnspb.numericsSolverOptions()
    so.dparam[sn.SICONOS_DPARAM_TOL] = float(P["tol"])
    so.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(P["max_iter"])
    s = sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, h), sk.MoreauJeanOSI(float(P["theta"])), osnspb)
    if split:
        s.setNewtonOptions(sk.SICONOS_TS_LINEAR)
    s.initialize()                      # as nsopt's TimeStepping(...) does at construction: not timed
    sim_box[0] = s
    clock = time.thread_time          # as nsopt's side: CPU time of the thread
    total = detect_t = osns_t = 0.0
    contacts, iters, newton, fails = [], [], [], 0
    k = 0
    while s.hasNextEvent() and k < steps:
        if k % every == 0 and k > 0:
            c = clock()
            detect()
            detect_t += clock() - c
        c = clock()
        if split:
            s.initializeNewtonLoop()
            s.prepareNewtonIteration()
            s.computeFreeState()
            c1 = clock()
            s.computeOneStepNSProblem(sk.SICONOS_OSNSP_TS_VELOCITY)   # the assembly of W, q and the solve
            osns_t += clock() - c1
            s.update()
            s.saveYandLambdaInOldVariables()
        else:
            s.computeOneStep()
        total += clock() - c
        m = osnspb.getSizeOutput() // 3
        contacts.append(m)
        if m:
            iters.append(so.iparam[sn.SICONOS_IPARAM_ITER_DONE])
            fails += so.dparam[sn.SICONOS_DPARAM_RESIDU] > float(P["tol"])
        newton.append(s.getNewtonNbIterations())
        c = clock()
        s.nextStep()
        total += clock() - c
        k += 1
    return {"time": np.array(total), "steps": np.array(k), "osns_time": np.array(osns_t),
            "detect_time": np.array(detect_t), "contacts": np.array(contacts), "iterations": np.array(iters),
            "newton": np.array(newton), "fails": np.array(fails), "q": np.array([ds.q() for ds in dss]),
            "v": np.array([ds.velocity() for ds in dss])}


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    if what == "spheres":
        with np.load(sys.argv[3]) as f:
            res = spheres(f)
    else:
        args = [float(a) for a in sys.argv[3:]]
        res = {"ball": ball, "ball_speed": ball_speed, "diode": diode}[what](*args)
    np.savez(path, **res)
