"""The dask.distributed backend: a real LocalCluster on loopback gives the local run's results."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import need_extra

need_extra("studies")

import nsopt.studies as st  # noqa: E402

PROBLEMS = ["nsopt:generated/lcp-spd-10", "nsopt:generated/lcp-p-30", "nsopt:generated/relay-20",
            "nsopt:generated/fc3d-5c", "nsopt:generated/fc3d-20c"]
METHODS = "lemke,nsgs,pgs"          # deterministic: same iterates, errors and counts everywhere


def test_local_cluster_equals_local_run(tmp_path):
    local = st.compare(PROBLEMS, METHODS, timeout=60, jobs=2, out=tmp_path / "local", progress=False)
    dask = st.compare(PROBLEMS, METHODS, timeout=60, jobs=2, out=tmp_path / "dask", scheduler="local",
                      progress=False)
    cols = ["problem", "method", "status", "error", "nit", "kind", "size"]
    a = local[cols].sort_values(["problem", "method"]).reset_index(drop=True)
    b = dask[cols].sort_values(["problem", "method"]).reset_index(drop=True)
    assert len(a) == len(b) == 8        # fc3d: nsgs; lcp and relay: lemke, pgs
    assert list(a["status"]) == list(b["status"])
    assert (a["status"] == "solved").sum() >= 6
    assert list(a["nit"]) == list(b["nit"])
    np.testing.assert_allclose(a["error"].astype(float), b["error"].astype(float), rtol=1e-12, atol=0)
    assert list(a["size"]) == list(b["size"])
    # the report of a dask campaign is the same machinery
    assert (tmp_path / "dask" / "profile_time.png").is_file()
