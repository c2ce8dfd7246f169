r"""Lexicographic Lemke method for the LCP, and through :mod:`nsopt.reductions` for Relay, MLCP, AVI
and FC2D.

The LCP :math:`w = Mz + q,\ 0 \le z \perp w \ge 0` is augmented with an artificial variable
:math:`z_0` and a covering vector :math:`d > 0` (default :math:`d = e = (1, \dots, 1)`):

.. math::  w = Mz + q + d z_0 ,

started from the almost complementary basis where every :math:`w_i` is basic, then :math:`z_0`
enters at the value :math:`\max_i(-q_i/d_i)`. Each pivot lets the complement of the variable that
just left enter (complementary pivoting); the leaving row is chosen by the lexicographic minimum
ratio rule on the rows :math:`(\beta_i, (B^{-1})_{i,:})/\bar a_i` [1]_ (:math:`\beta = B^{-1}q`,
:math:`\bar a = B^{-1}A_{\cdot s}` the entering column). It is the minimum ratio rule for the
perturbed right-hand side :math:`q + (\varepsilon, \varepsilon^2, \dots, \varepsilon^n)`, under
which every basis is nondegenerate: the bases of the path are all distinct and Lemke cannot cycle.

Floating point and the lexicographic rule. The rule compares entries of :math:`B^{-1}` that are
often exactly zero; after a few dozen pivots they carry rounding noise (1e-16..1e-14), and a
comparison that takes the noise for a value picks a row that is *not* the lexicographic minimum —
the perturbed basis is no longer feasible and the path can come back to a basis (nsopt 0.1 cycled
with period 4 on Siconos' ``lcp_tobenna.dat``, 40 x 40, because its tie tolerance was relative to the
largest entry of the *current* column of :math:`B^{-1}` among the tied rows, which is itself noise
when that column should be zero). Each component is therefore compared with a tolerance on the
scale of its whole key: two ratios :math:`v_k = x_k/\bar a_k` tie when

.. math:: |v_k - v_l| \le \tau\,(e_k + e_l),\qquad e_k = (S + |v_k|\,\|\bar a\|_\infty)/|\bar a_k| ,

with :math:`S = \max(1, \|\beta\|_\infty)` for the first key and :math:`S = \max(1, \max|B^{-1}|)`
for the others, :math:`\tau` = ``tie_tol`` (default 1e-11): the noise of :math:`x_k` and of
:math:`\bar a_k` divided by the pivot. When :math:`z_0` is among the rows tied on the ratio it
leaves at once (the basis reached is complementary and feasible). Each basis is hashed (Zobrist)
as the path goes, so a path that ends on the pivot budget says whether a basis came back.

The method stops

* with a solution when :math:`z_0` leaves the basis. The basic variables are then recomputed from
  the final basis, on the *original* data (before any reduction and scaling): with J the basic
  (off-bound) components, :math:`M_{JJ} z_J = -(q_J + M_{J\bar J} z_{\bar J})` is solved by LU with
  iterative refinement (residuals in extended precision), and the result is kept when the
  problem's own error measure is smaller. The answer is thus as accurate as the final basis allows,
  whatever the BLAS;
* on a *secondary ray*: the entering column has no blocking row. The ray
  :math:`(w, z, z_0)(t) = (w, z, z_0)^k + t\,(w^h, z^h, z_0^h)` is returned in
  ``info["ray"]`` (the z part :math:`z^h` of the LCP; ``"ray_w"``, ``"ray_z0"`` the others). For a
  copositive-plus M (e.g. positive semidefinite M) a secondary ray proves that the LCP has no
  solution (Cottle–Pang–Stone, Thm 4.4.9): :math:`y = z^h \ge 0` satisfies the Farkas conditions
  :math:`M^\top y \le 0,\ q^\top y < 0`. nsopt checks them numerically: when they hold the status
  is ``INFEASIBLE`` and ``info["certificate"]`` is True; otherwise (nothing is proven) the status
  is ``STALLED`` with ``info["certificate"] = False``. For the LCP, a ray without certificate is
  retried (``restarts``) with random positive covering vectors;
* on the pivot budget: ``max_iter`` pivots, default :data:`PIVOTS_PER_ROW` x n (n the size of the
  LCP after reduction; Lemke's paths are a few n long in practice, exponential only on contrived
  examples such as Murty's); the message says whether a basis repeated;
* as the iteration contract (:class:`~nsopt.monitor.Monitor`) says: ``time_limit``, a callback,
  or an intermediate point whose error is already below ``tol``.

``nit`` (and ``info["pivots"]``) counts every basis change, the first one (z0 entering) included:
Siconos' LEMKE reports one fewer on the same path (``benchmarks/bench_lemke_corpus.py``).
The pivots run in compiled chunks of about 20 ms (one pivot per chunk when a history or a callback
asks for every one), so ``time_limit`` and Ctrl-C act between chunks.

Iteration 0 and warm start. The contract's starting point is the warm start, else z = 0 of the
problem (``history[0]`` is its error); when it solves the problem within ``tol`` the answer comes
back with 0 pivots. For lcp, mlcp and relay the support of the warm start (the components strictly
inside their bounds) is also tried as a final basis: one solve as above, kept when better (the
common case of a re-solve with a new q and the same active set). Lemke's path itself always starts
from the artificial basis: a warm start that does not solve the problem does not shorten it.

Implementation: a dense *revised* tableau. The basis inverse :math:`B^{-1}` is kept explicitly
(column major) together with :math:`\beta = B^{-1} q`; a column of :math:`B^{-1}` whose unit
vector :math:`w_j` is basic is the unit vector of its row, so products and rank-one updates only
touch the :math:`k` "dense" columns (``k`` = number of basic ``z`` plus ``z_0``): a pivot costs
:math:`O(nk)` instead of the :math:`O(n^2)` of the full tableau (Siconos keeps the full
:math:`n \times 2(n+1)` tableau). The data are scaled to unit size first (z solves (M, q) iff
:math:`az/b` solves :math:`(M/a, q/b)`), so the tolerances are scale free; a column entry blocks
when it exceeds ``piv_tol`` times the column's largest entry.

Size guard: an LCP (after reduction) larger than ``MAX_LCP`` = 10000 is refused with
:class:`~nsopt.exceptions.NotApplicable` (the dense tableau alone would take 800 MB); sparse
input is densified (with a warning above n = 2000).

Reductions (:mod:`nsopt.reductions.to_lcp`): Relay by :class:`~nsopt.reductions.RelayToLCP`; MLCP by
:class:`~nsopt.reductions.MLCPToLCP` (``reduction="auto"``: Schur complement of A when it is well
conditioned, else, or when the Schur route does not reach ``tol``, the split u = u+ - u-); AVI by
its KKT MLCP (:class:`~nsopt.reductions.AVIToLCP`; ``info["multipliers"]``, ``info["kkt_error"]``;
Siconos solves AVIs with the Cao–Ferris path method instead); FC2D by
:class:`~nsopt.reductions.FC2DToLCP`.

References
----------
.. [1] K. G. Murty, *Linear Complementarity, Linear and Nonlinear Programming*, Heldermann, 1988,
   §2.2–2.3 (the complementary pivot method and its lexicographic degeneracy resolution).
"""

