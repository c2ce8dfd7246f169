"""A campaign: every method on every problem, recorded as it goes, then the report (``nsopt compare``)."""

from __future__ import annotations

import importlib
import json
import pickle
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .._extras import require
from . import files, records
from .profiles import method_label, performance_profile, summary  # noqa: F401  (re-exported)
from .report import write_report  # noqa: F401  (compare writes it; nsopt.studies exports it from here)


# ------------------------------------------------------------------------------- methods
def parse_methods(spec) -> list[tuple[str, dict]]:
    """Methods with options: ``"nsgs,psor[omega=1.2,max_sweeps=3]"`` or a list of names and
    ``(name, {options})`` pairs. Option values are read as Python literals when they parse.

    Parameters
    ----------
    spec : str or iterable
        The methods, as above.

    Returns
    -------
    list of (str, dict)
        Each method's name and options.

    Raises
    ------
    OptionError
        For an entry that is not ``NAME`` or ``NAME[key=value,...]``.

    Examples
    --------
    >>> from nsopt.studies import parse_methods
    >>> parse_methods("nsgs,psor[omega=1.2,max_sweeps=3]")
    [('nsgs', {}), ('psor', {'omega': 1.2, 'max_sweeps': 3})]
    >>> parse_methods(["lemke", ("pgs", {"omega": 1.5})])
    [('lemke', {}), ('pgs', {'omega': 1.5})]
    """
    if isinstance(spec, str):
        parts, depth, cur = [], 0, ""
        for ch in spec:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        spec = [p.strip() for p in parts if p.strip()]
    out = []
    for m in spec:
        if isinstance(m, (tuple, list)):
            out.append((str(m[0]), dict(m[1])))
            continue
        mt = re.fullmatch(r"([^\[\]]+)(?:\[(.*)\])?", m)
        if not mt:
            from ..exceptions import OptionError

            raise OptionError(f"cannot read method {m!r}: expected NAME or NAME[key=value,...]")
        out.append((mt.group(1).strip(), parse_options((mt.group(2) or "").split(","))))
    return out


def parse_options(items) -> dict:
    """``["k=v", ...]`` -> dict; values as Python literals (numbers, True, None, strings)."""
    import ast

    from ..exceptions import OptionError

    opts = {}
    for it in items:
        it = it.strip()
        if not it:
            continue
        if "=" not in it:
            raise OptionError(f"option {it!r} is not of the form key=value")
        k, v = it.split("=", 1)
        try:
            opts[k.strip()] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            opts[k.strip()] = v.strip()
    return opts


def check_methods(methods) -> None:
    """Raise :class:`~nsopt.exceptions.MethodNotFound` for a name registered for no problem kind."""
    from .. import registry, solvers  # noqa: F401  (fills the registry)
    from ..exceptions import MethodNotFound

    known = {name for _, name in registry._REGISTRY} | {"auto"}
    bad = [name for name, _ in methods if name not in known]
    if bad:
        raise MethodNotFound(f"unknown method(s) {', '.join(map(repr, bad))}; valid methods: "
                             f"{', '.join(sorted(known))}")


def import_plugins(plugins) -> None:
    """Import the plugin modules (they may register test or user methods) in this process."""
    for mod in plugins:
        importlib.import_module(mod)


# ------------------------------------------------------------------------------- tasks
def _applies(kind, method) -> bool:
    from .. import registry

    return kind is None or method == "auto" or registry.has(kind, method)


def _options_key(opts: dict) -> str:
    return json.dumps(opts, sort_keys=True, default=str)


def build_tasks(refs, methods, *, tol, max_iter, timeout, history=False, warmup=True, repeat=1,
                repeat_under=1.0):
    """One task per (problem, method, options) whose method exists for the problem's kind, and the
    references of problems that no method applies to."""
    tasks, none_apply = [], []
    keys = [_options_key(o) for _, o in methods]
    common = {"tol": float(tol), "max_iter": max_iter, "timeout": timeout, "history": history,
              "warmup": warmup, "repeat": repeat, "repeat_under": repeat_under}
    by_kind = {}
    for ref, kind, h in refs:
        if kind not in by_kind:
            by_kind[kind] = [(m, o, k) for (m, o), k in zip(methods, keys) if _applies(kind, m)]
        mine = by_kind[kind]
        if not mine:
            none_apply.append((ref, kind))
        for m, o, k in mine:
            tasks.append({"problem": ref, "problem_hash": h, "kind": kind, "method": m, "options": o,
                          "options_key": k, **common})
    return tasks, none_apply


