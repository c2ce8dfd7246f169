r"""The Newton system of a complementarity problem, formed and solved in one place.

Every Newton method of nsopt (``nsn-ac``, ``nsn-fb``, ``prox`` and their global forms, ``nsn`` for
``gmp``, ``newton-fb`` for LCP and MLCP) solves, at each iteration, a system

.. math::  J d = -\phi,\qquad J = A + B\,\mathcal M

with :math:`\mathcal M` the problem's matrix (W, M) and A, B an element of the generalised Jacobian of
its residual (block diagonal for the friction contacts, diagonal for the scalar rows). This module
forms that system and solves it, on the factorisations of :mod:`nsopt.linalg` (LAPACK, SuperLU, the
LU without pivoting on a kept pattern, refinement and the backward-error check):

- :func:`newton_direction`: an assembled J (dense or sparse), with diagonal shifts tried in turn when
  it is singular;
- :class:`ContactSystem`: the friction contacts' J = A + B W on a fixed CSR pattern, refactorised in
  the order found by its first factorisation (the LU without pivoting, else SuperLU with its identity
  rows, the open contacts, left out);
- :class:`BodySystem`: the same system in the bodies' space when W is known by its factors
  (:class:`~nsopt.problems.DelassusFactors`, :math:`W = HM^{-1}H^\top`);
- both keep, given the previous system of a run (the last step's, through
  :meth:`~nsopt.monitor.Monitor.state`), its patterns, order and LU patterns when the new pattern is
  the same: a pile's next step refactorises numerically only;
- :func:`dense_contact_matrix`: J of a dense W.

The sensitivities (the implicit-function system :math:`K = A + B\mathcal M`, solved for many
right-hand sides and transposed) and the stepper's iteration matrices factorise through
:func:`nsopt.linalg.factorise` too.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg import StaticLU, dense_solve, factorise
from . import _newton_kernels as K

CONTACTS = object()     # :meth:`BodySystem.solve`: solve this system in the contacts' space instead
STATIC_TRIES = 3        # ContactSystem: after this many failures in a row of the LU without pivoting, SuperLU only


def newton_direction(J, rhs, shifts=(0.0,), *, permc="COLAMD", pivot=1.0):
    r"""d with :math:`(J + sI)\,d = \text{rhs}` for the first shift s of ``shifts`` whose matrix
    factorises and gives a finite d; None when none does. J dense (LAPACK) or scipy sparse (SuperLU,
    column order ``permc``, diagonal pivot threshold ``pivot``)."""
    sparse = sp.issparse(J)
    if sparse:
        J = sp.csc_matrix(J)
        eye = sp.identity(J.shape[0], format="csc")
    for s in shifts:
        Js = (J + s * eye if sparse else J + s * np.eye(J.shape[0])) if s else J
        if sparse:
            lu = factorise(Js, permc=permc, pivot=pivot)
            d = None if lu is None else lu.solve(rhs)
            if d is not None and np.all(np.isfinite(d)):
                return d
        else:
            d = dense_solve(Js, rhs)
            if d is not None:
                return d
    return None


def dense_contact_matrix(A, B, W):
    """J = A + B W of a dense W (A, B: (nc, dim, dim) blocks), by :func:`_newton_kernels.contact_matrix`."""
    n = W.shape[0]
    J = np.empty((n, n))
    K.contact_matrix(np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(B, dtype=float),
                     np.ascontiguousarray(W, dtype=float), J)
    return J


class ContactSystem:
    """The contacts' Newton system J = A + B W on a fixed CSR pattern (W's block rows plus the diagonal
    blocks), factorised in the order kept from its first factorisation. Given the ``previous`` system
    (the last step's of a run) of a W with the same pattern, its patterns, kept order and LU's
    patterns are kept (the numeric refactorisation only)."""

    def __init__(self, W, nc, dim, previous=None):
        n = nc * dim
        if not (type(W) is sp.csr_matrix and W.dtype == np.float64 and W.has_canonical_format):
            W = sp.csr_matrix(W, dtype=float, copy=True)     # (a problem's W is kept as it is: never written)
            W.sum_duplicates()
            W.sort_indices()
        self.W = W
        self.Wdata = np.ascontiguousarray(W.data, dtype=float)
        self.Windices = W.indices.astype(np.int64)
        self.Windptr = W.indptr.astype(np.int64)
        self.n, self.nc, self.dim = n, nc, dim
        self.indptr = None          # J's pattern, made by the first :meth:`assemble`
        self.previous = None
        if previous is not None and previous.indptr is None:
            previous = previous.previous        # (a system never assembled passes on the one it was given)
        if (previous is not None and previous.n == n and previous.dim == dim
                and np.array_equal(previous.Windptr, self.Windptr) and np.array_equal(previous.Windices, self.Windices)):
            self.previous = previous

    def assemble(self, A, B):
        """J = A + B W into :attr:`data` (the pattern made on the first call, or kept from the previous system)."""
        if self.indptr is None and self.previous is not None:
            prev, self.previous = self.previous, None
            for name in ("indptr", "indices", "wpos", "dpos", "diag_idx", "indptr32", "permc", "thresh", "order",
                         "static", "take"):
                setattr(self, name, getattr(prev, name, None))
            self.static_fails = 0
            self._work()
        if self.indptr is None:
            n = self.n
            self.indptr, self.indices, self.wpos, self.dpos = K.csr_pattern(self.Windptr, self.Windices, self.nc,
                                                                            self.dim)
            self.diag_idx = self.indptr[:-1] + self.dpos
            self.data = np.zeros(self.indices.size)
            self.indptr32 = self.indptr.astype(np.int32)
            self.permc, self.thresh = "MMD_AT_PLUS_A", 0.01
            self.order = None           # the fill-reducing order of the whole pattern (first factorisation)
            self.static = None          # the LU without pivoting of the whole pattern in that order
            self.static_fails = 0       # its failures in a row (STATIC_TRIES: SuperLU's pivoting from then on)
            self._work()
        K.assemble_csr(self.Wdata, self.Windptr, self.dim, A, B, self.wpos, self.dpos, self.indptr, self.data)

    def _work(self):
        """J's values and the work arrays of the reduced system (:meth:`solve`)."""
        n, nnz = self.n, self.indices.size
        self.data = np.zeros(nnz)
        self.newidx = np.empty(n, dtype=np.int64)
        self.Mptr = np.empty(n + 1, dtype=np.int32)
        self.Mind = np.empty(nnz, dtype=np.int32)
        self.Mdata = np.empty(nnz)
        self.pos = np.empty(n, dtype=np.int32)
        self._b = np.empty(n)
        self._state = np.full(1, -1, dtype=np.int64)    # (reduce_csc: the last reduced system's size)

    def _keep_static(self):
        """J's whole pattern, made symmetric (the LU's patterns need it: J's rows are the union of the
        rows of a contact's block of W, whose transpose may hold more), in the kept order: where each
        entry comes from (``take``: the place in :attr:`data`, or ``nnz`` for a zero of the symmetric
        part) and its :class:`~nsopt.linalg.StaticLU` (symbolic analysis once per pattern)."""
        n, order, nnz = self.n, self.order, self.indices.size
        ids = sp.csr_matrix((np.arange(1, nnz + 1, dtype=float), self.indices, self.indptr32), shape=(n, n))
        big = float(nnz + 1)
        union = abs(ids) + abs(ids.T)
        union.data[:] = big
        where = (union + ids).tocsr()[order][:, order].tocsc()      # (big + id on J's entries, big elsewhere)
        where.sort_indices()
        take = where.data.astype(np.int64) - nnz - 2
        take[take < 0] = nnz
        self.take = take
        self.static = StaticLU(where.indptr, where.indices, n)
        self.static_fails = 0

    def _solve_static(self, shift, phi):
        """(J + shift I) d = -phi by the LU without pivoting in the kept order (its backward error
        checked); None when it fails."""
        data = np.append(self.data, 0.0)
        if shift:
            data[self.diag_idx] += shift
        y = self.static.solve(data[self.take], -phi[self.order])
        if y is None:
            return None
        d = np.empty(self.n)
        d[self.order] = y
        return d

    def solve(self, A, B, phi, shift=0.0):
        """d with (J + shift I) d = -phi, J = A + B W assembled in :attr:`data`; None if singular.

        SuperLU with the minimum-degree ordering of J^T + J (the pattern is structurally symmetric
        when W is) and a diagonal-preferring pivot threshold: about half the fill of COLAMD with
        partial pivoting on the contact problems of the corpus. The first factorisation orders the
        whole J and keeps that order; the later ones refactorise J's whole pattern in that order by the
        LU without pivoting (:class:`~nsopt.linalg.StaticLU`: patterns analysed once, its backward
        error checked; 2-3x faster than SuperLU on a 1000-cube pile's J). When it fails (a pivot too
        small, a backward error above 1e-13), SuperLU with threshold pivoting leaves out the contacts
        whose rows of J are the identity (``B_a = 0``, ``A_a = I``: the open contacts of
        Alart-Curnier, d_a = -phi_a) and factorises the rest in the kept order
        (:func:`_newton_kernels.reduce_csc`); after ``STATIC_TRIES`` failures in a row, that alone.
        """
        n = self.n
        if self.order is None:
            data = self.data
            if shift:
                data = data.copy()
                data[self.diag_idx] += shift
            Jt = sp.csc_matrix((data, self.indices, self.indptr32), shape=(n, n))
            lu = factorise(Jt, permc=self.permc, pivot=self.thresh)
            if lu is None:
                return None
            self.order = np.argsort(lu.perm_c)
            return lu.solve(-phi, trans=True)
        if self.static is None:
            self._keep_static()
        if self.static_fails < STATIC_TRIES:
            d = self._solve_static(shift, phi)
            if d is not None:
                self.static_fails = 0
                return d
            self.static_fails += 1
        d = np.empty(n)
        m = K.reduce_csc(self.indptr, self.indices, self.data, B.shape[1], A, B, self.order, float(shift), phi, d,
                         self.newidx, self.Mptr, self.Mind, self.Mdata, self._b, self.pos,
                         self._state)
        if m:
            nnz = int(self.Mptr[m])
            M = sp.csc_matrix((self.Mdata[:nnz], self.Mind[:nnz], self.Mptr[:m + 1]), shape=(m, m))
            M.has_canonical_format = True       # (reduce_csc's columns: ascending, no duplicates)
            lu = factorise(M, permc="NATURAL", pivot=self.thresh)
            if lu is None:
                return None
            x = lu.solve(self._b[:m])
            keep = self.newidx >= 0
            d[keep] = x[self.newidx[keep]]
        return d


class BodySystem:
    r"""The Newton systems of a W given as :math:`W = HM^{-1}H^\top` (M diagonal, H with fewer columns
    than rows: :class:`~nsopt.problems.DelassusFactors`), solved in the space of the dofs.

    With :math:`E = A + sI` invertible block by block, :math:`(E + BW)\,d = -\phi` is
    :math:`(M + H^\top E^{-1}BH)\,y = -H^\top E^{-1}\phi`, :math:`d = -E^{-1}(\phi + BHy)`
    (:func:`_newton_kernels.body_system`): a sparse LU of the dofs' size (6 per body) instead of
    the contacts' (3 per contact, with 2-8 contacts per body in a pile). The first factorisation
    (SuperLU, minimum degree) gives the order that is kept for the later ones, done by a compiled LU
    without pivoting on the patterns found once (:class:`~nsopt.linalg.StaticLU`; S is
    M plus positive terms for the sticking contacts, dominated by its diagonal blocks), checked by
    its backward error, SuperLU's threshold pivoting otherwise. Given the ``previous`` system (the
    last step's of a run), a system whose rows H have its pattern keeps its patterns (only the
    blocks' values are new), and one whose S has its pattern keeps its order and the LU's patterns
    (no symbolic analysis, no first SuperLU factorisation): the numeric refactorisation only."""

    def __init__(self, factors, nc, dim, previous=None):
        H = factors.rows        # (the contact rows H^T of the factors' H: this class's H)
        self.nv = nv = H.shape[1]
        self.mass = 1.0 / factors.minv
        Hptr, Hind = H.indptr.astype(np.int64), H.indices.astype(np.int64)
        Hdata = np.ascontiguousarray(H.data, dtype=float)
        self.order = None           # the kept fill-reducing order and S's pattern in it (first factorisation)
        self.Hpattern = (Hptr, Hind)
        same = previous is not None and previous.nv == nv and previous.C.shape == (nc, dim, dim)
        if same and np.array_equal(previous.Hpattern[0], Hptr) and np.array_equal(previous.Hpattern[1], Hind):
            # the rows of the previous system's pattern (a pile's next step, its contacts on the same bodies): its
            # patterns and its kept order, the blocks' new values
            (self.cptr, self.cols, self.Sptr, Sind, self.dpos, self.soff, self.spos) = (
                previous.cptr, previous.cols, previous.Sptr, previous.Sind, previous.dpos, previous.soff, previous.spos)
            self.Hblk = np.empty(previous.Hblk.size)
            K.body_values(Hptr, Hind, Hdata, self.cptr, self.cols, dim, nv, self.Hblk)
        else:
            (self.cptr, self.cols, self.Hblk, self.Sptr, Sind, self.dpos, self.soff,
             self.spos) = K.body_pattern(Hptr, Hind, Hdata, nc, dim, nv)
            same = same and np.array_equal(previous.Sptr, self.Sptr) and np.array_equal(previous.Sind, Sind)
        if same and previous.order is not None:
            self.order, self.lu = previous.order, previous.lu     # S's pattern unchanged: its order and LU's
        self.gram = K.body_gram(self.Hblk, self.cptr, self.soff, dim)
        self.gptr = K.body_groups(self.cptr, self.cols)
        self.Sind = Sind
        self.Sptr32 = self.Sptr.astype(np.int32)
        self.Sdata = np.empty(Sind.size)
        self.rhs = np.empty(nv)
        self.C = np.empty((nc, dim, dim))
        self.g = np.empty(nc * dim)

    def _keep_order(self, order):
        """S's pattern in the fill-reducing ``order`` (where each entry comes from) and its
        :class:`~nsopt.linalg.StaticLU`."""
        nv = self.nv
        where = sp.csc_matrix((np.arange(1, self.Sind.size + 1, dtype=float), self.Sind, self.Sptr32),
                              shape=(nv, nv))[order][:, order].tocsc()
        where.sort_indices()
        self.order = (order, where.data.astype(np.int64) - 1, where.indices, where.indptr)
        self.lu = StaticLU(where.indptr, where.indices, nv)

    def _solve_kept(self):
        """S y = rhs in the kept order: the LU without pivoting (:class:`~nsopt.linalg.StaticLU`, its
        backward error checked), else SuperLU with its threshold pivoting; None when S is singular."""
        order, take, ind32, ptr32 = self.order
        Spd = self.Sdata[take]
        b = self.rhs[order]
        yp = self.lu.solve(Spd, b)
        if yp is None:
            Sp = sp.csc_matrix((Spd, ind32, ptr32), shape=(self.nv, self.nv))
            Sp.has_canonical_format = True
            lu = factorise(Sp, permc="NATURAL", pivot=0.01)
            if lu is None:
                return None
            yp = lu.solve(b)
        y = np.empty(self.nv)
        y[order] = yp
        return y

    def solve(self, A, B, phi, shift=0.0):
        """d with (A + shift I + B W) d = -phi (and :attr:`Wd` = W d, from the dofs' solution y: H y);
        None when singular; ``CONTACTS`` when a block of A + shift I is singular and the matrix is not
        shown singular by the rank of W (rows of J with a zero row of A lie in W's row space, of
        dimension at most the dofs' count)."""
        if K.body_system(A, B, float(shift), phi, self.Hblk, self.gram, self.cptr, self.cols, self.soff,
                         self.spos, self.dpos, self.gptr, self.mass, self.Sdata, self.rhs, self.C, self.g):
            if not shift and np.count_nonzero(~A.any(axis=2)) > self.nv:
                return None
            return CONTACTS
        nv = self.nv
        if self.order is None:
            lu = factorise(sp.csc_matrix((self.Sdata, self.Sind, self.Sptr32), shape=(nv, nv)),
                           permc="MMD_AT_PLUS_A", pivot=0.01)
            if lu is None:
                return None
            self._keep_order(np.argsort(lu.perm_c))
            y = lu.solve(self.rhs)
        else:
            y = self._solve_kept()
            if y is None:
                return None
        d, self.Wd = np.empty(phi.shape[0]), np.empty(phi.shape[0])
        K.body_direction(y, self.Hblk, self.cptr, self.cols, self.C, self.g, d, self.Wd)
        return d


