r"""Sensitivities of a solution of a one-step problem: :func:`sensitivity` and :class:`Sensitivity`.

The implicit function theorem on the semismooth system of the kind at its solution (see
``formulations/sensitivity.md``): with the laws linearised as :math:`A\,dx + B\,dy + e = 0` and
:math:`dy = \mathcal M\,dx + d\mathcal M\,x + d\bar q`,

.. math::  K\,dx = -\big(B\,(d\mathcal M\,x + d\bar q) + e\big),\qquad K = A + B\mathcal M,

K factorised once (:class:`._factor.Factor`) for every direction (``jvp``) and, transposed, for the
adjoint (``vjp``): :math:`\lambda = K^{-\top}(g_x + \mathcal M^\top g_y)`,
:math:`p = g_y - B^\top\lambda`, the gradient of a matrix field is :math:`p\,x^\top` (on its
sparsity pattern when it is sparse) and that of q is p.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import NsoptWarning, ProblemError
from ..problems._base import matvec
from . import _laws as L
from ._factor import Factor
from ._jacobian import jacobian_by_vjp
from ._kinds import Model, model_of, outer_on

SMOOTH_NEWTON_ITER = 60


def _max_abs(A):
    return float(np.max(np.abs(A.data if sp.issparse(A) else A), initial=0.0)) or 1.0


def _k_matrix(state, Mext):
    if sp.issparse(Mext):
        return (state.A + state.B @ Mext).tocsr()
    BM = state.B @ np.asarray(Mext)
    return np.asarray(BM) + state.A.toarray()


class Sensitivity:
    r"""Derivatives of a solution with respect to its problem's data (made by :func:`sensitivity`).

    Build it with :func:`nsopt.sensitivity`, not directly.

    Attributes
    ----------
    kind : the problem's kind.
    fields : the data it differentiates (``jvp`` keywords, ``vjp`` results).
    variables : the solution's variables (``jvp`` results, ``vjp`` keywords).
    degenerate : dict of the rows (``"rows"``: indices into the primal variable), contacts
        (``"contacts"``), constraints (AVI, ``"constraints"``) or blocks (GMP, ``"blocks"``) where the
        solution is not differentiable (no strict complementarity); empty when it is.
    states : the same keys, the state of every row / contact (``"at lower bound"``, ``"free"``,
        ``"take-off"``, ``"stick"``, ``"slide"``...).
    rule : how the generalized Jacobian element is chosen at degenerate rows and contacts.
    singular : True when the linearised system is singular (the solution is not locally unique; see
        ``nsopt.diagnose``): ``jvp``/``vjp`` then return the minimum-norm least-squares solutions
        (dense systems) or those of the proximally regularised one (sparse systems, never densified:
        ``factor.shift``, see :mod:`nsopt.sensitivity._factor`).
    smoothing : 0, or the parameter ε of :meth:`smoothed`.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.FrictionContact(3, [[1.0, 0.1, 0.0], [0.1, 1.2, 0.0], [0.0, 0.0, 1.2]], [-1.0, -2.0, 0.5], [0.3])
    >>> s = nsopt.sensitivity(p, nsopt.solve(p, method="nsn-ac", tol=1e-12))
    >>> s.fields, s.variables, list(s.states["contacts"])
    (('W', 'q', 'mu'), ('r', 'u'), ['slide'])
    >>> s.differentiable
    True

    On an LCP, directional derivatives (:meth:`jvp`), a gradient (:meth:`vjp`) and a Jacobian
    (:meth:`jacobian`):

    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.sensitivity(p, nsopt.solve(p, method="lemke"))
    >>> s.jvp(M=[[1.0, 0.0], [0.0, 0.0]])["z"].round(6)      # dz = -M^-1 dM z
    array([-0.888889,  0.444444])
    >>> g = s.vjp(z=[1.0, 1.0])                 # gradient of z1 + z2
    >>> g["q"].round(6)
    array([-0.333333, -0.333333])
    >>> g["M"].shape
    (2, 2)
    >>> s.jacobian("q")["z"].round(6)           # -M^-1: both rows are active
    array([[-0.666667,  0.333333],
           [ 0.333333, -0.666667]])
    """

    def __init__(self, model: Model, state, tol, smoothing=0.0, rel_eps=0.0):
        self.model, self.state, self.tol = model, state, tol
        self.kind = model.problem.kind
        self.fields, self.variables = model.fields, model.variables
        self.problem = model.problem
        self.smoothing = rel_eps
        self.rule = L.RULE if not smoothing else (f"smoothed laws (eps = {rel_eps:g} relative, "
                                                  f"{smoothing:.3g} absolute): no branch is chosen")
        self._K = _k_matrix(state, model.Mext)
        self.factor = Factor(self._K, state.B, _max_abs(model.Mext))
        self.singular = self.factor.singular
        self.degenerate, self.states = self._describe()

    # ---------------------------------------------------------------- what the solution is
    def _describe(self):
        m, st = self.model, self.state
        deg, states = {}, {}
        box = m.laws.box
        kind = self.kind
        if box.size and not st.smoothing:
            constrained = np.isin(box, m.law_rows)
            names = np.array([L.STATE_NAMES[("box", int(s))] for s in st.box_state], dtype=object)
            if kind == "avi":
                sel = box >= m.n
                deg["constraints"] = box[sel & st.box_degenerate] - m.n
                states["constraints"] = names[sel]
            elif kind == "gmp":
                deg["rows"] = box[constrained & st.box_degenerate]
                states["rows"] = dict(zip(box.tolist(), names.tolist()))
            elif constrained.any():
                deg["rows"] = box[constrained & st.box_degenerate]
                states["rows"] = names
        if m.laws.fc and not st.smoothing:
            if kind == "gmp":
                blocks, bstates = [], {}
                for k, w in enumerate(m.where):
                    if isinstance(w, tuple):
                        dim, c = w
                        if st.fc_degenerate[dim][c]:
                            blocks.append(k)
                        bstates[k] = L.STATE_NAMES[("fc", int(st.fc_state[dim][c]))]
                deg["blocks"] = np.asarray(blocks, dtype=np.int64)
                states["blocks"] = bstates
            else:
                (dim, _), = m.laws.fc.items()
                deg["contacts"] = np.flatnonzero(st.fc_degenerate[dim])
                states["contacts"] = np.array([L.STATE_NAMES[("fc", int(s))] for s in st.fc_state[dim]],
                                              dtype=object)
        return {k: v for k, v in deg.items() if len(v)}, states

    @property
    def differentiable(self) -> bool:
        """True when no row or contact is degenerate (the solution map is differentiable there, as
        far as the laws go; a singular system is reported by ``singular``)."""
        return not self.degenerate

    # ---------------------------------------------------------------- forward and adjoint
    def _law_e(self, law):
        """e = the laws' own data directions mapped to the residual rows."""
        m, st = self.model, self.state
        e = np.zeros(m.x.shape[0])
        if "lb" in law:
            e[m.laws.box] += st.box_dlb * law["lb"][m.laws.box] if law["lb"].shape[0] == m.x.shape[0] \
                else st.box_dlb * law["lb"]
        if "ub" in law:
            e[m.laws.box] += st.box_dub * law["ub"][m.laws.box] if law["ub"].shape[0] == m.x.shape[0] \
                else st.box_dub * law["ub"]
        for dim, dmu in law.get("mu", {}).items():
            starts = m.laws.fc[dim][0]
            idx = starts[:, None] + np.arange(dim)[None, :]
            e[idx] += st.fc_mu_col[dim] * dmu[:, None]
        return e

    def jvp(self, **d) -> dict:
        """Directional derivatives of the solution's variables for a change ``d`` of the data (see the
        example of :class:`Sensitivity`).

        Parameters
        ----------
        **d : array_like or scipy.sparse matrix
            A direction for any of :attr:`fields` (the others do not move): matrices dense or
            sparse, vectors of the field's size.

        Returns
        -------
        dict
            The variables' directions, e.g. ``{"z": dz, "w": dw}`` (``r, u``; ``v, r, u``).

        Raises
        ------
        ProblemError
            When a keyword is not a field of the problem or has the wrong shape.
        """
        m = self.model
        dy0 = m.forward(d)
        law = m.law_directions(d)
        rhs = -(self.state.B @ dy0 + self._law_e(law))
        dx = self.factor.solve(rhs)
        dy = matvec(m.Mext, dx) + dy0
        return m.outputs(dx, dy, d)

    def vjp(self, **g) -> dict:
        """Gradients of :math:`\\sum_v g_v \\cdot v` with respect to every datum (the adjoint; see the
        example of :class:`Sensitivity`).

        Parameters
        ----------
        **g : array_like
            Cotangents of the solution's variables (keywords of :attr:`variables`, e.g. ``z``,
            ``w``); a variable not given has a zero cotangent.

        Returns
        -------
        dict
            ``{field: gradient}`` for every field of :attr:`fields`, with the field's own name and
            shape; sparse on the field's pattern where the field is sparse (never densified).

        Raises
        ------
        ProblemError
            When a keyword is not a variable of the solution or has the wrong size.
        """
        from ._kinds import _check_g

        m = self.model
        g = _check_g(g, m.variables, m.sizes(), m.owner)
        gx, gy, direct = m.outputs_t(g)
        lam = self.factor.solve_t(gx + matvec(m.Mext.T, gy))
        p = gy - self.state.B.T @ lam
        grads = m.backward(p)
        law = self._law_grads(lam)
        grads.update(m.law_gradients(law))
        for k, v in direct.items():
            grads[k] = grads[k] + v
        return {k: grads[k] for k in m.fields}

    def _law_grads(self, lam):
        m, st = self.model, self.state
        out = {}
        box = m.laws.box
        n = m.x.shape[0]
        if box.size:
            glb, gub = np.zeros(n), np.zeros(n)
            glb[box] = -st.box_dlb * lam[box]
            gub[box] = -st.box_dub * lam[box]
            if self.kind == "gmp":
                out["lb"], out["ub"] = glb[box], gub[box]
            else:
                out["lb"], out["ub"] = glb, gub
        out["mu"] = {}
        for dim, (starts, _) in m.laws.fc.items():
            idx = starts[:, None] + np.arange(dim)[None, :]
            out["mu"][dim] = -np.sum(st.fc_mu_col[dim] * lam[idx], axis=1)
        return out

    def jacobian(self, wrt: str) -> dict:
        """Dense Jacobians of every variable with respect to one field (for small problems; see the
        example of :class:`Sensitivity`).

        Parameters
        ----------
        wrt : str
            One of :attr:`fields`.

        Returns
        -------
        dict
            ``{var: array}`` of shape ``(len(var), *field.shape)`` for a dense field,
            ``(len(var), nnz)`` for a sparse one (its stored entries in CSR order); one :meth:`vjp`
            per entry of the variable.

        Raises
        ------
        ProblemError
            When ``wrt`` is not a field of the problem.
        """
        m = self.model
        if wrt not in m.fields or wrt == "blocks":
            raise ProblemError(wrt, f"jacobian needs one of {', '.join(f for f in m.fields if f != 'blocks')}",
                               m.owner)
        return jacobian_by_vjp(self.vjp, m.sizes(), getattr(self.problem, wrt), wrt)

    # ---------------------------------------------------------------- smoothing
    def smoothed(self, eps: float = 1e-6) -> "Sensitivity":
        r"""The derivative of the solution of the *smoothed* problem :math:`\Phi_\varepsilon = 0`
        (``formulations/sensitivity.md``: the natural maps with :math:`\max(0, t)` replaced by
        :math:`(t + \sqrt{t^2 + 4\varepsilon^2})/2`), at its solution :math:`x_\varepsilon` found by
        Newton from this solution. ``eps`` is relative to the largest entry of the primal variable;
        the smoothed solution is within O(eps) of the solution and, where the solution is
        differentiable, its derivative tends to the exact one as eps -> 0; at a degenerate row it
        tends to an element of Clarke's generalized Jacobian (e.g. the average of the two branches of
        an LCP row with z = w = 0). ``.point()`` gives the smoothed solution's variables.

        Parameters
        ----------
        eps : float, default 1e-6
            The smoothing parameter, relative to the largest entry of the primal variable (> 0).

        Returns
        -------
        Sensitivity
            The sensitivity of the smoothed problem at its solution (``smoothing`` set,
            ``smoothed_residual`` the residual its Newton loop reached).

        Raises
        ------
        ProblemError
            When ``eps`` is not a positive number.

        Examples
        --------
        A degenerate row (z2 = w2 = 0): the smoothed derivative averages the two branches.

        >>> import nsopt
        >>> p = nsopt.LCP([[1.0, 0.0], [0.0, 1.0]], [-1.0, 0.0])
        >>> s = nsopt.sensitivity(p, {"z": [1.0, 0.0]})
        >>> s.degenerate
        {'rows': array([1])}
        >>> float(s.smoothed(1e-8).jvp(q=[0.0, -1.0])["z"][1].round(4))
        0.5
        """
        if not (isinstance(eps, (int, float)) and np.isfinite(eps) and eps > 0):
            raise ProblemError("eps", f"must be a positive number, got {eps!r}", "Sensitivity.smoothed")
        m = self.model
        rows = m.law_rows
        sx, sy = L.scales(m.x[rows], m.y[rows], m.qext[rows])
        gamma, ea = sx / sy, eps * sx
        x = m.x.copy()
        st, phi = L.smoothed_state(m.laws, x, matvec(m.Mext, x) + m.qext, gamma, ea)
        nrm = float(np.linalg.norm(phi))
        for _ in range(SMOOTH_NEWTON_ITER):
            if nrm <= 1e-14 * sx * max(1.0, np.sqrt(x.shape[0])):
                break
            f = Factor(_k_matrix(st, m.Mext), st.B, _max_abs(m.Mext))
            dx = f.solve(-phi)
            t = 1.0
            while t > 1e-8:
                xt = x + t * dx
                pt = L.smoothed_residual(m.laws, xt, matvec(m.Mext, xt) + m.qext, gamma, ea)
                nt = float(np.linalg.norm(pt))
                if nt <= (1 - 1e-4 * t) * nrm:
                    break
                t *= 0.5
            if t <= 1e-8:
                break
            x = xt
            st, phi = L.smoothed_state(m.laws, x, matvec(m.Mext, x) + m.qext, gamma, ea)
            nrm = float(np.linalg.norm(phi))
        s = Sensitivity(m.at(x), st, self.tol, smoothing=ea, rel_eps=eps)
        s.smoothed_residual = nrm
        return s

    def point(self) -> dict:
        """The variables at which the derivative is taken (the solution, or the smoothed one).

        Returns
        -------
        dict
            ``{variable: array}``, e.g. ``{"z": z, "w": w}``.
        """
        return dict(self.model.point())

    def __repr__(self):
        deg = ", ".join(f"{len(v)} {k}" for k, v in self.degenerate.items()) or "none"
        return (f"Sensitivity(kind={self.kind!r}, n={self.model.x.shape[0]}, degenerate: {deg}, "
                f"singular={self.singular}" + (f", smoothing={self.smoothing:g}" if self.smoothing else "") + ")")


