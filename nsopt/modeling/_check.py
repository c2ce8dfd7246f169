"""Validation of modeling data and calls to user plug-ins (shape and finiteness checks, finite differences)."""

from __future__ import annotations

import numbers

import numpy as np

from ..exceptions import ModelingError, PluginError, ProblemError
from ..linalg import cholesky
from ..problems._base import as_matrix, as_vector, dense


def label(obj) -> str:
    """How errors name a modeling object: its class, and its ``name`` when the user gave one."""
    name = getattr(obj, "name", None)
    return f"{type(obj).__name__} {name!r}" if name else type(obj).__name__


def vector(v, owner, field, size=None) -> np.ndarray:
    """A finite real float vector (a fresh, writable copy); the checks of :func:`nsopt.problems._base.as_vector`."""
    try:
        return np.array(as_vector(v, field, label(owner), size=size))
    except ProblemError as e:
        raise ModelingError(owner, field, e.fault) from None


def matrix(M, owner, field, shape=None) -> np.ndarray:
    """A finite real float 2-D array (dense copy) of the given shape (None entries: any)."""
    try:
        A = np.array(dense(as_matrix(M, field, label(owner))))
    except ProblemError as e:
        raise ModelingError(owner, field, e.fault.replace("2-D matrix", "matrix")) from None
    if shape is not None and any(w is not None and w != g for w, g in zip(shape, A.shape)):
        raise ModelingError(owner, field, f"has shape {A.shape}, expected {_pretty(shape)}")
    return A


