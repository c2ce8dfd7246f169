"""Generic mechanical problem: one matrix, an ordered list of blocks of different kinds."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemError
from ._base import (
    Problem,
    affine,
    as_bounds,
    as_square_system,
    check_input,
    dense,
    matvec,
    norm2,
)
from .cones import natural_map_sq

BLOCK_KINDS = ("equality", "lcp", "relay", "fc2d", "fc3d")


@dataclass(frozen=True)
class Block:
    """One block of a :class:`GenericMechanical` problem.

    Parameters
    ----------
    kind : {"equality", "lcp", "relay", "fc2d", "fc3d"}
        ``"equality"`` (w = 0, r free), ``"lcp"`` (0 <= r ⊥ w >= 0), ``"relay"``
        (-w ∈ N_[lb,ub](r)), ``"fc2d"``/``"fc3d"`` (one contact, Coulomb's law).
    size : int
        Number of rows (2 or 3 for a contact).
    mu : float, optional
        Friction coefficient of a contact block.
    lb, ub : tuple of float, optional
        Bounds of a relay block.

    Examples
    --------
    >>> import nsopt
    >>> nsopt.Block("fc3d", 3, mu=0.3)
    Block(kind='fc3d', size=3, mu=0.3, lb=None, ub=None)
    """

    kind: str
    size: int
    mu: float | None = None
    lb: tuple | None = None
    ub: tuple | None = None


def _as_block(b, i, owner) -> Block:
    """A :class:`Block` from a Block, a tuple ``(kind, size[, mu[, lb, ub]])`` or a dict of its fields."""
    if isinstance(b, Block):
        return b
    try:
        if isinstance(b, (tuple, list)):
            return Block(*b)
        if isinstance(b, dict):
            return Block(**b)
    except TypeError:
        pass
    raise ProblemError(f"blocks[{i}]", f"expected a Block, a tuple (kind, size[, mu]) or a dict with the "
                                       f"keys kind, size[, mu, lb, ub]; got {b!r}", owner)


class GenericMechanical(Problem):
    r"""Generic mechanical problem (Siconos ``GenericMechanicalProblem``).

    .. math::  u = Mr + q,\qquad \text{block } k \text{ of } (r, u) \text{ satisfies its own law},

    the blocks being consecutive slices of r and u (see :class:`Block`).

    Parameters
    ----------
    M : (n, n) array_like or sparse
    q : (n,) array_like
    blocks : sequence of Block, tuple ``(kind, size[, mu[, lb, ub]])`` or dict
        The blocks in order; their sizes add up to n.

    Raises
    ------
    ProblemError
        For an unknown block kind, sizes that do not add up to n, a contact block of the wrong size or
        without a coefficient, bad relay bounds, or non-finite data (the message names the block).

    Notes
    -----
    Error measure (Siconos 4.4 ``gmp_compute_error``): per block, with the local data
    :math:`q_{loc} = q_k + \sum_{j \ne k} M_{kj} r_j`: equality blocks :math:`\max_i |u_i|` (absolute);
    LCP blocks :math:`\|z - \max(0, z - w)\| / (1 + \|q_{loc}\|)`; relay blocks
    :math:`\|z - \Pi(z - w)\| / (1 + \|q_{loc}\|)^2` (Siconos calls ``relay_compute_error`` on the
    block's sub-problem, whose q is q_loc and which divides by 1 + ||q||, then divides again);
    friction blocks (FC2D, FC3D) the natural map / :math:`(1 + \|q_{loc}\|)`; the error is the
    maximum over blocks. Siconos' GMP file format holds no bounds for relay blocks and no mu for
    FC2D blocks, so these two are checked against Siconos' source only, the others against
    ``gmp_compute_error`` itself (``tests/test_error_differential.py``).

    Examples
    --------
    An equality row, a unilateral row and a 3D contact on one matrix:

    >>> import numpy as np, nsopt
    >>> M = np.eye(5) * 2.0
    >>> p = nsopt.GenericMechanical(M, [1.0, -1.0, -1.0, 0.5, 0.2],
    ...                             [nsopt.Block("equality", 1), ("lcp", 1), ("fc3d", 3, 0.3)])
    >>> s = nsopt.solve(p, method="nsgs", tol=1e-10)
    >>> print(s.status.value, s.r.round(6))
    solved [-0.5       0.5       0.5      -0.139272 -0.055709]
    >>> r_T = s.r[3:]                                   # the contact slides: on the cone's edge
    >>> bool(abs(np.linalg.norm(r_T) - 0.3 * s.r[2]) < 1e-9)
    True
    """

    kind = "gmp"
    _fields = ("M", "q", "blocks")
    primal = "r"
    residual = "u"

    def __init__(self, M, q, blocks):
        owner = "GenericMechanical"
        M, q = as_square_system(M, q, owner)
        out, total = [], 0
        try:
            blocks = list(blocks)
        except TypeError:
            raise ProblemError("blocks", f"must be a sequence of blocks, got {type(blocks).__name__}", owner) from None
        for i, b in enumerate(blocks):
            b = _as_block(b, i, owner)
            if b.kind not in BLOCK_KINDS:
                raise ProblemError(f"blocks[{i}].kind", f"unknown block kind {b.kind!r}; expected one of {BLOCK_KINDS}", owner)
            if isinstance(b.size, bool) or not isinstance(b.size, (int, np.integer)):
                raise ProblemError(f"blocks[{i}].size", f"must be an integer, got {b.size!r}", owner)
            if int(b.size) <= 0:
                raise ProblemError(f"blocks[{i}].size", f"must be positive, got {b.size}", owner)
            b = replace(b, size=int(b.size))
            if b.kind in ("fc2d", "fc3d"):
                d = int(b.kind[2])
                if b.size != d:
                    raise ProblemError(f"blocks[{i}].size", f"a {b.kind} block holds one contact of size {d}, got {b.size}", owner)
                mu = b.mu
                if (isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating))
                        or not np.isfinite(mu) or mu < 0):
                    raise ProblemError(f"blocks[{i}].mu", f"friction coefficient must be a finite real >= 0, got {mu!r}", owner)
                b = replace(b, mu=float(mu))
            if b.kind == "relay":
                lb, ub = as_bounds(-1.0 if b.lb is None else b.lb, 1.0 if b.ub is None else b.ub, b.size,
                                   f"{owner}.blocks[{i}]")
                b = Block("relay", int(b.size), None, tuple(lb.tolist()), tuple(ub.tolist()))
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
        return affine(self.M, check_input(r, "r", "GenericMechanical", self.size), self.q)


    def _diag_and_off(self):
        """The dense diagonal blocks M_kk and M with them removed (kept sparse when M is)."""
        def make():
            Md = [dense(self.M[s, s]) for _, s in self.slices()]
            if sp.issparse(self.M):
                C = sp.coo_matrix(self.M)
                blk = np.repeat(np.arange(len(self.blocks)), [b.size for b in self.blocks])
                keep = blk[C.row] != blk[C.col]
                off = sp.csr_matrix((C.data[keep], (C.row[keep], C.col[keep])), shape=self.M.shape)
            else:
                off = np.array(self.M, dtype=float)
                for _, s in self.slices():
                    off[s, s] = 0.0
            return Md, off
        return self.cached("gmp_diag_off", make, on=("M", "blocks"))

    def error(self, r, u=None) -> float:
        """Siconos 4.4's ``gmp_compute_error`` (see the class docstring), u recomputed as Siconos
        does: q_loc = q + (M without its diagonal blocks) r first, then u_k = q_loc,k + M_kk r_k."""
        r = check_input(r, "r", "GenericMechanical", self.size)
        Md, off = self._diag_and_off()
        Qloc = matvec(off, r) + self.q
        err = 0.0
        for (b, s), Mkk in zip(self.slices(), Md):
            rk, qloc = r[s], Qloc[s]
            uk = qloc + Mkk @ rk
            if np.isnan(uk).any() or np.isnan(rk).any():
                return float("nan")               # (Siconos returns 10 here)
            if b.kind == "equality":
                e = float(np.max(np.abs(uk)))
            elif b.kind == "lcp":
                e = float(np.sqrt(np.sum((rk - np.maximum(0.0, rk - uk)) ** 2))) / (1.0 + norm2(qloc))
            elif b.kind == "relay":
                e = norm2(rk - np.clip(rk - uk, b.lb, b.ub)) / (1.0 + norm2(qloc)) ** 2
            else:
                d = b.size
                e = float(np.sqrt(natural_map_sq(rk, uk, np.array([b.mu]), d))) / (1.0 + norm2(qloc))
            err = max(err, e)
        return err

    def __repr__(self):
        counts = {}
        for b in self.blocks:
            counts[b.kind] = counts.get(b.kind, 0) + 1
        return f"GenericMechanical(n={self.size}, blocks={counts})"
