"""Differential test of the error measures against Siconos 4.4's own error functions.

Random problems of every kind (lcp, mlcp with and without block structures, relay, fc2d, fc3d,
gfc3d, gmp with equality/LCP/FC3D blocks in every order and size) and random vectors -- not only
converged ones: zero vectors, negative, tiny (1e-300) and huge components, zero mu, empty
off-diagonal blocks -- are written as Siconos ``.dat`` files. One ``/usr/bin/python3`` subprocess
per kind loads every file with Siconos' readers and calls Siconos' error function
(``lcp_compute_error``, ``mlcp_compute_error``, ``fc3d_compute_error``, ``gfc3d_compute_error``
through the SWIG module; ``relay_compute_error``, ``fc2d_compute_error``, ``gmp_compute_error``
through ctypes on libsiconos_numerics, which the 4.4 SWIG module does not expose). nsopt loads
the same files and evaluates its own error.

Agreement: ``|e_nsopt - e_siconos| <= 1e-12 * |e_siconos| + floor``, where ``floor`` is the
rounding of the residual itself (w = Mz + q is summed in another order by BLAS and numpy):
``64 eps (|M| |z| + |q|) / d`` with d the kind's normaliser. For non-converged vectors the
floor is far below 1e-12 relative, so the bound is the relative one. Measured (seeds as below):
of 7 x 200 cases, 1045 errors are bit-identical to Siconos', 342 agree within 1e-12 relative,
and 13 (converged vectors of lcp, gfc3d and gmp, errors below 1e-9) need the rounding floor.
One case in five of lcp and gmp is a solver's output (``converged``), so that regime is covered.

Skips when Siconos 4.4 (Debian ``python3-siconos``) is absent; ``.ci/run`` installs it.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
import nsopt.io as io
from nsopt.io.siconos_dat import write_siconos_dat
from nsopt.problems import Block

SICONOS_PY = "/usr/bin/python3"
N_CASES = 200          # random cases per kind
RTOL = 1e-12
EPS = np.finfo(float).eps


@functools.lru_cache(maxsize=1)
def siconos_available() -> bool:
    if not shutil.which(SICONOS_PY):
        return False
    r = subprocess.run([SICONOS_PY, "-c", "import siconos.numerics"], capture_output=True)
    return r.returncode == 0


needs_siconos = pytest.mark.skipif(not siconos_available(),
                                   reason="Siconos 4.4 (python3-siconos for /usr/bin/python3) absent")

# ----------------------------------------------------------------------------------------------
# the Siconos side: one subprocess per kind, every case of the kind in one call
# ----------------------------------------------------------------------------------------------

_SICONOS_SCRIPT = textwrap.dedent(r"""
    import ctypes, json, subprocess, sys
    import numpy as np
    import scipy.sparse  # noqa: F401  (siconos' typemaps need it)
    import siconos.numerics as sn
    from scipy.linalg.blas import dnrm2   # the norm Siconos' drivers pass in

    sn.numerics_set_verbose(0)
    so_lib = sn._numerics.__file__
    libpath = 'libsiconos_numerics.so.7'
    for line in subprocess.run(['ldd', so_lib], capture_output=True, text=True).stdout.splitlines():
        if 'libsiconos_numerics' in line and '=>' in line:
            libpath = line.split('=>')[1].split()[0]
    lib = ctypes.CDLL(libpath)
    P, D = ctypes.c_void_p, ctypes.c_double
    for name, res, args in [
            ('relay_new_from_filename', P, [ctypes.c_char_p]),
            ('relay_compute_error', ctypes.c_int, [P, P, P, D, P]),
            ('genericMechanical_new_from_filename', P, [ctypes.c_char_p]),
            ('gmp_compute_error', ctypes.c_int, [P, P, P, D, P, P]),
            ('fc2d_compute_error', ctypes.c_int, [P, P, P, D, D, P])]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args

    def last(ret):
        return ret[-1] if isinstance(ret, (list, tuple)) else ret

    def cerr(fn, *args):
        e = ctypes.c_double(float('nan'))
        fn(*args, ctypes.addressof(e))
        return e.value

    def ptr(a):
        return a.ctypes.data

    kind, manifest = sys.argv[1], json.load(open(sys.argv[2]))
    tol = 1e-8
    out = []
    keep = []
    for case in manifest:
        path = case['path']
        x = np.load(case['vectors'])
        z = np.ascontiguousarray(x['z'], dtype=float)
        w = np.zeros_like(z)
        if kind == 'lcp':
            p = sn.newLCP()
            sn.linearComplementarity_newFromFilename(p, path)
            e = last(sn.lcp_compute_error(p, z, w, tol))
        elif kind == 'mlcp':
            p = sn.MLCP()
            sn.mixedLinearComplementarity_newFromFilename(p, path)
            e = last(sn.mlcp_compute_error(p, z, w, tol))
        elif kind == 'relay':
            p = lib.relay_new_from_filename(path.encode())
            e = cerr(lib.relay_compute_error, p, ptr(z), ptr(w), tol)
        elif kind == 'fc2d':
            p = sn.frictionContact_new_from_filename(path)
            nq = float(dnrm2(np.array(p.q)))
            e = cerr(lib.fc2d_compute_error, int(p.this), ptr(z), ptr(w), tol, nq)
        elif kind == 'fc3d':
            p = sn.frictionContact_new_from_filename(path)
            so = sn.SolverOptions(sn.SICONOS_FRICTION_3D_NSGS)
            e = last(sn.fc3d_compute_error(p, z, w, tol, so, float(dnrm2(np.array(p.q)))))
        elif kind == 'gfc3d':
            p = sn.globalFrictionContact_new_from_filename(path)
            so = sn.SolverOptions(sn.SICONOS_GLOBAL_FRICTION_3D_NSGS_WR)
            v = np.ascontiguousarray(x['v'], dtype=float)
            nq, nb = float(dnrm2(np.array(p.q))), float(dnrm2(np.array(p.b)))
            e = last(sn.gfc3d_compute_error(p, z, w, v, tol, so, nq, nb))
        elif kind == 'gmp':
            p = lib.genericMechanical_new_from_filename(path.encode())
            so = sn.SolverOptions(sn.SICONOS_GENERIC_MECHANICAL_NSGS)
            e = cerr(lib.gmp_compute_error, p, ptr(z), ptr(w), tol, int(so.this))
            keep.append(so)
        else:
            raise ValueError(kind)
        keep.append((p, z, w))
        out.append(repr(float(e)))
    json.dump(out, open(sys.argv[3], 'w'))     # not stdout: Siconos prints there
