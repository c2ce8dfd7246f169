"""Rigid contact side by side with the simulators users pick instead (issue 32 §5): nsopt, MuJoCo (its default soft
contacts, pyramidal and elliptic friction cones) and PyBullet, in one run on one machine, one thread each, on the
scenes of ``rigid_scenes.py``: the fast cube drop (a cube of side 0.2 m released at 1.086 m), a cube resting on a
25° and on a 28° slope (μ = 0.5: it must stick at 25° and slide at g(sin α − μ cos α) at 28°), and piles of 10,
100 and 1000 cubes dropped into an open box (m = 1 kg, μ = 0.5, e = 0, h = 5 ms).

    python benchmarks/bench_rigid_peers.py [--sizes 10 100 1000] [--T 3] [--engines nsopt mujoco-pyramidal ...]
        [--out benchmarks/results/peers] [--plot docs/img/rigid_peers.png] [--tol 1e-6]

Per engine and scene: CPU ms per step (the engine's step alone: nsopt's contact detection and step, MuJoCo's
``mj_step``, PyBullet's ``stepSimulation``; mean over the run after a warm-up run), the deepest penetration over the
run (during the impacts) and over its last 0.25 s (at rest), the kinetic energy at 2 and 3 s, on the slopes the
distance slipped down in 2 s (creep at 25°) and the acceleration fitted over 2 s (28°). Prints the machine's load
before and after, a table, and the ratios of nsopt's time per step to the peers' measured in this run; writes
OUT/peers.json and two figures: PLOT (time per step against bodies for every engine, the slip on the 25° slope, the
penetration at impact and at rest) and PLOT's name with ``_ke`` (the piles' kinetic energy against time).

Friction: nsopt and MuJoCo take μ = 0.5 on every geometry (MuJoCo uses the larger of a pair's); PyBullet multiplies
the two bodies' lateral frictions, so each gets √0.5. Gravity 9.81 everywhere. nsopt runs ``Scene.run``'s defaults
(look-ahead activation, projection; nsn-ac to ``--tol``, 1e-6) and 1e-10 on the slopes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_k, "1")                  # one thread for every engine
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes as rs  # noqa: E402

ENGINES = ("nsopt", "mujoco-pyramidal", "mujoco-elliptic", "pybullet")
G = rs.GRAVITY


class Trace:
    """Per step of a run: time, kinetic energy, deepest penetration, the first body's position, CPU seconds."""

    def __init__(self):
        self.t, self.ke, self.pen, self.x, self.cpu = [], [], [], [], []
        self.parts = []           # nsopt: (Newton iterations, detection, step, solve wall seconds, contacts, active)
        self.compile = 0.0        # nsopt: seconds of numba's kernel loading/compiling during the run (not in cpu)

    def add(self, t, ke, pen, x, cpu):
        self.t.append(t), self.ke.append(ke), self.pen.append(pen), self.x.append(np.array(x, dtype=float)), \
            self.cpu.append(cpu)

    def arrays(self):
        return (np.array(self.t), np.array(self.ke), np.array(self.pen), np.array(self.x).reshape(-1, 3),
                np.array(self.cpu))


def _masses(sc):
    m = np.array([b[2] for b in sc["bodies"]])
    inertia = np.array([b[3] for b in sc["bodies"]], dtype=float)
    return m, inertia


# ============================================================================ nsopt
def run_nsopt(sc, T, tol):
    """nsopt's run; a step's CPU time is net of numba's loading or compiling of kernels during it (the warm-up
    compiles what a 10-cube pile needs; a larger pile's first steps may still load other kernels), which is
    kept apart in ``tr.compile``."""
    from nsopt._jit import compile_seconds

    scene = rs.nsopt_scene(sc)
    tr = Trace()
    clock = [compile_seconds()]

    def hook(step):
        tm = step.times
        now = compile_seconds()
        tr.compile += now - clock[0]
        cpu, clock[0] = max(0.0, tm["cpu"] - (now - clock[0])), now
        tr.add(step.t, step.kinetic_energy, step.penetration, step.q[0, :3], cpu)
        tr.parts.append((step.nit, tm["detect"], tm["step"], tm["solve"], step.contacts, step.active))

    scene.run(T, sc["h"], method="nsn-ac", tol=tol, keep_states=False, on_step=hook)
    return tr


