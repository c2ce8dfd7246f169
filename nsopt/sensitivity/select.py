r"""Which solution: ``nsopt.solve(..., select=...)`` and :func:`select` (``formulations/select.md``).

Rules (:data:`SELECT_RULES`):

``"min-norm"``
    The solution of least Euclidean norm of the primal variable (z, or r) among a set of solutions
    that ``Solution.info["select"]["set"]`` names, computed independently of the solution the method
    returned wherever that set is convex (``guaranteed: True``):

    1. **The whole solution set, convex**: a problem with box laws (LCP, MLCP, Relay, AVI,
       GenericMechanical without friction blocks) whose matrix is symmetric positive semidefinite,
       or an LCP / MLCP whose matrix is monotone (:math:`M + M^\top` PSD). Its solution set is the
       polyhedron :math:`\{x \in C : S(x - \bar x) = 0,\ c^\top(x - \bar x) \le 0\}` (every
       solution shares Sx and :math:`c^\top x`; for a nonsymmetric monotone LCP, with
       :math:`w \ge 0`, :math:`w_E = 0` added), the same set whichever solution :math:`\bar x` defines
       it: least-norm point by Clarabel, then polished on its face.
    2. **The solutions with the returned velocities**, for friction with a symmetric PSD W (global
       problems: their local W): the Coulomb solutions with the local velocities :math:`\bar u` are
       the convex set of minimisers of the cone program at De Saxcé's shift frozen at
       :math:`\bar u`. Guaranteed when the velocities are unique near the selected point (no piece
       of the solution set through it moves u: every contact sticks or takes off there, or the
       solution is locally unique), so that set is the solution set near the selection.
    3. **The whole solution set, enumerated**: LCP, MLCP and Relay with any matrix, and 2D friction,
       when the solution set has at most ``_pieces.ENUM_MAX`` (1024) state combinations: its pieces
       (polyhedra) are enumerated and the least-norm point of their union returned (an exact
       least-norm solution; its cost grows with that number, a few seconds at the limit).

    Elsewhere (3D friction whose velocities are not unique, e.g. sliding contacts whose normal
    forces are indeterminate; larger nonsymmetric problems) the set is not convex and no
    least-norm point is certified (``guaranteed: False``): the rule applied is a **descent along the
    solution set**, from the least-norm point of set 2 (or from the method's solution), by
    Gauss-Newton projections, each step the least-norm point of the solution set's linearisation
    at the current point (:math:`x \leftarrow K^+(Kx - F(x))`, K and F the laws' linearisation of
    :mod:`.core`), to a point where the norm is stationary along the set: the same point from every
    method whose solution lies on the same connected piece with one local minimum of the norm.
    An Equality problem: the pseudo-inverse solution. A MultipleImpact: the method's outcome.

    **Accuracy**: the selected solution is polished (Newton corrections of least norm, which do not
    move it along the set) until its error measure meets the solve's ``tol``; if it cannot, the
    method's solution is kept, ``guaranteed: False``, and ``why`` says so. ``status`` stays solved.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ..exceptions import OptionError
from ..problems._base import matvec
from . import _laws as L
from ._factor import RANK_RTOL, null_space
from ._kinds import model_of
from ._laws import TOL_DEGENERATE
from ._pieces import quadratic_program

SELECT_RULES = MappingProxyType({"min-norm": "the solution of least norm of the primal variable (z or r): see formulations/select.md"})
RANK_DENSE_MAX = 5000      # S = L L^T by a dense eigendecomposition up to this size (else Sx = S x̄ itself)
DESCENT_MAX = 600          # the descent along the solution set (dense SVDs at every step) up to this many unknowns
CHECK_MAX = 3000           # whether the velocities are unique near a selection: checked up to this many unknowns
DESCENT_ITER = 100
POLISH_MAX = 1000          # a selection of up to this many unknowns is polished to round-off (else to tol)


def check_select(select):
    if select is None or select in SELECT_RULES:
        return select
    raise OptionError(f"select must be None or one of {list(SELECT_RULES)}, got {select!r}")


def select(solution, rule: str = "min-norm"):
    """The solution chosen by ``rule`` among the solutions of ``solution.problem`` (see the module
    docstring); what ``nsopt.solve(..., select=rule)`` calls after the method.

    Parameters
    ----------
    solution : nsopt.Solution
        A solution (its ``problem`` is the problem).
    rule : str, default "min-norm"
        One of :data:`SELECT_RULES`.

    Returns
    -------
    nsopt.Solution
        A new solution, its error recomputed and within the solve's ``tol``; ``info["select"]``
        says what was done: ``rule``, ``set`` (the set selected over), ``guaranteed`` (True: the
        least-norm point of that set, computed independently of the method's solution), ``how`` or
        ``why`` not, ``error_before``, ``time``.

    Raises
    ------
    OptionError
        When ``rule`` is not one of :data:`SELECT_RULES`.

    Examples
    --------
    >>> import nsopt
    >>> p = nsopt.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0])     # z1 + z2 = 1, z >= 0
    >>> s = nsopt.solve(p, method="lemke", select="min-norm")
    >>> s.z.round(6), s.info["select"]["guaranteed"], s.info["select"]["set"]
    (array([0.5, 0.5]), True, 'the whole solution set (convex)')
    """
    check_select(rule)
    problem = solution.problem
    t0 = time.perf_counter()
    why = _not_applicable(problem, solution)
    if why:
        return _with(solution, None, {"rule": rule, "guaranteed": False, "why": why}, t0)
    try:
        x, info = _min_norm(problem, solution)
    except _Failed as e:
        return _with(solution, None, {"rule": rule, "guaranteed": False, "why": str(e)}, t0)
    return _with(solution, x, {"rule": rule, **info}, t0)


class _Failed(Exception):
    pass


def _matrix_of(problem):
    if problem.kind in ("fc2d", "fc3d"):
        return problem.W
    if problem.kind in ("gfc2d", "gfc3d"):
        return problem.local().W
    return getattr(problem, "M", None)


def _not_applicable(problem, solution):
    if not solution.success:
        return f"the solution was not solved to its tolerance (status {solution.status.value}): nothing to select from"
    if problem.kind == "multiple-impact":
        return ("a multiple impact's outcome is set by the LZB process itself (no convex view of its solution "
                "set): the solution is the method's")
    return None


def _psd_reason(problem, symmetric=True):
    """None when the kind's matrix is (symmetric, or only its symmetric part) PSD, else why not."""
    from ..formulations._base import PSD_TOL_W, check_symmetric_psd

    M = _matrix_of(problem)
    fric = problem.kind in ("fc2d", "fc3d", "gfc2d", "gfc3d")
    tol = PSD_TOL_W if fric else 1e-10
    name = "W" if problem.kind in ("fc2d", "fc3d") else "W = H^T M^-1 H" if problem.kind.startswith("gfc") else "M"
    why = problem.cached(f"select:psd:{tol:g}:{symmetric}",
                         lambda: check_symmetric_psd(M, psd_tol=tol, name=name, symmetric=symmetric), on=None)
    return why.split("; the QP")[0] if why else None


