r"""Where a system's or an interaction's state lives: the object's own, and each run's.

``ds.q``, ``ds.v``, ``ds.p`` (Lagrangian), ``ds.x``, ``ds.r`` (first order), ``inter.y``,
``inter.lambda_`` are the **object's own** state (:class:`StateField`): its initial conditions before
any run. A run (the stepper of a :class:`~nsopt.modeling.TimeStepping`) keeps the state of its systems
and interactions in its own stacked arrays and reads them there (``sim.state_of(ds)``); nothing is
written onto the objects while it steps, so two runs of one model never see each other's states, and
nothing outside a run refers to it (``del sim`` frees it). When a run stops (``run()`` returns or is
interrupted, or a step reaches T) it writes its state onto the objects, as plain copies: after a run,
``ds.q`` is the state where the last run to stop stopped. An interaction removed during a run gets
its last state when it is removed. Setting ``ds.q`` sets the object's own state; it does not move a
run (``sim.set_state(ds, q=...)`` does).

A run implements ``read(k, name)`` and ``write(k, name, value)`` for its k-th system or interaction.
"""

from __future__ import annotations

from types import MappingProxyType, SimpleNamespace

#: the state fields of a system of each order and of an interaction
FIELDS = MappingProxyType({1: ("x", "r"), 2: ("q", "v", "p"), "interaction": ("y", "lambda_")})


class StateField:
    """A state attribute (``q``, ``v``, ``p``, ``x``, ``r``, ``y``, ``lambda_``): the object's own
    (see the module docstring)."""

    def __init__(self, name: str, doc: str):
        self.name, self.slot, self.__doc__ = name, "_state_" + name, doc

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        try:
            return obj.__dict__[self.slot]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__} has no state {self.name!r}") from None

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value

    def keep(self, obj, value):
        """Store ``value`` as the object's own state (a run that stops)."""
        obj.__dict__[self.slot] = value


def state_view(holder, k, names) -> SimpleNamespace:
    """The fields ``names`` of the ``k``-th object of the run ``holder``: read-only views of its arrays
    now (copy them to keep them past the next step)."""
    return SimpleNamespace(**{n: holder.read(k, n) for n in names})
