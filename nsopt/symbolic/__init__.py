"""Symbolic front end on SymPy: numeric linearization of equations of motion and relations from expressions (the only nsopt module that imports sympy)."""

from .._extras import require

require("symbolic", "nsopt.symbolic")      # sympy: pip install "nsopt[symbolic]"

from .linearization import Linearization, linearize  # noqa: E402  (after the extra's check)
from .lcs import LCS, ContactModel, lcs  # noqa: E402
from .relations import Plugin, compile_plugin, relation, relation_plugins  # noqa: E402

__all__ = ["linearize", "Linearization", "relation", "relation_plugins", "compile_plugin", "Plugin", "lcs", "LCS",
           "ContactModel"]
