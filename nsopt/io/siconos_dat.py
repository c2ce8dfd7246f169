"""Siconos ``.dat`` text files: readers and writers.

The layout follows Siconos' own serialisation (``numerics/src``): a problem header (sizes,
dimension, number of contacts), one or more ``NumericsMatrix`` blocks, then the vectors, all
whitespace separated. A ``NumericsMatrix`` is written as ``storage size0 size1`` followed by

* storage 0 (dense): ``size0 size1`` again, then the ``size0*size1`` entries in column-major order;
* storage 1 (sparse block, SBM): ``nbblocks`` (0 = an all-zero matrix, nothing more), the numbers of
  block rows and columns, their cumulative sizes, ``filled1 filled2``, the block-row pointers, the
  block-column indices, then for each block its number and its entries in column-major order;
* storage 2 (sparse): the ``NumericsSparseMatrix`` origin (1 triplet, 2 CSC, 3 CSR) then CSparse's
  print: a banner line, a ``[triplet: ]m-by-n, nzmax: .. nnz: ..`` line, then either
  ``i j : x`` triplets or ``col j : locations a to b`` groups of ``i : x`` entries.

Problem files (readers ``read_*``):

* LCP ``n, M, q``; Relay ``n, M, q, lb, ub``;
* MLCP ``isStorageType1 isStorageType2 n m``, then (type 1) the ``blocksRows`` list ending at n+m,
  one ``blocksIsComp`` flag per block, ``M``, ``q``, and/or (type 2) ``A`` (n x n), ``B`` (m x m),
  ``C`` (n x m), ``D`` (m x n) row by row, ``a``, ``b``;
* FrictionContact ``dim nc M q mu``; GlobalFrictionContact ``dim nc M H q b mu``;
* GenericMechanical ``M`` (SBM: one sub-problem per block row), ``q``, then per block its Siconos
  problem type (0 LCP, 2 equality, 4 FC3D followed by mu).

Sparse input stays sparse (scipy CSR); values are read exactly as printed. Any inconsistency raises
:class:`~nsopt.exceptions.FormatError` naming the file and the line.
"""

from __future__ import annotations

import re
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from .._doc import insert_section
from ..exceptions import FormatError, ProblemError
from ..problems import (LCP, MLCP, Block, FrictionContact, GenericMechanical, GlobalFrictionContact,
                        Relay)
from ._target import WRITE_RESULT_DOC, check_file, written_beside

__all__ = ["read_lcp", "read_mlcp", "read_relay", "read_friction_contact",
           "read_global_friction_contact", "read_gmp", "read_siconos_dat", "write_siconos_dat",
           "parse_numerics_matrix"]

# Siconos' SICONOS_NUMERICS_PROBLEM_TYPE ids used in generic-mechanical files
GMP_TYPES = MappingProxyType({0: "lcp", 1: "mlcp", 2: "equality", 3: "fc2d", 4: "fc3d", 5: "ncp", 6: "mcp", 7: "vi",
             8: "avi", 9: "relay"})
GMP_IDS = MappingProxyType({"lcp": 0, "equality": 2, "fc2d": 3, "fc3d": 4, "relay": 9})

_INT_RE = re.compile(r"[+-]?\d+\Z")
_CS_HEADER = re.compile(r"(triplet:)?\s*(\d+)-by-(\d+),\s*nzmax:\s*(\d+)\s+nnz:\s*(-?\d+)")


# ----------------------------------------------------------------------------------------------
# tokenizer
# ----------------------------------------------------------------------------------------------

