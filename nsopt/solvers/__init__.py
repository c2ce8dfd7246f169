"""Solver modules; importing this package fills the registry (each module registers its methods)."""

from . import linear  # noqa: F401
from . import pgs  # noqa: F401
from . import nsgs  # noqa: F401
from . import lemke  # noqa: F401
from . import enum  # noqa: F401
from . import newton  # noqa: F401
from . import newton_lcp  # noqa: F401
from . import lzb  # noqa: F401
from . import gmp_newton  # noqa: F401

try:  # convex formulations need cvxpy and its conic solvers
    from . import convex  # noqa: F401
except ImportError:  # pragma: no cover
    pass
