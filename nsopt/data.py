"""Where the shared Siconos corpus lives: one setting, ``NSOPT_DATA``."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "NSOPT_DATA"
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared corpus folder: ``$NSOPT_DATA`` if set, else ``../shared/siconos-data`` from the
    project root (the checkout that holds ``nsopt/``), else from the current directory."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser().resolve()
    for base in (_PROJECT_ROOT, Path.cwd()):
        p = (base / ".." / "shared" / "siconos-data").resolve()
        if p.is_dir():
            return p
    return (_PROJECT_ROOT / ".." / "shared" / "siconos-data").resolve()


def path(relative: str) -> Path:
    """A file of the shared corpus, e.g. ``path("fc3d/Capsules-i101-404.dat")``: ``data_dir() /
    relative``. Raises FileNotFoundError, naming ``$NSOPT_DATA``, when it is not there."""
    p = data_dir() / relative
    if not p.exists():
        raise FileNotFoundError(2, f"not in the shared corpus {data_dir()} (set {ENV} to the "
                                   "siconos-data folder)", str(p))
    return p


def has_data() -> bool:
    return data_dir().is_dir()


def corpus_files(folder: str) -> list[Path]:
    """Problem files (``.dat``, ``.hdf5``) of one corpus folder, sorted; [] when absent."""
    d = data_dir() / folder
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.suffix in (".dat", ".hdf5"))
