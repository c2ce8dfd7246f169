"""Symbolic front end on SymPy: numeric linearization of equations of motion and relations from expressions (the only nsopt module that imports sympy)."""

from .linearization import Linearization, linearize
from .lcs import LCS, ContactModel, lcs
from .relations import Plugin, compile_plugin, relation, relation_plugins

__all__ = ["linearize", "Linearization", "relation", "relation_plugins", "compile_plugin", "Plugin", "lcs", "LCS",
           "ContactModel"]
