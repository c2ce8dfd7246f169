"""Validation helpers and the immutable base class shared by all problem types."""

from __future__ import annotations

import math
import operator
import weakref

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemError

ORDERED_ROWS = 64          # the ordered products of affine() below this many rows (see _products)
EPS = np.finfo(float).eps  # DBL_EPSILON, Siconos' threshold for dividing by a norm
FLOAT64 = np.dtype(np.float64)


class Trusted:
    """An array handed to a problem constructor as it is, unchecked and uncopied: what validation would
    return (float64, finite, read-only; CSR with canonical indices) because it is a field of an existing
    problem (:meth:`Problem.replace`) or an assembler built it so (:meth:`Problem.assembled`). The trust
    travels with the argument: :func:`as_matrix` and :func:`as_vector` return ``value`` for it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Checked:
    """A set of arrays, by identity, that one validation returned: read-only float64 copies owned by
    problems, which no caller can change. Passed again to a constructor (a fresh problem built from
    another one's ``W`` and ``mu``, the common case of a loop that rebuilds its problem), they are
    taken as they are, neither copied nor checked again. Weak references without callbacks (cheap
    to make): the entries of dead arrays are dropped when the set has doubled since the last sweep.
    One set per check (a matrix checked finite is not a friction coefficient checked >= 0)."""

    __slots__ = ("_refs", "_sweep_at")

    def __init__(self):
        self._refs: dict[int, weakref.ref] = {}
        self._sweep_at = 64

    def __contains__(self, a) -> bool:
        ref = self._refs.get(id(a))
        return ref is not None and ref() is a

    def add(self, a):
        """Record ``a`` (just validated, read-only, owned by a problem); returns it."""
        refs = self._refs
        refs[id(a)] = weakref.ref(a)
        if len(refs) > self._sweep_at:
            for key in [key for key, ref in refs.items() if ref() is None]:
                del refs[key]
            self._sweep_at = max(64, 2 * len(refs))
        return a


MATRICES = Checked()    # dense float64 matrices returned by as_matrix (finite)


def _no_complex_or_none(x, field: str, owner: str, what: str):
    """Reject what ``np.array(x, dtype=float)`` would silently turn into nan (None) or truncate
    with only a ComplexWarning (complex numbers)."""
    if x is None:
        raise ProblemError(field, f"is None: a real {what} is required", owner)
    if isinstance(x, str):
        raise ProblemError(field, f"not a numeric {what} (a string: {x[:20]!r})", owner)
    dt = getattr(x, "dtype", None)
    if dt is None:
        try:
            dt = np.asarray(x).dtype
        except (TypeError, ValueError):       # ragged input: the float conversion reports it
            return
    if dt.kind == "c":
        raise ProblemError(field, f"has complex entries (dtype {dt}): nsopt problems are real", owner)
    if dt.kind == "O":
        flat = np.asarray(x, dtype=object).reshape(-1)
        if any(v is None for v in flat):
            raise ProblemError(field, f"has None entries: a real {what} is required", owner)
        if any(isinstance(v, complex) or np.iscomplexobj(v) for v in flat):
            raise ProblemError(field, "has complex entries: nsopt problems are real", owner)


def as_matrix(M, field: str, owner: str, *, shape=None, square=False):
    """Return ``M`` as a read-only float64 ndarray (dense input) or a CSR matrix (sparse input, kept
    sparse), always a copy: a problem never shares memory the caller can still change."""
    if type(M) is Trusted:
        return M.value
    if type(M) is np.ndarray and M.ndim == 2 and M.dtype == FLOAT64:    # the common case, checked cheaply
        if M in MATRICES:         # another problem's own matrix: read-only, checked
            if (square and M.shape[0] != M.shape[1]) or shape is not None:
                _check_shape(M, field, owner, shape, square)
            return M
        A = M.copy()
        if (square and A.shape[0] != A.shape[1]) or shape is not None:
            _check_shape(A, field, owner, shape, square)
        if not all_finite(A.reshape(-1)):
            raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
        A.setflags(write=False)
        return MATRICES.add(A)
    _no_complex_or_none(M, field, owner, "matrix")
    if sp.issparse(M):
        A = sp.csr_matrix(M, dtype=float, copy=True)
        A.sum_duplicates()
        data = A.data
    else:
        try:
            A = np.array(M, dtype=float)
        except (TypeError, ValueError) as e:
            raise ProblemError(field, f"not a numeric matrix ({e})", owner) from None
        if A.ndim == 0 and A.size == 1:
            A = A.reshape(1, 1)
        if A.ndim != 2:
            raise ProblemError(field, f"expected a 2-D matrix, got {A.ndim}-D array of shape {A.shape}", owner)
        A.setflags(write=False)
        data = A
    _check_shape(A, field, owner, shape, square)
    if not np.all(np.isfinite(data)):
        raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
    if sp.issparse(A):
        for arr in (A.data, A.indices, A.indptr):
            arr.setflags(write=False)
        return A
    return MATRICES.add(A)


def _check_shape(A, field, owner, shape, square):
    if square and A.shape[0] != A.shape[1]:
        raise ProblemError(field, f"must be square, got shape {A.shape}", owner)
    if shape is not None:
        want = tuple(shape)
        if any(w is not None and w != g for w, g in zip(want, A.shape)):
            pretty = "x".join("?" if w is None else str(w) for w in want)
            raise ProblemError(field, f"shape {A.shape[0]}x{A.shape[1]} does not match the expected {pretty}", owner)


def as_vector(v, field: str, owner: str, *, size=None, allow_inf=False):
    """Return ``v`` as a read-only float64 1-D array of the given size (a copy); ``allow_inf``
    admits +-inf entries (bounds), never nan."""
    if type(v) is Trusted:
        v = v.value
        if size is None or v.shape[0] == size:
            return v
    if type(v) is np.ndarray and v.dtype == FLOAT64 and v.ndim == 1:   # the common case, checked cheaply
        if size is not None and v.shape[0] != size:
            raise ProblemError(field, f"has {v.shape[0]} entries, expected {size}", owner)
        a = frozen_copy(v)
        if not (allow_inf or all_finite(a)):
            raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
        if allow_inf and np.isnan(a).any():
            raise ProblemError(field, "has nan entries", owner)
        return a
    _no_complex_or_none(v, field, owner, "vector")
    if sp.issparse(v):
        v = v.toarray()
    try:
        a = np.array(v, dtype=float)
    except (TypeError, ValueError) as e:
        raise ProblemError(field, f"not a numeric vector ({e})", owner) from None
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ProblemError(field, f"expected a vector, got an array of shape {a.shape}", owner)
    if size is not None and a.shape[0] != size:
        raise ProblemError(field, f"has {a.shape[0]} entries, expected {size}", owner)
    if allow_inf:
        if np.any(np.isnan(a)):
            raise ProblemError(field, "has nan entries", owner)
    elif not np.all(np.isfinite(a)):
        raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
    a.setflags(write=False)
    return a


class kept_norm:
    r"""A problem's :math:`\|q\|_2` (``norm2`` of its vector field ``field``), computed when first read
    and kept in the problem's ``__dict__``: a non-data descriptor, so every later read is a plain
    attribute read (a re-solve reads it in its method). ``replace(q=...)`` sets it with the new
    vector's check (:meth:`Problem._with_vector`: the class lists it in ``_norms``)."""

    def __init__(self, field: str):
        self.field = field

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        d = obj.__dict__
        v = d[self.name] = norm2(d[self.field])
        return v


def frozen_copy(v: np.ndarray) -> np.ndarray:
    """A read-only copy of the float64 vector ``v``, over an immutable ``bytes`` buffer (cheaper than
    ``copy`` then ``setflags``, and no one can make it writable again)."""
    return np.frombuffer(v.tobytes())


def all_finite(a: np.ndarray) -> bool:
    """True when every entry of the float vector ``a`` is finite (cheap for short vectors)."""
    if a.shape[0] <= 32:
        v = a.tolist()       # a finite sum has finite terms (an inf or nan term makes it inf or nan)
        return math.isfinite(sum(v)) or all(map(math.isfinite, v))
    return bool(np.isfinite(a).all())


def as_square_system(M, q, owner: str):
    """``M`` checked square (:func:`as_matrix`) and ``q`` a vector of its size (:func:`as_vector`): the
    ``(M, q)`` of the problems ``Mz + q`` (LCP, MLCP, Relay, AVI, Equality, GenericMechanical)."""
    M = as_matrix(M, "M", owner, square=True)
    return M, as_vector(q, "q", owner, size=M.shape[0])


def as_bounds(lb, ub, n: int, owner: str):
    """Box bounds lb <= ub (scalars broadcast, +-inf allowed): read-only float arrays of size n.
    The box must meet the reals in every coordinate: lb_i < +inf, ub_i > -inf, lb_i <= ub_i."""
    out = []
    for name, v in (("lb", lb), ("ub", ub)):
        a = as_vector(v, name, owner, allow_inf=True)
        if a.shape[0] == 1 and n != 1:
            a = np.full(n, a[0])
        if a.shape[0] != n:
            raise ProblemError(name, f"has {a.shape[0]} entries, expected {n}", owner)
        a.setflags(write=False)
        out.append(a)
    lb, ub = out
    for name, bad, what in (("lb", lb == np.inf, "+inf"), ("ub", ub == -np.inf, "-inf")):
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ProblemError(name, f"{name}[{i}] = {what}: the box [lb, ub] is empty in coordinate {i}", owner)
    bad = np.flatnonzero(lb > ub)
    if bad.size:
        i = int(bad[0])
        raise ProblemError("lb", f"lb > ub at index {i} ({lb[i]} > {ub[i]})", owner)
    return lb, ub


def check_input(x, field: str, owner: str, size: int):
    """Validate a candidate solution vector handed to ``error`` and friends (no copy when fine)."""
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape[0] != size:
        raise ProblemError(field, f"has {a.shape[0]} entries, expected {size}", owner)
    return a


def norm2(x) -> float:
    """Euclidean norm as BLAS ``dnrm2`` (Siconos' ``cblas_dnrm2``): exact where sqrt(x·x) would
    underflow (all |x_i| < 1e-154) or overflow (some |x_i| > 1e154), as fast as ``np.linalg.norm``
    elsewhere."""
    if type(x) is not np.ndarray or x.ndim != 1 or x.dtype != FLOAT64:
        x = np.asarray(x, dtype=float).reshape(-1)
    if x.shape[0] <= 16:      # math.hypot scales as dnrm2 does, without numpy's per-call overhead
        return math.hypot(*x.tolist())
    m = float(np.max(np.abs(x)))
    if 1e-140 < m < 1e140:                    # no square overflows, those that underflow are negligible
        return math.sqrt(float(x @ x))
    if m == 0.0 or not math.isfinite(m):     # zero, inf or nan
        return m
    y = x / m
    return m * math.sqrt(float(y @ y))


def matvec(A, x):
    """A @ x for a dense ndarray or a scipy sparse matrix, always a 1-D ndarray."""
    return np.asarray(A @ x).reshape(-1)


def affine(A, x, q) -> np.ndarray:
    """A x + q, the residual of a problem (w = Mz + q, u = Wr + q): for a small dense or a CSR A,
    the ordered loops of :mod:`nsopt.problems._products` (the bits the compiled solvers reproduce
    in their kernels); for a large dense A, BLAS then + q."""
    if type(A) is np.ndarray:
        if A.shape[0] > ORDERED_ROWS or A.ndim != 2:
            return matvec(A, x) + q
        loop = _PRODUCTS.get("dense") or _load_products("dense")
        out = np.empty(q.shape[0])
        loop(A, x, q, out)
        return out
    if sp.issparse(A) and A.format == "csr":
        loop = _PRODUCTS.get("csr") or _load_products("csr")
        out = np.empty(q.shape[0])
        loop(A.indptr, A.indices, A.data, x, q, out)
        return out
    return matvec(A, x) + q


_PRODUCTS: dict = {}


def _load_products(which):
    """The compiled loops, imported on first use (numba is not needed to build or check a problem)."""
    from ._products import csr_affine, dense_affine

    _PRODUCTS.update(dense=dense_affine, csr=csr_affine)
    return _PRODUCTS[which]


def nnz(A) -> int:
    return int(A.nnz) if sp.issparse(A) else int(np.count_nonzero(A))


def dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def same_matrix(A, B) -> bool:
    if A.shape != B.shape:
        return False
    if sp.issparse(A) or sp.issparse(B):
        D = sp.csr_matrix(A) - sp.csr_matrix(B)
        return D.nnz == 0 or not np.any(D.data)
    return bool(np.array_equal(A, B))


class Problem:
    """Base class: immutable after construction, picklable without its caches.

    Subclasses list their data fields in ``_fields`` (the constructor's parameter names, in order)
    and name their ``primal`` variable (``"z"`` or ``"r"``): the one a solver iterates on, from which
    :meth:`complete` derives the others (``w``, ``u``, ``v``).

    Derived data (factorisations, splittings, compiled programs) is cached by :meth:`cached`, keyed on
    the fields it depends on: problems made by :meth:`replace` share every entry whose fields they
    did not change.
    """

    kind: str = ""
    _fields: tuple[str, ...] = ()
    _arrays = frozenset(("M", "q", "W", "H", "mu", "b", "lb", "ub", "k", "v", "restitution", "stiffness",
                         "elasticity"))     # the fields validated by as_matrix / as_vector
    primal: str = "z"
    _frozen = False
    _norms: dict = {}     # vector field -> the attribute that keeps its norm (a kept_norm), set by replace

    def __setattr__(self, name, value):
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable: build a new problem (or use "
                                 f".replace({name}=...)) instead of setting {name!r}")
        object.__setattr__(self, name, value)

    def _freeze(self):
        d = self.__dict__
        d["_store"] = {}
        d["_frozen"] = True

    def cached(self, key, make, on=None):
        """``make()``, computed once for this problem's values of the fields ``on`` (a tuple of field
        names; None: all fields) and shared with every problem :meth:`replace` makes from it that
        keeps those fields."""
        store = self._store
        hit = store.get(key)
        deps = self.dependencies(on)
        if hit is not None and len(hit[0]) == len(deps) and all(map(operator.is_, hit[0], deps)):
            return hit[1]
        value = make()
        store[key] = (deps, value)
        return value

    def provide(self, key, value, on=None):
        """Store ``value`` as :meth:`cached` would have made it for ``key`` and the fields ``on`` (data
        derived from the fields that their assembler already knows, e.g. W's factors)."""
        self._store[key] = (self.dependencies(on), value)

    def dependencies(self, on=None) -> tuple:
        """The values of the fields ``on`` (None: all), whose identities key a cache entry."""
        if on is not None and 0 < len(on) <= 2:
            return (getattr(self, on[0]),) if len(on) == 1 else (getattr(self, on[0]), getattr(self, on[1]))
        return tuple([getattr(self, f) for f in (self._fields if on is None else on)])

    def replace(self, **changes):
        """A problem of the same kind with some fields replaced, e.g. ``p.replace(q=q_new)``.

        Only the changed fields are validated; the others are shared as they are, together with the
        cached data that depends on them only (see :meth:`cached`). This is the cheap way to re-solve
        with the same matrix and a new right-hand side."""
        from ..exceptions import ProblemError

        unknown = [k for k in changes if k not in self._fields]
        if unknown:
            raise ProblemError(unknown[0], f"is not a field of {type(self).__name__}; fields: "
                                           f"{', '.join(self._fields)}", type(self).__name__)
        values = {f: changes[f] if f in changes else self._trust(f, getattr(self, f)) for f in self._fields}
        new = type(self)._from_fields(**values)
        object.__setattr__(new, "_store", self._store)
        return new

    @classmethod
    def assembled(cls, trusted: tuple, **fields):
        """Build from ``fields``, taking those named in ``trusted`` as they are, unchecked and
        uncopied: matrices an assembler built itself (the W of a time-stepping step) that are already
        what validation would return (float64, finite, read-only; CSR with canonical indices). Every
        other field is validated as by the constructor. Not for user input."""
        return cls._from_fields(**{f: cls._trust(f, v) if f in trusted else v for f, v in fields.items()})

    @classmethod
    def _trust(cls, field, value):
        """``value`` of ``field`` marked :class:`Trusted` when the constructor validates it as an array
        (``_arrays``: the fields it hands to :func:`as_matrix` / :func:`as_vector`)."""
        if field in cls._arrays and (type(value) is np.ndarray or sp.issparse(value)):
            return Trusted(value)
        return value

    def _with_vector(self, name: str, value, owner: str):
        """The short path of ``replace(name=value)`` for a vector field whose only constraint is its
        size (q of an LCP or a friction-contact problem, the re-solve of a time-stepping loop): only
        that vector is checked; the other fields and the cache are shared as they are."""
        d = self.__dict__
        key = self._norms.get(name)      # where the class keeps the vector's norm (FrictionContact.qnorm), if it does
        norm = None
        if type(value) is np.ndarray and value.dtype is FLOAT64 and value.shape == d[name].shape:
            a = np.frombuffer(value.tobytes())     # (frozen_copy, inline: a re-solve loop's per-step cost)
            if a.shape[0] <= 16:
                # norm2's short path: finite iff every entry is (or it overflowed), and kept as the
                # norm of the new vector
                norm = math.hypot(*a.tolist())
                if not math.isfinite(norm):
                    norm = None
            if norm is None and not all_finite(a):
                raise ProblemError(name, "has non-finite entries (nan or inf)", owner)
        else:
            a = as_vector(value, name, owner, size=d[name].shape[0])
        new = object.__new__(type(self))
        nd = new.__dict__
        nd.update(d)                     # the fields, the shared cache and the frozen flag
        nd[name] = a
        if key is not None:
            if norm is None:
                nd.pop(key, None)        # (the old vector's: computed again when read)
            else:
                nd[key] = norm
        return new

    @classmethod
    def _from_fields(cls, **fields):
        """Build from the ``_fields`` values (the constructor, unless a subclass says otherwise)."""
        return cls(**fields)

    def __getstate__(self):
        skip = ("_store", "_frozen", *self._norms.values())
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def __setstate__(self, state):
        # the arrays of a problem are read-only (a copy or an unpickled problem too: the compiled
        # kernels see one kind of array, and nothing can change a problem in place)
        for k, v in state.items():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
            elif sp.issparse(v) and hasattr(v, "indptr"):
                for a in (v.data, v.indices, v.indptr):
                    a.setflags(write=False)
            object.__setattr__(self, k, v)
        self._freeze()

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for f in self._fields:
            a, b = getattr(self, f), getattr(other, f)
            if sp.issparse(a) or sp.issparse(b) or (isinstance(a, np.ndarray) and a.ndim == 2):
                if not same_matrix(a, b):
                    return False
            elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not np.array_equal(np.asarray(a), np.asarray(b)):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = object.__hash__

    def infeasibility(self) -> str | None:
        """None, or why no vector can solve this problem (checked by ``solve`` before any method
        runs; e.g. an AVI over an empty polyhedron). Cheap and cached where it costs anything."""
        return None

    @property
    def default_method(self) -> str:
        return "auto"

    # -- the problem's variables (one place per kind: solve() has no if-chains) ---------------------
    residual: str | None = None   # the variable the primal one determines (w = Mz + q, u = Wr + q), by its method

    def variable_sizes(self) -> dict[str, int]:
        """Sizes of the variables a solution of this problem carries."""
        if self.residual is None:
            return {self.primal: self.size}
        return {self.primal: self.size, self.residual: self.size}

    def complete(self, x: dict) -> dict:
        """All the problem's variables from what a method returned (at least the primal one): the
        residual given, else computed by the problem's method of that name (``w(z)``, ``u(r)``)."""
        if self.residual is None:
            raise NotImplementedError
        p, res = self.primal, self.residual
        v = x.get(res)
        return {p: x[p], res: v if v is not None else getattr(self, res)(x[p])}

    def error_of(self, xs: dict) -> float:
        """The problem's error measure of a complete set of variables."""
        return self.error(xs[self.primal])


class AffineProblem(Problem):
    """Problems on one unknown z with the affine residual w = Mz + q (LCP, Relay, Equality, AVI, MLCP)."""

    @property
    def size(self) -> int:
        return self.q.shape[0]

    def w(self, z) -> np.ndarray:
        """w = Mz + q."""
        return affine(self.M, check_input(z, "z", type(self).__name__, self.size), self.q)

    residual = "w"