def siconos_tasks(refs, labels, missing, *, tol, max_iter, timeout, tool, python, repeat_under=0.0):
    """One task per problem with the Siconos labels it still misses (``missing(key)``)."""
    from .siconos import hard_limit

    out = []
    for ref, kind, h in refs:
        if kind is None:      # unreadable file: its nsopt rows say why
            continue
        todo = [lab for lab in labels
                if missing(records.key({"problem": ref, "problem_hash": h, "method": f"siconos:{lab}",
                                        "options": "{}", "tol": tol}))]
        if todo:
            out.append({"problem": ref, "problem_hash": h, "kind": kind, "method": "siconos",
                        "source": "siconos", "siconos_solvers": todo, "options": {},
                        "options_key": "{}", "tol": float(tol), "max_iter": max_iter,
                        "timeout": timeout, "tool": str(tool), "python": python,
                        "repeat_under": repeat_under,
                        "hard_limit": hard_limit(len(todo), timeout)})
    return out


def _pickled_refs(problems, folder: Path) -> list[str]:
    d = folder / "problems"
    d.mkdir(parents=True, exist_ok=True)
    refs = []
    for i, p in enumerate(problems):
        path = d / f"{i:05d}-{p.kind}.pkl"
        data = pickle.dumps(p, protocol=4)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        refs.append(str(path))
    return refs


def resolve_problems(problems, folder: Path, warn=print) -> list[str]:
    """Problem references from paths (files, folders), problem objects, or None (built-in set)."""
    if problems is None:
        return files.builtin_problems()
    if isinstance(problems, (str, Path)) or hasattr(problems, "kind"):
        problems = [problems]
    problems = list(problems)
    objs = [p for p in problems if hasattr(p, "kind")]
    paths = [p for p in problems if not hasattr(p, "kind")]
    refs = [str(p) for p in paths if str(p).startswith(files.GENERATED)]
    found, warns = files.find_problems([p for p in paths if not str(p).startswith(files.GENERATED)])
    for w in warns:
        warn(f"warning: {w}")
    return refs + found + (_pickled_refs(objs, folder) if objs else [])


