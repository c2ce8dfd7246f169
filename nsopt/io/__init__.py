"""Problem file readers and writers: Siconos ``.dat`` text files and FCLIB HDF5 files.

``load(path)`` detects the problem kind and returns the problem; explicit readers and writers:
:func:`read_lcp`, :func:`read_mlcp`, :func:`read_relay`, :func:`read_friction_contact`,
:func:`read_global_friction_contact`, :func:`read_gmp`, :func:`read_fclib`, :func:`write_fclib`,
:func:`write_siconos_dat`. Every malformed file raises :class:`~nsopt.exceptions.FormatError`
naming the file and, for text files, the line; a missing file raises FileNotFoundError (an
OSError, as ``open`` does), a folder IsADirectoryError. Declared sizes are checked against what
the file holds before anything is allocated (FCLIB: every dataset's declared size against the
problem's sizes). A text file ends where its header says it ends, with its last number whole:
when no line end follows that number, it must be printed as its neighbours are (not "0." or "0"
for a cut "0.1", not a "%.24e" mantissa without its exponent), else FormatError; a whole file that
trips this can be given a line end. (A cut that leaves a plausible decimal, "0.2" of "0.25", cannot
be told apart.)
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from ..exceptions import FormatError
from .fclib import _must_exist, fclib_kind, is_hdf5, read_fclib, write_fclib
from .siconos_dat import (READERS, Tokens, parse_numerics_matrix, read_friction_contact,
                          read_global_friction_contact, read_gmp, read_lcp, read_mlcp, read_relay,
                          read_siconos_dat, write_siconos_dat)

__all__ = ["load", "detect_kind", "read_lcp", "read_mlcp", "read_relay", "read_friction_contact",
           "read_global_friction_contact", "read_gmp", "read_fclib", "write_fclib",
           "write_siconos_dat", "read_siconos_dat", "KINDS"]

KINDS = ("lcp", "mlcp", "relay", "fc2d", "fc3d", "gfc2d", "gfc3d", "gmp")

# folder names (nsopt's shared corpus and Siconos' numerics/src/<X>/test/data) -> kind hint
_FOLDER_HINT = MappingProxyType({
    "lcp": "lcp", "mlcp": "mlcp", "relay": "relay", "gmp": "gmp", "genericmechanical": "gmp",
    "fc2d": "friction", "fc3d": "friction", "rfc": "friction", "frictioncontact": "friction",
    "vi": "friction", "rollingfrictioncontact": "friction", "gfc2d": "global",
    "gfc3d": "global", "globalfrictioncontact": "global",
    "soclcp": "soclcp", "socp": "soclcp",
})

_UNSUPPORTED = MappingProxyType({"soclcp": "second-order cone complementarity problems (SOCLCP) are not supported"})


def _name_hint(name: str):
    low = name.lower()
    if "mlcp" in low:
        return "mlcp"
    if low.startswith(("gfc", "grfc")) or "globalfrictioncontact" in low:
        return "global" if "condensed" not in low else "friction"
    if low.startswith(("fc2d", "fc3d", "rfc", "frictioncontact")) or "frictioncontact" in low:
        return "friction"
    if low.startswith("gmp") or "genericmechanical" in low:
        return "gmp"
    if "relay" in low:
        return "relay"
    if low.startswith("lcp") or "_lcp" in low:
        return "lcp"
    return None


def _friction_kind(path, tk: Tokens, global_hint: bool) -> str:
    """fc2d/fc3d/gfc2d/gfc3d from the header (dimension; M's size against dim * nc)."""
    tk.pos = 0
    dline = tk.line()
    dim = tk.int("friction-contact dimension")
    if dim == 5:
        tk.fail("dimension 5: rolling friction contact is not supported", line=dline)
    if dim not in (2, 3):
        tk.fail(f"friction-contact dimension must be 2 or 3, got {dim}", line=dline)
    if global_hint:
        return f"gfc{dim}d"
    nc = tk.size("number of contacts")
    tk.int("M storage type")
    size0 = tk.size("M rows")
    if size0 != dim * nc:
        return f"gfc{dim}d"
    # ambiguous (ndof = dim * nc, a name that does not say global): the reading that accounts
    # for the file's numbers best; a local problem when both do equally well
    left = {}
    for kind in (f"fc{dim}d", f"gfc{dim}d"):
        tk.pos = 0
        try:
            READERS[kind](path, _tokens=tk)
        except FormatError:
            continue
        left[kind] = _numbers_left(tk)
    if f"gfc{dim}d" in left and left[f"gfc{dim}d"] < left.get(f"fc{dim}d", float("inf")):
        return f"gfc{dim}d"
    return f"fc{dim}d"


def _numbers_left(tk: Tokens) -> int:
    from .siconos_dat import _FLOAT_OK

    return sum(1 for t in tk.toks[tk.pos:] if _FLOAT_OK.match(t))


def detect_kind(path) -> str:
    """The problem kind of a file.

    From FCLIB's group (HDF5), the folder name (``lcp/``, ``fc3d/``, Siconos' ``LCP/``,
    ``FrictionContact/``, ...), the file name, then the content.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str
        One of ``lcp, mlcp, relay, fc2d, fc3d, gfc2d, gfc3d, gmp``.

    Raises
    ------
    FormatError
        When no reader recognises the file.
    """
    path = Path(path)
    if is_hdf5(path) or path.suffix.lower() in (".hdf5", ".h5"):
        return fclib_kind(path)
    hint = None
    for part in reversed(path.parent.parts[-4:]):
        hint = _FOLDER_HINT.get(part.lower())
        if hint:
            break
    if hint is None:
        hint = _name_hint(path.name)
    if hint in _UNSUPPORTED:
        raise FormatError(path, _UNSUPPORTED[hint])
    if hint in ("lcp", "mlcp", "relay", "gmp"):
        return hint
    tk = Tokens(path)
    if hint in ("friction", "global"):
        name_global = _name_hint(path.name) == "global"
        return _friction_kind(path, tk, hint == "global" or name_global)
    return _sniff(path, tk)


def _sniff(path, tk: Tokens) -> str:
    """Content-based guess: the reader that parses the file and leaves the fewest numbers unread."""
    best = None
    closest = None       # the failure that got furthest into the file
    for kind in ("gmp", "mlcp", "fc3d", "gfc3d", "relay", "lcp"):
        tk.pos = 0
        try:
            p = READERS[kind](path, _tokens=tk)
        except FormatError as e:
            if closest is None or tk.pos > closest[0]:
                closest = (tk.pos, kind, e)
            continue
        left = _numbers_left(tk)
        k = p.kind
        if best is None or left < best[0]:
            best = (left, k)
        if left == 0:
            break
    if best is None:
        pos, kind, err = closest
        msg = str(err).split(": ", 1)[1] if ": " in str(err) else str(err)
        if pos == 0:
            raise FormatError(path, "unknown file: not an FCLIB HDF5 file and no Siconos reader "
                                    "(lcp, mlcp, relay, friction contact, global friction contact, "
                                    "generic mechanical) can parse it", line=1) from None
        raise FormatError(path, f"unknown or corrupt file: no Siconos reader parses it (read as "
                                f"{kind}: {msg})", line=err.line) from err
    return best[1]


def load(path, kind: str | None = None):
    """Load a problem file (Siconos ``.dat`` or FCLIB ``.hdf5``) as an nsopt problem.

    Parameters
    ----------
    path : str or path-like
        The file.
    kind : {"lcp", "mlcp", "relay", "fc2d", "fc3d", "gfc2d", "gfc3d", "gmp"}, optional
        Skip the detection (:func:`detect_kind`); for an HDF5 file it must match the FCLIB group.

    Returns
    -------
    Problem
        An :class:`~nsopt.LCP`, :class:`~nsopt.MLCP`, :class:`~nsopt.Relay`,
        :class:`~nsopt.FrictionContact`, :class:`~nsopt.GlobalFrictionContact` or
        :class:`~nsopt.GenericMechanical`.

    Raises
    ------
    FormatError
        For a corrupt, truncated or unknown file (names the file and, for text, the line).

    Examples
    --------
    >>> import os, tempfile, numpy as np, nsopt
    >>> p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], mu=0.5)
    >>> path = os.path.join(tempfile.mkdtemp(), "one_contact.dat")
    >>> _ = nsopt.io.write_siconos_dat(p, path)        # returns the path written
    >>> q = nsopt.io.load(path)
    >>> q, nsopt.io.detect_kind(path), bool(np.array_equal(q.q, p.q))
    (FrictionContact(dim=3, nc=1, dense), 'fc3d', True)
    """
    path = Path(path)
    _must_exist(path)
    if kind is not None and kind not in KINDS:
        raise FormatError(path, f"unknown problem kind {kind!r}; expected one of {KINDS}")
    if is_hdf5(path) or path.suffix.lower() in (".hdf5", ".h5"):
        p = read_fclib(path)
        if kind is not None and p.kind != kind:
            raise FormatError(path, f"expected a {kind} problem, the FCLIB file holds {p.kind}")
        return p
    if kind is None:
        kind = detect_kind(path)
    return read_siconos_dat(path, kind)
