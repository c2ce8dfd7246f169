"""The first run: Ctrl-C while a kernel compiles for the first time (issue 20 §3), and one compiled
specialisation per kernel (issue 19 §6)."""

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


def _run_env(tmp_path, extra, *args, mkdir=None):
    """:func:`_run` with ``extra`` in the environment (a new numba cache folder)."""
    if mkdir:
        (tmp_path / mkdir).mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "cache"), **extra)
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


# ------------------------------------------------------------------ compiling ahead (nsopt._ahead)
_AHEAD_FILLS = textwrap.dedent("""
    import sys
    from nsopt import _ahead, cli
    a = _ahead.compile_ahead([(cli._warm_row, (("demo", 0), "lemke", 1e-8))])
    print("active", a.active)
    print("exit", a.process.wait(timeout=300))
""")

_LOADS = textwrap.dedent("""
    from numba.core import event
    import nsopt
    from nsopt.cli import demo_problems
    compiled = []
    class L(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__module__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", L())
    print(nsopt.solve(demo_problems()[0][1], "lemke").status, [m for m in compiled if m.startswith("nsopt")])
""")


def test_compile_ahead_fills_the_cache_the_run_loads(tmp_path):
    """A helper started on a first run (empty cache) runs its job to the end and exits; a new
    process then finds lemke's kernels in numba's cache: it compiles no nsopt kernel."""
    out = _run_env(tmp_path, {"NSOPT_COMPILE_AHEAD": "1"}, _AHEAD_FILLS)
    assert out == ["active True", "exit 0"], out
    assert _run(tmp_path, _LOADS) == ["solved []"]
    control = _run(tmp_path, _LOADS, cache="control")       # the control: an empty cache compiles
    assert control[0].startswith("solved [") and "nsopt" in control[0], control


_SKIPS = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from nsopt import _ahead
    d = Path(sys.argv[1])
    jobs = [(Path.touch, (d / f"job{i}",)) for i in range(4)] + [(time.sleep, (2.0,))]
    a = _ahead.compile_ahead(jobs)              # the helper takes 4 (a 2 s sleep), then 3, 2, 1, 0
    a.reached(1)                                # ... but the run has reached job 1
    print("exit", a.process.wait(timeout=60), sorted(p.name for p in d.iterdir()))
""")


def test_compile_ahead_skips_the_jobs_the_run_reached(tmp_path):
    """Jobs at or before the run's position are not run by the helper; the others are."""
    env = {"NSOPT_COMPILE_AHEAD": "1"}
    out = _run_env(tmp_path, env, _SKIPS, str(tmp_path / "marks"), mkdir="marks")
    assert out == ["exit 0 ['job2', 'job3']"], out


_DIES = textwrap.dedent("""
    import os, signal, sys, time
    from nsopt import _ahead
    a = _ahead.compile_ahead([(time.sleep, (60.0,))])
    print(a.process.pid, flush=True)
    time.sleep(1.0)                             # the helper is in its job
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)    # the run dies without running anything
    signal.raise_signal(signal.SIGINT)           # a Ctrl-C: a KeyboardInterrupt ends the run
""")


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_compile_ahead_helper_dies_with_the_run(tmp_path):
    """Ctrl-C (SIGINT to the run and the helper, as a terminal sends it to the process group) or
    SIGKILL of the run: the helper ends within a few seconds; no stray process is left."""
    import signal as _signal
    import time

    for how in ("int", "kill"):
        env = dict(os.environ, PYTHONPATH=str(ROOT), NSOPT_COMPILE_AHEAD="1",
                   NUMBA_CACHE_DIR=str(tmp_path / "cache"))
        p = subprocess.Popen([sys.executable, "-c", _DIES, how], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        pid = int(p.stdout.readline())
        if how == "int":
            time.sleep(0.5)
            os.killpg(p.pid, _signal.SIGINT)        # the terminal's Ctrl-C: the whole group
        p.wait(timeout=60)
        end = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < end:
            time.sleep(0.1)
        assert not _alive(pid), (how, p.stderr.read()[-500:])
        if how == "int":
            assert "KeyboardInterrupt" in p.stderr.read()


def test_compile_ahead_does_nothing_on_one_core_or_when_switched_off(tmp_path):
    script = ("import os, time; from nsopt import _ahead; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
              "print(_ahead.compile_ahead([(time.sleep, (0.0,))]).active)")
    assert _run_env(tmp_path, {"NSOPT_COMPILE_AHEAD": "1"}, script) == ["False"]
    script = "import time; from nsopt import _ahead; print(_ahead.compile_ahead([(time.sleep, (0.0,))]).active)"
    assert _run_env(tmp_path, {"NSOPT_COMPILE_AHEAD": "0"}, script) == ["False"]
    assert _run_env(tmp_path, {"NSOPT_COMPILE_AHEAD": "1"}, script) == ["True"]     # the control


_COMPILES = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from numba.core import event
    import nsopt
    from nsopt import generate as g
    mine = []

    class L(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            if f.__module__.startswith("nsopt."):
                mine.append(f.__qualname__)

        def on_end(self, ev):
            pass

    event.register("numba:compile", L())
    go = Path(sys.argv[1])
    while not go.exists():          # both processes start compiling at the same moment
        time.sleep(0.01)
    print(nsopt.solve(g.lcp(6, seed=1)[0], "lemke").status, " ".join(sorted(mine)))
""")


def test_two_processes_compile_each_kernel_once(tmp_path):
    """Two processes that share an empty cache and need the same kernels at the same moment: each
    kernel is compiled by one of them (the other waits on its lock and loads it), both solve."""
    import time

    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    go = tmp_path / "go"
    ps = [subprocess.Popen([sys.executable, "-c", _COMPILES, str(go)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    time.sleep(3.0)                 # both have imported nsopt
    go.touch()
    outs = [p.communicate(timeout=600) for p in ps]
    assert all(p.returncode == 0 for p in ps), [e[-1000:] for _, e in outs]
    lines = [o.strip().split(" ") for o, _ in outs]
    assert [ln[0] for ln in lines] == ["solved", "solved"], lines
    a, b = set(lines[0][1:]), set(lines[1][1:])
    assert "lemke_run" in a | b and not a & b, (a, b)
