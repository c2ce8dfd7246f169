r"""Is a solution the only one? :func:`diagnose` and its :class:`Diagnosis`.

The solutions near a solution x are, to first order, :math:`x + N y` with N a basis of the null
space of the linearised system :math:`K = A + B\mathcal M` of :mod:`.core` (for an LCP: the
directions :math:`d` with :math:`d_i = 0` where :math:`w_i > 0` and :math:`(Md)_i = 0` where
:math:`z_i > 0`, i.e. the null space of the principal block :math:`M_{JJ}` of the rows with
:math:`z_i > 0`; for friction contact: the null space of the active block of W, the stick contacts'
rows, with the sliding and open contacts' constraints). Each variable of the solution is unique when
that null space moves it by nothing (u = Wr + q moves by :math:`WN`, zero when W is symmetric
positive semidefinite and the null directions are those of W)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..problems._base import matvec
from ._laws import TOL_DEGENERATE

DIAGNOSE_DENSE_MAX = 3000   # the null space is computed (dense SVD) up to this many unknowns


class Diagnosis:
    """What :func:`diagnose` finds (print it for a readable report).

    Attributes
    ----------
    kind, n : the problem's kind and the size of the linearised system.
    unique : dict variable -> True / False (None: not computed), e.g. ``{"r": False, "u": True}``.
    dimension : the dimension of the solution set near the solution (None when not computed:
        larger than ``DIAGNOSE_DENSE_MAX`` unknowns and singular).
    rank : the rank of the linearised system.
    free : the rows (``"rows"``), contacts (``"contacts"``), blocks or constraints whose values can
        move along the solution set (empty when unique).
    states : counts of the states of the rows and contacts.
    degenerate : the rows / contacts without strict complementarity (from the sensitivity).
    null_space : the basis N (n x dimension) when computed.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    >>> d = nsopt.diagnose(p, {"z": [0.5, 0.5]})
    >>> d.is_unique
    False
    >>> print(d)                                             # doctest: +ELLIPSIS
    Diagnosis of a lcp solution (...)
      states: ...
      z: NOT unique: it moves along the solution set (dimension 1)
      w: unique
    ...
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def is_unique(self) -> bool | None:
        """True when every variable is unique (None when that could not be decided)."""
        vals = list(self.unique.values())
        if any(v is None for v in vals):
            return None
        return all(vals)

    def __repr__(self):
        u = ", ".join(f"{k}: {'unique' if v else 'not unique' if v is not None else '?'}" for k, v in self.unique.items())
        return f"Diagnosis(kind={self.kind!r}, {u}, dimension={self.dimension})"

    def __str__(self):
        lines = [f"Diagnosis of a {self.kind} solution ({self.what}, {self.n} unknowns in the linearised system)"]
        if self.states:
            lines.append("  states: " + "; ".join(f"{k}: " + ", ".join(f"{c} {s}" for s, c in v.items())
                                                for k, v in self.states.items()))
        for var, u in self.unique.items():
            if u is None:
                lines.append(f"  {var}: uniqueness not decided (system too large for the null space)")
            elif u:
                lines.append(f"  {var}: unique")
            else:
                lines.append(f"  {var}: NOT unique: it moves along the solution set (dimension {self.dimension})")
        if self.dimension is not None:
            lines.append(f"  solution set near this solution: dimension {self.dimension} "
                         f"(linearised system of rank {self.rank} of {self.n})")
        for k, v in self.free.items():
            if len(v):
                lines.append(f"  free {k} (their values are not determined): {_ranges(v)}")
        if self.degenerate:
            for k, v in self.degenerate.items():
                lines.append(f"  degenerate {k} (no strict complementarity; the set may have more pieces "
                             f"through them): {_ranges(v)}")
        else:
            lines.append("  degenerate rows/contacts: none (strict complementarity holds)")
        lines.append(f"  {self.advice}")
        return "\n".join(lines)


def _ranges(idx) -> str:
    idx = [int(i) for i in idx]
    if len(idx) > 20:
        return ", ".join(map(str, idx[:20])) + f", ... ({len(idx)} in all)"
    return ", ".join(map(str, idx))


def _counts(states):
    out = {}
    for k, v in states.items():
        vals = list(v.values()) if isinstance(v, dict) else list(v)
        c = {}
        for s in vals:
            c[s] = c.get(s, 0) + 1
        out[k] = c
    return out


