"""FCLIB HDF5 files (https://frictionlesscontactlibrary.github.io): local and global friction
contact.

Layout read and written:

* ``/fclib_local``: ``spacedim``, ``W`` (matrix), ``vectors/q``, ``vectors/mu``
  -> :class:`~nsopt.problems.FrictionContact` (u = W r + q);
* ``/fclib_global``: ``spacedim``, ``M``, ``H`` (matrices), ``vectors/f``, ``vectors/w``,
  ``vectors/mu`` -> :class:`~nsopt.problems.GlobalFrictionContact` with Siconos' q = f, b = w
  (M v = H r + f, u = Hᵀ v + w);
* a matrix is a group ``nzmax, m, n, nz, p, i, x``: ``nz >= 0`` triplet (i rows, p columns),
  ``nz = -1`` compressed columns, ``nz = -2`` compressed rows;
* optional ``/solution`` (``r``, ``u``, ``v``) and ``/guesses`` (``number_of_guesses``, ``1``,
  ``2``, ...), returned by ``read_fclib(path, with_solution=True)``.

FCLIB's extra linear constraints (local ``V``/``R``/``s``, global ``G``/``b``) and the rolling
variants (``/fclib_local_rolling``, ``/fclib_global_rolling``) are not supported: FormatError.
h5py is imported lazily.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._doc import insert_section
from ..exceptions import FormatError, ProblemError
from ..problems import FrictionContact, GlobalFrictionContact
from ._target import WRITE_RESULT_DOC, check_file, written_beside

__all__ = ["read_fclib", "write_fclib", "fclib_kind", "is_hdf5"]

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def is_hdf5(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(8) == HDF5_MAGIC
    except OSError:
        return False


def _h5py():
    try:
        import h5py
    except ImportError as e:  # pragma: no cover
        raise ImportError("reading FCLIB files needs h5py (pip install h5py)") from e
    return h5py


def _must_exist(path):
    """A missing file or a folder is an OSError (FileNotFoundError, IsADirectoryError), not a
    FormatError: ``except OSError`` catches it."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(errno.ENOENT, "no such problem file", str(p))
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, "a folder, not a problem file", str(p))


def _open(path):
    h5py = _h5py()
    _must_exist(path)
    try:
        return h5py.File(path, "r")
    except (OSError, ValueError) as e:
        raise FormatError(path, f"not a readable HDF5 file ({e})") from e


def _guarded(fn):
    """HDF5 libraries report corrupt containers with many exception types (RuntimeError, KeyError,
    OSError, ...): every one becomes a FormatError naming the file."""
    import functools

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        try:
            return fn(path, *args, **kwargs)
        except (FormatError, FileNotFoundError, IsADirectoryError):
            raise
        except (ImportError, MemoryError, KeyboardInterrupt):
            raise
        except Exception as e:
            raise FormatError(path, f"corrupt HDF5/FCLIB file ({type(e).__name__}: {e})") from e
    return wrapper


@_guarded
def fclib_kind(path) -> str:
    """``"fc2d"``/``"fc3d"`` (local), ``"gfc2d"``/``"gfc3d"`` (global), or raise FormatError."""
    with _open(path) as h:
        return _kind(h, path)


def _kind(h, path):
    for grp, fmt in (("fclib_local", "fc{}d"), ("fclib_global", "gfc{}d")):
        if grp in h:
            dim = _scalar(h, f"{grp}/spacedim", path)
            if dim == 5:
                raise FormatError(path, f"/{grp}/spacedim = 5: rolling friction contact is not "
                                        "supported")
            if dim not in (2, 3):
                raise FormatError(path, f"/{grp}/spacedim must be 2 or 3, got {dim}")
            return fmt.format(dim)
    for grp in ("fclib_local_rolling", "fclib_global_rolling"):
        if grp in h:
            raise FormatError(path, f"/{grp}: rolling friction contact is not supported")
    raise FormatError(path, "HDF5 file without an FCLIB group (/fclib_local or /fclib_global)")


_FREE_BYTES = 64 << 20  # what a dataset may hold beyond _RATIO times the file's size


