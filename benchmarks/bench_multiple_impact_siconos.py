"""nsopt's "lzb" against Siconos 4.4's MultipleImpact on chains of balls (tapered and monodisperse).

Builds benchmarks/siconos_multiple_impact.cpp with g++ against the installed Siconos kernel (once, in a
temporary folder keyed by the source's hash), runs it on each chain, and solves the same
MultipleImpact problem with nsopt at the same impulse step. Prints the post-impact velocities, the
largest differences (velocity in units of the impact speed V, impulse relative to the largest impulse)
and both run times (Siconos' includes its event-driven simulation up to the impact, so the ratio is
indicative only). Skips (exit 0) without g++ or the Siconos headers.

    python benchmarks/bench_multiple_impact_siconos.py            # all cases
    python benchmarks/bench_multiple_impact_siconos.py --quick    # the 10-ball tapered chain only
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "siconos_multiple_impact.cpp")
HEADER = "/usr/include/siconos/kernel/MultipleImpact.hpp"
TOL_V = 1e-12      # agreement asked of the post-impact velocities (units of V)
TOL_P = 1e-12      # and of the impulses (relative to the largest one)
RHO, YOUNG, POISSON = 7780.0, 203e9, 0.3


def build() -> str | None:
    """Path of the compiled driver, or None when g++ or Siconos is missing."""
    if shutil.which("g++") is None or not os.path.exists(HEADER):
        return None
    with open(SRC, "rb") as f:
        tag = hashlib.sha1(f.read()).hexdigest()[:12]
    out_dir = os.path.join(tempfile.gettempdir(), f"nsopt_siconos_mi_{tag}")
    exe = os.path.join(out_dir, "siconos_multiple_impact")
    if os.path.exists(exe):
        return exe
    os.makedirs(out_dir, exist_ok=True)
    inc = [f"-I/usr/include/siconos/{d}" for d in ("kernel", "numerics")] + ["-I/usr/include/siconos"]
    cmd = ["g++", "-O2", "-std=c++17", SRC, *inc, "-lsiconos_kernel", "-lsiconos_numerics", "-o", exe]
    print("building the Siconos driver (about a minute) ...", flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[-3000:])
        return None
    return exe


def tapered(nb=10, R0=0.01, q=0.05):
    """siconos-tutorials' TaperedChainOfBalls: radii R0 (1 - q)^(k+1), steel, Hertz stiffness."""
    R = R0 * (1.0 - q) ** np.arange(1, nb + 1)
    return R


def chain_data(R, e, eta):
    R = np.asarray(R, float)
    nb = len(R)
    mass = 4.0 / 3.0 * np.pi * R**3 * RHO
    Rm = R[:-1] * R[1:] / (R[:-1] + R[1:])
    k = np.sqrt(Rm) * (2.0 / 3.0) * YOUNG / (1.0 - POISSON**2)
    return mass, np.full(nb - 1, float(e)), k, np.full(nb - 1, float(eta))


def run_siconos(exe, R, mass, e, k, eta, V, dp, law):
    nb = len(R)
    lines = [f"{nb} {V!r} 0.001 {dp!r} {law}"] + [" ".join(repr(float(x)) for x in a) for a in (R, mass, e, k, eta)]
    t0 = time.perf_counter()
    r = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=600)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"Siconos driver failed: {r.stderr[-2000:]}")
    out = {}
    for line in r.stdout.splitlines():
        head, *vals = line.split()
        out[head] = np.array([float(x) for x in vals])
    return out, dt


def run_nsopt(mass, e, k, eta, V, dp, law):
    import nsopt

    nb = len(mass)
    H = np.zeros((nb - 1, nb))
    H[np.arange(nb - 1), np.arange(nb - 1)] = -1.0
    H[np.arange(nb - 1), np.arange(1, nb)] = 1.0
    v = np.zeros(nb)
    v[0] = V
    p = nsopt.MultipleImpact(np.diag(mass), H, v, restitution=e, stiffness=k, elasticity=eta)
    nsopt.solve(p, method="lzb", impulse_step=dp, max_iter=10)   # compile outside the timing
    t0 = time.perf_counter()
    s = nsopt.solve(p, method="lzb", impulse_step=dp, compliance="bi" if law == "BiStiffness" else "mono")
    return s, time.perf_counter() - t0


def main(argv):
    exe = build()
    if exe is None:
        print("SKIP: g++ or the Siconos kernel headers (libsiconos-kernel-dev) are not available")
        return 0
    V = 1.0
    cases = [("tapered 10, e=1, Hertz", tapered(10), 1.0, 1.5, "BiStiffness")]
    if "--quick" not in argv:
        cases += [("tapered 10, e=0.8, Hertz", tapered(10), 0.8, 1.5, "BiStiffness"),
                  ("tapered 10, e=1, linear", tapered(10), 1.0, 1.0, "BiStiffness"),
                  ("tapered 10, e=0.8, Hertz, mono", tapered(10), 0.8, 1.5, "MonoStiffness"),
                  ("cradle 3, e=1, Hertz", np.full(3, 0.01), 1.0, 1.5, "BiStiffness"),
                  ("cradle 5, e=1, Hertz", np.full(5, 0.01), 1.0, 1.5, "BiStiffness"),
                  ("cradle 5, e=1, linear", np.full(5, 0.01), 1.0, 1.0, "BiStiffness"),
                  ("cradle 5, e=0.8, Hertz", np.full(5, 0.01), 0.8, 1.5, "BiStiffness")]
    print(f"{'case':32s} {'steps':>8s} {'max|dv|/V':>10s} {'max|dp|/p':>10s} {'Siconos s':>10s} "
          f"{'nsopt s':>8s} {'ratio':>6s}")
    worst = 0.0
    for name, R, e, eta, law in cases:
        mass, ee, k, et = chain_data(R, e, eta)
        dp = 1e-5 * float(np.min(mass)) * V
        ref, t_sic = run_siconos(exe, R, mass, ee, k, et, V, dp, law)
        s, t_ns = run_nsopt(mass, ee, k, et, V, dp, law)
        dv = float(np.max(np.abs(s.v - ref["v"]))) / V
        dpr = float(np.max(np.abs(s.p - ref["p"]))) / float(np.max(ref["p"]))
        worst = max(worst, dv / TOL_V, dpr / TOL_P)
        print(f"{name:32s} {s.nit:8d} {dv:10.2e} {dpr:10.2e} {t_sic:10.3f} {t_ns:8.3f} {t_sic / t_ns:6.1f}")
        print(f"    nsopt   v = {np.array2string(s.v, precision=6, max_line_width=200)}")
        print(f"    Siconos v = {np.array2string(ref['v'], precision=6, max_line_width=200)}")
    ok = worst <= 1.0
    print(f"agreement within {TOL_V:g} V (velocities) and {TOL_P:g} (impulses): {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    sys.exit(main(sys.argv[1:]))
