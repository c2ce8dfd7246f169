"""Siconos' solvers in a campaign, through the external siconos_bench.py (skipped without Siconos)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import need_extra

need_extra("studies")

import nsopt.studies as st
from nsopt.studies import siconos


def test_tool_lookup_order(monkeypatch, tmp_path):
    monkeypatch.delenv(siconos.ENV_TOOL, raising=False)
    fallback = siconos.find_tool()
    assert fallback.parts[-3:] == ("shared", "tools", "siconos_bench.py")
    monkeypatch.setenv(siconos.ENV_TOOL, str(tmp_path / "env.py"))
    assert siconos.find_tool() == (tmp_path / "env.py").resolve()
    assert siconos.find_tool(tmp_path / "arg.py") == (tmp_path / "arg.py").resolve()
    why = siconos.unavailable()
    assert "siconos_bench.py not found at" in why and siconos.ENV_TOOL in why
    tool = tmp_path / "env.py"
    tool.write_text("#!/nonexistent/python9\n")
    assert "no interpreter" in siconos.unavailable()
    tool.write_text("#!/usr/bin/env python3\n")
    assert siconos.find_python(tool) is not None


def test_siconos_rows_join_the_same_table(corpus, tmp_path):
    why = siconos.unavailable()
    if why:
        pytest.skip(f"Siconos not available: {why}")
    files = [corpus / "fc3d" / "FrictionContact3D_1c.dat", corpus / "fc3d" / "Rover11035.dat"]
    df = st.compare(files, "nsgs", siconos="NSGS,PROX,LEMKE", timeout=30, out=tmp_path / "c",
                    progress=False)
    assert len(df) == 8
    sic = df[df["source"] == "siconos"]
    assert set(sic["method"]) == {"siconos:NSGS", "siconos:PROX", "siconos:LEMKE"}
    assert set(sic.loc[sic["method"] == "siconos:LEMKE", "status"]) == {"skipped"}   # no fc3d LEMKE
    ran = sic[sic["method"] != "siconos:LEMKE"]
    assert ran["kind"].eq("fc3d").all() and ran["time"].notna().all()
    for r in ran.itertuples():     # judged by the error Siconos' own error function recomputes
        assert (r.status == "solved") == (r.error <= 1e-8)
    one = df[df["problem"].str.endswith("FrictionContact3D_1c.dat")].set_index("method")
    assert one.loc["nsgs", "status"] == "solved" and one.loc["siconos:NSGS", "status"] == "solved"
    assert one.loc["siconos:NSGS", "size"] == 3 and one.loc["siconos:NSGS", "nc"] == 1
    fig = st.performance_profile(df)
    labels = [t.get_text() for t in fig.get_axes()[0].get_legend().get_texts()]
    assert labels == ["Siconos NSGS", "Siconos PROX", "nsgs"]
    # resuming: nothing to redo, Siconos rows included
    again = st.compare(files, "nsgs", siconos="NSGS,PROX,LEMKE", timeout=30, out=tmp_path / "c",
                       progress=False)
    assert len(again) == 8 and Path(tmp_path / "c" / "profile_time.png").is_file()