class Tokens:
    """Whitespace-separated tokens of a text file, each with its (1-based) line number."""

    def __init__(self, path, text: str | None = None):
        self.path = str(path)
        if text is None:
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                raise                       # OSErrors: `except OSError` catches a missing file
            except OSError as e:
                raise FormatError(path, f"cannot read the file ({e.strerror or e})") from e
            text = raw.decode("latin-1")
        self.lines = text.splitlines()
        toks: list[str] = []
        lno: list[int] = []
        for i, line in enumerate(self.lines):
            parts = line.split()
            if parts:
                toks.extend(parts)
                lno.extend([i] * len(parts))
        self.toks = toks
        self.lno = np.asarray(lno, dtype=np.int64)
        self.pos = 0
        # A last token with no line end after it may be a number cut short (a truncated file):
        # readers compare it with the other values of its vector (see _check_cut).
        self.suspect = len(toks) - 1 if toks and not text[-1:].isspace() else -1

    # -- position helpers
    def line(self) -> int:
        """1-based line of the next token (or one past the end of the file)."""
        if self.pos < len(self.toks):
            return int(self.lno[self.pos]) + 1
        return len(self.lines) + 1 if self.lines else 1

    def remaining(self) -> int:
        return len(self.toks) - self.pos

    def fail(self, msg, line=None, cause=None):
        err = FormatError(self.path, msg, line=self.line() if line is None else line)
        if cause is not None:
            raise err from cause
        raise err

    def _need(self, count: int, what: str):
        if count > self.remaining():
            self.fail(f"file ends early: {what} needs {count} more value(s), "
                      f"only {self.remaining()} remain")

    def check_size(self, n: int, what: str, line=None):
        """A declared size: must be >= 0 and not larger than the whole file could describe."""
        if n < 0:
            self.fail(f"{what} = {n} is negative", line=line)
        if n > max(len(self.toks), 1):
            self.fail(f"{what} = {n} exceeds what the file holds ({len(self.toks)} values in all): "
                      "truncated or corrupt file", line=line)
        return n

    # -- scalars
    def word(self, what: str) -> str:
        if self.pos >= len(self.toks):
            self.fail(f"file ends early: expected {what}")
        t = self.toks[self.pos]
        self.pos += 1
        return t

    def int(self, what: str) -> int:
        line = self.line()
        t = self.word(what)
        if not _INT_RE.match(t):
            self.fail(f"expected an integer for {what}, got {t[:40]!r}", line=line)
        return int(t)

    def size(self, what: str) -> int:
        line = self.line()
        return self.check_size(self.int(what), what, line=line)

    def float(self, what: str) -> float:
        line = self.line()
        self._check_cut(self.pos, self.pos + 1, what)
        t = self.word(what)
        try:
            return _to_float(t)
        except ValueError:
            self.fail(f"expected a number for {what}, got {t[:40]!r}", line=line)

    def expect(self, word: str, what: str):
        line = self.line()
        t = self.word(what)
        if t != word:
            self.fail(f"expected {word!r} in {what}, got {t[:40]!r}", line=line)

    # -- arrays
    def ints(self, count: int, what: str) -> np.ndarray:
        self._need(count, what)
        out = np.empty(count, dtype=np.int64)
        for k in range(count):
            out[k] = self.int(f"{what}[{k}]")
        return out

    def _check_cut(self, a: int, b: int, what: str):
        """The file's last number, when no line end follows it (the suspect token), must be whole. A
        number cut short is still a number ("0.1" cut gives "0." or "0"), so it must look like its
        neighbours: refused when it ends with its decimal point, has a one-digit exponent, or more than
        17 significant digits and no exponent; when the values before it in its
        vector share one format and it does not (count of decimals, exponent digits); with fewer
        than two values before it, when the numbers just before it in the file share one exponent
        format ("%.24e") and it does not; and when it is printed as an integer with no integer before it
        in its vector (a cut "0.1"). A whole file that trips this can end with a line end."""
        k = self.suspect
        if not a <= k < b:
            return
        t = self.toks[k]

        def cut(why):
            self.fail(f"{what}: the last value {t[:40]!r} {why}, and no line end follows it: the file looks "
                      "cut in the middle of a number (truncated); if it is whole, end it with a line end",
                      line=int(self.lno[k]) + 1)

        if t.endswith("."):
            cut("ends with its decimal point")
        sig = _signature(t)
        if len(sig) == 4 and sig[2] and sig[3] < 2:  # printf and Python print two exponent digits or more
            cut("has a one-digit exponent")
        if len(sig) == 4 and not sig[2] and len(t.lstrip("+-").replace(".", "").lstrip("0")) > 17:
            cut("has more digits than a double holds and no exponent (a \"%.24e\" mantissa?)")
        ref = self.toks[max(a, k - 8):k]
        if len(ref) >= 2:
            sigs = {_signature(x) for x in ref}
            if len(sigs) == 1 and _signature(t) not in sigs:
                cut("is not printed as the values before it")
            return
        run = []  # the numbers just before it printed alike (skipping integers: sizes, block types)
        for x in reversed(self.toks[max(0, k - 64):k]):
            if not _is_float_print(x):
                continue
            if run and _signature(x) != _signature(run[0]):
                break
            run.append(x)
        if len(run) >= 2 and _signature(run[0])[2:3] == (True,):
            if _signature(t) != _signature(run[0]):
                cut("is not printed as the numbers before it")
            return
        if not _is_float_print(t) and not any(not _is_float_print(x) for x in ref):
            cut("is printed as an integer, unlike a value of its kind, with no value before it to compare")

    def floats(self, count: int, what: str) -> np.ndarray:
        self._need(count, what)
        a, b = self.pos, self.pos + count
        self._check_cut(a, b, what)
        chunk = self.toks[a:b]
        try:
            out = np.array([_to_float(t) for t in chunk], dtype=float)
        except ValueError:
            for k, t in enumerate(chunk):
                try:
                    _to_float(t)
                except ValueError:
                    self.fail(f"expected a number for {what}[{k}], got {t[:40]!r}",
                              line=int(self.lno[a + k]) + 1)
            raise  # pragma: no cover
        self.pos = b
        return out

    # -- line-oriented access (CSparse prints)
    def seek_line(self, line0: int):
        """Move to the first token on 0-based line ``line0`` or after."""
        self.pos = int(np.searchsorted(self.lno, line0, side="left"))


_FLOAT_OK = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf(inity)?|nan)\Z",
                       re.IGNORECASE)


_SIG_RE = re.compile(r"[+-]?\d*(\.(\d*))?([eE][+-]?(\d+))?\Z")


def _signature(t: str):
    """How a number is printed: (has a point, decimals, has an exponent, exponent digits)."""
    m = _SIG_RE.match(t)
    if not m:
        return ("other", t)
    return (m.group(1) is not None, len(m.group(2) or ""), m.group(3) is not None,
            len(m.group(4) or ""))


def _is_float_print(t: str) -> bool:
    """A number printed with a decimal point or an exponent (not as an integer)."""
    return "." in t or "e" in t or "E" in t or t.lower().lstrip("+-") in ("inf", "infinity", "nan")


def _to_float(t: str) -> float:
    """C-like strtod on a whole token (no Python-only forms such as '1_0')."""
    if not _FLOAT_OK.match(t):
        raise ValueError(t)
    return float(t)


# ----------------------------------------------------------------------------------------------
# NumericsMatrix
# ----------------------------------------------------------------------------------------------

class MatrixInfo:
    """What a NumericsMatrix block of a file said about itself (storage, SBM block structure)."""

    def __init__(self, storage, shape, row_blocks=None, col_blocks=None, line=None):
        self.storage, self.shape, self.line = storage, shape, line
        self.row_blocks, self.col_blocks = row_blocks, col_blocks


