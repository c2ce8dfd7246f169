"""nsopt.linalg, the one home of the factorisations: no LAPACK routine is ever called with a matrix or a
right-hand side that is not finite (LAPACK prints "illegal value" lines and the SVD of a least-squares fallback
raises), a singular or non-finite system is a failed factorisation, and the LU without pivoting on a kept
pattern (StaticLU) checks its backward error."""

import numpy as np
import pytest
import scipy.sparse as sp

from nsopt.linalg import (StaticLU, backward_error, factorise, min_norm_lstsq, refined_solve, solve_checked,
                          solve_or_lstsq)
from nsopt.solvers.newton_system import newton_direction


def _bad(n, value, sparse):
    A = np.eye(n) + 0.1
    A[1, 2] = value
    return sp.csr_matrix(A) if sparse else A


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_no_lapack_call_on_non_finite_values(capfd, sparse, value):
    A, b = _bad(6, value, sparse), np.ones(6)
    x, exact = solve_or_lstsq(A, b)
    assert not exact and not np.all(np.isfinite(x))
    assert factorise(A) is None
    assert newton_direction(A, b, (0.0, 1e-10, 1e-6)) is None
    if not sparse:
        assert not np.all(np.isfinite(refined_solve(A, b)))
    x, exact = solve_or_lstsq(np.eye(6), np.full(6, np.nan))       # a non-finite right-hand side
    assert not exact
    if not sparse:
        assert min_norm_lstsq(A, b) is None and min_norm_lstsq(np.eye(6), np.full(6, np.nan)) is None
    out, err = capfd.readouterr()
    assert "illegal value" not in out + err and "On entry" not in out + err


def test_factorise_dense_and_sparse_agree_and_transpose():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 30)) + 8 * np.eye(30)
    b = rng.standard_normal((30, 2))
    for K in (A, sp.csc_matrix(A)):
        lu = factorise(K, permc="MMD_AT_PLUS_A", pivot=0.01)
        np.testing.assert_allclose(lu.solve(b), np.linalg.solve(A, b), rtol=1e-12)
        np.testing.assert_allclose(lu.solve(b, trans=True), np.linalg.solve(A.T, b), rtol=1e-12)
    assert factorise(np.zeros((3, 3))) is None and factorise(sp.csc_matrix((3, 3))) is None
    assert factorise(np.zeros((0, 0))).solve(np.zeros(0)).shape == (0,)


def test_solve_checked_refines_to_the_backward_error():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((40, 40)) + 10 * np.eye(40)
    b = rng.standard_normal(40)
    x, e = solve_checked(factorise(A), A, b)
    assert e <= 1e-15 and e == backward_error(A, x, b)


def test_static_lu_falls_back_on_a_zero_pivot_and_solves_otherwise():
    n = 20
    P = sp.random(n, n, density=0.2, random_state=3, format="csc")
    A = (P + P.T + sp.diags(abs(P + P.T).sum(axis=0).A1 + 1.0)).tocsc()
    A.sort_indices()
    lu = StaticLU(A.indptr, A.indices, n)
    b = np.arange(1.0, n + 1)
    np.testing.assert_allclose(lu.solve(A.data, b), np.linalg.solve(A.toarray(), b), rtol=1e-12)
    data = A.data.copy()
    data[A.indptr[0] + np.flatnonzero(A.indices[A.indptr[0]:A.indptr[1]] == 0)] = 0.0
    assert lu.solve(data, b) is None


def test_diagonal_and_cholesky_factors():
    """factorise(diagonal=True) divides by a diagonal K (None on a zero); cholesky solves as LAPACK's
    potrs (many right-hand sides at once) and is None on an indefinite or non-finite K."""
    from nsopt.linalg import cholesky, factorise

    rng = np.random.default_rng(0)
    d = np.array([2.0, 4.0, 0.5])
    f = factorise(np.diag(d), diagonal=True)
    assert f.d is not None
    np.testing.assert_array_equal(f.solve(np.ones(3)), 1 / d)
    np.testing.assert_array_equal(factorise(sp.diags(d, format="csc"), diagonal=True).solve(np.eye(3)), np.diag(1 / d))
    assert factorise(np.diag([1.0, 0.0]), diagonal=True) is None
    assert factorise(np.array([[1.0, 2.0], [3.0, 4.0]]), diagonal=True).d is None
    A = rng.standard_normal((6, 6))
    M = A @ A.T + np.eye(6)
    B = rng.standard_normal((6, 4))
    np.testing.assert_allclose(cholesky(M).solve(B), np.linalg.solve(M, B), rtol=1e-12, atol=1e-12)
    assert cholesky(-M) is None and cholesky(np.full((2, 2), np.nan)) is None
    assert cholesky(np.zeros((0, 0))).solve(np.zeros(0)).shape == (0,)


def test_min_norm_lstsq_of_a_singular_and_a_rectangular_system():
    """The minimum-norm least-squares solution (A^+ b): on a consistent singular system the solution orthogonal
    to the null space; on an inconsistent overdetermined one the least-squares solution; rcond drops the
    singular values below it (a null space known to rounding)."""
    A = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    np.testing.assert_allclose(min_norm_lstsq(A, np.array([2.0, 2.0, 4.0])), [1.0, 1.0, 2.0], atol=1e-14)
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = np.array([1.0, 1.0, 3.0])
    np.testing.assert_allclose(min_norm_lstsq(B, b), np.linalg.lstsq(B, b, rcond=None)[0], atol=1e-14)
    C = A + np.diag([0.0, 1e-14, 0.0])        # singular to rounding
    x = min_norm_lstsq(C, np.array([2.0, 2.0, 4.0]), rcond=1e-12)
    np.testing.assert_allclose(x, [1.0, 1.0, 2.0], atol=1e-12)


def test_sort_index_is_numpy_sort():
    """The patterns' row sort (insertion up to SORT_SMALL entries, numba's sort above) orders distinct indices as
    np.sort does, in place, on a slice of a larger array (the kernels sort a row inside the pattern's index array),
    for every length through the switch."""
    from numba import njit

    from nsopt._linalg_kernels import SORT_SMALL, sort_index

    @njit
    def sort_slice(a, lo, hi):
        sort_index(a[lo:hi])

    rng = np.random.default_rng(3)
    for n in range(0, 2 * SORT_SMALL + 3):
        for dtype in (np.int32, np.int64):
            a = rng.permutation(10 * n + 5)[:n + 4].astype(dtype)
            want = a.copy()
            want[2:2 + n] = np.sort(want[2:2 + n])
            sort_slice(a, 2, 2 + n)
            assert a.tolist() == want.tolist()