def _with(solution, x, info, t0):
    """A copy of ``solution`` with the primal variable ``x`` (None: unchanged) and info["select"]."""
    p = solution.problem
    info = dict(info, time=time.perf_counter() - t0)
    sel_info = {**solution.info, "select": info}
    if x is None:
        msg = solution.message + f"; select={info['rule']!r}: not guaranteed ({info['why']})"
        return dataclasses.replace(solution, info=sel_info, message=msg)
    xs = p.complete({p.primal: x})
    err = float(p.error_of(xs))
    from ..result import judged

    status = judged(solution.status, err, solution.tol)
    info["error_before"] = float(solution.error)
    what = "least-norm solution" if info["guaranteed"] else "descent along the solution set"
    msg = solution.message + f"; select={info['rule']!r}: {what} ({info['how']})"
    return dataclasses.replace(solution, error=err, status=status, info=sel_info, message=msg, **xs)


# --------------------------------------------------------------------------------------- min-norm
def _min_norm(problem, solution):
    """(x, info): the selected primal variable and what info["select"] says (module docstring)."""
    tol = float(solution.tol)
    kind = problem.kind
    if kind == "equality":
        from ..problems._base import dense

        x = np.linalg.lstsq(dense(problem.M), -np.asarray(problem.q), rcond=None)[0]
        return _accurate(problem, x, tol, solution), {"set": "the whole solution set (an affine space)",
                                                      "guaranteed": True, "how": "pseudo-inverse"}
    if kind in ("gfc2d", "gfc3d"):
        local = problem.local()
        x, info = _min_norm(local, dataclasses.replace(solution, problem=local, u=None, v=None))
        return x, dict(info, how=info["how"] + " (on the local problem W = H^T M^-1 H)")
    fric = kind in ("fc2d", "fc3d") or (kind == "gmp" and any(b.kind.startswith("fc") for b in problem.blocks))
    m = model_of(problem, solution, TOL_DEGENERATE)
    x_bar = m.x[:problem.size] if kind == "avi" else m.x
    if not fric:
        if _psd_reason(problem) is None:
            x = _convex(problem, m, x_bar, frozen_shift=False, tol=tol)
            return _accurate(problem, x, tol, solution), {"set": "the whole solution set (convex)", "guaranteed": True,
                                                          "how": "convex view, Clarabel, face polish"}
        if kind in ("lcp", "mlcp") and _psd_reason(problem, symmetric=False) is None:
            x = _monotone(problem, m, x_bar, tol)
            return _accurate(problem, x, tol, solution), {
                "set": "the whole solution set (convex: M + M^T is PSD)", "guaranteed": True,
                "how": "monotone polyhedral view, Clarabel, face polish"}
        return _nonconvex(problem, m, x_bar, tol, solution,
                          f"no convex view ({_psd_reason(problem)})")
    why = _psd_reason(problem)
    if why is None:
        x1 = _convex(problem, m, x_bar, frozen_shift=True, tol=tol)
        x1 = _accurate(problem, x1, tol, solution)
        how = "convex view at the frozen De Saxcé shift, Clarabel, face polish"
        unique = _velocities_unique(problem, x1)
        if unique:
            return x1, {"set": "the solutions with the returned local velocities (convex), which are the solution "
                               "set near the selection (the velocities are unique there)", "guaranteed": True,
                        "how": how}
        if unique is None or x1.shape[0] > DESCENT_MAX:
            what = (f"not checked (more than {CHECK_MAX} unknowns, or too many pieces through the selection)"
                    if unique is None else f"not unique there, and no descent along the set above {DESCENT_MAX} "
                                           f"unknowns")
            return x1, {"set": f"the solutions with the returned local velocities (convex); whether the velocities are "
                               f"unique near it: {what}", "guaranteed": False, "how": how}
        return _nonconvex(problem, m, x1, tol, solution,
                          "the velocities are not unique near the solutions with the returned velocities (sliding "
                          "contacts, indeterminate forces): the solution set is not convex there")
    return _nonconvex(problem, m, x_bar, tol, solution, f"no convex view ({why})")