def parse_numerics_matrix(tk: Tokens, what: str = "M"):
    """Read one NumericsMatrix at the tokenizer's position: (ndarray or CSR matrix, MatrixInfo)."""
    line = tk.line()
    storage = tk.int(f"{what} storage type")
    size0 = tk.size(f"{what} rows (size0)")
    size1 = tk.size(f"{what} columns (size1)")
    if storage == 0:
        s0 = tk.size(f"{what} rows (dense header)")
        s1 = tk.size(f"{what} columns (dense header)")
        if (s0, s1) != (size0, size1):
            tk.fail(f"dense matrix {what}: sizes {size0}x{size1} and {s0}x{s1} disagree")
        vals = tk.floats(size0 * size1, f"dense matrix {what} ({size0}x{size1})")
        A = np.ascontiguousarray(vals.reshape(size1, size0).T)  # column-major in the file
        return A, MatrixInfo(0, (size0, size1), line=line)
    if storage == 1:
        return _parse_sbm(tk, what, size0, size1, line)
    if storage == 2:
        return _parse_sparse(tk, what, size0, size1, line)
    tk.fail(f"unknown NumericsMatrix storage type {storage} for {what} (expected 0 dense, "
            "1 sparse-block or 2 sparse)", line=line)


def _parse_sbm(tk: Tokens, what, size0, size1, line):
    nbblocks = tk.size(f"{what} SBM number of blocks")
    if nbblocks == 0:
        return sp.csr_matrix((size0, size1)), MatrixInfo(1, (size0, size1), (), (), line)
    bn0 = tk.size(f"{what} SBM number of block rows")
    bn1 = tk.size(f"{what} SBM number of block columns")
    bs0 = tk.ints(bn0, f"{what} SBM cumulative block-row sizes")
    bs1 = tk.ints(bn1, f"{what} SBM cumulative block-column sizes")
    for name, bs, total in (("row", bs0, size0), ("column", bs1, size1)):
        if bs.size and (np.any(np.diff(np.concatenate([[0], bs])) <= 0) or bs[-1] != total):
            tk.fail(f"{what} SBM cumulative block-{name} sizes {bs[:8].tolist()}... must increase "
                    f"strictly up to {total}")
        if not bs.size and total:
            tk.fail(f"{what} SBM has no block {name}s but {total} {name}s")
    filled1 = tk.size(f"{what} SBM filled1")
    filled2 = tk.size(f"{what} SBM filled2")
    if filled1 < 1 or filled1 - 1 > bn0:
        tk.fail(f"{what} SBM filled1 = {filled1} inconsistent with {bn0} block rows")
    index1 = tk.ints(filled1, f"{what} SBM block-row pointers")
    index2 = tk.ints(filled2, f"{what} SBM block-column indices")
    if index1[0] != 0 or np.any(np.diff(index1) < 0) or index1[-1] > filled2:
        tk.fail(f"{what} SBM block-row pointers {index1[:8].tolist()}... must increase from 0 "
                f"to at most {filled2}")
    if filled2 and (index2.min() < 0 or index2.max() >= bn1):
        tk.fail(f"{what} SBM block-column index out of range [0, {bn1})")
    if int(index1[-1]) > nbblocks:
        tk.fail(f"{what} SBM declares {nbblocks} blocks but its pointers index {int(index1[-1])}")
    start0 = np.concatenate([[0], bs0[:-1]])
    start1 = np.concatenate([[0], bs1[:-1]])
    rows, cols, vals = [], [], []
    for br in range(filled1 - 1):
        r0, nr = int(start0[br]), int(bs0[br] - start0[br])
        for k in range(int(index1[br]), int(index1[br + 1])):
            bc = int(index2[k])
            c0, nc = int(start1[bc]), int(bs1[bc] - start1[bc])
            bline = tk.line()
            num = tk.int(f"{what} SBM block number")
            if num != k:
                tk.fail(f"{what} SBM block numbering: expected block {k}, got {num}", line=bline)
            v = tk.floats(nr * nc, f"{what} SBM block {k} ({nr}x{nc})")
            rows.append(r0 + np.tile(np.arange(nr), nc))     # column-major order in the block
            cols.append(c0 + np.repeat(np.arange(nc), nr))
            vals.append(v)
    if rows:
        A = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(size0, size1)).tocsr()
    else:
        A = sp.csr_matrix((size0, size1))
    A.sum_duplicates()
    rb = tuple(int(x) for x in np.diff(np.concatenate([[0], bs0])))
    cb = tuple(int(x) for x in np.diff(np.concatenate([[0], bs1])))
    info = MatrixInfo(1, (size0, size1), rb, cb, line)
    info.filled_rows = filled1 - 1     # Siconos' GMP reader: one sub-problem per filled block row
    diag = {int(index2[k]) for br in range(filled1 - 1)
            for k in range(int(index1[br]), int(index1[br + 1])) if int(index2[k]) == br}
    info.rows_without_diagonal = [br for br in range(filled1 - 1) if br not in diag]
    return A, info


