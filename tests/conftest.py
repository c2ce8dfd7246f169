"""Shared test fixtures: the Siconos corpus through one setting (NSOPT_DATA), the optional extras
(a part whose extra is absent skips, naming it), and the caches kept out of the source tree."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# numba's on-disk cache of nsopt's kernels goes to a user cache folder, not beside the sources
# (numba's default, ``__pycache__`` in the tree): the suite writes no cache of its own into the
# checkout (Python's bytecode and pytest's cache aside). Set before nsopt (and numba) is imported;
# a NUMBA_CACHE_DIR given by the caller is kept.
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nsopt"
os.environ.setdefault("NUMBA_CACHE_DIR", str(CACHE / "numba"))
# hypothesis' folder (its example database, its constants cache) likewise, not ``.hypothesis/``
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(CACHE / "hypothesis"))

from nsopt._extras import missing  # noqa: E402
# ``--part P``: the tests of one part, in an environment with its extra alone (.ci/extras; tests/_parts.py)
from _parts import (pytest_addoption, pytest_collection_modifyitems, pytest_configure,  # noqa: E402, F401
                    pytest_ignore_collect)
from nsopt.data import ENV, corpus_files, data_dir, has_data  # noqa: E402

REQUIRE = os.environ.get("NSOPT_REQUIRE_DATA") == "1"   # .ci/run sets it: a missing corpus is a failure
# .ci/run sets it for the README's test command (the [test] extra installs every part): a test that
# would skip for a missing extra fails instead
REQUIRE_EXTRAS = os.environ.get("NSOPT_REQUIRE_EXTRAS") == "1"


def need_extra(extra, modules=None):
    """Skip the calling test or module when a module of nsopt's ``extra`` (or only ``modules`` of
    it) is not installed, with a reason that names the extra to install; a failure under
    NSOPT_REQUIRE_EXTRAS=1."""
    absent = missing(extra, modules)
    if not absent:
        return
    msg = f'needs nsopt[{extra}] ({", ".join(absent)} not installed): pip install "nsopt[{extra}]"'
    if REQUIRE_EXTRAS:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg, allow_module_level=True)

# pytest-xdist's workers run with SIGINT ignored, and an ignored signal stays ignored in every process
# they start: the Ctrl-C tests (a KeyboardInterrupt in a solve, a campaign stopped by SIGINT, a
# kernel's compilation interrupted) need Python's own handler, as in a terminal.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import signal as _signal

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)


def need_corpus():
    """Skip (or fail, under NSOPT_REQUIRE_DATA=1) when the shared corpus folder is absent."""
    if has_data():
        return
    msg = f"shared Siconos corpus not found at {data_dir()} (set {ENV} to the siconos-data folder)"
    if REQUIRE:
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture
def corpus():
    need_corpus()
    return data_dir()


_PARTS = re.compile(r"\bnsopt\.(mechanics|symbolic|studies|jax)\b|^from nsopt import [^\n]*\b(mechanics|symbolic|studies|jax)\b"
                    r"|^\s*(?:import|from) (sympy|matplotlib|jax)\b", re.M)
_EXTRA_OF_MODULE = {"sympy": ("symbolic", None), "matplotlib": ("all", ["matplotlib"]), "jax": ("jax", None)}


def need_extras_of(code):
    """:func:`need_extra` for each part of nsopt (and each optional library) that a piece of code
    (an example script, a README block) uses: read from its imports."""
    for m in _PARTS.finditer(code):
        if m.group(3):
            need_extra(*_EXTRA_OF_MODULE[m.group(3)])
        else:
            need_extra(m.group(1) or m.group(2))
    if "_plotting" in code:                       # the examples' figures (matplotlib)
        need_extra("all", ["matplotlib"])


# Corpus files that nsopt refuses on purpose, with the error it must give: a test that walks the
# corpus checks that error for these (load_corpus_file) and fails on a FormatError of any other file.
EXPECTED_INVALID = {
    "mlcp/Rectangular_mlcp.dat": r"line 7: invalid problem data: MLCP\.M: must be square, got shape \(3, 2\)",
}


def load_corpus_file(path):
    """The problem of a corpus file (a FormatError fails the test: nsopt should load it), or None for
    a file of EXPECTED_INVALID, once checked that loading it raises its FormatError."""
    from nsopt import io
    from nsopt.exceptions import FormatError

    key = f"{path.parent.name}/{path.name}"
    if key in EXPECTED_INVALID:
        with pytest.raises(FormatError, match=EXPECTED_INVALID[key]) as e:
            io.load(path)
        assert e.value.path == str(path), e.value
        return None
    return io.load(path)


def corpus_params(*folders):
    """pytest params over the corpus files of some folders (ids 'folder/file'); one skipping param when absent."""
    files = [f for fo in folders for f in corpus_files(fo)]
    if not files:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.corpus)]
    return [pytest.param(f, id=f"{f.parent.name}/{f.name}", marks=pytest.mark.corpus) for f in files]


def reference_entries(kind=None):
    if not has_data():
        return []
    idx = data_dir() / "reference" / "index.json"
    if not idx.is_file():
        return []
    entries = json.loads(idx.read_text())
    return [e for e in entries if kind is None or e["kind"] == kind]


# Property tests: a fixed example set (derandomized: the same draws on every run, so that the suite's verdict
# does not depend on the run), random exploration on request (NSOPT_EXPLORE=1, a developer hunting for cases; a
# failure found so is kept by hypothesis' database and belongs in an @example).
# The property tests import hypothesis' names from here (``from conftest import given, settings, st``):
# without hypothesis (a tool of nsopt[test], e.g. the core with pytest alone) each property test
# skips naming the extra and the other tests of its module run.
if not missing("test", ["hypothesis"]):
    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st

    settings.register_profile("fixed", derandomize=True, deadline=None, print_blob=True)
    settings.register_profile("explore", deadline=None, print_blob=True)
    settings.load_profile("explore" if os.environ.get("NSOPT_EXPLORE") == "1" else "fixed")
else:
    class _Absent:
        """Stands for hypothesis' strategies and settings when it is not installed."""

        def __getattr__(self, name):
            return self

        def __call__(self, *args, **kwargs):
            return self

        def __iter__(self):
            return iter(())

    st = HealthCheck = _Absent()

    def settings(*args, **kwargs):
        return lambda test: test

    example = settings

    def given(*args, **kwargs):
        def skipped_test(test):
            def property_test():
                need_extra("test", ["hypothesis"])
            property_test.__name__, property_test.__qualname__ = test.__name__, test.__qualname__
            property_test.__module__, property_test.__doc__ = test.__module__, test.__doc__
            return property_test
        return skipped_test


# tests/site (the built documentation site in a browser) is collected only when NSOPT_SITE names the
# built site, as .ci/run does after building it: the normal run needs neither the site nor a browser.
if not os.environ.get("NSOPT_SITE"):
    collect_ignore_glob = ["site/*"]