from __future__ import annotations

import math

import numpy as np

from ..exceptions import OptionError
from ..linalg import basis_solve, refined_solve  # noqa: F401  (refined_solve: the final basis' solve)
from ..reductions import AVIToMLCP, FC2DToLCP, MLCPToLCP, RelayToLCP, box_of, dense_of, lcp_size
from ..registry import register
from ..result import Status
from ._tableau import Tableau, first_chunk, lcp_start, scaled_tableau

PIVOTS_PER_ROW = 50      # default pivot budget: PIVOTS_PER_ROW * n (n: size of the LCP)
SMALL_LCP = 16           # an LCP up to this size has its iteration 0 compiled
MAX_LCP = 10_000         # dense tableau: n^2 doubles (800 MB at the limit)
GOOD_ERROR = 1e-14       # a final point at this error (rounding level) ends the recomputation


def _basis_points(M, q, lo, hi, z, F, repairs=5):
    """Candidates recomputed from a final basis (:func:`basis_solve`), lazily (the caller stops at
    an error at the rounding level): on the support F the pivoting ended with, then on the strict
    support {lo < z < hi} of the pivoted point when it differs; each followed by up to ``repairs``
    block principal pivots that move the components whose sign is wrong (off their box, or at a
    bound with w pushing outwards) in or out of the support: the round-off of a long path on
    ill-conditioned data can leave the final basis one flip away."""
    S0 = (z > lo) & (z < hi)
    for S in ((F, S0) if not np.array_equal(S0, F) else (F,)):
        zc = basis_solve(M, q, lo, hi, S, z)
        yield zc
        for _ in range(repairs):
            w = M @ zc + q
            atlo = np.abs(zc - lo) <= np.abs(zc - hi)
            vz = S & ((zc < lo) | (zc > hi))
            vw = ~S & ((atlo & (w < 0)) | (~atlo & (w > 0)))
            if not (vz.any() or vw.any()):
                break
            S = (S & ~vz) | vw
            zc = basis_solve(M, q, lo, hi, S, zc)
            yield zc


