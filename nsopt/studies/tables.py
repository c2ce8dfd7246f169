"""Per-problem tables of a campaign's results: methods side by side, and time ratios between two of
them (what the benchmark scripts print next to Siconos' figures)."""

from __future__ import annotations

import math

from .files import short_name
from .profiles import method_label

SOLVED = "solved"


def _labelled(df):
    df = df.copy()
    df["label"] = [method_label(m, o) for m, o in zip(df["method"], df["options"])]
    df["name"] = [short_name(p) for p in df["problem"]]
    return df


def by_problem(df, columns=("status", "error", "nit", "time")):
    """One row per problem, the methods side by side.

    Returns a DataFrame indexed by the problem (its reference: the file path), with ``name`` (the
    file name), ``kind``, ``nc``, ``size`` (from any row of the problem) and one column ``(column, method label)`` per requested column and
    method (``"Siconos NSGS"`` for a Siconos solver; options appended, see
    :func:`~nsopt.studies.profiles.method_label`); problems in the order of the results."""
    import pandas as pd

    d = _labelled(df)
    order = list(dict.fromkeys(d["problem"]))
    labels = list(dict.fromkeys(d["label"]))
    info = d.groupby("problem", sort=False)[["name", "kind", "nc", "size"]].agg(
        lambda s: s.dropna().iloc[0] if s.notna().any() else None)
    wide = d.pivot_table(index="problem", columns="label", values=list(columns), aggfunc="first",
                         dropna=False)
    wide = wide.reindex(columns=pd.MultiIndex.from_product([list(columns), labels]))
    out = pd.concat([info.set_axis(pd.MultiIndex.from_tuples([(c, "") for c in info.columns]),
                                   axis=1), wide], axis=1)
    return out.reindex(order)


def time_ratio(df, method: str, reference: str, *, both_solved: bool = True):
    """Per problem, ``time(method) / time(reference)`` (method labels as in :func:`by_problem`:
    ``"nsgs"``, ``"Siconos NSGS"``); only the problems both solved unless ``both_solved=False``
    (then every problem both have a time for). A Series indexed by problem reference."""
    d = _labelled(df)
    a = d[d["label"] == method].set_index("problem")
    b = d[d["label"] == reference].set_index("problem")
    names = [n for n in a.index if n in b.index]
    a, b = a.loc[names], b.loc[names]
    keep = a["time"].notna() & b["time"].notna() & (b["time"] > 0)
    if both_solved:
        keep &= (a["status"] == SOLVED) & (b["status"] == SOLVED)
    return (a["time"][keep] / b["time"][keep]).rename(f"{method} / {reference}")


def fmt_time(t) -> str:
    """``0.123ms``, ``1.234s``, or ``-`` for a missing time (None, NaN)."""
    if t is None or math.isnan(t):
        return "-"
    return f"{t * 1e3:.3f}ms" if t < 1 else f"{t:.3f}s"
