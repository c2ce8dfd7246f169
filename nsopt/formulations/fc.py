"""Friction contact (2D/3D) as second-order-cone programs for a frozen shift (see ``formulations/fc3d.md``).

:class:`FCasSOCP` — De Saxcé's program: for fixed ``s_a = mu_a ||u_T,a||`` the modified Coulomb
problem is the KKT system of the convex SOCP ``min 1/2 r^T W r + (q + s~)^T r, r in K``.

:class:`FCTresca` — the cylinder (Tresca) program: for fixed thresholds ``g_a`` the friction disc
``||r_T,a|| <= g_a, r_N,a >= 0`` replaces the cone; with ``g = mu r_N`` it is Coulomb's law.

These classes only build the programs. The fixed points that turn them into Coulomb's law (Anderson
acceleration, the direct Clarabel re-solve, the Newton polish) are ``nsopt/solvers/socp_fp.py``.

A nonsymmetric W (Siconos' Capsules files: ||W - W^T|| / ||W|| ~ 1e-4) is split W = S + A, S the
symmetric part in the quadratic form and ``A r_k`` carried in the linear term by the fixed point.
Variables are scaled contact by contact (``r = D rhat``, unit mean diagonal of each block of S).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..problems._base import matvec
from ._base import Formulation, quad_matrix, sym_part

G_FLOOR = 1e-12      # smallest Tresca threshold, relative to the largest (scaled) one


class _FCBase(Formulation):
    """Common data of the local friction-contact programs: symmetric split, per-contact scaling.

    ``linear`` is the linear term of the objective in the scaled variables (a constant of the
    program, ``linear_var`` the variable it multiplies); ``head`` (Tresca) the constant heads of the
    second-order cones (``head_constraint``). A fixed point changes only these.
    """

    head_constraint = None

    def __init__(self, problem, *, backend=None, backend_options=None, scale=True):
        super().__init__(problem, backend=backend, backend_options=backend_options, conic=True)
        self.dim, self.nc = problem.dim, problem.nc
        W = sp.csr_matrix(problem.W) if sp.issparse(problem.W) else np.asarray(problem.W)
        self.W = W
        self.S = sym_part(W)
        A = W - self.S
        amax = abs(A).max() if (A.nnz if sp.issparse(A) else A.size) else 0.0
        self.A = (sp.csr_matrix(A) if sp.issparse(A) else A) if amax > 0 else None
        self.q_data = np.asarray(problem.q, float)
        # per-contact scaling r = d_a * rhat: unit mean diagonal of each contact's block of S
        diag = (self.S.diagonal() if sp.issparse(self.S) else np.diag(self.S)).reshape(self.nc, self.dim)
        dg = diag.mean(axis=1)
        ref = float(np.median(dg[dg > 0])) if np.any(dg > 0) else 1.0
        dg = np.where(dg > 1e-12 * ref, dg, ref)
        self.d = 1.0 / np.sqrt(dg) if scale else np.ones(self.nc)
        self.dd = np.repeat(self.d, self.dim)
        if self.dd.size:
            D = sp.diags(self.dd)
            P = D @ (sp.csr_matrix(self.S) if sp.issparse(self.S) else self.S) @ D
            self.P = sp.csr_matrix(P) if sp.issparse(self.S) else np.asarray(P)
        else:
            self.P = self.S
        self.rhat = self.linear_var = None
        self.linear = self.dd * self.q_data

    def velocity(self, r):
        """u = W r + q."""
        return matvec(self.W, r) + self.q_data

    def shift(self, u):
        """s~: mu_a ||u_T,a|| in each normal slot (De Saxcé's modification of the velocity)."""
        U = u.reshape(self.nc, self.dim)
        out = np.zeros((self.nc, self.dim))
        out[:, 0] = np.asarray(self.problem.mu) * np.sqrt(np.sum(U[:, 1:] ** 2, axis=1))
        return out.reshape(-1)

    def reaction(self, rhat):
        """r = D rhat (unscale a solution of the program)."""
        return self.dd * rhat

    def _program(self, P, cons):
        r"""The program :math:`\min \tfrac12\hat r^\top P\hat r + \ell^\top\hat r` subject to ``cons``
        (:math:`\ell`: :attr:`linear`), kept in :attr:`program`."""
        import cvxpy as cp

        obj = 0.5 * cp.quad_form(self.rhat, cp.psd_wrap(quad_matrix(P))) + self.linear @ self.rhat
        self.program = cp.Problem(cp.Minimize(obj), cons)
        return self.program


class FCasSOCP(_FCBase):
    r"""Coulomb friction contact as the SOCP of a frozen shift s (De Saxcé's bipotential view).

    For fixed s (one s_a per contact) the program is

    .. math:: \min_r \tfrac12 r^\top W r + (q + \tilde s)^\top r \quad \text{s.t.}\ r_a \in K_{\mu_a},

    with :math:`\tilde s` holding s_a in each normal slot; a fixed point of s = mu ||u_T(r(s))|| is
    Coulomb's law (``nsopt.solve(p, method="socp-fp")``, ``formulations/fc3d.md``).

    Parameters
    ----------
    problem : FrictionContact
        2D or 3D.
    backend : str, optional
        The CVXPY conic backend (default ``"CLARABEL"``; ``"SCS"``, ``"ECOS"`` when installed).
    backend_options : dict, optional
        Merged over nsopt's accurate defaults.
    scale : bool, optional
        Per-contact diagonal scaling of the variables (default True): a unit diagonal for ``DWD``.
    prox : float, optional
        A proximal term prox/2 ||rhat - rhat_k||^2 in the scaled variables, for a singular W.
    linear : ndarray, optional
        The scaled linear term D (q + s~) the program is built with; default D q, i.e. s = 0.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], [0.5])
    >>> f = nsopt.formulations.FCasSOCP(p)
    >>> "Coulomb" in f.explain()
    True
    >>> s = nsopt.solve(p, method="socp-fp", formulation=f, tol=1e-10)
    >>> print(s.status.value, s.r.round(6) + 0.0)
    solved [ 1.  -0.5  0. ]
    """

    method = "socp-fp"

    def __init__(self, problem, *, backend=None, backend_options=None, scale=True, prox=0.0, linear=None):
        t0 = time.perf_counter()
        super().__init__(problem, backend=backend, backend_options=backend_options, scale=scale)
        self.prox = float(prox)
        self.cone = None
        self.build(self.linear if linear is None else linear)
        self.build_time = time.perf_counter() - t0

    def build(self, linear):
        """(Re)build the program with the scaled linear term ``linear`` (a constant)."""
        import cvxpy as cp

        p = self.problem
        n, nc, dim = p.size, self.nc, self.dim
        self.linear = np.asarray(linear, float).copy()
        if n == 0:
            self.program = self._empty_program()
            return self.program
        P = self.P + self.prox * (sp.eye(n, format="csr") if sp.issparse(self.P) else np.eye(n))
        self.rhat = self.linear_var = cp.Variable(n, name="r_scaled")
        R = cp.reshape(self.rhat, (nc, dim), order="C")
        mu = np.asarray(p.mu, float)
        pos, zero = np.flatnonzero(mu > 0), np.flatnonzero(mu == 0)
        cons = []
        self.cone = None
        if pos.size == nc:
            self.cone = cp.SOC(cp.multiply(mu, R[:, 0]), R[:, 1:], axis=1)
        elif pos.size:
            self.cone = cp.SOC(cp.multiply(mu[pos], R[pos, 0]), R[pos, 1:], axis=1)
        if self.cone is not None:
            cons.append(self.cone)
        if zero.size:   # mu = 0: the cone degenerates to the half-line r_T = 0, r_N >= 0
            cons += [R[zero, 0] >= 0, R[zero, 1:] == 0]
        return self._program(P, cons)

    def statement(self):
        p = self.problem
        return {
            "title": f"FC{p.dim}D Coulomb friction ({p.nc} contacts) as a fixed point on second-order-cone programs",
            "variables": {"text": f"r in R^{p.size} (contact by contact: r_N then r_T), scaled r = D rhat",
                          "latex": rf"r = (r_{{N,a}}, r_{{T,a}})_{{a=1..{p.nc}}}"},
            "objective": {"text": ("minimize 1/2 r^T W r + (q + s~)^T r, with s~_a = (s_a, 0...) and "
                                   "s_a = mu_a ||u_T,a|| frozen at the previous iterate (a constant of the "
                                   "compiled program, updated in place by the fixed point)"),
                          "latex": (r"\min_r\ \tfrac12 r^\top W r + (q + \tilde s)^\top r,\ "
                                    r"\tilde s_a = (\mu_a\|u_{T,a}\|, 0)")},
            "constraints": {"text": "r_a in K_mu_a = {||r_T,a|| <= mu_a r_N,a} for every contact, as ONE "
                                    "vectorised SOC constraint (multiplier y_a in the dual cone)",
                            "latex": r"r_a \in K_{\mu_a} = \{\|r_{T}\| \le \mu_a r_{N}\}"},
            "kkt": {"text": ("stationarity W r + q + s~ = y with y in K* and r ⊥ y: y is De Saxcé's modified "
                             "velocity u + mu ||u_T|| e_N once s equals mu ||u_T(r)||, so a fixed point of "
                             "s <- mu ||u_T(r(s))|| is exactly Coulomb's law K ∋ r ⊥ û ∈ K*."),
                    "latex": (r"Wr + q + \tilde s = y,\ K \ni r \perp y \in K^*;\ "
                              r"\tilde s = \mu\|u_T(r)\| \Rightarrow y = \hat u")},
            "when_fails": ("The symmetric part of W must be PSD (it is, W = H^T M^-1 H; checked, else "
                           "NotApplicable); a nonsymmetric part of W is moved to the "
                           "linear term by the same fixed point. The map s -> mu ||u_T(r(s))|| need not be a "
                           "contraction (large mu, singular W): the fixed point may stall or cycle, which "
                           "is reported (Status.STALLED) and `auto` falls back to Newton. With mu > 0 and s = 0 "
                           "(no fixed point) the solution is that of a different, associated friction law."),
        }


class FCTresca(_FCBase):
    """Tresca (cylinder) program; the Coulomb fixed point g <- mu r_N is built on it.

    For fixed thresholds g: ``min 1/2 r^T W r + q^T r`` s.t. ``r_N,a >= 0``, ``||r_T,a|| <= g_a``.
    KKT: ``0 <= r_N ⊥ u_N >= 0`` and ``-u_T in N_{disc(g)}(r_T)``: Tresca's law. With g = mu r_N it is
    Coulomb's law (no De Saxcé shift needed: the normal complementarity is on u_N itself).

    Parameters
    ----------
    problem : FrictionContact
    g : (nc,) array_like, optional
        Fixed thresholds: ``nsopt.solve(p, method="socp-tresca", formulation=FCTresca(p, g=...))``
        then solves this one Tresca problem; default None, the Coulomb fixed point.
    backend, backend_options, scale
        As :class:`FCasSOCP`.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], [0.5])
    >>> s = nsopt.solve(p, method="socp-tresca", tol=1e-10)
    >>> print(s.status.value, s.r.round(6) + 0.0)
    solved [ 1.  -0.5  0. ]
    """

    method = "socp-tresca"

    def __init__(self, problem, *, g=None, backend=None, backend_options=None, scale=True):
        t0 = time.perf_counter()
        super().__init__(problem, backend=backend, backend_options=backend_options, scale=scale)
        nc = self.nc
        self.g_fixed = None if g is None else np.broadcast_to(np.asarray(g, float), (nc,)).copy()
        self.disc = None
        self.build(self.linear, self.scaled_thresholds(np.ones(nc) if g is None else self.g_fixed))
        self.build_time = time.perf_counter() - t0

    def scaled_thresholds(self, g):
        """The disc radii of the scaled program for thresholds g (unscaled), floored at G_FLOOR x the
        largest: a zero radius leaves the disc without interior (interior-point solvers then fail)."""
        gs = np.maximum(np.asarray(g, float), 0.0) / self.d
        return np.maximum(gs, G_FLOOR * max(float(gs.max(initial=0.0)), 1.0))

    def build(self, linear, head):
        """(Re)build the program with the scaled linear term and the scaled disc radii (constants)."""
        import cvxpy as cp

        n, nc, dim = self.problem.size, self.nc, self.dim
        self.linear = np.asarray(linear, float).copy()
        self.head = np.asarray(head, float).copy()
        if n == 0:
            self.program = self._empty_program()
            return self.program
        self.rhat = self.linear_var = cp.Variable(n, name="r_scaled")
        R = cp.reshape(self.rhat, (nc, dim), order="C")
        self.disc = self.head_constraint = cp.SOC(cp.Constant(self.head), R[:, 1:], axis=1)
        cons = [R[:, 0] >= 0, self.disc]
        return self._program(self.P, cons)

    def statement(self):
        p = self.problem
        return {
            "title": f"FC{p.dim}D Coulomb friction ({p.nc} contacts) by Tresca (cylinder) programs, g <- mu r_N",
            "variables": {"text": f"r in R^{p.size}", "latex": r"r = (r_{N,a}, r_{T,a})_a"},
            "objective": {"text": "minimize 1/2 r^T W r + q^T r",
                          "latex": r"\min_r\ \tfrac12 r^\top W r + q^\top r"},
            "constraints": {"text": "r_N,a >= 0 and ||r_T,a|| <= g_a (the friction disc; g a constant of the "
                                    "compiled program, updated in place by the fixed point)",
                            "latex": r"r_{N,a} \ge 0,\ \|r_{T,a}\| \le g_a"},
            "kkt": {"text": ("u = W r + q: 0 <= r_N ⊥ u_N >= 0, and -u_T in the normal cone of the disc at "
                             "r_T (stick inside, slide opposite to r_T on the rim): Tresca's law; when "
                             "g = mu r_N at the solution this is Coulomb's law."),
                    "latex": (r"0 \le r_N \perp u_N \ge 0,\ -u_T \in N_{\{\|\cdot\| \le g\}}(r_T),\ "
                              r"g = \mu r_N \Rightarrow \text{Coulomb}")},
            "when_fails": ("The map g -> mu r_N(g) is a contraction only for small enough mu (a classical "
                           "result for Coulomb's law by successive Tresca problems); otherwise it may "
                           "stall or cycle (reported)."),
        }