def farkas_certificate(M, q, y, tol=1e-9):
    """True when y proves that {z >= 0: Mz + q >= 0} is empty: y >= 0, M^T y <= 0, q^T y < 0 (scaled)."""
    y = np.asarray(y, float)
    ny = float(np.max(np.abs(y))) if y.size else 0.0
    if ny == 0.0:
        return False
    y = y / ny
    MTy = np.asarray(M.T @ y).reshape(-1)
    scale = 1.0 + float(np.max(np.abs(M))) if np.size(M) else 1.0
    qs = 1.0 + float(np.max(np.abs(q)))
    return bool(np.all(y >= -tol) and np.all(MTy <= tol * scale) and float(q @ y) < -tol * qs)


_CERT_MSG = "secondary ray: y = info['ray'] >= 0 with M^T y <= 0, q^T y < 0 proves the LCP infeasible"


def _budget_message(mon, T):
    rep = T is not None and T.repeated()
    z0 = T.z0() if T is not None else 0.0
    # (mon.k: the pivots of every path so far, restarts included)
    what = ("a basis repeated: the path cycled" if rep else
            "no basis repeated (a long path, not a cycle: raise max_iter)")
    if T is not None and T.trimmed and not rep:
        what = what.replace("no basis repeated", f"no basis repeated in the last {T._kept} pivots")
    return rep, f"pivot budget of {mon.k} pivots used without termination (z0 = {z0:.3g}); {what}"


def _path(M, q, mon, cover, piv_tol, tie_tol, report, record):
    """Lemke's path on dense (M, q) under the monitor. Returns (code, pivots of the last chunk, T):
    code 1 (z0 left), 2 (secondary ray), 3 (numerical trouble), 0 (the monitor stopped)."""
    T = scaled_tableau(M, q, cover)
    first = first_chunk(q.shape[0])
    while True:
        c = 1 if record is not None else mon.chunk(per_iteration_errors=False, first=first)
        first = None
        before = T.pivots
        code = T.run(c, piv_tol, tie_tol)
        done = T.pivots - before
        mon.timed(done)
        if record is not None and done:
            record.append(tuple(sorted(T.basis.tolist())))
        if code != 0:
            return code, done, T
        x, err = report(T.z())
        if mon.step(x, err, done):
            return 0, 0, T


def _record(mon, done, x, err, new=True):
    """The monitor's record of the end of a path: its last ``done`` pivots; when the chunk ended
    without a pivot, the final point as one iteration if it is ``new`` (q >= 0, a point recomputed
    from the final basis), else nothing (the previous chunk recorded it)."""
    if done:
        return mon.step(x, err, done)
    return mon.step(x, err) if new else None


_LOADED: list = []     # the compiled path is loaded (Dispatcher.signatures costs ~100 us per look)


