"""Compiled kernels of :mod:`nsopt.linalg`: the sparse LU without pivoting on a fixed pattern
(:class:`nsopt.linalg.StaticLU`) and the backward error of a CSC solve."""

from __future__ import annotations

import llvmlite.binding as _ll
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from ._jit import njit

SORT_SMALL = 32     # sort_index: insertion sort up to this many entries


@njit(cache=True, inline="always")
def insertion_sort(a):
    """Sort the 1-D array ``a`` in place by insertion (stable; no call, no allocation: for short arrays)."""
    for i in range(1, a.shape[0]):
        v = a[i]
        k = i - 1
        while k >= 0 and a[k] > v:
            a[k + 1] = a[k]
            k -= 1
        a[k + 1] = v


@njit(cache=True, inline="always")
def sort_index(a):
    """Sort the 1-D array ``a`` of distinct indices in place (a row or column of a sparse pattern): by
    insertion up to ``SORT_SMALL`` entries (numba's ``sort`` costs ~0.4 us a call, and a pattern's rows
    have a few to a few tens of entries), by ``sort`` above. Distinct entries: the same order either way."""
    if a.shape[0] > SORT_SMALL:
        a.sort()
    else:
        insertion_sort(a)


@njit(cache=True)
def static_lu_symbolic(Aptr, Aind, n):
    """The patterns of L and U of A = LU without pivoting, for A (n x n, CSC, rows ascending) whose
    pattern is symmetric with the diagonal stored: the elimination tree (Liu), then U's column j as
    the rows reached from A(:j, j) up the tree (the row subtree of j), L's column i as the columns j
    whose U(:, j) holds i (the filled pattern is symmetric). Returns (Uptr, Uind, Lptr, Lind): U's
    strictly upper rows and L's strictly lower rows, ascending, CSC."""
    parent = np.full(n, -1, dtype=np.int64)
    ancestor = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        for p in range(Aptr[k], Aptr[k + 1]):
            i = Aind[p]
            while i != -1 and i < k:
                nxt = ancestor[i]
                ancestor[i] = k
                if nxt == -1:
                    parent[i] = k
                i = nxt
    mark = np.full(n, -1, dtype=np.int64)
    Uptr = np.zeros(n + 1, dtype=np.int64)
    for j in range(n):
        mark[j] = j
        c = 0
        for p in range(Aptr[j], Aptr[j + 1]):
            i = Aind[p]
            while i < j and i != -1 and mark[i] != j:
                mark[i] = j
                c += 1
                i = parent[i]
        Uptr[j + 1] = Uptr[j] + c
    Uind = np.empty(Uptr[n], dtype=np.int64)
    mark[:] = -1
    Lcount = np.zeros(n + 1, dtype=np.int64)
    for j in range(n):
        mark[j] = j
        c = Uptr[j]
        for p in range(Aptr[j], Aptr[j + 1]):
            i = Aind[p]
            while i < j and i != -1 and mark[i] != j:
                mark[i] = j
                Uind[c] = i
                c += 1
                Lcount[i + 1] += 1
                i = parent[i]
        sort_index(Uind[Uptr[j]:c])
    for i in range(n):
        Lcount[i + 1] += Lcount[i]
    Lptr = Lcount
    Lind = np.empty(Lptr[n], dtype=np.int64)
    at = Lptr[:n].copy()
    for j in range(n):                  # (j ascending: L's rows come out ascending)
        for q in range(Uptr[j], Uptr[j + 1]):
            i = Uind[q]
            Lind[at[i]] = j
            at[i] += 1
    return Uptr, Uind, Lptr, Lind


@njit(cache=True, error_model="numpy")
def static_lu_numeric(Aptr, Aind, Adata, Uptr, Uind, Lptr, Lind, Ux, Ud, Lx, x, tol):
    """A = LU without pivoting (left-looking, on the patterns of :func:`static_lu_symbolic`; L unit
    lower in ``Lx``, U's strict upper part in ``Ux`` and its diagonal in ``Ud``). ``x``: n zeros (a
    work array, left zero). Returns 0, or j + 1 when the pivot of column j is not above ``tol`` x the
    largest entry of its column of L U (the caller then factorises with pivoting)."""
    n = Aptr.shape[0] - 1
    for j in range(n):
        for p in range(Aptr[j], Aptr[j + 1]):
            x[Aind[p]] = Adata[p]
        for q in range(Uptr[j], Uptr[j + 1]):      # rows ascending: x[i] is final when reached
            i = Uind[q]
            uij = x[i]
            Ux[q] = uij
            x[i] = 0.0
            if uij != 0.0:
                for p in range(Lptr[i], Lptr[i + 1]):
                    x[Lind[p]] -= Lx[p] * uij
        piv = x[j]
        x[j] = 0.0
        big = abs(piv)
        for p in range(Lptr[j], Lptr[j + 1]):
            big = max(big, abs(x[Lind[p]]))
        if not abs(piv) > tol * big:
            for p in range(Lptr[j], Lptr[j + 1]):
                x[Lind[p]] = 0.0
            return j + 1
        Ud[j] = piv
        for p in range(Lptr[j], Lptr[j + 1]):
            r = Lind[p]
            Lx[p] = x[r] / piv
            x[r] = 0.0
    return 0


