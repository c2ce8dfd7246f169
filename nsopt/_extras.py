"""The optional extras of nsopt (``pyproject.toml``'s ``[project.optional-dependencies]``) and the
check that a part's extra is installed, made where the part is first used.

``pip install nsopt`` installs the core: the problems, ``solve`` and every method, the readers and
writers, the modeling layer, sensitivities (numpy, scipy, numba, cvxpy with osqp, scs and
clarabel, h5py). The rest comes with an extra named for its use, and :func:`require` raises
:class:`~nsopt.exceptions.MissingExtra` (an ``ImportError``) naming it, e.g.
``nsopt.mechanics needs coal, trimesh, which are not installed: pip install "nsopt[mechanics]"``.
``tests/test_extras.py`` checks this table against ``pyproject.toml``.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from types import MappingProxyType

from .exceptions import MissingExtra

__all__ = ["EXTRAS", "missing", "require"]

# extra -> the modules it installs that nsopt imports (import names, not distribution names)
EXTRAS = MappingProxyType({
    "symbolic": ("sympy", "mpmath"),
    "mechanics": ("coal", "trimesh", "matplotlib", "tqdm"),
    "studies": ("pandas", "pyarrow", "matplotlib", "tqdm", "distributed"),
    "jax": ("jax",),
    # nsopt[all]: every part above
    "all": ("sympy", "mpmath", "coal", "trimesh", "matplotlib", "tqdm", "pandas", "pyarrow", "distributed", "jax"),
    # the tools of the test suite (``nsopt[test]`` also installs every extra above)
    "test": ("pytest", "xdist", "hypothesis", "diffcp", "playwright"),
})


def _absent(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is None
    try:
        return find_spec(module) is None
    except (ImportError, ValueError):
        return True


def missing(extra: str, modules=None) -> list[str]:
    """The modules of ``extra`` (or only ``modules`` of it) that are not installed."""
    return [m for m in (EXTRAS[extra] if modules is None else modules) if _absent(m)]


def require(extra: str, feature: str, modules=None) -> None:
    """Raise :class:`~nsopt.exceptions.MissingExtra` when a module of ``extra`` (or of ``modules``,
    some of its modules) is not installed; ``feature`` names what the user asked for
    (``"nsopt.mechanics"``, ``"progress=True"``)."""
    absent = missing(extra, modules)
    if absent:
        raise MissingExtra(extra, absent, feature)
