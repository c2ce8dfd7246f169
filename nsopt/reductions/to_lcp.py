r"""Reductions to an LCP (and AVI to its KKT MLCP), shared by the pivoting and Newton methods.

Each class is a :class:`~nsopt.reductions.Reduction`: ``apply(problem)`` returns an
:class:`~nsopt.LCP` (dense: the reductions form products and Schur complements of the data; a sparse
input larger than n = 2000 is densified with an :class:`~nsopt.exceptions.NsoptWarning`) and the
inverse data, and ``invert({"z": x}, inverse_data)`` maps its solution back to the original variables.

* :class:`RelayToLCP`, box :math:`[lb, ub]`: :math:`z = lb + x` and the upper-bound multiplier
  :math:`y`, :math:`0 \le x \perp Mx + (q + M\,lb) + y \ge 0`,
  :math:`0 \le y \perp (ub - lb) - x \ge 0` (a one-sided bound gives one row, a free component
  :math:`z = x^+ - x^-` two).
* :class:`MLCPToLCP`: the free variables u are eliminated by the Schur complement when the equality
  block A is not numerically singular (condition number below ``cond_max`` = 1e14; Siconos' MLCP
  LCP_LEMKE always does this): :math:`u = -A^{-1}(Cv + a)`, LCP in v with
  :math:`B - DA^{-1}C`, :math:`b - DA^{-1}a`. Otherwise (or ``reduction="split"``)
  :math:`u = u^+ - u^-` with the equality rows doubled with opposite signs (LCP of size 2n + m;
  copositive-plus when M is positive semidefinite).
* :class:`AVIToMLCP`, AVI over :math:`K = \{z: Hz \ge k\}`: its KKT system
  :math:`Mz + q - H^\top\lambda = 0,\ 0 \le \lambda \perp Hz - k \ge 0`, an MLCP on
  :math:`(z, \lambda)` (equivalent to the AVI since K is polyhedral). :class:`AVIToLCP` chains it
  with :class:`MLCPToLCP`.
* :class:`FC2DToLCP`: with :math:`\beta_a = r_{T,a} + \mu_a r_{N,a} \ge 0` and a slack
  :math:`\lambda_a \ge 0`, each contact gives the pairs :math:`r_N \perp u_N`,
  :math:`\beta \perp u_T + \lambda`, :math:`\lambda \perp 2\mu r_N - \beta` (Siconos' FC2D LEMKE
  uses the same 3-per-contact form).

For pivoting methods, ``basis_support(basic, inverse_data)`` maps the set of basic LCP variables ``z`` to the
components of the original ``z`` that are off their bounds (whose rows :math:`w_i = 0` are then
equations); a method re-solves the original data on that support (:func:`box_of` gives the bounds).
"""

from __future__ import annotations

import warnings
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ..exceptions import NsoptWarning, OptionError
from ..linalg import factorise
from ._base import Chain, Reduction

DENSIFY_WARN = 2000   # a sparse matrix larger than this is densified with a warning


def dense_of(A, what: str = "M", who: str = "reduction") -> np.ndarray:
    """A float ndarray of ``A`` (densified with an NsoptWarning above n = 2000).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix
        The matrix.
    what : str, default "M"
        The matrix's name, for the warning.
    who : str, default "reduction"
        The caller's name, for the warning.

    Returns
    -------
    numpy.ndarray
        ``A`` as a dense float array.

    Warns
    -----
    NsoptWarning
        When ``A`` is sparse with more than 2000 rows (it is densified).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from nsopt.reductions import dense_of
    >>> dense_of(sp.eye(2))
    array([[1., 0.],
           [0., 1.]])
    """
    if sp.issparse(A):
        if A.shape[0] > DENSIFY_WARN:
            warnings.warn(f"{who}: {what} is sparse and is densified (n = {A.shape[0]})",
                          NsoptWarning, stacklevel=3)
        return A.toarray()
    return np.asarray(A, dtype=float)


