"""Mixed linear complementarity problem."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemError
from ._base import AffineProblem, affine, as_matrix, as_square_system, as_vector, check_input, norm2


class MLCP(AffineProblem):
    r"""Mixed linear complementarity problem (Siconos ``MixedLinearComplementarityProblem``).

    .. math::
        0 = Au + Cv + a,\qquad w = Du + Bv + b,\qquad 0 \le v \perp w \ge 0,

    with :math:`u \in \mathbb{R}^n` free and :math:`v \in \mathbb{R}^m`. Internally nsopt keeps
    Siconos' single-matrix form :math:`M = [[A, C], [D, B]]`, :math:`q = [a; b]`, on the stacked
    unknown :math:`z = [u; v]` and residual :math:`w = Mz + q` (its first n entries must vanish);
    :meth:`from_matrix` builds a problem from that form directly.

    Parameters
    ----------
    A : (n, n) array_like or sparse
        Equality block on the free variables u.
    B : (m, m) array_like or sparse
        Complementarity block on v.
    C : (n, m) array_like or sparse
    D : (m, n) array_like or sparse
        The coupling blocks.
    a : (n,) array_like
    b : (m,) array_like

    Raises
    ------
    ProblemError
        When a block has the wrong shape or non-finite entries (the message names it).

    Notes
    -----
    Siconos files may interleave equality and complementarity rows in blocks: ``blocks_rows`` is then
    the list of row boundaries (``[0, ..., n+m]``) with one flag per block in ``blocks_is_comp``; row i
    is an equality when its block is not complementary.

    Error measure (Siconos ``mlcp_compute_error``): with w = Mz + q, ``error_e`` = sum over equality
    blocks of ||w_blk||, ``norm_e`` = 1 + sum ||q_blk||; ``error_i`` = sum over complementarity rows
    of (-z)+ + (-w)+ + zw (z, w > 0, or both < 0), ``norm_i`` = 1 + sum over complementarity blocks of
    ||w_blk||; the error is error_i / (1 + norm_i) if error_i / norm_i >= error_e / norm_e, else
    error_e / (1 + norm_e). Without blocks (Siconos' "deprecated" branch) error_e = ||w_1:n||,
    norm_i = 1 + ||q_n+1:||.

    Examples
    --------
    The worked example of ``formulations/mlcp.md``: one equality, one complementarity row.

    >>> import nsopt
    >>> p = nsopt.MLCP(A=[[2.0]], B=[[2.0]], C=[[1.0]], D=[[1.0]], a=[-2.0], b=[-3.0])
    >>> s = nsopt.solve(p, method="enum")
    >>> print(s.status.value, s.z.round(6))
    solved [0.333333 1.333333]
    >>> q = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-2.0, -3.0], n=1)   # the same problem
    >>> bool(abs(nsopt.solve(q, method="enum").z - s.z).max() < 1e-12)
    True
    """

    kind = "mlcp"
    _fields = ("M", "q", "n", "blocks_rows", "blocks_is_comp")

    def __init__(self, A, B, C, D, a, b):
        A = as_matrix(A, "A", "MLCP", square=True)
        B = as_matrix(B, "B", "MLCP", square=True)
        n, m = A.shape[0], B.shape[0]
        C = as_matrix(C, "C", "MLCP", shape=(n, m))
        D = as_matrix(D, "D", "MLCP", shape=(m, n))
        a = as_vector(a, "a", "MLCP", size=n)
        b = as_vector(b, "b", "MLCP", size=m)
        if any(sp.issparse(X) for X in (A, B, C, D)):   # large sparse blocks stay sparse
            M = sp.bmat([[A, C], [D, B]], format="csr")
        else:
            M = np.block([[A, C], [D, B]])
        self._init(M, np.concatenate([a, b]), n, None, None)

    @classmethod
    def from_matrix(cls, M, q, n: int, *, blocks_rows=None, blocks_is_comp=None) -> MLCP:
        """Siconos' single-matrix form: M (n+m square), q, n equalities (first n rows unless blocks say otherwise)."""
        self = cls.__new__(cls)
        self._init(M, q, n, blocks_rows, blocks_is_comp)
        return self

    def _init(self, M, q, n, blocks_rows, blocks_is_comp):
        M, q = as_square_system(M, q, "MLCP")
        N = M.shape[0]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise ProblemError("n", f"number of equalities must be an integer, got {n!r}", "MLCP")
        n = int(n)
        if not 0 <= n <= N:
            raise ProblemError("n", f"number of equalities {n} outside [0, {N}]", "MLCP")
        is_eq = np.zeros(N, dtype=bool)
        if blocks_rows is not None:
            br = np.asarray(blocks_rows, dtype=np.int64).reshape(-1)
            bc = np.asarray(blocks_is_comp, dtype=np.int64).reshape(-1) if blocks_is_comp is not None else None
            if br.size < 2 or br[0] != 0 or br[-1] != N or np.any(np.diff(br) <= 0):
                raise ProblemError("blocks_rows", f"must increase strictly from 0 to n+m={N}, got {br.tolist()}", "MLCP")
            if bc is None or bc.size != br.size - 1:
                raise ProblemError("blocks_is_comp", f"needs one flag per block ({br.size - 1})", "MLCP")
            for k in range(bc.size):
                if not bc[k]:
                    is_eq[br[k]:br[k + 1]] = True
            if int(is_eq.sum()) != n:
                raise ProblemError("blocks_is_comp", f"equality blocks hold {int(is_eq.sum())} rows but n = {n}", "MLCP")
            br.setflags(write=False)
            bc = bc.astype(bool)
            bc.setflags(write=False)
        else:
            br = bc = None
            is_eq[:n] = True
        is_eq.setflags(write=False)
        self.M, self.q, self.n = M, q, n
        self.blocks_rows, self.blocks_is_comp = br, bc
        self.is_eq = is_eq
        self._freeze()

    @classmethod
    def _from_fields(cls, M, q, n, blocks_rows, blocks_is_comp):
        return cls.from_matrix(M, q, n, blocks_rows=blocks_rows, blocks_is_comp=blocks_is_comp)

    @property
    def m(self) -> int:
        return self.q.shape[0] - self.n


    def _part(self, rows_eq: bool, cols_eq: bool):
        R = np.flatnonzero(self.is_eq if rows_eq else ~self.is_eq)
        Cc = np.flatnonzero(self.is_eq if cols_eq else ~self.is_eq)
        if sp.issparse(self.M):
            return self.M[R][:, Cc]
        return self.M[np.ix_(R, Cc)]

    A = property(lambda self: self._part(True, True), doc="Equality rows, free columns.")
    C = property(lambda self: self._part(True, False), doc="Equality rows, complementarity columns.")
    D = property(lambda self: self._part(False, True), doc="Complementarity rows, free columns.")
    B = property(lambda self: self._part(False, False), doc="Complementarity rows and columns.")
    a = property(lambda self: np.asarray(self.q)[self.is_eq])
    b = property(lambda self: np.asarray(self.q)[~self.is_eq])


    def error(self, z, w=None) -> float:
        """Siconos' MLCP error (see the class docstring), w recomputed as Mz + q."""
        z = check_input(z, "z", "MLCP", self.size)
        w = affine(self.M, z, self.q)
        q = self.q

        def comp_err(zz, ww):
            e = np.where(zz < 0, -zz, 0.0) + np.where((zz < 0) & (ww < 0), zz * ww, 0.0)
            e += np.where(ww < 0, -ww, 0.0) + np.where((zz > 0) & (ww > 0), zz * ww, 0.0)
            return float(e.sum())

        if self.blocks_rows is not None:
            error_e = error_i = 0.0
            norm_e = norm_i = 1.0
            br = self.blocks_rows
            for k, comp in enumerate(self.blocks_is_comp):
                s = slice(br[k], br[k + 1])
                if not comp:
                    error_e += norm2(w[s])
                    norm_e += norm2(q[s])
                else:
                    error_i += comp_err(z[s], w[s])
                    norm_i += norm2(w[s])
        else:
            n = self.n
            error_e = norm2(w[:n])
            error_i = comp_err(z[n:], w[n:])
            norm_i = 1.0 + norm2(q[n:])
            norm_e = 1.0 + norm2(q[:n])
        if error_i / norm_i >= error_e / norm_e:
            return error_i / (1.0 + norm_i)
        return error_e / (1.0 + norm_e)

    def __repr__(self):
        return f"MLCP(n={self.n}, m={self.m})"