def _nonconvex(problem, m, x_start, tol, solution, reason):
    """Enumeration where small and polyhedral (guaranteed), else the descent along the set."""
    from . import _pieces

    if problem.kind in ("lcp", "mlcp", "relay", "fc2d") and _pieces.count(m) <= _pieces.ENUM_MAX:
        x, npieces = _pieces.least_norm_solution(m)
        if x is not None:
            scale = max(float(np.max(np.abs(x), initial=0.0)), float(np.max(np.abs(x_start), initial=0.0)),
                        _data_scale(m))
            x = _polish(problem, model_of(problem, {problem.primal: x}, TOL_DEGENERATE), None, None, None, None, x,
                        scale)[0]
            return _accurate(problem, x, tol, solution), {
                "set": f"the whole solution set ({reason}; {npieces} pieces enumerated)", "guaranteed": True,
                "how": f"enumeration of the {_pieces.count(m)} state combinations (at most "
                       f"{_pieces.ENUM_MAX}), least-norm point of each piece"}
    if problem.kind == "avi" or x_start.shape[0] > DESCENT_MAX:
        raise _Failed(f"{reason}; no descent for this problem (AVI, or more than {DESCENT_MAX} unknowns): the method's "
                      f"solution is kept")
    x = _descend(problem, x_start, tol)
    return _accurate(problem, x, tol, solution), {
        "set": f"the solution set, not convex here ({reason})", "guaranteed": False,
        "how": "descent along the solution set by Gauss-Newton projections to a point where the norm is stationary "
               "(reproducible across methods when that piece of the set has one local minimum of the norm)"}


def _data_scale(m):
    """max|q| / max|M|: the size of x the data suggest (for a solution at 0)."""
    Md = m.Mext.data if sp.issparse(m.Mext) else np.asarray(m.Mext)
    top = float(np.max(np.abs(Md), initial=0.0))
    return max(float(np.max(np.abs(m.qext), initial=0.0)) / top if top > 0 else 0.0, 1e-300)


def _velocities_unique(problem, x):
    """True when no piece of the solution set through x moves the velocities (first order, every
    piece through x: nsopt.sensitivity._local); None when not checked (more than CHECK_MAX unknowns,
    or too many pieces)."""
    from ._local import pieces
    from .core import _k_matrix

    m = model_of(problem, {problem.primal: x}, TOL_DEGENERATE)
    if m.x.shape[0] > CHECK_MAX:
        return None
    sx, sy = m.scales()
    st = L.linearise(m.laws, m.x, m.y, sx, sy, TOL_DEGENERATE)
    pcs = pieces(m, st, _k_matrix(st, m.Mext), sx, sy, TOL_DEGENERATE)
    if pcs is None:
        return None
    Md = m.Mext.toarray() if sp.issparse(m.Mext) else np.asarray(m.Mext)
    scale = max(float(np.max(np.abs(Md), initial=0.0)), 1e-300)
    return all(not pc.span.shape[1] or np.max(np.abs(Md @ pc.span)) <= 1e3 * RANK_RTOL * scale * np.sqrt(Md.shape[0])
               for pc in pcs)


