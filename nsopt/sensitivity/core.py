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

from ..exceptions import NotDifferentiable, NsoptWarning, OptionError, ProblemError
from ..monitor import Monitor
from ..problems._base import matvec
from . import _laws as L
from ._factor import CONSISTENT_RTOL, RANK_RTOL, Factor
from ._jacobian import jacobian_by_vjp
from ._kinds import Model, check_eps, model_of, outer_on

SMOOTH_NEWTON_ITER = 60
SINGULAR_RULES = ("raise", "warn", "min-norm")     # what jvp / vjp do with a derivative that is not determined
SELECT_STATIONARY_RTOL = 1e-8    # a selection is the least-norm point of its piece when |N^T x| <= this * |x|


def _short(idx) -> str:
    idx = [int(i) for i in idx]
    return ", ".join(map(str, idx[:12])) + (f", ... ({len(idx)} in all)" if len(idx) > 12 else "")


def _free_message(free, where):
    names = ", ".join(free)
    verb = "is" if len(free) == 1 else "are"
    return (f"{names} {verb} not unique here: {'it moves' if len(free) == 1 else 'they move'} along {where} "
            f"through this solution, so {'its' if len(free) == 1 else 'their'} derivative is not determined")


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
    singular : True when the linearised system K is singular (singular values below
        ``RANK_RTOL`` = 1e-9 of the largest, the threshold ``nsopt.diagnose`` uses too): the solution
        is not locally unique (see ``nsopt.diagnose``), or not differentiable along every direction.
    null_space : an orthonormal basis (n x k) of K's null space: the directions the solution can move
        in at first order (None for a large sparse singular K, whose null space is not computed).
    free : dict variable -> boolean mask of the entries the null space moves (their derivative is
        not determined; None: not known, every entry counts as free).
    on_singular : what :meth:`jvp` and :meth:`vjp` do where a derivative is not determined (a free
        entry, a direction that leaves the solution's piece, a cotangent on free entries): "raise"
        (:class:`~nsopt.exceptions.NotDifferentiable`, naming the free rows or contacts), "warn"
        (an :class:`~nsopt.exceptions.NsoptWarning` and NaN in those entries, the determined ones
        exact) or "min-norm" (the minimum-norm least-squares solution of the linearised system,
        silently: what the time-stepping derivative uses, where only the unique velocities matter).
    selection : True when the solution is ``select="min-norm"``'s least-norm point of its piece: the
        free entries then have the derivative of that selection along the right-hand side (q, the
        bounds, mu; ``formulations/sensitivity.md``), not along the matrix.
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

    def __init__(self, model: Model, state, tol, smoothing=0.0, rel_eps=0.0, singular="raise", selected=False):
        self.model, self.state, self.tol = model, state, tol
        self.kind = model.problem.kind
        self.fields, self.variables = model.fields, model.variables
        self.problem = model.problem
        self.smoothing = rel_eps
        self.on_singular = singular
        self.rule = L.RULE if not smoothing else (f"smoothed laws (eps = {rel_eps:g} relative, "
                                                  f"{smoothing:.3g} absolute): no branch is chosen")
        self._K = _k_matrix(state, model.Mext)
        self.factor = Factor(self._K, state.B, _max_abs(model.Mext))
        self.singular = self.factor.singular
        self.null_space = self.factor.null
        self.degenerate, self.states = self._describe()
        self.free = self._free()
        self._sel = self._selection_data(selected)
        self.selection = self._sel is not None

    # ---------------------------------------------------------------- where the derivative is determined
    def _moves(self, N):
        """{variable: (size, k)} the motion of each variable along the columns of N."""
        m = self.model
        cols = {v: [] for v in m.variables}
        for j in range(N.shape[1]):
            o = m.outputs(N[:, j], matvec(m.Mext, N[:, j]), {})
            for v in m.variables:
                cols[v].append(o[v])
        sizes = m.sizes()
        return {v: np.column_stack(c) if c else np.zeros((sizes[v], 0)) for v, c in cols.items()}

    def _free(self):
        m = self.model
        sizes = m.sizes()
        if not self.singular:
            return {v: np.zeros(sizes[v], bool) for v in m.variables}
        N = self.null_space
        if N is None:
            return {v: None for v in m.variables}
        ym = max(_max_abs(m.Mext), 1e-300)
        out = {}
        for v, mv in self._moves(N).items():
            scale = 1.0 if v in ("z", "r", "v") else ym
            out[v] = np.max(np.abs(mv), axis=1, initial=0.0) > 1e3 * RANK_RTOL * scale
        return out

    def _selection_data(self, selected):
        """True when the solution is a least-norm selection whose derivative this gives along the
        right-hand side (formulations/sensitivity.md): a singular dense K, box laws or contacts that
        stick or are open (A and B constant on the piece), strict complementarity (at a degenerate law
        the face the selection lies on may change), the primal variable the unknown, and x orthogonal
        to K's null space (the least-norm point of its piece); None otherwise."""
        from ._kinds import DirectModel

        m, st = self.model, self.state
        if not (selected and self.singular and self.null_space is not None and isinstance(m, DirectModel)
                and not self.degenerate and not st.smoothing):
            return None
        if any(np.any(s == L.SLIDE) for s in st.fc_state.values()):
            return None
        x = m.x
        if np.max(np.abs(self.null_space.T @ x), initial=0.0) > SELECT_STATIONARY_RTOL * max(np.max(np.abs(x)), 1e-300):
            return None
        return True

    def _free_units(self, mov):
        from ._local import free_units

        return {k: v for k, v in free_units(self.model, self.kind, mov).items() if len(v)}

    def _refuse(self, out, where, undetermined, why):
        """Apply ``on_singular`` to the result ``out`` of ``where`` (jvp / vjp) whose entries
        ``undetermined`` ({name: mask or None = all}) are not determined, for the reason ``why``."""
        bad = {k: (np.ones(np.shape(out[k])[:1] or (1,), bool) if msk is None else msk)
               for k, msk in undetermined.items() if msk is None or np.any(msk)}
        if not bad or self.on_singular == "min-norm":
            return out
        N = self.null_space
        mov = (np.max(np.abs(N), axis=1) > 1e3 * RANK_RTOL) if N is not None and N.shape[1] else None
        units = self._free_units(mov) if mov is not None else {}
        where_free = "; ".join(f"free {k}: {_short(v)}" for k, v in units.items()) or \
            "free rows or contacts not computed (a large sparse system)"
        k = "?" if N is None else N.shape[1]
        msg = (f"{why} (the linearised system is singular, a null space of dimension {k}; {where_free}). "
               f"{where}: pass singular='warn' for the determined entries (NaN elsewhere), singular='min-norm' "
               f"for the minimum-norm solution of the linearised system, or differentiate the solution of "
               f"nsopt.solve(..., select='min-norm'); see nsopt.diagnose")
        if self.on_singular == "raise":
            raise NotDifferentiable(msg)
        warnings.warn(msg, NsoptWarning, stacklevel=3)
        res = dict(out)
        for name, msk in bad.items():
            a = res[name]
            if sp.issparse(a):
                a = a.toarray()
            a = np.array(a, dtype=float, copy=True)
            if a.ndim and msk.shape[0] == a.shape[0]:
                a[msk] = np.nan
            else:
                a[...] = np.nan
            res[name] = a
        return res

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
        leaves = self.singular and self.factor.residual(dx, rhs) > CONSISTENT_RTOL
        dy = matvec(m.Mext, dx) + dy0
        out = m.outputs(dx, dy, d)
        if not self.singular:
            return out
        if leaves:
            return self._refuse(out, "jvp", {v: None for v in out},
                                f"this direction leaves the solution's piece (the linearised system has no "
                                f"solution for it: relative residual {self.factor.residual(dx, rhs):.2g}): the "
                                f"solution may jump, and no variable has a derivative along it here")
        free = {v: msk for v, msk in self.free.items() if msk is None or msk.any()}
        if self._sel is not None:
            if d.get(m.matrix) is None:
                return out                 # the selection's derivative along the right-hand side: K^+ rhs
            return self._refuse(out, "jvp", free, _free_message(free, "the solution set") + "; the least-norm "
                                "selection's derivative is given along the right-hand side only (q, bounds, mu), not "
                                f"along {m.matrix}, which turns the solution set")
        return self._refuse(out, "jvp", free, _free_message(free, "the solution set"))

    def vjp(self, _only=None, **g) -> dict:
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
        gp = gx + matvec(m.Mext.T, gy)
        lam = self.factor.solve_t(gp)
        p = gy - self.state.B.T @ lam
        grads = m.backward(p)
        law = self._law_grads(lam)
        grads.update(m.law_gradients(law))
        for k, v in direct.items():
            grads[k] = grads[k] + v
        out = {k: grads[k] for k in m.fields}
        if not self.singular:
            return out
        N = self.null_space
        gscale = max(float(np.max(np.abs(gp), initial=0.0)), 1e-300)
        if N is not None:
            touched = float(np.max(np.abs(N.T @ gp), initial=0.0)) / gscale > CONSISTENT_RTOL
        else:
            touched = self.factor.residual(lam, gp, trans=True) > CONSISTENT_RTOL
        if not touched:
            return out
        named = [k for k in g if np.any(g[k]) and (self.free[k] is None or np.any(self.free[k] & (g[k] != 0)))]
        if self._sel is not None:          # the selection: the gradients of the right-hand side only
            if _only is not None and m.matrix not in _only:
                return out
            return self._refuse(out, "vjp", {m.matrix: None},
                                f"the cotangent weighs entries that move along the solution set ({', '.join(named)}): "
                                f"the least-norm selection's gradient is given for the right-hand side (q, bounds, mu), "
                                f"not for {m.matrix}, which turns the solution set")
        return self._refuse(out, "vjp", {k: None for k in out},
                            f"the cotangent weighs entries that move along the solution set "
                            f"({', '.join(named) or 'through the coupling of the variables'}): the loss is not "
                            f"differentiable here")

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
        if not isinstance(wrt, str) or wrt not in m.fields or wrt == "blocks":
            raise ProblemError("wrt", f"jacobian needs one of {', '.join(f for f in m.fields if f != 'blocks')}, "
                                      f"got {wrt!r}", m.owner)
        return jacobian_by_vjp(lambda **g: self.vjp(_only=(wrt,), **g), m.sizes(), getattr(self.problem, wrt), wrt)

    # ---------------------------------------------------------------- smoothing
    def smoothed(self, eps: float = 1e-6) -> Sensitivity:
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
            When ``eps`` is not a real number in (0, 1] (a bool is not a number here), or the smoothed
            Newton loop meets a singular system.

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
        from ..solvers.newton_loop import newton_loop    # (here: nsopt.solvers brings the reductions with it)

        eps = check_eps(eps)
        m = self.model
        sx, sy = m.scales()
        system = _SmoothedSystem(m, sx / sy, eps * sx, eps)
        mon = Monitor(1e-14 * sx * max(1.0, np.sqrt(m.x.shape[0])), max_iter=SMOOTH_NEWTON_ITER)
        x, _, _ = newton_loop(system, m.x.copy(), mon)      # (monotone: the last iterate is the best)
        st, nrm = system.state(x)
        ea = system.ea
        s = Sensitivity(m.at(x), st, self.tol, smoothing=ea, rel_eps=eps, singular=self.on_singular)
        s.smoothed_residual = nrm
        s.error = getattr(self, "error", np.nan)
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


def sensitivity(problem, solution, *, tol_degenerate: float = L.TOL_DEGENERATE, singular: str = "raise",
                max_error: float = 1e-6) -> Sensitivity:
    r"""Derivatives of ``solution`` (a :class:`nsopt.Solution`, a dict of the problem's variables,
    or an array of its primal variable) with respect to ``problem``'s data.

    Returns a :class:`Sensitivity` with ``jvp(**d)`` (directional derivatives), ``vjp(**g)``
    (gradients of every datum) and ``jacobian(wrt)``; computed by the implicit function theorem on
    the kind's semismooth system at the solution, one factorisation for every direction and the
    adjoint. Rows or contacts without strict complementarity are listed in ``.degenerate`` and
    differentiated by the documented branch (``.rule``); ``.smoothed(eps)`` gives the derivative of
    a smoothed problem instead.

    **Where the solution is not unique** (the linearised system is singular: ``.singular``, the same
    threshold as :func:`nsopt.diagnose`) a derivative is returned only where it is determined: the
    entries the solution set does not move (``.free``: u for a symmetric PSD W, w for a symmetric PSD
    M), along directions that keep the solution's piece (the linearised system has a solution). The
    other entries have no derivative, unless the solution is ``select="min-norm"``'s least-norm point
    (pass the Solution that ``nsopt.solve(..., select="min-norm")`` returned): they then have the
    derivative of that selection (``.selection``). What happens where a derivative is not
    determined is ``singular`` (module docstring of ``formulations/sensitivity.md``, "Where the
    solution is not unique").

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
    singular : {"raise", "warn", "min-norm"}, default "raise"
        Where a derivative is not determined: raise :class:`~nsopt.exceptions.NotDifferentiable`
        naming the free rows or contacts; warn and return NaN in those entries (the determined
        ones exact); or return the minimum-norm least-squares solution of the linearised system
        without a word (one element of the set of derivatives of the piece, e.g. for a quantity the
        caller knows to be unique).
    max_error : float, default 1e-6
        Positive (``np.inf`` accepted): the largest error measure of a point accepted as a solution.

    Returns
    -------
    Sensitivity
        ``jvp``, ``vjp``, ``jacobian``, ``smoothed``; ``degenerate``, ``states``, ``rule``,
        ``singular``, ``free``, ``selection``, and ``error`` (the solution's error measure, recomputed).

    Raises
    ------
    ProblemError
        When ``problem`` is not an nsopt problem, ``tol_degenerate`` is out of range, the solution's
        variables have the wrong sizes or are not real numbers, or its error exceeds ``max_error``
        (it is not a solution of this problem: pass ``max_error=np.inf`` for the derivative of the
        laws' states at that point anyway).
    OptionError
        When ``singular`` or ``max_error`` is not one of its values.

    Warns
    -----
    NsoptWarning
        With ``max_error`` raised above 1e-6, when the solution's error exceeds 1e-6: the derivative
        is then that of the laws' states at that point, which may not be those of a solution.

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

    Where the solution is not unique (z1 + z2 = 1): w's derivative exists, z's only for the
    least-norm selection.

    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])
    >>> s = nsopt.sensitivity(p, {"z": [0.3, 0.7]}, singular="warn")
    >>> import warnings; warnings.simplefilter("ignore")
    >>> {k: v.round(12) + 0.0 for k, v in s.jvp(q=[-1.0, -1.0]).items()}
    {'z': array([nan, nan]), 'w': array([0., 0.])}
    >>> sel = nsopt.solve(p, method="lemke", select="min-norm")
    >>> nsopt.sensitivity(p, sel).jvp(q=[-1.0, -1.0])["z"]      # z = (-q1/2, -q1/2) along q1 = q2
    array([0.5, 0.5])
    """
    from ..problems._base import Problem
    from ..result import Solution

    if not isinstance(problem, Problem):
        raise ProblemError("problem", f"must be an nsopt problem (LCP, FrictionContact, ...), got "
                                      f"{type(problem).__name__}", "sensitivity")
    if singular not in SINGULAR_RULES:
        raise OptionError(f"sensitivity: singular must be one of {list(SINGULAR_RULES)}, got {singular!r}")
    if not (isinstance(max_error, (int, float, np.integer, np.floating)) and not isinstance(max_error, bool)
            and max_error > 0):
        raise OptionError(f"sensitivity: max_error must be a positive number, got {max_error!r}")
    if problem.kind == "multiple-impact":
        from .impact import impact_sensitivity

        return impact_sensitivity(problem, solution)
    if not (isinstance(tol_degenerate, (int, float, np.integer, np.floating)) and not isinstance(tol_degenerate, bool)
            and 0 < tol_degenerate < 1):
        raise ProblemError("tol_degenerate", f"must be a number in (0, 1), got {tol_degenerate!r}", "sensitivity")
    model = model_of(problem, solution, tol_degenerate)
    err = float(problem.error_of(problem.complete(variables_for_error(problem, model))))
    if not np.isfinite(err) or err > max_error:
        raise ProblemError("solution", f"is not a solution of this problem: its error is {err:.3g} (> max_error = "
                                       f"{max_error:g}); pass max_error=np.inf for the derivative of the laws' "
                                       f"states at this point anyway", type(problem).__name__)
    sx, sy = model.scales()
    state = L.linearise(model.laws, model.x, model.y, sx, sy, tol_degenerate)
    sel = isinstance(solution, Solution) and bool(solution.info.get("select", {}).get("guaranteed"))
    s = Sensitivity(model, state, tol_degenerate, singular=singular, selected=sel)
    s.error = err
    if err > 1e-6:
        warnings.warn(f"sensitivity: the solution's error is {err:.3g}; the derivative is that of the laws' "
                      f"states at this point, which may not be those of a solution", NsoptWarning, stacklevel=2)
    return s


def variables_for_error(problem, model):
    pt = model.point()
    return {k: v for k, v in pt.items() if k in problem.variable_sizes()}


__all__ = ["Sensitivity", "outer_on", "sensitivity"]


class _SmoothedSystem:
    r"""The smoothed system :math:`\Phi_\varepsilon(x) = 0` of :meth:`Sensitivity.smoothed` as a system of the one
    globalised Newton loop (:func:`nsopt.solvers.newton_loop.newton_loop`): the Newton direction from the
    sensitivity's own factorisation of :math:`K` (:class:`~nsopt.sensitivity._factor.Factor`), a backtracking on
    :math:`\|\Phi_\varepsilon\|` (:math:`\|\Phi(x + t d)\| \le (1 - 10^{-4} t)\|\Phi(x)\|`, t halved down to
    1e-8), the error :math:`\|\Phi_\varepsilon\|`; a failed search stops the loop (no fallback)."""

    polish = None
    wscale = 1.0

    def __init__(self, m, gamma, ea, eps):
        self.m, self.gamma, self.ea, self.eps = m, gamma, ea, eps
        self._at = None

    def state(self, x):
        r"""(the smoothed laws' state at x, \|Φ_ε(x)\|), kept for the direction at the same x."""
        if self._at is None or self._at[0] is not x:
            m = self.m
            st, phi = L.smoothed_state(m.laws, x, matvec(m.Mext, x) + m.qext, self.gamma, self.ea)
            self._at = (x, st, phi, float(np.linalg.norm(phi)))
        return self._at[1], self._at[3]

    def error(self, x):
        return self.state(x)[1]

    def variables(self, x):
        return {"x": x}

    def linearise(self, x):
        return 0.5 * self.state(x)[1] ** 2

    def direction(self, x, shift):
        st, _ = self.state(x)
        m = self.m
        try:
            return Factor(_k_matrix(st, m.Mext), st.B, _max_abs(m.Mext)).solve(-self._at[2])
        except np.linalg.LinAlgError as e:
            raise ProblemError("eps", f"the smoothed system at eps = {self.eps:g} cannot be solved ({e})",
                               "Sensitivity.smoothed") from None

    def search(self, x, d, f0, fref, line_search, regularised):
        m, nrm, t = self.m, np.sqrt(2.0 * f0), 1.0
        while t > 1e-8:
            xt = x + t * d
            nt = float(np.linalg.norm(L.smoothed_residual(m.laws, xt, matvec(m.Mext, xt) + m.qext, self.gamma,
                                                          self.ea)))
            if nt <= (1 - 1e-4 * t) * nrm:
                return True, t, 0.5 * nt * nt
            t *= 0.5
        return False, 0.0, f0

    @staticmethod
    def move(x, t, d):
        return x + t * d

    @staticmethod
    def fallback(x):
        return None

    @staticmethod
    def why(k):
        return f"the smoothed Newton line search failed after {k} iteration(s)"
