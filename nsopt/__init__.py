"""nsopt: one-step nonsmooth problems of contact mechanics and switched systems, seen as optimization problems.

>>> import nsopt
>>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
>>> sol = nsopt.solve(p, method="pgs")
>>> print(sol.status.value, sol.z.round(6))
solved [1.333333 2.333333]
"""

from .exceptions import (FormatError, MethodNotFound, MissingExtra, NotApplicable, NsoptError, NsoptWarning,
                         OptionError, ProblemError, SolverError)
from .problems import (AVI, LCP, MLCP, Block, Equality, FrictionContact, GenericMechanical,
                       GlobalFrictionContact, Relay)
from .monitor import Workspace
from .result import Iterate, Solution, Status
from .solve import methods
from . import solve  # the module, called as its function: nsopt.solve(problem, ...) (nsopt._callable)

from .problems import MultipleImpact  # noqa: E402  (the multiple-impact problem, issue 12)
from .sensitivity import diagnose  # noqa: E402  (issue 21: derivatives, uniqueness)
from . import sensitivity  # noqa: E402  (the package, called as its function: nsopt.sensitivity(...))
from .exceptions import NotDifferentiable  # noqa: E402  (issue 30: a derivative that is not determined)

__version__ = "0.1.0"

__all__ = ["solve", "methods", "Workspace", "Solution", "Status", "Iterate", "LCP", "MLCP", "Relay", "Equality", "AVI",
           "FrictionContact", "GlobalFrictionContact", "GenericMechanical", "Block", "NsoptError",
           "ProblemError", "MethodNotFound", "OptionError", "NotApplicable", "SolverError",
           "FormatError", "MissingExtra", "NsoptWarning"]
__all__ += ["MultipleImpact"]
__all__ += ["sensitivity", "diagnose", "NotDifferentiable"]


# Subpackages loaded on first attribute access (PEP 562): ``import nsopt`` then ``nsopt.modeling`` works
# without importing them (and cvxpy, sympy, h5py, pandas behind them) with nsopt itself.
# (nsopt.solve and nsopt.sensitivity are the module and the package, each called as its function)
_SUBPACKAGES = ("data", "formulations", "generate", "io", "jax", "modeling", "reductions", "studies", "symbolic")


def _present(name: str) -> bool:
    import os

    here = os.path.dirname(__file__)
    return os.path.isdir(os.path.join(here, name)) or os.path.isfile(os.path.join(here, name + ".py"))


def __getattr__(name):
    if name in _SUBPACKAGES and _present(name):
        import importlib

        return importlib.import_module(f"nsopt.{name}")
    raise AttributeError(f"module 'nsopt' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {n for n in _SUBPACKAGES if _present(n)})