def _parse_sparse(tk: Tokens, what, size0, size1, line):
    oline = tk.line()
    origin = tk.int(f"{what} sparse origin (1 triplet, 2 CSC, 3 CSR)")
    # Siconos skips the rest of the origin line and the CSparse banner, then parses the size line
    hdr = None
    for l0 in range(oline, min(oline + 3, len(tk.lines))):   # 0-based lines after the origin
        m = _CS_HEADER.search(tk.lines[l0])
        if m:
            hdr, hline = m, l0
            break
    if hdr is None:
        tk.fail(f"{what}: no CSparse size line ('[triplet: ]m-by-n, nzmax: .. nnz: ..') after the "
                "sparse origin", line=oline + 1)
    triplet = hdr.group(1) is not None
    m, n, nzmax, nnz = (int(hdr.group(k)) for k in (2, 3, 4, 5))
    if (m, n) != (size0, size1):
        tk.fail(f"{what}: CSparse size {m}x{n} disagrees with the declared {size0}x{size1}",
                line=hline + 1)
    tk.seek_line(hline + 1)
    if triplet:
        nz = tk.check_size(nnz, f"{what} triplet count")
        tk._need(4 * nz, f"{what} triplet entries")
        I = np.empty(nz, dtype=np.int64)
        J = np.empty(nz, dtype=np.int64)
        X = np.empty(nz)
        for p in range(nz):
            I[p] = tk.int(f"{what} triplet {p} row")
            J[p] = tk.int(f"{what} triplet {p} column")
            tk.expect(":", f"{what} triplet {p}")
            X[p] = tk.float(f"{what} triplet {p} value")
        if nz and (I.min() < 0 or I.max() >= m or J.min() < 0 or J.max() >= n):
            tk.fail(f"{what}: triplet index out of range for a {m}x{n} matrix")
        A = sp.coo_matrix((X, (I, J)), shape=(m, n)).tocsr()  # duplicates summed, as cs_compress
        A.sum_duplicates()
        return A, MatrixInfo(2, (m, n), line=line)
    if origin == 3 and m != n:
        tk.fail(f"{what}: CSR print of a non-square {m}x{n} matrix is ambiguous")
    ngroups = n
    ptr = np.zeros(ngroups + 1, dtype=np.int64)
    idx: list[int] = []
    val: list[float] = []
    for j in range(ngroups):
        gline = tk.line()
        tk.expect("col", f"{what} column {j} header")
        jj = tk.int(f"{what} column number")
        if jj != j:
            tk.fail(f"{what}: expected column {j}, got {jj}", line=gline)
        tk.expect(":", f"{what} column {j} header")
        tk.expect("locations", f"{what} column {j} header")
        a = tk.int(f"{what} column {j} first location")
        tk.expect("to", f"{what} column {j} header")
        b = tk.int(f"{what} column {j} last location")
        if a != len(idx) or b < a - 1:
            tk.fail(f"{what}: column {j} locations {a} to {b} inconsistent (expected to start at "
                    f"{len(idx)})", line=gline)
        cnt = tk.check_size(b - a + 1, f"{what} column {j} entry count")
        tk._need(3 * cnt, f"{what} column {j} entries")
        for _ in range(cnt):
            idx.append(tk.int(f"{what} column {j} row index"))
            tk.expect(":", f"{what} column {j} entry")
            val.append(tk.float(f"{what} column {j} value"))
        ptr[j + 1] = len(idx)
    ind = np.asarray(idx, dtype=np.int64)
    limit = n if origin == 3 else m
    if ind.size and (ind.min() < 0 or ind.max() >= limit):
        tk.fail(f"{what}: row index out of range for a {m}x{n} matrix")
    X = np.asarray(val, dtype=float)
    if origin == 3:
        A = sp.csr_matrix((X, ind, ptr), shape=(m, n))
    else:
        A = sp.csc_matrix((X, ind, ptr), shape=(m, n)).tocsr()
    A.sum_duplicates()
    return A, MatrixInfo(2, (m, n), line=line)


# ----------------------------------------------------------------------------------------------
# problem readers
# ----------------------------------------------------------------------------------------------

def _build(tk: Tokens, make, line=None):
    """Call a problem constructor; its ProblemError becomes a FormatError naming the file."""
    try:
        return make()
    except ProblemError as e:
        raise FormatError(tk.path, f"invalid problem data: {e}", line=line) from e


def _vector(tk, n, what):
    return tk.floats(n, what)


#: The sections the Siconos readers' docstrings share: ``{reader_head}`` (the parameter and the result,
#: whose class is the reader's return annotation) and ``{reader_sections}`` (what it raises, and the
#: examples' imports: each docstring's own example lines follow the marker).
READER_HEAD_DOC = """Parameters
----------
path : str or path-like
    The file.

Returns
-------
{cls}
    The problem in the file."""

READER_SECTIONS_DOC = """Raises
------
FormatError
    When the file is corrupt or truncated (the message names the file and the line reached).
FileNotFoundError
    When the file does not exist.

See Also
--------
write_siconos_dat : writes the file.
read_siconos_dat : reads a file of any kind, checking the dimension of friction problems.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import nsopt"""


def _text_reader(fn):
    """Public reader: tokenizes the file once, and turns any unexpected low-level error into a
    FormatError naming the file and the line reached (a safety net: the parsers check as they
    go)."""
    import functools

    doc = insert_section(fn.__doc__, "reader_head", READER_HEAD_DOC.format(cls=fn.__annotations__["return"]))
    fn.__doc__ = insert_section(doc, "reader_sections", READER_SECTIONS_DOC)

    @functools.wraps(fn)
    def wrapper(path, *, _tokens=None):
        tk = _tokens or Tokens(path)
        try:
            return fn(path, _tokens=tk)
        except FormatError:
            raise
        except (ProblemError, ArithmeticError, LookupError, TypeError, ValueError) as e:
            raise FormatError(tk.path, f"corrupt file ({type(e).__name__}: {e})",
                              line=tk.line()) from e
    return wrapper


