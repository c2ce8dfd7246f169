"""A full Jacobian from vector-Jacobian products (core's sensitivities and the multiple impact's;
a module of its own so that neither imports the other)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def jacobian_by_vjp(vjp, sizes, field, wrt) -> dict:
    """``{var: J}`` with the rows of J the gradients of each entry of var (``vjp`` on unit vectors):
    shape ``(len(var), *field.shape)``, or ``(len(var), nnz)`` for a sparse field (CSR order)."""
    out = {}
    for var, size in sizes.items():
        rows = []
        for i in range(size):
            e = np.zeros(size)
            e[i] = 1.0
            g = vjp(**{var: e})[wrt]
            rows.append(g.data.copy() if sp.issparse(g) else np.asarray(g, float))
        shape = (size, field.nnz) if sp.issparse(field) else (size, *np.shape(field))
        out[var] = np.array(rows).reshape(shape) if rows else np.zeros(shape)
    return out
