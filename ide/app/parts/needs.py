"""How a window part names the other parts' objects it needs, and the order the window builds the parts in.

A part names a capability (a small Protocol of :mod:`ide.app.parts.capabilities`) as a class attribute:
``review = Requires(Review)`` when it cannot work without it: the provider is built first and is there in the
part's constructor. ``trees = Uses(SearchTrees)`` when it may use it: None when no part provides it, and
there once every part is built (in slots, not in the constructor), so two parts may use each other. A part
that offers a capability lists it in ``provides``. :func:`build_order` checks the declarations at startup:
a required capability nobody provides, two providers of one, or parts requiring each other in a cycle stop
the window with a :class:`DependencyError` that names them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

C = TypeVar("C")


class DependencyError(Exception):
    """The parts' declared needs do not make a window (a missing or doubled provider, a cycle)."""


class Providers:
    """Each capability's provider among the parts built so far."""

    def __init__(self) -> None:
        self._provider: dict[type, object] = {}
        self.complete = False
        """Every part is built: optional needs (:class:`Uses`) can be read."""

    def add(self, part: object, capabilities: Iterable[type]) -> None:
        """``part`` provides ``capabilities``; it must have every member of each."""
        for capability in capabilities:
            if not isinstance(part, capability):
                missing = [name for name in _members(capability) if not hasattr(part, name)]
                name = type(part).__name__
                raise DependencyError(
                    f"{name} says it provides {capability.__name__}; it has no {', '.join(missing)}"
                )
            self._provider[capability] = part

    def get(self, capability: type[C]) -> C | None:
        """The part providing ``capability``, or None."""
        provider = self._provider.get(capability)
        return provider if isinstance(provider, capability) else None


class _Context(Protocol):
    providers: Providers


class _Part(Protocol):
    ctx: _Context


class Need(Generic[C]):
    """A part class's declared need for a capability; read on a part, the capability's provider."""

    required: ClassVar[bool] = True

    def __init__(self, capability: type[C]) -> None:
        self.capability = capability
        self.attribute = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def _provider(self, part: _Part) -> C | None:
        return part.ctx.providers.get(self.capability)


class Requires(Need[C]):
    """A capability the part cannot work without: built before the part, there in its constructor."""

    @overload
    def __get__(self, part: None, owner: type) -> Requires[C]: ...
    @overload
    def __get__(self, part: _Part, owner: type) -> C: ...
    def __get__(self, part: _Part | None, owner: type) -> Requires[C] | C:
        if part is None:
            return self
        provider = self._provider(part)
        if provider is None:  # build_order puts providers first: only a part built outside the registry
            raise DependencyError(
                f"{type(part).__name__}.{self.attribute}: no {self.capability.__name__} built"
            )
        return provider


class Uses(Need[C]):
    """A capability the part may use: None without a provider; read once every part is built."""

    required = False

    @overload
    def __get__(self, part: None, owner: type) -> Uses[C]: ...
    @overload
    def __get__(self, part: _Part, owner: type) -> C | None: ...
    def __get__(self, part: _Part | None, owner: type) -> Uses[C] | C | None:
        if part is None:
            return self
        if not part.ctx.providers.complete:
            raise DependencyError(
                f"{type(part).__name__}.{self.attribute} is optional: it is there once every part is built "
                "(read it in a slot, not in the constructor)"
            )
        return self._provider(part)


class Named(Protocol):
    """What :func:`build_order` reads of a part's spec."""

    @property
    def name(self) -> str: ...
    @property
    def order(self) -> int: ...


class Declared(Protocol):
    """What :func:`build_order` reads of a part's class."""

    spec: ClassVar[Named]
    provides: ClassVar[tuple[type, ...]]


P = TypeVar("P", bound=Declared)


def needs(cls: type) -> list[Need[Any]]:
    """The needs ``cls`` and its bases declare, in declaration order."""
    seen: dict[str, Need[Any]] = {}
    for klass in reversed(cls.__mro__):
        seen.update({name: value for name, value in vars(klass).items() if isinstance(value, Need)})
    return list(seen.values())


def build_order(parts: Sequence[type[P]]) -> list[type[P]]:
    """``parts`` in the order to build them: each after the providers of what it requires, otherwise by
    ``(order, name)``. Raises :class:`DependencyError` for a required capability no part provides, a
    capability two parts provide, or parts that require each other in a cycle."""
    provider: dict[type, type[P]] = {}
    for part in parts:
        for capability in part.provides:
            if capability in provider:
                first, second = provider[capability].spec.name, part.spec.name
                raise DependencyError(f"{capability.__name__} is provided by both {first} and {second}")
            provider[capability] = part
    after: dict[type[P], set[type[P]]] = {part: set() for part in parts}
    for part in parts:
        for need in needs(part):
            if not need.required:
                continue
            if need.capability not in provider:
                raise DependencyError(
                    f"{part.spec.name} requires {need.capability.__name__}, which no part provides"
                )
            if provider[need.capability] is not part:
                after[part].add(provider[need.capability])
    key = {part: (part.spec.order, part.spec.name) for part in parts}
    ready = [(key[part], index, part) for index, part in enumerate(parts) if not after[part]]
    heapq.heapify(ready)
    waiting = {part: set(providers) for part, providers in after.items() if providers}
    built: list[type[P]] = []
    while ready:
        _, _, part = heapq.heappop(ready)
        built.append(part)
        for other, providers in list(waiting.items()):
            providers.discard(part)
            if not providers:
                del waiting[other]
                heapq.heappush(ready, (key[other], parts.index(other), other))
    if waiting:
        raise DependencyError(f"parts require each other in a cycle: {_cycle(waiting)}")
    return built


def _cycle(waiting: dict[type[P], set[type[P]]]) -> str:
    """One cycle among the parts left waiting, as ``a → b → a``."""
    part = next(iter(waiting))
    path: list[type[P]] = []
    while part not in path:
        path.append(part)
        part = min(waiting[part], key=lambda other: other.spec.name)
    cycle = [*path[path.index(part) :], part]
    return " → ".join(member.spec.name for member in cycle)


def _members(capability: type) -> list[str]:
    """The names a Protocol declares (its methods and annotated attributes)."""
    declared = set(getattr(capability, "__annotations__", {}))
    declared |= {
        name for name, value in vars(capability).items() if callable(value) and not name.startswith("_")
    }
    return sorted(declared)
