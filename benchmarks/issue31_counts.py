"""Issue 31's counts, before and after: Newton loops, factorisation homes, Moreau–Jean step paths, method
policies, module-level mutable objects (each by scanning the source with ``ast``, names listed), the output
of ``duplicates`` over ``nsopt/``, and the Python calls and module changes of one 3-cube Scene step.

    python benchmarks/issue31_counts.py --base /tmp/base_tree [--new .] [--no-duplicates] [--no-scene]

The rules (each is a heuristic over the syntax tree; every hit is listed so that it can be checked):

- **Newton loop**: a function (its own body, nested functions apart) with a loop that asks for a Newton
  direction (a callee whose name holds ``solve``, ``direction``, ``newton`` or ``lm_step``) and holds a
  line search: a callee whose name holds ``search`` (not ``searchsorted``), ``armijo`` or ``backtrack``, or
  a loop inside it that shrinks a step (``t *= c``, ``t /= c``, ``t = c * t``). A function that runs
  another's loop (``_prox_loop`` calling ``_newton_local``) is not a loop of its own.
- **Factorisation home**: a file calling a SciPy/NumPy/LAPACK factorisation (the scan of
  ``tests/test_linalg_home.py``, applied to ``linalg.py`` too), or defining a hand-written one (a
  function whose name starts or ends with ``lu``, holds ``_lu_``, or ``ldl``/``cholesky``, with a
  loop and no library call).
- **Step path**: a function (own body) that assembles a time step's one-step problem: it builds the
  step's ``Assembly`` (or ``StepRecord``), or sets ``W`` (or ``self.W``) from a matrix product, an
  ``einsum`` or a ``*delassus*`` call (the adjoint's own re-assembly of W); in ``nsopt/modeling/``,
  ``nsopt/sensitivity/`` and ``nsopt/mechanics/scene.py`` (W is formed for other reasons elsewhere).
- **Method policy**: a module-level assignment whose value holds a dict literal with two or more keys
  that are problem kinds and values whose strings all name registered methods (the second argument of
  the tree's ``register(...)`` calls), e.g. ``{"fc3d": ("nsn-ac", "nsgs")}`` or ``{"fc3d": Plan(...)}``.
- **Module-level mutable object**: a module-level name bound to a dict, list or set (literal,
  comprehension, or ``dict()``/``list()``/``set()``/``defaultdict``/``OrderedDict``/``deque``/``Counter``/
  weak dictionaries/``threading.local``/``bytearray``): the rule of the review that filed issue 31; widened
  (both trees scanned alike) to what that rule missed: a NumPy array with elements (``np.array``/``zeros``/
  ``ones``/``empty``/``full``/``eye``/... whose literal shape is not empty) left writeable (no
  ``NAME.setflags(write=False)`` or ``NAME.flags.writeable = False`` in the module), an ``itertools.count()``,
  an instance of a class of the tree that changes its own attributes outside ``__init__`` (``MethodPolicy``,
  ``Checked``, ...), a module-level name that a function rebinds (``global NAME``), and a function cached by
  ``functools.lru_cache``/``cache`` (process-wide state, listed as ``NAME()``). A subscript or attribute
  target (``mod.TABLE[k] = {...}``) is a change of an existing object, not an object of its own, and is not
  counted; a ``types.MappingProxyType``, ``frozenset``, tuple or frozen dataclass is immutable and is not.
- ``duplicates --repo TREE/nsopt --most 40 --seconds 120``: its first line (pairs, files read) and the
  lines shared by its rows.
- One Scene step (3 cubes of side 0.2 resting on a ground box, μ = 0.5, h = 5 ms): ``sys.setprofile``
  counts the Python calls into ``nsopt`` modules and the changes of module between consecutive calls
  during steps 3 to 5 (``on_step`` turns the profile on and off), per step, and the modules touched.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

KINDS = {"lcp", "mlcp", "relay", "avi", "fc2d", "fc3d", "gfc3d", "gmp", "equality", "multiple-impact", "ncp", "vi"}
MUTABLE_CALLS = {"dict", "list", "set", "collections.defaultdict", "defaultdict", "OrderedDict",
                 "collections.OrderedDict", "weakref.WeakKeyDictionary", "weakref.WeakValueDictionary",
                 "WeakKeyDictionary", "WeakValueDictionary", "threading.local", "bytearray", "deque",
                 "collections.deque", "Counter", "collections.Counter", "itertools.count", "count"}
ARRAYS = {"array", "asarray", "zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace",
          "zeros_like", "ones_like", "empty_like", "full_like"}     # np.<name>(...): a writeable array
CACHES = {"lru_cache", "functools.lru_cache", "cache", "functools.cache"}
LINE_SEARCH = ("search", "armijo", "backtrack")     # callees of a line search (searchsorted apart)
STEP_HOMES = ("nsopt/modeling/", "nsopt/sensitivity/", "nsopt/mechanics/scene.py")  # where steps are made
DIRECTION = ("solve", "direction", "newton", "lm_step")  # callees that give a Newton direction


def _sources(root):
    for f in sorted(Path(root).rglob("*.py")):
        yield f.relative_to(Path(root).parent).as_posix(), ast.parse(f.read_text(encoding="utf-8"))


def _functions(tree):
    """(qualified name, node) of every function, methods with their class."""
    def walk(node, prefix):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + ch.name, ch
                yield from walk(ch, prefix + ch.name + ".")
            elif isinstance(ch, ast.ClassDef):
                yield from walk(ch, prefix + ch.name + ".")
            else:
                yield from walk(ch, prefix)
    yield from walk(tree, "")


def _own(node):
    """The nodes of a function's own body (nested functions and classes left out)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def _callee(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _shrinks(loop):
    """Does a loop shrink a step: ``t *= c``, ``t /= c`` or ``t = c * t``?"""
    for n in _own(loop):
        if isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Mult, ast.Div)) and isinstance(n.target, ast.Name):
            return True
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Mult)
                and n.targets[0].id in {getattr(s, "id", None) for s in (n.value.left, n.value.right)}):
            return True
    return False