# ============================================================================ MuJoCo
def _mjcf(sc, cone):
    def box(name, shape, pose, body=False, mass=None, inertia=None):
        kind, params = sc["shapes"][shape]
        assert kind == "Box", kind
        half = " ".join(f"{0.5 * p:.12g}" for p in params)
        pos = " ".join(f"{p:.12g}" for p in pose[:3])
        quat = " ".join(f"{p:.12g}" for p in pose[3:])
        geom = f'<geom name="{name}" type="box" size="{half}" friction="{sc["mu"]} 0.005 0.0001"/>'
        if not body:
            return f'<geom name="{name}" type="box" size="{half}" pos="{pos}" quat="{quat}" friction="{sc["mu"]} 0.005 0.0001"/>'
        ine = " ".join(f"{p:.12g}" for p in inertia)
        return (f'<body name="{name}" pos="{pos}" quat="{quat}"><freejoint/>{geom}'
                f'<inertial pos="0 0 0" mass="{mass:.12g}" diaginertia="{ine}"/></body>')

    parts = [box(n, s, p) for n, s, p in sc["statics"]]
    parts += [box(n, s, p, True, m, inertia) for n, s, m, inertia, p, _ in sc["bodies"]]
    return (f'<mujoco><option timestep="{sc["h"]}" gravity="0 0 {-G}" cone="{cone}"><flag energy="enable"/></option>'
            f'<size memory="200M"/><worldbody>{"".join(parts)}</worldbody></mujoco>')


def run_mujoco(sc, T, cone):
    import mujoco

    m = mujoco.MjModel.from_xml_string(_mjcf(sc, cone))
    d = mujoco.MjData(m)
    for j, b in enumerate(sc["bodies"]):
        d.qvel[6 * j:6 * j + 6] = b[5]
    forces = sc.get("forces", {})
    bid = {b[0]: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b[0]) for b in sc["bodies"]}
    for name, f in forces.items():
        d.xfrc_applied[bid[name], :3] = f
    first = bid[sc["bodies"][0][0]]
    tr = Trace()
    n = int(round(T / sc["h"]))
    for _ in range(n):
        c0 = time.process_time()
        mujoco.mj_step(m, d)
        c1 = time.process_time()
        pen = max(0.0, -float(np.min(d.contact.dist[:d.ncon]))) if d.ncon else 0.0
        tr.add(d.time, float(d.energy[1]), pen, d.xpos[first], c1 - c0)
    return tr