@_text_reader
def read_lcp(path, *, _tokens=None) -> LCP:
    """Siconos LinearComplementarityProblem file: ``n``, M, q (M is read dense).

    {reader_head}

    {reader_sections}
    >>> from nsopt.io import read_lcp, write_siconos_dat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = write_siconos_dat(nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0]),
    ...                              os.path.join(d, "lcp.dat"))
    ...     p = read_lcp(path)
    >>> p, p.q
    (LCP(n=2, dense), array([-1.,  1.]))
    """
    tk = _tokens or Tokens(path)
    n = tk.size("LCP size n")
    M, info = parse_numerics_matrix(tk, "M")
    if M.shape != (n, n):
        tk.fail(f"LCP size n = {n} but M is {M.shape[0]}x{M.shape[1]}", line=info.line)
    q = _vector(tk, M.shape[1], "q")
    return _build(tk, lambda: LCP(M, q))


@_text_reader
def read_relay(path, *, _tokens=None) -> Relay:
    """Siconos RelayProblem file: ``n``, M, q, lb, ub.

    {reader_head}

    {reader_sections}
    >>> from nsopt.io import read_relay, write_siconos_dat
    >>> relay = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = read_relay(write_siconos_dat(relay, os.path.join(d, "relay.dat")))
    >>> p, p.lb, p.ub
    (Relay(n=2), array([-1., -1.]), array([1., 1.]))
    """
    tk = _tokens or Tokens(path)
    n = tk.size("relay size n")
    M, info = parse_numerics_matrix(tk, "M")
    if M.shape != (n, n):
        tk.fail(f"relay size n = {n} but M is {M.shape[0]}x{M.shape[1]}", line=info.line)
    q = _vector(tk, n, "q")
    lb = _vector(tk, n, "lb")
    ub = _vector(tk, n, "ub")
    return _build(tk, lambda: Relay(M, q, lb, ub))


@_text_reader
def read_mlcp(path, *, _tokens=None) -> MLCP:
    """Siconos MixedLinearComplementarityProblem file (storage 1: M with blocks, 2: A, B, C, D); storage 1 is
    read when the file has both.

    {reader_head}

    {reader_sections}
    >>> from nsopt.io import read_mlcp, write_siconos_dat
    >>> mlcp = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-1.0, -1.0], 1)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = read_mlcp(write_siconos_dat(mlcp, os.path.join(d, "mlcp.dat")))
    >>> p, p.is_eq
    (MLCP(n=1, m=1), array([ True, False]))
    """
    tk = _tokens or Tokens(path)
    st1 = tk.int("MLCP isStorageType1")
    st2 = tk.int("MLCP isStorageType2")
    if st1 not in (0, 1) or st2 not in (0, 1) or not (st1 or st2):
        tk.fail(f"MLCP storage flags must be 0/1 with at least one set, got {st1} {st2}")
    n = tk.size("MLCP n (equalities)")
    m = tk.size("MLCP m (complementarities)")
    N = n + m
    prob = None
    if st1:
        rows = [tk.int("MLCP blocksRows[0]")]
        while rows[-1] < N:
            if len(rows) > N + 1:
                tk.fail(f"MLCP blocksRows does not reach n+m = {N}")
            rows.append(tk.int(f"MLCP blocksRows[{len(rows)}]"))
        nb = len(rows) - 1
        comp = tk.ints(nb, "MLCP blocksIsComp")
        M, info = parse_numerics_matrix(tk, "M")
        q = _vector(tk, M.shape[1], "q")
        if nb < 1 or rows[0] != 0 or rows[-1] != N:
            tk.fail(f"MLCP blocksRows {rows[:10]} must run from 0 to n+m = {N}", line=info.line)
        prob = _build(tk, lambda: MLCP.from_matrix(M, q, n, blocks_rows=rows,
                                                  blocks_is_comp=(comp != 0)), line=info.line)
    if st2:
        A = tk.floats(n * n, "MLCP A").reshape(n, n)
        B = tk.floats(m * m, "MLCP B").reshape(m, m)
        C = tk.floats(n * m, "MLCP C").reshape(n, m)
        D = tk.floats(m * n, "MLCP D").reshape(m, n)
        a = tk.floats(n, "MLCP a")
        b = tk.floats(m, "MLCP b")
        if prob is None:
            prob = _build(tk, lambda: MLCP(A, B, C, D, a, b))
    return prob


def _fc_header(tk: Tokens, what):
    dline = tk.line()
    dim = tk.int(f"{what} dimension")
    if dim == 5:
        tk.fail(f"dimension 5: rolling friction contact is not supported (nsopt reads {what} of "
                "dimension 2 or 3)", line=dline)
    if dim not in (2, 3):
        tk.fail(f"{what} dimension must be 2 or 3, got {dim}", line=dline)
    nc = tk.size(f"{what} number of contacts")
    return dim, nc


@_text_reader
def read_friction_contact(path, *, _tokens=None) -> FrictionContact:
    """Siconos FrictionContactProblem file: ``dim nc``, M, q, mu, in dimension 2 or 3 (5,
    rolling friction, is refused).

    {reader_head}

    {reader_sections}
    >>> from nsopt.io import read_friction_contact, write_siconos_dat
    >>> fc = nsopt.FrictionContact(3, np.eye(3), [-1.0, 0.5, 0.0], [0.3])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = read_friction_contact(write_siconos_dat(fc, os.path.join(d, "fc3d.dat")))
    >>> p, p.mu
    (FrictionContact(dim=3, nc=1, dense), array([0.3]))
    """
    tk = _tokens or Tokens(path)
    dim, nc = _fc_header(tk, "friction-contact")
    M, info = parse_numerics_matrix(tk, "M")
    if M.shape != (dim * nc, dim * nc):
        tk.fail(f"{nc} contacts in dimension {dim} need a {dim * nc}x{dim * nc} matrix, "
                f"M is {M.shape[0]}x{M.shape[1]}", line=info.line)
    q = _vector(tk, M.shape[1], "q")
    mu = _vector(tk, nc, "mu")
    return _build(tk, lambda: FrictionContact(dim, M, q, mu))