def box_of(problem):
    """Bounds ``(lo, hi)`` of z for the box-affine kinds: LCP [0, inf), MLCP free rows
    (-inf, inf) and complementarity rows [0, inf), Relay [lb, ub].

    Parameters
    ----------
    problem : LCP, MLCP or Relay
        The problem.

    Returns
    -------
    lo, hi : numpy.ndarray
        The lower and upper bounds of each component of z.

    Raises
    ------
    OptionError
        When ``problem`` is of another kind (not box-affine).

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import box_of
    >>> box_of(nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-1.0, -1.0], 1))
    (array([-inf,   0.]), array([inf, inf]))
    """
    n = problem.size
    if problem.kind == "lcp":
        return np.zeros(n), np.full(n, np.inf)
    if problem.kind == "mlcp":
        return np.where(np.asarray(problem.is_eq), -np.inf, 0.0), np.full(n, np.inf)
    if problem.kind == "relay":
        return np.asarray(problem.lb, float), np.asarray(problem.ub, float)
    raise OptionError(f"box_of: a {problem.kind} problem is not box-affine")


def _lcp(M, q):
    from ..problems import LCP

    return LCP(M, q)


class RelayToLCP(Reduction):
    """Relay (box VI) -> LCP on (x, y): z = T x + c (module docstring).

    A component with both bounds finite gives two LCP rows (x and the upper-bound multiplier y), a
    one-sided one gives one, a free one two (:math:`z = x^+ - x^-`). ``apply`` returns the LCP and
    the inverse data (``T``, ``c`` and the bound kinds); ``invert({"z": x}, data)`` gives
    ``{"z": z_relay}``.

    Raises
    ------
    NotApplicable
        From ``apply``, when the problem is not a Relay.

    See Also
    --------
    nsopt.reductions.Reduction : the ``apply``/``invert`` interface.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import RelayToLCP
    >>> relay = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> lcp, data = RelayToLCP().apply(relay)
    >>> lcp
    LCP(n=4, dense)
    >>> x = RelayToLCP().invert({"z": nsopt.solve(lcp, method="lemke").z}, data)
    >>> print(x["z"].round(12))
    [ 1. -1.]
    """

    source = ("relay",)
    target = "lcp"

    @staticmethod
    def matrices(M, q, lb, ub):
        """``(Ml, ql, T, c, kind, xcol, ycol)``: the LCP data, z = T x[:p] + c, and per component of
        z its bound kind (0 both finite, 1 lower, 2 upper, 3 free), first x column and y column."""
        n = q.shape[0]
        cols, sign, c = [], [], np.zeros(n)
        kind = np.zeros(n, np.int64)
        xcol = np.zeros(n, np.int64)
        ycol = -np.ones(n, np.int64)
        ypair = []
        for i in range(n):
            lo, hi = np.isfinite(lb[i]), np.isfinite(ub[i])
            xcol[i] = len(cols)
            if lo:
                c[i] = lb[i]
                cols.append(i)
                sign.append(1.0)
                if hi:
                    ycol[i] = len(ypair)
                    ypair.append((len(cols) - 1, i))
                else:
                    kind[i] = 1
            elif hi:
                c[i] = ub[i]
                cols.append(i)
                sign.append(-1.0)
                kind[i] = 2
            else:
                cols.extend([i, i])
                sign.extend([1.0, -1.0])
                kind[i] = 3
        p, m = len(cols), len(ypair)
        ycol[ycol >= 0] += p
        T = np.zeros((n, p))
        T[cols, np.arange(p)] = sign
        G = np.zeros((p, m))
        d = np.zeros(m)
        for b, (a, i) in enumerate(ypair):
            G[a, b] = 1.0
            d[b] = ub[i] - lb[i]
        Ml = np.zeros((p + m, p + m))
        Ml[:p, :p] = T.T @ M @ T
        Ml[:p, p:] = G
        Ml[p:, :p] = -G.T
        ql = np.concatenate([T.T @ (M @ c + q), d])
        return Ml, ql, T, c, kind, xcol, ycol

    def _apply(self, problem):
        M = dense_of(problem.M, "M", "RelayToLCP")
        Ml, ql, T, c, kind, xcol, ycol = self.matrices(M, np.asarray(problem.q, float),
                                                        np.asarray(problem.lb, float),
                                                        np.asarray(problem.ub, float))
        return _lcp(Ml, ql), {"T": T, "c": c, "kind": kind, "xcol": xcol, "ycol": ycol}

    def _invert(self, x, data):
        T = data["T"]
        return {"z": T @ np.asarray(x["z"], float)[:T.shape[1]] + data["c"]}

    @staticmethod
    def basis_support(basic, d):
        """Components of the relay's z strictly inside [lb, ub] for the LCP basis ``basic`` (bool
        mask of the basic LCP variables z; ``d`` the inverse data): x basic and, when both bounds
        are finite, y not basic."""
        basic = np.asarray(basic, bool)
        kind, xcol, ycol = d["kind"], d["xcol"], d["ycol"]
        F = basic[xcol].copy()
        both = kind == 0
        F[both] &= ~basic[ycol[both]]
        F[kind == 3] = True
        return F


