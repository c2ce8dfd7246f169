"""nsopt has no import cycle: a static walk of every module's imports (issue 19 §4).

Every ``import`` and ``from ... import`` statement of every module of ``nsopt`` is an arrow, at
module level and inside functions alike (a function-level import only delays a cycle, it does not
remove it), and so is every ``importlib.import_module(...)`` call: a literal name is an arrow to that
module; an f-string such as ``f"nsopt.modeling.{name}"`` is an arrow to every module its constant
prefix can name (it hides arrows, so it is counted as all of them). An import of a package's own
ancestor is not an arrow (Python runs a parent package before its children: every module would be
in a cycle with its package otherwise), and ``from pkg import name`` is an arrow to ``pkg.name``
when that is a module, else to ``pkg``. Any other computed import (a name known only at run time)
must be a plugin named by the user, listed in ``COMPUTED`` with its reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nsopt"

# Computed imports whose module name comes from the user (plugins of a campaign), by module: the
# only imports that are not arrows of the graph.
COMPUTED = {
    "nsopt.studies.campaign": "plugins named by the user (--plugin)",
    "nsopt.studies.runner": "plugins named by the user, imported in the workers",
    "nsopt.studies.worker": "plugins named by the user, imported in the workers",
}

# Cycles allowed for now, as sets of modules (a cycle inside one of them is allowed), each with why.
# The lead deletes an entry when the branch that removes the cycle is merged; any other cycle fails.
ALLOWED_CYCLES: list[set[str]] = [
    # (empty: the last one, modeling/_batch reaching osi and simulation through importlib, went with
    # the one Moreau-Jean step of issue 19 §2)
]


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (f, is_pkg)
    return out


def _absolute(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_import_module(call: ast.Call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name == "import_module" and bool(call.args)


def graph() -> tuple[dict[str, set[str]], list[tuple[str, int]]]:
    """(arrows by module, computed imports found outside ``COMPUTED`` as (module, line))."""
    mods = _modules()
    arrows, hidden = {}, []
    for mod, (path, is_pkg) in mods.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(mod, is_pkg, node.level, node.module) if node.level else node.module
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Call) and _is_import_module(node):
                arg = node.args[0]
                package = node.args[1] if len(node.args) > 1 else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    s = arg.value
                    if s.startswith("."):     # relative to the package argument: this module's package
                        level = len(s) - len(s.lstrip("."))
                        s = _absolute(mod, is_pkg, level, s.lstrip(".") or None)
                    names = [s]
                elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                    prefix = arg.values[0].value
                    if prefix.startswith("."):
                        level = len(prefix) - len(prefix.lstrip("."))
                        prefix = _absolute(mod, is_pkg, level, None) + "." + prefix.lstrip(".")
                    names = [m for m in mods if m.startswith(prefix)]
                elif mod not in COMPUTED:
                    hidden.append((mod, node.lineno))
                del package
            for n in names:
                if n in mods and n != mod and not mod.startswith(n + "."):
                    targets.add(n)
        arrows[mod] = targets
    return arrows, hidden


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle path."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(arrows[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(arrows):
        if v not in index:
            visit(v)
    return [_path(arrows, set(c)) for c in comps]


def _path(arrows, comp: set[str]) -> list[str]:
    """One cycle through the component's first module (breadth-first, inside the component)."""
    start = min(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(arrows[v] & comp):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return sorted(comp)


def test_the_walk_sees_every_kind_of_arrow(tmp_path, monkeypatch):
    """The walker finds module-level, function-level, relative, importlib and f-string arrows, and
    the cycles they make (a walker that saw nothing would pass the real test)."""
    pkg = tmp_path / "nsopt"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import a\n",
        "a.py": "def f():\n    from .b import x\n",
        "b.py": "import importlib\nx = importlib.import_module('nsopt.c')\n",
        "c.py": "from .a import f\n",
        "sub/__init__.py": "",
        "sub/d.py": "import importlib\ndef g(n):\n    return importlib.import_module(f'nsopt.sub.{n}')\n",
        "sub/e.py": "from . import d\n",
        "sub/f.py": "import importlib\ndef h(n):\n    return importlib.import_module(n)\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    arrows, hidden = graph()
    assert arrows["nsopt"] == {"nsopt.a"}
    assert arrows["nsopt.a"] == {"nsopt.b"} and arrows["nsopt.b"] == {"nsopt.c"} and arrows["nsopt.c"] == {"nsopt.a"}
    assert arrows["nsopt.sub.d"] == {"nsopt.sub.e", "nsopt.sub.f"}
    assert hidden == [("nsopt.sub.f", 3)]
    found = cycles(arrows)
    assert set(map(frozenset, found)) == {frozenset({"nsopt.a", "nsopt.b", "nsopt.c"}),
                                          frozenset({"nsopt.sub.d", "nsopt.sub.e"})}
    assert found[0][0] == found[0][-1]       # a path that closes


def test_no_import_cycle():
    arrows, hidden = graph()
    assert not hidden, ("computed imports that hide arrows (name the module literally, or list a "
                        f"user plugin in COMPUTED): {hidden}")
    bad = [c for c in cycles(arrows) if not any(set(c) <= a for a in ALLOWED_CYCLES)]
    assert not bad, "import cycles in nsopt:\n" + "\n".join(" -> ".join(c) for c in bad)


@pytest.mark.parametrize("allowed", ALLOWED_CYCLES, ids=lambda c: "+".join(sorted(c)))
def test_allowed_cycles_still_exist(allowed):
    """An allowed cycle that no longer exists must leave the allow-list (it would hide a new one)."""
    arrows, _ = graph()
    assert any(set(c) <= allowed for c in cycles(arrows)), f"no cycle inside {sorted(allowed)} any more: delete it"
