"""A trivial numba kernel, cached on disk: calling it once initialises numba's compiler in a process
(about 0.3 s) before that process forks campaign workers, which then inherit it."""

from .._jit import njit


@njit(cache=True)
def _probe(x):
    return x + 1.0


def ready() -> None:
    """Initialise numba in this process (no-op after the first call)."""
    _probe(1.0)
