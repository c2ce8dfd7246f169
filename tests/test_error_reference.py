"""nsopt's error measures against the errors Siconos 4.4 reported for its own solutions.

For every entry of ``reference/index.json`` (see ``reference/README.md``): load the problem with
nsopt.io, load the Siconos solution (.npz), evaluate nsopt's error on it and compare with
``siconos_error``: equal within 1e-8 relative or 1e-12 absolute. This checks the readers and the
error measures at once (w, u are recomputed from the primal vectors, as Siconos does).
"""

from __future__ import annotations

import numpy as np
import pytest

import nsopt.io as io
from nsopt.data import data_dir

from conftest import reference_entries

RTOL, ATOL = 1e-8, 1e-12


def _params():
    entries = reference_entries()
    if not entries:
        return [pytest.param(None, id="no-reference", marks=pytest.mark.corpus)]
    return [pytest.param(e, id=e["problem"], marks=pytest.mark.corpus) for e in entries]


def nsopt_error(entry, ref_dir):
    """nsopt's error of the Siconos solution of one reference entry."""
    problem = io.load(ref_dir / entry["problem_path"])
    with np.load(ref_dir / entry["solution"]) as s:
        kind = entry["kind"]
        assert problem.kind == kind
        if kind in ("lcp", "mlcp", "relay"):
            return problem.error(s["z"])
        if kind == "gfc3d":
            return problem.error(s["r"], s["v"])
        return problem.error(s["r"])          # fc2d, fc3d, gfc2d (local FC2D), gmp


@pytest.mark.parametrize("entry", _params())
def test_error_matches_siconos(entry, corpus):
    if entry is None:
        pytest.skip("no reference/index.json in the corpus")
    ref_dir = data_dir() / "reference"
    err = nsopt_error(entry, ref_dir)
    ref = float(entry["siconos_error"])
    assert np.isfinite(err)
    assert abs(err - ref) <= max(ATOL, RTOL * abs(ref)), (
        f"{entry['problem']}: nsopt {err!r} vs Siconos {ref!r} ({entry['error_function']['call']})")


def summary():
    """Per kind: number of entries, max relative deviation (entries whose error exceeds ATOL),
    max absolute deviation. ``python tests/test_error_reference.py`` prints it."""
    ref_dir = data_dir() / "reference"
    out = {}
    for e in reference_entries():
        err, ref = nsopt_error(e, ref_dir), float(e["siconos_error"])
        d = out.setdefault(e["kind"], {"n": 0, "max_rel": 0.0, "max_abs": 0.0})
        d["n"] += 1
        d["max_abs"] = max(d["max_abs"], abs(err - ref))
        if abs(ref) > ATOL:
            d["max_rel"] = max(d["max_rel"], abs(err - ref) / abs(ref))
    return out


if __name__ == "__main__":  # pragma: no cover
    for k, d in summary().items():
        print(f"{k:6s} n={d['n']:3d}  max rel dev {d['max_rel']:.2e}  "
              f"max abs dev {d['max_abs']:.2e}")