class MLCPToLCP(Reduction):
    """MLCP -> LCP: Schur complement of A (``"schur"``), u = u+ - u- (``"split"``), or ``"auto"``
    (Schur when cond(A) < ``cond_max``). ``inverse_data["how"]`` says which was used.

    Parameters
    ----------
    reduction : {"auto", "schur", "split"}, default "auto"
        How the free variables are eliminated.
    cond_max : float, default 1e14
        With ``"auto"``, the condition number of A below which the Schur complement is used.

    Raises
    ------
    OptionError
        When ``reduction`` is not one of the three names.
    NotApplicable
        From ``apply``, when the problem is not an MLCP.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import MLCPToLCP
    >>> mlcp = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-1.0, -1.0], 1)
    >>> r = MLCPToLCP()
    >>> lcp, data = r.apply(mlcp)
    >>> lcp, data["how"]
    (LCP(n=1, dense), 'schur')
    >>> x = r.invert({"z": nsopt.solve(lcp, method="lemke").z}, data)
    >>> print(x["z"].round(12), mlcp.error(x["z"]) < 1e-14)
    [0.33333333 0.33333333] True
    """

    source = ("mlcp",)
    target = "lcp"

    def __init__(self, reduction: str = "auto", cond_max: float = 1e14):
        if reduction not in ("auto", "schur", "split"):
            raise OptionError(f"reduction must be 'auto', 'schur' or 'split', got {reduction!r}")
        self.reduction, self.cond_max = reduction, float(cond_max)

    @staticmethod
    def matrices(M, q, is_eq, reduction="auto", cond_max=1e14):
        """``(Ml, ql, data)`` for dense (M, q) with free rows/columns ``is_eq``."""
        M = np.asarray(M, float)
        q = np.asarray(q, float)
        is_eq = np.asarray(is_eq, bool)
        E, I = np.flatnonzero(is_eq), np.flatnonzero(~is_eq)
        data = {"N": q.shape[0], "E": E, "I": I}
        B, b = M[np.ix_(I, I)], q[I]
        if E.size == 0:
            data["how"] = "none"
            return B, b, data
        A, C, D, a = M[np.ix_(E, E)], M[np.ix_(E, I)], M[np.ix_(I, E)], q[E]
        use_schur = reduction == "schur"
        if reduction == "auto":
            try:
                use_schur = bool(np.linalg.cond(A) < cond_max)
            except np.linalg.LinAlgError:
                use_schur = False
        lu = factorise(A) if use_schur else None
        if lu is not None:         # (an exactly singular or non-finite A: the split)
            AiC, Aia = lu.solve(C), lu.solve(a)
            data.update(how="schur", AiC=AiC, Aia=Aia)
            return B - D @ AiC, b - D @ Aia, data
        data["how"] = "split"
        Ml = np.block([[A, -A, C], [-A, A, -C], [D, -D, B]])
        return Ml, np.concatenate([a, -a, b]), data

    def _apply(self, problem):
        M = dense_of(problem.M, "M", "MLCPToLCP")
        Ml, ql, data = self.matrices(M, problem.q, problem.is_eq, self.reduction, self.cond_max)
        return _lcp(Ml, ql), data

    def _invert(self, x, d):
        x = np.asarray(x["z"], float)
        z = np.zeros(d["N"])
        E, I = d["E"], d["I"]
        if d["how"] == "none":
            z[I] = x
        elif d["how"] == "schur":
            z[I] = x
            z[E] = -(d["AiC"] @ x + d["Aia"])
        else:
            ne = E.size
            z[E] = x[:ne] - x[ne:2 * ne]
            z[I] = x[2 * ne:]
        return {"z": z}

    @staticmethod
    def basis_support(basic, d):
        """Components of the MLCP's z off their bounds: every free one, and the basic v (``d`` the
        inverse data)."""
        basic = np.asarray(basic, bool)
        F = np.zeros(d["N"], bool)
        F[d["E"]] = True
        F[d["I"]] = basic[2 * d["E"].size:] if d["how"] == "split" else basic
        return F


