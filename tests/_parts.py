"""Each part of nsopt tested with its extra alone (issue 31 §7): ``pytest --part P`` (``.ci/extras`` runs it
in a fresh environment holding nsopt[P] and the test runner only; ``--part core``: nsopt alone).

A test declares the parts it needs the one way the suite has: ``need_extra("symbolic")`` (conftest), at
the top of its module (the module's part), of its body or of a fixture it uses. Those calls are read from
the source (nothing else to keep in step): a literal call among a body's statements is a *certain* need; a
call nested in a condition, a non-literal one or ``need_extras_of(code)`` makes the test *dynamic* (what it
needs depends on its parameters). A test is *own* in an environment when its certain needs are installed.

``--part P`` selects the tests that touch a part (a certain need, or a dynamic need of P; ``--part core``:
every test) and, after the run, checks:

* the environment is P's extra alone: P's modules installed, no module of another part (a dependency of
  the runner or of the core that pulls a part in, or a leak of a part into the core, fails here);
* an own test does not skip naming an extra (a dynamic one may, for an extra that is absent);
* a test needing an absent part skips, naming it (not an error, not a pass): a module of an absent part
  at its collection, a test at its ``need_extra``;
* with a part installed, some of its tests ran and passed.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from functools import cache
from pathlib import Path

import pytest

from nsopt._extras import EXTRAS, missing

PARTS = ("core", "symbolic", "mechanics", "studies", "jax")
TESTS = Path(__file__).resolve().parent
SKIP_FOR_EXTRA = re.compile(r"needs nsopt\[(\w+)\]")


# ---------------------------------------------------------------------------- what a test needs (its source)
def _literal_need(call):
    """(extra, modules or None) of a literal ``need_extra("x"[, ["m"]])`` call, else None."""
    try:
        args = [ast.literal_eval(a) for a in call.args]
    except ValueError:
        return None
    if not args or not isinstance(args[0], str):
        return None
    return args[0], tuple(args[1]) if len(args) > 1 and args[1] is not None else None


def _name(call):
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def needs_of_body(body):
    """(certain needs, dynamic extras, dynamic) of a list of statements (a module's or a function's)."""
    certain, maybe, dynamic = [], set(), False
    top = {id(s.value) for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue                                       # (a module's functions are read as tests)
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call) or _name(node) not in ("need_extra", "need_extras_of"):
                continue
            need = _literal_need(node) if _name(node) == "need_extra" else None
            if need is not None and id(node) in top:
                certain.append(need)
            else:
                dynamic = True
                if need is not None:
                    maybe.add(need[0])
    return certain, maybe, dynamic


@cache
def module_needs(path):
    """The needs of a test module's top level (its part)."""
    return needs_of_body(ast.parse(Path(path).read_text(encoding="utf-8")).body)


@cache
def _function_needs(func):
    try:
        src = textwrap.dedent(inspect.getsource(inspect.unwrap(func)))
    except (OSError, TypeError):
        return [], set(), False
    tree = ast.parse(src)
    node = tree.body[0]
    while isinstance(node, (ast.ClassDef,)):            # (not expected: getsource gives the function)
        node = node.body[0]
    return needs_of_body(node.body)


def _ours(func):
    try:
        return Path(inspect.getsourcefile(inspect.unwrap(func))).resolve().is_relative_to(TESTS)
    except TypeError:
        return False


def item_needs(item):
    """(certain needs, dynamic extras, dynamic) of a collected test: its module, its body, its fixtures."""
    c, m, d = module_needs(str(item.path))
    certain, maybe, dynamic = list(c), set(m), d
    funcs = [item.function] if hasattr(item, "function") else []
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(info, "names_closure", ()):
        defs = info.name2fixturedefs.get(name)
        if defs and _ours(defs[-1].func):
            funcs.append(defs[-1].func)
    for f in funcs:
        c, m, d = _function_needs(f)
        certain += c
        maybe |= m
        dynamic |= d
    return certain, maybe, dynamic


def _installed(need):
    return not missing(*need)


# ---------------------------------------------------------------------------- the environment
def environment_errors(part):
    """What makes this environment other than nsopt[part] alone (with the test runner)."""
    errors = []
    own = set(EXTRAS.get(part, ()))
    if part != "core" and missing(part):
        errors.append(f"nsopt[{part}]'s modules {missing(part)} are not installed")
    for other in PARTS[1:]:
        leaked = sorted(set(EXTRAS[other]) - own - set(missing(other)))
        if leaked:
            alone = "the core alone" if part == "core" else f"nsopt[{part}] alone"
            errors.append(f"{', '.join(leaked)} (of nsopt[{other}]) installed: not {alone}")
    for tool in ("pytest", "xdist", "hypothesis"):
        if missing("test", [tool]):
            errors.append(f"the test runner's {tool} is not installed")
    return errors