# ------------------------------------------------------------------------------- the campaign
def compare(problems=None, methods=("auto",), *, tol: float = 1e-8, max_iter: int | None = None,
            timeout: float | None = None, jobs: int = 1, out=None, siconos=None,
            siconos_bench=None, siconos_python=None, scheduler: str | None = None, plugins=(),
            history: str | None = None, warmup: bool = True, progress: bool = True, report: bool = True,
            retry=(), log=None, repeat: int = 1, repeat_under: float = 1.0):
    """Run every method on every problem and return the results table (one row per problem, method,
    options).

    Parameters
    ----------
    problems : files and folders (walked for ``.dat``, ``.hdf5``, ``.h5``), nsopt problem objects, or
        None for the built-in generated set (:func:`nsopt.studies.files.builtin_problems`).
    methods : names, ``"nsgs,psor[omega=1.2]"``, or ``(name, options)`` pairs; a method runs on the
        problems of the kinds it is registered for.
    tol : target of nsopt's error measure (``solved`` iff error <= tol).
    max_iter : iteration budget of every method (None: each method's default).
    timeout : seconds per solve, with the rule of ``nsopt.solve``'s ``time_limit`` (a number >= 0;
        None or inf: none): the soft ``time_limit`` of the method, and the hard limit (plus 10 %, at
        least 1 s) after which the worker is killed and the row says ``timeout``.
    jobs : worker processes (one BLAS thread each; kept for the next call of this process, see
        :mod:`nsopt.studies.runner`).
    out : campaign folder (results, profiles, summary); re-running with the same folder does only
        what is missing. None: only the DataFrame is returned (the records are kept in memory;
        no file, table or figure is written, ``history`` is not run).
    siconos : Siconos solver labels (``["NSGS", "PROX"]`` or ``"NSGS,PROX"``) run through
        ``siconos_bench.py`` (see :mod:`nsopt.studies.siconos`); skipped, with the reason, when
        Siconos is not available.
    scheduler : None (local processes), ``"local"`` (a dask ``LocalCluster`` on loopback) or the
        address of a dask scheduler.
    plugins : modules imported by the campaign and by every worker before solving (e.g. modules that
        register extra methods with ``@nsopt.registry.register``).
    history : a problem (file name or a part of its path) whose error history per iteration is
        recorded for every nsopt method and plotted (``history.png``).
    retry : statuses (e.g. ``("error", "crashed")``) whose stored runs are done again on resume.
    repeat, repeat_under : a solve that takes less than ``repeat_under`` seconds is run ``repeat``
        times (each on a fresh copy of the problem) and ``time`` is the median (``runs``: how many);
        Siconos' rows likewise (the tool's median of 3). For the short solves of benchmarks.
    log : ``log(message)`` for warnings and notes (default: print to stderr).

    Returns
    -------
    pandas.DataFrame
        The rows of the campaign folder (:data:`nsopt.studies.records.COLUMNS`);
        ``df.attrs["timings"]``: the wall time of the campaign's phases in seconds (``problems``:
        finding, hashing them; ``store``; ``run``; ``export``: the tables; ``frame``; ``report``:
        summary and figures; ``total``), also written to ``logs/timings.json``.

    Examples
    --------
    Two methods on one problem, nothing written (``out=None``):

    >>> import nsopt, nsopt.studies
    >>> p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    >>> df = nsopt.studies.compare([p], methods=["lemke", "pgs"], progress=False, report=False,
    ...                            warmup=False)
    >>> print(df[["method", "status"]].to_string(index=False))
    method status
     lemke solved
       pgs solved
    """
    require("studies", "nsopt.studies.compare()")
    from ..monitor import check_max_iter, check_time_limit, check_tol

    clock = _Clock()
    log = log or (lambda m: print(m, file=sys.stderr))
    tol = check_tol(tol)
    max_iter = check_max_iter(max_iter)
    timeout = check_time_limit(timeout, "timeout")     # the rule of solve's time_limit: >= 0, None/inf: none
    import_plugins(plugins)
    methods = parse_methods(methods)
    check_methods(methods)
    labels = siconos.split(",") if isinstance(siconos, str) else list(siconos or [])
    labels = [s.strip() for s in labels if s.strip()]

    tmp = None
    folder = None if out is None else Path(out)
    try:
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        elif problems is not None and any(hasattr(p, "kind") for p in
                                          ([problems] if hasattr(problems, "kind") else
                                           [] if isinstance(problems, (str, Path)) else problems)):
            tmp = Path(tempfile.mkdtemp(prefix="nsopt_campaign_"))   # the pickles of the objects
        refs = resolve_problems(problems, folder or tmp, warn=log)
        described = [files.describe(r) for r in refs]
        clock("problems")
        with records.Store(folder) as store:     # folder None: in memory only
            tasks, none_apply = build_tasks(described, methods, tol=tol, max_iter=max_iter,
                                            timeout=timeout, warmup=warmup, repeat=repeat,
                                            repeat_under=repeat_under)
            if none_apply:
                log(f"note: {len(none_apply)} problem(s) of kinds none of the methods applies to "
                    f"({', '.join(sorted({str(k) for _, k in none_apply}))}) are not run")
            retry = set(retry.split(",") if isinstance(retry, str) else retry)
            stored = {records.key(r): r.get("status") for r in store.records}

            def missing(k):
                return k not in stored or stored[k] in retry

            todo = [t for t in tasks if not stored or missing(records.key(t | {"options": t["options_key"]}))]
            if labels:
                from . import siconos as sic

                why = sic.unavailable(siconos_bench, siconos_python)
                if why:
                    log(f"Siconos skipped: {why}")
                else:
                    tool = sic.find_tool(siconos_bench)
                    todo += siconos_tasks(described, labels, missing, tol=tol, max_iter=max_iter,
                                          timeout=timeout, tool=tool,
                                          python=sic.find_python(tool, siconos_python),
                                          repeat_under=repeat_under if repeat > 1 else 0.0)
            done = len(tasks) - sum(1 for t in todo if t.get("source") != "siconos")
            if done:
                log(f"resuming {folder}: {done} run(s) already recorded, {len(todo)} task(s) to do")
            if folder is not None:
                _write_meta(folder, problems, methods, tol, max_iter, timeout, labels, history)
            clock("store")
            drawer = _run(todo, store, jobs=jobs, scheduler=scheduler, plugins=plugins,
                          log_dir=None if folder is None else folder / "logs", progress=progress,
                          replace=bool(retry), prefetch=folder is not None and report)
            clock("run")
            if history and folder is not None:   # (out=None: no file to plot it in)
                _history(described, methods, history, folder, tol=tol, max_iter=max_iter,
                         timeout=timeout, jobs=jobs, plugins=plugins, log=log)
                clock("history")
            if folder is not None:
                store.export()
                clock("export")
            df = store.frame()
            clock("frame")
        if report and folder is not None:
            write_report(folder, df, drawer)
            clock("report")
        df.attrs["timings"] = clock.phases
        if folder is not None:
            clock.write(folder / "logs" / "timings.json")
        return df
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


