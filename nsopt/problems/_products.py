"""The affine products ``A x + q`` of the problems' residuals (w = Mz + q, u = Wr + q), as compiled
loops whose summation order is fixed, so that a compiled solver that computes the same product
inside its loop (:mod:`nsopt.solvers._gs_kernels`) gets the very same bits, and the error it
measures there is the problem's own (``nsopt.solve`` then need not recompute it).

Row i is summed from 0.0 over j in storage order (the loop of scipy's ``csr_matvec``), then q_i
is added. BLAS (``A @ x``), whose blocking and fused multiply-adds vary with the machine, is kept
for large dense matrices only (more rows than ``_base.ORDERED_ROWS``), where nothing compiled
reproduces it.
"""

from .._jit import njit


@njit(cache=True)
def dense_affine(M, z, q, out):  # pragma: no cover  (compiled)
    """out = M z + q for a dense M: out_i = (sum_j M_ij z_j, j ascending, from 0.0) + q_i."""
    n = q.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(z.shape[0]):
            s += M[i, j] * z[j]
        out[i] = s + q[i]


@njit(cache=True)
def csr_affine(ptr, idx, val, z, q, out):  # pragma: no cover  (compiled)
    """out = M z + q for M in CSR arrays: out_i = (sum over the stored entries of row i, in storage
    order, from 0.0) + q_i. For the CSR of a dense M (its nonzeros, columns ascending) this is
    :func:`dense_affine`'s result bit for bit when z is finite: a skipped term is 0·z_j = ±0 and the
    running sum, which starts at +0.0, is never -0.0, so adding ±0 never changes it."""
    for i in range(q.shape[0]):
        s = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            s += val[p] * z[idx[p]]
        out[i] = s + q[i]