def sensitivity(problem, solution, *, tol_degenerate: float = L.TOL_DEGENERATE) -> Sensitivity:
    r"""Derivatives of ``solution`` (a :class:`nsopt.Solution`, a dict of the problem's variables,
    or an array of its primal variable) with respect to ``problem``'s data.

    Returns a :class:`Sensitivity` with ``jvp(**d)`` (directional derivatives), ``vjp(**g)``
    (gradients of every datum) and ``jacobian(wrt)``; computed by the implicit function theorem on
    the kind's semismooth system at the solution, one factorisation for every direction and the
    adjoint. Rows or contacts without strict complementarity are listed in ``.degenerate`` and
    differentiated by the documented branch (``.rule``); ``.smoothed(eps)`` gives the derivative of
    a smoothed problem instead. ``tol_degenerate``: the relative size below which a force, a gap or a
    velocity counts as zero when the states are classified.

    Kinds: LCP, MLCP, Relay, Equality, AVI, FrictionContact (2D/3D), GlobalFrictionContact (2D/3D),
    GenericMechanical, MultipleImpact (see :mod:`nsopt.sensitivity.impact` for what is
    differentiated there).

    Parameters
    ----------
    problem : nsopt.Problem
        The problem (any kind above).
    solution : nsopt.Solution, dict or array_like
        Its solution: a Solution, ``{variable: array}``, or the primal variable (z, r, ...).
    tol_degenerate : float, default ``TOL_DEGENERATE``
        In (0, 1): the relative size below which a force, a gap or a velocity counts as zero.

    Returns
    -------
    Sensitivity
        ``jvp``, ``vjp``, ``jacobian``, ``smoothed``; ``degenerate``, ``states``, ``rule``,
        ``singular``, and ``error`` (the solution's error measure, recomputed).

    Raises
    ------
    ProblemError
        When ``tol_degenerate`` is out of range, or the solution's variables have the wrong sizes.

    Warns
    -----
    NsoptWarning
        When the solution's error exceeds 1e-6: the derivative is then that of the laws' states at
        that point, which may not be those of a solution.

    See Also
    --------
    nsopt.diagnose : is the solution unique.
    nsopt.jax.solve : the same derivatives inside JAX.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.sensitivity(p, nsopt.solve(p, method="lemke"))
    >>> np.round(s.jvp(q=[1.0, 0.0])["z"], 6)          # dz = -M^-1 dq
    array([-0.666667,  0.333333])
    """
    if problem.kind == "multiple-impact":
        from .impact import impact_sensitivity

        return impact_sensitivity(problem, solution)
    if not (isinstance(tol_degenerate, (int, float)) and 0 < tol_degenerate < 1):
        raise ProblemError("tol_degenerate", f"must be a number in (0, 1), got {tol_degenerate!r}", "sensitivity")
    model = model_of(problem, solution, tol_degenerate)
    rows = model.law_rows
    sx, sy = L.scales(model.x[rows], model.y[rows], model.qext[rows])
    state = L.linearise(model.laws, model.x, model.y, sx, sy, tol_degenerate)
    s = Sensitivity(model, state, tol_degenerate)
    err = float(problem.error_of(problem.complete(variables_for_error(problem, model))))
    s.error = err
    if not np.isfinite(err) or err > 1e-6:
        warnings.warn(f"sensitivity: the solution's error is {err:.3g}; the derivative is that of the laws' "
                      f"states at this point, which may not be those of a solution", NsoptWarning, stacklevel=2)
    return s


def variables_for_error(problem, model):
    pt = model.point()
    return {k: v for k, v in pt.items() if k in problem.variable_sizes()}


__all__ = ["Sensitivity", "outer_on", "sensitivity"]