def _lemke(lcp, M, mon, *, to_x, err_of, polish, piv_tol, tie_tol, cover=None, restarts=0,
           record_bases=False, info=None):
    """Lemke on the dense LCP ``M``, ``lcp.q`` for a problem whose variables are ``to_x(z)`` (a dict),
    with error ``err_of(x)``; ``polish(z, basic)`` yields points recomputed from a final basis
    (``basic``: mask of the basic z). The monitor has recorded the start (:func:`_begin`). Returns
    an Outcome (the monitor counts pivots)."""
    q = np.asarray(lcp.q, dtype=float)
    n = q.shape[0]
    info = {} if info is None else info
    mon.budget(PIVOTS_PER_ROW * max(n, 1))

    def report(z):
        x = to_x(z)
        return x, err_of(x)

    if cover is None:
        cover = np.ones(n)
    else:
        cover = np.asarray(cover, dtype=float).reshape(-1)
        if cover.shape[0] != n or not np.all(cover > 0) or not np.all(np.isfinite(cover)):
            raise OptionError(f"cover: the covering vector must be a positive finite vector of size {n}")
    if mon.k == 0 and mon.build_time == 0.0 and not _LOADED:
        # load the compiled kernel (a one-off build, with the reduction: not counted in time_limit)
        Tableau(np.eye(2), -np.ones(2), np.ones(2)).run(0, piv_tol, tie_tol)
        _LOADED.append(True)
        mon.built()
    tries = pivots = 0
    while True:
        record = [] if record_bases else None
        if np.all(q >= 0):
            code, done, T = 1, 0, None
        else:
            code, done, T = _path(M, q, mon, cover, piv_tol, tie_tol, report, record)
        if record is not None:
            info.setdefault("bases", []).append(record)
        pivots += T.pivots if T is not None else 0
        info["pivots"] = pivots
        if code == 0:
            if mon.status is Status.MAX_ITER:
                info["basis_repeated"], msg = _budget_message(mon, T)
                return mon.outcome(message=msg, info=info)
            return mon.outcome(info=info)
        z = T.z() if T is not None else np.zeros(n)
        msg = f"z0 left the basis after {pivots} pivots"
        if code == 2 and abs(T.z0()) <= tie_tol * T.b and lcp.error(z) <= 1e-12:
            code, msg = 1, "z0 reached 0 (degenerate end of the path)"
            info["z0"] = T.z0()
        if code == 1:
            basic = T.basic_mask() if T is not None else np.zeros(n, bool)
            x = to_x(z)
            err = err_of(x)
            info["polished"] = False
            # recomputed from the final basis, judged by the error (unless at the rounding level)
            for xp in (polish(z, basic) if err > GOOD_ERROR else ()):
                ep = err_of(xp)
                if ep < err:
                    x, err, info["polished"] = xp, ep, True
                if err <= GOOD_ERROR:
                    break
            _record(mon, done, x, err)
            st = Status.CALLBACK_STOP if mon.status is Status.CALLBACK_STOP else Status.SOLVED
            return mon.outcome(x=x, status=st, message=msg, info=info)
        x, err = report(z)
        _record(mon, done, x, err, new=False)
        if code == 3:
            return mon.outcome(x=x, status=Status.NUMERICAL_ERROR, message="zero or non-finite pivot", info=info)
        rw, rz, rz0 = T.ray()
        cert = farkas_certificate(M, q, rz)
        info.update(ray=rz, ray_w=rw, ray_z0=rz0, certificate=cert, z0=T.z0())
        if cert:
            return mon.outcome(x=x, status=Status.INFEASIBLE, message=_CERT_MSG, info=info)
        if tries < restarts and not mon.stopped:
            tries += 1
            cover = 1.0 + np.random.default_rng(tries).random(n)
            continue
        msg = "secondary ray (no infeasibility certificate: M is not copositive-plus on this path)"
        if tries:
            msg += f" (after {tries} restart(s) with random covering vectors)"
        return mon.outcome(x=x, status=Status.STALLED, message=msg, info=info)


_START_MSG = ("the start (z = 0) solves the problem", "the warm start solves the problem (0 pivots)",
              "the support of the warm start is a solution's basis (0 pivots)")


def _small_lcp(problem, M) -> bool:
    """True for an LCP whose iteration 0 runs compiled (:func:`_tableau.lcp_start`)."""
    return type(M) is np.ndarray and problem.kind == "lcp" and M.shape[0] <= SMALL_LCP


