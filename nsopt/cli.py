"""The ``nsopt`` command line (``python -m nsopt`` is the same program).

Commands::

    nsopt [PATH ...]                      the demo table: every applicable method on generated problems
                                          (and on the files given), one row per solve
    nsopt info FILE|FOLDER ...            kind, sizes, sparsity, mu range, the methods that apply
    nsopt solve FILE --method M           solve one problem; --out writes the solution
    nsopt compare [PATH ...] --methods M1,M2 --out DIR
                                          a campaign: results table, summary, performance profiles
    nsopt report DIR [DIR ...]            redraw summary and profiles from stored results
    nsopt merge OUT DIR ...               merge the results of campaign shards into OUT

Exit codes: 0 when everything ran (demo, info, solve: and every solve reached ``tol``; compare: every
run was done, whatever its status), 1 when some load or solve failed (compare: some rows are
``load_error``, ``error`` or ``crashed``), 2 for usage errors (unknown method, bad option value,
unwritable output, missing file).

Timings exclude JIT compilation: nsopt's numba kernels are compiled with ``cache=True`` (an on-disk
cache), and before its first timed solve of a (kind, method, storage) the demo, ``solve`` and every
campaign worker warm the method up, untimed, on a tiny generated problem of the same kind and on a
copy of the problem (see :mod:`nsopt.studies.worker`).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

COMMANDS = ("info", "solve", "compare", "report", "merge")
WARMUP_NOTE = ("times exclude JIT compilation: numba kernels are cached on disk (cache=True) and each "
               "(kind, method) is warmed up once, untimed, before it is timed")


class UsageError(Exception):
    """A usage error: printed as ``nsopt: error: ...``, exit code 2."""


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, except the empty ones (None, False, [])."""

    def _get_help_string(self, action):
        if action.default in (None, False, []) or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def _methods_list(s):
    return [m for m in s.split(",") if m.strip()]


def _seconds(s):
    """A time budget on the command line: the rule of ``nsopt.solve``'s ``time_limit`` and the
    campaigns' ``timeout`` (:func:`nsopt.monitor.check_time_limit`: >= 0 seconds, inf: none)."""
    from .exceptions import OptionError
    from .monitor import check_time_limit

    try:
        return check_time_limit(float(s))
    except (ValueError, OptionError):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0 (inf: none), got {s}") from None


def _jobs(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {s}")
    return v


def _fit(name: str, width: int) -> str:
    """``name`` cut in the middle with '…' to at most ``width`` characters."""
    if len(name) <= width:
        return name
    keep = width - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2:]


def _check_tol(tol):
    from .exceptions import OptionError
    from .solve import check_tol

    try:
        return check_tol(tol)
    except OptionError as e:
        raise UsageError(f"--tol: {e}") from None


def _check_known_methods(names):
    from .exceptions import MethodNotFound
    from .studies.campaign import check_methods

    try:
        check_methods([(m, {}) for m in names])
    except MethodNotFound as e:
        raise UsageError(f"--methods: {e}") from None


def _command_hint(word: str) -> str:
    """For a missing path that may be a mistyped command: the commands, and the nearest one."""
    import difflib

    if any(c in word for c in "/\\.") or word.startswith("-"):
        return ""
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.5)
    return (f" (and not a command: {', '.join(COMMANDS)}" + (f"; did you mean 'nsopt {near[0]}'?)" if near else
                                                                ")"))


