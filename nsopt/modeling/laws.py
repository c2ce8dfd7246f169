r"""Nonsmooth laws (Siconos ``NonSmoothLaw`` classes): what relates an interaction's y and λ.

Each law names the block it contributes to a one-step problem (``block``: ``"lcp"``, ``"equality"``,
``"relay"``, ``"fc2d"``, ``"fc3d"``, ``"avi"``) and, for impact laws, the restitution term Moreau–Jean
adds to the free velocity (:meth:`NonSmoothLaw.restitution`). A new law (for instance a multiple-impact
law) subclasses :class:`NonSmoothLaw` and sets ``block``; :meth:`NonSmoothLaw.gmp_block` is how the
GenericMechanical assembly asks for its block.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelingError
from ..problems.gmp import Block
from ._check import label, matrix, scalar, size, vector


class NonSmoothLaw:
    """Base class: ``size`` (the interaction's size) and ``block`` (its one-step problem block)."""

    block = ""
    unilateral = True      # enters the index set only when the predicted gap closes (Moreau–Jean)

    def __init__(self, size_, name=None):
        self.name = name
        self.size = size(size_, label(self), "size")

    def restitution(self, y1_k) -> np.ndarray | None:
        """The term added to the OSNS right-hand side from the pre-step velocity y1_k (None: none)."""
        return None

    def gmp_block(self) -> Block:
        """This law's block in a :class:`nsopt.GenericMechanical` problem."""
        if self.block in ("lcp", "equality"):
            return Block(self.block, self.size)
        raise ModelingError(label(self), "block", f"a {self.block!r} law has no GenericMechanical block")

    def __repr__(self):
        return f"{label(self)}(size={self.size})"


class ComplementarityConditionNSL(NonSmoothLaw):
    r""":math:`0 \le y \perp \lambda \ge 0` (Siconos ``ComplementarityConditionNSL``)."""

    block = "lcp"

    def __init__(self, size, *, name=None):
        super().__init__(size, name)


class EqualityConditionNSL(NonSmoothLaw):
    r""":math:`y = 0`, λ free (Siconos ``EqualityConditionNSL``); always active."""

    block = "equality"
    unilateral = False

    def __init__(self, size, *, name=None):
        super().__init__(size, name)


class NewtonImpactNSL(NonSmoothLaw):
    r"""Newton's impact law (Siconos ``NewtonImpactNSL``): when :math:`y = 0`,
    :math:`0 \le \dot y^+ + e\,\dot y^- \perp \lambda \ge 0`, with restitution coefficient ``e`` in [0, 1]."""

    block = "lcp"

    def __init__(self, e, size=1, *, name=None):
        super().__init__(size, name)
        self.e = scalar(e, label(self), "e", low=0.0, high=1.0)

    def restitution(self, y1_k):
        return self.e * y1_k if self.e else None


class NewtonImpactFrictionNSL(NonSmoothLaw):
    r"""Newton impact law with Coulomb friction (Siconos ``NewtonImpactFrictionNSL``), dim 2 or 3:
    normal restitution ``en``, tangential ``et``, friction coefficient ``mu``; y and λ ordered normal
    first, then the tangents."""

    def __init__(self, en, et, mu, dim, *, name=None):
        o = label(self) if name is None else f"{type(self).__name__} {name!r}"
        if dim not in (2, 3):
            raise ModelingError(o, "dim", f"must be 2 or 3, got {dim!r}")
        super().__init__(dim, name)
        self.dim = dim
        self.en = scalar(en, o, "en", low=0.0, high=1.0)
        self.et = scalar(et, o, "et", low=0.0, high=1.0)
        self.mu = scalar(mu, o, "mu", low=0.0)
        self.block = f"fc{dim}d"

    def restitution(self, y1_k):
        if not self.en and not self.et:
            return None
        out = np.zeros(self.dim)
        if self.en > 0:
            out[0] = self.en * y1_k[0]
        if self.et > 0:
            out[1:] = self.et * y1_k[1:]
        return out

    def gmp_block(self):
        return Block(self.block, self.dim, mu=self.mu)


class RelayNSL(NonSmoothLaw):
    r"""Relay law (Siconos ``RelayNSL``): :math:`-y \in N_{[lb, ub]}(\lambda)`, i.e. λ = lb where y > 0,
    λ = ub where y < 0, λ in [lb, ub] where y = 0. ``lb``, ``ub``: scalars or (size,) vectors."""

    block = "relay"
    unilateral = False

    def __init__(self, size, lb=-1.0, ub=1.0, *, name=None):
        super().__init__(size, name)
        o = label(self)
        self.lb = np.broadcast_to(vector(lb, o, "lb") if np.ndim(lb) else np.array([float(lb)]), (self.size,)).copy()
        self.ub = np.broadcast_to(vector(ub, o, "ub") if np.ndim(ub) else np.array([float(ub)]), (self.size,)).copy()
        if np.any(self.lb > self.ub):
            raise ModelingError(o, "lb", f"lb > ub ({self.lb} > {self.ub})")

    def gmp_block(self):
        return Block("relay", self.size, lb=tuple(self.lb), ub=tuple(self.ub))


class NormalConeNSL(NonSmoothLaw):
    r"""Normal-cone law (Siconos ``NormalConeNSL``), an affine variational inequality:
    :math:`\lambda \in K = \{\lambda : H\lambda \ge k\}` and :math:`-y \in N_K(\lambda)`
    (nsopt's :class:`nsopt.AVI` with z = λ, w = y)."""

    block = "avi"
    unilateral = False

    def __init__(self, size, H, k, *, name=None):
        super().__init__(size, name)
        o = label(self)
        self.H = matrix(H, o, "H", (None, self.size))
        self.k = vector(k, o, "k", self.H.shape[0])


LAW_CLASSES = (ComplementarityConditionNSL, EqualityConditionNSL, NewtonImpactNSL, NewtonImpactFrictionNSL,
               RelayNSL, NormalConeNSL)