def _line_search(callee):
    c = callee.lower()
    return any(k in c for k in LINE_SEARCH) and c != "searchsorted"


def newton_loops(root):
    out = []
    for rel, tree in _sources(root):
        for name, fn in _functions(tree):
            for loop in (n for n in _own(fn) if isinstance(n, (ast.For, ast.While))):
                body = list(_own(loop))
                calls = [_callee(n) for n in body if isinstance(n, ast.Call)]
                if not any(k in c.lower() for c in calls for k in DIRECTION):
                    continue
                inner = [n for n in body if isinstance(n, (ast.For, ast.While))]
                if any(_line_search(c) for c in calls) or any(_shrinks(x) for x in inner):
                    out.append(f"{rel}:{fn.lineno} {name}")
                    break
    return out


def _linalg_scan():
    """tests/test_linalg_home.py as a module (its scanner ``_calls`` reads the folder ``ROOT``)."""
    spec = importlib.util.spec_from_file_location("_linalg_home", HERE.parent / "tests" / "test_linalg_home.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def factor_homes(root):
    scan = _linalg_scan()
    homes = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d) / "nsopt"
        shutil.copytree(root, tmp, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
        if (tmp / "linalg.py").is_file():           # the scanner passes over linalg.py: scan it under another name
            (tmp / "linalg.py").rename(tmp / "linalg_home_.py")
        scan.ROOT = tmp
        for rel, name, _ in scan._calls():
            homes.setdefault(f"nsopt/{rel}".replace("linalg_home_.py", "linalg.py"), set()).add(name)
    for rel, tree in _sources(root):               # hand-written factorisations (no library call inside)
        for name, fn in _functions(tree):
            short = fn.name.lower().strip("_")
            if not (short.startswith("lu") or short.endswith("_lu") or "_lu_" in short or "ldl" in short
                    or "cholesky" in short):
                continue
            own = list(_own(fn))
            if any(isinstance(n, (ast.For, ast.While)) for n in own) and not any(
                    isinstance(n, ast.Call) and _callee(n) in scan.FACTORISATIONS for n in own):
                homes.setdefault(rel, set()).add(f"hand-written {name}")
    return [f"{rel}: {', '.join(sorted(v))}" for rel, v in sorted(homes.items())]


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
           {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _assigns_w(n):
    """``W = ...`` or ``self.W = ...`` from a matrix product, an ``einsum`` or a ``*delassus*`` call."""
    if not isinstance(n, ast.Assign) or not any(getattr(t, "id", getattr(t, "attr", None)) == "W" for t in n.targets):
        return False
    return any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.MatMult) or isinstance(x, ast.Call) and (
        _callee(x) == "einsum" or "delassus" in _callee(x).lower()) for x in ast.walk(n.value))


