"""A module that can be called as its one function: ``nsopt.solve(...)`` and ``nsopt.sensitivity(...)``
call the function of that name while ``nsopt.solve`` and ``nsopt.sensitivity`` stay the module and the
package (``nsopt.solve.methods``, ``import nsopt.sensitivity.core as core``)."""

from __future__ import annotations

import inspect
import sys
import types


class CallableModule(types.ModuleType):
    """A module whose call is its function ``__entry__`` (its signature is the function's)."""

    def __call__(self, *args, **kwargs):
        return self.__entry__(*args, **kwargs)


def make_callable(name: str, entry) -> None:
    """Make the module ``name`` (already in ``sys.modules``) callable as ``entry``."""
    mod = sys.modules[name]
    mod.__entry__ = entry
    mod.__signature__ = inspect.signature(entry)
    mod.__class__ = CallableModule
