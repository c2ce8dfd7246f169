"""The first run: Ctrl-C while a kernel compiles for the first time (issue 20 §3), and one compiled
specialisation per kernel (issue 19 §6). numba is used unpatched (its own ``cache=True``, no helper
process: issue 31 §5): ``test_numba_is_not_patched``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A Ctrl-C delivered from inside LLVM's object-code callback, the window where ctypes swallows the
# exception and numba is left with a library without object code ("no compiled object yet").
_SCRIPT = textwrap.dedent("""
    import signal, sys
    from numba.core.registry import cpu_target
    ee = cpu_target.target_context.codegen()._engine._ee     # llvmlite's execution engine
    hook = ee._object_cache_notify
    fired = []

    def interrupting(ll_module, buf):
        if not fired and ll_module.name == "pgs_sweeps":      # pgs' kernel (a short compile)
            fired.append(1)
            signal.raise_signal(signal.SIGINT)      # a Ctrl-C, inside the callback
        return hook(ll_module, buf)

    ee._object_cache_notify = interrupting
    import nsopt
    from nsopt import _jit, generate as g
    if sys.argv[1] != "guard":          # the negative control: the guard switched off
        _jit._GUARD.on_start = _jit._GUARD.on_end = lambda ev: None
    p = g.lcp(5, seed=1)[0]
    try:
        nsopt.solve(p, "pgs")
        print("first: no interrupt")
    except KeyboardInterrupt:
        print("first: KeyboardInterrupt")
    except RuntimeError as e:
        print("first: RuntimeError", str(e)[:60])
    try:
        print("second:", nsopt.solve(p, "pgs").status)
    except Exception as e:
        print("second:", type(e).__name__, str(e)[:60])
    print("fired:", len(fired))
""")


def _run(tmp_path, *args, cache="cache"):
    """Run python with ``args`` on this tree; ``cache``: a new numba cache folder under tmp_path
    (a first run), None: the project's own cache."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / cache)
    r = subprocess.run([sys.executable, "-c", *args], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.splitlines()


def test_ctrl_c_while_a_kernel_compiles_leaves_nothing_broken(tmp_path):
    """The interrupt reaches the caller as a KeyboardInterrupt once the compilation has ended, the
    next call works, and the kernels written to the cache load in a new process. Without the guard
    (the control) the same Ctrl-C comes out as numba's RuntimeError."""
    out = _run(tmp_path, _SCRIPT, "guard")
    assert out == ["first: KeyboardInterrupt", "second: solved", "fired: 1"], out
    again = _run(tmp_path, "import nsopt; from nsopt import generate as g; "
                           "print(nsopt.solve(g.lcp(5, seed=1)[0], 'pgs').status)")
    assert again == ["solved"]
    control = _run(tmp_path, _SCRIPT, "none", cache="control")
    assert control[0].startswith("first: RuntimeError") and "no compiled object" in control[0], control


_ONE_SIGNATURE = textwrap.dedent("""
    import copy, pickle, sys
    import scipy.sparse as sp
    import nsopt
    from nsopt import generate as g, registry
    from numba.core.registry import CPUDispatcher

    probs = [g.lcp(6, seed=1)[0], g.mlcp(2, 4, seed=2)[0], g.relay(5, seed=3)[0],
             g.friction_contact(3, dim=2, seed=4)[0], g.friction_contact(3, dim=3, seed=5)[0],
             g.global_friction_contact(2, 8, seed=6)[0]]
    probs += [copy.deepcopy(p) for p in probs] + [pickle.loads(pickle.dumps(p)) for p in probs]
    for p in probs:
        for m in registry.for_kind(p.kind):
            if m.name in ("qp", "socp-fp", "socp-tresca") or (m.applies and m.applies(p)):
                continue
            nsopt.solve(p, m.name, max_iter=5)
            nsopt.solve(p, m.name, max_iter=5, history=True)
    nsopt.solve(g.friction_contact(30, dim=3, seed=5)[0], "nsgs", max_iter=3)       # CSC (large dense)
    q = g.friction_contact(4, seed=7)[0]
    nsopt.solve(nsopt.FrictionContact(3, sp.csr_matrix(q.W), q.q, q.mu), "nsgs", max_iter=3)
    many = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("nsopt.") or name.startswith("nsopt.modeling") or mod is None:
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name and len(obj.signatures) > 1:
                many[name + "." + attr] = [str(s) for s in obj.signatures]
    print(many)
""")


def test_one_specialisation_per_kernel(tmp_path):
    """Every method on every kind of problem, from problems made every way (constructed, copied,
    unpickled, sparse, large dense), in a new process: each compiled kernel of nsopt (the modeling
    layer's aside: the step branch's) has one signature; a second one, from a writable array, a
    literal argument or another layout, would compile it again on a first run."""
    out = _run(tmp_path, _ONE_SIGNATURE, cache=None)
    assert out == ["{}"], out[-1]


_UNPATCHED = textwrap.dedent("""
    import subprocess
    from numba.core import caching, dispatcher
    classes = (caching.Cache, caching.FunctionCache, caching.IndexDataCacheFile, dispatcher.Dispatcher)
    before = {(c, n): f for c in classes for n, f in vars(c).items()}

    def no_process(*args, **kwargs):
        raise RuntimeError(f"a process was started: {args[:1]}")

    subprocess.Popen.__init__ = no_process
    from nsopt.cli import main
    rc = main(["--methods", "lemke"])
    changed = [f"{c.__name__}.{n}" for (c, n), f in before.items() if vars(c).get(n) is not f]
    changed += [f"{c.__name__}.{n}" for c in classes for n in vars(c) if (c, n) not in before]
    print("result:", rc, changed)
""")


def test_numba_is_not_patched_and_the_demo_starts_no_process(tmp_path):
    """issue 31 §5: numba's cache classes and dispatcher are numba's own after nsopt is imported and
    has solved (no process-wide patch), and ``python -m nsopt`` starts no helper process (the
    former compile-ahead helper started one on a first run whenever two cores were there)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NSOPT_COMPILE_AHEAD="1")
    r = subprocess.run([sys.executable, "-c", _UNPATCHED], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "result: 0 []" in r.stdout.splitlines(), r.stdout[-2000:]
