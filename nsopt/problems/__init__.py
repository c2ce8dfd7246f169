"""One-step nonsmooth problems as immutable, validated data objects (Siconos conventions)."""

from ._delassus import DelassusFactors
from .avi import AVI
from .friction import FrictionContact, GlobalFrictionContact
from .gmp import Block, GenericMechanical
from .impact import MultipleImpact
from .lcp import LCP
from .mlcp import MLCP
from .relay import Equality, Relay

__all__ = [
           "AVI",
           "LCP",
           "MLCP",
           "Block",
           "DelassusFactors",
           "Equality",
           "FrictionContact",
           "GenericMechanical",
           "GlobalFrictionContact",
           "MultipleImpact",
           "Relay",
]
