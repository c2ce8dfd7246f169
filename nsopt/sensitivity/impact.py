r"""What is differentiated for a multiple impact (LZB, :class:`nsopt.MultipleImpact`).

The LZB outcome is not the solution of an algebraic system at the end state: it is the end point of
the Darboux–Keller dynamics integrated in the impulse of a primary contact, with events (the primary
contact changing, each contact ending its compression) and the energetic restitution measured along
the path (``formulations/multiple_impact.md``). The implicit function theorem at the end state has
nothing to apply to; the derivative of the outcome is that of the flow, along the path.

nsopt differentiates the outcome exactly where it has a closed form: every contact that receives an
impulse is **decoupled** from the others in the Delassus matrix :math:`W = HM^{-1}H^\top`
(:math:`W_{ij} = 0` between them; in particular the one-contact impact). Each such contact is then a
two-body impact with energetic restitution :math:`e_i`, whose post-impact normal velocity is
:math:`-e_i u_i^-`, so

.. math::  p_i = (1 + e_i)\,\max(0, -u_i^-)/W_{ii},\qquad v = v^- + M^{-1}H^\top p,

independent of the stiffness and of the elasticity exponent; its derivatives with respect to M, H,
v⁻ and e follow (``jvp``/``vjp``; those with respect to ``stiffness`` and ``elasticity`` are zero).
Those with respect to v⁻ and e are the outcome's. Those with respect to M and H are the outcome's
along the changes that keep the impulsed contacts decoupled (each body's mass, a contact's normal
direction changed without coupling it to another); a change that couples two of them makes the
outcome depend on the stiffness ratios through the path, which the closed form does not see, and
``jvp`` warns when it is given such a direction.
A contact with :math:`u_i^- = 0` is degenerate (listed; the rule takes :math:`p_i` constant 0 there,
``smoothed`` replaces the max by its smoothing). When contacts with an impulse are coupled,
:func:`nsopt.sensitivity` raises :class:`~nsopt.exceptions.NotApplicable` naming them: the outcome
then depends on the stiffness ratios through the path, and its derivative would need the
sensitivity of the flow with its events, which nsopt does not compute.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import NotApplicable, NsoptWarning, ProblemError
from ..linalg import cholesky
from ._kinds import _check, _check_g, check_eps, matrix_direction, variables_of, vector_direction

FIELDS = ("M", "H", "v", "restitution", "stiffness", "elasticity")


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A, float)


class ImpactSensitivity:
    """The :class:`~nsopt.sensitivity.Sensitivity` of a decoupled multiple impact (module docstring):
    the same ``jvp``, ``vjp``, ``jacobian``, ``degenerate``, ``states``, ``rule``, ``smoothed``."""

    kind = "multiple-impact"
    fields = FIELDS
    variables = ("v", "p")
    singular = False
    rule = "a contact with zero approach velocity (u_i = 0) keeps p_i = 0 (the branch of no impulse)"

    def __init__(self, problem, eps=0.0):
        self.problem = problem
        self.M, self.Hd = _dense(problem.M), _dense(problem.H)
        self.Mf = cholesky(self.M)                          # (M symmetric positive definite: the problem checks it)
        self.B = self.Mf.solve(self.Hd.T) if self.Hd.size else np.zeros(self.Hd.T.shape)   # M⁻¹Hᵀ, n x m
        self.W = np.einsum("in,ni->i", self.Hd, self.B)    # W_ii
        self.u = self.Hd @ np.asarray(problem.v, float)
        self.e = np.asarray(problem.restitution, float)
        self.smoothing = eps
        scale = max(float(np.max(np.abs(self.u), initial=0.0)), 1e-300)
        ea = eps * scale
        t = -self.u
        if ea:
            self.s = 0.5 * (t + np.sqrt(t * t + 4 * ea * ea))      # smoothed max(0, -u)
            self.ds = 0.5 * (1 + t / np.sqrt(t * t + 4 * ea * ea))  # its derivative in -u
        else:
            self.s = np.maximum(t, 0.0)
            self.ds = (t > 0).astype(float)
        self.p = (1 + self.e) * self.s / self.W
        self.vplus = np.asarray(problem.v, float) + self.B @ self.p
        deg = np.flatnonzero(np.abs(self.u) <= 1e-12 * scale) if not ea else np.zeros(0, np.int64)
        self.degenerate = {"contacts": deg} if deg.size else {}
        self.states = {"contacts": np.array(["impact" if x > 0 else "no impact" for x in self.p], dtype=object)}

    @property
    def differentiable(self):
        return not self.degenerate

    def point(self):
        return {"v": self.vplus, "p": self.p}

    def jvp(self, **d):
        _check(d, FIELDS, "MultipleImpact")
        pb, n, m = self.problem, self.M.shape[0], self.Hd.shape[0]
        v0 = np.asarray(pb.v, float)
        dM = _dense(matrix_direction(d["M"], pb.M, "M", "MultipleImpact")) if d.get("M") is not None else np.zeros((n, n))
        dH = _dense(matrix_direction(d["H"], pb.H, "H", "MultipleImpact")) if d.get("H") is not None else np.zeros((m, n))
        dv = vector_direction(d["v"], n, "v", "MultipleImpact") if d.get("v") is not None else np.zeros(n)
        de = vector_direction(d["restitution"], m, "restitution", "MultipleImpact") \
            if d.get("restitution") is not None else np.zeros(m)
        for k in ("stiffness", "elasticity"):
            if d.get(k) is not None:
                vector_direction(d[k], m, k, "MultipleImpact")
        du = dH @ v0 + self.Hd @ dv
        act = np.flatnonzero(self.p > 0)
        if act.size > 1 and (d.get("M") is not None or d.get("H") is not None):
            dWf = dH @ self.B + self.B.T @ dH.T - self.B.T @ dM @ self.B
            off = dWf[np.ix_(act, act)] - np.diag(np.diag(dWf[np.ix_(act, act)]))
            if np.max(np.abs(off)) > 1e-12 * max(float(np.max(np.abs(dWf))), 1e-300):
                warnings.warn("MultipleImpact sensitivity: this change of M or H couples contacts that receive an "
                              "impulse; the derivative given is the decoupled closed form's, not the LZB "
                              "outcome's (nsopt/sensitivity/impact.py)", NsoptWarning, stacklevel=2)
        dW = 2 * np.einsum("in,ni->i", dH, self.B) - np.einsum("ni,nk,ki->i", self.B, dM, self.B)
        dp = de * self.s / self.W - (1 + self.e) * self.ds * du / self.W - self.p * dW / self.W
        a = self.B @ self.p
        dvp = dv + self.Mf.solve(dH.T @ self.p - dM @ a) + self.B @ dp
        return {"v": dvp, "p": dp}

    def vjp(self, **g):
        pb = self.problem
        n, m = self.M.shape[0], self.Hd.shape[0]
        g = _check_g(g, self.variables, {"v": n, "p": m}, "MultipleImpact")
        gv, gp = g.get("v", np.zeros(n)), g.get("p", np.zeros(m))
        v0 = np.asarray(pb.v, float)
        gamma = gp + self.B.T @ gv                 # cotangent of p
        beta = self.Mf.solve(gv)                   # (M symmetric)
        a = self.B @ self.p
        kap = gamma / self.W
        grad_e = kap * self.s
        cu = -kap * (1 + self.e) * self.ds         # cotangent of u = Hv
        rho = -gamma * self.p / self.W             # cotangent of W_ii
        gM = -np.outer(beta, a) - (self.B * rho) @ self.B.T
        gH = np.outer(self.p, beta) + np.outer(cu, v0) + 2 * rho[:, None] * self.B.T
        out = {"M": gM, "H": gH, "v": gv + self.Hd.T @ cu, "restitution": grad_e,
               "stiffness": np.zeros(m), "elasticity": np.zeros(m)}
        for k in ("M", "H"):
            F = getattr(pb, k)
            if sp.issparse(F):
                from ._kinds import outer_on

                G = outer_on(F, np.ones(F.shape[0]), np.ones(F.shape[1]))
                G.data = out[k][G.nonzero()] if G.nnz else G.data
                out[k] = G
        return out

    def jacobian(self, wrt):
        if not isinstance(wrt, str) or wrt not in FIELDS:
            raise ProblemError("wrt", f"jacobian needs one of {', '.join(FIELDS)}, got {wrt!r}", "MultipleImpact")
        from ._jacobian import jacobian_by_vjp

        return jacobian_by_vjp(self.vjp, {"v": self.M.shape[0], "p": self.Hd.shape[0]}, getattr(self.problem, wrt), wrt)

    def smoothed(self, eps=1e-6):
        return ImpactSensitivity(self.problem, check_eps(eps))

    def __repr__(self):
        deg = ", ".join(f"{len(v)} {k}" for k, v in self.degenerate.items()) or "none"
        return f"Sensitivity(kind='multiple-impact', contacts={self.Hd.shape[0]}, degenerate: {deg}, decoupled)"


def impact_sensitivity(problem, solution, tol=1e-6):
    """The :class:`ImpactSensitivity` of a multiple-impact solution, after checking that the
    contacts with an impulse are decoupled (else NotApplicable) and that the solution is the closed
    form's (to ``tol``, relative: the LZB discretisation error is O(impulse_step)).

    What ``nsopt.sensitivity(problem, solution)`` returns for a :class:`nsopt.MultipleImpact`.

    Parameters
    ----------
    problem : nsopt.MultipleImpact
        The impact.
    solution : nsopt.Solution or dict
        Its solution (``v``, ``p``), e.g. from method ``lzb``.
    tol : float, default 1e-6
        The accepted relative difference between the solution and the closed form.

    Returns
    -------
    ImpactSensitivity
        ``jvp``, ``vjp``, ``jacobian``, ``smoothed`` as :class:`~nsopt.sensitivity.Sensitivity`.

    Raises
    ------
    NotApplicable
        When two contacts with an impulse are coupled, or a contact not approaching received an
        impulse (the outcome depends on the LZB path and has no closed form).

    Examples
    --------
    A ball of mass 1 hitting the ground at 2 m/s with an energetic restitution of 0.5:

    >>> import nsopt
    >>> p = nsopt.MultipleImpact([[1.0]], [[1.0]], [-2.0], restitution=0.5, stiffness=1e6)
    >>> s = nsopt.sensitivity(p, nsopt.solve(p, method="lzb"))
    >>> s.jvp(v=[1.0])                      # v+ = -e v-, p = (1 + e) m |v-|
    {'v': array([-0.5]), 'p': array([-1.5])}
    >>> s.jacobian("restitution")["v"]
    array([[2.]])
    """
    x = variables_of(problem, solution)
    s = ImpactSensitivity(problem)
    Wfull = problem.delassus()
    act = np.flatnonzero(s.p > 0)
    if act.size > 1:
        Wa = Wfull[np.ix_(act, act)]
        off = np.abs(Wa - np.diag(np.diag(Wa)))
        if np.max(off) > 1e-12 * np.max(np.abs(np.diag(Wa))):
            i, j = np.unravel_index(int(np.argmax(off)), off.shape)
            raise NotApplicable(
                f"contacts {int(act[i])} and {int(act[j])} both receive an impulse and are coupled "
                f"(W[{int(act[i])}, {int(act[j])}] = {Wa[i, j]:.3g}): the LZB outcome then depends on the path "
                "(stiffness ratios, events) and nsopt does not differentiate the flow; see "
                "nsopt/sensitivity/impact.py")
    p = x.get("p")
    if p is not None:
        top = max(float(np.max(np.abs(s.p), initial=0.0)), float(np.max(np.abs(p), initial=0.0)), 1e-300)
        s.error = float(np.max(np.abs(p - s.p), initial=0.0)) / top     # O(impulse_step) for lzb
        engaged = np.flatnonzero((p > tol * top) & (s.p == 0))
        if engaged.size:
            raise NotApplicable(f"contact {int(engaged[0])} received an impulse along the LZB path although it was "
                                f"not approaching: the outcome has no closed form and nsopt does not "
                                f"differentiate the flow (nsopt/sensitivity/impact.py)")
    return s
