"""Validation helpers and the immutable base class shared by all problem types."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemError

EPS = np.finfo(float).eps  # DBL_EPSILON, Siconos' threshold for dividing by a norm


def as_matrix(M, field: str, owner: str, *, shape=None, square=False):
    """Return ``M`` as a float64 ndarray (dense input) or CSR matrix (sparse input, kept sparse)."""
    if sp.issparse(M):
        A = sp.csr_matrix(M, dtype=float)
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
    if square and A.shape[0] != A.shape[1]:
        raise ProblemError(field, f"must be square, got shape {A.shape}", owner)
    if shape is not None:
        want = tuple(shape)
        if any(w is not None and w != g for w, g in zip(want, A.shape)):
            pretty = "x".join("?" if w is None else str(w) for w in want)
            raise ProblemError(field, f"shape {A.shape[0]}x{A.shape[1]} does not match the expected {pretty}", owner)
    if not np.all(np.isfinite(data)):
        raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
    return A


def as_vector(v, field: str, owner: str, *, size=None):
    """Return ``v`` as a read-only float64 1-D array of the given size."""
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
    if not np.all(np.isfinite(a)):
        raise ProblemError(field, "has non-finite entries (nan or inf)", owner)
    a.setflags(write=False)
    return a


def check_input(x, field: str, owner: str, size: int):
    """Validate a candidate solution vector handed to ``error`` and friends (no copy when fine)."""
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape[0] != size:
        raise ProblemError(field, f"has {a.shape[0]} entries, expected {size}", owner)
    return a


def matvec(A, x):
    """A @ x for a dense ndarray or a scipy sparse matrix, always a 1-D ndarray."""
    return np.asarray(A @ x).reshape(-1)


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
    """Base class: immutable after construction; derived data may be cached in ``self._cache``."""

    kind: str = ""
    _fields: tuple[str, ...] = ()

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable: build a new problem instead of setting {name!r}")
        object.__setattr__(self, name, value)

    def _freeze(self):
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_frozen", True)

    def cached(self, key, make):
        """Derived data (factorisations, splittings) computed once per problem."""
        c = self._cache
        if key not in c:
            c[key] = make()
        return c[key]

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

    @property
    def default_method(self) -> str:
        return "auto"


class AffineProblem(Problem):
    """Problems on one unknown z with the affine residual w = Mz + q (LCP, Relay, Equality, AVI, MLCP)."""

    @property
    def size(self) -> int:
        return self.q.shape[0]

    def w(self, z) -> np.ndarray:
        """w = Mz + q."""
        return matvec(self.M, check_input(z, "z", type(self).__name__, self.size)) + self.q
