"""The dofs' Newton systems of the 1000-cube pile factorised by nsopt's LU without pivoting (``nsopt.linalg.StaticLU``)
and by the maintained libraries: is the hand-written LU still needed? (issue 31, item 1)

    PYTHONPATH=<tree> python benchmarks/pile_lu_libraries.py capture DIR [--every 25]
    PYTHONPATH=<tree> python benchmarks/pile_lu_libraries.py time DIR [--count 16] [--repeat 7]

``capture`` runs ``nsopt_rigid.py pile1000 --projection off`` (about 10 minutes) and saves every ``--every``-th
system S y = b that nsn-ac solves in the bodies' space in its kept order (``S_kkkkk.npz``, ``b_kkkkk.npy``: 6 000
unknowns, 0.1 M entries once the pile has settled). ``time`` takes ``--count`` of them spread over the run (from
the second third on: the pile built) and times, per system, the median of ``--repeat`` runs of a factorisation
of new values on a pattern analysed once, plus the solve: StaticLU (numeric + solve + backward error, its
symbolic analysis made once); SuperLU in the kept order (``permc_spec="NATURAL"``, threshold 0.01) and with its
minimum-degree order; KLU's refactorisation (``kvxopt.klu``: symbolic once, numeric per system) and UMFPACK's
numeric factorisation (``cvxopt.umfpack``: symbolic once). CHOLMOD and QDLDL factorise symmetric matrices: S is
not symmetric (the sliding contacts' blocks), they do not apply. A library that is not installed is left out.
Prints the times, the backward errors, the medians and the median ratios library / StaticLU.
"""
import argparse
import glob
import os
import runpy
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))


def capture(folder, every):
    import numpy as np
    import scipy.sparse as sp

    from nsopt.solvers import newton_system as NS
    os.makedirs(folder, exist_ok=True)
    orig, count = NS.BodySystem._solve_kept, [0]

    def kept(self):
        count[0] += 1
        if count[0] % every == 0:
            order, take, ind32, ptr32 = self.order
            S = sp.csc_matrix((self.Sdata[take], ind32, ptr32), shape=(self.nv, self.nv))
            sp.save_npz(os.path.join(folder, f"S_{count[0]:05d}.npz"), S)
            np.save(os.path.join(folder, f"b_{count[0]:05d}.npy"), self.rhs[order])
        return orig(self)

    NS.BodySystem._solve_kept = kept
    sys.path.insert(0, HERE)
    sys.argv = ["nsopt_rigid.py", "pile1000", os.path.join(folder, "run"), "--projection", "off"]
    runpy.run_path(os.path.join(HERE, "nsopt_rigid.py"), run_name="__main__")


def median_time(f, repeat):
    import numpy as np
    ts, x = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        x = f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), x


def _suitesparse(mod, symbolic, numeric, solve, C, b):
    """A run of a SuiteSparse factorisation through cvxopt/kvxopt: symbolic analysis once, then per run the
    numeric factorisation of the values and the solve (``solve(A, F, N, B)``, in place on B)."""
    import numpy as np
    n = C.shape[0]
    A = mod.spmatrix(C.data.tolist(), C.row.tolist(), C.col.tolist(), (n, n))
    F = symbolic(A)

    def run():
        N = numeric(A, F)
        B = mod.matrix(b)
        solve(A, F, N, B)
        return np.array(B).ravel()
    return run


def timing(folder, count, repeat):
    import numpy as np
    import scipy.sparse as sp

    from nsopt.linalg import StaticLU, backward_error, factorise
    try:
        import kvxopt
        import kvxopt.klu as klu
    except ImportError:
        klu = None
    try:
        import cvxopt
        import cvxopt.umfpack as umf
    except ImportError:
        umf = None
    files = sorted(glob.glob(os.path.join(folder, "S_*.npz")))
    files = files[len(files) // 3::max(1, (len(files) - len(files) // 3) // count)][:count]
    names = ["StaticLU", "SuperLU kept order", "SuperLU MMD"] + (["KLU refactor"] if klu else []) + \
            (["UMFPACK numeric"] if umf else [])
    rows = []
    for fn in files:
        S = sp.load_npz(fn).tocsc()
        S.sort_indices()
        b = np.load(fn.replace("S_", "b_").replace(".npz", ".npy"))
        n = S.shape[0]
        st = StaticLU(S.indptr, S.indices, n)
        runs = [lambda: st.solve(S.data, b),
                lambda: factorise(S, permc="NATURAL", pivot=0.01).solve(b),
                lambda: factorise(S, permc="MMD_AT_PLUS_A", pivot=0.01).solve(b)]
        C = S.tocoo()
        if klu:
            runs.append(_suitesparse(kvxopt, klu.symbolic, klu.numeric, klu.solve, C, b))
        if umf:
            runs.append(_suitesparse(cvxopt, umf.symbolic, umf.numeric, lambda A, F, N, B: umf.solve(A, N, B), C, b))
        times, line = [], []
        for name, run in zip(names, runs):
            t, x = median_time(run, repeat)
            times.append(t)
            e = backward_error(S, x, b) if x is not None else float("inf")
            line.append(f"{name} {1e3 * t:.2f} ms ({e:.0e})")
        rows.append(times)
        print(f"{os.path.basename(fn)} n={n} nnz={S.nnz}: " + " | ".join(line), flush=True)
    R = np.array(rows)
    print("medians (ms): " + ", ".join(f"{nm} {1e3 * v:.2f}" for nm, v in zip(names, np.median(R, axis=0))))
    print("median ratio library / StaticLU: " + ", ".join(
        f"{nm} {v:.2f}" for nm, v in zip(names[1:], np.median(R[:, 1:] / R[:, :1], axis=0))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["capture", "time"])
    ap.add_argument("folder")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    if a.what == "capture":
        capture(a.folder, a.every)
    else:
        timing(a.folder, a.count, a.repeat)


if __name__ == "__main__":
    main()