def step_paths(root):
    out = []
    for rel, tree in _sources(root):
        if not rel.startswith(STEP_HOMES):
            continue
        for name, fn in _functions(tree):
            if any(isinstance(n, ast.Call) and _callee(n) in ("Assembly", "StepRecord") or _assigns_w(n)
                   for n in _own(fn)):
                out.append(f"{rel}:{fn.lineno} {name}")
    return out


def _module_assignments(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign):
            yield node, node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node, [node.target], node.value


def _strings(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str) or (
        isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(_strings(e) for e in node.elts))


def _methods(root):
    """The method names registered in the tree: the second argument of every ``register(...)`` call."""
    return {n.args[1].value for _, tree in _sources(root) for n in ast.walk(tree)
            if isinstance(n, ast.Call) and _callee(n) == "register" and len(n.args) > 1
            and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)}


def policies(root):
    methods = _methods(root)
    out = []
    for rel, tree in _sources(root):
        for node, targets, value in _module_assignments(tree):
            for d in (n for n in ast.walk(value) if isinstance(n, ast.Dict)):
                kinds = sum(isinstance(k, ast.Constant) and k.value in KINDS for k in d.keys)
                names = [[x.value for x in ast.walk(v) if isinstance(x, ast.Constant) and isinstance(x.value, str)]
                         for v in d.values]
                if kinds >= 2 and all(ns and set(ns) <= methods for ns in names):
                    out.append(f"{rel}:{node.lineno} {', '.join(ast.unparse(t) for t in targets)}")
                    break
    return out


def _changing_classes(root):
    """Names of the tree's classes that change their own attributes outside ``__init__``/``__post_init__``
    (``self.x = ...``, ``self.x[k] = ...``, ``self.x += ...``, ``self.x.append(...)``/``update``/...)."""
    grow = {"append", "extend", "update", "add", "setdefault", "pop", "popitem", "clear", "insert", "remove",
            "discard", "move_to_end", "appendleft", "popleft"}

    def on_self(t):
        while isinstance(t, (ast.Subscript, ast.Attribute)):
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                return True
            t = t.value
        return False

    out = set()
    for _, tree in _sources(root):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                if fn.name in ("__init__", "__post_init__", "__new__", "__setstate__"):
                    continue
                for n in ast.walk(fn):
                    targets = (n.targets if isinstance(n, ast.Assign) else [n.target]
                               if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else [])
                    if any(on_self(t) for t in targets) or (
                            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in grow
                            and on_self(n.func.value)):
                        out.add(cls.name)
    return out


