"""Shared test fixtures: the Siconos corpus through one setting (NSOPT_DATA)."""

from __future__ import annotations

import json
import os

import pytest

from nsopt.data import ENV, corpus_files, data_dir, has_data

REQUIRE = os.environ.get("NSOPT_REQUIRE_DATA") == "1"   # .ci/run sets it: a missing corpus is a failure

# The suite uses both cores through pytest-xdist (`-n auto`): the demo's compile-ahead process
# (nsopt._ahead) would only add a third; its own tests (test_first_run.py) switch it on.
os.environ.setdefault("NSOPT_COMPILE_AHEAD", "0")

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


# Property tests: random exploration on a developer's machine, a fixed example set under CI
# (CI=true), so that a CI run is reproducible and a failure found locally is kept by hypothesis' database.
from hypothesis import settings as _hsettings  # noqa: E402

_hsettings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    _hsettings.load_profile("ci")


# tests/site (the built documentation site in a browser) is collected only when NSOPT_SITE names the
# built site, as .ci/run does after building it: the normal run needs neither the site nor a browser.
if not os.environ.get("NSOPT_SITE"):
    collect_ignore_glob = ["site/*"]
