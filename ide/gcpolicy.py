"""When Python's cycle collector may look at what: keep full collections off the live path of the window
and of the backend.

A full (generation 2) collection walks every container object the process holds. After start-up that is
mostly PySide6's wrappers, pydantic's validators and the ACP SDK's schema models — hundreds of
thousands of objects that live as long as the window does — so a full pass during a live search run
stalled the event loop for 80–200 ms. :func:`settle_heap` collects once and then freezes everything
allocated so far (``gc.freeze``): later collections only walk objects made afterwards (the runs' trees,
chat blocks), and a full pass costs what those cost.

Finished runs stay in the search-tree dock for good (a 2,000-node run is ~26,000 tracked objects:
pydantic events and node records with their dicts and field sets), so each one is frozen too when its
``finished`` event lands (:func:`settle_run`): a live run's full collections then cost that run alone
(about 10 ms for 2,000 nodes, once per run), not every run the session has shown.

The backend (``arbor acp``) holds about 190,000 objects once its first turn has imported LangChain,
LangGraph and the ACP schema; every full pass walked them all, about 0.1 s each, 2.4 s of a 200-turn
session's CPU. After its first turn it collects the young generations and freezes the rest once
(``settle_heap(full=False)``: no full pass, which a short-lived backend would pay for nothing); the
same session's full passes then took 0.14 s in all.

The thresholds stay at Python's defaults: with the heap frozen, a larger first-generation threshold
(2,000 or 10,000 against 700) or no automatic full pass during a run changed the bench's longest stall by
less than its run-to-run noise, while making more garbage wait for a pass that comes later or never.

Before all that, the window's process imports its modules inside :func:`quiet_imports`: the collector is
off while they import and what they made is frozen at the end, so none of the ~130 collections those
imports used to trigger walks them (40–50 ms of CPU before the first frame, at one full and ten middle
passes). :func:`settle_heap` unfreezes it first: its full pass then finds whatever garbage the imports
left, once, after the first frame.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_settled = False


@contextmanager
def quiet_imports() -> Iterator[None]:
    """Run the block (a program's imports: modules, classes, models that live as long as the process)
    with the cycle collector off, then freeze everything alive, so the collections after it do not walk
    what it made either. :func:`settle_heap` unfreezes it again; until then garbage the block left waits."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def settle_heap(*, full: bool = True) -> bool:
    """Collect, then exempt every object alive now from future collections; once per process.

    Call it when start-up is over (the window shown, the backend connected and its SDK imported; the
    backend's first turn finished). ``full=False`` collects the young generations only (cheap; garbage
    already in the oldest stays, once). Returns False when it had already run.
    """
    global _settled
    if _settled:
        return False
    gc.unfreeze()  # what quiet_imports froze is looked at once more
    gc.collect(2 if full else 1)
    gc.freeze()
    _settled = True
    return True


def settle_run() -> None:
    """A run finished: collect the young generations (cheap), then freeze what is alive.

    Garbage that is already in the oldest generation stays uncollected from then on; it is what the
    periodic full passes had not yet found, a small and bounded price for never walking finished runs.
    """
    gc.collect(1)
    gc.freeze()