# ============================================================================ PyBullet
def run_pybullet(sc, T):
    import pybullet as p

    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -G, physicsClientId=cid)
        p.setTimeStep(sc["h"], physicsClientId=cid)
        fr = math.sqrt(sc["mu"])                  # the pair's friction is the product of the two

        def shape(name):
            kind, params = sc["shapes"][name]
            assert kind == "Box", kind
            return p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.5 * x for x in params], physicsClientId=cid)

        def xyzw(q):
            return [q[1], q[2], q[3], q[0]]

        for _, s, pose in sc["statics"]:
            u = p.createMultiBody(0, shape(s), basePosition=pose[:3], baseOrientation=xyzw(pose[3:]),
                                  physicsClientId=cid)
            p.changeDynamics(u, -1, lateralFriction=fr, restitution=0.0, physicsClientId=cid)
        ids = []
        for _, s, mass, inertia, pose, twist in sc["bodies"]:
            u = p.createMultiBody(mass, shape(s), basePosition=pose[:3], baseOrientation=xyzw(pose[3:]),
                                  physicsClientId=cid)
            p.changeDynamics(u, -1, lateralFriction=fr, restitution=0.0, localInertiaDiagonal=inertia,
                             physicsClientId=cid)
            ids.append(u)
        forces = {ids[k]: sc["forces"][b[0]] for k, b in enumerate(sc["bodies"]) if b[0] in sc.get("forces", {})}
        masses, inertia = _masses(sc)
        tr = Trace()
        n = int(round(T / sc["h"]))
        for k in range(n):
            for u, f in forces.items():
                pos = p.getBasePositionAndOrientation(u, physicsClientId=cid)[0]
                p.applyExternalForce(u, -1, f, pos, p.WORLD_FRAME, physicsClientId=cid)
            c0 = time.process_time()
            p.stepSimulation(physicsClientId=cid)
            c1 = time.process_time()
            ke = 0.0
            for j, u in enumerate(ids):
                v, w = p.getBaseVelocity(u, physicsClientId=cid)
                q = p.getBasePositionAndOrientation(u, physicsClientId=cid)[1]
                R = np.array(p.getMatrixFromQuaternion(q)).reshape(3, 3)
                wb = R.T @ np.asarray(w)
                ke += 0.5 * masses[j] * float(np.dot(v, v)) + 0.5 * float(wb @ (inertia[j] * wb))
            pts = p.getContactPoints(physicsClientId=cid)
            pen = max(0.0, -min(c[8] for c in pts)) if pts else 0.0
            x0 = p.getBasePositionAndOrientation(ids[0], physicsClientId=cid)[0]
            tr.add((k + 1) * sc["h"], ke, pen, x0, c1 - c0)
        return tr
    finally:
        p.disconnect(cid)


def run(engine, sc, T, tol):
    if engine == "nsopt":
        return run_nsopt(sc, T, tol)
    if engine.startswith("mujoco"):
        return run_mujoco(sc, T, engine.split("-")[1])
    if engine == "pybullet":
        return run_pybullet(sc, T)
    raise ValueError(engine)


# ============================================================================ summaries
def summary(tr, sc):
    t, ke, pen, x, cpu = tr.arrays()
    out = {"steps": int(t.shape[0]), "ms_per_step": 1e3 * float(cpu.mean()), "compile_s": tr.compile,
           "pen_max": float(pen.max()),
           "pen_rest": float(pen[t >= t[-1] - 0.25].max())}
    for s in (2.0, 3.0):
        if t[-1] >= s - 1e-9:
            out[f"ke_{s:g}s"] = float(ke[np.searchsorted(t, s - 1e-9)])
    if sc["name"].startswith("cubes"):          # the pile's kinetic energy against time, every 2nd step
        out["ke_series"] = [t[1::2].tolist(), ke[1::2].tolist()]
    if tr.parts:            # nsopt: where the time goes (wall-time shares applied to the CPU time)
        P = np.array(tr.parts, dtype=float)
        nit, det, step, solve = P[:, 0], P[:, 1], P[:, 2], P[:, 3]
        wall = det + step
        share = cpu / np.maximum(wall, 1e-12)
        out["breakdown"] = {"newton_iterations_mean": float(nit.mean()), "newton_iterations_max": int(nit.max()),
                            "detect_ms": 1e3 * float((det * share).mean()),
                            "solve_ms": 1e3 * float((solve * share).mean()),
                            "rest_of_step_ms": 1e3 * float(((step - solve) * share).mean()),
                            "ms_per_newton_iteration": 1e3 * float((solve * share).sum() / max(nit.sum(), 1)),
                            "contacts_mean": float(P[:, 4].mean()), "active_mean": float(P[:, 5].mean())}
    if "downhill" in sc:
        d = np.asarray(sc["downhill"])
        x0 = np.asarray(sc["bodies"][0][4][:3])
        s_ = (x - x0) @ d
        out["slip"] = float(s_[-1])
        out["slip_series"] = s_[::10].tolist()
        if sc["acceleration"] > 0:
            tt = np.r_[0.0, t]
            out["acceleration"] = float(2 * np.polyfit(tt, np.r_[0.0, s_], 2)[0])
            out["acceleration_error"] = out["acceleration"] / sc["acceleration"] - 1
    return out