""")


def siconos_run(kind: str, cases: list[dict], tmp: Path, env: dict | None = None):
    """Siconos' error of every case, in one subprocess (``env``: extra environment variables):
    the finished process, and the errors (None if it did not finish)."""
    manifest = tmp / f"{kind}-manifest.json"
    manifest.write_text(json.dumps(cases))
    script = tmp / "siconos_errors.py"
    script.write_text(_SICONOS_SCRIPT)
    result = tmp / f"{kind}-siconos.json"
    result.unlink(missing_ok=True)
    r = subprocess.run([SICONOS_PY, str(script), kind, str(manifest), str(result)],
                       capture_output=True, text=True, timeout=600,
                       env=None if env is None else {**os.environ, **env})
    errors = [float(s) for s in json.loads(result.read_text())] if r.returncode == 0 else None
    return r, errors


def siconos_errors(kind: str, cases: list[dict], tmp: Path, env: dict | None = None) -> list[float]:
    r, errors = siconos_run(kind, cases, tmp, env)
    assert r.returncode == 0, f"Siconos subprocess failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return errors


# ----------------------------------------------------------------------------------------------
# random data
# ----------------------------------------------------------------------------------------------

def rand_vector(rng, n, style=None):
    """A random vector with an awkward feature: zeros, signs, tiny or huge components."""
    style = style if style is not None else rng.integers(0, 10)
    x = rng.standard_normal(n)
    if style == 0:
        return np.zeros(n)
    if style == 1:                       # some exact zeros
        x[rng.random(n) < 0.4] = 0.0
    elif style == 2:                     # nonnegative, like an iterate
        x = np.abs(x)
    elif style == 3:                     # all negative
        x = -np.abs(x)
    elif style == 4:                     # tiny components mixed in
        k = rng.random(n) < 0.5
        x[k] *= 10.0 ** rng.integers(-300, -8, size=int(k.sum()))
    elif style == 5:                     # large scale
        x *= 1e6
    elif style == 6:                     # small scale
        x *= 1e-6
    elif style == 8:                     # huge: x.x overflows
        x *= 1e160
    elif style == 9:                     # all tiny: x.x underflows
        x *= 1e-170
    return x


def rand_matrix(rng, n, m=None, density=None):
    m = n if m is None else m
    A = rng.standard_normal((n, m))
    if density is not None:
        A[rng.random((n, m)) > density] = 0.0
    return A


def rand_q(rng, n):
    """q: usually random, sometimes zero (no normalisation) or tiny (below DBL_EPSILON)."""
    c = rng.integers(0, 10)
    if c == 0:
        return np.zeros(n)
    if c == 1:
        return rng.standard_normal(n) * 1e-18
    return rand_vector(rng, n, style=rng.choice([1, 2, 3, 7, 7]))


# ----------------------------------------------------------------------------------------------
# per-kind case builders: (problem, vectors dict, rounding floor)
# ----------------------------------------------------------------------------------------------

def _norm(A):
    return float(np.abs(A.toarray() if sp.issparse(A) else A).sum(axis=1).max(initial=0.0))


def converged(rng, p, method):
    """One case in five: the vector a solver returns (errors near 1e-10 and below, where the
    summation order of w = Mz + q matters)."""
    if rng.random() >= 0.2:
        return False
    sol = nsopt.solve(p, method=method, tol=1e-10)
    x = getattr(sol, p.primal)
    return False if x is None or not np.all(np.isfinite(x)) else np.asarray(x, dtype=float)


def case_lcp(rng):
    n = int(rng.integers(1, 9))
    M = rand_matrix(rng, n, density=rng.choice([None, 0.5]))
    if rng.random() < 0.3:
        M = M @ M.T + np.eye(n)
    if rng.random() < 0.3:                       # written as a sparse (CSC) NumericsMatrix
        M = sp.csr_matrix(M)
    p = nsopt.LCP(M, rand_q(rng, n))
    z = converged(rng, p, "lemke")
    return p, {"z": rand_vector(rng, n) if z is False else z}


def case_relay(rng):
    n = int(rng.integers(1, 9))
    lb = -np.abs(rng.standard_normal(n))
    ub = np.abs(rng.standard_normal(n))
    lb[rng.random(n) < 0.2] = 0.0
    ub[rng.random(n) < 0.2] = 0.0
    eq = rng.random(n) < 0.15
    ub[eq] = lb[eq]
    M = rand_matrix(rng, n, density=rng.choice([None, 0.5]))
    p = nsopt.Relay(sp.csr_matrix(M) if rng.random() < 0.3 else M, rand_q(rng, n), lb, ub)
    return p, {"z": rand_vector(rng, n)}


def case_mlcp(rng):
    n, m = int(rng.integers(0, 5)), int(rng.integers(1, 6))
    N = n + m
    M = rand_matrix(rng, N, density=rng.choice([None, 0.6]))
    q = rand_q(rng, N)
    # Siconos 4.4's mlcp_compute_error needs M (storage 1): on a file with A, B, C, D only
    # (storage 2, no blocks) it dereferences a NULL M, so only block structures are compared
    if rng.random() < 0.3:
        M = sp.csr_matrix(M)
    if rng.random() < 0.5:            # two blocks, equalities first
        rows = [0, n, N] if n else [0, N]
        comp = [False, True] if n else [True]
        p = nsopt.MLCP.from_matrix(M, q, n, blocks_rows=rows, blocks_is_comp=comp)
    else:                             # interleaved blocks of random sizes
        cuts = sorted(set(rng.integers(1, N, size=int(rng.integers(0, N))).tolist())) if N > 1 else []
        rows = [0] + cuts + [N]
        comp = [bool(rng.integers(0, 2)) for _ in range(len(rows) - 1)]
        neq = sum(rows[k + 1] - rows[k] for k in range(len(comp)) if not comp[k])
        p = nsopt.MLCP.from_matrix(M, q, neq, blocks_rows=rows, blocks_is_comp=comp)
    return p, {"z": rand_vector(rng, N)}


def _mu(rng, nc):
    mu = rng.random(nc) * 1.2
    mu[rng.random(nc) < 0.25] = 0.0
    return mu


def _fc_vector(rng, n, dim):
    """Reactions: random, or inside/on the cone, or zero, with some contacts zeroed."""
    x = rand_vector(rng, n)
    if rng.random() < 0.3:
        X = x.reshape(-1, dim)
        X[:, 0] = np.abs(X[:, 0])
        X[rng.random(X.shape[0]) < 0.3] = 0.0
    return x


def case_fc(rng, dim):
    nc = int(rng.choice([1, 2, 3, 5, 9, 12]))    # > 8 contacts: the vectorised path
    n = dim * nc
    W = rand_matrix(rng, n, density=rng.choice([None, 0.5]))
    if rng.random() < 0.5:
        W = W @ W.T
    if rng.random() < 0.3:
        W = sp.csr_matrix(W)
    p = nsopt.FrictionContact(dim, W, rand_q(rng, n), _mu(rng, nc))
    return p, {"z": _fc_vector(rng, n, dim)}


def case_gfc3d(rng):
    nc = int(rng.choice([1, 2, 4, 9]))
    m = 3 * nc
    ndof = int(rng.integers(1, 10))
    A = rng.standard_normal((ndof, ndof))
    M = A @ A.T + ndof * np.eye(ndof)
    if rng.random() < 0.3:
        M = np.diag(rng.random(ndof) + 0.5)
    H = rand_matrix(rng, ndof, m, density=rng.choice([None, 0.5]))
    b = rand_q(rng, m)
    q = rand_q(rng, ndof)
    if rng.random() < 0.3:
        M, H = sp.csr_matrix(M), sp.csr_matrix(H)
    p = nsopt.GlobalFrictionContact(M, H, q, b, _mu(rng, nc), dim=3)
    r = _fc_vector(rng, m, 3)
    v = rand_vector(rng, ndof) if rng.random() < 0.7 else p.v(r)
    return p, {"z": r, "v": v}


def case_gmp(rng):
    nb = int(rng.integers(1, 7))
    blocks = []
    for _ in range(nb):
        k = rng.choice(["equality", "lcp", "fc3d"])
        if k == "fc3d":
            blocks.append(Block("fc3d", 3, float(_mu(rng, 1)[0])))
        else:
            blocks.append(Block(str(k), int(rng.integers(1, 8))))
    sizes = [b.size for b in blocks]
    N = sum(sizes)
    M = rand_matrix(rng, N)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for i in range(nb):                       # empty off-diagonal blocks, sometimes zero diagonal
        for j in range(nb):
            if i != j and rng.random() < 0.4:
                M[starts[i]:starts[i + 1], starts[j]:starts[j + 1]] = 0.0
    if rng.random() < 0.3:                    # large, well-conditioned: nsgs converges
        M = 1e3 * (M @ M.T + N * np.eye(N))
    p = nsopt.GenericMechanical(M, rand_q(rng, N), blocks)
    z = converged(rng, p, "nsgs")
    return p, {"z": rand_vector(rng, N) if z is False else z}


BUILDERS = {"lcp": case_lcp, "mlcp": case_mlcp, "relay": case_relay,
            "fc2d": lambda rng: case_fc(rng, 2), "fc3d": lambda rng: case_fc(rng, 3),
            "gfc3d": case_gfc3d, "gmp": case_gmp}
SEEDS = {k: 1000 + i for i, k in enumerate(BUILDERS)}


def nsopt_error(p, vec):
    if p.kind == "gfc3d":
        return p.error(vec["z"], vec["v"])
    return p.error(vec["z"])


def rounding_floor(p, vec) -> float:
    """64 eps times the size of the terms of the residual, over the kind's normaliser."""
    z = vec["z"]
    if p.kind == "gfc3d":
        v = vec["v"]
        t1 = _norm(p.M) * np.linalg.norm(v) + _norm(p.H) * np.linalg.norm(z) + np.linalg.norm(p.q)
        d1 = max(np.linalg.norm(p.q), np.linalg.norm(p.M @ v), np.linalg.norm(p.H @ z))
        u = p.H.T @ v + p.b
        t2 = (_norm(p.H.T) * np.linalg.norm(v) + np.linalg.norm(p.b)) * (1 + np.max(p.mu))
        d2 = max(np.linalg.norm(u), np.linalg.norm(z))
        return 64 * EPS * (t1 / (d1 if d1 > EPS else 1.0) + t2 / (d2 if d2 > EPS else 1.0))
    A = p.W if hasattr(p, "W") else p.M
    terms = _norm(A) * float(np.linalg.norm(z)) + float(np.linalg.norm(p.q))
    if p.kind in ("fc2d", "fc3d"):
        mu = float(np.max(p.mu, initial=0.0))
        terms *= 1 + mu
        d = max(float(np.linalg.norm(p.q)), float(np.linalg.norm(z)), float(np.linalg.norm(p.W @ z + p.q)))
    elif p.kind == "lcp":
        d = float(np.linalg.norm(p.q))
        d = d if d > EPS else 1.0
    elif p.kind == "mlcp":
        terms *= 1 + float(np.abs(z).max(initial=0.0))   # products z*w in the error
        d = 1.0
    else:
        d = 1.0
    return 64 * EPS * terms / d if d > EPS else 64 * EPS * terms


