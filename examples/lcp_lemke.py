"""Pivoting methods for the LCP
============================

Pivoting methods for the LCP: lexicographic Lemke, enumeration, Fischer–Burmeister Newton.

An LCP asks for z >= 0 with w = Mz + q >= 0 and z_i w_i = 0. Where M is not symmetric positive
semidefinite there is no convex QP behind it; Lemke's complementary pivoting still finds a solution
(always for a P-matrix), or ends on a ray which, for a copositive-plus M, is a certificate that the
LCP has no solution. The same method solves Relay, MLCP, AVI and 2-D friction through their LCP forms.

Run: python examples/lcp_lemke.py
"""

import numpy as np

import nsopt
from nsopt import generate
from nsopt.data import corpus_files

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

# 4. the degenerate LCPs of Siconos' test corpus (when the shared data folder is present)
files = corpus_files("lcp")
if files:
    print(f"\nSiconos corpus, {len(files)} LCPs:")
    for f in files:
        p = nsopt.io.load(f)
        s = nsopt.solve(p, method="lemke")
        note = "" if s.success else f"  -> newton-fb: {nsopt.solve(p, method='newton-fb').status}"
        print(f"  {f.name:28s} n={p.size:3d}  {s.status.value:8s} error {s.error:.1e}  "
              f"pivots {s.nit:3d}{note}")