def _begin(problem, mon, M=None):
    """Iteration 0 of the contract: the warm start, else z = 0 of the problem (Lemke's own path
    starts from the artificial basis whatever this point is). For the box-affine kinds (``M`` given),
    the support of the warm start is also tried as a final basis (module docstring); for an LCP
    of size <= ``SMALL_LCP`` all of it is compiled (:func:`_tableau.lcp_start`), and the point comes
    back with w and its error (the LCP error, its one compiled home). Returns the Outcome when this
    point already solves the problem (or the budget is 0), else None."""
    name = problem.primal
    x0 = mon.x0.get(name) if mon.x0 is not None else None
    if M is not None and _small_lcp(problem, M):
        q = problem.q
        n = q.shape[0]
        z = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
        w = np.empty(n)
        err, code = lcp_start(M, q, z, w, x0 is not None, math.hypot(*q.tolist()), mon.tol)   # (norm2's short path)
        if code >= 0 and code != 2:
            x = {"z": z}      # (a new array: recorded as it is, copied only if it is returned later)
            if mon.record(err, 0, err, None, x, x, err) is not None:
                msg = _START_MSG[code + (x0 is not None)] if mon.status is Status.SOLVED else ""
                x["w"] = w
                return mon.solution(message=msg, info={"pivots": 0}, x=x, error=err)
            return None
    z = np.zeros(problem.size) if x0 is None else np.asarray(x0, dtype=float)
    err = problem.error(z)
    msg = _START_MSG[0]
    if x0 is not None:
        msg = _START_MSG[1]
        if M is not None and err > mon.tol:
            lo, hi = box_of(problem)
            S = ((z > lo) & (z < hi)) | (~np.isfinite(lo) & ~np.isfinite(hi))
            zb = basis_solve(M, np.asarray(problem.q, dtype=float), lo, hi, S, z)
            eb = problem.error(zb)
            if eb < err:
                z, err, msg = zb, eb, _START_MSG[2]
    if mon.start({name: z}, err):
        return mon.solution(message=msg if mon.status is Status.SOLVED else "", info={"pivots": 0})
    return None


def _box_start(problem, mon):
    """Dense M and q of a box-affine problem, with the Outcome of :func:`_begin` (its bounds are
    :func:`box_of`, wanted only when Lemke's path runs)."""
    M = problem.M
    if type(M) is not np.ndarray:
        M = dense_of(M, "M", "lemke")
    return M, problem.q, _begin(problem, mon, M)


def _too_big(problem):
    n = lcp_size(problem)
    if n > MAX_LCP:
        return (f"Lemke works on a dense {n} x {n} tableau ({8 * n * n / 1e9:.1f} GB); the limit is an LCP "
                f"of size {MAX_LCP} (use newton-fb, pgs or nsgs)")
    return None


_OPTIONS_DOC = """
    Options: ``piv_tol`` relative size below which a column entry does not block (1e-12);
    ``tie_tol`` relative noise level of the lexicographic comparisons (1e-11, module docstring);
    ``record_bases`` (diagnostic) record every basis of the path in ``info["bases"]`` (one list per
    path, a basis as the sorted tuple of its variables: w_i = i, z_i = n + i, z0 = 2n); it steps the
    path one pivot at a time. ``max_iter``: the pivot budget (default ``PIVOTS_PER_ROW`` * n = 50 n).
"""


# --------------------------------------------------------------------------------------------
# LCP
# --------------------------------------------------------------------------------------------

@register("lcp", "lemke",
          "lexicographic Lemke (covering vector e); secondary ray -> infeasibility certificate",
          applies=_too_big)
def lcp_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, cover=None, restarts=2, record_bases=False):
    """Lexicographic Lemke for the LCP (module docstring).

    ``cover``: covering vector (default ones); ``restarts``: after a secondary ray *without*
    certificate, retry this many times with random covering vectors (a certified ray is final).

    {solve_contract}
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> s = nsopt.solve(p, method="lemke", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [1.333333 2.333333]
    """
    M, q, out = _box_start(problem, mon)
    if out is not None:
        return out
    lo, hi = box_of(problem)
    return _lemke(problem, M, mon, to_x=lambda z: {"z": z}, err_of=lambda x: problem.error(x["z"]),
                  polish=lambda z, basic: ({"z": p} for p in _basis_points(M, q, lo, hi, z, basic)),
                  piv_tol=piv_tol, tie_tol=tie_tol, cover=cover, restarts=restarts,
                  record_bases=record_bases)


