"""Pivoting methods for the LCP
============================

Pivoting methods for the LCP: lexicographic Lemke, enumeration, Fischer–Burmeister Newton.

An LCP asks for z >= 0 with w = Mz + q >= 0 and z_i w_i = 0. Where M is not symmetric positive
semidefinite there is no convex QP behind it; Lemke's complementary pivoting still finds a solution
(always for a P-matrix), or ends on a ray which, for a copositive-plus M, is a certificate that the
LCP has no solution. The same method solves Relay, MLCP, AVI and 2-D friction through their LCP forms.

The figure is Lemke's path on one of Siconos' test problems (``lcp_tobenna.dat``, n = 40, from the
sample that ships with nsopt): at each pivot, which variable of each complementary pair (w_i, z_i) is
basic, and the one pair with neither, whose place the artificial variable z0 holds, until z0 leaves
and the basis is complementary; beside it, how many z_i are basic along the path (it goes down as well
as up) and the error of each basis' point (about 1 until the last pivot: only the end is a solution).

Run: python examples/lcp_lemke.py (writes ``lcp_lemke.png``)
"""

import numpy as np

import nsopt
from nsopt import data, generate

from _plotting import figure_path, pyplot

# 1. a nonsymmetric P-matrix LCP (unique solution): three methods agree
nsopt.solve(generate.lcp(n=3)[0], method="lemke")     # the first call loads the compiled kernel
problem, known = generate.lcp(n=200, seed=1, matrix="p")
for method in ("lemke", "newton-fb"):
    sol = nsopt.solve(problem, method=method, tol=1e-12)
    print(f"{method:10s} {sol.status}  error {sol.error:.1e}  iterations {sol.nit:4d}  "
          f"|z - z_known| {np.max(np.abs(sol.z - known['z'])):.1e}  {sol.solve_time * 1e3:.1f} ms")
    assert sol.success
small, _ = generate.lcp(n=12, seed=2, matrix="p")
sol = nsopt.solve(small, method="enum")
print(f"enum       {sol.status}  error {sol.error:.1e}  bases visited {sol.nit} of {2 ** 12}")

# 2. no solution: M positive semidefinite (copositive-plus) with M e = 0 and q^T e < 0
M = np.array([[1.0, -1.0], [-1.0, 1.0]])
q = np.array([-1.0, 0.5])
sol = nsopt.solve(nsopt.LCP(M, q), method="lemke")
y = sol.info["ray"]
print(f"\ninfeasible LCP: {sol.status} ({sol.message})")
print(f"  certificate y = {y}: y >= 0, M^T y = {M.T @ y} <= 0, q^T y = {q @ y:.2f} < 0")
assert sol.status is nsopt.Status.INFEASIBLE and np.all(M.T @ y <= 1e-12) and q @ y < 0

# 3. the LCP reformulations: relay (box VI), MLCP (Schur complement of A), 2-D Coulomb friction
relay, _ = generate.relay(n=30, seed=3)
mlcp, _ = generate.mlcp(n=10, m=30, seed=3)
fc2d, _ = generate.friction_contact(nc=30, dim=2, seed=3, mu=0.4)
for p in (relay, mlcp, fc2d):
    sol = nsopt.solve(p, method="lemke")
    print(f"{p!r:32s} lemke: {sol.status}  error {sol.error:.1e}  pivots {sol.nit}  "
          f"(LCP of size {sol.info['lcp_size']})")
    assert sol.success

# 4. the degenerate LCPs of Siconos' tests (the sample shipped with nsopt: nsopt.data.sample)
names = data.samples("lcp")
print(f"\nSiconos' test problems, {len(names)} LCPs:")
for name in names:
    p = nsopt.io.load(data.sample(name))
    s = nsopt.solve(p, method="lemke")
    note = "" if s.success else f"  -> newton-fb: {nsopt.solve(p, method='newton-fb').status}"
    print(f"  {name:30s} n={p.size:3d}  {s.status.value:8s} error {s.error:.1e}  pivots {s.nit:3d}{note}")

# 5. the path: the basis after every pivot (variables w_i -> i, z_i -> n + i, z0 -> 2n)
p = nsopt.io.load(data.sample("lcp/lcp_tobenna.dat"))
s = nsopt.solve(p, method="lemke", record_bases=True, history=True)
n, bases = p.size, s.info["bases"][-1]                  # (the last path: the one that solved)
state = np.full((len(bases), n), 2)                     # 2: neither w_i nor z_i basic (z0 is)
for k, basis in enumerate(bases):
    for var in basis:
        if var < 2 * n:
            state[k, var % n] = var // n                # 0: w_i basic, 1: z_i basic
plt = pyplot()
from matplotlib.colors import ListedColormap  # noqa: E402

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained", width_ratios=[1.3, 1])
ax1.imshow(state.T, aspect="auto", interpolation="nearest", origin="lower",
           cmap=ListedColormap(["#dddddd", "#4e79a7", "#e15759"]), vmin=0, vmax=2,
           extent=(0.5, len(bases) + 0.5, -0.5, n - 0.5))
ax1.set_xlabel("pivot"); ax1.set_ylabel("complementary pair i")
ax1.set_title(f"Lemke's path on {p.size}-variable lcp_tobenna: {s.nit} pivots\n"
              "grey: $w_i$ basic, blue: $z_i$ basic, red: neither ($z_0$ in its place)", fontsize=10)
k = np.arange(1, len(bases) + 1)
ax2.step(k, (state == 1).sum(axis=1), where="mid", color="#4e79a7", label="$z_i$ basic")
ax2.set_xlabel("pivot"); ax2.set_ylabel("number of basic $z_i$", color="#4e79a7")
ax2.set_title(f"the path is not monotone; {s.status.value} when $z_0$ leaves (error {s.error:.1e})",
              fontsize=10)
err = ax2.twinx()
err.semilogy(np.arange(len(s.history)), np.maximum(s.history, 1e-17), color="0.55", lw=0.9)
err.set_ylabel("error of the basis' point", color="0.4")
ax2.grid(alpha=0.3)
out = figure_path("lcp_lemke.png")
fig.savefig(out, dpi=100)
print(f"\nlcp_tobenna: {s.nit} pivots, {s.status.value}, error {s.error:.1e}; figure: {out}")
assert s.success and state[-1].max() < 2 and len(bases) == s.nit
