r"""Nonsmooth laws (Siconos ``NonSmoothLaw`` classes): what relates an interaction's y and λ.

Each law names the block it contributes to a one-step problem (``block``: ``"lcp"``, ``"equality"``,
``"relay"``, ``"fc2d"``, ``"fc3d"``, ``"avi"``) and, for impact laws, the restitution term Moreau–Jean
adds to the free velocity (:meth:`NonSmoothLaw.restitution`). A new law (for instance a multiple-impact
law) subclasses :class:`NonSmoothLaw` and sets ``block``; :meth:`NonSmoothLaw.gmp_block` is how the
GenericMechanical assembly asks for its block.
"""

from __future__ import annotations

import numpy as np

from .._doc import insert_section
from ..exceptions import ModelingError
from ..problems.gmp import Block
from ._check import label, matrix, scalar, size, vector


class NonSmoothLaw:
    """Base class: ``size`` (the interaction's size) and ``block`` (its one-step problem block).

    Parameters
    ----------
    size_ : int
        The interaction's size.
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    block : str
        The one-step problem block (``"lcp"``, ``"equality"``, ``"relay"``, ``"fc2d"``, ``"fc3d"``,
        ``"avi"``).
    unilateral : bool
        Enters the index set only when the predicted gap closes (Moreau–Jean).
    size : int
        The interaction's size.

    Raises
    ------
    ModelingError
        When ``size_`` is not a positive integer.

    See Also
    --------
    ComplementarityConditionNSL, EqualityConditionNSL, NewtonImpactNSL : complementarity, equality and impact laws.
    RelayNSL, NewtonImpactFrictionNSL : the relay and Coulomb friction laws.
    """

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


#: The sections of the laws whose only datum is their size (``{sized_law}``, after ``size``).
SIZED_LAW_DOC = """name : str, optional
    A name for messages and reports.

Raises
------
ModelingError
    When ``size`` is not a positive integer.

Examples
--------
>>> from nsopt import modeling as nm"""


class ComplementarityConditionNSL(NonSmoothLaw):
    r""":math:`0 \le y \perp \lambda \ge 0` (Siconos ``ComplementarityConditionNSL``).

    Parameters
    ----------
    size : int
        The interaction's size (the number of complementarity pairs).
    {sized_law}
    >>> law = nm.ComplementarityConditionNSL(2)
    >>> law.size, law.block
    (2, 'lcp')
    """

    block = "lcp"

    def __init__(self, size, *, name=None):
        super().__init__(size, name)


class EqualityConditionNSL(NonSmoothLaw):
    r""":math:`y = 0`, λ free (Siconos ``EqualityConditionNSL``); always active.

    The bilateral law of joints and of equality constraints between systems.

    Parameters
    ----------
    size : int
        The interaction's size (the number of equations).
    {sized_law}
    >>> nm.EqualityConditionNSL(3).block
    'equality'
    """

    block = "equality"
    unilateral = False

    def __init__(self, size, *, name=None):
        super().__init__(size, name)


for _law in (ComplementarityConditionNSL, EqualityConditionNSL):
    _law.__doc__ = insert_section(_law.__doc__, "sized_law", SIZED_LAW_DOC)
del _law


class NewtonImpactNSL(NonSmoothLaw):
    r"""Newton's impact law (Siconos ``NewtonImpactNSL``): when :math:`y = 0`,
    :math:`0 \le \dot y^+ + e\,\dot y^- \perp \lambda \ge 0`, with restitution coefficient ``e`` in [0, 1].

    Parameters
    ----------
    e : float
        The restitution coefficient, in [0, 1] (0: a plastic impact, 1: an elastic one).
    size : int, default 1
        The interaction's size.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``e`` is outside [0, 1] or not a finite number, or ``size`` is not a positive integer.

    See Also
    --------
    NewtonImpactFrictionNSL : the same law with Coulomb friction.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> import numpy as np
    >>> law = nm.NewtonImpactNSL(e=0.9)
    >>> law.e, law.block
    (0.9, 'lcp')
    >>> law.restitution(np.array([-2.0]))     # e times the pre-step velocity, added to the q of the step
    array([-1.8])
    """

    block = "lcp"

    def __init__(self, e, size=1, *, name=None):
        super().__init__(size, name)
        self.e = scalar(e, label(self), "e", low=0.0, high=1.0)

    def restitution(self, y1_k):
        return self.e * y1_k if self.e else None


class NewtonImpactFrictionNSL(NonSmoothLaw):
    r"""Newton impact law with Coulomb friction (Siconos ``NewtonImpactFrictionNSL``), dim 2 or 3:
    normal restitution ``en``, tangential ``et``, friction coefficient ``mu``; y and λ ordered normal
    first, then the tangents.

    Parameters
    ----------
    en, et : float
        The normal and tangential restitution coefficients, in [0, 1].
    mu : float
        The friction coefficient (>= 0).
    dim : {2, 3}
        The contact's dimension: the one-step problem is ``fc2d`` or ``fc3d``.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``dim`` is not 2 or 3, a restitution coefficient is outside [0, 1] or ``mu`` is negative
        (the message names the field).

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> law = nm.NewtonImpactFrictionNSL(0.5, 0.0, 0.3, 3)
    >>> law.block, law.size, law.mu
    ('fc3d', 3, 0.3)
    >>> nm.NewtonImpactFrictionNSL(0.5, 0.0, -1.0, 3)
    Traceback (most recent call last):
    ...
    nsopt.exceptions.ModelingError: ...mu...
    """

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
    λ = ub where y < 0, λ in [lb, ub] where y = 0.

    Parameters
    ----------
    size : int
        The interaction's size.
    lb, ub : float or (size,) array_like, default -1 and 1
        The bounds of λ.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When a bound has the wrong size or ``lb > ub`` somewhere.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> law = nm.RelayNSL(2, lb=-1.0, ub=[1.0, 2.0])
    >>> law.lb, law.ub
    (array([-1., -1.]), array([1., 2.]))
    """

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
    (nsopt's :class:`nsopt.AVI` with z = λ, w = y).

    Parameters
    ----------
    size : int
        The interaction's size.
    H : (p, size) array_like
        The rows of the polyhedron's inequalities.
    k : (p,) array_like
        Their right-hand sides.
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``H`` or ``k`` has the wrong shape or non-finite entries.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> law = nm.NormalConeNSL(2, H=[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]], k=[0.0, 0.0, -1.0])
    >>> law.block, law.H.shape
    ('avi', (3, 2))
    """

    block = "avi"
    unilateral = False

    def __init__(self, size, H, k, *, name=None):
        super().__init__(size, name)
        o = label(self)
        self.H = matrix(H, o, "H", (None, self.size))
        self.k = vector(k, o, "k", self.H.shape[0])


LAW_CLASSES = (ComplementarityConditionNSL, EqualityConditionNSL, NewtonImpactNSL, NewtonImpactFrictionNSL,
               RelayNSL, NormalConeNSL)
