"""nsopt: one-step nonsmooth problems of contact mechanics and switched systems, seen as optimization problems.

>>> import nsopt
>>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
>>> sol = nsopt.solve(p, method="pgs")
>>> print(sol.status.value, sol.z.round(6))
solved [1.333333 2.333333]
"""

from .exceptions import (FormatError, MethodNotFound, NotApplicable, NsoptError, NsoptWarning,
                         OptionError, ProblemError, SolverError)
from .problems import (AVI, LCP, MLCP, Block, Equality, FrictionContact, GenericMechanical,
                       GlobalFrictionContact, Relay)
from .monitor import Workspace
from .result import Iterate, Solution, Status
from .solve import methods, solve

from .problems import MultipleImpact  # noqa: E402  (the multiple-impact problem, issue 12)
from .sensitivity import diagnose, sensitivity  # noqa: E402  (issue 21: derivatives, uniqueness)

__version__ = "0.1.0"

__all__ = ["solve", "methods", "Workspace", "Solution", "Status", "Iterate", "LCP", "MLCP", "Relay", "Equality", "AVI",
           "FrictionContact", "GlobalFrictionContact", "GenericMechanical", "Block", "NsoptError",
           "ProblemError", "MethodNotFound", "OptionError", "NotApplicable", "SolverError",
           "FormatError", "NsoptWarning"]
__all__ += ["MultipleImpact"]
__all__ += ["sensitivity", "diagnose"]


def __getattr__(name):  # nsopt.io loads h5py lazily
    if name in ("io", "formulations", "jax"):  # formulations: lazily, it imports cvxpy; jax: the optional extra
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError(name)
