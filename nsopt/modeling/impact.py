r"""The multiple-impact law (Siconos ``MultipleImpactNSL``) and the ``"multiple-impact"`` one-step problem
of :class:`~nsopt.modeling.TimeStepping`.

With ``TimeStepping(nsds, h, osns="multiple-impact", impulse_step=...)``, each Moreau–Jean step
assembles, over the active interactions (all with a :class:`MultipleImpactNSL`), the Delassus matrix
:math:`W = G_0\hat M^{-1}G_0^\top` and the free relative velocity :math:`q = G_0 v_{free}`, and solves
the impact of that pre-impact velocity by the LZB model (:class:`nsopt.MultipleImpact`, method
``lzb``; ``impulse_step`` and the other ``lzb`` options pass through ``TimeStepping``'s options).
The impulses come back as λ, so that :math:`v_{k+1} = v_{free} + \hat M^{-1}G_0^\top\lambda`: where
Moreau–Jean with Newton's law solves an LCP, this step integrates the impact dynamics with the
contacts' compliance and energetic restitution. See ``formulations/multiple_impact.md``.
"""

from __future__ import annotations

import numpy as np

from ..problems.impact import MultipleImpact
from . import simulation
from ._check import label, scalar
from .laws import NonSmoothLaw


class MultipleImpactNSL(NonSmoothLaw):
    r"""Multiple-impact law of one normal contact (Siconos ``MultipleImpactNSL(e, k, eta)``).

    Only with ``TimeStepping(..., osns="multiple-impact")``; the restitution is the LZB model's
    (energetic), not a Newton term added to the free velocity.

    Parameters
    ----------
    e : float
        The energetic coefficient of restitution, in [0, 1].
    stiffness : float
        The contact stiffness :math:`k > 0` of the compliance law :math:`F = k\delta^\eta`.
    elasticity : float, default 1.5
        The elasticity exponent :math:`\eta > 0` (1.5: Hertz, 1: linear).
    name : str, optional
        A name for messages and reports.

    Raises
    ------
    ModelingError
        When ``e`` is outside [0, 1] or ``stiffness``, ``elasticity`` is not positive.

    See Also
    --------
    nsopt.MultipleImpact : the one-step problem; tutorial 6 (Newton's cradle) uses it.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> nm.MultipleImpactNSL(e=1.0, stiffness=1e7)
    MultipleImpactNSL(e=1.0, stiffness=1e+07, elasticity=1.5)
    """

    block = "multiple-impact"

    def __init__(self, e, stiffness, elasticity=1.5, *, name=None):
        super().__init__(1, name)
        o = label(self)
        self.e = scalar(e, o, "e", low=0.0, high=1.0)
        self.stiffness = scalar(stiffness, o, "stiffness", low=0.0, low_open=True)
        self.elasticity = scalar(elasticity, o, "elasticity", low=0.0, low_open=True)

    def __repr__(self):
        return f"{label(self)}(e={self.e}, stiffness={self.stiffness:g}, elasticity={self.elasticity})"


def _build(asm, laws, previous):
    """The step's MultipleImpact problem in contact coordinates (W, q); reuses the previous W."""
    W = asm.W if previous is None else previous._impact_W
    W = W.toarray() if hasattr(W, "toarray") else np.asarray(W, dtype=float)
    p = MultipleImpact.from_delassus(W, asm.q, [law.e for law in laws], [law.stiffness for law in laws],
                                     [law.elasticity for law in laws])
    object.__setattr__(p, "_impact_W", W)
    return p


simulation._HOLDS["multiple-impact"] = {"multiple-impact"}
simulation.OSNS_BUILDERS["multiple-impact"] = _build
