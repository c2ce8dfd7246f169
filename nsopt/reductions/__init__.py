"""Problem-to-problem reductions as objects with ``apply`` and ``invert`` (see :mod:`._base`)."""

from ._base import Chain, Reduction

__all__ = ["Reduction", "Chain"]
