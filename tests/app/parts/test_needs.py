"""Declared needs between window parts: the build order they give, and the errors that stop a window whose
parts do not fit together (Qt-free: plain classes stand in for the parts)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar, Protocol, runtime_checkable

import pytest

from ide.app.parts import registry
from ide.app.parts.base import SIDE, Dock, Spec
from ide.app.parts.capabilities import Chat, OpensFiles, Review, SearchTrees
from ide.app.parts.needs import DependencyError, Providers, Requires, Uses, build_order, needs


@runtime_checkable
class Greets(Protocol):
    def greet(self) -> str: ...


@runtime_checkable
class Counts(Protocol):
    def count(self) -> int: ...


class Stub:
    spec: ClassVar[Spec]
    provides: ClassVar[tuple[type, ...]] = ()

    def __init__(self, providers: Providers) -> None:
        self.ctx = SimpleNamespace(providers=providers)


class Greeter(Stub):
    spec, provides = Spec("greeter", order=50), (Greets,)

    def greet(self) -> str:
        return "hello"


class Listener(Stub):
    """Placed before the greeter, but needs it."""

    spec = Spec("listener", order=10)
    greeter = Requires(Greets)
    counter = Uses(Counts)


class Early(Stub):
    spec = Spec("early", order=20)


def names(parts: list[type[Stub]]) -> list[str]:
    return [part.spec.name for part in parts]


def test_a_part_is_built_after_what_it_requires_and_otherwise_by_order() -> None:
    assert names(build_order([Listener, Early, Greeter])) == ["early", "greeter", "listener"]
    assert names(build_order([Greeter, Early])) == ["early", "greeter"]
    assert [need.attribute for need in needs(Listener)] == ["greeter", "counter"]


def test_a_required_capability_nobody_provides_stops_the_window() -> None:
    with pytest.raises(DependencyError, match="listener requires Greets, which no part provides"):
        build_order([Early, Listener])


def test_parts_requiring_each_other_stop_the_window_naming_the_cycle() -> None:
    class Ping(Stub):
        spec, provides = Spec("ping"), (Counts,)
        other = Requires(Greets)

        def count(self) -> int:
            return 1

    class Pong(Stub):
        spec, provides = Spec("pong"), (Greets,)
        other = Requires(Counts)

        def greet(self) -> str:
            return "pong"

    with pytest.raises(DependencyError, match=r"cycle: (ping → pong → ping|pong → ping → pong)"):
        build_order([Early, Ping, Pong])


def test_two_providers_of_one_capability_stop_the_window() -> None:
    class Other(Greeter):
        spec = Spec("other")

    with pytest.raises(DependencyError, match="Greets is provided by both greeter and other"):
        build_order([Greeter, Other])


def test_optional_needs_do_not_order_building_and_may_be_mutual() -> None:
    class Teller(Stub):
        spec, provides = Spec("teller", order=1), (Counts,)
        greeter = Uses(Greets)

        def count(self) -> int:
            return 2

    assert names(build_order([Listener, Greeter, Teller])) == ["teller", "greeter", "listener"]


def test_a_part_reads_what_it_needs_from_the_providers() -> None:
    providers = Providers()
    greeter = Greeter(providers)
    providers.add(greeter, Greeter.provides)
    listener = Listener(providers)
    assert listener.greeter is greeter
    with pytest.raises(DependencyError, match=r"optional.*once every part is built"):
        _ = listener.counter
    providers.complete = True
    assert listener.counter is None  # nobody counts: an optional need is simply absent


def test_a_provider_must_have_what_its_capability_declares() -> None:
    with pytest.raises(DependencyError, match="Early says it provides Greets; it has no greet"):
        Providers().add(Early(Providers()), (Greets,))


def test_the_window_parts_fit_together() -> None:
    parts = registry()
    order = names(parts)  # type: ignore[arg-type]
    provider = {capability: part.spec.name for part in parts for capability in part.provides}
    assert provider[OpensFiles] == "workspace" and provider[Chat] == "chat"
    assert provider[Review] == "review" and provider[SearchTrees] == "tree"
    for part in parts:
        for need in needs(part):
            if need.required:
                assert order.index(provider[need.capability]) < order.index(part.spec.name)


def test_a_dock_without_a_title_or_place_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="Untitled: a dock's Spec needs a title and a place"):

        class Untitled(Dock):
            spec = Spec("untitled", place=SIDE)

    class Titled(Dock):
        spec = Spec("titled", title="Titled", place=SIDE)

    assert Titled.spec.name == "titled"