class _Clock:
    """The wall time of a campaign's phases (``df.attrs["timings"]``, ``logs/timings.json``)."""

    def __init__(self):
        self.t0 = self.t = time.perf_counter()
        self.phases = {}

    def __call__(self, phase):
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self.t
        self.phases["total"] = now - self.t0
        self.t = now

    def write(self, path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.phases) + "\n")
        except OSError:
            pass


def _write_meta(folder, problems, methods, tol, max_iter, timeout, labels, history):
    if problems is not None and not isinstance(problems, (list, tuple)):
        problems = [problems]
    meta = {"problems": None if problems is None else [str(p) for p in problems],
            "methods": [[m, o] for m, o in methods], "tol": tol, "max_iter": max_iter,
            "timeout": timeout, "siconos": labels, "history": history}
    (folder / "campaign.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")


TABLE_MODULES = ("pandas", "pyarrow.parquet")


def _run(tasks, store, *, jobs, scheduler, plugins, log_dir, progress, on_result=None, replace=False,
         prefetch=False):
    """Run tasks through the chosen backend, adding each record to ``store`` as it finishes.

    ``prefetch``: once the workers are started, get the kept :class:`~nsopt.studies.runner.Drawer`
    for the figures, or fork one (returned; None otherwise) and import what the tables need (:data:`TABLE_MODULES`)
    in a thread of this process while the workers run (matplotlib too, and a first figure drawn,
    when there is no drawer)."""
    from .report import DRAW_MODULES, Drawer
    from .runner import join_prefetch, run_dask, run_local

    drawer = [None]

    if not tasks:
        return None
    for i, t in enumerate(tasks):
        t["id"] = i
    bar = [None]

    def make_bar():
        if progress and bar[0] is None:
            from tqdm.auto import tqdm

            class Bar(tqdm):
                monitor_interval = 0    # no monitor thread: workers are forked from a single thread

            bar[0] = Bar(total=len(tasks), unit="run", dynamic_ncols=True, file=sys.stderr,
                         desc="compare")

    def dispatch(task):
        if bar[0] is not None:
            bar[0].set_postfix_str(f"{files.short_name(task['problem'])} {task['method']}"[:60],
                                   refresh=False)

    def on_start():
        """Once the workers are forked (they start on their tasks): the drawer, the imports in the
        background, and the progress bar (tqdm's import, ~0.07 s, no longer before the run)."""
        from . import runner
        from .profiles import warm_up_drawing

        if not prefetch:
            make_bar()
            return
        then = None
        todo = [m for m in TABLE_MODULES if m not in sys.modules]
        drawer[0] = Drawer.get()
        if drawer[0] is None:
            todo += [m for m in DRAW_MODULES if m not in sys.modules]
            then = warm_up_drawing
        if todo:
            runner.prefetch(todo, then=then)
        make_bar()

    if scheduler:
        make_bar()
        gen = run_dask(tasks, scheduler, jobs=jobs, plugins=plugins, on_dispatch=dispatch)
    else:
        gen = run_local(tasks, jobs=jobs, plugins=plugins, log_dir=log_dir, on_dispatch=dispatch,
                        on_start=on_start)
    try:
        for task, recs in gen:
            for r in recs:
                if on_result is not None:
                    on_result(r)
                else:
                    store.add(r, replace=replace)
            if bar[0] is not None:
                bar[0].update(1)
    finally:
        gen.close()
        join_prefetch()
        if bar[0] is not None:
            bar[0].close()
    return drawer[0]


def _history(described, methods, pattern, folder, *, tol, max_iter, timeout, jobs, plugins, log):
    """Re-run the nsopt methods on the problem matching ``pattern`` with ``history=True``."""
    match = [d for d in described if d[0] == pattern or files.short_name(d[0]) == pattern]
    match = match or [d for d in described if pattern in d[0]]
    if not match:
        log(f"warning: --history {pattern!r} matches no problem of the campaign")
        return
    if len(match) > 1:
        log(f"note: --history {pattern!r} matches {len(match)} problems; plotting {match[0][0]}")
    tasks, _ = build_tasks(match[:1], methods, tol=tol, max_iter=max_iter, timeout=timeout,
                           history=True)
    hist = {}

    def keep(r):
        if r.get("history"):
            hist[method_label(r["method"], r.get("options"))] = r["history"]

    _run(tasks, None, jobs=jobs, scheduler=None, plugins=plugins, log_dir=folder / "logs",
         progress=False, on_result=keep)
    (folder / "history.json").write_text(json.dumps({"problem": match[0][0], "tol": tol,
                                                     "histories": hist}) + "\n")