@_text_reader
def read_global_friction_contact(path, *, _tokens=None) -> GlobalFrictionContact:
    """Siconos GlobalFrictionContactProblem file: ``dim nc``, M, H, q, b, mu.

    {reader_head}

    {reader_sections}
    >>> from nsopt.io import read_global_friction_contact, write_siconos_dat
    >>> gfc = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), [0.0, 0.0, -1.0], np.zeros(3), [0.3], dim=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = read_global_friction_contact(write_siconos_dat(gfc, os.path.join(d, "gfc3d.dat")))
    >>> p
    GlobalFrictionContact(dim=3, nc=1, ndof=3)
    """
    tk = _tokens or Tokens(path)
    dim, nc = _fc_header(tk, "global friction-contact")
    M, info = parse_numerics_matrix(tk, "M")
    H, hinfo = parse_numerics_matrix(tk, "H")
    if H.shape[1] != dim * nc:
        tk.fail(f"{nc} contacts in dimension {dim} need H with {dim * nc} columns, "
                f"H is {H.shape[0]}x{H.shape[1]}", line=hinfo.line)
    if M.shape[0] != M.shape[1] or H.shape[0] != M.shape[0]:
        tk.fail(f"M is {M.shape[0]}x{M.shape[1]} and H {H.shape[0]}x{H.shape[1]}: need M square "
                "with as many rows as H", line=hinfo.line)
    q = _vector(tk, M.shape[1], "q")
    b = _vector(tk, H.shape[1], "b")
    mu = _vector(tk, nc, "mu")
    return _build(tk, lambda: GlobalFrictionContact(M, H, q, b, mu, dim=dim))


@_text_reader
def read_gmp(path, *, _tokens=None) -> GenericMechanical:
    """Siconos GenericMechanicalProblem file: M (sparse-block: one sub-problem per block row), q,
    then per block its type (0 LCP, 2 equality, 4 FC3D + mu).
    FC2D and relay sub-problems are refused: the format stores no mu or bounds for them.

    {reader_head}

    Warns
    -----
    NsoptWarning
        When a sub-problem has no stored diagonal block in M (Siconos 4.4 then solves another
        problem; nsopt uses M as stored).

    {reader_sections}
    >>> from nsopt.io import read_gmp, write_siconos_dat
    >>> from nsopt.problems.gmp import Block
    >>> gmp = nsopt.GenericMechanical(np.eye(4), [-1.0, -1.0, 0.5, 0.0],
    ...                               [Block("lcp", 1), Block("fc3d", 3, 0.3)])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = read_gmp(write_siconos_dat(gmp, os.path.join(d, "gmp.dat")))
    >>> p, p.blocks[1].mu
    (GenericMechanical(n=4, blocks={'lcp': 1, 'fc3d': 1}), 0.3)
    """
    tk = _tokens or Tokens(path)
    M, info = parse_numerics_matrix(tk, "M")
    if info.storage != 1:
        tk.fail("a generic mechanical problem needs M in sparse-block storage (1): its block rows "
                f"define the sub-problems; got storage {info.storage}", line=info.line)
    if M.shape[0] != M.shape[1]:
        tk.fail(f"M must be square, got {M.shape[0]}x{M.shape[1]}", line=info.line)
    q = _vector(tk, M.shape[1], "q")
    blocks = []
    for k, size in enumerate(info.row_blocks[:getattr(info, "filled_rows", len(info.row_blocks))]):
        tline = tk.line()
        t = tk.int(f"type of sub-problem {k}")
        kind = GMP_TYPES.get(t)
        if kind == "fc3d":
            mu = tk.float(f"mu of sub-problem {k}")
            blocks.append(Block("fc3d", size, mu))
        elif kind in ("lcp", "equality"):
            blocks.append(Block(kind, size))
        elif kind == "fc2d":
            tk.fail(f"sub-problem {k} is FC2D: Siconos' GMP file format stores no friction "
                    "coefficient for it (not supported)", line=tline)
        elif kind == "relay":
            tk.fail(f"sub-problem {k} is a relay: Siconos' GMP file format stores no bounds for "
                    "it (not supported)", line=tline)
        elif kind is not None:
            tk.fail(f"sub-problem {k} of type {t} ({kind.upper()}) is not allowed in a generic "
                    "mechanical problem", line=tline)
        else:
            tk.fail(f"unknown sub-problem type {t} for block {k}", line=tline)
    missing = getattr(info, "rows_without_diagonal", [])
    if missing:
        import warnings

        from ..exceptions import NsoptWarning
        warnings.warn(NsoptWarning(
            f"{path}: sub-problem(s) {missing[:10]} have no stored diagonal block in M (a zero "
            "block). nsopt evaluates them with M as stored; Siconos 4.4's GMP solver and "
            "gmp_compute_error use the first stored block of M in its place, so Siconos' errors "
            "and solutions for this file are those of another problem."), stacklevel=3)
    return _build(tk, lambda: GenericMechanical(M, q, blocks))


READERS = MappingProxyType({"lcp": read_lcp, "mlcp": read_mlcp, "relay": read_relay,
           "fc2d": read_friction_contact, "fc3d": read_friction_contact,
           "gfc2d": read_global_friction_contact, "gfc3d": read_global_friction_contact,
           "gmp": read_gmp})


