"""Per-provider call gates: concurrency slots and minimum spacing, shared by every router in the process."""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType


class ProviderGate:
    """At most ``limit`` calls at once, and (optionally) call starts spaced to ``per_minute`` a minute."""

    def __init__(self, limit: int, per_minute: float | None = None) -> None:
        self.limit = max(1, limit)
        self._slots = asyncio.Semaphore(self.limit)
        self._interval = 60.0 / per_minute if per_minute and per_minute > 0 else 0.0
        self._next_start = 0.0

    async def __aenter__(self) -> ProviderGate:
        await self._slots.acquire()
        try:
            await self._space()
        except BaseException:
            self._slots.release()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._slots.release()

    async def _space(self) -> None:
        if not self._interval:
            return
        # Reserve a start time before sleeping, so concurrent waiters line up one interval apart.
        now = asyncio.get_running_loop().time()
        start = max(now, self._next_start)
        self._next_start = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)


# asyncio primitives belong to one event loop; keep one gate table per loop (tests run many loops).
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[object, ...], ProviderGate]] = (
    weakref.WeakKeyDictionary()
)


def provider_gate(provider: str, endpoint: str, limit: int, per_minute: float | None) -> ProviderGate:
    """The process-wide gate for one provider endpoint with these limits, on the running loop."""
    table = _GATES.setdefault(asyncio.get_running_loop(), {})
    key = (provider, endpoint, limit, per_minute)
    gate = table.get(key)
    if gate is None:
        gate = table[key] = ProviderGate(limit, per_minute)
    return gate
