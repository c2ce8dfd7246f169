"""Figures: one colour per method in every plot nsopt draws (profiles of time and iterations, panels of
different kinds, error histories), Siconos' solver in the colour of the nsopt method of its name."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import need_extra

need_extra("studies")
import pandas as pd  # noqa: E402

from nsopt.exceptions import OptionError  # noqa: E402
from nsopt.studies.profiles import history_figure, method_colour, profile_panels  # noqa: E402


def _results():
    rows = []
    # kind fc3d: nsgs, nsn-ac and Siconos' NSGS; kind lcp: lemke and pgs only (other methods, other order)
    for kind, methods in (("fc3d", ("nsn-ac", "nsgs", "siconos:NSGS")), ("lcp", ("pgs", "lemke"))):
        for p in range(4):
            for j, m in enumerate(methods):
                solved = not (m == "nsgs" and p == 0)
                rows.append({"kind": kind, "problem": f"{kind}-{p}", "method": m, "options": "{}",
                             "status": "solved" if solved else "max_iter", "time": 0.01 * (j + 1) * (p + 1),
                             "iterations": float(10 * (3 - j) + p), "timeout": 30.0,
                             "source": "siconos" if m.startswith("siconos:") else "nsopt"})
    return pd.DataFrame(rows)


def _colours(panels):
    return {lab: colour for _, _, lines in panels for lab, _, _, colour, _ in lines}


def test_a_method_keeps_its_colour_between_time_and_iteration_profiles():
    df = _results()
    t, i = _colours(profile_panels(df, "time")), _colours(profile_panels(df, "nit"))
    assert t == i
    # drawing one kind alone does not shift the colours of the others
    assert _colours(profile_panels(df, "time", kinds=["lcp"])) == {k: t[k] for k in ("lemke", "pgs")}
    assert t["Siconos NSGS"] == t["nsgs"]
    nsopt_labels = [lab for lab in t if not lab.startswith("Siconos")]
    assert len({t[lab] for lab in nsopt_labels}) == len(nsopt_labels)      # distinct methods, distinct colours
    with pytest.raises(OptionError, match="iterations"):      # the measure is named nit, as the column
        profile_panels(df, "iterations")


def test_history_figure_uses_the_same_colours():
    fig = history_figure({"nsgs": [1.0, 0.1, 0.01], "nsn-ac": [1.0, 1e-6], "Siconos NSGS": [1.0, 0.2]}, "p", 1e-8)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    for lab in ("nsgs", "nsn-ac", "Siconos NSGS"):
        assert lines[lab].get_color() == method_colour(lab)
    assert lines["Siconos NSGS"].get_linestyle() == "--"


@pytest.mark.parametrize("label", ["nsgs", "auto:nsgs", "Siconos NSGS", "nsgs omega=0.9"])
def test_method_colour_by_family(label):
    assert method_colour(label) == method_colour("nsgs")
    assert method_colour("some-new-method") == method_colour("some-new-method")      # stable
    assert np.all([method_colour(m) != method_colour("nsgs") for m in ("nsn-ac", "lemke", "socp-fp")])
