"""The ordered products of the problems' residuals (nsopt/problems/_products.py): the compiled
loops that the solvers' kernels reproduce bit for bit, and what ``affine`` picks."""
import numpy as np
import pytest
import scipy.sparse as sp

from nsopt.problems._base import ORDERED_ROWS, affine
from nsopt.problems._products import csr_affine, dense_affine


def _cases(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    A = rng.standard_normal((n, m)) * 10.0 ** rng.integers(-200, 200, (n, m))
    A[rng.random((n, m)) < 0.4] = 0.0
    x = rng.standard_normal(m) * 10.0 ** rng.integers(-150, 150, m)
    x[rng.random(m) < 0.2] = -0.0
    q = rng.standard_normal(n)
    q[rng.random(n) < 0.2] = 0.0
    return A, x, q


@pytest.mark.parametrize("seed", range(40))
def test_csr_loop_is_scipys_product_and_the_dense_loop_bit_for_bit(seed):
    """csr_affine = scipy's CSR product then + q (its loop: row sums from 0.0 in storage order),
    and on the CSR of a dense matrix = dense_affine (skipped terms are ±0), bit for bit, with
    huge, tiny, zero and signed-zero entries."""
    A, x, q = _cases(seed)
    C = sp.csr_matrix(A)
    out_csr, out_dense = np.empty(q.shape[0]), np.empty(q.shape[0])
    csr_affine(C.indptr, C.indices, C.data, x, q, out_csr)
    dense_affine(A, x, q, out_dense)
    scipy_ = np.asarray(C @ x).reshape(-1) + q
    np.testing.assert_array_equal(out_csr, scipy_)
    assert out_csr.tobytes() == out_dense.tobytes()      # the same bits, zeros' signs included
    np.testing.assert_array_equal(affine(C, x, q), out_csr)
    np.testing.assert_array_equal(affine(A, x, q), out_dense)


def test_affine_keeps_blas_for_large_dense_matrices():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((ORDERED_ROWS + 1, 5))
    x, q = rng.standard_normal(5), rng.standard_normal(ORDERED_ROWS + 1)
    np.testing.assert_array_equal(affine(A, x, q), A @ x + q)
    np.testing.assert_allclose(affine(A[:ORDERED_ROWS], x, q[:ORDERED_ROWS]), A[:ORDERED_ROWS] @ x + q[:ORDERED_ROWS],
                               rtol=1e-13)