def _dataset(h, name, path, count=None):
    """The dataset ``name`` (flattened when ``count`` is given: its first ``count`` entries only).

    Before anything is read, the bytes to read must be backed by the file: a few-kB file whose
    dataset declares 3e9 entries (HDF5 allows it: unwritten storage) would make a plain read ask
    for 24 GB. The caller has checked the declared size against the problem's sizes first; this
    is the last guard, against a header whose sizes all agree on a problem the file cannot hold."""
    h5py = _h5py()
    try:
        obj = h[name]
    except (KeyError, ValueError, OSError) as e:
        raise FormatError(path, f"missing /{name}") from e
    if not isinstance(obj, h5py.Dataset):
        raise FormatError(path, f"/{name} is not a dataset")
    n = int(np.prod(obj.shape, dtype=np.int64)) if obj.shape is not None else 0
    k = n if count is None else min(int(count), n)
    nbytes = k * obj.dtype.itemsize
    size = os.path.getsize(path)
    if nbytes > _FREE_BYTES and nbytes > _RATIO * size:
        raise FormatError(path, f"/{name} declares {n} entries ({nbytes / 2**30:.3g} GiB to read) in a file of "
                                f"{size} bytes: corrupt file")
    try:
        if count is None or obj.ndim == 0:
            return obj[()]
        if obj.ndim == 1:
            return obj[:k]
        flat = [d for d in obj.shape if d != 1]
        if len(flat) <= 1:  # a row or column vector stored 2-D
            idx = tuple(slice(0, k) if d != 1 else 0 for d in obj.shape) if flat else (0,) * obj.ndim
            return np.asarray(obj[idx]).reshape(-1)
        return np.asarray(obj[()]).reshape(-1)[:k]
    except (OSError, ValueError, TypeError) as e:
        raise FormatError(path, f"cannot read /{name} ({e})") from e


_RATIO = 64  # bytes read per byte of file, at most (FCLIB files are not compressed; gzip'd doubles ~2x)


def _scalar(h, name, path) -> int:
    a = np.asarray(_dataset(h, name, path, count=1)).reshape(-1)
    if a.size < 1:
        raise FormatError(path, f"/{name} is empty")
    try:
        v = a[0]
        if not np.isfinite(v) or float(v) != int(v):
            raise ValueError
        return int(v)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(path, f"/{name} must be an integer, got {a[0]!r}") from None


def _vector(h, name, path, size=None, count=None):
    """A numeric dataset as a float vector; with ``size``, its declared length must be ``size`` (checked
    before reading); with ``count``, only its first ``count`` entries are read."""
    if size is not None:
        n = _length(h, name, path)
        if n != size:
            raise FormatError(path, f"/{name} has {n} entries, expected {size}")
    a = np.asarray(_dataset(h, name, path, count=count))
    if a.dtype.kind not in "fiu":
        raise FormatError(path, f"/{name} is not numeric (dtype {a.dtype})")
    return a.astype(float).reshape(-1)


def _ints(h, name, path, count):
    a = np.asarray(_dataset(h, name, path, count=count)).reshape(-1)
    if a.dtype.kind not in "iu":
        raise FormatError(path, f"/{name}: index arrays i, p must be integers")
    return a.astype(np.int64)


def _length(h, name, path) -> int:
    """Number of entries of a dataset, from its header (nothing read)."""
    h5py = _h5py()
    obj = h.get(name)
    if not isinstance(obj, h5py.Dataset):
        raise FormatError(path, f"missing /{name}" if obj is None else f"/{name} is not a dataset")
    return int(np.prod(obj.shape, dtype=np.int64)) if obj.shape is not None else 0