def _accurate(problem, x, tol, solution):
    """x polished by least-norm Newton corrections until its error meets tol (they move x across the
    solution set, not along it); _Failed when it cannot (the method's solution is then kept)."""
    err = float(problem.error_of(problem.complete({problem.primal: x})))
    goal = min(tol, 1e-15) if x.shape[0] <= POLISH_MAX else tol     # (small: to round-off, for reproducibility)
    for _ in range(8):
        if err <= goal:
            return x
        xn = _newton(problem, x)
        if xn is None:
            break
        en = float(problem.error_of(problem.complete({problem.primal: xn})))
        if not en < err:
            break
        x, err = xn, en
    if err <= tol:
        return x
    raise _Failed(f"the selected solution's error {err:.3g} could not be brought within tol = {tol:g}: the method's "
                  f"solution (error {solution.error:.3g}) is kept")


def _state_at(problem, x):
    m = model_of(problem, {problem.primal: x}, TOL_DEGENERATE)
    sx, sy = m.scales()
    st = L.linearise(m.laws, m.x, m.y, sx, sy, TOL_DEGENERATE)
    Md = m.Mext.toarray() if sp.issparse(m.Mext) else np.asarray(m.Mext, float)
    K = st.A.toarray() + st.B.toarray() @ Md
    F = L.law_residual(m.laws, st, m.x, m.y)
    return m, K, F


def _pinv_solve(K, b):
    """The least-norm least-squares solution of K d = b (row-equilibrated, truncated at RANK_RTOL)."""
    from ._factor import row_scales

    d = row_scales(K)
    U, s, Vt = np.linalg.svd(K * d[:, None], full_matrices=False)
    keep = s > RANK_RTOL * s[0] if s.size and s[0] > 0 else np.zeros(s.shape, bool)
    return Vt[keep].T @ ((U[:, keep].T @ (d * b)) / s[keep])


def _newton(problem, x):
    """One least-norm Newton correction x - K^+ F(x) of the laws in their states at x."""
    if x.shape[0] > CHECK_MAX:
        return None
    m, K, F = _state_at(problem, x)
    xn = m.x - _pinv_solve(K, F)
    return xn[:problem.size] if np.all(np.isfinite(xn)) else None


def _descend(problem, x, tol):
    """The descent along the solution set (module docstring). At each point the pieces of the set
    through it are those of :func:`nsopt.sensitivity._local.pieces` (one when no law is degenerate;
    more at a point where a contact may start or stop carrying force); in each, the step that
    decreases the norm most to first order is the projection of -x on the piece's cone (a least-norm
    program), plus the least-norm Newton correction -K^+F(x); the best piece's step is taken with a
    backtracking on its length, two Newton corrections bringing the point back onto the set, kept
    when the error stays within max(tol, the start's error) and the norm decreases."""
    from ._local import pieces as local_pieces
    from .core import _k_matrix

    err0 = float(problem.error_of(problem.complete({problem.primal: x})))
    target = max(tol, err0, 1e-14)
    nrm = float(np.linalg.norm(x))
    for _ in range(DESCENT_ITER):
        m = model_of(problem, {problem.primal: x}, TOL_DEGENERATE)
        sx, sy = m.scales()
        st = L.linearise(m.laws, m.x, m.y, sx, sy, TOL_DEGENERATE)
        K = _k_matrix(st, m.Mext)
        K = np.asarray(K.toarray() if sp.issparse(K) else K)
        F = L.law_residual(m.laws, st, m.x, m.y)
        corr = -_pinv_solve(K, F)
        pcs = local_pieces(m, st, K, sx, sy, TOL_DEGENERATE, limit=256) or []
        best, gain, bstates = None, 0.0, {}
        for pc in pcs:
            for span, G in pc.cones:
                if not span.shape[1]:
                    continue
                try:
                    yv = _least_norm_in(m.x, span, [], [(-(g @ span), 0.0) for g in G], [])
                except _Failed:
                    continue
                d = span @ yv
                g_ = -float(2 * m.x @ d + d @ d) / (nrm + float(np.linalg.norm(m.x + d)) + 1e-300)  # |x| - |x + d|
                if g_ > gain:
                    best, gain, bstates = d, g_, pc.states
        if best is None or float(np.linalg.norm(best)) <= 1e-13 * max(nrm, 1e-300):
            break
        near = gain <= 1e-10 * nrm          # near a stationary point the norm is flat: Gauss-Newton steps
        t0 = min(1.0, _room(m, _with_states(m, st, bstates), best))
        t, moved = t0, False
        while t >= 1e-6 * t0 and t > 0:
            y = m.x + corr + t * best
            for _ in range(2):
                yn = _newton(problem, y[:problem.size])
                if yn is None:
                    break
                y = yn
            y = y[:problem.size]
            e = float(problem.error_of(problem.complete({problem.primal: y})))
            ny = float(np.linalg.norm(y))
            if e <= target and (ny < nrm * (1 - 1e-15) or near and ny <= nrm * (1 + 1e-14)):
                moved = True
                break
            t *= 0.5
        if not moved:
            break
        x, nrm = y, ny
    return x