def scalar(x, owner, field, *, low=None, high=None, low_open=False) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not np.isfinite(float(x)):
        raise ModelingError(owner, field, f"must be a finite number, got {x!r}")
    x = float(x)
    if low is not None and (x < low or (low_open and x == low)):
        raise ModelingError(owner, field, f"must be {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ModelingError(owner, field, f"must be <= {high}, got {x}")
    return x


def size(n, owner, field) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
        raise ModelingError(owner, field, f"must be a positive integer, got {n!r}")
    return int(n)


def _pretty(shape) -> str:
    return "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"


class Operator:
    """A constant array or a plug-in returning one, checked on every call for shape and finiteness.

    ``Operator(value, owner, field, shape)``; ``op(*args)`` returns the array. Constants are validated
    once and returned as they are (``op.constant`` is True)."""

    __slots__ = ("constant", "field", "func", "owner", "shape", "signature", "value")

    def __init__(self, value, owner, field, shape, signature=""):
        self.owner, self.field, self.shape, self.signature = owner, field, tuple(shape), signature
        if callable(value):
            self.func, self.value, self.constant = value, None, False
        else:
            self.func, self.constant = None, True
            if len(self.shape) == 1:
                self.value = vector(value, owner, field, self.shape[0])
            else:
                self.value = matrix(value, owner, field, self.shape)
            self.value.setflags(write=False)

    def __call__(self, *args) -> np.ndarray:
        if self.constant:
            return self.value
        return call_plugin(self.func, args, self.owner, self.field, self.shape, self.signature)


def call_plugin(func, args, owner, field, shape, signature=""):
    """``func(*args)`` as a float array of ``shape``; a typed :class:`PluginError` otherwise."""
    try:
        out = func(*args)
    except Exception as e:  # a user function: name it, keep the cause
        raise PluginError(owner, field, f"plug-in {_sig(field, signature)} raised {type(e).__name__}: {e}") from e
    if not (type(out) is np.ndarray and out.dtype == np.float64) and np.iscomplexobj(out):
        raise PluginError(owner, field, f"plug-in {_sig(field, signature)} returned complex values; expected a "
                                        f"real array of shape {_pretty(shape)}")
    try:
        a = out if type(out) is np.ndarray and out.dtype == np.float64 else np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        raise PluginError(owner, field, f"plug-in {_sig(field, signature)} returned a non-numeric "
                                        f"{type(out).__name__}; expected an array of shape {_pretty(shape)}") from None
    if a.shape != shape:
        if a.size == int(np.prod(shape)) and (a.ndim <= 1 or len(shape) == 1 or 1 in a.shape):
            a = a.reshape(shape)   # (n,) for (n, 1), (1, n) for (n,): the same numbers, accepted
        else:
            raise PluginError(owner, field, f"plug-in {_sig(field, signature)} returned shape {a.shape}, "
                                            f"expected {_pretty(shape)}")
    if not np.isfinite(a).all():
        raise PluginError(owner, field, f"plug-in {_sig(field, signature)} returned non-finite values (nan or inf); "
                                        f"expected a finite array of shape {_pretty(shape)}")
    return a


def _sig(field, signature):
    return f"{field}({signature})" if signature else field


def fd_jacobian(f, x, m, *, rel=1e-7) -> np.ndarray:
    r"""Forward finite-difference Jacobian of ``f`` (R^n -> R^m) at x, step
    :math:`\delta_j = \text{rel}\,\max(1, |x_j|)`."""
    x = np.asarray(x, dtype=float)
    f0 = np.asarray(f(x), dtype=float).reshape(m)
    J = np.empty((m, x.shape[0]))
    for j in range(x.shape[0]):
        d = rel * max(1.0, abs(x[j]))
        xp = x.copy()
        xp[j] += d
        J[:, j] = (np.asarray(f(xp), dtype=float).reshape(m) - f0) / d
    return J


def fd_jacobian_rows(f, X, m, *, rel=1e-7) -> np.ndarray:
    """:func:`fd_jacobian` of a row-wise map f: (k, n) -> (k, m), for every row at once: (k, m, n),
    the same steps and the same arithmetic row by row."""
    X = np.asarray(X, dtype=float)
    k, n = X.shape
    f0 = np.asarray(f(X), dtype=float).reshape(k, m)
    J = np.empty((k, m, n))
    for j in range(n):
        d = rel * np.maximum(1.0, np.abs(X[:, j]))
        Xp = X.copy()
        Xp[:, j] += d
        J[:, :, j] = (np.asarray(f(Xp), dtype=float).reshape(k, m) - f0) / d[:, None]
    return J


def fd_jacobian_central(f, x, m, *, rel=1e-6) -> np.ndarray:
    """Central finite differences (used to check given Jacobians)."""
    x = np.asarray(x, dtype=float)
    J = np.empty((m, x.shape[0]))
    for j in range(x.shape[0]):
        d = rel * max(1.0, abs(x[j]))
        xp, xm = x.copy(), x.copy()
        xp[j] += d
        xm[j] -= d
        J[:, j] = (np.asarray(f(xp), dtype=float).reshape(m) - np.asarray(f(xm), dtype=float).reshape(m)) / (2 * d)
    return J


SYMMETRY_RTOL = 1e-12     # a mass matrix is symmetric when |M - Mᵀ| <= SYMMETRY_RTOL * max|M| entrywise


def mass_matrix(M, owner, field, *, error=ModelingError) -> np.ndarray:
    r"""``M`` after checking that it is a mass matrix: symmetric to round-off
    (:math:`|M_{ij} - M_{ji}| \le 10^{-12}\max|M|`) and positive definite (a Cholesky factorisation
    exists); a :class:`ModelingError` (a :class:`PluginError` for a plug-in's value) naming ``field``
    otherwise (``error``)."""
    err = error
    scale = float(np.max(np.abs(M), initial=0.0))
    asym = np.abs(M - M.T)
    if asym.size and float(asym.max()) > SYMMETRY_RTOL * scale:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        raise err(owner, field, f"is not symmetric: M[{i}, {j}] = {M[i, j]:.6g} but M[{j}, {i}] = {M[j, i]:.6g} "
                                "(a mass matrix must be symmetric positive definite)")
    if cholesky(M) is None:
        w = np.linalg.eigvalsh(0.5 * (M + M.T))
        raise err(owner, field, f"is not positive definite (smallest eigenvalue {float(w.min()):.3g}; a mass "
                                "matrix must be symmetric positive definite)")
    return M


JACOBIAN_RTOL = 1e-6      # a given Jacobian agrees with differences to this (relative to 1 + max|J|)


def check_jacobian(J, f, x, owner, field, of: str):
    r"""Check a Jacobian a user gave (``J``, (m, n)) against central finite differences of ``f`` at
    ``x`` (:func:`fd_jacobian_central`, steps :math:`\delta_j = 10^{-6}\max(1, |x_j|)`).

    Entry (i, j) passes when :math:`|J_{ij} - J^{fd}_{ij}| \le 10^{-6}(1 + \max|J|) + 10\,\epsilon
    \max|f| / \delta_j` (the second term bounds the rounding of the differences), or when it agrees
    so with the forward or the backward difference (a point where f is not differentiable). Otherwise
    a :class:`PluginError` names ``field``, the entry and both values. Nothing is checked when f
    cannot be evaluated around x (it raises or returns non-finite values there)."""
    J = np.asarray(J, dtype=float)
    x = np.asarray(x, dtype=float)
    m, n = J.shape
    if n == 0 or m == 0:
        return
    try:
        f0 = np.asarray(f(x), dtype=float).reshape(m)
        Jc = fd_jacobian_central(f, x, m)
    except PluginError:
        return
    if not (np.all(np.isfinite(Jc)) and np.all(np.isfinite(f0))):
        return
    d = 1e-6 * np.maximum(1.0, np.abs(x))
    allow = JACOBIAN_RTOL * (1.0 + float(np.max(np.abs(J)))) + 10 * np.finfo(float).eps * \
        float(np.max(np.abs(f0), initial=0.0) + 1.0) / d[None, :]
    bad = np.abs(J - Jc) > allow
    bad &= np.any(np.abs(Jc) > allow, axis=1)[:, None]     # rows of h constant near x: velocity maps, unchecked
    if bad.any():
        try:
            Jf = fd_jacobian(f, x, m, rel=1e-6)
            Jb = -fd_jacobian(lambda y: f(-y), -x, m, rel=1e-6)
        except PluginError:
            return
        bad &= (np.abs(J - Jf) > allow) & (np.abs(J - Jb) > allow)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise PluginError(owner, field, f"the given Jacobian {field} (of {of}) disagrees with central finite differences "
                                        f"at entry ({i}, {j}): {J[i, j]:.6g} given, {Jc[i, j]:.6g} by differences at "
                                        f"{of.split('(')[0]}'s argument {np.array2string(x, precision=6)} "
                                        f"(tolerance {JACOBIAN_RTOL:g}(1 + max|J|)); check its sign and the order "
                                        f"of its columns")


def check_once(checked: set, key, J, f, x, owner, field, of: str):
    """:func:`check_jacobian` the first time ``key`` is seen in ``checked`` (the object's own set)."""
    if key not in checked:
        check_jacobian(J, f, x, owner, field, of)
        checked.add(key)