lcp_lemke.__doc__ += _OPTIONS_DOC


# --------------------------------------------------------------------------------------------
# Relay
# --------------------------------------------------------------------------------------------

@register("relay", "lemke", "Lemke on the LCP reformulation of the box VI (z = lb + x, upper multiplier y)",
          applies=_too_big)
def relay_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, record_bases=False):
    """Relay by Lemke on its LCP reformulation (:class:`~nsopt.reductions.RelayToLCP`).

    {solve_contract}
    >>> p = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> s = nsopt.solve(p, method="lemke", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [ 1. -1.]
    """
    M, q, out = _box_start(problem, mon)
    if out is not None:
        return out
    lo, hi = box_of(problem)
    red = RelayToLCP()
    lcp, data = red.apply(problem)

    def polish(x, basic):
        z = red.invert({"z": x}, data)["z"]
        return ({"z": p} for p in _basis_points(M, q, lo, hi, z, red.basis_support(basic, data)))

    return _lemke(lcp, np.asarray(lcp.M), mon, to_x=lambda z: red.invert({"z": z}, data),
                  err_of=lambda x: problem.error(x["z"]),
                  polish=polish, piv_tol=piv_tol, tie_tol=tie_tol, record_bases=record_bases,
                  info={"lcp_size": lcp.size})


relay_lemke.__doc__ += _OPTIONS_DOC


# --------------------------------------------------------------------------------------------
# MLCP and AVI
# --------------------------------------------------------------------------------------------

def _mlcp_tries(mlcp, mon, reduction, err_of, to_x, record_bases, piv_tol, tie_tol, good):
    """Lemke on the LCP of ``mlcp`` by ``reduction`` ("auto": the Schur route, then the split one when
    the first does not reach ``good``). ``to_x`` maps the MLCP's z to the caller's variables."""
    M = dense_of(mlcp.M, "M", "lemke")
    q = np.asarray(mlcp.q, dtype=float)
    lo, hi = box_of(mlcp)
    ne = int(np.sum(mlcp.is_eq))
    mon.budget(PIVOTS_PER_ROW * max(1, 2 * ne + mlcp.m if reduction != "schur" else mlcp.m))
    best, pivots = None, 0
    for name in ([reduction] if reduction != "auto" else ["auto", "split"]):
        red = MLCPToLCP(name)
        lcp, data = red.apply(mlcp)
        if best is not None and data["how"] == best.info["reduction"]:
            continue

        def polish(x, basic, red=red, data=data):
            z = red.invert({"z": x}, data)["z"]
            return (to_x(p) for p in _basis_points(M, q, lo, hi, z, red.basis_support(basic, data)))

        out = _lemke(lcp, np.asarray(lcp.M), mon,
                     to_x=lambda x, red=red, data=data: to_x(red.invert({"z": x}, data)["z"]),
                     err_of=err_of, polish=polish, piv_tol=piv_tol, tie_tol=tie_tol,
                     record_bases=record_bases, info={"reduction": data["how"], "lcp_size": lcp.size})
        pivots += out.info.get("pivots", 0)
        out.info["error"] = err_of(out.x) if out.x else np.inf
        if best is None or out.info["error"] < best.info["error"]:
            best = out
        if best.info["error"] <= good or mon.status in (Status.CALLBACK_STOP, Status.TIME_LIMIT,
                                                          Status.MAX_ITER, Status.NUMERICAL_ERROR):
            break
    if mon.status in (Status.CALLBACK_STOP, Status.TIME_LIMIT) and best.status is not mon.status:
        best.status, best.message = mon.status, mon.message   # stopped while trying the split route
    best.nit = mon.k
    best.info["pivots"] = pivots
    return best


@register("mlcp", "lemke", "Lemke on the LCP reduction (Schur complement of A, or u = u+ - u-)",
          applies=_too_big)
