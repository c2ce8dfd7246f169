"""The suite's own rules for the shared corpus (issue 31 §9): a corpus file that nsopt should load
and does not fails the test that walks it (it used to be a skip, "not loadable"), and a file that is
invalid on purpose is listed in ``conftest.EXPECTED_INVALID`` with the error it must give, checked."""

from __future__ import annotations

import shutil

import pytest

import nsopt
from nsopt.exceptions import FormatError

from conftest import EXPECTED_INVALID, load_corpus_file


def test_a_corpus_file_that_does_not_load_fails_the_test(tmp_path):
    (tmp_path / "lcp").mkdir()
    broken = tmp_path / "lcp" / "lcp_cut.dat"
    broken.write_text("3\n1 2\n")                    # cut after the first row of M
    with pytest.raises(FormatError, match="lcp_cut.dat"):
        load_corpus_file(broken)


def test_a_file_listed_invalid_must_give_its_error(tmp_path):
    """Rectangular_mlcp.dat (M 3 x 2) is refused with its error; the same name holding a valid
    problem is a failure (the list says it must be refused)."""
    ok = nsopt.MLCP([[2.0]], [[2.0]], [[1.0]], [[1.0]], [-1.0], [-1.0])
    for key in EXPECTED_INVALID:
        folder, name = key.split("/")
        (tmp_path / folder).mkdir(exist_ok=True)
        fake = tmp_path / folder / name
        nsopt.io.write_siconos_dat(ok, fake)
        with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
            load_corpus_file(fake)


@pytest.mark.corpus
@pytest.mark.parametrize("key", sorted(EXPECTED_INVALID))
def test_expected_invalid_files_give_their_error(key, corpus, tmp_path):
    path = corpus / key
    assert path.is_file(), f"{key} is listed in conftest.EXPECTED_INVALID but not in the corpus"
    assert load_corpus_file(path) is None
    copy = tmp_path / key.split("/")[0] / path.name         # the check names the file it was given
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    assert load_corpus_file(copy) is None
