r"""The :class:`Reduction` base class: a problem-to-problem map with ``apply`` and ``invert``.

In the manner of cvxpy's ``Reduction``: :meth:`Reduction.apply` turns a problem :math:`P` into an
equivalent problem :math:`R(P)` of another kind and keeps the data needed to map back;
:meth:`Reduction.invert` maps variables of :math:`R(P)` (a dict such as ``{"z": ..., "w": ...}``)
to variables of :math:`P`. A reduction object is stateful (the last ``apply`` is remembered), and
also exposes the pure pair :meth:`Reduction.reduce` / ``invert(x, inverse_data)``::

    r = RelayToLCP()
    lcp = r.apply(relay)               # an nsopt.LCP
    x = r.invert({"z": z_lcp})         # {"z": z_relay, ...}

    lcp, data = RelayToLCP().reduce(relay)      # no state kept
    x = RelayToLCP().invert({"z": z_lcp}, data)

:class:`Chain` composes reductions (``Chain([AVIToMLCP(), MLCPToLCP()])``). Subclasses set
``source`` (the kinds they accept), ``target`` (the kind they produce) and implement
``_apply(problem) -> (reduced, inverse_data)`` and ``_invert(x, inverse_data) -> dict``.
"""

from __future__ import annotations

from ..exceptions import NotApplicable


class Reduction:
    """A reduction from problems of the kinds ``source`` to a problem of kind ``target``.

    Attributes
    ----------
    problem : Problem
        After :meth:`apply`: the original problem.
    reduced : Problem
        Its image.
    inverse_data
        What :meth:`invert` needs.

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import RelayToLCP
    >>> relay = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> r = RelayToLCP()
    >>> lcp = r.apply(relay)
    >>> r, lcp
    (RelayToLCP(relay -> lcp), LCP(n=4, dense))
    >>> x = r.invert({"z": nsopt.solve(lcp, method="lemke").z})
    >>> print(x["z"].round(12), relay.error(x["z"]) < 1e-14)
    [ 1. -1.] True
    """

    source: tuple[str, ...] = ()
    target: str = ""

    def __init__(self):
        self.problem = None
        self.reduced = None
        self.inverse_data = None

    # -- the interface -----------------------------------------------------------------------------
    def accepts(self, problem) -> bool:
        """True when this reduction applies to ``problem`` (by default: its kind is in ``source``)."""
        return getattr(problem, "kind", None) in self.source

    def reduce(self, problem):
        """``(reduced, inverse_data)`` without keeping any state on the reduction."""
        if not self.accepts(problem):
            raise NotApplicable(f"{type(self).__name__} reduces {' or '.join(self.source) or 'nothing'} "
                                f"problems, got {getattr(problem, 'kind', type(problem).__name__)!r}")
        return self._apply(problem)

    def apply(self, problem):
        """The reduced problem; the original and the data to map back are kept for :meth:`invert`."""
        reduced, data = self.reduce(problem)
        self.problem, self.reduced, self.inverse_data = problem, reduced, data
        return reduced

    def invert(self, x: dict, inverse_data=None) -> dict:
        """Variables of the original problem from the variables ``x`` (dict) of the reduced one.

        ``inverse_data``: from :meth:`reduce` (default: that of the last :meth:`apply`). The result
        holds at least the original problem's primal variable."""
        data = self.inverse_data if inverse_data is None else inverse_data
        if data is None:
            raise RuntimeError(f"{type(self).__name__}.invert: call apply() first, or pass inverse_data")
        return self._invert(dict(x), data)

    # -- for subclasses ----------------------------------------------------------------------------
    def _apply(self, problem):
        raise NotImplementedError

    def _invert(self, x: dict, data) -> dict:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(self.source)} -> {self.target})"


class Chain(Reduction):
    """Reductions applied in order; :meth:`invert` maps back through them in reverse order."""

    def __init__(self, reductions):
        super().__init__()
        self.reductions = list(reductions)
        if not self.reductions:
            raise ValueError("Chain needs at least one reduction")
        self.source = self.reductions[0].source
        self.target = self.reductions[-1].target

    def accepts(self, problem) -> bool:
        return self.reductions[0].accepts(problem)

    def _apply(self, problem):
        datas = []
        p = problem
        for r in self.reductions:
            p, d = r.reduce(p)
            datas.append(d)
        return p, datas

    def _invert(self, x, datas):
        for r, d in zip(reversed(self.reductions), reversed(datas)):
            x = r.invert(x, d)
        return x

    def __repr__(self):
        return "Chain(" + " -> ".join(type(r).__name__ for r in self.reductions) + ")"
