"""Interactions (a law and a relation between one or two systems) and the nonsmooth dynamical system
that holds systems and interactions (Siconos ``Interaction``, ``NonSmoothDynamicalSystem``)."""

from __future__ import annotations

import collections
import itertools

import numpy as np

from ..exceptions import ModelingError
from ._check import label, scalar
from ._state import StateField
from .laws import NonSmoothLaw
from .relations import Relation
from .systems import DynamicalSystem

LOG_LENGTH = 4096     # changes a NonSmoothDynamicalSystem remembers (integrators follow them between steps)


class Interaction:
    """A nonsmooth law and a relation (Siconos ``Interaction``).

    ``y[i]`` and ``lambda_[i]`` (also ``lam``) hold the output and multiplier at derivative level i
    (0: position / state level, 1: velocity / impulse level), each a vector of the law's size.
    The law's size must match the relation's (its number of rows); :meth:`NonSmoothDynamicalSystem.link`
    checks it against the linked systems.

    Parameters
    ----------
    nslaw : NonSmoothLaw
        The law.
    relation : Relation
        The relation (as many rows as the law's size).
    name : str, optional
        A name for messages and reports.

    Attributes
    ----------
    size : int
        The law's size.
    y, lambda_ : list of numpy.ndarray
        Output and multiplier at levels 0 and 1 (``lam`` is ``lambda_``).
    systems : tuple
        The systems it is linked to (set by :meth:`NonSmoothDynamicalSystem.link`).

    Raises
    ------
    ModelingError
        When ``nslaw`` or ``relation`` is of the wrong type, or their sizes differ.

    Examples
    --------
    >>> from nsopt import modeling as nm
    >>> inter = nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]]))
    >>> inter, inter.lam
    (Interaction(NewtonImpactNSL, LagrangianLinearTIR, size=1), [array([0.]), array([0.])])
    >>> nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0], [0.0]]))
    Traceback (most recent call last):
    ...
    nsopt.exceptions.ModelingError: Interaction.nslaw: NewtonImpactNSL has size 1 but LagrangianLinearTIR has 2 rows; ...
    """

    def __init__(self, nslaw: NonSmoothLaw, relation: Relation, *, name=None):
        self.name = name
        o = label(self)
        if not isinstance(nslaw, NonSmoothLaw):
            raise ModelingError(o, "nslaw", f"expected a nonsmooth law (nsopt.modeling laws), got {type(nslaw).__name__}")
        if not isinstance(relation, Relation):
            raise ModelingError(o, "relation", f"expected a relation (nsopt.modeling relations), got {type(relation).__name__}")
        self.nslaw, self.relation = nslaw, relation
        self.size = m = nslaw.size
        rows = _relation_rows(relation)
        if rows is not None and rows != m:
            raise ModelingError(o, "nslaw", f"{label(nslaw)} has size {m} but {label(relation)} has {rows} rows; "
                                            "a law and its relation must have the same size")
        self.y = [np.zeros(m), np.zeros(m)]
        self.lambda_ = [np.zeros(m), np.zeros(m)]
        self.systems: tuple = ()

    y = StateField("y", "[y0, y1]: the output at levels 0 and 1 (the object's own state: see "
                        ":class:`~nsopt.modeling.DynamicalSystem`; a run's: ``sim.state_of(inter).y``).")
    lambda_ = StateField("lambda_", "[λ0, λ1]: the multiplier at levels 0 and 1 (Lagrangian impulses at level 1).")

    @property
    def lam(self):
        return self.lambda_

    def __repr__(self):
        return f"{label(self)}({label(self.nslaw)}, {label(self.relation)}, size={self.size})"


def _relation_rows(rel):
    """Rows of a relation known before linking (constant matrices), else None."""
    for attr in ("H", "_C0"):
        M = getattr(rel, attr, None)
        if isinstance(M, np.ndarray) and M.ndim == 2:
            return M.shape[0]
    return None


