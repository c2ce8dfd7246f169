"""The one rule for every writer of nsopt (problem files, FCLIB, a run's problems, campaign folders).

- ``overwrite=False`` (the default everywhere): an existing target is never replaced; the writer
  raises :class:`~nsopt.exceptions.OutputError` (errno EEXIST) before writing anything.
- A file is written under a unique temporary name beside it (:func:`temporary_beside`) and renamed
  over the target at the end: the target is never half written, and no file of the user's (say an
  ``X.hdf5.tmp`` of their own) is touched.
- A folder target (:func:`check_folder`) is checked, with the names that will be written into it,
  before a long job starts, so that a clash is found before the first hour of work, not after.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from ..exceptions import OutputError

#: The ``overwrite`` parameter and the result of the file writers' docstrings (``{write_result}``,
#: put in by :func:`nsopt._doc.insert_section`).
WRITE_RESULT_DOC = """overwrite : bool, default False
    Replace an existing file.

Returns
-------
pathlib.Path
    The file written."""


def check_file(path, *, overwrite: bool = False, what: str = "file") -> Path:
    """``path`` as a Path, after checking that a file may be written there (see the module)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(errno.EISDIR, f"is a folder; a {what} name is needed", path)
    if path.exists() and not overwrite:
        raise OutputError(errno.EEXIST, f"{what} exists (pass overwrite=True to replace it)", path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(errno.ENOENT, "no such folder to write into", path)
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(errno.EACCES, f"cannot write the {what} (permission denied)", path)
    return path


def check_folder(path, names=(), *, overwrite: bool = False, create: bool = True) -> Path:
    """``path`` as a Path to a folder that may receive the files ``names`` (an iterable of names,
    or a callable ``name -> bool`` telling which existing names would clash); created when missing
    and ``create``. Raises :class:`OutputError` naming the first clash unless ``overwrite``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(errno.ENOTDIR, "is a file; a folder is needed", path)
    if path.is_dir() and not overwrite:
        existing = sorted(p.name for p in path.iterdir())
        test = names if callable(names) else set(names).__contains__
        hit = next((n for n in existing if test(n)), None)
        if hit is not None:
            raise OutputError(errno.EEXIST, f"the folder already holds {hit!r} (pass overwrite=True "
                                            f"to replace what clashes)", path)
    if not path.exists():
        if not create:
            raise OutputError(errno.ENOENT, "no such folder", path)
        try:
            path.mkdir(parents=True)
        except OSError as e:
            raise OutputError(e.errno or errno.EIO, f"cannot create the folder ({e.strerror or e})", path) from e
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(errno.EACCES, "cannot write into the folder (permission denied)", path)
    return path


def temporary_beside(path) -> Path:
    """A new, unique, empty file in the folder of ``path`` to write into and then ``os.replace``
    over ``path`` (never a fixed name such as ``path + '.tmp'``, which may be the user's)."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent if str(path.parent) else ".")
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def written_beside(path):
    """Yield a unique temporary file beside ``path`` (:func:`temporary_beside`) to write, then rename it
    over ``path``; on any error the temporary file is removed, and an ``OSError`` becomes an
    :class:`~nsopt.exceptions.OutputError` naming ``path`` (not the temporary file)."""
    tmp = temporary_beside(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(e.errno or errno.EIO, f"cannot write the file ({e.strerror or e})", path) from e
        raise
