"""Running work off the UI thread: blocking calls on a small thread pool, coroutines as tracked tasks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from PySide6.QtCore import SignalInstance

log = logging.getLogger(__name__)

T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
"""The worker pool, made at first use (asyncio and concurrent.futures load after the first frame)."""
# The loop keeps only weak references to tasks; without these a running task can be collected.
_tasks: set[asyncio.Task[Any]] = set()


async def run_blocking(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` on the worker pool and await its result on the UI loop."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    global _executor
    if _executor is None:
        # Two threads: a file listing and a file read may overlap, nothing else in the window blocks.
        _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="arbor-io")
    return await asyncio.get_running_loop().run_in_executor(_executor, func, *args)


def spawn(coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """Schedule ``coro`` on the running loop; an exception it raises is logged, never lost or shown raw."""
    import asyncio

    task = asyncio.ensure_future(coro)
    if name:
        task.set_name(name)
    _tasks.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _tasks.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("background task %s failed", task.get_name(), exc_info=exc)


def pending_tasks() -> list[asyncio.Task[Any]]:
    """Tasks started with :func:`spawn` that have not finished (tests cancel them at teardown)."""
    return [task for task in _tasks if not task.done()]


async def next_emission(signals: list[SignalInstance], timeout: float) -> tuple[Any, ...]:
    """The next emission of any of ``signals``: ``(its index, *its arguments)`` — for scripts that drive the
    real window (screenshots, demos) and wait on it as a user would, without sleeping."""
    import asyncio

    future: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()
    receivers = []
    for index, signal in enumerate(signals):

        def receive(*args: Any, index: int = index) -> None:
            if not future.done():
                future.set_result((index, *args))

        signal.connect(receive)
        receivers.append((signal, receive))
    try:
        return await asyncio.wait_for(future, timeout)
    finally:
        for signal, receive in receivers:
            signal.disconnect(receive)
