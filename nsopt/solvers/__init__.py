"""Solver modules; importing this package fills the registry (each module registers its methods)."""

import importlib.util

from . import linear  # noqa: F401
from . import pgs  # noqa: F401
from . import nsgs  # noqa: F401
from . import lemke  # noqa: F401
from . import enum  # noqa: F401
from . import newton  # noqa: F401
from . import newton_lcp  # noqa: F401
from . import lzb  # noqa: F401
from . import gmp_newton  # noqa: F401

# the convex methods need cvxpy: registered only when it is installed (the one optional import; an
# ImportError raised inside nsopt's own modules is a bug and propagates)
if importlib.util.find_spec("cvxpy") is not None:
    from . import convex  # noqa: F401
    from . import socp_fp  # noqa: F401
