"""Running work off the UI thread: blocking calls on a small thread pool, coroutines as tracked tasks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

# Two threads: a file listing and a file read may overlap, nothing else in the window blocks.
_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="arbor-io")
# The loop keeps only weak references to tasks; without these a running task can be collected.
_tasks: set[asyncio.Task[Any]] = set()


async def run_blocking(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` on the worker pool and await its result on the UI loop."""
    return await asyncio.get_running_loop().run_in_executor(_executor, func, *args)


def spawn(coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """Schedule ``coro`` on the running loop; an exception it raises is logged, never lost or shown raw."""
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