def read_siconos_dat(path, kind: str):
    """Read a Siconos ``.dat`` file of a known kind (lcp, mlcp, relay, fc2d, fc3d, gfc2d, gfc3d,
    gmp).

    Parameters
    ----------
    path : str or path-like
        The file.
    kind : str
        The problem kind; for the friction kinds, the file's dimension must match.

    Returns
    -------
    Problem
        The problem, from the kind's reader (:func:`read_lcp`, :func:`read_friction_contact`, ...).

    Raises
    ------
    FormatError
        For an unknown kind, a dimension other than the kind's, or a corrupt or truncated file
        (the message names the file and the line).
    FileNotFoundError
        When the file does not exist.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, nsopt
    >>> from nsopt.io import read_siconos_dat, write_siconos_dat
    >>> fc = nsopt.FrictionContact(3, np.eye(3), [-1.0, 0.5, 0.0], [0.3])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = write_siconos_dat(fc, os.path.join(d, "fc3d.dat"))
    ...     print(read_siconos_dat(path, "fc3d"))
    ...     try:
    ...         read_siconos_dat(path, "fc2d")
    ...     except nsopt.exceptions.FormatError as e:
    ...         print(str(e).split(": ", 1)[1])
    FrictionContact(dim=3, nc=1, dense)
    expected a fc2d problem but the file holds dimension 3
    """
    try:
        reader = READERS[kind]
    except KeyError:
        raise FormatError(path, f"unknown problem kind {kind!r}; expected one of "
                                f"{sorted(READERS)}") from None
    p = reader(path)
    want_dim = {"fc2d": 2, "fc3d": 3, "gfc2d": 2, "gfc3d": 3}.get(kind)
    if want_dim is not None and p.dim != want_dim:
        raise FormatError(path, f"expected a {kind} problem but the file holds dimension {p.dim}",
                          line=1)
    return p


# ----------------------------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------------------------

def _fmt(x) -> str:
    return f"{x:32.24e}"


def _vec_line(v) -> str:
    return " ".join(_fmt(x) for x in np.asarray(v, dtype=float).reshape(-1)) + " \n"


def _write_dense(A) -> str:
    A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
    s0, s1 = A.shape
    out = [f"0\n{s0}\n{s1}\n{s0}\t{s1}\n"]
    flat = A.reshape(-1, order="F")
    # Siconos breaks the line every size1 values
    for k in range(0, flat.size, max(s1, 1)):
        out.append(" ".join(_fmt(x) for x in flat[k:k + max(s1, 1)]) + " \n")
    return "".join(out)


def _write_sbm(A, row_blocks, col_blocks) -> str:
    A = sp.csr_matrix(A)
    s0, s1 = A.shape
    bs0 = np.cumsum(row_blocks).astype(np.int64)
    bs1 = np.cumsum(col_blocks).astype(np.int64)
    if (bs0[-1] if len(bs0) else 0) != s0 or (bs1[-1] if len(bs1) else 0) != s1:
        raise ValueError("block sizes do not add up to the matrix shape")
    rmap = np.searchsorted(bs0, np.arange(s0), side="right")
    cmap = np.searchsorted(bs1, np.arange(s1), side="right")
    coo = A.tocoo()
    pairs = set(zip(rmap[coo.row].tolist(), cmap[coo.col].tolist()))
    for d in range(min(len(bs0), len(bs1))):     # keep diagonal blocks (Siconos solvers use them)
        if row_blocks[d] == col_blocks[d]:
            pairs.add((d, d))
    pairs = sorted(pairs)
    nb = len(pairs)
    if nb == 0:
        return f"1\n{s0}\n{s1}\n0\n"
    index1 = np.zeros(len(bs0) + 1, dtype=np.int64)
    for (br, _) in pairs:
        index1[br + 1] += 1
    index1 = np.cumsum(index1)
    out = [f"1\n{s0}\n{s1}\n{nb}\n{len(bs0)}\n{len(bs1)}\n",
           "".join(f"{x}\t" for x in bs0) + "\n", "".join(f"{x}\t" for x in bs1) + "\n",
           f"{len(bs0) + 1}\n{nb}\n",
           "".join(f"{x}\t" for x in index1) + "\n",
           "".join(f"{bc}\t" for (_, bc) in pairs) + "\n"]
    start0 = np.concatenate([[0], bs0[:-1]])
    start1 = np.concatenate([[0], bs1[:-1]])
    for k, (br, bc) in enumerate(pairs):
        blk = A[int(start0[br]):int(bs0[br]), int(start1[bc]):int(bs1[bc])].toarray()
        out.append(f"{k}\n")
        out.append("".join(_fmt(x) + "\n" for x in blk.reshape(-1, order="F")))
    return "".join(out)


def _write_csc(A) -> str:
    A = sp.csc_matrix(A)
    A.sort_indices()
    m, n = A.shape
    out = [f"2\n{m}\n{n}\n2\n",
           "CSparse Version 3.1.9, May 4, 2016.  Copyright (c) Timothy A. Davis, 2006-2016\n",
           f"{m}-by-{n}, nzmax: {A.nnz} nnz: {A.nnz}, 1-norm: "
           f"{(abs(A).sum(axis=0).max() if A.nnz else 0.0):g}\n"]
    for j in range(n):
        a, b = int(A.indptr[j]), int(A.indptr[j + 1])
        out.append(f"    col {j} : locations {a} to {b - 1}\n")
        out.extend(f"      {int(i)} : {float(x)!r}\n" for i, x in zip(A.indices[a:b], A.data[a:b]))
    return "".join(out)


def _write_matrix(A, storage, blocks=None) -> str:
    if storage == "dense":
        return _write_dense(A)
    if storage == "sbm":
        rb, cb = blocks
        return _write_sbm(A, rb, cb)
    if storage == "sparse":
        return _write_csc(A)
    raise ValueError(f"unknown storage {storage!r}: use 'dense', 'sbm' or 'sparse'")


