r"""The :class:`Reduction` base class: a problem-to-problem map with ``apply`` and ``invert``, with
cvxpy's meanings (``cvxpy.reductions.Reduction``).

:meth:`Reduction.apply` is pure: it turns a problem :math:`P` into an equivalent problem
:math:`R(P)` of another kind and returns it with the data needed to map back;
:meth:`Reduction.invert` maps a solution of :math:`R(P)` (a dict of its variables such as
``{"z": ..., "w": ...}``, or a :class:`~nsopt.Solution`) to variables of :math:`P`::

    lcp, inverse_data = RelayToLCP().apply(relay)          # an nsopt.LCP and what maps back
    x = RelayToLCP().invert({"z": z_lcp}, inverse_data)    # {"z": z_relay}

A reduction object keeps no state of a call (one object serves any number of problems).
:class:`Chain` composes reductions (``Chain([AVIToMLCP(), MLCPToLCP()])``). Subclasses set
``source`` (the kinds they accept), ``target`` (the kind they produce) and implement
``_apply(problem) -> (reduced, inverse_data)`` and ``_invert(x, inverse_data) -> dict``.
"""

from __future__ import annotations

from ..exceptions import NotApplicable


class Reduction:
    """A reduction from problems of the kinds ``source`` to a problem of kind ``target`` (with
    cvxpy's meanings: :meth:`apply` is pure; nothing of a call is kept on the reduction).

    Examples
    --------
    >>> import nsopt
    >>> from nsopt.reductions import RelayToLCP
    >>> relay = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])
    >>> r = RelayToLCP()
    >>> lcp, data = r.apply(relay)
    >>> r, lcp
    (RelayToLCP(relay -> lcp), LCP(n=4, dense))
    >>> x = r.invert({"z": nsopt.solve(lcp, method="lemke").z}, data)
    >>> print(x["z"].round(12), relay.error(x["z"]) < 1e-14)
    [ 1. -1.] True
    """

    source: tuple[str, ...] = ()
    target: str = ""

    # -- the interface -----------------------------------------------------------------------------
    def accepts(self, problem) -> bool:
        """True when this reduction applies to ``problem`` (by default: its kind is in ``source``)."""
        return getattr(problem, "kind", None) in self.source

    def apply(self, problem):
        """``(reduced, inverse_data)``: the equivalent problem and what :meth:`invert` needs; no
        state is kept on the reduction."""
        if not self.accepts(problem):
            raise NotApplicable(f"{type(self).__name__} reduces {' or '.join(self.source) or 'nothing'} "
                                f"problems, got {getattr(problem, 'kind', type(problem).__name__)!r}")
        return self._apply(problem)

    def invert(self, solution, inverse_data) -> dict:
        """Variables of the original problem from a solution of the reduced one: a dict of its
        variables or a :class:`~nsopt.Solution`; ``inverse_data`` from :meth:`apply`. The result
        holds at least the original problem's primal variable."""
        x = solution.variables() if hasattr(solution, "variables") else dict(solution)
        return self._invert(x, inverse_data)

    # -- for subclasses ----------------------------------------------------------------------------
    def _apply(self, problem):
        raise NotImplementedError

    def _invert(self, x: dict, data) -> dict:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(self.source)} -> {self.target})"


class Chain(Reduction):
    """Reductions applied in order; :meth:`invert` maps back through them in reverse order.

    Parameters
    ----------
    reductions : iterable of Reduction
        The reductions, first applied first; ``source`` is the first one's, ``target`` the last one's.

    Raises
    ------
    ValueError
        When ``reductions`` is empty.

    Examples
    --------
    >>> from nsopt.reductions import AVIToMLCP, Chain, MLCPToLCP
    >>> c = Chain([AVIToMLCP(), MLCPToLCP("split")])
    >>> c, c.source, c.target
    (Chain(AVIToMLCP -> MLCPToLCP), ('avi',), 'lcp')
    """

    def __init__(self, reductions):
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
            p, d = r.apply(p)
            datas.append(d)
        return p, datas

    def _invert(self, x, datas):
        for r, d in zip(reversed(self.reductions), reversed(datas)):
            x = r.invert(x, d)
        return x

    def __repr__(self):
        return "Chain(" + " -> ".join(type(r).__name__ for r in self.reductions) + ")"