def _room(m, st, d):
    """The longest step t <= 1 along d (to first order) before a law leaves its state: a box row
    reaching a bound or its y changing sign, a sticking contact reaching its cone's edge, a sliding
    one losing its force, an open one closing (the descent stops there, where the law becomes
    degenerate and the pieces on the other side are seen)."""
    x, y = m.x, m.y
    dy = matvec(m.Mext, d)
    t = 1.0

    def lin(a, da):                       # first t > 0 with a + t da = 0, for a >= 0
        return a / -da if da < 0 and a > 0 else np.inf

    laws = m.laws
    for k, i in enumerate(laws.box):
        if st.box_state[k] == L.FREE:
            if np.isfinite(laws.lb[k]):
                t = min(t, lin(x[i] - laws.lb[k], d[i]))
            if np.isfinite(laws.ub[k]):
                t = min(t, lin(laws.ub[k] - x[i], -d[i]))
        elif st.box_state[k] == L.LOWER:
            t = min(t, lin(y[i], dy[i]))
        else:
            t = min(t, lin(-y[i], -dy[i]))
    for dim, (starts, mu) in laws.fc.items():
        for a, s0 in enumerate(starts):
            idx = s0 + np.arange(dim)
            state = st.fc_state[dim][a]
            if state == L.TAKEOFF:
                t = min(t, lin(y[s0], dy[s0]))
            elif state == L.SLIDE:
                t = min(t, lin(x[s0], d[s0]))
            elif mu[a] > 0:                   # stick: mu (rN + t dN) = |rT + t dT|
                rN, dN, rT, dT = x[s0], d[s0], x[idx[1:]], d[idx[1:]]
                A = (mu[a] * dN) ** 2 - dT @ dT
                B = 2 * (mu[a] ** 2 * rN * dN - rT @ dT)
                C = (mu[a] * rN) ** 2 - rT @ rT
                roots = np.roots([A, B, C]) if abs(A) > 1e-300 else ([-C / B] if B else [])
                for r_ in roots:                  # (a root ~0: on the edge already, moving inwards)
                    if np.isreal(r_) and 1e-9 < r_.real < t and rN + r_.real * dN >= 0:
                        t = float(r_.real)
    return t


_STATE_OF = MappingProxyType({"at lower bound": ("box", L.LOWER), "at upper bound": ("box", L.UPPER), "free": ("box", L.FREE),
             "take-off": ("fc", L.TAKEOFF), "stick": ("fc", L.STICK), "closed": ("fc", L.STICK),
             "slide": ("fc", L.SLIDE)})


def _with_states(m, st, states):
    """A copy of the state ``st`` with the degenerate laws in the states of one piece (``states`` as
    in :class:`nsopt.sensitivity._local.Piece`)."""
    if not states:
        return st
    box_state = st.box_state.copy()
    fc_state = {k: v.copy() for k, v in st.fc_state.items()}
    for (kind, key), name in states.items():
        _, code = _STATE_OF[name]
        if kind == "row":
            box_state[np.flatnonzero(m.laws.box == key)] = code
        else:
            dim, a = key if isinstance(key, tuple) else (next(iter(m.laws.fc)), key)
            fc_state[dim][a] = code
    return dataclasses.replace(st, box_state=box_state, fc_state=fc_state)


def _convex(problem, m, x_bar, frozen_shift, tol=1e-10):
    """The least-norm point of the convex solution set of a problem with a symmetric PSD matrix
    (frozen_shift: friction, the solutions with x_bar's velocities), then the face polish; dense
    problems through :func:`_convex_dense` (the set written exactly, see there), larger ones
    through the CVXPY program on the whole unknown."""
    n = x_bar.shape[0]
    scale = max(float(np.max(np.abs(x_bar), initial=0.0)), _data_scale(m))
    if n <= RANK_DENSE_MAX:
        x = _convex_dense(problem, m, x_bar, tol)
        return _polish(problem, m, None, None, None, x_bar, x, scale)[0] if problem.kind != "avi" else x
    M = problem.M if problem.kind in ("lcp", "mlcp", "relay", "avi", "gmp") else problem.W
    q = np.asarray(problem.q, float)
    c = q.copy()
    y = matvec(M, x_bar) + q
    for dim, (starts, mu) in (m.laws.fc.items() if problem.kind != "avi" else ()):
        U = y[starts[:, None] + np.arange(dim)]
        c[starts] += mu * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))     # De Saxcé's shift, frozen
    Lt = sp.csr_matrix(0.5 * (M + M.T))
    return _program(problem, m, Lt, matvec(Lt, x_bar), c, x_bar, scale)


