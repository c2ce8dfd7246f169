"""Every ```python block of README.md runs as shown, and every solve in it succeeds.

Each block runs in a fresh namespace from a temporary working directory (so a path that only
resolves from the author's checkout fails here, as it would in a user's clone), and without the
shared corpus (``NSOPT_DATA`` names a folder that does not exist): the README's examples run for a user who has
only nsopt (problems nsopt generates, and the sample it ships: ``nsopt.data.sample``). A block uses
the part of nsopt that its extra installs (``nsopt.mechanics``: ``nsopt[mechanics]``): without the
extra it skips naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import nsopt

from nsopt.exceptions import MissingExtra

from conftest import need_extra, need_extras_of

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)


def python_blocks():
    return _BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_python_blocks():
    assert python_blocks(), "README.md has no ```python block"


@pytest.mark.parametrize("k", range(len(python_blocks())))
def test_readme_block_runs(k, tmp_path, monkeypatch):
    code = python_blocks()[k]
    need_extras_of(code)              # (a block of nsopt.symbolic needs nsopt[symbolic], ...)
    monkeypatch.setenv("NSOPT_DATA", str(tmp_path / "no-corpus"))   # a user's machine: no shared corpus
    solutions = []
    real_solve = nsopt.solve

    def recording_solve(*args, **kwargs):
        sol = real_solve(*args, **kwargs)
        solutions.append((args, kwargs, sol))
        return sol
    monkeypatch.setattr(nsopt, "solve", recording_solve)
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(code, f"README.md block {k}", "exec"), {"__name__": "__readme__"})
    except MissingExtra as e:
        need_extra(e.extra)
        raise
    for args, kwargs, sol in solutions:
        tol = kwargs.get("tol", 1e-8)
        assert sol.success, (f"README block {k}: solve({args[0]!r}, {kwargs}) -> {sol.status}, "
                             f"error {sol.error:.3g}: {sol.message}")
        assert sol.error <= tol