def _check_method_options(methods):
    """A method spec's option values, checked before the campaign (``nsgs[omega=abc]``: a usage error,
    not a row of errors per problem): each method with options is called on a small generated
    problem of every kind it is registered for that knows these option names (one iteration); an
    OptionError on all of them is the answer. Names no kind of the method knows are one too."""
    from . import registry, solve, solvers  # noqa: F401  (fills the registry)
    from .exceptions import NsoptError, OptionError

    problems = {}
    for _, p in demo_problems():
        problems.setdefault(p.kind, p)
    for name, opts in methods:
        if not opts:
            continue
        spec = f"{name}[{','.join(f'{k}={v!r}' for k, v in opts.items())}]"
        kinds = [k for (k, n) in registry._REGISTRY if n == name] if name != "auto" else list(problems)
        def takes(k, name=name, opts=opts):     # (nsopt 0.1's names of renamed options count: registry.renamed)
            own = registry._REGISTRY[(k, name)].options
            return set(registry.renamed(opts, own, name, warn=False)) <= set(own) | set(registry.COMMON)

        known = [k for k in kinds if name == "auto" or takes(k)]
        if not known:
            valid = sorted({o for k in kinds for o in registry._REGISTRY[(k, name)].options})
            raise UsageError(f"--methods {spec}: unknown option(s) {sorted(opts)} for {name} (its options: "
                             f"{', '.join(valid) or 'none'}; and the common ones)")
        errors, accepted = [], False
        for k in (k for k in known if k in problems):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    solve(problems[k], method=name, max_iter=1, **opts)
            except OptionError as e:
                errors.append(e)
                continue
            except NsoptError:
                pass          # not applicable to this small problem: not an option fault
            accepted = True
            break
        if errors and not accepted:
            raise UsageError(f"--methods {spec}: {errors[0]}")


# ------------------------------------------------------------------------------------ demo
def demo_problems():
    """A handful of generated problems, one or two per kind: (name, problem)."""
    from . import generate as g
    from .problems import AVI, Equality, GenericMechanical

    rng = np.random.default_rng(7)
    probs = [("lcp-spd-20", g.lcp(20, seed=1)[0]),
             ("lcp-P-20 (nonsym)", g.lcp(20, seed=2, matrix="p")[0]),
             ("mlcp-3+6", g.mlcp(3, 6, seed=3)[0]),
             ("relay-8", g.relay(8, seed=4)[0]),
             ("equality-5", Equality(g.spd_matrix(5, rng), rng.standard_normal(5))),
             ("fc2d-6c", g.friction_contact(6, dim=2, seed=5)[0]),
             ("fc3d-8c", g.friction_contact(8, dim=3, seed=6)[0]),
             ("gfc3d-4c", g.global_friction_contact(4, 12, seed=7)[0])]
    M = g.spd_matrix(4, rng)
    probs.append(("avi-box-4", AVI(M, rng.standard_normal(4), np.vstack([np.eye(4), -np.eye(4)]),
                                   -np.ones(8))))
    W = g.spd_matrix(8, rng)
    blocks = [("equality", 1), ("lcp", 1), ("fc3d", 3, 0.3), ("fc3d", 3, 0.5)]
    probs.append(("gmp-eq+lcp+2fc3d", GenericMechanical(W, rng.standard_normal(8), blocks)))
    return probs


def _file_problems(paths, warn):
    from . import io
    from .studies.files import find_problems
    from .studies.records import printable

    found, warns = find_problems(paths)
    for w in warns:
        warn(w)
    for f in found:
        try:
            yield printable(Path(f).name), io.load(f)
        except Exception as e:  # noqa: BLE001  a bad file is reported as a row, the run goes on
            yield printable(Path(f).name), e


def _warn(msg):
    print(f"nsopt: warning: {msg}", file=sys.stderr)