def _convex_dense(problem, m, x_bar, tol):
    r"""The solution set written exactly around any of its points x̄, as x = x̄ + N y, and its
    least-norm point (:func:`_least_norm_in`). For a symmetric PSD matrix every solution has the
    same y = Mx + q (w, u): N spans the null space of M, and each law reads its state off ȳ: a box
    row with ȳ_i ≠ 0 keeps x_i at its bound, one with ȳ_i = 0 moves between its bounds; a contact
    with ū = 0 keeps r in its cone, one sliding (ū_N = 0, ū_T ≠ 0) keeps r on the ray
    (1, -mu ū_T/|ū_T|), one with ū_N > 0 keeps r = 0 (friction: the Coulomb solutions with the
    velocities ū). An AVI over {Hz >= k}: H(x̄ + Ny) >= k and w̄ᵀNy <= 0 (the face of K that w̄
    exposes). A monotone nonsymmetric LCP/MLCP: N spans the null space of M + Mᵀ, with qᵀNy = 0,
    z_I >= 0, w_I >= 0 and w_E = 0 as constraints."""
    kind = problem.kind
    n = x_bar.shape[0]
    A = problem.M if kind in ("lcp", "mlcp", "relay", "avi", "gmp") else problem.W
    Ad = np.asarray(A.toarray() if sp.issparse(A) else A, float)
    q = np.asarray(problem.q, float)
    yb = Ad @ x_bar + q
    sy = max(float(np.max(np.abs(yb), initial=0.0)), float(np.max(np.abs(q), initial=0.0)), 1e-300)
    zero_y = np.abs(yb) <= max(TOL_DEGENERATE, 100 * tol) * sy
    symmetric = np.allclose(Ad, Ad.T, rtol=0, atol=1e-12 * max(np.max(np.abs(Ad)), 1e-300))
    S = 0.5 * (Ad + Ad.T)
    lam, V = np.linalg.eigh(S)
    N = V[:, lam <= RANK_RTOL * max(float(lam[-1]), 1e-300)]
    eq, ub, socs = [], [], []          # rows on y: eq @ y = 0; ub: (a, b) a @ y <= b; socs: (C, c0): C y + c0 in SOC
    if kind == "avi":
        H = np.asarray(problem.H.toarray() if sp.issparse(problem.H) else problem.H, float)
        k = np.asarray(problem.k, float)
        for i in range(H.shape[0]):
            ub.append((-(H[i] @ N), float(H[i] @ x_bar - k[i])))
        ub.append((yb @ N, 0.0))
    elif not symmetric:                   # a monotone LCP / MLCP
        MN = Ad @ N
        eq.append(q @ N)
        lb = m.laws.lb
        for i in range(n):
            if np.isfinite(lb[i]):
                ub.append((-N[i], float(x_bar[i] - lb[i])))
                ub.append((-MN[i], float(yb[i])))
            else:
                eq.append(MN[i])
    else:
        laws = m.laws
        for k_, i in enumerate(laws.box):
            lo, hi = laws.lb[k_], laws.ub[k_]
            if not zero_y[i] and (yb[i] > 0 and np.isfinite(lo) or yb[i] < 0 and np.isfinite(hi)):
                eq.append(N[i])                                  # at its bound
                continue
            if np.isfinite(lo):
                ub.append((-N[i], float(x_bar[i] - lo)))
            if np.isfinite(hi):
                ub.append((N[i], float(hi - x_bar[i])))
        for dim, (starts, mu) in laws.fc.items():
            for a, s0 in enumerate(starts):
                idx = s0 + np.arange(dim)
                U = yb[idx]
                if not zero_y[s0] and U[0] > 0:                  # open: r = 0
                    eq += [N[j] for j in idx]
                elif mu[a] == 0:                                  # closed, frictionless: r_T = 0, r_N >= 0
                    eq += [N[j] for j in idx[1:]]
                    ub.append((-N[s0], float(x_bar[s0])))
                elif np.all(zero_y[idx[1:]]) or np.linalg.norm(U[1:]) <= max(TOL_DEGENERATE, 100 * tol) * sy:
                    C = np.vstack([mu[a] * N[s0], N[idx[1:]]])    # stick: (mu r_N, r_T) in the SOC
                    socs.append((C, np.concatenate([[mu[a] * x_bar[s0]], x_bar[idx[1:]]])))
                else:                                             # slide: r on the ray (1, -mu g)
                    g = U[1:] / np.linalg.norm(U[1:])
                    d = np.concatenate([[1.0], -mu[a] * g])
                    d /= np.linalg.norm(d)
                    P = np.eye(dim) - np.outer(d, d)
                    Nr = N[idx]
                    eq += list(P @ Nr)
                    ub.append((-(d @ Nr), float(d @ x_bar[idx])))
    y = _least_norm_in(x_bar, N, eq, ub, socs)
    return x_bar + N @ y


