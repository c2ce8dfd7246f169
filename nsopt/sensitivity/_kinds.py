r"""Each problem kind written as one affine law system :math:`y = \mathcal M x + \bar q` with its laws
(:mod:`._laws`), and the maps between the kind's fields and variables and that system.

A model gives, for the implicit-function theorem of :mod:`.core`:

* ``forward(d)``: for data directions ``d`` (by field name), :math:`dy_0 = d\mathcal M\,x + d\bar q`
  and the directions of the laws' own data (bounds, :math:`\mu`);
* ``backward(p, law)``: the transpose, the gradients of the fields from the cotangent ``p`` of
  :math:`dy_0` and those of the laws' data;
* ``outputs(dx, dy, d)`` / ``outputs_t(g)``: the kind's variables from :math:`(dx, dy)` and back.

Kinds: LCP, MLCP, Relay, Equality (box laws on M, q); AVI (its KKT MLCP on :math:`(z, \lambda)`);
FrictionContact (W, q, mu); GlobalFrictionContact (:math:`(v, r)`, the equations
:math:`Mv - Hr - q = 0` as free rows); GenericMechanical (mixed blocks).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import NotApplicable, ProblemError
from ..problems._base import matvec
from ._laws import Laws


# ------------------------------------------------------------------------------- helpers
def outer_on(A, a, b):
    """The outer product a bᵀ as the gradient of the field A: dense when A is dense, on A's
    sparsity pattern (CSR, A's indices) when A is sparse: never densified."""
    if sp.issparse(A):
        A = A.tocsr()
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        return sp.csr_matrix((a[rows] * b[A.indices], A.indices.copy(), A.indptr.copy()), shape=A.shape)
    return np.outer(a, b)


def _zero_like(A):
    if sp.issparse(A):
        A = A.tocsr()
        return sp.csr_matrix((np.zeros(A.nnz), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    return np.zeros(np.shape(A))


def real_array(d, name, owner, what="direction"):
    """``d`` as a float array, or ProblemError naming ``name`` when it is not made of real numbers
    (strings, complex numbers, None, ragged lists)."""
    try:
        a = np.asarray(d)
    except (TypeError, ValueError):
        raise ProblemError(name, f"{what} is not a numeric array", owner) from None
    if a.dtype.kind not in "fiub":
        got = "complex numbers" if a.dtype.kind == "c" else f"dtype {a.dtype}"
        raise ProblemError(name, f"{what} must be real numbers, got {got}", owner)
    return a.astype(float)


def matrix_direction(d, A, name, owner):
    """A direction of the matrix field ``name`` (dense or sparse, A's shape), checked."""
    if sp.issparse(d):
        if d.dtype.kind not in "fiub":
            raise ProblemError(name, f"direction must be real numbers, got dtype {d.dtype}", owner)
        D = sp.csr_matrix(d, dtype=float)
    else:
        D = real_array(d, name, owner)
    if D.shape != A.shape:
        raise ProblemError(name, f"direction has shape {D.shape}, expected {A.shape}", owner)
    data = D.data if sp.issparse(D) else D
    if not np.all(np.isfinite(data)):
        raise ProblemError(name, "direction has non-finite entries", owner)
    return D


def vector_direction(d, size, name, owner, what="direction"):
    """A vector of ``size`` entries (a number: the same for every entry), checked: real, finite,
    one-dimensional (a (size, 1) column is refused: it is not the field's shape)."""
    a = real_array(d, name, owner, what)
    if a.ndim == 0:
        a = np.full(size, float(a))
    elif a.ndim != 1:
        raise ProblemError(name, f"{what} has shape {a.shape}, expected ({size},)", owner)
    if a.shape[0] != size:
        raise ProblemError(name, f"{what} has {a.shape[0]} entries, expected {size}", owner)
    if not np.all(np.isfinite(a)):
        raise ProblemError(name, f"{what} has non-finite entries", owner)
    return a


def check_eps(eps):
    """The smoothing parameter: a real number in (0, 1] (numpy scalars accepted, bools refused)."""
    ok = isinstance(eps, (int, float, np.integer, np.floating)) and not isinstance(eps, (bool, np.bool_))
    if not ok or not np.isfinite(eps) or not 0 < float(eps) <= 1:
        raise ProblemError("eps", f"must be a real number in (0, 1] (relative to the solution's size), got {eps!r}",
                           "Sensitivity.smoothed")
    return float(eps)


def _stack(blocks):
    if any(sp.issparse(b) for row in blocks for b in row if b is not None):
        return sp.bmat(blocks, format="csr")
    return np.block([[np.zeros((0, 0)) if b is None else b for b in row] for row in blocks])


def _check(d, fields, owner):
    bad = [k for k in d if k not in fields]
    if bad:
        raise ProblemError(bad[0], f"is not a differentiable field of {owner}; fields: {', '.join(fields)}", owner)


def _check_g(g, variables, sizes, owner):
    out = {}
    for k, v in g.items():
        if k not in variables:
            raise ProblemError(k, f"is not a variable of a {owner} solution; variables: {', '.join(variables)}", owner)
        out[k] = vector_direction(v, sizes[k], k, owner, what="cotangent")
    return out


# ------------------------------------------------------------------------------- the models
class Model:
    """Base: an affine law system and the maps to a kind's fields and variables."""

    kind = ""
    fields: tuple = ()
    variables: tuple = ()
    owner = ""

    def __init__(self, problem, x, Mext, qext, laws: Laws, law_rows):
        self.problem, self.x, self.Mext, self.qext, self.laws = problem, x, Mext, qext, laws
        self.y = matvec(Mext, x) + qext
        self.law_rows = law_rows          # rows whose law is not "free" (they set the scales)

    def sizes(self):
        return {k: v.shape[0] for k, v in self.point().items()}

    def scales(self):
        """(sx, sy): the sizes against which a force, a gap or a velocity counts as zero: the largest
        |y| and |q| of the law rows, and the largest |x| of them or, when that is below 1e-6 of the
        size sy / max|M| the data give x, that size (a solution whose constrained part is all near 0,
        1e-18 say, is not its own scale)."""
        rows = self.law_rows
        from ._laws import scales

        sx, sy = scales(self.x[rows], self.y[rows], self.qext[rows])
        if not rows.size:
            return sx, sy
        M = self.Mext
        Mr = M.tocsr()[rows] if sp.issparse(M) else np.asarray(M)[rows]
        top = float(abs(Mr).max()) if sp.issparse(Mr) else float(np.max(np.abs(Mr), initial=0.0))
        xs = float(np.max(np.abs(self.x[rows]), initial=0.0))
        if top > 0 and xs < 1e-6 * sy / top:
            sx = sy / top
        return sx, sy

    def at(self, x):
        """The same model at another point (the smoothed solution)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.x = x
        new.y = matvec(self.Mext, x) + self.qext
        return new

    def law_directions(self, d):
        return {}

    def law_gradients(self, law):
        return {}


class DirectModel(Model):
    """The kinds whose unknown is the primal variable itself: x = z or r, y = w or u = (matrix) x + q;
    ``matrix`` names the matrix field (M or W), ``names`` the variables (x's, y's)."""

    matrix = "M"
    names = ("z", "w")

    def point(self):
        return {self.names[0]: self.x, self.names[1]: self.y}

    def forward(self, d):
        _check(d, self.fields, self.owner)
        dy = np.zeros(self.x.shape[0])
        if d.get(self.matrix) is not None:
            dy += matvec(matrix_direction(d[self.matrix], self.Mext, self.matrix, self.owner), self.x)
        if d.get("q") is not None:
            dy += vector_direction(d["q"], dy.shape[0], "q", self.owner)
        return dy

    def backward(self, p):
        return {self.matrix: outer_on(self.Mext, p, self.x), "q": p.copy()}

    def outputs(self, dx, dy, d):
        return {self.names[0]: dx, self.names[1]: dy}

    def outputs_t(self, g):
        n = self.x.shape[0]
        return g.get(self.names[0], np.zeros(n)), g.get(self.names[1], np.zeros(n)), {}


def _mu_directions(model, d):
    p = model.problem
    return {"mu": {p.dim: vector_direction(d["mu"], p.nc, "mu", model.owner)}} if d.get("mu") is not None else {}


class AffineModel(DirectModel):
    """LCP, MLCP, Relay, Equality: x = z, y = w = Mz + q."""

    fields = ("M", "q")
    variables = ("z", "w")

    def __init__(self, problem, z):
        p = problem
        self.owner = type(p).__name__
        if p.kind == "lcp":
            lb, ub = np.zeros(p.size), np.full(p.size, np.inf)
        elif p.kind == "mlcp":
            lb, ub = np.where(np.asarray(p.is_eq), -np.inf, 0.0), np.full(p.size, np.inf)
        elif p.kind == "relay":
            lb, ub = np.asarray(p.lb, float), np.asarray(p.ub, float)
            self.fields = ("M", "q", "lb", "ub")
        else:   # equality
            lb, ub = np.full(p.size, -np.inf), np.full(p.size, np.inf)
        laws = Laws.boxes(lb, ub)
        rows = np.flatnonzero(np.isfinite(lb) | np.isfinite(ub))
        super().__init__(p, np.asarray(z, float), p.M, np.asarray(p.q, float), laws, rows)

    def law_directions(self, d):
        n = self.x.shape[0]
        return {k: vector_direction(d[k], n, k, self.owner) for k in ("lb", "ub") if d.get(k) is not None}

    def law_gradients(self, law):
        return {k: law[k] for k in ("lb", "ub")} if "lb" in self.fields else {}


class AVIModel(Model):
    r"""AVI over K = {Hz >= k} by its KKT system on (z, λ): y = (Mz + q - Hᵀλ, Hz - k)."""

    fields = ("M", "q", "H", "k")
    variables = ("z", "w")
    owner = "AVI"

    def __init__(self, problem, z, tol):
        p = problem
        z = np.asarray(z, float)
        n, m = p.size, p.H.shape[0]
        lam = self.multipliers(p, z, tol)
        HT = p.H.T.tocsr() if sp.issparse(p.H) else np.asarray(p.H).T
        Mext = _stack([[p.M, -HT], [p.H, sp.csr_matrix((m, m)) if sp.issparse(p.H) else np.zeros((m, m))]])
        qext = np.concatenate([np.asarray(p.q, float), -np.asarray(p.k, float)])
        laws = Laws.boxes(np.concatenate([np.full(n, -np.inf), np.zeros(m)]), np.full(n + m, np.inf))
        super().__init__(p, np.concatenate([z, lam]), Mext, qext, laws, n + np.arange(m))
        self.n, self.m, self.lam = n, m, lam

    @staticmethod
    def multipliers(p, z, tol):
        r"""λ >= 0 with :math:`H_A^\top \lambda_A = Mz + q` on the active constraints (nonnegative least
        squares; λ = 0 on the inactive ones)."""
        from scipy.optimize import nnls

        H = p.H.toarray() if sp.issparse(p.H) else np.asarray(p.H, float)
        w = matvec(p.M, z) + p.q
        s = H @ z - p.k
        scale = max(float(np.max(np.abs(p.k), initial=0.0)), float(np.max(np.abs(H @ z), initial=0.0)), 1e-300)
        act = np.flatnonzero(s <= max(tol, 1e-9) * scale)
        lam = np.zeros(H.shape[0])
        if act.size and np.any(w):
            lam[act] = nnls(H[act].T, w, maxiter=50 * (act.size + 1))[0]
        return lam

    def point(self):
        z = self.x[:self.n]
        return {"z": z, "w": matvec(self.problem.M, z) + self.problem.q}

    def forward(self, d):
        _check(d, self.fields, self.owner)
        p, n = self.problem, self.n
        z, lam = self.x[:n], self.x[n:]
        dy = np.zeros(n + self.m)
        if d.get("M") is not None:
            dy[:n] += matvec(matrix_direction(d["M"], p.M, "M", "AVI"), z)
        if d.get("q") is not None:
            dy[:n] += vector_direction(d["q"], n, "q", "AVI")
        if d.get("H") is not None:
            dH = matrix_direction(d["H"], p.H, "H", "AVI")
            dy[:n] -= matvec(dH.T, lam)
            dy[n:] += matvec(dH, z)
        if d.get("k") is not None:
            dy[n:] -= vector_direction(d["k"], self.m, "k", "AVI")
        return dy

    def backward(self, p_):
        p, n = self.problem, self.n
        z, lam = self.x[:n], self.x[n:]
        p1, p2 = p_[:n], p_[n:]
        gH = outer_on(p.H, p2, z) - outer_on(p.H, lam, p1)
        return {"M": outer_on(p.M, p1, z), "q": p1.copy(), "H": gH, "k": -p2}

    def outputs(self, dx, dy, d):
        n = self.n
        dz = dx[:n]
        dw = matvec(self.problem.M, dz)
        if d.get("M") is not None:
            dw += matvec(matrix_direction(d["M"], self.problem.M, "M", "AVI"), self.x[:n])
        if d.get("q") is not None:
            dw += vector_direction(d["q"], n, "q", "AVI")
        return {"z": dz, "w": dw}

    def outputs_t(self, g):
        n, m = self.n, self.m
        gx = np.zeros(n + m)
        direct = {}
        if "z" in g:
            gx[:n] += g["z"]
        if "w" in g:
            gw = g["w"]
            gx[:n] += matvec(self.problem.M.T, gw)
            direct = {"M": outer_on(self.problem.M, gw, self.x[:n]), "q": gw.copy()}
        return gx, np.zeros(n + m), direct


class FrictionModel(DirectModel):
    """FrictionContact (2D/3D): x = r, y = u = Wr + q, one Coulomb law per contact."""

    fields = ("W", "q", "mu")
    variables = ("r", "u")
    matrix, names = "W", ("r", "u")

    def __init__(self, problem, r):
        p = problem
        self.owner = "FrictionContact"
        laws = Laws.contacts(p.dim, np.asarray(p.mu, float))
        super().__init__(p, np.asarray(r, float), p.W, np.asarray(p.q, float), laws, np.arange(p.size))

    def law_directions(self, d):
        return _mu_directions(self, d)

    def law_gradients(self, law):
        return {"mu": law["mu"][self.problem.dim]}


class GlobalModel(Model):
    r"""GlobalFrictionContact: x = (v, r), y = (Mv - Hr - q, Hᵀv + b); the first ndof rows are
    equations (free), the others Coulomb laws on (r, u)."""

    fields = ("M", "H", "q", "b", "mu")
    variables = ("v", "r", "u")
    owner = "GlobalFrictionContact"

    def __init__(self, problem, v, r):
        p = problem
        nd, m = p.ndof, p.size
        HT = p.H.T.tocsr() if sp.issparse(p.H) else np.asarray(p.H).T
        Z = sp.csr_matrix((m, m)) if sp.issparse(p.H) or sp.issparse(p.M) else np.zeros((m, m))
        mH = -p.H
        Mext = _stack([[p.M, mH], [HT, Z]])
        qext = np.concatenate([-np.asarray(p.q, float), np.asarray(p.b, float)])
        laws = Laws.contacts(p.dim, np.asarray(p.mu, float), offset=nd)
        laws.box, laws.lb, laws.ub = np.arange(nd), np.full(nd, -np.inf), np.full(nd, np.inf)
        super().__init__(p, np.concatenate([np.asarray(v, float), np.asarray(r, float)]), Mext, qext, laws,
                         nd + np.arange(m))
        self.nd, self.m = nd, m

    def point(self):
        return {"v": self.x[:self.nd], "r": self.x[self.nd:], "u": self.y[self.nd:]}

    def forward(self, d):
        _check(d, self.fields, self.owner)
        p, nd = self.problem, self.nd
        v, r = self.x[:nd], self.x[nd:]
        dy = np.zeros(nd + self.m)
        if d.get("M") is not None:
            dy[:nd] += matvec(matrix_direction(d["M"], p.M, "M", self.owner), v)
        if d.get("H") is not None:
            dH = matrix_direction(d["H"], p.H, "H", self.owner)
            dy[:nd] -= matvec(dH, r)
            dy[nd:] += matvec(dH.T, v)
        if d.get("q") is not None:
            dy[:nd] -= vector_direction(d["q"], nd, "q", self.owner)
        if d.get("b") is not None:
            dy[nd:] += vector_direction(d["b"], self.m, "b", self.owner)
        return dy

    def law_directions(self, d):
        return _mu_directions(self, d)

    def law_gradients(self, law):
        return {"mu": law["mu"][self.problem.dim]}

    def backward(self, p_):
        p, nd = self.problem, self.nd
        v, r = self.x[:nd], self.x[nd:]
        p1, p2 = p_[:nd], p_[nd:]
        return {"M": outer_on(p.M, p1, v), "H": outer_on(p.H, v, p2) - outer_on(p.H, p1, r),
                "q": -p1, "b": p2.copy()}

    def outputs(self, dx, dy, d):
        nd = self.nd
        return {"v": dx[:nd], "r": dx[nd:], "u": dy[nd:]}

    def outputs_t(self, g):
        nd, m = self.nd, self.m
        gx, gy = np.zeros(nd + m), np.zeros(nd + m)
        if "v" in g:
            gx[:nd] = g["v"]
        if "r" in g:
            gx[nd:] = g["r"]
        if "u" in g:
            gy[nd:] = g["u"]
        return gx, gy, {}


class GMPModel(DirectModel):
    """GenericMechanical: x = r, y = u = Mr + q; box laws for equality, LCP and relay blocks, Coulomb
    laws for the friction blocks. The ``blocks`` field's directions and gradients are sequences with
    one entry per block: None, or a dict ``{"mu": float}`` (friction) / ``{"lb": ..., "ub": ...}`` (relay)."""

    fields = ("M", "q", "blocks")
    variables = ("r", "u")
    names = ("r", "u")
    owner = "GenericMechanical"

    def __init__(self, problem, r):
        p = problem
        box, lb, ub = [], [], []
        fc = {2: ([], []), 3: ([], [])}
        self.block_rows = []
        for k, (b, s) in enumerate(p.slices()):
            rows = np.arange(s.start, s.stop)
            self.block_rows.append(rows)
            if b.kind in ("fc2d", "fc3d"):
                fc[b.size][0].append(s.start)
                fc[b.size][1].append(b.mu)
                continue
            box.append(rows)
            if b.kind == "equality":
                lb.append(np.full(b.size, -np.inf))
                ub.append(np.full(b.size, np.inf))
            elif b.kind == "lcp":
                lb.append(np.zeros(b.size))
                ub.append(np.full(b.size, np.inf))
            else:
                lb.append(np.asarray(b.lb, float))
                ub.append(np.asarray(b.ub, float))
        cat = (lambda a, dt=float: np.concatenate(a).astype(dt) if a else np.zeros(0, dt))
        laws = Laws(p.size, cat(box, np.int64), cat(lb), cat(ub),
                    {dim: (np.asarray(st, np.int64), np.asarray(mu, float)) for dim, (st, mu) in fc.items() if st})
        # where each block's data sits in the laws: box positions, or (dim, contact number)
        self.where = []
        pos, cnt = 0, {2: 0, 3: 0}
        for b, _ in p.slices():
            if b.kind in ("fc2d", "fc3d"):
                self.where.append((b.size, cnt[b.size]))
                cnt[b.size] += 1
            else:
                self.where.append(np.arange(pos, pos + b.size))
                pos += b.size
        constrained = np.concatenate([rows for (b, _), rows in zip(p.slices(), self.block_rows)
                                      if b.kind != "equality"] or [np.zeros(0, np.int64)])
        super().__init__(p, np.asarray(r, float), p.M, np.asarray(p.q, float), laws, constrained)

    def law_directions(self, d):
        blocks = d.get("blocks")
        if blocks is None:
            return {}
        p = self.problem
        if len(blocks) != len(p.blocks):
            raise ProblemError("blocks", f"direction has {len(blocks)} entries, expected one per block "
                                         f"({len(p.blocks)})", self.owner)
        nb = self.laws.box.shape[0]
        out = {"lb": np.zeros(nb), "ub": np.zeros(nb), "mu": {dim: np.zeros(mu.shape[0])
                                                              for dim, (_, mu) in self.laws.fc.items()}}
        for k, (b, db) in enumerate(zip(p.blocks, blocks)):
            if db is None:
                continue
            if not isinstance(db, dict):
                raise ProblemError(f"blocks[{k}]", "direction must be None or a dict", self.owner)
            allowed = ("mu",) if b.kind in ("fc2d", "fc3d") else ("lb", "ub") if b.kind == "relay" else ()
            for key, val in db.items():
                if key not in allowed:
                    raise ProblemError(f"blocks[{k}].{key}", f"a {b.kind} block has no differentiable datum "
                                                             f"{key!r} (it has: {', '.join(allowed) or 'none'})",
                                       self.owner)
                if key == "mu":
                    dim, c = self.where[k]
                    out["mu"][dim][c] = float(val)
                else:
                    out[key][self.where[k]] = vector_direction(val, b.size, f"blocks[{k}].{key}", self.owner)
        return out

    def law_gradients(self, law):
        grads = []
        for b, w in zip(self.problem.blocks, self.where):
            if b.kind in ("fc2d", "fc3d"):
                grads.append({"mu": float(law["mu"][w[0]][w[1]])})
            elif b.kind == "relay":
                grads.append({"lb": law["lb"][w], "ub": law["ub"][w]})
            else:
                grads.append({})
        return {"blocks": tuple(grads)}


def variables_of(problem, solution) -> dict:
    """The solution's variables as a dict (a Solution, a dict, or an array of the primal variable)."""
    from ..result import Solution

    if isinstance(solution, Solution):
        x = solution.variables()
    elif isinstance(solution, dict):
        x = dict(solution)
    else:
        x = {problem.primal: solution}
    if problem.primal not in x or x[problem.primal] is None:
        raise ProblemError(problem.primal, f"the solution carries no {problem.primal!r}", type(problem).__name__)
    out = {}
    sizes = problem.variable_sizes()
    for k, v in x.items():
        if k in sizes and v is not None:
            a = real_array(v, k, type(problem).__name__, what="solution variable")
            a = a.reshape(-1) if a.ndim == 0 else a
            if a.ndim != 1 or a.shape[0] != sizes[k] or not np.all(np.isfinite(a)):
                raise ProblemError(k, f"solution variable must be a finite vector of size {sizes[k]}",
                                   type(problem).__name__)
            out[k] = a
    return out


def model_of(problem, solution, tol) -> Model:
    """The model of ``problem`` at ``solution``."""
    x = variables_of(problem, solution)
    kind = problem.kind
    if kind in ("lcp", "mlcp", "relay", "equality"):
        return AffineModel(problem, x["z"])
    if kind == "avi":
        return AVIModel(problem, x["z"], tol)
    if kind in ("fc2d", "fc3d"):
        return FrictionModel(problem, x["r"])
    if kind in ("gfc2d", "gfc3d"):
        v = x.get("v")
        return GlobalModel(problem, problem.v(x["r"]) if v is None else v, x["r"])
    if kind == "gmp":
        return GMPModel(problem, x["r"])
    raise NotApplicable(f"no sensitivity for a {kind} problem")