def demo(argv) -> int:
    from . import methods, solve
    from .studies.worker import warm_up

    ap = argparse.ArgumentParser(
        prog="nsopt", formatter_class=_Formatter,
        description="Solve problems with every applicable method and print one row per solve.\n\n"
                    "Without PATH it solves problems that nsopt generates (with known solutions); files "
                    "(Siconos .dat, FCLIB .hdf5/.h5) and folders (walked recursively) are added.\n"
                    "Other commands: " + ", ".join(COMMANDS) + " (nsopt COMMAND --help).",
        epilog=WARMUP_NOTE + ".\nExit codes: 0 all solved, 1 some load or solve failed, 2 usage error.")
    ap.add_argument("paths", nargs="*", metavar="PATH",
                    help="problem files or folders (Siconos .dat, FCLIB .hdf5/.h5)")
    ap.add_argument("--tol", type=float, default=1e-8, help="target of the error measure")
    ap.add_argument("--max-iter", type=int, default=None, help="iteration budget (None: the method's)")
    ap.add_argument("--methods", type=_methods_list, default=None,
                    help="only these methods, comma-separated (e.g. auto,nsgs); default: all that apply")
    ap.add_argument("--no-demo", action="store_true", help="skip the generated problems")
    ap.add_argument("--csv", help="also append the rows to this CSV file (written row by row)")
    args = ap.parse_args(argv)
    tol = _check_tol(args.tol)
    if args.methods:
        _check_known_methods(args.methods)
    if args.no_demo and not args.paths:
        raise UsageError("--no-demo without PATH: nothing to solve")
    for p in args.paths:
        if not Path(p).exists():
            raise UsageError(f"no such file or folder: {p}" + _command_hint(p))
    out = None
    if args.csv:
        try:
            out = open(args.csv, "a")
        except OSError as e:
            raise UsageError(f"cannot write --csv {args.csv}: {e.strerror or e}") from None

    items = [] if args.no_demo else demo_problems()
    items += list(_file_problems(args.paths, _warn))
    w = min(max([len(n) for n, _ in items] + [7]), 40)
    head = f"{'problem':<{w}} {'kind':<8} {'method':<14} {'status':<15} {'error':>10} {'nit':>7} {'time':>11}"
    print(head)
    print("-" * len(head), flush=True)
    n_ok = n_all = n_bad = 0
    try:
        for name, prob in items:
            shown = _fit(name, w)
            if isinstance(prob, Exception):
                n_bad += 1
                print(f"{shown:<{w}} {'?':<8} {'-':<14} {'load error':<15} {type(prob).__name__}: {prob}",
                      flush=True)
                continue
            for m in methods(prob):
                if args.methods and m not in args.methods:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    warm_up(prob, {"method": m, "tol": tol, "options_key": "{}"})
                    t0 = time.perf_counter()
                    msg = ""
                    try:
                        s = solve(prob, method=m, tol=tol, max_iter=args.max_iter)
                        row = (s.status.value, f"{s.error:10.2e}", f"{s.nit:7d}")
                        n_ok += s.success
                    except Exception as e:  # noqa: BLE001  NotApplicable, OptionError: shown, not fatal
                        row = ("n/a", f"{'-':>10}", f"{'-':>7}")
                        msg = f"  {type(e).__name__}: {e}"
                    dt = time.perf_counter() - t0
                n_all += 1
                print(f"{shown:<{w}} {prob.kind:<8} {_fit(m, 14):<14} {row[0]:<15} {row[1]} {row[2]} "
                      f"{dt * 1e3:9.2f}ms{msg}", flush=True)
                if out:
                    out.write(",".join([name.replace(",", ";"), prob.kind, m, row[0], row[1].strip(),
                                        row[2].strip(), f"{dt:.6g}", msg.strip().replace(",", ";")]) + "\n")
                    out.flush()
    finally:
        if out:
            out.close()
    if n_all == 0 and n_bad == 0:
        _warn("0 solves: no problem, or no method of --methods applies to the problems")
    print(f"\n{n_ok} of {n_all} solves reached error <= {tol:g} (error = the Siconos measure of each "
          f"kind); {n_bad} file(s) could not be loaded.\n{WARMUP_NOTE}.")
    return 0 if n_ok == n_all and n_bad == 0 and n_all > 0 else 1