def _least_norm_in(x0, N, eq, ub, socs):
    """argmin ||x0 + N y|| over {y : e y = 0 (e in eq), a y <= b ((a, b) in ub), C y + c0 in the
    second-order cone ((C, c0) in socs)}: the equations eliminated (null space), the inequalities
    that hold with equality everywhere found by LPs and eliminated too (an interior-point method
    needs a set with interior), then Clarabel."""
    k = N.shape[1]
    if k == 0:
        return np.zeros(0)
    P = np.eye(k)
    E = np.array(eq).reshape(-1, k)
    G = np.array([a for a, _ in ub]).reshape(-1, k)
    h = np.array([b for _, b in ub], float)
    for _ in range(k + 1):
        if E.shape[0]:
            _, Z = null_space(E @ P)
            P = P @ Z
        if P.shape[1] == 0:
            return np.zeros(k)
        GP = G @ P
        nr = np.max(np.abs(GP), axis=1) if GP.shape[0] else np.zeros(0)
        live = nr > 1e3 * RANK_RTOL * np.maximum(np.max(np.abs(G), axis=1, initial=0.0), 1e-300)  # (else: round-off)
        if np.any(~live & (h < -1e-9 * max(1.0, float(np.max(np.abs(h), initial=0.0))))):
            raise _Failed("the solution set's description is infeasible (the solution's states are not those of its "
                          "set)")
        strict = _strict(GP[live] / nr[live, None], h[live] / nr[live])
        if strict is None:
            raise _Failed("the solution set's description is infeasible")
        tight = np.flatnonzero(live)[~strict]
        G, h = G[live], h[live]                         # (the others vanish on the set: 0 <= h holds)
        tight = np.flatnonzero(~strict)
        if tight.size == 0:
            break
        E = G[tight]                                   # implicit equalities: h_i = 0 there, G_i y = 0
        G, h = np.delete(G, tight, axis=0), np.delete(h, tight)
    NP = N @ P
    kk = P.shape[1]
    w = quadratic_program(2 * (NP.T @ NP) + 1e-14 * np.eye(kk), 2 * (NP.T @ x0), None, (G @ P, h),
                          [(C @ P, c0) for C, c0 in socs])
    if w is None:
        raise _Failed("the least-norm program did not solve")
    return P @ w


def _strict(G, h):
    """Which rows of G y <= h some point satisfies strictly (LPs maximising the slacks of the rows not
    yet found strict, until none is); None when the set is empty."""
    from scipy.optimize import linprog

    m, k = G.shape
    strict = np.zeros(m, bool)
    while not strict.all():
        rest = np.flatnonzero(~strict)
        T = np.zeros((m, rest.size))
        T[rest, np.arange(rest.size)] = 1.0
        res = linprog(np.concatenate([np.zeros(k), -np.ones(rest.size)]), A_ub=np.hstack([G, T]), b_ub=h,
                      bounds=[(None, None)] * k + [(0.0, 1.0)] * rest.size, method="highs")
        if res.status == 2:
            return None
        if res.status != 0:
            return strict | True           # (unbounded or failed: leave the rows to the QP)
        new = res.x[k:] > 1e-9
        if not new.any():
            break
        strict[rest[new]] = True
    return strict


def _monotone(problem, m, x_bar, tol=1e-10):
    """The least-norm solution of a monotone LCP / MLCP (M + M^T PSD, M not symmetric): the
    polyhedron {z in C, w_I >= 0, w_E = 0, (M + M^T)(z - z_bar) = 0, q^T (z - z_bar) = 0}."""
    x = _convex_dense(problem, m, x_bar, tol)
    scale = max(float(np.max(np.abs(x_bar), initial=0.0)), _data_scale(m))
    return _polish(problem, m, None, None, None, x_bar, x, scale)[0]


def _solve_clarabel(prog):
    try:
        with warnings.catch_warnings():     # "may be inaccurate": the answer is judged by the problem's error
            warnings.simplefilter("ignore")
            prog.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10,
                       max_iter=400)
    except Exception as e:     # noqa: BLE001  (a backend crash: no selection)
        raise _Failed(f"the least-norm program failed ({type(e).__name__}: {e})") from None


def _cones(cp, problem, m, xv):
    """The laws' set C for the CVXPY variable xv (the primal variable)."""
    cons = []
    if problem.kind == "avi":
        H = problem.H
        cons.append(H @ xv >= np.asarray(problem.k, float))
        return cons
    box, lb, ub = m.laws.box, m.laws.lb, m.laws.ub
    il, iu = box[np.isfinite(lb)], box[np.isfinite(ub)]
    if il.size:
        cons.append(xv[il] >= lb[np.isfinite(lb)])
    if iu.size:
        cons.append(xv[iu] <= ub[np.isfinite(ub)])
    for dim, (starts, mu) in m.laws.fc.items():
        pos = mu > 0
        if pos.any():
            s = starts[pos]
            tang = np.stack([s + k for k in range(1, dim)], axis=1)
            cons.append(cp.SOC(cp.multiply(mu[pos], xv[s]), cp.hstack([cp.reshape(xv[tang[:, k]], (s.size, 1), order="C")
                                                                       for k in range(dim - 1)]), axis=1))
        if (~pos).any():
            s = starts[~pos]
            cons.append(xv[s] >= 0)
            for k in range(1, dim):
                cons.append(xv[s + k] == 0)
    return cons


