"""Where a campaign's problems come from: folders walked for known file kinds, the built-in generated
set, problem objects pickled for the workers; and how a worker loads one of them again."""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

SUFFIXES = (".dat", ".hdf5", ".h5")     # Siconos text files, FCLIB HDF5 files
GENERATED = "nsopt:generated/"          # prefix of the built-in problems' references


def find_problems(paths, suffixes=SUFFIXES) -> tuple[list[str], list[str]]:
    """The problem files under ``paths`` (files, or folders walked recursively), and warnings.

    Returns ``(files, warnings)``: sorted, de-duplicated absolute paths of the files whose suffix is in
    ``suffixes`` (a file named explicitly is kept whatever its suffix); one warning per path that does
    not exist or holds no problem file.

    Parameters
    ----------
    paths : iterable of str or path-like
        Files and folders (``~`` expanded).
    suffixes : tuple of str, default SUFFIXES
        The file suffixes looked for in folders (``.dat``, ``.hdf5``, ``.h5``; hidden files skipped).

    Returns
    -------
    files : list of str
        The problem files (symbolic links resolved).
    warnings : list of str
        One message per path that does not exist or holds no problem file.

    Examples
    --------
    >>> import os, tempfile
    >>> import nsopt
    >>> from nsopt.io import write_siconos_dat
    >>> from nsopt.studies import find_problems
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.mkdir(os.path.join(d, "sub"))
    ...     _ = write_siconos_dat(nsopt.LCP([[1.0]], [-1.0]), os.path.join(d, "sub", "a.dat"))
    ...     files, warns = find_problems([d, os.path.join(d, "missing")])
    ...     print([os.path.relpath(f, os.path.realpath(d)) for f in files], len(warns))
    ...     print(warns[0].endswith("missing: no such file or folder"))
    ['sub/a.dat'] 1
    True
    """
    files, warns, dirs = [], [], {}
    for p in paths:
        p = os.path.expanduser(os.fspath(p))
        if os.path.isfile(p):
            # (a file's folder resolved once for all its files: a file list of one folder)
            path = os.path.abspath(p)
            if os.path.islink(path):
                files.append(os.path.realpath(path))
            else:
                head, name = os.path.split(path)
                if head not in dirs:
                    dirs[head] = os.path.realpath(head)
                files.append(os.path.join(dirs[head], name))
        elif os.path.isdir(p):
            # the folder resolved once: below it, os.walk follows no symbolic link to a folder, so
            # only a file that is itself a link needs resolving
            found = []
            for root, _, names in os.walk(os.path.realpath(p)):
                for f in names:
                    if f.lower().endswith(suffixes) and not f.startswith("."):
                        path = os.path.join(root, f)
                        found.append(os.path.realpath(path) if os.path.islink(path) else path)
            if not found:
                warns.append(f"{p}: no problem file ({', '.join(suffixes)}) in this folder or its "
                             f"subfolders")
            files += found
        else:
            warns.append(f"{p}: no such file or folder")
    return sorted(set(files), key=lambda f: f.split(os.sep)), warns   # (the order of Paths)


