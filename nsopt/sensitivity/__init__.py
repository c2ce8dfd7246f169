"""Sensitivities, solution-set diagnosis and selection of the one-step problems (``formulations/sensitivity.md``).

* :func:`sensitivity` (``nsopt.sensitivity``): derivatives of a solution with respect to the data;
* :func:`diagnose` (``nsopt.diagnose``): is the solution unique, how large is the solution set near it;
* :func:`select` (``nsopt.solve(..., select="min-norm")``): the least-norm solution.
"""

from .core import Sensitivity, sensitivity
from .diagnose import Diagnosis, diagnose

__all__ = ["Diagnosis", "Sensitivity", "diagnose", "sensitivity"]

# nsopt.sensitivity is this package, called as its function (nsopt.sensitivity(problem, solution)):
# its modules stay reachable (import nsopt.sensitivity.core as core)
from .._callable import make_callable  # noqa: E402

make_callable(__name__, sensitivity)