def table(res, engines, sizes):
    lines = ["| engine | " + " | ".join(f"{n} cubes ms/step" for n in sizes)
             + " | drop: deepest at impact / at rest (mm) | 25° slope: slip in 2 s | 28° slope: acceleration error | "
             + " | ".join(f"{n} cubes KE at 2 s / 3 s (J)" for n in sizes) + " |",
             "|---|" + "---:|" * (len(sizes) + 3 + len(sizes))]
    for e in engines:
        r = res.get(e, {})
        cells = [f"{r[f'cubes{n}']['ms_per_step']:.3g}" if f"cubes{n}" in r else "–" for n in sizes]
        dr = r.get("drop")
        cells.append(f"{1e3 * dr['pen_max']:.3g} / {1e3 * dr['pen_rest']:.3g}" if dr else "–")
        s25 = r.get("slope25")
        cells.append(f"{s25['slip']:.2e} m" if s25 else "–")
        s28 = r.get("slope28")
        cells.append(f"{100 * s28['acceleration_error']:+.3g} %" if s28 else "–")
        for n in sizes:
            c = r.get(f"cubes{n}", {})
            cells.append(" / ".join(f"{c[k]:.1e}" if k in c else "–" for k in ("ke_2s", "ke_3s")) if c else "–")
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(res, engines, sizes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4), layout="constrained")
    for k, e in enumerate(engines):
        r = res.get(e, {})
        ns = [n for n in sizes if f"cubes{n}" in r]
        if ns:
            ax[0].loglog(ns, [r[f"cubes{n}"]["ms_per_step"] for n in ns], "o-", color=f"C{k}", label=e)
        s25 = r.get("slope25")
        if s25:
            ts = np.arange(len(s25["slip_series"])) * 10 * 5e-3
            ax[1].plot(ts, 1e3 * np.asarray(s25["slip_series"]), color=f"C{k}", label=e)
    ax[0].set_xlabel("cubes in the pile"), ax[0].set_ylabel("CPU ms per step (one thread)")
    ax[0].set_title("time per step"), ax[0].legend(), ax[0].grid(alpha=0.3, which="both")
    ax[1].set_xlabel("time t [s]"), ax[1].set_ylabel("slip down the slope [mm]")
    ax[1].set_title("a cube on a 25° slope, μ = 0.5 (must stick)"), ax[1].legend(), ax[1].grid(alpha=0.3)
    cases = [("drop", "drop")] + [(f"cubes{n}", f"{n} cubes") for n in sizes]
    w = 0.8 / max(1, len(engines))
    for k, e in enumerate(engines):
        r = res.get(e, {})
        xs = np.arange(len(cases))
        imp = [1e3 * max(r[c]["pen_max"], 1e-9) if c in r else np.nan for c, _ in cases]
        rest = [1e3 * max(r[c]["pen_rest"], 1e-9) if c in r else np.nan for c, _ in cases]
        ax[2].bar(xs + k * w, imp, w, color=f"C{k}", alpha=0.45)
        ax[2].bar(xs + k * w, rest, w, color=f"C{k}", label=e)
    ax[2].set_xticks(np.arange(len(cases)) + 0.4 - w / 2, [lab for _, lab in cases])
    ax[2].set_yscale("log")
    ax[2].set_ylabel("deepest penetration [mm] (1e-6 shown for less)")
    ax[2].set_title("penetration: during impacts (light), at rest (dark)"), ax[2].legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_kinetic_energy(res, engines, sizes, path):
    """The piles' kinetic energy against time, one panel per pile, one line per engine (log scale, floored at 1e-14)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.0), layout="constrained", squeeze=False)
    for j, n in enumerate(sizes):
        a = ax[0, j]
        for k, e in enumerate(engines):
            c = res.get(e, {}).get(f"cubes{n}")
            if c and "ke_series" in c:
                t, ke = (np.asarray(x) for x in c["ke_series"])
                a.semilogy(t, np.maximum(ke, 1e-14), color=f"C{k}", lw=1, label=e)
        a.set_title(f"{n} cubes dropped into the box"), a.set_xlabel("time t [s]")
        a.grid(alpha=0.3, which="both")
    ax[0, 0].set_ylabel("kinetic energy [J] (1e-14 shown for less)"), ax[0, 0].legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    ap.add_argument("--T", type=float, default=3.0, help="the piles' duration [s]")
    ap.add_argument("--tol", type=float, default=1e-6, help="nsopt's solver tolerance on the drop and the piles")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "peers"))
    ap.add_argument("--plot", default=None, help="the figure (default OUT/rigid_peers.png)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    load0 = os.getloadavg()
    print(f"load average at the start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} cores")
    import mujoco
    import pybullet

    import nsopt
    versions = {"nsopt": nsopt.__version__, "mujoco": mujoco.__version__,
                "pybullet": str(pybullet.getAPIVersion()), "python": sys.version.split()[0]}
    print("versions:", versions)
    if "nsopt" in args.engines:            # warm-up (numba's compiled kernels loaded or compiled)
        run_nsopt(rs.cubes(10), 0.3, args.tol)
    scenes = [("drop", rs.drop(), 1.0, args.tol), ("slope25", rs.slope(25.0), 2.0, 1e-10),
              ("slope28", rs.slope(28.0), 2.0, 1e-10)] + [(f"cubes{n}", rs.cubes(n), args.T, args.tol) for n in args.sizes]
    res = {e: {} for e in args.engines}
    meta = {"load_start": load0, "versions": versions, "tol": args.tol, "T": args.T, "sizes": args.sizes,
            "engines": args.engines}

    def save():                 # after every scene: an interrupted run keeps what it measured
        with open(os.path.join(args.out, "peers.json"), "w") as f:
            json.dump({"meta": meta, "results": res}, f, indent=1)
    for key, sc, T, tol in scenes:
        for e in args.engines:
            w0 = time.perf_counter()
            s = summary(run(e, sc, T, tol), sc)
            s["wall"] = time.perf_counter() - w0
            res[e][key] = s
            extra = "".join(f" {k} {s[k]:.3g}" for k in ("slip", "acceleration_error", "ke_2s", "ke_3s", "compile_s")
                            if k in s and (k != "compile_s" or s[k] > 0))
            print(f"{key:9s} {e:17s} {s['ms_per_step']:9.3f} ms/step  pen max {s['pen_max']:.2e} rest "
                  f"{s['pen_rest']:.2e}{extra}  ({s['wall']:.0f} s)", flush=True)
            save()
    for key, _, _, _ in scenes:
        b = res.get("nsopt", {}).get(key, {}).get("breakdown")
        if b and key.startswith("cubes"):
            print(f"nsopt {key}: {b['newton_iterations_mean']:.1f} Newton iterations a step (at most "
                  f"{b['newton_iterations_max']}), {b['ms_per_newton_iteration']:.2f} ms an iteration; a step: detection "
                  f"{b['detect_ms']:.1f} ms, solve {b['solve_ms']:.1f} ms, the rest {b['rest_of_step_ms']:.1f} ms; "
                  f"{b['active_mean']:.0f} of {b['contacts_mean']:.0f} contacts in the problem")
    load1 = os.getloadavg()
    print(f"load average at the end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print(table(res, args.engines, args.sizes))
    if "nsopt" in res:
        for e in args.engines:
            if e == "nsopt":
                continue
            ratios = [res["nsopt"][f"cubes{n}"]["ms_per_step"] / res[e][f"cubes{n}"]["ms_per_step"]
                      for n in args.sizes if f"cubes{n}" in res[e]]
            print(f"nsopt / {e} time per step: " + ", ".join(f"{n} cubes x{r:.2f}" for n, r in zip(args.sizes, ratios)))
    meta["load_end"] = load1
    save()
    path = args.plot or os.path.join(args.out, "rigid_peers.png")
    print("figures:", plot(res, args.engines, args.sizes, path),
          plot_kinetic_energy(res, args.engines, args.sizes, os.path.splitext(path)[0] + "_ke.png"))


if __name__ == "__main__":
    main()
