"""GenericMechanical: block Gauss–Seidel ("nsgs") against the global semismooth Newton ("nsn").

Part 1, the Siconos corpus (gmp/ in NSOPT_DATA): both methods, error and time per file.
Part 2, generated stacks of rigid cubes (``stack_gmp``): a column of N cubes on the ground, each
resting on the one below through a frictional contact (fc3d block), every third cube held by a
bilateral hinge (an equality block on its spin), every third by a one-sided rotational stop (an LCP
block), every third by a hinge with dry friction (a relay block); the masses grow upward (heavy on
light), which couples the blocks strongly: Gauss–Seidel needs hundreds to thousands of sweeps, the
Newton method a few tens of iterations. Prints both times and their ratio (nsgs / nsn) at tol 1e-8.

    python benchmarks/bench_gmp.py            # corpus + stacks of 6, 10, 14 cubes
    python benchmarks/bench_gmp.py --quick    # corpus + the 6-cube stack
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nsopt  # noqa: E402


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def stack_gmp(N=10, ratio=1.5, mu=0.5, h=1e-2, half=0.05, seed=0, push=0.3):
    """A GenericMechanical problem: one Moreau–Jean step of a column of N cubes (see the module docstring).

    Body i (0 at the bottom): mass ratio**i, 6 velocity unknowns (v, omega), cube of half-size
    ``half``. Contact i joins body i-1 (or the ground) and body i at the centre of their common face
    (normal e_z, tangents e_x, e_y). Extra rows on body i: i % 3 == 0 a hinge about z (equality on
    omega_z), i % 3 == 1 a one-sided stop (LCP on omega_x >= 0), i % 3 == 2 a hinge with dry friction
    (relay on omega_z, bounds +-0.05). Free velocity: gravity over h plus a random horizontal push.
    Returns the GenericMechanical problem with W = H M^{-1} H^T, q = H v_free, blocks in that order
    (contacts, then the extra rows body by body).
    """
    rng = np.random.default_rng(seed)
    n = 6 * N
    m = ratio ** np.arange(N)
    inertia = m * (2 * half) ** 2 / 6.0
    Minv = np.zeros(n)
    for i in range(N):
        Minv[6 * i:6 * i + 3] = 1.0 / m[i]
        Minv[6 * i + 3:6 * i + 6] = 1.0 / inertia[i]
    rows, blocks = [], []
    for i in range(N):                         # contacts: body i on body i-1 (or on the ground)
        G = np.zeros((3, n))
        frame = np.array([[0.0, 0, 1], [1, 0, 0], [0, 1, 0]])   # (n, t1, t2)
        # velocity of the contact point of body i: v_i + omega_i x (-half e_z)
        Ji = np.hstack([np.eye(3), -_skew(np.array([0.0, 0.0, -half]))])
        G[:, 6 * i:6 * i + 6] += frame @ Ji
        if i > 0:
            Jb = np.hstack([np.eye(3), -_skew(np.array([0.0, 0.0, half]))])
            G[:, 6 * (i - 1):6 * i] -= frame @ Jb
        rows.append(G)
        blocks.append(("fc3d", 3, mu))
    for i in range(N):                         # joints, stops and frictional hinges
        g = np.zeros((1, n))
        if i % 3 == 0:
            g[0, 6 * i + 5] = 1.0
            blocks.append(("equality", 1))
        elif i % 3 == 1:
            g[0, 6 * i + 3] = 1.0
            blocks.append(("lcp", 1))
        else:
            g[0, 6 * i + 5] = 1.0
            blocks.append({"kind": "relay", "size": 1, "lb": (-0.05,), "ub": (0.05,)})
        rows.append(g)
    H = np.vstack(rows)
    f = np.zeros(n)
    f[2::6] = -9.81 * m
    f[0::6] = push * 9.81 * m * rng.uniform(-1, 1, N)
    f[1::6] = push * 9.81 * m * rng.uniform(-1, 1, N)
    v_free = h * Minv * f
    W = (H * Minv) @ H.T
    return nsopt.GenericMechanical(0.5 * (W + W.T), H @ v_free, blocks)


def run(p, method, tol=1e-8, max_iter=None, repeat=3):
    best = None
    for _ in range(repeat):
        s = nsopt.solve(p, method=method, tol=tol, max_iter=max_iter)
        if best is None or s.solve_time < best.solve_time:
            best = s
        if s.solve_time > 1.0:       # long runs: once is enough
            break
    return best


def main(argv):
    quick = "--quick" in argv
    rows = []
    from nsopt.data import corpus_files
    from nsopt.io import load

    files = corpus_files("gmp")
    nsopt.solve(stack_gmp(4), method="nsgs")
    nsopt.solve(stack_gmp(4), method="nsn")          # compile/load the kernels outside the timings
    print(f"{'problem':26s} {'n':>5s} {'nsgs':>22s} {'nsn':>22s} {'nsgs/nsn':>9s}")
    print(f"{'':26s} {'':5s} {'sweeps  error   ms':>22s} {'its  error     ms':>22s}")
    cases = [(f.name, load(f)) for f in files]
    sizes = (6,) if quick else (6, 10, 14)
    cases += [(f"stack N={N}", stack_gmp(N)) for N in sizes]
    ok = True
    for name, p in cases:
        gs = run(p, "nsgs", max_iter=100000)
        nw = run(p, "nsn")
        ok &= gs.error <= 1e-8 and nw.error <= 1e-8
        ratio = gs.solve_time / max(nw.solve_time, 1e-9)
        print(f"{name:26s} {p.size:5d} {gs.nit:7d} {gs.error:8.1e} {gs.solve_time * 1e3:6.1f} "
              f"{nw.nit:6d} {nw.error:8.1e} {nw.solve_time * 1e3:6.1f} {ratio:9.1f}")
        rows.append((name, gs, nw))
    slow = [(n, g, w) for n, g, w in rows if g.nit > 100]
    if slow:
        wins = sum(w.solve_time < g.solve_time for _, g, w in slow)
        print(f"problems where nsgs needs > 100 sweeps: {len(slow)}; nsn faster on {wins}")
    print(f"every problem solved to 1e-8 by both: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