# ------------------------------------------------------------------------------------ info
def info(argv) -> int:
    from . import io, methods
    from .problems._base import nnz
    from .studies.files import find_problems
    from .studies.records import printable

    ap = argparse.ArgumentParser(prog="nsopt info", formatter_class=_Formatter,
                                 description="Kind, sizes, sparsity, mu range and applicable methods of "
                                             "problem files.")
    ap.add_argument("paths", nargs="+", metavar="FILE", help="problem files or folders")
    args = ap.parse_args(argv)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    found, warns = find_problems(args.paths)
    for w in warns:
        _warn(w)
    if not found:
        raise UsageError("no problem file found in " + ", ".join(args.paths))
    bad = 0
    for f in found:
        try:
            p = io.load(f)
        except Exception as e:  # noqa: BLE001
            bad += 1
            print(f"{printable(f)}\n  load error: {type(e).__name__}: {printable(str(e))}\n")
            continue
        print(f"{printable(f)}\n  kind: {p.kind} ({type(p).__name__})")
        sizes = {k: getattr(p, k) for k in ("size", "nc", "dim", "n", "m", "ndof") if
                 isinstance(getattr(p, k, None), (int, np.integer))}
        print("  sizes: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
        import scipy.sparse as sp

        for name, A in vars(p).items():
            if (sp.issparse(A) or (isinstance(A, np.ndarray) and A.ndim == 2)) and A.size:
                total = A.shape[0] * A.shape[1]
                print(f"  {name}: {A.shape[0]}x{A.shape[1]} {'sparse' if sp.issparse(A) else 'dense'}, "
                      f"{nnz(A)} nonzeros ({100.0 * nnz(A) / total:.3g} %)")
        mu = getattr(p, "mu", None)
        if mu is not None and np.size(mu):
            print(f"  mu: [{np.min(mu):g}, {np.max(mu):g}]")
        print("  methods: " + ", ".join(methods(p)) + "\n")
    return 1 if bad else 0


# ------------------------------------------------------------------------------------ solve
def solve_cmd(argv) -> int:
    from . import io, solve
    from .exceptions import NsoptError
    from .studies.campaign import parse_options
    from .studies.worker import warm_up

    ap = argparse.ArgumentParser(prog="nsopt solve", formatter_class=_Formatter,
                                 description="Solve one problem file; print status, error, iterations (nit), "
                                             "time.", epilog=WARMUP_NOTE + ".")
    ap.add_argument("file", metavar="FILE")
    ap.add_argument("--method", default="auto", help="a method name (nsopt info FILE lists them)")
    ap.add_argument("--tol", type=float, default=1e-8, help="target of the error measure")
    ap.add_argument("--max-iter", type=int, default=None, help="iteration budget (None: the method's)")
    ap.add_argument("--time-limit", type=_seconds, default=None, help="wall-clock budget, seconds (>= 0)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a method option (repeatable), e.g. --option omega=1.2")
    ap.add_argument("--out", help="write the solution: .npz (variables by name), or an FCLIB file with the "
                                  "problem and its /solution group (.hdf5/.h5 names, and any name but "
                                  ".npz for FCLIB input; friction contact only)")
    args = ap.parse_args(argv)
    tol = _check_tol(args.tol)
    try:
        opts = parse_options(args.option)
    except NsoptError as e:
        raise UsageError(str(e)) from None
    if not Path(args.file).is_file():
        raise UsageError(f"no such file: {args.file}")
    try:
        p = io.load(args.file)
    except Exception as e:  # noqa: BLE001
        print(f"load error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up(p, {"method": args.method, "tol": tol, "options": opts, "options_key": repr(opts)})
        try:
            s = solve(p, method=args.method, tol=tol, max_iter=args.max_iter,
                      time_limit=args.time_limit, **opts)
        except NsoptError as e:
            raise UsageError(str(e)) from None
    print(f"problem   {args.file} ({p.kind}, size {p.size})\nmethod    {s.method}\n"
          f"status    {s.status.value}\nerror     {s.error:.3e} (tol {tol:g})\n"
          f"nit       {s.nit}\ntime      {s.solve_time * 1e3:.3f} ms" +
          (f"\nmessage   {s.message}" if s.message else ""))
    if args.out:
        try:
            fclib_in = args.file.lower().endswith((".hdf5", ".h5"))
            if args.out.lower().endswith((".hdf5", ".h5")) or (fclib_in and not args.out.endswith(".npz")):
                io.write_fclib(p, args.out, solution=s.variables())
            else:
                np.savez(args.out, **s.variables())
        except (OSError, TypeError) as e:
            raise UsageError(f"cannot write --out {args.out}: {e}") from None
        print(f"solution  {args.out}")
    return 0 if s.success else 1


# ------------------------------------------------------------------------------------ compare
_FAILED_TO_RUN = ("load_error", "error", "crashed")


def _print_summary(df, folder):
    from .studies import summary

    s = df.attrs.get("summary")
    s = summary(df) if s is None else s
    if len(s):
        cols = ["kind", "method", "problems", "solved", "median_time", "shgeom_time_ratio", "timeout",
                "crashed"]
        with __import__("pandas").option_context("display.width", 160, "display.max_rows", 200):
            print(s[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"\nresults: {folder}/results.csv, results.parquet; summary.csv; profile_time.png, "
          f"profile_nit.png (+ .svg)")


def compare_cmd(argv) -> int:
    from .exceptions import NsoptError
    from .studies import compare

    ap = argparse.ArgumentParser(
        prog="nsopt compare", formatter_class=_Formatter,
        description="Run every method on every problem: a resumable campaign that writes the results "
                    "table, the summary and performance profiles to --out. Without PATH: nsopt's "
                    "built-in generated set. Re-running the same command redoes only what is missing.",
        epilog="Method options: --methods 'nsgs,psor[omega=1.2]'. Cluster: --scheduler tcp://HOST:8786 "
               "(see nsopt.studies). " + WARMUP_NOTE + ".")
    ap.add_argument("paths", nargs="*", metavar="PATH", help="problem files or folders (walked)")
    ap.add_argument("--methods", required=True, help="comma-separated methods, e.g. nsgs,nsn-ac")
    ap.add_argument("--tol", type=float, default=1e-8, help="target of the error measure")
    ap.add_argument("--max-iter", type=int, default=None, help="iteration budget (None: each method's)")
    ap.add_argument("--timeout", type=_seconds, default=None,
                    help="seconds per solve, >= 0 (soft time_limit; the worker is killed 10%% later)")
    ap.add_argument("--jobs", type=_jobs, default=1, help="worker processes")
    ap.add_argument("--out", default="nsopt-campaign", help="campaign folder")
    ap.add_argument("--siconos", default=None, metavar="SOLVER,...",
                    help="also run these Siconos solvers (e.g. NSGS,NSN_AC,PROX)")
    ap.add_argument("--siconos-bench", default=None, metavar="PATH",
                    help="siconos_bench.py (default: $NSOPT_SICONOS_BENCH, else "
                         "../shared/tools/siconos_bench.py from the project root)")
    ap.add_argument("--siconos-python", default=None, metavar="PYTHON",
                    help="interpreter with siconos.numerics (default: $NSOPT_SICONOS_PYTHON, else the "
                         "tool's #! line)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS|local",
                    help="run on dask.distributed: a scheduler address, or 'local' for a LocalCluster")
    ap.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                    help="module imported by the campaign and every worker (e.g. to register methods)")
    ap.add_argument("--history", default=None, metavar="PROBLEM",
                    help="plot the error per iteration of every method on this problem (file name)")
    ap.add_argument("--retry", default="", metavar="STATUS,...",
                    help="on resume, redo the runs stored with these statuses (e.g. error,crashed)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run a solve faster than 1 s this many times and record the median time")
    ap.add_argument("--no-warmup", action="store_true", help="time the first call too (JIT included)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    tol = _check_tol(args.tol)
    try:
        from .studies.campaign import import_plugins, parse_methods

        import_plugins(args.plugin)
        methods = parse_methods(args.methods)
    except ImportError as e:
        raise UsageError(f"--plugin: {e}") from None
    except NsoptError as e:
        raise UsageError(f"--methods: {e}") from None
    _check_known_methods([m for m, _ in methods])
    _check_method_options(methods)
    for p in args.paths:
        if not Path(p).exists():
            raise UsageError(f"no such file or folder: {p}")
    try:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / ".write-test").touch()
        (Path(args.out) / ".write-test").unlink()
    except OSError as e:
        raise UsageError(f"cannot write --out {args.out}: {e.strerror or e}") from None
    try:
        df = compare(args.paths or None, methods, tol=tol, max_iter=args.max_iter, timeout=args.timeout,
                     jobs=args.jobs, out=args.out, siconos=args.siconos, siconos_bench=args.siconos_bench,
                     siconos_python=args.siconos_python, scheduler=args.scheduler, plugins=args.plugin,
                     history=args.history, warmup=not args.no_warmup, repeat=max(1, args.repeat),
                     retry=[s for s in args.retry.split(",") if s], progress=not args.no_progress,
                     log=lambda m: print(f"nsopt: {m}", file=sys.stderr))
    except NsoptError as e:
        raise UsageError(str(e)) from None
    if not len(df):
        _warn("no run: no problem found, or no method applies to the problems")
        return 1
    _print_summary(df, args.out)
    bad = df[df["status"].isin(_FAILED_TO_RUN)]
    if len(bad):
        print(f"{len(bad)} run(s) could not be done: " +
              ", ".join(f"{k} {v}" for k, v in bad["status"].value_counts().items()))
    return 1 if len(bad) else 0


def report_cmd(argv) -> int:
    from .studies import load_results, merge, write_report

    ap = argparse.ArgumentParser(prog="nsopt report", formatter_class=_Formatter,
                                 description="Redraw summary.csv and the profiles from stored results "
                                             "(no solving). Several folders: their rows merged into --out.")
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="campaign folders")
    ap.add_argument("--out", default=None, help="folder of the merged report (needed for several DIRs)")
    args = ap.parse_args(argv)
    for d in args.dirs:
        if not (Path(d) / "records.jsonl").is_file():
            raise UsageError(f"{d}: not a campaign folder (no records.jsonl)")
    if len(args.dirs) > 1 or args.out:
        if not args.out:
            raise UsageError("several DIRs: give --out for the merged report")
        merge(args.out, *args.dirs)
        folder = args.out
    else:
        folder = args.dirs[0]
    df = load_results(folder)
    write_report(folder, df)
    _print_summary(df, folder)
    return 0


def merge_cmd(argv) -> int:
    from .studies import merge, write_report

    ap = argparse.ArgumentParser(prog="nsopt merge", formatter_class=_Formatter,
                                 description="Merge campaign shards into OUT (each row once) and redraw "
                                             "its report.")
    ap.add_argument("out", metavar="OUT")
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    args = ap.parse_args(argv)
    for d in args.dirs:
        if not (Path(d) / "records.jsonl").is_file():
            raise UsageError(f"{d}: not a campaign folder (no records.jsonl)")
    n = merge(args.out, *args.dirs)
    write_report(args.out)
    print(f"{n} row(s) added to {args.out}")
    return 0


def main(argv=None) -> int:
    """Entry point of ``nsopt`` and ``python -m nsopt``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:   # a file name that is not UTF-8 (surrogate escapes) is shown escaped, not a UnicodeEncodeError
        sys.stdout.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError):
        pass
    handlers = {"info": info, "solve": solve_cmd, "compare": compare_cmd, "report": report_cmd,
                "merge": merge_cmd}
    cmd = argv[0] if argv and argv[0] in handlers else None
    try:
        return handlers[cmd](argv[1:]) if cmd else demo(argv)
    except UsageError as e:
        prog = "nsopt" + (f" {cmd}" if cmd else "")
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nnsopt: interrupted (results recorded so far are kept; re-run to resume)", file=sys.stderr)
        return 130
    except SystemExit as e:   # argparse: --help (0) and usage errors (2)
        return e.code if isinstance(e.code, int) else 2
