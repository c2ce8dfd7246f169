"""Rigid-body mechanics in the manner of ``siconos.mechanics``: collision shapes and contactors, contact
detection with coal (broad and narrow phase, manifolds kept from step to step), a scene object with its
HDF5 record (``Scene``, as Siconos' ``MechanicsHdf5Runner``) and a viewer (an offline HTML page with a
time slider, and still images).

The bodies, contact relations and joints are :mod:`nsopt.modeling`'s (``NewtonEulerDS``,
``NewtonEuler3DR``, ``PivotJointR``, ...).
"""

from .._extras import require

require("mechanics", "nsopt.mechanics")    # coal, trimesh, ...: pip install "nsopt[mechanics]"

from .collision import CollisionManager, Contacts, InterpenetrationError, TunnellingWarning  # noqa: E402
from .shapes import Box, Capsule, Cone, Contactor, ConvexMesh, Cylinder, HalfSpace, Shape, Sphere  # noqa: E402

__all__ = ["Shape", "Sphere", "Box", "Capsule", "Cylinder", "Cone", "ConvexMesh", "HalfSpace", "Contactor",
           "CollisionManager", "Contacts", "InterpenetrationError", "TunnellingWarning"]
from .scene import Record, Recorder, Scene, SceneModel, SceneRun, SceneStep, load_record, load_siconos_record  # noqa: E402

__all__ += ["Scene", "SceneModel", "SceneRun", "SceneStep", "Recorder", "Record", "load_record", "load_siconos_record"]
