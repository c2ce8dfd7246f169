"""Problem files: the shared Siconos corpus (one setting, ``NSOPT_DATA``: :func:`path`, :func:`corpus_files`)
and the small sample of it that ships with nsopt (:func:`sample`, :func:`samples`)."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "NSOPT_DATA"
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared corpus folder.

    ``$NSOPT_DATA`` if set, else ``../shared/siconos-data`` from the project root (the checkout that
    holds ``nsopt/``), else from the current directory.

    Returns
    -------
    pathlib.Path
        The folder (which may not exist: see :func:`has_data`).

    Examples
    --------
    >>> from nsopt import data
    >>> data.data_dir().is_absolute(), data.corpus_files("no-such-folder")
    (True, [])
    """
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser().resolve()
    for base in (_PROJECT_ROOT, Path.cwd()):
        p = (base / ".." / "shared" / "siconos-data").resolve()
        if p.is_dir():
            return p
    return (_PROJECT_ROOT / ".." / "shared" / "siconos-data").resolve()


def path(relative: str) -> Path:
    """A file of the shared corpus, e.g. ``path("fc3d/Capsules-i101-404.dat")``.

    Parameters
    ----------
    relative : str
        The file's path inside the corpus folder.

    Returns
    -------
    pathlib.Path
        ``data_dir() / relative``.

    Raises
    ------
    FileNotFoundError
        When it is not there (the message names ``$NSOPT_DATA``).
    """
    p = data_dir() / relative
    if not p.exists():
        raise FileNotFoundError(2, f"not in the shared corpus {data_dir()} (set {ENV} to the "
                                   "siconos-data folder)", str(p))
    return p


def has_data() -> bool:
    """True when the shared corpus folder (:func:`data_dir`) exists.
    """
    return data_dir().is_dir()


def corpus_files(folder: str) -> list[Path]:
    """Problem files (``.dat``, ``.hdf5``) of one corpus folder, sorted.

    Parameters
    ----------
    folder : str
        A folder of the corpus: ``"lcp"``, ``"fc3d"``, ...

    Returns
    -------
    list of pathlib.Path
        Empty when the corpus or the folder is absent.
    """
    d = data_dir() / folder
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.suffix in (".dat", ".hdf5"))


# ------------------------------------------------------------------ the sample shipped with nsopt
SAMPLES = Path(__file__).resolve().parent / "siconos_samples"


def sample(relative: str) -> Path:
    """A file of the sample of Siconos' test problems that ships with nsopt (package data, 19 files,
    370 kB, Apache-2.0: ``nsopt/siconos_samples/README.md``), e.g. ``sample("fc3d/Capsules-i101-404.dat")``:
    it runs where the shared corpus is absent.

    Parameters
    ----------
    relative : str
        ``"folder/name"``, one of :func:`samples`.

    Returns
    -------
    pathlib.Path
        The file, to give to :func:`nsopt.io.load`.

    Raises
    ------
    FileNotFoundError
        When the sample has no such file (the message lists those it has).

    Examples
    --------
    >>> import nsopt
    >>> from nsopt import data
    >>> nsopt.io.load(data.sample("fc3d/Capsules-i101-404.dat"))
    FrictionContact(dim=3, nc=225, sparse)
    """
    names = samples()
    if relative not in names:
        raise FileNotFoundError(2, f"not in nsopt's sample of Siconos' test problems (it has: "
                                   f"{', '.join(names)}; the full corpus: path())", str(relative))
    return SAMPLES / relative


def samples(folder: str | None = None) -> list[str]:
    """The files of the shipped sample (:func:`sample`), as ``"folder/name"``, sorted; only those of
    ``folder`` (``"lcp"``, ``"fc3d"``, ...) when given.

    Examples
    --------
    >>> from nsopt import data
    >>> data.samples("mlcp")
    ['mlcp/RCD_mlcp.dat', 'mlcp/deudeu_mlcp.dat']
    """
    found = sorted(p.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("*/*.dat"))
    return [n for n in found if folder is None or n.split("/")[0] == folder]
