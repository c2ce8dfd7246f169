"""Friction-contact problems: local (FC2D/FC3D) and global."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._jit import njit
from ..exceptions import ProblemError
from ._base import EPS, FLOAT64, Problem, affine, as_matrix, as_vector, check_input, matvec, Checked, kept_norm, norm2
from ._delassus import DelassusFactors, delassus
from .cones import fc_error, natural_map_sq


def _check_dim(dim, owner):
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) not in (2, 3):
        raise ProblemError("dim", f"must be 2 or 3, got {dim!r}", owner)
    return int(dim)


COEFFICIENTS = Checked()    # friction coefficients returned by _check_mu (finite, >= 0)


def _check_mu(mu, nc, owner):
    if type(mu) is np.ndarray and mu.shape == (nc,) and mu.dtype == FLOAT64:
        if mu in COEFFICIENTS:    # another problem's own mu: read-only, checked
            return mu
        if 0 < nc <= 32:          # the common case
            v = mu.tolist()
            if min(v) >= 0.0 and math.isfinite(sum(v)):
                a = mu.copy()
                a.setflags(write=False)
                return COEFFICIENTS.add(a)
    mu = as_vector(mu, "mu", owner)
    if mu.shape[0] == 1 and nc != 1:
        mu = np.full(nc, mu[0])
        mu.setflags(write=False)
    if mu.shape[0] != nc:
        raise ProblemError("mu", f"has {mu.shape[0]} entries, expected one per contact ({nc})", owner)
    if np.any(mu < 0):
        i = int(np.flatnonzero(mu < 0)[0])
        raise ProblemError("mu", f"friction coefficient must be >= 0, got mu[{i}] = {mu[i]}", owner)
    return COEFFICIENTS.add(mu)


class FrictionContact(Problem):
    r"""Local friction-contact problem (Siconos ``FrictionContactProblem``), dimension 2 or 3.

    Unknowns ordered contact by contact, normal first then tangents: :math:`r_a = (r_{N,a}, r_{T,a})`.

    .. math::
        u = Wr + q,\qquad \hat u_a = u_a + \mu_a \|u_{T,a}\| e_N,\qquad
        K_{\mu_a} \ni r_a \perp \hat u_a \in K^*_{\mu_a}\quad\text{for every contact } a,

    Coulomb's law written with De Saxcé's modified velocity :math:`\hat u`, on the cone
    :math:`K_\mu = \{r : \|r_T\| \le \mu r_N\}` and its dual :math:`K^*_\mu = K_{1/\mu}`.

    Parameters
    ----------
    dim : {2, 3}
        Dimension of a contact (``kind`` is ``"fc2d"`` or ``"fc3d"``).
    W : (dim * nc, dim * nc) array_like or sparse
        The Delassus matrix (kept sparse when sparse).
    q : (dim * nc,) array_like
        The free local velocity.
    mu : (nc,) array_like or float
        Friction coefficient per contact (one value for all is broadcast), >= 0.

    Attributes
    ----------
    kind : {"fc2d", "fc3d"}
        The registry key of the problem.
    nc : int
        The number of contacts.
    size : int
        The number of unknowns, ``dim * nc``.

    Raises
    ------
    ProblemError
        For ``dim`` not 2 or 3, a size of W that is not a multiple of dim, a wrong number of
        coefficients, a negative coefficient, or non-finite data.

    Notes
    -----
    Error measure (Siconos ``fc3d_compute_error`` / ``fc2d_compute_error``, norm =
    :math:`\|q\|_2`): :math:`\sqrt{\sum_a \|r_a - P_{K_{\mu_a}}(r_a - \hat u_a)\|^2} / \max(\|q\|, \|r\|, \|u\|)`,
    the division only when that maximum exceeds DBL_EPSILON (:func:`nsopt.problems.cones.fc_error`).

    Examples
    --------
    One sliding contact (the worked example of ``formulations/fc3d.md``):

    >>> import numpy as np, nsopt
    >>> p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], mu=0.5)
    >>> p, p.kind, p.nc
    (FrictionContact(dim=3, nc=1, dense), 'fc3d', 1)
    >>> s = nsopt.solve(p, method="nsn-ac")
    >>> print(s.status.value, s.r.round(6) + 0.0, s.u.round(6) + 0.0)
    solved [ 1.  -0.5  0. ] [0.  0.5 0. ]
    """

    _fields = ("dim", "W", "q", "mu")
    primal = "r"
    residual = "u"

    def __init__(self, dim, W, q, mu):
        owner = "FrictionContact"
        dim = dim if type(dim) is int and (dim == 3 or dim == 2) else _check_dim(dim, owner)
        W = as_matrix(W, "W", owner, square=True)
        n = W.shape[0]
        if n % dim:
            raise ProblemError("W", f"size {n} is not a multiple of dim = {dim}", owner)
        q = as_vector(q, "q", owner, size=n)
        mu = _check_mu(mu, n // dim, owner)
        # kind, nc and size are plain attributes (read several times per solve), fixed with the fields
        self.__dict__.update(dim=dim, W=W, q=q, mu=mu, kind="fc3d" if dim == 3 else "fc2d", nc=n // dim, size=n,
                             _store={}, _frozen=True)

    def replace(self, **changes):
        """As :meth:`Problem.replace`; ``replace(q=...)``, the re-solve of a time-stepping loop, has a
        short path: only q is checked, everything else (and the cache) is shared as it is."""
        if len(changes) != 1 or "q" not in changes:
            return super().replace(**changes)
        return self._with_vector("q", changes["q"], "FrictionContact")

    kind: str     # (set by the constructor, as nc and size: read several times per solve)
    nc: int
    size: int

    #: :math:`\|q\|_2` (the norm of Siconos' error measure), computed once per problem object (kept in
    #: its ``__dict__``; ``replace(q=...)`` makes a new object, which has it from the check of its new
    #: q: :meth:`Problem._with_vector`)
    qnorm = kept_norm("q")
    _norms = {"q": "qnorm"}

    def diag_blocks(self) -> np.ndarray:
        """The diagonal blocks W_aa as an (nc, dim, dim) array, computed once per W."""
        return self.cached("diag_blocks", lambda: diag_blocks(self.W, self.nc, self.dim), on=("W",))

    def with_delassus_factors(self, H, minv=None, *, check: bool = True) -> "FrictionContact":
        r"""Record that :math:`W = H^\top\mathrm{diag}(m^{-1})\,H` (:class:`DelassusFactors`: H is nv x n,
        GlobalFrictionContact's orientation) as data
        derived from W: kept with W's cache (shared by :meth:`replace` while W is kept; not pickled
        or written to files, as the rest of the cache). The sparse Newton methods (``nsn-ac``,
        ``nsn-fb``, ``prox``) then solve their linear systems in the space of the dofs (H's nv rows)
        when they are fewer than the contact unknowns (docs: the rigid-bodies guide, "Large scenes"). ``H`` may also be a
        :class:`DelassusFactors` (``minv`` then None). ``check``: test the product on one random
        vector (:meth:`DelassusFactors.check`). Returns the problem itself.

        >>> import numpy as np, nsopt
        >>> H, minv = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.array([1.0, 2.0])
        >>> p = nsopt.FrictionContact(3, H.T @ np.diag(minv) @ H, [-1.0, 0.0, 0.0], 0.5)
        >>> p.with_delassus_factors(H, minv).delassus_factors.H.shape
        (2, 3)
        """
        f = H if isinstance(H, DelassusFactors) and minv is None else DelassusFactors(H, minv, self.size)
        if check:
            f.check(self.W)
        self.provide("delassus_factors", f, on=("W",))
        return self

    @property
    def delassus_factors(self) -> DelassusFactors | None:
        """The factors of W recorded by :meth:`with_delassus_factors`, or None."""
        return self.cached("delassus_factors", _none, on=("W",))

    def u(self, r) -> np.ndarray:
        """Local velocity u = Wr + q."""
        return affine(self.W, check_input(r, "r", "FrictionContact", self.size), self.q)


    def error(self, r, u=None) -> float:
        """Siconos' friction-contact error of r (u recomputed as Wr + q, as Siconos does)."""
        r = check_input(r, "r", "FrictionContact", self.size)
        u = affine(self.W, r, self.q)
        return fc_error(r, u, self.mu, self.dim, self.qnorm)

    def __repr__(self):
        return f"FrictionContact(dim={self.dim}, nc={self.nc}, {'sparse' if sp.issparse(self.W) else 'dense'})"


def _none():
    return None


def diag_blocks(W, nc: int, dim: int) -> np.ndarray:
    """The diagonal ``dim x dim`` blocks of W (dense or sparse) as an (nc, dim, dim) array."""
    if isinstance(W, (sp.csr_matrix, sp.csr_array)):
        return csr_diag_blocks(W.indptr, W.indices, W.data, nc, dim)
    if sp.issparse(W):
        C = W.tocoo()
        bi = C.row // dim
        m = bi == C.col // dim
        flat = (bi[m] * dim + C.row[m] % dim) * dim + C.col[m] % dim
        return np.bincount(flat, weights=C.data[m], minlength=nc * dim * dim).reshape(nc, dim, dim)
    Wd = np.asarray(W)
    return np.array(Wd.reshape(nc, dim, nc, dim).diagonal(axis1=0, axis2=2).transpose(2, 0, 1), order="C")


@njit
def csr_diag_blocks(indptr, indices, data, nc, dim):  # pragma: no cover  (compiled)
    """:func:`diag_blocks` of a CSR matrix in one pass over its rows (duplicate entries summed, as SciPy does)."""
    D = np.zeros((nc, dim, dim))
    for row in range(nc * dim):
        a, i = row // dim, row % dim
        for k in range(indptr[row], indptr[row + 1]):
            c = indices[k]
            if c // dim == a:
                D[a, i, c % dim] += data[k]
    return D


class GlobalFrictionContact(Problem):
    r"""Global friction-contact problem (Siconos ``GlobalFrictionContactProblem``), Siconos' signs exactly.

    .. math::
        M v = q + H r,\qquad u = H^\top v + b,\qquad
        K_{\mu_a} \ni r_a \perp u_a + \mu_a \|u_{T,a}\| e_N \in K^*_{\mu_a},

    Parameters
    ----------
    M : (ndof, ndof) array_like or sparse
        Symmetric positive definite in mechanics (factorised once, sparse LU; never inverted).
    H : (ndof, dim * nc) array_like or sparse
        The contact Jacobian, transposed.
    q : (ndof,) array_like
    b : (dim * nc,) array_like
    mu : (nc,) array_like or float
        Friction coefficients, >= 0.
    dim : {3, 2}, optional
        Dimension of a contact (``kind`` ``"gfc3d"`` or ``"gfc2d"``).

    Raises
    ------
    ProblemError
        For inconsistent shapes, negative coefficients or non-finite data.

    Notes
    -----
    Error measure (Siconos 4.4 ``gfc3d_compute_error``): e1 + e2 with
    :math:`e_1 = \|q + Hr - Mv\| / \max(\|q\|, \|Mv\|, \|Hr\|)` and :math:`e_2` = the natural-map
    term of :class:`FrictionContact` on :math:`(r, u = H^\top v + b)` divided by
    :math:`\max(\|u\|, \|r\|)` (each division only above DBL_EPSILON). For dim = 2 Siconos 4.4 has no
    global error function; as Siconos does, nsopt evaluates the FC2D error of r on the local problem
    :meth:`local` (W = HᵀM⁻¹H, q_loc = HᵀM⁻¹q + b, norm = ||q_loc||).

    Examples
    --------
    The worked example of ``formulations/gfc3d.md`` (M = H = I, so v = r):

    >>> import numpy as np, nsopt
    >>> p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], mu=0.5)
    >>> s = nsopt.solve(p, method="nsn-ac")
    >>> print(s.status.value, s.v.round(6) + 0.0, s.r.round(6) + 0.0)
    solved [ 1.  -0.5  0. ] [ 1.  -0.5  0. ]
    """

    _fields = ("M", "H", "q", "b", "mu", "dim")
    primal = "r"

    def __init__(self, M, H, q, b, mu, dim=3):
        owner = "GlobalFrictionContact"
        dim = _check_dim(dim, owner)
        M = as_matrix(M, "M", owner, square=True)
        ndof = M.shape[0]
        H = as_matrix(H, "H", owner, shape=(ndof, None))
        m = H.shape[1]
        if m % dim:
            raise ProblemError("H", f"number of columns {m} is not a multiple of dim = {dim}", owner)
        q = as_vector(q, "q", owner, size=ndof)
        b = as_vector(b, "b", owner, size=m)
        mu = _check_mu(mu, m // dim, owner)
        self.dim, self.M, self.H, self.q, self.b, self.mu = dim, M, H, q, b, mu
        self._freeze()

    @property
    def kind(self) -> str:
        return f"gfc{self.dim}d"

    @property
    def nc(self) -> int:
        return self.mu.shape[0]

    @property
    def ndof(self) -> int:
        return self.q.shape[0]

    @property
    def size(self) -> int:
        return self.b.shape[0]

    def factor_M(self):
        """The factorisation of M (:func:`nsopt.linalg.factorise`: SuperLU), computed once; never a dense
        inverse. A diagonal M (lumped masses, common in DEM) is solved by division (``.d``)."""
        def make():
            from ..linalg import factorise

            Mc = sp.csc_matrix(self.M)
            lu = factorise(Mc, diagonal=True)
            if lu is None:
                raise ProblemError("M", "is singular (zero on the diagonal)" if np.any(Mc.diagonal() == 0)
                                   else "is singular or not finite", "GlobalFrictionContact")
            return lu
        return self.cached("splu_M", make, on=("M",))

    def v(self, r) -> np.ndarray:
        """Global velocity v = M⁻¹(q + Hr)."""
        r = check_input(r, "r", "GlobalFrictionContact", self.size)
        return self.factor_M().solve(self.q + matvec(self.H, r))

    def u(self, v) -> np.ndarray:
        """Local velocity u = Hᵀv + b."""
        v = check_input(v, "v", "GlobalFrictionContact", self.ndof)
        return matvec(self.H.T, v) + self.b

    def variable_sizes(self):
        return {"r": self.size, "u": self.size, "v": self.ndof}

    def complete(self, x):
        r = x["r"]
        v = x.get("v")
        if v is None:
            v = self.v(r)
        u = x.get("u")
        return {"r": r, "v": v, "u": u if u is not None else self.u(v)}

    def error_of(self, xs):
        return self.error(xs["r"], xs["v"])

    def local(self) -> FrictionContact:
        r"""The local (condensed) problem: :math:`W = H^\top M^{-1} H`, :math:`q_{loc} = H^\top M^{-1} q + b`.

        W is built once per (M, H) and stays sparse when H is (:math:`M^{-1}H` by sparse solves, never
        a dense copy of H); problems made by :meth:`replace` with new q or b share it (and every
        cache keyed on it), only :math:`q_{loc}` being recomputed."""
        def make_w():
            lu = self.factor_M()
            G = self.H.T                 # W = G M⁻¹ Gᵀ with the rows G = Hᵀ (m x n)
            if not G.shape[0]:
                W = np.zeros((0, 0))
            elif lu.d is not None:
                W = delassus(sp.csr_matrix(G) if sp.issparse(G) else np.asarray(G), lu.d)
            elif sp.issparse(G):
                from scipy.sparse.linalg import spsolve

                Mc = sp.csc_matrix(self.M)
                W = delassus(sp.csr_matrix(G), lambda X: sp.csc_matrix(spsolve(Mc, X)).reshape(X.shape))
            else:
                W = delassus(np.asarray(G), lu.solve)
            if sp.issparse(W):
                W = sp.csr_matrix(W)
                W.eliminate_zeros()
            return FrictionContact(self.dim, W, np.zeros(W.shape[0]), self.mu)
        base = self.cached("local_W", make_w, on=("M", "H", "mu", "dim"))
        return self.cached("local", lambda: base.replace(
            q=matvec(self.H.T, self.factor_M().solve(np.asarray(self.q))) + self.b))

    def error(self, r, v=None, u=None) -> float:
        """Siconos' global error of (r, v); u is recomputed as Hᵀv + b. For dim 2: the local FC2D error of r."""
        r = check_input(r, "r", "GlobalFrictionContact", self.size)
        if self.dim == 2:
            return self.local().error(r)
        if v is None:
            v = self.v(r)
        v = check_input(v, "v", "GlobalFrictionContact", self.ndof)
        Mv, Hr = matvec(self.M, v), matvec(self.H, r)
        e1 = norm2(self.q + Hr - Mv)
        s1 = max(norm2(self.q), norm2(Mv), norm2(Hr))
        if s1 > EPS:
            e1 /= s1
        u = matvec(self.H.T, v) + self.b
        e2 = float(np.sqrt(natural_map_sq(r, u, self.mu, self.dim)))
        s2 = max(norm2(u), norm2(r))
        if s2 > EPS:
            e2 /= s2
        return e1 + e2

    def __repr__(self):
        return f"GlobalFrictionContact(dim={self.dim}, nc={self.nc}, ndof={self.ndof})"
