"""Solver comparison studies: campaigns over problem collections, resumable results, performance
profiles (the engine of ``nsopt compare``).

A campaign runs every method on every problem and writes one folder::

    results.csv, results.parquet   one row per (problem, method, options): problem path and content
                                   hash, kind, sizes, method, source (nsopt or siconos), options, tol,
                                   status, error, nit (iterations), time, peak memory, versions, host
    records.jsonl                  the store the rows are appended to as each run finishes
    summary.csv                    per kind and method: share solved, median time, shifted geometric
                                   mean of the time ratio to the best (``shgeom_time_ratio``: 1 is
                                   the best on every problem), runs stopped at the time limit
                                   (``timeout``: statuses time_limit and timeout), crashed, errors
    profile_time.{png,svg}         Dolan-More performance profiles (x: log2 ratio to the best)
    profile_nit.{png,svg}
    history.{png,svg}              error per iteration on one problem (``history=``)
    campaign.json, logs/           the campaign's settings; the workers' stderr, the wall time of
                                   the campaign's phases (logs/timings.json)

Statuses: those of :class:`nsopt.Status` (``solved``, ``max_iter``, ``time_limit``, ...) and the
campaign's own: ``timeout`` (killed at the hard limit), ``crashed`` (the worker died: segfault,
``os._exit``, out of memory), ``load_error`` (corrupt or unsupported file), ``error`` (an exception:
bad option, backend failure), ``not_applicable`` (the method refuses this instance), ``failed``
(Siconos: info != 0 and error > tol), ``skipped`` (no such Siconos solver for the kind).

Python API::

    import nsopt.studies as st
    df = st.compare(["../shared/siconos-data/fc3d"], ["nsgs", "nsn-ac"], timeout=30, out="camp")
    fig = st.performance_profile(df, measure="time")
    st.summary(df)

Harness overhead: the workers are forked from the campaign's process (nsopt already loaded: a
worker is up in about a millisecond) and kept for the next ``compare()`` call of the process; a
worker gets its tasks in batches and goes from one to the next without waiting for the parent;
it parses each problem file once for all its methods (and keeps it for the next campaigns; each
method gets a new problem object on the same read-only arrays), and warms each method up once
(untimed); the files' kinds and hashes are kept while the files are unchanged; ``out=None`` keeps
the records in memory. While the workers run, the parent imports pandas and pyarrow for the
tables and a drawer process (forked then, and kept) imports matplotlib for the figures, which it
draws two at a time while the parent writes the tables. What remains per task is the record
built and sent (~0.1 ms) and ``nsopt.solve``'s own work outside ``solve_time`` (the error measure);
per campaign, finding the files and the DataFrame (~2 ms); per command, Python's start and imports
(``benchmarks/bench_harness.py`` measures each; ``benchmarks/README.md`` has the figures and the
floor of a command). ``df.attrs["timings"]`` and ``logs/timings.json`` give a campaign's phases.

Modules: :mod:`~nsopt.studies.files` (problem sources), :mod:`~nsopt.studies.worker` (one run),
:mod:`~nsopt.studies.runner` (local pool with hard limits, dask backend; :func:`shutdown` stops
the kept workers),
:mod:`~nsopt.studies.records` (store, resume, merge), :mod:`~nsopt.studies.profiles` (profiles,
summary), :mod:`~nsopt.studies.siconos` (Siconos through ``siconos_bench.py``),
:mod:`~nsopt.studies.campaign` (:func:`compare`), :mod:`~nsopt.studies.report` (:func:`write_report`).

A cluster of several machines: start a scheduler (``dask scheduler``) on one machine and
``dask worker tcp://SCHEDULER:8786 --nthreads 1`` on each (as many workers as cores), with nsopt
installed and the problem files at the same path everywhere (a shared file system); then
``nsopt compare PATH --scheduler tcp://SCHEDULER:8786 --out DIR``. Each dask worker thread drives its
own nsopt worker process, so timeouts and crashes are isolated as in a local run. Shards run
separately (``nsopt compare PART1 --out a`` here, ``nsopt compare PART2 --out b`` there) are combined
with ``nsopt merge ALL a b`` (or :func:`merge`), or reported together with ``nsopt report a b --out ALL``.
"""

from .campaign import compare, parse_methods
from .report import write_report
from .files import builtin_problems, find_problems, load_problem
from .profiles import performance_profile, summary
from .records import COLUMNS, Store, load_results, merge
from .runner import shutdown

__all__ = ["compare", "performance_profile", "summary", "write_report", "load_results", "merge",
           "find_problems", "builtin_problems", "load_problem", "parse_methods", "Store", "COLUMNS",
           "shutdown"]
