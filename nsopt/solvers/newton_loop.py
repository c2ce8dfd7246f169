r"""The globalised Newton loop of every Newton method, written once.

Each iteration of :func:`newton_loop` on a system (an object that knows its residual, its Newton
system and its merit :math:`f = \tfrac12\|\phi\|^2`):

1. ``f0 = system.linearise(x)``: the residual and an element of the generalised Jacobian at x;
2. the plain Newton direction ``system.direction(x, None)`` (:mod:`nsopt.solvers.newton_system`) and a
   backtracking line search ``system.search(x, d, f0, fref, regularised)`` against
   :math:`f_\text{ref}` (``f0``, or the largest of the last ``memory`` merits: non-monotone, at most
   ``rise`` x ``f0`` when given);
3. with ``reg`` > 0, when the plain step is singular or cut below ``reg_step``: the regularised
   direction ``system.direction(x, c_k s \min(e_k, 1))`` (Levenberg–Marquardt-like, ``s`` =
   ``system.wscale``; the system says what it regularises), the better of the two steps kept; once
   a plain step has been singular or poor, only the regularised one is taken (``plain``), and the
   factor :math:`c_k` adapts as Levenberg–Marquardt's does (``adapt``: halved after a full step,
   doubled after one cut below ``REG_CUT``, within ``REG_RANGE`` x reg);
4. a failed line search: ``system.fallback(x)`` (projected sweeps, a projected step), or a stop
   (``STALLED``, ``system.why``) for a system without one;
5. the error ``system.error(x)`` (the problem's measure; ``system.polish(x, err)`` may improve the
   iterate) recorded by the monitor (:meth:`nsopt.monitor.Monitor.step`), which alone judges it;
6. the method's own stops: a stall (the best error not halved over ``stall`` iterations), creeping
   (``CREEP_N`` iterations in a row cut below ``CREEP_T`` without halving it), and every ``switch``
   iterations of slow progress the line search alternates between monotone and non-monotone.

A stalled loop returns ``stalled=True``; the caller continues (``nsn-ac``: the proximal continuation,
:func:`nsopt.solvers.newton._prox_loop`, whose inner solves are this loop again). The loop of a small
dense W (``newton_dense`` in :mod:`nsopt.solvers._newton_kernels`) is this loop compiled, step for
step (tests/test_solvers_newton.py compares the two). The smoothed sensitivity's Newton
(:meth:`nsopt.sensitivity.Sensitivity.smoothed`) is an instance too.
"""

from __future__ import annotations

from ..result import Status

# stalled/creeping: CREEP_N iterations in a row whose line search cut the step below CREEP_T (or failed) without
# halving the best error
CREEP_T, CREEP_N = 2.0 ** -10, 5
# the adaptive factor c_k of the regularised Newton matrix: halved after a full regularised step, doubled after one
# the line search cut below REG_CUT, kept in [reg x REG_RANGE[0], reg x REG_RANGE[1]]
REG_CUT, REG_RANGE = 0.25, (0.1, 10.0)
REG_STEP = 0.1   # a plain step cut below this is retried regularised (the option reg_step)


def newton_loop(system, x, mon, *, line_search="armijo", memory=5, rise=None, stall=None, switch=0, reg=0.0,
                reg_step=REG_STEP, plain="until_poor", adapt=True, started=False):
    """Globalised Newton iterations on ``system`` from ``x`` under the monitor ``mon`` (whose
    :meth:`~nsopt.monitor.Monitor.start` it calls unless ``started``, a continuation of a solve the
    monitor is recording). ``plain``: when the plain Newton step is tried, with ``reg`` > 0:
    "until_poor" (until a plain step is singular or cut below ``reg_step``, then only the
    regularised one), "always" (the regularised one only after a failed plain step, with
    ``reg_step`` 0), "never" (every step regularised). Returns (last x, stalled, info); the best
    iterate is the monitor's."""
    err = system.error(x)
    bests = [err]
    if not started:
        mon.start(system.variables(x), err)
    merits = []
    n_fallback = n_singular = n_switch = n_lm = n_skip = 0
    stalled = False
    k = creep = 0
    creg = reg
    policy = plain
    plain = policy != "never" or not reg    # try the plain matrix first
    while not mon.stopped:
        f0 = system.linearise(x)
        merits.append(f0)
        fref = max(merits[-memory:]) if line_search == "nonmonotone" else f0
        if rise is not None and fref > rise * f0:
            fref = rise * f0
        accepted, t, ft, d = False, 0.0, f0, None
        if plain:
            d = system.direction(x, None)
            if d is not None:
                accepted, t, ft = system.search(x, d, f0, fref, line_search, False)
            else:
                n_singular += 1
        else:
            n_skip += 1
        if reg and (not plain or not accepted or t < reg_step):
            # a singular or poor plain step (W singular: a hyperstatic pile of contacts) is not tried again in this
            # solve: the regularised matrix (whose shift vanishes with the error) takes every step, one factorisation
            # an iteration instead of two
            plain = policy == "always"
            d2 = system.direction(x, creg * system.wscale * min(err, 1.0))
            if d2 is not None:
                a2, t2, f2 = system.search(x, d2, f0, fref, line_search, True)
                if a2 and (not accepted or f2 < ft):
                    accepted, t, ft, d = True, t2, f2, d2
                    n_lm += 1
                if adapt:     # Levenberg–Marquardt's rule for its factor: less shift after a full step, more after a short one
                    if a2 and t2 >= 1.0:
                        creg = max(0.5 * creg, REG_RANGE[0] * reg)
                    elif not a2 or t2 < REG_CUT:
                        creg = min(2.0 * creg, REG_RANGE[1] * reg)
        creep = creep + 1 if not accepted or t < CREEP_T else 0
        if accepted:
            x = system.move(x, t, d)
        else:
            n_fallback += 1
            merits.clear()
            fx = system.fallback(x)
            if fx is None:
                mon.stop(Status.STALLED, system.why(mon.k))
                break
            x = fx
        err = system.error(x)
        if system.polish is not None:
            x, err = system.polish(x, err)
        k += 1
        if mon.step(system.variables(x), err):
            break
        best_err = min(bests[-1], err)
        bests.append(best_err)
        if stall is not None and ((len(bests) > stall and best_err > 0.5 * bests[-1 - stall]) or
                                  (CREEP_N and creep >= CREEP_N and best_err > 0.5 * bests[-1 - creep])):
            stalled = True
            break
        if switch and k % switch == 0 and len(bests) > switch and best_err > 0.5 * bests[-1 - switch] \
                and line_search != "none":
            # slow progress: alternate monotone / non-monotone acceptance, restart the memory
            line_search = "armijo" if line_search == "nonmonotone" else "nonmonotone"
            merits.clear()
            n_switch += 1
    info = {"fallback_steps": n_fallback, "singular": n_singular, "line_search_switches": n_switch,
            "regularised_steps": n_lm, "plain_skipped": n_skip}
    return x, stalled, info
