"""The ``_arbor/*`` methods: declared once in ide/protocol, registered against the declaration, params
validated before any handler runs; and the hooks through which the ACP agent reaches the features."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path

import pytest
from acp import RequestError
from pydantic import BaseModel, ValidationError

from ide.backend.extensions import Handler, registry
from ide.client import agentconn
from ide.protocol import index as ix
from ide.protocol import review as rv
from ide.protocol.method import Method, Notification
from tests.support.inprocess import inprocess_backend


def test_a_declaration_is_its_wire_name_and_carries_its_types() -> None:
    assert ix.INDEX_STATUS == "arbor/index/status" and f"_{ix.INDEX_STATUS}" == "_arbor/index/status"
    assert (ix.INDEX_STATUS.params, ix.INDEX_STATUS.result) == (ix.IndexStatusParams, ix.IndexStatus)
    assert rv.CHANGESET_NOTIFICATION.payload is rv.ChangeSetView
    assert {ix.INDEX_STATUS: 1}["arbor/index/status"] == 1
    for declared in (ix.INDEX_SEARCH, rv.CHANGESET_NOTIFICATION):
        for clone in (copy.deepcopy(declared), pickle.loads(pickle.dumps(declared))):
            assert clone == declared and type(clone) is type(declared) and vars(clone) == vars(declared)


def test_every_served_method_is_declared_with_pydantic_types() -> None:
    served = registry()
    assert served.handlers and served.notifications
    for name, handler in served.handlers.items():
        assert isinstance(handler.method, Method) and handler.method == name
        assert issubclass(handler.method.params, BaseModel) and issubclass(handler.method.result, BaseModel)
    assert all(isinstance(notification, Notification) for notification in served.notifications)
    assert all(type(name) is str for name in served.advertised)  # plain strings on the wire
    assert {rv.APPLY, rv.CHANGESET_NOTIFICATION, ix.INDEX_CHANGED} <= set(served.advertised)


async def test_a_handler_gets_its_params_validated_and_answers_json() -> None:
    seen: list[BaseModel] = []

    async def status(backend: object, request: ix.IndexStatusParams) -> ix.IndexStatus:
        seen.append(request)
        return ix.IndexStatus(state="ready", files=3)

    handler = Handler(ix.INDEX_STATUS, status)
    answer = await handler.answer(None, {"cwd": "/ws"})  # type: ignore[arg-type]
    assert seen == [ix.IndexStatusParams(cwd="/ws")]
    assert answer["state"] == "ready" and answer["files"] == 3
    with pytest.raises(ValidationError):
        await handler.answer(None, {"cwd": 7})  # type: ignore[arg-type]
    assert len(seen) == 1  # the handler never ran


def test_the_features_reach_the_turn_through_hooks() -> None:
    hooks = registry().hooks
    assert sum(h.turn_end is not None for h in hooks) == 1  # review: the changes are offered
    assert sum(h.cancel is not None for h in hooks) == 1  # review: the changes stay pending
    assert sum(h.index_changed is not None for h in hooks) == 1  # index: _arbor/index/changed
    assert sum(h.session_load is not None for h in hooks) == 1  # workflows: how to /resume a stopped run


async def test_invalid_params_answer_invalid_params(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        with pytest.raises(RequestError) as caught:
            await backend.conn.ext_method(ix.INDEX_SEARCH, {"cwd": str(git_workspace), "limit": 0})
        assert caught.value.code == -32602
        errors = caught.value.data["errors"]
        assert {tuple(error["loc"]) for error in errors} == {("query",), ("limit",)}
        status = await agentconn.call(
            backend.conn, ix.INDEX_STATUS, ix.IndexStatusParams(cwd=str(git_workspace))
        )
        assert isinstance(status, ix.IndexStatus)


SESSION_GETTERS = ("session", "find_session", "open_session")
"""The Backend methods that give a handler a session."""


def _gives_a_session(node: ast.expr) -> bool:
    call = node.value if isinstance(node, ast.Await) else node
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in SESSION_GETTERS
    )


def _session_uses(source: str) -> set[str]:
    """The attributes a module reads or sets on what ``backend.session(...)`` (``find_session``,
    ``open_session``) gives, directly or through a name it was assigned to, or on any name or parameter
    called ``session``."""
    tree = ast.parse(source)
    sessions = {"session"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _gives_a_session(node.value):
            sessions.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and ((isinstance(node.value, ast.Name) and node.value.id in sessions) or _gives_a_session(node.value))
    }


def test_the_extensions_use_a_session_only_through_its_api() -> None:
    """Every feature module reaches a session through ``SessionApi`` (its review and change set, memory,
    shadow, workflow, whether a turn runs), never its router, services or turn task; and the session the
    agent builds has all of it."""
    from ide.backend import extensions
    from ide.backend.extensions import SessionApi
    from ide.backend.session import Session

    api = {name for name in dir(SessionApi) if not name.startswith("_")}
    folder = Path(extensions.__file__).parent
    used = {path.stem: _session_uses(path.read_text()) for path in sorted(folder.glob("*.py"))}
    assert {module: sorted(names - api) for module, names in used.items() if names - api} == {}
    assert used["foreign"] >= {"review", "changeset", "shadow", "drop_shadow"}  # the finder sees them
    session_members = set(dir(Session)) | set(Session.__init__.__code__.co_names)
    assert sorted(api - session_members) == []


def test_the_finder_sees_what_a_handler_does_with_a_session() -> None:
    source = (
        "async def h(backend, request):\n"
        "    found = backend.session(request.session_id)\n"
        "    found.router.stream()\n"
        "    backend.find_session('x').services.store\n"
        "    session.turn = None\n"
        "    other.turn = None\n"
    )
    assert _session_uses(source) == {"router", "services", "turn"}