def _read_only(tree):
    """Names a module makes read-only: ``NAME.setflags(write=False)`` or ``NAME.flags.writeable = False``."""
    out = set()
    for n in ast.walk(tree):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "setflags"
                and isinstance(n.func.value, ast.Name)
                and any(k.arg == "write" and getattr(k.value, "value", True) is False for k in n.keywords)):
            out.add(n.func.value.id)
        if (isinstance(n, ast.Assign) and any(ast.unparse(t).endswith(".flags.writeable") for t in n.targets)
                and getattr(n.value, "value", True) is False):
            out |= {ast.unparse(t).split(".")[0] for t in n.targets}
    return out


def _empty_shape(call):
    """A NumPy constructor whose first argument is a literal shape with a zero in it: no element to change."""
    if not call.args:
        return False
    a = call.args[0]
    dims = a.elts if isinstance(a, ast.Tuple) else [a]
    return any(isinstance(d, ast.Constant) and d.value == 0 for d in dims) or (
        isinstance(a, (ast.List, ast.Tuple)) and not a.elts)


def module_state(root):
    out = []
    mut = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    changing = _changing_classes(root)
    for rel, tree in _sources(root):
        frozen = _read_only(tree)
        for node, targets, value in _module_assignments(tree):
            targets = [t for t in targets if isinstance(t, ast.Name)]     # mod.TABLE[k] = ...: a change, not an object
            if not targets:
                continue
            call = isinstance(value, ast.Call)
            func = ast.unparse(value.func) if call else ""
            array = (call and func.split(".")[-1] in ARRAYS and func.split(".")[0] in ("np", "numpy")
                     and not _empty_shape(value) and not {t.id for t in targets} <= frozen)
            if isinstance(value, mut) or call and (func in MUTABLE_CALLS or func in changing) or array:
                out += [f"{rel}:{node.lineno} {ast.unparse(t)} = {ast.unparse(value)[:50]}" for t in targets]
        rebound = sorted({name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names})
        out += [f"{rel} {name} (rebound by ``global``)" for name in rebound]
        for fn in (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if any(ast.unparse(d.func if isinstance(d, ast.Call) else d) in CACHES for d in fn.decorator_list):
                out.append(f"{rel}:{fn.lineno} {fn.name}() (a {ast.unparse(fn.decorator_list[0])} cache)")
    return out


def duplicates(root):
    r = subprocess.run(["duplicates", "--repo", str(root), "--most", "40", "--seconds", "120"],
                       capture_output=True, text=True, check=False)
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"\s*D\d+ ", ln)]
    shared = 0
    for ln in rows:
        m = re.search(r":(\d+)-(\d+) ~", ln)
        if m:
            shared += int(m.group(2)) - int(m.group(1)) + 1
    head = r.stdout.splitlines()[0] if r.stdout else r.stderr.strip()
    tail = [ln for ln in r.stdout.splitlines() if ln.startswith(("(+", "left out", "incomplete"))]
    return {"summary": head, "rows": len(rows), "lines shared by the rows": shared, "notes": tail, "list": rows}


SCENE_STEP = r'''
import json, sys
import nsopt.mechanics as mech

def scene():
    sc = mech.Scene(gravity=(0.0, 0.0, -9.81), margin=0.02)
    sc.add_primitive_shape("Cube", "Box", (0.2, 0.2, 0.2))
    sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5, e=0.0)
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    for i in range(3):
        sc.add_object(f"cube{i}", ["Cube"], mass=1.0, translation=[0.4 * i - 0.4, 0.0, 0.1])
    return sc

K0, STEPS = 2, 3
calls, changes, modules, last, seen = [0], [0], {}, [None], [0]

def prof(frame, event, arg):
    if event != "call":
        return
    mod = frame.f_globals.get("__name__", "")
    if not mod.startswith("nsopt"):
        return
    calls[0] += 1
    modules[mod] = modules.get(mod, 0) + 1
    if last[0] is not None and mod != last[0]:
        changes[0] += 1
    last[0] = mod

def hook(*_):
    seen[0] += 1
    if seen[0] == K0:
        sys.setprofile(prof)
    elif seen[0] == K0 + STEPS:
        sys.setprofile(None)

scene().run(0.05, 5e-3)             # compile, caches
scene().run(5e-3 * (K0 + STEPS + 1), 5e-3, on_step=hook)
print(json.dumps({"calls per step": calls[0] / STEPS, "module changes per step": changes[0] / STEPS,
                  "modules": sorted(modules), "calls per module per step": {m: c / STEPS for m, c in sorted(modules.items())}}))
'''


