"""Generic mechanical problem: one matrix, an ordered list of blocks of different kinds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import ProblemError
from ._base import Problem, as_matrix, as_vector, check_input, dense, matvec
from .cones import natural_map_sq

BLOCK_KINDS = ("equality", "lcp", "relay", "fc2d", "fc3d")


@dataclass(frozen=True)
class Block:
    """One block of a :class:`GenericMechanical` problem.

    kind: ``"equality"`` (w = 0, r free), ``"lcp"`` (0 <= r ⊥ w >= 0), ``"relay"`` (-w ∈ N_[lb,ub](r)),
    ``"fc2d"``/``"fc3d"`` (one contact, Coulomb's law with friction coefficient ``mu``).
    """

    kind: str
    size: int
    mu: float | None = None
    lb: tuple | None = None
    ub: tuple | None = None


class GenericMechanical(Problem):
    r"""Generic mechanical problem (Siconos ``GenericMechanicalProblem``).

    .. math::  u = Mr + q,\qquad \text{block } k \text{ of } (r, u) \text{ satisfies its own law},

    the blocks being consecutive slices of r and u (see :class:`Block`).

    Error measure (Siconos 4.4 ``gmp_compute_error``): per block, with the local data
    :math:`q_{loc} = q_k + \sum_{j \ne k} M_{kj} r_j`: equality blocks max_i |u_i| (absolute);
    LCP blocks :math:`\|z - \max(0, z - w)\| / (1 + \|q_{loc}\|)`; relay blocks
    :math:`\|z - \Pi(z - w)\| / (1 + \|q_{loc}\|)`; friction blocks the natural map
    / :math:`(1 + \|q_{loc}\|)`; the error is the maximum over blocks.
    """

    kind = "gmp"
    _fields = ("M", "q", "blocks")
    primal = "r"

    def __init__(self, M, q, blocks):
        owner = "GenericMechanical"
        M = as_matrix(M, "M", owner, square=True)
        q = as_vector(q, "q", owner, size=M.shape[0])
        out, total = [], 0
        for i, b in enumerate(blocks):
            if not isinstance(b, Block):
                b = Block(*b) if isinstance(b, (tuple, list)) else Block(**b)
            if b.kind not in BLOCK_KINDS:
                raise ProblemError(f"blocks[{i}].kind", f"unknown block kind {b.kind!r}; expected one of {BLOCK_KINDS}", owner)
            if int(b.size) <= 0:
                raise ProblemError(f"blocks[{i}].size", f"must be positive, got {b.size}", owner)
            if b.kind in ("fc2d", "fc3d"):
                d = int(b.kind[2])
                if b.size != d:
                    raise ProblemError(f"blocks[{i}].size", f"a {b.kind} block holds one contact of size {d}, got {b.size}", owner)
                if b.mu is None or not np.isfinite(b.mu) or b.mu < 0:
                    raise ProblemError(f"blocks[{i}].mu", f"friction coefficient must be finite and >= 0, got {b.mu}", owner)
            if b.kind == "relay":
                lb = np.broadcast_to(np.asarray(b.lb if b.lb is not None else -1.0, float), (b.size,))
                ub = np.broadcast_to(np.asarray(b.ub if b.ub is not None else 1.0, float), (b.size,))
                if np.any(lb > ub):
                    raise ProblemError(f"blocks[{i}].lb", "lb > ub", owner)
                b = Block("relay", int(b.size), None, tuple(lb), tuple(ub))
            out.append(b)
            total += int(b.size)
        if total != M.shape[0]:
            raise ProblemError("blocks", f"block sizes add up to {total}, but M is {M.shape[0]}x{M.shape[0]}", owner)
        self.M, self.q, self.blocks = M, q, tuple(out)
        self._freeze()

    @property
    def size(self) -> int:
        return self.q.shape[0]

    def slices(self):
        s = 0
        for b in self.blocks:
            yield b, slice(s, s + b.size)
            s += b.size

    def u(self, r) -> np.ndarray:
        return matvec(self.M, check_input(r, "r", "GenericMechanical", self.size)) + self.q

    def variable_sizes(self):
        return {"r": self.size, "u": self.size}

    def complete(self, x):
        r = x["r"]
        u = x.get("u")
        return {"r": r, "u": u if u is not None else self.u(r)}

    def error(self, r, u=None) -> float:
        r = check_input(r, "r", "GenericMechanical", self.size)
        u = matvec(self.M, r) + self.q
        Md = self.cached("dense_diag_blocks", lambda: [dense(self.M[s, s]) for _, s in self.slices()],
                         on=("M", "blocks"))
        err = 0.0
        for (b, s), Mkk in zip(self.slices(), Md):
            rk, uk = r[s], u[s]
            qloc = uk - Mkk @ rk
            if b.kind == "equality":
                e = float(np.max(np.abs(uk)))
            elif b.kind == "lcp":
                e = float(np.linalg.norm(rk - np.maximum(0.0, rk - uk))) / (1.0 + float(np.linalg.norm(qloc)))
            elif b.kind == "relay":
                e = float(np.linalg.norm(rk - np.clip(rk - uk, b.lb, b.ub))) / (1.0 + float(np.linalg.norm(qloc)))
            else:
                d = b.size
                e = float(np.sqrt(natural_map_sq(rk, uk, np.array([b.mu]), d))) / (1.0 + float(np.linalg.norm(qloc)))
            err = max(err, e)
        return err

    def __repr__(self):
        counts = {}
        for b in self.blocks:
            counts[b.kind] = counts.get(b.kind, 0) + 1
        return f"GenericMechanical(n={self.size}, blocks={counts})"
