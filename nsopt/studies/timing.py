"""In-process timing of one solve, as the benchmark scripts report it next to Siconos' driver times."""

from __future__ import annotations

import statistics
import time


def median_time(problem, method: str, *, repeat: int = 3, under: float = 1.0, **options):
    """``(solution, seconds)``: the wall time of ``nsopt.solve(problem, method, **options)``, the
    median of ``repeat`` runs when the first takes less than ``under`` seconds (one run otherwise).

    ``problem`` is a problem, or a function returning a fresh one for each run (e.g. a file loader:
    the problem's caches then start empty every time). The solution is the first run's. Warm the
    method up first (:func:`nsopt.studies.worker.warm_up`): JIT compilation is not part of a solve.
    """
    from .. import solve

    make = problem if callable(problem) else (lambda: problem)
    times, first = [], None
    for k in range(max(1, repeat)):
        p = make()
        t0 = time.perf_counter()
        s = solve(p, method=method, **options)
        times.append(time.perf_counter() - t0)
        first = first or s
        if times[0] >= under:
            break
    return first, statistics.median(times)