class NonSmoothDynamicalSystem:
    """Systems and the interactions between them, over [t0, T] (Siconos ``NonSmoothDynamicalSystem``).

    >>> import numpy as np
    >>> from nsopt import modeling as nm
    >>> ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
    >>> nsds = nm.NonSmoothDynamicalSystem(0.0, 1.0)
    >>> nsds.link(nm.Interaction(nm.NewtonImpactNSL(0.5), nm.LagrangianLinearTIR([[1.0]])), ball)
    Interaction(NewtonImpactNSL, LagrangianLinearTIR, size=1)
    >>> len(nsds.interactions), len(nsds.dynamical_systems)
    (1, 1)
    """

    def __init__(self, t0: float = 0.0, T: float = 1.0, *, name=None):
        self.name = name
        o = label(self)
        self.t0 = scalar(t0, o, "t0")
        self.T = scalar(T, o, "T")
        if self.T < self.t0:
            raise ModelingError(o, "T", f"final time T = {self.T} is before t0 = {self.t0}")
        self.dynamical_systems: list[DynamicalSystem] = []
        self._ds_ids: set = set()
        self.interactions: list[Interaction] = []
        self._version = 0
        self._log = collections.deque(maxlen=LOG_LENGTH)    # (version, what, object) of each change, in order

    @property
    def order(self) -> int | None:
        """1 (first-order systems), 2 (Lagrangian) or None (empty)."""
        return self.dynamical_systems[0].order if self.dynamical_systems else None

    def insert_dynamical_system(self, ds: DynamicalSystem):
        """Add a system (linking does it too)."""
        o = label(self)
        if not isinstance(ds, DynamicalSystem):
            raise ModelingError(o, "ds", f"expected a dynamical system, got {type(ds).__name__}")
        if id(ds) in self._ds_ids:
            return
        if self.dynamical_systems and ds.order != self.order:
            kinds = {1: "first-order", 2: "Lagrangian"}
            raise ModelingError(o, "dynamical_systems",
                                f"cannot mix {kinds[ds.order]} {label(ds)} with {kinds[self.order]} systems "
                                f"({label(self.dynamical_systems[0])}): all must be first order or all Lagrangian")
        self.dynamical_systems.append(ds)
        self._ds_ids.add(id(ds))
        self._changed("system", ds)

    def link(self, inter: Interaction, ds1: DynamicalSystem, ds2: DynamicalSystem | None = None):
        """Join ``inter`` to one or two systems; checks orders and sizes."""
        o = label(self)
        if not isinstance(inter, Interaction):
            raise ModelingError(o, "inter", f"expected an Interaction, got {type(inter).__name__}")
        if inter.systems:
            raise ModelingError(label(inter), "systems", "is already linked")
        dss = (ds1,) if ds2 is None else (ds1, ds2)
        for k, ds in enumerate(dss):
            if not isinstance(ds, DynamicalSystem):
                raise ModelingError(o, f"ds{k + 1}", f"expected a dynamical system, got {type(ds).__name__}")
        if ds2 is not None and ds2 is ds1:
            raise ModelingError(o, "ds2", "is the same system as ds1")
        rel = inter.relation
        want = 1 if rel.kind == "first" else 2
        for ds in dss:
            if ds.order != want:
                kinds = {1: "first-order", 2: "Lagrangian"}
                raise ModelingError(label(inter), "relation",
                                    f"{label(rel)} is a {kinds[want]} relation but {label(ds)} is a {kinds[ds.order]} system")
        rigid = [getattr(ds, "kind", None) == "newton_euler" for ds in dss]
        if rel.kind == "newton_euler" and not all(rigid):
            bad = dss[rigid.index(False)]
            raise ModelingError(label(inter), "relation", f"{label(rel)} is a Newton–Euler relation (positions with a "
                                                          f"quaternion, twists) but {label(bad)} is not a NewtonEulerDS")
        if rel.kind == "lagrangian" and any(rigid):
            bad = dss[rigid.index(True)]
            raise ModelingError(label(inter), "relation", f"{label(bad)} is a NewtonEulerDS (q: position and quaternion, "
                                                          f"v: twist); {label(rel)} is a Lagrangian relation: use "
                                                          "NewtonEulerR, NewtonEuler1DR/3DR or a joint")
        for ds in dss:
            self.insert_dynamical_system(ds)
        n = sum(ds.n for ds in dss)
        nz = sum(ds.z.shape[0] for ds in dss)
        rel.bind(inter.size, n, nz)
        inter.systems = dss
        self.interactions.append(inter)
        self._changed("link", inter)
        return inter

    def remove_interaction(self, inter: Interaction):
        """Remove an interaction (for contact detection between steps); it must be one of this model's."""
        o = label(self)
        if not isinstance(inter, Interaction):
            raise ModelingError(o, "inter", f"expected an Interaction of this model, got {type(inter).__name__}")
        if not any(i is inter for i in self.interactions):
            raise ModelingError(o, "interactions", f"{label(inter)} is not an interaction of this model "
                                f"({'linked in another model' if inter.systems else 'not linked'}): nothing to remove")
        self.interactions = [i for i in self.interactions if i is not inter]
        inter.systems = ()
        self._changed("remove", inter)

    def remove_interactions(self, inters):
        """Remove several interactions at once (a contact detection's vanished points): one pass over the
        model's interactions instead of one per removal; each must be one of this model's."""
        inters = list(inters)
        if not inters:
            return
        o = label(self)
        gone = {}
        for inter in inters:
            if not isinstance(inter, Interaction):
                raise ModelingError(o, "inter", f"expected an Interaction of this model, got {type(inter).__name__}")
            gone[id(inter)] = inter
        kept = [i for i in self.interactions if id(i) not in gone]
        if len(kept) != len(self.interactions) - len(gone):
            held = {id(i) for i in self.interactions}
            bad = next(i for i in gone.values() if id(i) not in held)
            raise ModelingError(o, "interactions", f"{label(bad)} is not an interaction of this model "
                                f"({'linked in another model' if bad.systems else 'not linked'}): nothing to remove")
        self.interactions = kept
        for inter in gone.values():
            inter.systems = ()
            self._changed("remove", inter)

    def _changed(self, what, obj):
        self._version += 1
        self._log.append((self._version, what, obj))

    def changes_since(self, version: int):
        """The changes after ``version``, in order: a list of (what, object), what in "system" (a
        system inserted), "link", "remove"; None when they are no longer all logged."""
        need = self._version - version
        if need < 0 or need > len(self._log):
            return None
        return [(w, o) for _, w, o in itertools.islice(reversed(self._log), need)][::-1]

    def __repr__(self):
        return (f"{label(self)}(t0={self.t0}, T={self.T}, {len(self.dynamical_systems)} systems, "
                f"{len(self.interactions)} interactions)")