def _matrix(h, name, path, shape):
    """A FCLIB matrix group -> scipy CSR (never densified). ``shape``: the (rows, columns) the
    problem's vectors imply (None: not implied), checked before anything is allocated."""
    m = _scalar(h, f"{name}/m", path)
    n = _scalar(h, f"{name}/n", path)
    nz = _scalar(h, f"{name}/nz", path)
    if m < 0 or n < 0:
        raise FormatError(path, f"/{name}: negative size {m}x{n}")
    for what, got, want in (("m (rows)", m, shape[0]), ("n (columns)", n, shape[1])):
        if want is not None and got != want:
            raise FormatError(path, f"/{name}/{what.split()[0]} = {got}: the problem's vectors "
                                    f"imply {want} {what.split()[1][1:-1]}")
    stored = min(_length(h, f"{name}/{k}", path) for k in ("x", "i", "p"))
    cells = m * n
    # every array's declared length against the matrix's sizes, before anything is read: at most
    # m*n entries (or nz), p of a compressed matrix at most the outer size + 1; and only the entries
    # needed are read (the arrays may be longer: nzmax)
    for k in ("x", "i", "p"):
        want = ((n if nz == -1 else m) + 1) if (k == "p" and nz in (-1, -2)) else max(nz, cells)
        got = _length(h, f"{name}/{k}", path)
        if got > want:
            raise FormatError(path, f"/{name}/{k} declares {got} entries; a {m}x{n} matrix (nz = {nz}) "
                                    f"has at most {want}: corrupt file")
    try:
        if nz >= 0:  # triplets: the first nz entries of i, p, x (the arrays may be longer: nzmax)
            if nz > stored:
                raise FormatError(path, f"/{name}: nz = {nz} but only {stored} stored entries")
            if nz > cells:
                raise FormatError(path, f"/{name}: nz = {nz} entries in a {m}x{n} matrix: corrupt file")
            I, J, X = (_ints(h, f"{name}/i", path, nz), _ints(h, f"{name}/p", path, nz),
                       _vector(h, f"{name}/x", path, count=nz))
            if nz and (I.min() < 0 or I.max() >= m or J.min() < 0 or J.max() >= n):
                raise FormatError(path, f"/{name}: triplet index out of range for {m}x{n}")
            A = sp.coo_matrix((X, (I, J)), shape=(m, n)).tocsr()
        elif nz in (-1, -2):  # compressed: outer + 1 pointers, then p[-1] indices and values
            outer, inner = (n, m) if nz == -1 else (m, n)
            have = _length(h, f"{name}/p", path)
            if have < outer + 1:
                raise FormatError(path, f"/{name}: pointer array p has {have} entries, needs {outer + 1}")
            p = _ints(h, f"{name}/p", path, outer + 1)
            nnz = int(p[-1])
            ni, nx = _length(h, f"{name}/i", path), _length(h, f"{name}/x", path)
            if p[0] != 0 or np.any(np.diff(p) < 0) or nnz > min(ni, nx) or nnz > cells:
                raise FormatError(path, f"/{name}: inconsistent compressed pointers p")
            idx = _ints(h, f"{name}/i", path, nnz)
            if nnz and (idx.min() < 0 or idx.max() >= inner):
                raise FormatError(path, f"/{name}: index out of range for {m}x{n}")
            cls = sp.csc_matrix if nz == -1 else sp.csr_matrix
            A = cls((_vector(h, f"{name}/x", path, count=nnz), idx, p), shape=(m, n)).tocsr()
        else:
            raise FormatError(path, f"/{name}/nz = {nz}: expected >= 0 (triplet), -1 (CSC) or "
                                    "-2 (CSR)")
    except (ValueError, IndexError) as e:
        raise FormatError(path, f"/{name}: invalid sparse matrix ({e})") from e
    A.sum_duplicates()
    return A


@_guarded
def read_fclib(path, *, with_solution: bool = False):
    """Read an FCLIB file: a FrictionContact (``/fclib_local``) or GlobalFrictionContact
    (``/fclib_global``, q = f, b = w).

    with_solution: also return a dict ``{"solution": {...} or None, "guesses": [{...}, ...]}``
    with the optional stored vectors (``r``, ``u``, and ``v`` for global problems), as
    ``(problem, extras)``.

    Parameters
    ----------
    path : str or path-like
        The HDF5 file.
    with_solution : bool, default False
        Also return the stored solution and guesses.

    Returns
    -------
    problem : FrictionContact or GlobalFrictionContact
        The problem (sparse matrices).
    extras : dict
        Only with ``with_solution=True``: ``{"solution": ..., "guesses": [...]}`` as above.

    Raises
    ------
    FormatError
        When the file is not a valid FCLIB file or its data do not make a valid problem (the message
        names the file and the dataset).
    FileNotFoundError
        When the file does not exist.

    See Also
    --------
    write_fclib : writes the file.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import nsopt
    >>> from nsopt.io import read_fclib, write_fclib
    >>> fc = nsopt.FrictionContact(3, np.eye(3), [-1.0, 0.5, 0.0], [0.3])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "fc3d.hdf5")
    ...     _ = write_fclib(fc, path, solution={"r": [1.0, 0.0, 0.0], "u": [0.0, 0.5, 0.0]})
    ...     p, extras = read_fclib(path, with_solution=True)
    >>> p, extras["solution"]["u"], extras["guesses"]
    (FrictionContact(dim=3, nc=1, sparse), array([0. , 0.5, 0. ]), [])
    """
    with _open(path) as h:
        kind = _kind(h, path)
        try:
            if kind.startswith("fc"):
                problem = _read_local(h, path)
            else:
                problem = _read_global(h, path)
        except ProblemError as e:
            raise FormatError(path, f"invalid problem data: {e}") from e
        if not with_solution:
            return problem
        sizes = {"r": problem.size, "u": problem.size}
        if isinstance(problem, GlobalFrictionContact):
            sizes["v"] = problem.ndof
        extras = {"solution": _read_vectors(h, "solution", path, sizes), "guesses": []}
        if "guesses" in h:
            key = "guesses/number_of_guesses"
            ng = _scalar(h, key, path) if key in h else 0
            if ng > len(h["guesses"]):
                raise FormatError(path, f"/{key} = {ng} but the group holds {len(h['guesses'])} entries")
            for k in range(1, max(ng, 0) + 1):
                g = _read_vectors(h, f"guesses/{k}", path, sizes)
                if g is not None:
                    extras["guesses"].append(g)
        return problem, extras