def scene_step(tree):
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", SCENE_STEP], capture_output=True, text=True, env=env, cwd=tree,
                       check=False)
    if r.returncode:
        return {"error": r.stderr[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _key(entry):
    """An entry without its line number and value: ``nsopt/x.py name`` (or ``nsopt/x.py`` for a file)."""
    return re.sub(r":\d+", "", entry).split(" = ")[0].split(": ")[0]


COUNTS = {"Newton loops (with a line search)": newton_loops, "factorisation homes": factor_homes,
          "step paths (one-step problem assembled)": step_paths, "method policies": policies,
          "module-level mutable objects": module_state}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", default=str(HERE.parent))
    ap.add_argument("--no-duplicates", action="store_true")
    ap.add_argument("--no-scene", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    trees = {"base": Path(a.base).resolve(), "new": Path(a.new).resolve()}
    res = {tag: {k: f(t / "nsopt") for k, f in COUNTS.items()} for tag, t in trees.items()}
    print(f"| count | base ({trees['base']}) | new ({trees['new']}) |\n|---|---:|---:|")
    for k in COUNTS:
        print(f"| {k} | {len(res['base'][k])} | {len(res['new'][k])} |")
    k = "module-level mutable objects"
    print(f"| {k}, ``__all__`` apart | " + " | ".join(str(sum(" __all__ = " not in x for x in res[tag][k]))
                                                     for tag in trees) + " |")
    if not a.no_duplicates:
        for tag, t in trees.items():
            res[tag]["duplicates"] = duplicates(t / "nsopt")
        d = {tag: res[tag]["duplicates"] for tag in trees}
        print(f"| duplicates over nsopt/: rows (of --most 40) | {d['base']['rows']} | {d['new']['rows']} |")
        print(f"| duplicates: lines shared by those rows | {d['base']['lines shared by the rows']} | "
              f"{d['new']['lines shared by the rows']} |")
        print(f"| duplicates: first line | {d['base']['summary']} | {d['new']['summary']} |")
    if not a.no_scene:
        for tag, t in trees.items():
            res[tag]["scene step"] = scene_step(t)
        s = {tag: res[tag]["scene step"] for tag in trees}
        for k in ("calls per step", "module changes per step"):
            print(f"| one 3-cube Scene step: {k} | {s['base'].get(k, '-'):.0f} | {s['new'].get(k, '-'):.0f} |")
        print(f"| one 3-cube Scene step: modules | {len(s['base'].get('modules', ()))} | "
              f"{len(s['new'].get('modules', ()))} |")
    for k in COUNTS:
        for tag in trees:
            print(f"\n{k}, {tag} ({len(res[tag][k])}):")
            print("\n".join(f"  {x}" for x in res[tag][k]))
        names = {tag: {_key(x) for x in res[tag][k]} for tag in trees}
        print(f"{k}: only in base: {', '.join(sorted(names['base'] - names['new'])) or '-'}; "
              f"only in new: {', '.join(sorted(names['new'] - names['base'])) or '-'}")
    if not a.no_duplicates:
        for tag in trees:
            d = res[tag]["duplicates"]
            print(f"\nduplicates, {tag}: {d['summary']}; " + "; ".join(d["notes"]))
            print("\n".join(f"  {x}" for x in d["list"]))
    if not a.no_scene:
        for tag in trees:
            print(f"\nScene step modules, {tag} (calls per step): " + ", ".join(
                f"{m} {c:.0f}" for m, c in res[tag]["scene step"].get("calls per module per step", {}).items()))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