# ---------------------------------------------------------------------------- the hooks (conftest imports them)
def pytest_addoption(parser):
    parser.addoption("--part", choices=PARTS, default=None,
                     help="nsopt: run the tests of one part in an environment with its extra alone and check "
                          "that the others skip naming theirs (.ci/extras)")


def pytest_configure(config):
    part = config.getoption("--part", None)
    if part and not hasattr(config, "workerinput"):       # the controller (xdist's, or the only process)
        errors = environment_errors(part)
        if errors:
            raise pytest.UsageError(f"--part {part}: " + "; ".join(errors))
        config.pluginmanager.register(PartCheck(part, config.rootpath), "nsopt-part-check")


def pytest_ignore_collect(collection_path, config):
    """With ``--part P`` (not the core), a test module that calls no ``need_extra`` is not collected: none of
    its tests needs a part (a fixture of conftest.py that needed one would be read too: there is none)."""
    part = config.getoption("--part", None)
    if (part and part != "core" and collection_path.suffix == ".py" and collection_path.name.startswith("test_")
            and "need_extra" not in collection_path.read_text(encoding="utf-8")):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    part = config.getoption("--part", None)
    if not part:
        return
    keep, drop = [], []
    for item in items:
        certain, maybe, dynamic = item_needs(item)
        parts = {e for e, _ in certain} - {"test"}
        if part == "core" or parts or part in maybe:
            absent = sorted({e for e, m in certain if not _installed((e, m))})
            item.user_properties.append(("nsopt_part", {"absent": absent, "dynamic": dynamic,
                                                        "parts": sorted(parts)}))
            keep.append(item)
        else:
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _reason(report):
    lr = report.longrepr
    return lr[2] if isinstance(lr, tuple) else str(lr)


class PartCheck:
    """The outcomes of a ``--part`` run (the controller's view, xdist or not) and their check."""

    def __init__(self, part, root):
        self.part, self.root = part, root
        self.props, self.outcomes, self.collect, self.result = {}, {}, [], None

    def pytest_collectreport(self, report):
        if report.skipped or report.failed:
            self.collect.append((report.nodeid, report.outcome, _reason(report)))

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties).get("nsopt_part")
        if props is None:
            return
        self.props[report.nodeid] = props
        prev = self.outcomes.get(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = ("failed", _reason(report))
        elif report.skipped and prev is None:
            self.outcomes[report.nodeid] = ("skipped", _reason(report))
        elif report.when == "call" and prev is None:
            self.outcomes[report.nodeid] = ("passed", "")

    def check(self):
        """(counts, violations)."""
        bad, own_ran = [], 0
        counts = dict.fromkeys(["passed", "skipped", "failed", "naming"], 0)
        for nodeid, (outcome, reason) in self.outcomes.items():
            props = self.props[nodeid]
            counts[outcome] += 1
            named = SKIP_FOR_EXTRA.findall(reason) if outcome == "skipped" else []
            counts["naming"] += bool(named)
            if outcome == "failed":
                bad.append(f"{nodeid}: failed")
            elif not props["absent"]:                     # own: its parts are installed
                if named and not props["dynamic"]:
                    bad.append(f"{nodeid}: a test of an installed part skipped: {reason}")
                own_ran += outcome == "passed" and self.part in props["parts"]
            elif outcome != "skipped" or not set(named) & set(props["absent"]):
                bad.append(f"{nodeid}: needs nsopt[{', '.join(props['absent'])}] (absent) but {outcome}"
                           f"{': ' + reason if reason else ''}, instead of skipping naming it")
        for nodeid, outcome, reason in self.collect:
            path = self.root / nodeid.split("::")[0]
            absent = {e for e, m in module_needs(str(path))[0] if not _installed((e, m))} if path.is_file() else set()
            if outcome != "skipped" or not set(SKIP_FOR_EXTRA.findall(reason)) & absent:
                bad.append(f"{nodeid}: collection {outcome}: {reason}")
        if self.part != "core" and own_ran == 0:
            bad.append(f"no test of nsopt.{self.part} ran and passed with nsopt[{self.part}] installed")
        return counts, bad

    def pytest_sessionfinish(self, session, exitstatus):
        self.result = self.check()
        if self.result[1] and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.result is None:
            return
        counts, bad = self.result
        tr = terminalreporter
        tr.section("nsopt's core alone" if self.part == "core" else f"nsopt[{self.part}] alone")
        for line in bad:
            tr.write_line(f"VIOLATION {line}")
        tr.write_line(f"parts check ({self.part}): {counts['passed']} passed, {counts['skipped']} skipped "
                      f"({counts['naming']} naming an absent extra), "
                      f"{counts['failed']} failed, {len(bad)} violations: {'OK' if not bad else 'FAILED'}")
