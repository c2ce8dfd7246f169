"""Symbolic front end on SymPy: numeric linearization of equations of motion (the only nsopt module that imports sympy)."""

from .linearization import Linearization, linearize

__all__ = ["linearize", "Linearization"]