def write_siconos_dat(problem, path, *, storage: str | None = None, block_size: int | None = None,
                      overwrite: bool = False):
    """Write ``problem`` as a Siconos ``.dat`` file (readable by Siconos' own readers).

    overwrite: an existing file is replaced only when True; by default it raises
    :class:`~nsopt.exceptions.OutputError` (an OSError, errno EEXIST); a folder, a missing folder or
    one that cannot be written raise OutputError too, before anything is written. The file is
    written under a unique temporary name beside ``path`` and renamed at the end.

    storage: ``"dense"`` (NumericsMatrix 0), ``"sbm"`` (1, blocks of ``block_size`` rows/columns:
    the contact dimension for friction problems, 1 by default otherwise) or ``"sparse"`` (2, CSC);
    default dense for dense matrices, sbm for sparse local friction problems, sparse otherwise.
    Supports LCP, Relay, MLCP, FrictionContact, GlobalFrictionContact and GenericMechanical (always
    SBM, one block row per sub-problem). Values are written with 25 significant digits (exact).

    Parameters
    ----------
    problem : Problem
        The problem (one of the kinds above).
    path : str or path-like
        The file to write.
    storage : {"dense", "sbm", "sparse"}, optional
        The NumericsMatrix storage (default as above).
    block_size : int, optional
        The block size of ``"sbm"`` storage.
    {write_result}

    Raises
    ------
    OutputError
        When the file exists and ``overwrite`` is False, or the target is a folder, or its folder is
        missing or not writable (before anything is written).
    ValueError
        For an unsupported problem kind, an unknown storage, a matrix not made of
        ``block_size`` blocks, SBM storage for a global problem, or a GMP block the format cannot
        hold.

    See Also
    --------
    read_siconos_dat : reads the file back (as does the reader of its kind, e.g. :func:`read_lcp`).

    Examples
    --------
    >>> import os, tempfile
    >>> import nsopt
    >>> from nsopt.io import read_lcp, write_siconos_dat
    >>> lcp = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = write_siconos_dat(lcp, os.path.join(d, "lcp.dat"))
    ...     print(path.name, (read_lcp(path).M == lcp.M).all())
    ...     try:
    ...         write_siconos_dat(lcp, path)
    ...     except nsopt.exceptions.OutputError as e:
    ...         print(e.strerror)
    lcp.dat True
    Siconos .dat file exists (pass overwrite=True to replace it)
    """
    kind = getattr(problem, "kind", None)
    parts: list[str] = []

    def mat(A, bs_default, what):
        st = storage or ("dense" if not sp.issparse(A) else ("sbm" if bs_default > 1 else "sparse"))
        if st == "sbm":
            bs = block_size or bs_default
            if A.shape[0] % bs or A.shape[1] % bs:
                raise ValueError(f"{what} of shape {A.shape} is not made of {bs}x{bs} blocks")
            return _write_matrix(A, st, ([bs] * (A.shape[0] // bs), [bs] * (A.shape[1] // bs)))
        return _write_matrix(A, st)

    if kind == "lcp":
        parts += [f"{problem.size}\n", mat(problem.M, 1, "M"), _vec_line(problem.q)]
    elif kind == "relay":
        parts += [f"{problem.size}\n", mat(problem.M, 1, "M"), _vec_line(problem.q),
                  _vec_line(problem.lb), _vec_line(problem.ub)]
    elif kind == "mlcp":
        br = problem.blocks_rows
        if br is None:   # storage type 2: A, B, C, D row by row, then a, b
            parts.append(f"0\n1\n{problem.n}\n{problem.m}\n")
            for X in (problem.A, problem.B, problem.C, problem.D):
                parts.extend(_vec_line(row) for row in np.asarray(X))
            parts += [_vec_line(problem.a), _vec_line(problem.b)]
        else:            # storage type 1: blocks, M, q
            parts += [f"1\n0\n{problem.n}\n{problem.m}\n",
                      " ".join(str(int(x)) for x in br) + " \n",
                      " ".join(str(int(x)) for x in problem.blocks_is_comp) + " \n",
                      mat(problem.M, 1, "M"), _vec_line(problem.q)]
    elif kind in ("fc2d", "fc3d"):
        parts += [f"{problem.dim}\n{problem.nc}\n", mat(problem.W, problem.dim, "W"),
                  _vec_line(problem.q), _vec_line(problem.mu)]
    elif kind in ("gfc2d", "gfc3d"):
        def gmat(A):
            st = storage or ("dense" if not sp.issparse(A) else "sparse")
            if st == "sbm":
                raise ValueError("write global problems with storage 'dense' or 'sparse'")
            return _write_matrix(A, st)
        parts += [f"{problem.dim}\n{problem.nc}\n", gmat(problem.M), gmat(problem.H),
                  _vec_line(problem.q), _vec_line(problem.b), _vec_line(problem.mu)]
    elif kind == "gmp":
        for b in problem.blocks:
            if b.kind not in ("lcp", "equality", "fc3d"):
                raise ValueError(f"Siconos' GMP file format cannot hold a {b.kind} block")
        sizes = [b.size for b in problem.blocks]
        parts += [_write_sbm(problem.M, sizes, sizes), _vec_line(problem.q)]
        for b in problem.blocks:
            parts.append(f"{GMP_IDS[b.kind]}\n")
            if b.kind == "fc3d":
                parts.append(_fmt(b.mu) + "\n")
    else:
        raise ValueError(f"write_siconos_dat does not support {type(problem).__name__} problems")
    path = check_file(path, overwrite=overwrite, what="Siconos .dat file")
    with written_beside(path) as tmp, open(tmp, "w") as f:
        f.write("".join(parts))
    return path


write_siconos_dat.__doc__ = insert_section(write_siconos_dat.__doc__, "write_result", WRITE_RESULT_DOC)