def _program(problem, m, Lt, b, c, x_bar, scale):
    import cvxpy as cp

    n = x_bar.shape[0]
    xv = cp.Variable(n)
    bnd = float(c @ x_bar)
    cons = _cones(cp, problem, m, xv) + [Lt @ xv == b, c @ xv <= bnd + 1e-12 * scale * max(np.abs(c).max(), 1e-300)]
    prog = cp.Problem(cp.Minimize(cp.sum_squares(xv / scale)), cons)
    _solve_clarabel(prog)
    if xv.value is None or prog.status not in ("optimal", "optimal_inaccurate"):
        raise _Failed(f"the least-norm program ended {prog.status}")
    return np.asarray(xv.value, float)


def _polish(problem, m, Lt, b, c, x_bar, x, scale, tol=1e-7):
    """The least-norm point of the face of C that x lies on where the laws' equations hold there
    (y_i = 0 on the free rows, u_a = 0 on the stick contacts, u_N = 0 and u_T along the ray on the
    sliding ones; an AVI keeps Lᵀz = Lᵀz̄ with its active constraints as equations): one least-squares
    solve, independent of the solution the selection started from. Kept when the result is not
    worse than x (then the answer no longer carries the interior-point solver's last digits)."""
    n = x.shape[0]
    t = tol * scale
    x0 = np.zeros(n)
    cols = []                     # (indices, direction) of the free coordinates, orthonormal
    Md = m.Mext.toarray() if sp.issparse(m.Mext) else np.asarray(m.Mext, float)
    rows, rhs = [], []
    if problem.kind == "avi":
        cols = [(np.array([i]), np.array([1.0])) for i in range(n)]
        H = problem.H.toarray() if sp.issparse(problem.H) else np.asarray(problem.H, float)
        act = np.flatnonzero(H @ x - problem.k <= t * max(1.0, np.abs(H).max()))
        rows = [Lt.toarray() if sp.issparse(Lt) else Lt, c[None, :], H[act]]
        rhs = [b, [float(c @ x_bar)], np.asarray(problem.k, float)[act]]
    else:
        q = m.qext
        box, lb, ub = m.laws.box, m.laws.lb, m.laws.ub
        xb = x[box]
        at_lo = np.isfinite(lb) & (xb - lb <= t)
        at_hi = np.isfinite(ub) & (ub - xb <= t) & ~at_lo
        x0[box[at_lo]], x0[box[at_hi]] = lb[at_lo], ub[at_hi]
        for i in box[~(at_lo | at_hi)]:
            cols.append((np.array([i]), np.array([1.0])))
            rows.append(Md[i:i + 1])
            rhs.append(-q[i:i + 1])
        for dim, (starts, mu) in m.laws.fc.items():
            for a, s in enumerate(starts):
                idx = s + np.arange(dim)
                ra = x[idx]
                nrm = float(np.linalg.norm(ra))
                if nrm <= t:
                    continue                                     # r_a = 0
                if mu[a] == 0:
                    cols.append((idx[:1], np.array([1.0])))
                    rows.append(Md[s:s + 1])
                    rhs.append(-q[s:s + 1])
                elif mu[a] * ra[0] - np.linalg.norm(ra[1:]) <= t:   # on the cone's surface: its ray
                    cols.append((idx, ra / nrm))
                    tT = ra[1:] / max(np.linalg.norm(ra[1:]), 1e-300)
                    Pr = np.eye(dim - 1) - np.outer(tT, tT)          # u_T along t (dim - 2 equations)
                    rows += [Md[s:s + 1], Pr @ Md[s + 1:s + dim]]
                    rhs += [-q[s:s + 1], -Pr @ q[s + 1:s + dim]]
                else:
                    for k in range(dim):
                        cols.append((idx[k:k + 1], np.array([1.0])))
                    rows.append(Md[idx])
                    rhs.append(-q[idx])
    if not cols:
        return x, False
    P = np.zeros((n, len(cols)))
    for j, (idx, d) in enumerate(cols):
        P[idx, j] = d
    E = np.vstack(rows) if rows else np.zeros((0, n))
    f = np.concatenate([np.asarray(r_, float).reshape(-1) for r_ in rhs]) if rhs else np.zeros(0)
    y, *_ = np.linalg.lstsq(E @ P, f - E @ x0, rcond=None)
    xp = x0 + P @ y
    if not np.all(np.isfinite(xp)):
        return x, False
    e_new = problem.error_of(problem.complete({problem.primal: xp}))
    e_old = problem.error_of(problem.complete({problem.primal: x}))
    if e_new <= max(e_old, 1e-13) * 10:
        return xp, True
    return x, False


__all__ = ["SELECT_RULES", "check_select", "select"]