def _read_vectors(h, grp, path, sizes):
    if grp not in h:
        return None
    out = {}
    for name in ("r", "u", "v"):
        if f"{grp}/{name}" in h:
            out[name] = _vector(h, f"{grp}/{name}", path, size=sizes.get(name))
    return out


def _read_local(h, path):
    g = "fclib_local"
    for extra in ("V", "R", "vectors/s"):
        if f"{g}/{extra}" in h:
            raise FormatError(path, f"/{g}/{extra}: FCLIB local problems with extra linear "
                                    "constraints (V, R, s) are not supported")
    dim = _scalar(h, f"{g}/spacedim", path)
    nq = _length(h, f"{g}/vectors/q", path)
    _contacts(h, f"{g}/vectors/mu", path, dim, nq, "q")
    W = _matrix(h, f"{g}/W", path, (nq, nq))
    q = _vector(h, f"{g}/vectors/q", path, size=W.shape[0])
    mu = _vector(h, f"{g}/vectors/mu", path)
    return FrictionContact(dim, W, q, mu)


def _contacts(h, name, path, dim, n, of):
    """mu's declared length must be the number of contacts, n / dim (checked before reading)."""
    nmu = _length(h, name, path)
    if dim in (2, 3) and nmu * dim != n:
        raise FormatError(path, f"/{name} has {nmu} entries: {of} ({n} entries) implies {n // dim} "
                                f"contacts of dimension {dim}" if n % dim == 0 else
                          f"/{name} has {nmu} entries: {of} has {n} entries, not a multiple of the "
                          f"dimension {dim}")


def _read_global(h, path):
    g = "fclib_global"
    if f"{g}/G" in h or f"{g}/vectors/b" in h:
        raise FormatError(path, f"/{g}/G, /{g}/vectors/b: FCLIB global problems with extra "
                                "linear constraints are not supported")
    dim = _scalar(h, f"{g}/spacedim", path)
    nf, nw = _length(h, f"{g}/vectors/f", path), _length(h, f"{g}/vectors/w", path)
    _contacts(h, f"{g}/vectors/mu", path, dim, nw, "w")
    M = _matrix(h, f"{g}/M", path, (nf, nf))
    H = _matrix(h, f"{g}/H", path, (nf, nw))
    f = _vector(h, f"{g}/vectors/f", path, size=M.shape[0])
    w = _vector(h, f"{g}/vectors/w", path, size=H.shape[1])
    mu = _vector(h, f"{g}/vectors/mu", path)
    return GlobalFrictionContact(M, H, f, w, mu, dim=dim)


# ----------------------------------------------------------------------------------------------
# writer
# ----------------------------------------------------------------------------------------------

def _write_matrix(grp, A):
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    A.sort_indices()
    m, n = A.shape
    i32 = np.int32
    grp.create_dataset("nzmax", data=np.array([A.nnz], dtype=i32))
    grp.create_dataset("m", data=np.array([m], dtype=i32))
    grp.create_dataset("n", data=np.array([n], dtype=i32))
    grp.create_dataset("nz", data=np.array([-2], dtype=i32))      # compressed rows
    grp.create_dataset("p", data=A.indptr.astype(i32))
    grp.create_dataset("i", data=A.indices.astype(i32))
    grp.create_dataset("x", data=A.data.astype(float))


def _vectors_to_write(problem, vectors: dict, where: str) -> dict:
    """Check a solution/guess dict before any file is touched: keys r, u (size of the local
    unknowns) and, for global problems, v (ndof); real finite numeric vectors of those sizes."""
    from ..problems._base import as_vector

    sizes = {"r": problem.size, "u": problem.size}
    if isinstance(problem, GlobalFrictionContact):
        sizes["v"] = problem.ndof
    if not isinstance(vectors, dict):
        raise ProblemError(where, f"must be a dict of vectors ({', '.join(sizes)}), got "
                                  f"{type(vectors).__name__}", "write_fclib")
    out = {}
    for k, v in vectors.items():
        if k not in sizes:
            raise ProblemError(f"{where}[{k!r}]", f"unknown vector; expected {', '.join(sizes)}",
                               "write_fclib")
        out[k] = as_vector(v, f"{where}[{k!r}]", "write_fclib", size=sizes[k])
    return out


