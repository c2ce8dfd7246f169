"""Nonsmooth Gauss–Seidel on 3D friction contact
=============================================

Nonsmooth Gauss–Seidel (NSGS) on 3-D frictional contact problems.

A friction-contact problem asks for contact reactions r and relative velocities u = Wr + q such that,
contact by contact, Coulomb's law holds (take-off, stick or slide). NSGS visits the contacts in turn
and solves each one exactly against the current reactions of the others: Siconos' default solver.

The figure follows NSGS on one of Siconos' test problems (``fc3d/Capsules-i101-404.dat``, 225 contacts,
from the sample that ships with nsopt): the error against the sweeps and against time, in the
contacts' order, in a new random order at each sweep, and with over-relaxation. Each sweep is cheap;
on this pile the error falls fast, then creeps (thousands of sweeps from 2e-8 to 1e-8).

Run: python examples/fc3d_nsgs.py (writes ``fc3d_nsgs.png``)
"""

import numpy as np

import nsopt
from nsopt import data, generate

from _plotting import convergence, convergence_axes, figure_path, pyplot

# 1. a random problem with a known solution (W symmetric positive definite)
problem, known = generate.friction_contact(nc=40, dim=3, seed=1, mu=0.5)
sol = nsopt.solve(problem, method="nsgs", tol=1e-10, history=True)
print(sol)
print(f"  error {sol.error:.2e} after {sol.nit} sweeps; |r - r_known|_inf = {np.max(np.abs(sol.r - known['r'])):.1e}")
print("  error per sweep:", " ".join(f"{e:.0e}" for e in sol.history[:8]), "...")
assert sol.success

# contact states recovered: 0 take-off (r = 0), 1 stick (u = 0), 2 slide (on the cone boundary)
R, U = sol.r.reshape(-1, 3), sol.u.reshape(-1, 3)
state = np.where(R[:, 0] < 1e-9, 0, np.where(np.linalg.norm(U, axis=1) < 1e-7, 1, 2))
print(f"  states found == states built: {np.array_equal(state, known['states'])}")

# 2. options: a random contact order per sweep, relaxation, a warm start
for opts in (dict(shuffle=True, seed=3), dict(omega=0.9), dict(r0=sol.r)):
    s = nsopt.solve(problem, method="nsgs", **opts)
    print(f"  nsgs {opts if 'r0' not in opts else {'r0': 'previous r'}}: {s.status}, {s.nit} sweeps")

# 3. a stop from a callback: e.g. a budget of 5 sweeps decided outside the solver
def stop_at_5(k, x, err):
    if k == 5:
        raise StopIteration

print("  with a callback:", nsopt.solve(problem, method="nsgs", tol=1e-14, callback=stop_at_5).status)

# 4. a global problem (M v = q + H r, u = H^T v + b): NSGS on W = H^T M^-1 H, then v
gp, gknown = generate.global_friction_contact(nc=5, ndof=20, dim=3, seed=2)
gs = nsopt.solve(gp, method="nsgs")
print(gs, f"|v - v_known|_inf = {np.max(np.abs(gs.v - gknown['v'])):.1e}")

# 5. a Siconos test problem: the sweeps in order, in a random order, over-relaxed
p = nsopt.io.load(data.sample("fc3d/Capsules-i101-404.dat"))
nsopt.solve(p, method="nsgs", max_iter=1)             # (the kernel loaded: not in the times below)
variants = {"in order": {}, "random order (shuffle=True)": dict(shuffle=True, seed=1),
            "over-relaxed (omega=1.3)": dict(omega=1.3)}
runs = {}
for label, opts in variants.items():
    runs[label] = s = nsopt.solve(p, method="nsgs", tol=1e-8, max_iter=50_000, history=True, **opts)
    print(f"Capsules-i101-404: {p.nc} contacts, {label:28s} {s.status}, error {s.error:.1e}, "
          f"{s.nit} sweeps, {s.solve_time:.3f} s")
    assert s.success

plt = pyplot()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
for i, (label, s) in enumerate(runs.items()):
    convergence(ax1, ax2, s, f"{label}: {s.nit} sweeps", color=f"C{i}", lw=1.3)
convergence_axes(ax1, ax2, 1e-8, "sweep")
ax1.set_xscale("log")
ax1.set_title(f"NSGS on Capsules-i101-404 ({p.nc} contacts)", fontsize=10)
ax2.set_title("against time", fontsize=10)
out = figure_path("fc3d_nsgs.png")
fig.savefig(out, dpi=100)
print(f"figure: {out}")
