r"""Friction-contact reductions: global → local (:class:`GlobalToLocal`) and generic mechanical
problems with their equality blocks substituted (:class:`SubstituteEqualities`).

Both keep their structural part (factorisations, Schur complements) in the problem's caches keyed on
the matrices, so a problem made by ``replace(q=...)`` reduces at the cost of a few solves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..linalg import factorise
from ..problems import GenericMechanical
from ..problems._base import matvec
from ._base import Reduction


class GlobalToLocal(Reduction):
    r"""Global friction contact → local friction contact by condensing the global velocity.

    .. math::
        M v = q + H r,\ u = H^\top v + b \quad\Longrightarrow\quad
        u = W r + q_{loc},\quad W = H^\top M^{-1} H,\ q_{loc} = H^\top M^{-1} q + b,

    (:meth:`GlobalFrictionContact.local`, sparse when H is). Inverse: :math:`v = M^{-1}(q + H r)`,
    :math:`u = H^\top v + b`. The local problem has the same Coulomb law on (r, u); its error
    measure differs from the global one by the normalisation.
    """

    source = ("gfc2d", "gfc3d")
    target = "fc"

    def _apply(self, problem):
        return problem.local(), problem

    def _invert(self, x, problem):
        r = np.asarray(x["r"], dtype=float)
        v = problem.v(r)
        return {"r": r, "v": v, "u": problem.u(v)}


class SubstituteEqualities(Reduction):
    r"""A generic mechanical problem with its equality blocks eliminated (Siconos' ``SUBS_EQ``).

    With E the rows of the equality blocks and O the others,
    :math:`M_{EE} r_E + M_{EO} r_O + q_E = 0` gives :math:`r_E = -M_{EE}^{-1}(q_E + M_{EO} r_O)`, and
    the blocks of O form the generic mechanical problem on the Schur complement

    .. math::  S = M_{OO} - M_{OE} M_{EE}^{-1} M_{EO},\qquad
               q_S = q_O - M_{OE} M_{EE}^{-1} q_E .

    Accepts problems with at least one equality block and one other block, an invertible
    (condition number below 1e12) :math:`M_{EE}` and at most ``max_size`` unknowns (the
    complement is dense). S and the LU of :math:`M_{EE}` are computed once per (M, blocks).
    """

    source = ("gmp",)
    target = "gmp"
    max_size = 3000

    def accepts(self, problem) -> bool:
        return super().accepts(problem) and self._schur(problem) is not None

    def _schur(self, problem):
        def make():
            blocks = problem.blocks
            if not any(b.kind == "equality" for b in blocks) or all(b.kind == "equality" for b in blocks):
                return None
            if problem.size > self.max_size:
                return None
            eq = np.zeros(problem.size, dtype=bool)
            for b, s in problem.slices():
                eq[s] = b.kind == "equality"
            E, O = np.flatnonzero(eq), np.flatnonzero(~eq)
            M = problem.M.toarray() if sp.issparse(problem.M) else np.asarray(problem.M)
            MEE, MEO, MOE, MOO = M[np.ix_(E, E)], M[np.ix_(E, O)], M[np.ix_(O, E)], M[np.ix_(O, O)]
            if np.linalg.cond(MEE) > 1e12:
                return None
            lu = factorise(MEE)
            if lu is None:
                return None
            S = MOO - MOE @ lu.solve(MEO)
            red = GenericMechanical(S, np.zeros(O.size), [b for b in blocks if b.kind != "equality"])
            return red, E, O, lu, MEO, MOE
        return problem.cached("subs_eq_schur", make, on=("M", "blocks"))

    def _apply(self, problem):
        base, E, O, lu, MEO, MOE = self._schur(problem)
        q = np.asarray(problem.q)
        qE = q[E]
        red = base.replace(q=q[O] - MOE @ lu.solve(qE))
        return red, (problem, E, O, lu, MEO, qE)

    def _invert(self, x, data):
        problem, E, O, lu, MEO, qE = data
        rO = np.asarray(x["r"], dtype=float)
        r = np.empty(problem.size)
        r[O] = rO
        r[E] = -lu.solve(qE + matvec(MEO, rO))
        return {"r": r}


__all__ = ["GlobalToLocal", "SubstituteEqualities"]
