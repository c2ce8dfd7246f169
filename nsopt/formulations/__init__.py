"""Convex formulations of the one-step nonsmooth problems, as inspectable CVXPY programs.

Examples
--------
>>> import nsopt, nsopt.generate as g
>>> p, known = g.lcp(5, seed=1)                  # symmetric positive definite M, known solution
>>> f = nsopt.formulations.LCPasQP(p)
>>> print(f.explain())                           # doctest: +ELLIPSIS
LCP(M, q) with symmetric positive semidefinite M as a convex QP
<BLANKLINE>
Variables:
z in R^5
...
>>> sol = nsopt.solve(p, method="qp", formulation=f)   # solved by nsopt.solvers.convex
>>> sol.status.value, bool(abs(sol.z - known["z"]).max() < 1e-8)
('solved', True)

The formulations:

=====================  ================================================  ===========================
class                  program                                           nsopt method
=====================  ================================================  ===========================
``LCPasQP``            ``min 1/2 z'Mz + q'z, z >= 0``                    lcp ``"qp"``
``MLCPasQP``           same, equality variables free                     mlcp ``"qp"``
``RelayAsQP``          same over the box ``[lb, ub]``                    relay ``"qp"``
``AVIasQP``            same over ``{Hz >= k}``                           avi ``"qp"``
``FCasSOCP``           SOCP + fixed point on ``s = mu ||u_T||``          fc2d/fc3d ``"socp-fp"``
``FCTresca``           cylinder SOCP + fixed point ``g = mu r_N``        fc2d/fc3d ``"socp-tresca"``
``GFCPrimalSOCP``      ``min 1/2 v'Mv - q'v, H'v + b + s~ in K*``        gfc2d/gfc3d ``"socp-fp"``
=====================  ================================================  ===========================

The derivations (program, KKT, why KKT = the problem, when it fails, a worked example) are in the
project's ``formulations/*.md``. This package only builds the programs (with constant data, so that a
sparse matrix stays sparse in CVXPY); the methods that solve them (status maps, the fixed points,
the Newton polish) are ``nsopt/solvers/convex.py`` and ``nsopt/solvers/socp_fp.py``.
"""

from ._base import ACCURATE, DEFAULT_BACKEND, Formulation, check_symmetric_psd
from .avi import AVIasQP
from .fc import FCasSOCP, FCTresca
from .gfc import GFCPrimalSOCP
from .lcp import BoxQP, LCPasQP
from .mlcp import MLCPasQP
from .relay import RelayAsQP

__all__ = [
    "ACCURATE",
    "DEFAULT_BACKEND",
    "AVIasQP",
    "BoxQP",
    "FCTresca",
    "FCasSOCP",
    "Formulation",
    "GFCPrimalSOCP",
    "LCPasQP",
    "MLCPasQP",
    "RelayAsQP",
    "check_symmetric_psd",
    "formulation_for",
]


def formulation_for(problem, method=None, **kw):
    """The formulation object nsopt uses for ``problem`` (and method, for friction contact).

    Parameters
    ----------
    problem : Problem
        LCP, MLCP, Relay, AVI, FrictionContact or GlobalFrictionContact.
    method : str, optional
        ``"socp-tresca"`` selects :class:`FCTresca` for friction contact, else :class:`FCasSOCP`.
    **kw
        Passed to the formulation.

    Returns
    -------
    Formulation

    Raises
    ------
    TypeError
        For a kind without a convex formulation.

    Examples
    --------
    >>> import nsopt
    >>> nsopt.formulations.formulation_for(nsopt.LCP([[1.0]], [-1.0])).__class__.__name__
    'LCPasQP'
    """
    k = problem.kind
    if k == "lcp":
        return LCPasQP(problem, **kw)
    if k == "mlcp":
        return MLCPasQP(problem, **kw)
    if k == "relay":
        return RelayAsQP(problem, **kw)
    if k == "avi":
        return AVIasQP(problem, **kw)
    if k in ("fc2d", "fc3d"):
        return FCTresca(problem, **kw) if method == "socp-tresca" else FCasSOCP(problem, **kw)
    if k in ("gfc2d", "gfc3d"):
        return GFCPrimalSOCP(problem, **kw)
    raise TypeError(f"no convex formulation for a {k} problem")