@needs_siconos
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_error_agrees_with_siconos(kind, tmp_path):
    rng = np.random.default_rng(SEEDS[kind])
    cases, probs = [], []
    for i in range(N_CASES):
        p, vec = BUILDERS[kind](rng)
        path = tmp_path / f"{kind}-{i}.dat"
        write_siconos_dat(p, path)
        vpath = tmp_path / f"{kind}-{i}.npz"
        np.savez(vpath, **vec)
        cases.append({"path": str(path), "vectors": str(vpath)})
        probs.append((p, vec))
    ref = siconos_errors(kind, cases, tmp_path)
    bad = []
    for i, ((p, vec), e_ref) in enumerate(zip(probs, ref)):
        q = io.load(cases[i]["path"])           # nsopt reads the very file Siconos read
        with np.errstate(over="ignore", invalid="ignore"):   # huge vectors: inf, as Siconos
            e = nsopt_error(q, vec)
            floor = rounding_floor(q, vec)
        if e == e_ref or (np.isnan(e) and np.isnan(e_ref)):    # equal, inf or nan alike
            continue
        if not abs(e - e_ref) <= RTOL * abs(e_ref) + floor:
            bad.append((i, e, e_ref, floor, repr(q)))
    assert not bad, (f"{len(bad)}/{N_CASES} {kind} cases disagree with Siconos "
                     f"(case, nsopt, siconos, floor): {bad[:5]}")


