"""The sample of Siconos' test problems that ships with nsopt (``nsopt/siconos_samples``,
``nsopt.data.sample``): small, attributed, loadable, and the same bytes as the corpus' files."""

from __future__ import annotations

import pytest

import nsopt
from nsopt import data

from conftest import need_corpus


def test_the_sample_is_small_attributed_and_loads():
    names = data.samples()
    assert len(names) == 19 and "fc3d/Capsules-i101-404.dat" in names
    total = sum((data.SAMPLES / n).stat().st_size for n in names)
    assert total < 500_000, total                       # well under 1 MB
    readme = (data.SAMPLES / "README.md").read_text()
    assert "Apache License, Version 2.0" in readme and "github.com/siconos/siconos" in readme
    assert "Apache License" in (data.SAMPLES / "LICENSE").read_text()
    for n in names:
        assert n.split("/")[1] in readme, n
        p = nsopt.io.load(data.sample(n))
        assert p.kind == n.split("/")[0], n


def test_a_name_not_in_the_sample_says_what_is():
    with pytest.raises(FileNotFoundError, match="lcp/lcp_CPS_1.dat"):
        data.sample("fc3d/RockPile_tob1.dat")


def test_the_sample_is_the_corpus_bytes():
    need_corpus()
    for n in data.samples():
        assert data.sample(n).read_bytes() == data.path(n).read_bytes(), n