def content_hash(ref: str) -> str:
    """sha256 (first 16 hex digits) of a problem file's bytes; of the generated problem's pickle
    for a built-in one."""
    h = hashlib.sha256()
    if ref.startswith(GENERATED):
        h.update(pickle.dumps(load_problem(ref), protocol=4))
    else:
        with open(ref, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


_DESCRIBED: dict = {}


def describe(ref: str) -> tuple:
    """``(ref, kind, content hash)`` of a problem (:func:`detect_kind`, :func:`content_hash`).

    For a file, the answer is kept for the next campaigns of this process while the file's
    ``(size, mtime_ns, inode)`` are unchanged (git's index does the same), so that a campaign run
    again on the same folder does not read every file again before its first task. As in git, an
    entry is trusted only for a file last modified more than 2 s before it was read (a file
    rewritten within the clock's granularity keeps its mtime)."""
    import time

    stamp = None
    if not ref.startswith(GENERATED):
        try:
            st = os.stat(ref)
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        except OSError:
            stamp = None
    kept = _DESCRIBED.get(ref)
    if stamp is not None and kept is not None and kept[0] == stamp and kept[1] - stamp[1] > 2e9:
        return kept[2]
    now = time.time_ns()
    out = (ref, detect_kind(ref), content_hash(ref))
    if stamp is not None:
        if len(_DESCRIBED) > 100_000:
            _DESCRIBED.clear()
        _DESCRIBED[ref] = (stamp, now, out)
    return out


def _builtin():
    """name -> builder of the built-in set: problems with known solutions, each from its own seed."""
    from .. import generate as g

    return {
        "lcp-spd-10": lambda: g.lcp(10, seed=11)[0],
        "lcp-spd-50": lambda: g.lcp(50, seed=12)[0],
        "lcp-spd-200": lambda: g.lcp(200, seed=13)[0],
        "lcp-p-30": lambda: g.lcp(30, seed=14, matrix="p")[0],
        "lcp-p-100": lambda: g.lcp(100, seed=15, matrix="p")[0],
        "lcp-psd-40": lambda: g.lcp(40, seed=16, matrix="psd")[0],
        "mlcp-5+20": lambda: g.mlcp(5, 20, seed=21)[0],
        "relay-20": lambda: g.relay(20, seed=31)[0],
        "fc2d-10c": lambda: g.friction_contact(10, dim=2, seed=41)[0],
        "fc3d-5c": lambda: g.friction_contact(5, dim=3, seed=51)[0],
        "fc3d-20c": lambda: g.friction_contact(20, dim=3, seed=52)[0],
        "fc3d-50c-mu0.8": lambda: g.friction_contact(50, dim=3, seed=53, mu=0.8)[0],
        "gfc3d-6c": lambda: g.global_friction_contact(6, 24, seed=61)[0],
    }


def builtin_problems(kinds=None) -> list[str]:
    """References of the built-in generated set (random LCPs, MLCP, relay, friction contact, all with
    known solutions from :mod:`nsopt.generate`), optionally only the problems of some kinds.

    Parameters
    ----------
    kinds : iterable of str, optional
        Keep only these kinds (``"lcp"``, ``"mlcp"``, ``"relay"``, ``"fc2d"``, ``"fc3d"``,
        ``"gfc3d"``); None: all.

    Returns
    -------
    list of str
        References ``"nsopt:generated/<name>"`` for :func:`load_problem`.

    Examples
    --------
    >>> from nsopt.studies import builtin_problems
    >>> builtin_problems(["fc3d"])
    ['nsopt:generated/fc3d-5c', 'nsopt:generated/fc3d-20c', 'nsopt:generated/fc3d-50c-mu0.8']
    """
    names = list(_builtin())
    if kinds:
        names = [n for n in names if n.split("-")[0] in kinds]
    return [GENERATED + n for n in names]


def load_problem(ref: str):
    """The problem behind a reference: a built-in name, a pickled problem (``.pkl``), or a file read
    by :func:`nsopt.io.load` (raises :class:`~nsopt.exceptions.FormatError` for corrupt files).

    Parameters
    ----------
    ref : str
        A reference from :func:`builtin_problems` or :func:`find_problems`.

    Returns
    -------
    Problem
        The problem (a built-in one is generated again from its seed).

    Raises
    ------
    FormatError
        For an unknown built-in name or a corrupt file.
    FileNotFoundError
        When the file does not exist.

    Examples
    --------
    >>> from nsopt.studies import builtin_problems, load_problem
    >>> load_problem(builtin_problems(["relay"])[0])
    Relay(n=20)
    """
    from ..exceptions import FormatError

    if ref.startswith(GENERATED):
        name = ref[len(GENERATED):]
        table = _builtin()
        if name not in table:
            raise FormatError(ref, f"no built-in problem {name!r}; built-in: {', '.join(table)}")
        return table[name]()
    if ref.endswith(".pkl"):
        with open(ref, "rb") as f:
            return pickle.load(f)
    from .. import io

    return io.load(ref)


def detect_kind(ref: str) -> str | None:
    """The problem kind without a full load where possible (None when it cannot be told: the
    worker then reports the file's error)."""
    if ref.startswith(GENERATED):
        return ref[len(GENERATED):].split("-")[0]
    if ref.endswith(".pkl"):
        return load_problem(ref).kind
    from .. import io

    try:
        return io.detect_kind(ref)
    except Exception:  # noqa: BLE001  corrupt or unknown: recorded as load_error by the worker
        return None


def short_name(ref: str) -> str:
    """A display name: the built-in name, or the file name."""
    if ref.startswith(GENERATED):
        return ref[len(GENERATED):]
    return Path(ref).name