class AVIToMLCP(Reduction):
    """AVI over {z: Hz >= k} -> its KKT MLCP on (z free, lambda >= 0):
    M z - H^T lambda + q = 0, 0 <= lambda ⊥ Hz - k >= 0. ``invert`` gives z; :meth:`multipliers`
    gives lambda.

    Raises
    ------
    NotApplicable
        From ``apply``, when the problem is not an AVI.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import AVIToMLCP
    >>> avi = nsopt.AVI([[2.0, 0.0], [0.0, 2.0]], [-2.0, -2.0], [[-1.0, 0.0], [0.0, -1.0]], [-0.5, -0.5])
    >>> r = AVIToMLCP()
    >>> mlcp, data = r.apply(avi)
    >>> mlcp
    MLCP(n=2, m=2)
    >>> x = nsopt.solve(mlcp, method="lemke")
    >>> print(r.invert(x, data)["z"].round(12), r.multipliers({"z": x.z}, data).round(12))
    [0.5 0.5] [1. 1.]
    """

    source = ("avi",)
    target = "mlcp"

    @staticmethod
    def matrices(M, q, H, k):
        n, m = M.shape[0], H.shape[0]
        Mm = np.block([[M, -H.T], [H, np.zeros((m, m))]])
        return Mm, np.concatenate([q, -k]), n

    def _apply(self, problem):
        from ..problems import MLCP

        M = dense_of(problem.M, "M", "AVIToMLCP")
        H = dense_of(problem.H, "H", "AVIToMLCP")
        Mm, qm, n = self.matrices(M, np.asarray(problem.q, float), H, np.asarray(problem.k, float))
        return MLCP.from_matrix(Mm, qm, n), {"n": n}

    def _invert(self, x, d):
        return {"z": np.asarray(x["z"], float)[:d["n"]]}

    @staticmethod
    def multipliers(x, d):
        """The KKT multipliers lambda from the MLCP's z = (z, lambda) (``d`` the inverse data)."""
        return np.asarray(x["z"], float)[d["n"]:]


class AVIToLCP(Chain):
    """AVI -> KKT MLCP -> LCP (``reduction`` as in :class:`MLCPToLCP`).

    Parameters
    ----------
    reduction : {"auto", "schur", "split"}, default "auto"
        How :class:`MLCPToLCP` eliminates the free variables z.
    cond_max : float, default 1e14
        As in :class:`MLCPToLCP`.

    Raises
    ------
    OptionError
        When ``reduction`` is not one of the three names.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import AVIToLCP
    >>> avi = nsopt.AVI([[2.0, 0.0], [0.0, 2.0]], [-2.0, -2.0], [[-1.0, 0.0], [0.0, -1.0]], [-0.5, -0.5])
    >>> r = AVIToLCP()
    >>> lcp, data = r.apply(avi)
    >>> r, lcp
    (Chain(AVIToMLCP -> MLCPToLCP), LCP(n=2, dense))
    >>> print(r.invert({"z": nsopt.solve(lcp, method="lemke").z}, data)["z"].round(12))
    [0.5 0.5]
    """

    def __init__(self, reduction: str = "auto", cond_max: float = 1e14):
        super().__init__([AVIToMLCP(), MLCPToLCP(reduction, cond_max)])


