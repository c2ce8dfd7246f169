"""Problem-to-problem reductions as objects with ``apply`` and ``invert`` (see :mod:`._base`).

``to_lcp``: Relay, MLCP, AVI and FC2D to an LCP (used by lemke, enum and available to every method).
"""

from ._base import Chain, Reduction
from .to_lcp import (TO_LCP, AVIToLCP, AVIToMLCP, FC2DToLCP, MLCPToLCP, RelayToLCP, box_of, dense_of,
                     lcp_size)

__all__ = ["Reduction", "Chain", "RelayToLCP", "MLCPToLCP", "AVIToMLCP", "AVIToLCP", "FC2DToLCP",
           "TO_LCP", "box_of", "dense_of", "lcp_size"]
