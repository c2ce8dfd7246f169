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

import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import NsoptWarning
from ..problems._base import matvec
from ._factor import RANK_RTOL
from ._laws import TOL_DEGENERATE
from ._local import BRANCH_MAX as BRANCH_LIMIT
from ._local import free_units

DIAGNOSE_DENSE_MAX = 3000   # the null space is computed (dense SVD) up to this many unknowns


class Diagnosis:
    """What :func:`diagnose` finds (print it for a readable report).

    Attributes
    ----------
    kind, n : the problem's kind and the size of the linearised system.
    unique : dict variable -> True / False (None: not computed), e.g. ``{"r": False, "u": True}``.
    dimension : the dimension of the solution set near the solution, the largest of its pieces
        through it (None when not computed: larger than ``DIAGNOSE_DENSE_MAX`` unknowns and
        singular, or more than ``BRANCH_MAX`` pieces).
    rank : the rank of the linearised system (of the branch ``nsopt.sensitivity`` takes).
    pieces : the pieces through the solution (:class:`nsopt.sensitivity._local.Piece`: the state of
        each degenerate law, the piece's dimension and span); one piece when no law is degenerate.
    error : the solution's error measure.
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
            pcs = self.pieces or []
            if len(pcs) > 1:
                lines.append(f"  solution set near this solution: dimension {self.dimension} (the largest of the "
                             f"{len(pcs)} pieces through it, one per choice of state at the degenerate laws)")
                for pc in pcs[:8]:
                    lines.append("    piece " + ", ".join(f"{k[0]} {k[1]} {v}" for k, v in pc.states.items())
                                 + f": dimension {pc.dimension}")
                if len(pcs) > 8:
                    lines.append(f"    ... ({len(pcs)} pieces in all)")
            else:
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


def _check_number(value, name, lo, hi, owner="diagnose"):
    """``value`` as a float in (lo, hi), else OptionError naming it."""
    from ..exceptions import OptionError

    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not ok or not np.isfinite(value) or not lo < float(value) < hi:
        raise OptionError(f"{owner}: {name} must be a real number in ({lo:g}, {hi:g}), got {value!r}")
    return float(value)


def diagnose(problem, solution, *, tol_degenerate: float = TOL_DEGENERATE, rank_tol: float = RANK_RTOL,
             max_error: float = 1e-6) -> Diagnosis:
    r"""Whether ``solution`` is the only solution of ``problem`` near it (for each of its variables),
    the dimension of the solution set near it counting every piece through it, and which rows or
    contacts are free.

    Every law in a strict state keeps it near the solution; a *degenerate* law (no strict
    complementarity: z = w = 0 in an LCP row, a contact with zero force and zero normal velocity, a
    contact on the cone's edge with zero velocity) may leave it in several states, each a piece of
    the solution set through the solution. ``diagnose`` enumerates those pieces (up to
    ``nsopt.sensitivity._local.BRANCH_MAX``), computes each one's dimension to first order (the cone
    of its linearised equations and inequalities, :mod:`nsopt.sensitivity._local`) and reports the
    largest: exact for the box laws (LCP, MLCP, Relay, AVI, GMP's box blocks), never under-counted
    for friction. A variable is unique when no piece moves it.

    ``rank_tol``: singular values of the row-equilibrated linearised system below ``rank_tol`` times
    the largest count as zero; its default is the threshold :func:`nsopt.sensitivity` uses to call
    the system singular (``nsopt.sensitivity._factor.RANK_RTOL`` = 1e-9), so that both agree. Kinds:
    every kind :func:`nsopt.sensitivity` differentiates, except MultipleImpact.

    Parameters
    ----------
    problem : nsopt.Problem
        The problem.
    solution : nsopt.Solution, dict or array_like
        Its solution (as for :func:`nsopt.sensitivity`).
    tol_degenerate : float, default ``TOL_DEGENERATE``
        In (0, 1): the relative size below which a force, a gap or a velocity counts as zero.
    rank_tol : float, default 1e-9
        In (0, 1): the relative size below which a singular value of the linearised system counts as
        zero.
    max_error : float, default 1e-6
        Positive: the largest error measure (the kind's own, ``problem.error``) of a point accepted
        as a solution; above it the point is not a solution and nothing can be said of its
        uniqueness.

    Returns
    -------
    Diagnosis
        ``unique`` per variable, ``dimension``, ``rank``, ``free``, ``pieces``, ``states``,
        ``degenerate``, ``null_space``, ``error``; ``print`` it for a report with advice.

    Raises
    ------
    OptionError
        When ``tol_degenerate``, ``rank_tol`` or ``max_error`` is not a real number in its range.
    ProblemError
        When the solution's variables have the wrong sizes or types, or its error exceeds
        ``max_error`` (it is not a solution of this problem).
    NotApplicable
        For a MultipleImpact (its outcome is the end of the LZB process, not a point of a solution
        set) or a kind nsopt does not differentiate.

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

    At an end of the segment (Lemke's answer) the piece leaving through the degenerate row counts:

    >>> d = nsopt.diagnose(p, nsopt.solve(p, method="lemke"))
    >>> d.unique, d.dimension, [pc.dimension for pc in d.pieces]
    ({'z': False, 'w': True}, 1, [0, 1])
    """
    from ..exceptions import NotApplicable, ProblemError
    from ..problems._base import Problem
    from ._local import pieces as local_pieces
    from .core import sensitivity

    if not isinstance(problem, Problem):
        raise ProblemError("problem", f"must be an nsopt problem (LCP, FrictionContact, ...), got "
                                      f"{type(problem).__name__}", "diagnose")
    tol_degenerate = _check_number(tol_degenerate, "tol_degenerate", 0.0, 1.0)
    rank_tol = _check_number(rank_tol, "rank_tol", 0.0, 1.0)
    max_error = _check_number(max_error, "max_error", 0.0, np.inf)
    if problem.kind == "multiple-impact":
        raise NotApplicable("diagnose: a MultipleImpact's outcome is the end point of the LZB process (an ODE in "
                            "the impulse, one outcome for given data), not a point of a solution set; nothing to "
                            "diagnose (nsopt.sensitivity differentiates it where it has a closed form)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NsoptWarning)
        s = sensitivity(problem, solution, tol_degenerate=tol_degenerate, max_error=np.inf)
    if not np.isfinite(s.error) or s.error > max_error:
        raise ProblemError("solution", f"is not a solution of this problem: its error is {s.error:.3g} "
                                       f"(> max_error = {max_error:g}); diagnose says nothing of a point that is "
                                       f"not a solution", type(problem).__name__)
    m = s.model
    n = m.x.shape[0]
    names = m.variables
    K = s._K
    sx, sy = m.scales()
    pcs = local_pieces(m, s.state, K, sx, sy, tol_degenerate, rank_tol) if n <= DIAGNOSE_DENSE_MAX else None
    if pcs is None and n > DIAGNOSE_DENSE_MAX and not s.singular and not s.degenerate:
        from ._local import Piece

        pcs = [Piece({}, 0, np.zeros((n, 0)))]      # nonsingular, strict: the only solution near here
    rank = s.factor.rank if s.factor.rank >= 0 else None
    unique, free = {}, {}
    N = None
    if pcs is None:
        unique = {v: None for v in names}
        dimension = None
    else:
        dimension = max(pc.dimension for pc in pcs)
        spans = [pc.span for pc in pcs if pc.dimension]
        N = np.linalg.svd(np.hstack(spans), full_matrices=False)[0] if spans else np.zeros((n, 0))
        if spans:
            r = np.linalg.matrix_rank(np.hstack(spans), tol=1e-8)
            N = N[:, :r]
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
        free = free_units(s.model, s.kind, mov)
    what = _what(problem)
    if pcs is None:
        advice = ("the solution set could not be computed here (too large and singular, or more than "
                  f"{BRANCH_LIMIT} pieces through the point)")
    elif all(unique.values()):
        advice = ("this is the only solution near here (every piece through it is the point itself)" if s.degenerate
                  else "this is the only solution near here (the linearised system is nonsingular)")
    else:
        advice = ("several solutions: nsopt.solve(..., select='min-norm') returns the one of least norm "
                  "(see Solution.info['select'] for the set it selects over and whether it is guaranteed)")
    return Diagnosis(kind=problem.kind, what=what, n=n, unique=unique, dimension=dimension, rank=rank, free=free,
                     states=_counts(s.states), degenerate=s.degenerate, null_space=N, advice=advice,
                     pieces=pcs, error=s.error, sensitivity=s)


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


__all__ = ["Diagnosis", "diagnose"]