def _gmp_file_without_diagonal_block(path, B00, B01, B10, q):
    """A GMP file (equality block of 3 rows, LCP block of 2 rows) whose SBM stores no diagonal
    block for the LCP row: blocks (0,0), (0,1), (1,0) only."""
    out = ["1", "5", "5", "3", "2", "2", "3\t5\t", "3\t5\t", "3", "3", "0\t2\t3\t", "0\t1\t0\t"]
    for k, B in enumerate((B00, B01, B10)):
        out.append(str(k))
        out += [repr(float(x)) for x in B.reshape(-1, order="F")]
    out += [repr(float(x)) for x in q] + ["2", "0"]
    path.write_text("\n".join(out) + "\n")


# glibc's malloc, made to return memory filled with zeros (perturb byte 0xff: fill 0xff ^ 0xff) or with
# 0x5a bytes (perturb 0xa5), on every call (the thread cache, which skips the fill, turned off)
ZEROED_MALLOC = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.perturb=255"}
POISONED_MALLOC = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.perturb=165"}
needs_glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc tunables")


@needs_siconos
@needs_glibc
def test_gmp_without_stored_diagonal_block_is_a_known_siconos_divergence(tmp_path):
    """A GMP file whose SBM stores no diagonal block for a block row: Siconos 4.4 reads memory it never
    wrote. ``SBM_diagonal_block_indices`` (numerics/src/tools/SparseBlockMatrix.c) mallocs the array of
    the diagonal blocks' positions and fills it row by row where it finds a diagonal block ("no check
    if the diagonal block does not exists"); the missing row's entry is whatever malloc left there,
    and ``NM_extract_diag_block`` takes ``block[that]`` as M_kk -- in gmp_compute_error and in its GMP
    solver alike. On memory malloc returns zeroed that is block 0, the first stored block (its leading
    entries, column-major, as M_kk); on reused memory a wild pointer: a segfault (exit -11), or a
    value from elsewhere. Which one depends on the heap's history (with the default allocator one
    file in a fresh process often gets zeros and two files in a row crash), so the test fixes the
    allocator: with malloc filling with zeros, Siconos' value is the first-block one every time, even
    for the same file evaluated repeatedly; with malloc filling with 0x5a, it crashes every time.
    nsopt keeps M as stored (a zero block) and warns when it reads such a file."""
    rng = np.random.default_rng(0)
    B00, B01, B10 = rng.standard_normal((3, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    q = rng.standard_normal(5)
    M = np.zeros((5, 5))
    M[:3, :3], M[:3, 3:], M[3:, :3] = B00, B01, B10
    f = tmp_path / "nodiag.dat"
    _gmp_file_without_diagonal_block(f, B00, B01, B10, q)
    r = np.zeros(5)
    r[3:] = [0.4, 0.1]
    r[:3] = np.linalg.solve(B00, -q[:3] - B01 @ r[3:])         # equality block satisfied
    np.savez(tmp_path / "v.npz", z=r)
    case = {"path": str(f), "vectors": str(tmp_path / "v.npz")}
    with pytest.warns(nsopt.NsoptWarning, match="no stored diagonal block"):
        p = io.load(f)
    np.testing.assert_array_equal(p.M.toarray(), M)

    def lcp_err(Mkk):
        qloc = q[3:] + B10 @ r[:3]
        w = qloc + Mkk @ r[3:]
        return np.sqrt(np.sum((r[3:] - np.maximum(0.0, r[3:] - w)) ** 2)) / (1 + np.linalg.norm(qloc))

    e_eq = np.max(np.abs(M[:3] @ r + q[:3]))
    first_block = B00.reshape(-1, order="F")[:4].reshape(2, 2, order="F")
    e_nsopt = p.error(r)
    assert e_nsopt == pytest.approx(max(e_eq, lcp_err(np.zeros((2, 2)))), rel=1e-14)
    # zero-filled malloc: the first stored block, for each of 4 evaluations in one process
    e_siconos = siconos_errors("gmp", [case] * 4, tmp_path, env=ZEROED_MALLOC)
    assert e_siconos == [pytest.approx(max(e_eq, lcp_err(first_block)), rel=1e-14)] * 4
    assert abs(e_nsopt - e_siconos[0]) > 1e-3
    # 0x5a-filled malloc: block[0x5a5a5a5a], a wild pointer: SIGSEGV
    proc, errors = siconos_run("gmp", [case], tmp_path, env=POISONED_MALLOC)
    assert proc.returncode == -signal.SIGSEGV and errors is None, (proc.returncode, proc.stderr[-500:])
    # a file with the diagonal block stored: the same in both allocators, and nsopt agrees
    g = tmp_path / "withdiag.dat"
    io.write_siconos_dat(p, g)
    ok = {"path": str(g), "vectors": str(tmp_path / "v.npz")}
    for env in (ZEROED_MALLOC, POISONED_MALLOC):
        assert siconos_errors("gmp", [ok] * 2, tmp_path, env=env) == [pytest.approx(e_nsopt, rel=1e-14)] * 2