def write_fclib(problem, path, *, solution=None, guesses=None, title="", description="",
                math_info="", overwrite: bool = False):
    """Write a FrictionContact (``/fclib_local``) or GlobalFrictionContact (``/fclib_global``,
    f = q, w = b) problem in FCLIB's layout (matrices in compressed-row form, nz = -2).

    solution: optional dict of vectors (``r``, ``u``, and ``v`` for a global problem) stored in
    ``/solution``; guesses: optional list of such dicts stored in ``/guesses``. Both are checked
    (names, sizes, finite reals) before anything is written.
    overwrite: an existing file is replaced only when True; by default it raises
    :class:`~nsopt.exceptions.OutputError` (an OSError, errno EEXIST), so a problem file is never
    lost by accident. A folder, a missing folder or one that cannot be written raise OutputError too
    (errno EISDIR, ENOENT, EACCES), all before anything is written.

    The file is written under a unique temporary name beside ``path`` and renamed at the end:
    ``path`` is never left half written, the temporary file is removed on any failure, and no other
    file (say a ``<name>.tmp`` of the user's) is touched.

    Parameters
    ----------
    problem : FrictionContact or GlobalFrictionContact
        The problem.
    path : str or path-like
        The HDF5 file to write.
    solution : dict, optional
        Vectors stored in ``/solution``.
    guesses : list of dict, optional
        Vectors stored in ``/guesses``.
    title, description, math_info : str, optional
        FCLIB's info strings.
    {write_result}

    Raises
    ------
    TypeError
        When ``problem`` is not a FrictionContact or GlobalFrictionContact.
    ProblemError
        For a solution or guess vector with an unknown name, a wrong size or non-finite values.
    OutputError
        When the file exists and ``overwrite`` is False, or cannot be written.

    See Also
    --------
    read_fclib : reads the file back.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, nsopt
    >>> from nsopt.io import read_fclib, write_fclib
    >>> gfc = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), [0.0, 0.0, -1.0], np.zeros(3), [0.3], dim=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "gfc3d.hdf5")
    ...     _ = write_fclib(gfc, path, title="one contact")
    ...     print(read_fclib(path))
    ...     try:
    ...         write_fclib(gfc, path)
    ...     except nsopt.exceptions.OutputError as e:
    ...         print(e.strerror)
    GlobalFrictionContact(dim=3, nc=1, ndof=3)
    FCLIB file exists (pass overwrite=True to replace it)
    """
    h5py = _h5py()
    if isinstance(problem, FrictionContact):
        local = True
    elif isinstance(problem, GlobalFrictionContact):
        local = False
    else:
        raise TypeError(f"write_fclib writes FrictionContact or GlobalFrictionContact problems, "
                        f"not {type(problem).__name__}")
    sol = None if solution is None else _vectors_to_write(problem, solution, "solution")
    gss = [_vectors_to_write(problem, g, f"guesses[{k}]") for k, g in enumerate(guesses or [])]
    path = check_file(path, overwrite=overwrite, what="FCLIB file")
    with written_beside(path) as tmp, h5py.File(tmp, "w") as h:
        g = h.create_group("fclib_local" if local else "fclib_global")
        g.create_dataset("spacedim", data=np.array([problem.dim], dtype=np.int32))
        vec = g.create_group("vectors")
        if local:
            _write_matrix(g.create_group("W"), problem.W)
            vec.create_dataset("q", data=np.asarray(problem.q, dtype=float))
        else:
            _write_matrix(g.create_group("M"), problem.M)
            _write_matrix(g.create_group("H"), problem.H)
            vec.create_dataset("f", data=np.asarray(problem.q, dtype=float))
            vec.create_dataset("w", data=np.asarray(problem.b, dtype=float))
        vec.create_dataset("mu", data=np.asarray(problem.mu, dtype=float))
        info = g.create_group("info")
        for name, val in (("title", title), ("description", description),
                          ("math_info", math_info)):
            info.create_dataset(name, data=np.bytes_(val or ""))
        if sol is not None:
            s = h.create_group("solution")
            for k, v in sol.items():
                s.create_dataset(k, data=v)
        if gss:
            gg = h.create_group("guesses")
            gg.create_dataset("number_of_guesses", data=np.array([len(gss)], dtype=np.int32))
            for k, gs in enumerate(gss, start=1):
                sg = gg.create_group(str(k))
                for name, v in gs.items():
                    sg.create_dataset(name, data=v)
    return path


write_fclib.__doc__ = insert_section(write_fclib.__doc__, "write_result", WRITE_RESULT_DOC)