class FC2DToLCP(Reduction):
    """2D Coulomb friction -> LCP on x = (r_N, beta, lambda) per contact, beta = r_T + mu r_N:
    w = (u_N, u_T + lambda, 2 mu r_N - beta), u = W r + q, r = P x.

    ``apply`` returns the LCP (size 3 per contact) and the inverse data (``P``); ``invert`` gives
    ``{"r": r}``.

    Raises
    ------
    NotApplicable
        From ``apply``, when the problem is not a 2D friction-contact problem.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import FC2DToLCP
    >>> fc = nsopt.FrictionContact(2, [[1.0, 0.0], [0.0, 1.0]], [-1.0, 1.0], [0.5])
    >>> r = FC2DToLCP()
    >>> lcp, data = r.apply(fc)
    >>> lcp
    LCP(n=3, dense)
    >>> x = r.invert({"z": nsopt.solve(lcp, method="lemke").z}, data)
    >>> print(x["r"].round(12), fc.error(x["r"]) < 1e-14)
    [ 1.  -0.5] True
    """

    source = ("fc2d",)
    target = "lcp"

    @staticmethod
    def matrices(W, q, mu):
        """``(Ml, ql, P)`` with r = P x."""
        W = np.asarray(W, float)
        nc = mu.shape[0]
        a = np.arange(nc)
        P = np.zeros((2 * nc, 3 * nc))
        P[2 * a, 3 * a] = 1.0
        P[2 * a + 1, 3 * a] = -mu
        P[2 * a + 1, 3 * a + 1] = 1.0
        # Ml = R W P with R the row selection (u_N, u_T) -> rows 3a, 3a+1: by columns, not products
        WP = np.zeros((2 * nc, 3 * nc))
        WP[:, 3 * a] = W[:, 2 * a] - W[:, 2 * a + 1] * mu
        WP[:, 3 * a + 1] = W[:, 2 * a + 1]
        Ml = np.zeros((3 * nc, 3 * nc))
        Ml[3 * a] = WP[2 * a]
        Ml[3 * a + 1] = WP[2 * a + 1]
        Ml[3 * a + 1, 3 * a + 2] += 1.0
        Ml[3 * a + 2, 3 * a] = 2.0 * mu
        Ml[3 * a + 2, 3 * a + 1] = -1.0
        ql = np.zeros(3 * nc)
        ql[3 * a], ql[3 * a + 1] = q[2 * a], q[2 * a + 1]
        return Ml, ql, P

    def _apply(self, problem):
        W = dense_of(problem.W, "W", "FC2DToLCP")
        Ml, ql, P = self.matrices(W, np.asarray(problem.q, float), np.asarray(problem.mu, float))
        return _lcp(Ml, ql), {"P": P}

    def _invert(self, x, d):
        return {"r": d["P"] @ np.asarray(x["z"], float)}


def lcp_size(problem) -> int:
    """Size of the LCP that the reduction of ``problem`` builds (without building it).

    Parameters
    ----------
    problem : Problem
        A Relay, MLCP, AVI, FC2D or LCP problem (any other kind: its own size).

    Returns
    -------
    int
        The number of LCP variables.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import lcp_size
    >>> relay = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> lcp_size(relay)
    4
    """
    k = problem.kind
    if k == "relay":
        lo, hi = np.isfinite(np.asarray(problem.lb)), np.isfinite(np.asarray(problem.ub))
        return int(problem.size + np.sum(lo & hi) + np.sum(~lo & ~hi))
    if k == "mlcp":
        return problem.m
    if k == "avi":
        return int(problem.H.shape[0])
    if k == "fc2d":
        return 3 * problem.nc
    return problem.size


TO_LCP = MappingProxyType({"relay": RelayToLCP, "mlcp": MLCPToLCP, "avi": AVIToLCP, "fc2d": FC2DToLCP})
