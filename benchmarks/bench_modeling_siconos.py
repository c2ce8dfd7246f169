"""nsopt.modeling side by side with Siconos' kernel (4.4, ``/usr/bin/python3``), same parameters and step.

Bouncing ball: siconos-tutorials' BouncingBallTS (m = 1, R = 0.1, e = 0.9, θ = 1/2, h = 0.005, T = 10).
Diode bridge: siconos-tutorials' DiodeBridge (L = 10 mH, C = 1 µF, R = 1 kΩ, V0 = 10 V, θ = 1/2,
h = 1 µs, T = 5 ms). Both schemes solve an LCP by Lemke at each step. The trajectories (positions or
voltages and currents, outputs, impulses or multipliers, at every step) must agree to 1e-8 relative
to each trajectory's scale (max |.| over the run).

Run: ``python benchmarks/bench_modeling_siconos.py`` (skips without Siconos).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
SICONOS_PY = "/usr/bin/python3"
TOL = 1e-8


def have_siconos() -> bool:
    if not shutil.which(SICONOS_PY):
        return False
    r = subprocess.run([SICONOS_PY, "-c", "import siconos.kernel"], capture_output=True)
    return r.returncode == 0


def run_siconos(what: str, *args) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.npz"
        subprocess.run([SICONOS_PY, str(HERE / "_siconos_modeling.py"), what, str(out), *map(str, args)],
                       check=True, capture_output=True)
        with np.load(out) as f:
            return {k: f[k] for k in f.files}


def ball_simulation(T=10.0):
    """nsopt's BouncingBallTS: (TimeStepping, ball, ground)."""
    from nsopt import modeling as nm

    r, g, m, e = 0.1, 9.81, 1.0, 0.9
    ball = nm.LagrangianLinearTIDS(q0=[1.0, 0.0, 0.0], v0=[0.0, 0.0, 0.0],
                                   M=np.diag([m, m, 2.0 / 5 * m * r * r]), fext=[-m * g, 0.0, 0.0])
    ground = nm.Interaction(nm.NewtonImpactNSL(e), nm.LagrangianLinearTIR(H=[[1.0, 0.0, 0.0]]))
    nsds = nm.NonSmoothDynamicalSystem(0.0, T)
    nsds.link(ground, ball)
    sim = nm.TimeStepping(nsds, h=0.005, integrator=nm.MoreauJeanOSI(0.5), osns="lcp", method="lemke", tol=1e-12)
    return sim, ball, ground


def nsopt_ball(T=10.0):
    sim, ball, ground = ball_simulation(T)
    traj = sim.run()
    return {"q": traj.q(ball), "v": traj.v(ball), "p": traj.p(ball), "y0": traj.y(ground, 0),
            "y1": traj.y(ground, 1), "lam": traj.lambda_(ground, 1)}


def nsopt_diode(T=5.0e-3):
    """examples/modeling_diode_bridge.py (the tutorial's circuit), its trajectory."""
    sys.path.insert(0, str(HERE.parent / "examples"))
    import modeling_diode_bridge as ex

    r = ex.simulate(h=1e-6, T=T)
    return {"x": np.column_stack([r["v"], r["i"]]), "y": r["y"], "lam": r["lam"]}


def compare(a: dict, b: dict, keys, first=0) -> dict:
    """max_k |a_k - b_k| / max(max |b|, tiny) for each key, from row ``first``."""
    out = {}
    for k in keys:
        x, y = np.asarray(a[k])[first:], np.asarray(b[k])[first:]
        n = min(len(x), len(y))
        scale = max(float(np.abs(y[:n]).max()), 1e-300)
        out[k] = float(np.abs(x[:n] - y[:n]).max() / scale)
    return out


def main():
    if not have_siconos():
        print("Siconos' kernel is not available for /usr/bin/python3: skipped")
        return 0
    ok = True
    sb, nb = run_siconos("ball"), nsopt_ball()
    rb = compare(nb, sb, ("q", "v", "p", "lam"))
    rb.update(compare(nb, sb, ("y0", "y1"), first=1))  # row 0: Siconos' y is not filled before step 1
    print(f"bouncing ball (BouncingBallTS, {int(sb['steps'])} steps): max relative difference per trajectory")
    for k, v in rb.items():
        print(f"  {k:4s} {v:.2e}")
        ok &= v <= TOL
    sd, nd = run_siconos("diode"), nsopt_diode()
    rd = compare(nd, sd, ("x", "y", "lam"), first=1)   # row 0: Siconos leaves y, λ unset before step 1
    print(f"diode bridge (DiodeBridge, {int(sd['steps'])} steps): max relative difference per trajectory")
    for k, v in rd.items():
        print(f"  {k:4s} {v:.2e}")
        ok &= v <= TOL
    print("agreement to", TOL, "relative:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