def diagnose(problem, solution, *, tol_degenerate: float = TOL_DEGENERATE, rank_tol: float = 1e-9) -> Diagnosis:
    r"""Whether ``solution`` is the only solution of ``problem`` (for each of its variables), the
    dimension of the solution set near it, and which rows or contacts are free.

    ``rank_tol``: singular values of the linearised system below ``rank_tol`` times the largest are
    taken as zero (and a variable is unique when the null space moves it by less than that,
    relatively). Kinds: every kind :func:`nsopt.sensitivity` differentiates, except MultipleImpact.

    Parameters
    ----------
    problem : nsopt.Problem
        The problem.
    solution : nsopt.Solution, dict or array_like
        Its solution (as for :func:`nsopt.sensitivity`).
    tol_degenerate : float, default ``TOL_DEGENERATE``
        The relative size below which a force, a gap or a velocity counts as zero.
    rank_tol : float, default 1e-9
        The relative size below which a singular value of the linearised system counts as zero.

    Returns
    -------
    Diagnosis
        ``unique`` per variable, ``dimension``, ``rank``, ``free``, ``states``, ``degenerate``,
        ``null_space``; ``print`` it for a report with advice.

    Raises
    ------
    ProblemError
        When the problem's kind is not supported or the solution's variables have the wrong sizes.

    See Also
    --------
    nsopt.solve : ``select="min-norm"`` picks one solution of a non-unique problem.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])     # z1 + z2 = 1, z >= 0: a segment
    >>> d = nsopt.diagnose(p, {"z": [0.5, 0.5]})
    >>> d.unique, d.dimension
    ({'z': False, 'w': True}, 1)
    """
    from .core import sensitivity

    s = sensitivity(problem, solution, tol_degenerate=tol_degenerate)
    m = s.model
    n = m.x.shape[0]
    names = m.variables
    K = s._K
    N = None
    if n <= DIAGNOSE_DENSE_MAX:
        Kd = K.toarray() if sp.issparse(K) else np.asarray(K)
        if n:
            _, sv, Vt = np.linalg.svd(Kd)
            top = sv[0] if sv.size else 0.0
            keep = sv > rank_tol * top if top > 0 else np.zeros(sv.shape, bool)
            rank = int(keep.sum())
            N = Vt[rank:].T
        else:
            rank, N = 0, np.zeros((0, 0))
        dimension = n - rank
    else:
        rank = s.factor.rank if s.factor.rank >= 0 else None
        dimension = (n - rank) if (rank is not None and not s.singular) else None
        if not s.singular:
            N = np.zeros((n, 0))
    unique, free = {}, {}
    if N is None:
        unique = {v: None for v in names}
    else:
        dy = np.column_stack([matvec(m.Mext, N[:, j]) for j in range(N.shape[1])]) if N.shape[1] else np.zeros((n, 0))
        moves = {v: [] for v in names}
        for j in range(N.shape[1]):
            o = m.outputs(N[:, j], dy[:, j], {})
            for v in names:
                moves[v].append(o[v])
        pt = m.point()
        for v in names:
            M_v = np.column_stack(moves[v]) if moves[v] else np.zeros((pt[v].shape[0], 0))
            # relative to the size of the map from x to v (1 for x itself; ||M|| for y)
            scale = 1.0 if v in ("z", "r", "v") else max(_norm(m.Mext), 1e-300)
            unique[v] = bool(np.max(np.abs(M_v), initial=0.0) <= 1e3 * rank_tol * scale)
        mov = np.max(np.abs(N), axis=1) > 1e3 * rank_tol if N.shape[1] else np.zeros(n, bool)
        free = _free_units(s, mov)
    what = _what(problem)
    if N is None:
        advice = "the solution set could not be computed here (too large and singular)"
    elif all(unique.values()):
        advice = "this is the only solution near here (the linearised system is nonsingular)"
    else:
        advice = ("several solutions: nsopt.solve(..., select='min-norm') returns the one of least norm "
                  "(a reproducible choice)")
    return Diagnosis(kind=problem.kind, what=what, n=n, unique=unique, dimension=dimension, rank=rank, free=free,
                     states=_counts(s.states), degenerate=s.degenerate, null_space=N, advice=advice,
                     sensitivity=s)


def _norm(A):
    if sp.issparse(A):
        return float(np.sqrt((A.multiply(A)).sum())) if A.nnz else 0.0
    return float(np.linalg.norm(A))


def _what(p):
    nc = getattr(p, "nc", None)
    if p.kind in ("fc2d", "fc3d", "gfc2d", "gfc3d"):
        return f"{nc} contacts"
    if p.kind == "gmp":
        return f"{len(p.blocks)} blocks"
    return f"n = {p.size}"


def _free_units(s, mov):
    """The rows / contacts / constraints / blocks touched by the null space."""
    m = s.model
    kind = s.kind
    out = {}
    if kind in ("lcp", "mlcp", "relay", "equality"):
        out["rows"] = np.flatnonzero(mov)
    elif kind == "avi":
        out["rows"] = np.flatnonzero(mov[:m.n])
        out["multipliers"] = np.flatnonzero(mov[m.n:])
    elif kind in ("fc2d", "fc3d", "gfc2d", "gfc3d"):
        (dim, (starts, _)), = m.laws.fc.items()
        out["contacts"] = np.flatnonzero(mov[starts[:, None] + np.arange(dim)].any(axis=1))
        if kind.startswith("gfc"):
            out["velocities"] = np.flatnonzero(mov[:m.nd])
    elif kind == "gmp":
        out["blocks"] = np.asarray([k for k, rows in enumerate(m.block_rows) if mov[rows].any()], dtype=np.int64)
    return out


__all__ = ["Diagnosis", "diagnose"]