@njit(cache=True, error_model="numpy")
def static_lu_solve(Uptr, Uind, Ux, Ud, Lptr, Lind, Lx, b):
    """b <- (LU)^-1 b in place (the factors of :func:`static_lu_numeric`)."""
    n = Ud.shape[0]
    for j in range(n):
        bj = b[j]
        if bj != 0.0:
            for p in range(Lptr[j], Lptr[j + 1]):
                b[Lind[p]] -= Lx[p] * bj
    for j in range(n - 1, -1, -1):
        bj = b[j] / Ud[j]
        b[j] = bj
        if bj != 0.0:
            for q in range(Uptr[j], Uptr[j + 1]):
                b[Uind[q]] -= Ux[q] * bj


@njit(cache=True, error_model="numpy")
def csc_residual(Aptr, Aind, Adata, x, b, res, work):
    """res = b - A x (A in CSC); returns the backward error max |res| / max (|A||x| + |b|) (``work``:
    n, for |A||x|)."""
    n = Aptr.shape[0] - 1
    for i in range(n):
        res[i] = b[i]
        work[i] = abs(b[i])
    for j in range(n):
        xj = x[j]
        if xj != 0.0:
            ax = abs(xj)
            for p in range(Aptr[j], Aptr[j + 1]):
                a = Adata[p]
                res[Aind[p]] -= a * xj
                work[Aind[p]] += abs(a) * ax
    rm = 0.0
    den = 1e-300
    for i in range(n):
        rm = max(rm, abs(res[i]))
        den = max(den, work[i])
    return rm / den


# LAPACK's dsyevd, called directly (numba's ``np.linalg.eigvalsh`` calls the same routine of SciPy's LAPACK, after a
# copy, a workspace query and allocations per call): the symbol is bound by name, so the kernels calling it stay in
# numba's disk cache
_ll.add_symbol("nsopt_scipy_dsyevd", get_cython_function_address("scipy.linalg.cython_lapack", "dsyevd"))
_dsyevd = types.ExternalFunction("nsopt_scipy_dsyevd", types.void(*([types.voidptr] * 11)))

#: length of :func:`sym_eig_work`'s real workspace (dsyevd with jobz = 'N' asks for 2 n + 1; the rest is what its
#: workspace query offers to dsytrd, which runs unblocked for these small n all the same)
SYM_EIG_LWORK = 256


@njit
def sym_eig_work():
    """The work arrays of :func:`sym_eigvals`: (chars 'N', 'L'; the integers n, lda, lwork, liwork, info;
    the real workspace; the integer workspace)."""
    ch = np.empty(2, dtype=np.uint8)
    ch[0], ch[1] = ord("N"), ord("L")
    ints = np.zeros(5, dtype=np.int32)
    ints[2], ints[3] = SYM_EIG_LWORK, 1
    return ch, ints, np.empty(SYM_EIG_LWORK), np.empty(8, dtype=np.int32)


@njit
def sym_eigvals(S, w, ch, ints, work, iwork):  # pragma: no cover  (compiled)
    r"""The eigenvalues (ascending, into ``w``) of the symmetric n x n ``S`` (C-contiguous, its lower triangle read,
    overwritten) by LAPACK's ``dsyevd`` (jobz = 'N', uplo = 'L'): the routine and the arguments of NumPy's
    ``eigvalsh``, so the same bits, without its copy, workspace query and allocations. ``ch, ints, work, iwork``:
    :func:`sym_eig_work`. Returns LAPACK's ``info`` (0: computed)."""
    n = S.shape[0]
    ints[0], ints[1], ints[4] = n, n, 0
    _dsyevd(ch[0:].ctypes, ch[1:].ctypes, ints[0:].ctypes, S.ctypes, ints[1:].ctypes, w.ctypes, work.ctypes,
            ints[2:].ctypes, iwork.ctypes, ints[3:].ctypes, ints[4:].ctypes)
    return ints[4]