def mlcp_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, reduction="auto", record_bases=False):
    """MLCP by Lemke on :class:`~nsopt.reductions.MLCPToLCP`: ``reduction`` "auto" (Schur complement
    when A is well conditioned, else split; when the Schur route does not reach ``tol``, the split
    one is tried as well), "schur" or "split".

    {solve_contract}
    >>> p = nsopt.MLCP(A=[[2.0]], B=[[2.0]], C=[[1.0]], D=[[1.0]], a=[-2.0], b=[-3.0])
    >>> s = nsopt.solve(p, method="lemke", tol=1e-10)
    >>> print(s.status.value, s.z.round(6))
    solved [0.333333 1.333333]
    """
    MLCPToLCP(reduction)   # validates the option
    out = _box_start(problem, mon)[-1]
    if out is not None:
        return out
    return _mlcp_tries(problem, mon, reduction, lambda x: problem.error(x["z"]), lambda z: {"z": z},
                       record_bases, piv_tol, tie_tol, mon.tol)


mlcp_lemke.__doc__ += _OPTIONS_DOC


@register("avi", "lemke",
          "Lemke on the KKT system of the AVI (MLCP -> LCP, Schur complement when M is invertible)",
          applies=_too_big)
def avi_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, reduction="auto", record_bases=False):
    """AVI by Lemke on its KKT MLCP (:class:`~nsopt.reductions.AVIToLCP`); a warm start is only
    checked as a solution. ``info["multipliers"]``: lambda; ``info["kkt_error"]``.

    {solve_contract}
    >>> p = nsopt.AVI([[1.0, 0.0], [0.0, 1.0]], [-2.0, -1.0], [[-1.0, -1.0]], [-1.0])
    >>> s = nsopt.solve(p, method="lemke", tol=1e-10)
    >>> print(s.status.value, s.z.round(6) + 0.0)
    solved [1. 0.]
    """
    MLCPToLCP(reduction)
    out = _begin(problem, mon)
    if out is not None:
        return out
    kkt = AVIToMLCP()
    mlcp, kkt_data = kkt.apply(problem)
    n = problem.size
    out = _mlcp_tries(mlcp, mon, reduction, lambda x: problem.error(x["z"]),
                      lambda zl: {"z": zl[:n], "zl": zl}, record_bases, piv_tol, tie_tol, mon.tol * 1e-2)
    zl = out.x.get("zl", np.zeros(mlcp.size)) if out.x else np.zeros(mlcp.size)
    out.x = {"z": zl[:n]}
    out.info.update(multipliers=kkt.multipliers({"z": zl}, kkt_data), kkt_error=mlcp.error(zl))
    return out


avi_lemke.__doc__ += _OPTIONS_DOC


# --------------------------------------------------------------------------------------------
# FC2D
# --------------------------------------------------------------------------------------------

@register("fc2d", "lemke", "Lemke on the 2D Coulomb LCP (r_T = beta - mu r_N, 3 pairs per contact)",
          applies=_too_big)
def fc2d_lemke(problem, mon, *, piv_tol=1e-12, tie_tol=1e-11, record_bases=False):
    """FC2D by Lemke on the LCP of Coulomb's law (:class:`~nsopt.reductions.FC2DToLCP`); a warm
    start is only checked as a solution.

    {solve_contract}
    >>> p = nsopt.FrictionContact(2, [[1.0, 0.1], [0.1, 1.2]], [-1.0, -2.0], [0.3])
    >>> s = nsopt.solve(p, method="lemke", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [0.970874 0.291262]
    """
    red = FC2DToLCP()
    out = _begin(problem, mon)
    if out is not None:
        return out
    lcp, data = red.apply(problem)
    Ml, ql = np.asarray(lcp.M), np.asarray(lcp.q)
    lo, hi = box_of(lcp)

    def polish(x, basic):
        return (red.invert({"z": p}, data) for p in _basis_points(Ml, ql, lo, hi, x, basic))

    return _lemke(lcp, Ml, mon, to_x=lambda z: red.invert({"z": z}, data), err_of=lambda x: problem.error(x["r"]),
                  polish=polish,
                  piv_tol=piv_tol, tie_tol=tie_tol, record_bases=record_bases, info={"lcp_size": lcp.size})


fc2d_lemke.__doc__ += _OPTIONS_DOC
