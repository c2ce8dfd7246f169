r"""Where a system's or an interaction's current state lives: the run that holds it, or the object.

A run (the stepper of a :class:`~nsopt.modeling.TimeStepping`) keeps the state of its systems and
interactions in its own stacked arrays, indexed by position; nothing is written onto the user's
objects while it runs. ``ds.q``, ``inter.y``, ... are :class:`StateField` descriptors: while a run
holds the object (it is *bound* in :data:`_LIVE`), they read the run's current state (read-only
views of its arrays, taken when asked); otherwise the object's own arrays (its initial conditions
before any run, the last run's final state, copied, after it). A run binds its objects when it is
built and again when it steps after another run bound them (:data:`EPOCH` tells), and releases them
(plain copies) when it reaches its final time or stops.

A holder implements ``read(k, name)`` and ``write(k, name, value)`` for its k-th system or interaction.
"""

from __future__ import annotations

_LIVE: dict = {}      # id(system or interaction) -> (holder, position): the run holding its state
EPOCH = [0]           # incremented by every binding: a run that stepped before another bound rebinds


class StateField:
    """A state attribute (``q``, ``v``, ``p``, ``x``, ``r``, ``y``, ``lambda_``) read from the run
    holding the object, else from the object (see the module docstring)."""

    def __init__(self, name: str, doc: str):
        self.name, self.slot, self.__doc__ = name, "_state_" + name, doc

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        h = _LIVE.get(id(obj))
        if h is not None:
            return h[0].read(h[1], self.name)
        try:
            return obj.__dict__[self.slot]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__} has no state {self.name!r}") from None

    def __set__(self, obj, value):
        h = _LIVE.get(id(obj))
        if h is not None:
            h[0].write(h[1], self.name, value)
        else:
            obj.__dict__[self.slot] = value

    def keep(self, obj, value):
        """Store ``value`` as the object's own state (a run releasing it)."""
        obj.__dict__[self.slot] = value


def bind(holder, objs, start: int = 0):
    """The run ``holder`` holds the state of ``objs`` (positions ``start``, ``start + 1``, ...)."""
    for k, o in enumerate(objs, start):
        _LIVE[id(o)] = (holder, k)


def bind_at(holder, pairs):
    """The run ``holder`` holds the state of each ``(object, position)`` of ``pairs``."""
    for o, k in pairs:
        _LIVE[id(o)] = (holder, k)


def holder_of(obj):
    """(holder, position) of the run holding ``obj``'s state, or None."""
    return _LIVE.get(id(obj))


def unbind(holder, obj) -> bool:
    """Forget that ``holder`` holds ``obj`` (True when it did)."""
    h = _LIVE.get(id(obj))
    if h is not None and h[0] is holder:
        del _LIVE[id(obj)]
        return True
    return False


def new_epoch() -> int:
    EPOCH[0] += 1
    return EPOCH[0]
