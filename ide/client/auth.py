"""An agent's authentication as a client sees it, Qt-free: the methods an agent lists in its ``initialize``
answer (``authMethods``), whether a refusal is ACP's "authentication required" (JSON-RPC error -32000),
``authenticate``, the command a terminal method asks the user to run, and an env-var method's values
stored in that agent's ``[agents.NAME].env`` of the user's config.toml.

ACP's three kinds: an **env-var** method names variables the agent reads from its environment (the client
sets them when it starts the agent, then calls ``authenticate`` with the method); an **agent** method is
done by the agent itself when the client calls ``authenticate`` with its id (a browser sign-in, say); a
**terminal** method is the agent's own command with the method's arguments and environment, run by the
user in a terminal (the client then connects to the agent anew). The window's dialog over these is
:mod:`ide.app.sessions.auth`.

A value given for an env-var method never reaches a log or the chat: it goes into the agent's environment
and, when stored, into the user's config.toml (made private to the user, 0600).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.private import write_private

if TYPE_CHECKING:
    from ide.client.agentconn import RequestTimeouts
    from ide.settings import AgentServerSettings

AUTH_REQUIRED = -32000
"""ACP's JSON-RPC error code for "authentication required" (``RequestError.auth_required``)."""
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
MAX_TEXT = 500
"""An agent's names and descriptions are cut to this many characters for the dialog."""


@dataclass(frozen=True)
class EnvVar:
    """One variable of an env-var method."""

    name: str
    label: str
    """What the dialog calls it (the variable's name when the agent gave no label)."""
    secret: bool = True
    """Typed into a password field."""
    optional: bool = False


@dataclass(frozen=True)
class EnvVarMethod:
    """Variables the agent reads from its environment."""

    id: str
    name: str
    description: str
    vars: tuple[EnvVar, ...]
    link: str | None = None
    """A web page where the user gets the credentials (shown, never opened by itself)."""

    def missing(self, values: Mapping[str, str]) -> list[str]:
        """The required variables ``values`` leaves out or empty."""
        return [var.name for var in self.vars if not var.optional and not values.get(var.name)]


@dataclass(frozen=True)
class TerminalMethod:
    """The agent's own command with these arguments and environment, run by the user in a terminal."""

    id: str
    name: str
    description: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentMethod:
    """Done by the agent itself when the client calls ``authenticate`` with its id."""

    id: str
    name: str
    description: str


AuthMethod = EnvVarMethod | TerminalMethod | AgentMethod


def _get(item: Any, key: str, alias: str | None = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(alias or key, item.get(key))
    return getattr(item, key, None)


def _text(value: Any, fallback: str = "") -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else fallback


def read_methods(raw: Iterable[Any] | None) -> list[AuthMethod]:
    """The agent's ``authMethods`` (the SDK's models, or their JSON) as :data:`AuthMethod` values, in its
    order. A method without an id, an env-var method without a usable variable name, and a variable whose
    name is not one (``[A-Za-z_][A-Za-z0-9_]*``) are left out."""
    methods: list[AuthMethod] = []
    for item in raw or ():
        method_id = _get(item, "id")
        if not isinstance(method_id, str) or not method_id:
            continue
        name = _text(_get(item, "name"), method_id)
        description = _text(_get(item, "description"))
        kind = _get(item, "type")
        if kind == "env_var":
            variables = tuple(
                EnvVar(
                    var_name,
                    _text(_get(var, "label"), var_name) or var_name,
                    _get(var, "secret") is not False,
                    _get(var, "optional") is True,
                )
                for var in _get(item, "vars") or ()
                if isinstance(var_name := _get(var, "name"), str) and VARIABLE_NAME.fullmatch(var_name)
            )
            link = _get(item, "link")
            if variables:
                methods.append(
                    EnvVarMethod(
                        method_id, name, description, variables, link if isinstance(link, str) else None
                    )
                )
        elif kind == "terminal":
            args = tuple(arg for arg in _get(item, "args") or () if isinstance(arg, str))
            env = _get(item, "env") or {}
            env = {k: v for k, v in env.items() if VARIABLE_NAME.fullmatch(str(k)) and isinstance(v, str)}
            methods.append(TerminalMethod(method_id, name, description, args, env))
        elif kind in (None, "agent"):
            methods.append(AgentMethod(method_id, name, description))
    return methods


def is_auth_required(exc: BaseException) -> bool:
    """Whether ``exc`` is the agent's JSON-RPC "authentication required" error."""
    return getattr(exc, "code", None) == AUTH_REQUIRED


def error_message(exc: BaseException) -> str:
    """What the agent said with its error (its ``data.message`` or ``data.details``, else the error's own
    message), cut to :data:`MAX_TEXT` characters."""
    data = getattr(exc, "data", None)
    if isinstance(data, Mapping):
        for key in ("message", "details"):
            if isinstance(data.get(key), str) and data[key]:
                return data[key][:MAX_TEXT]
    if isinstance(data, str) and data:
        return data[:MAX_TEXT]
    return (str(exc) or "Authentication required")[:MAX_TEXT]


@dataclass(frozen=True)
class AuthNeeded:
    """An agent answered ``session/new`` with "authentication required": what to offer the user."""

    agent: str
    """The agent's name (an ``[agents]`` name, or one made from its command)."""
    command: tuple[str, ...]
    """Its command line as configured (a terminal method runs it with its own arguments)."""
    methods: tuple[AuthMethod, ...]
    message: str
    """What the agent said with its refusal."""


def terminal_command(command: Sequence[str], method: TerminalMethod) -> str:
    """The line a user types in a terminal for ``method``: its variables, then the agent's command and the
    method's arguments, each quoted for a POSIX shell."""
    assignments = [f"{name}={shlex.quote(value)}" for name, value in method.env.items()]
    return " ".join([*assignments, shlex.join([*command, *method.args])])


async def authenticate(conn: Any, method_id: str, timeouts: RequestTimeouts | None = None) -> str | None:
    """Call ``authenticate`` with ``method_id``: None when the agent accepted it, else what to tell the
    user (its refusal, or no answer in time); ``ConnectionError`` when the connection is lost (the agent
    ended: whoever watches its process tells)."""
    from acp import RequestError

    from ide.client.agentconn import DEFAULT_TIMEOUTS, NoAnswer, within
    from ide.protocol.standard import AUTHENTICATE

    try:
        await within(conn.authenticate(method_id=method_id), AUTHENTICATE, timeouts or DEFAULT_TIMEOUTS)
    except RequestError as exc:
        return f"The agent did not sign in: {error_message(exc)}"
    except NoAnswer as exc:
        return exc.info.message
    return None


def is_configured(agent: str, command: Sequence[str], agents: Mapping[str, AgentServerSettings]) -> bool:
    """Whether the agent ``agent`` run as ``command`` is the ``[agents]`` entry of that name (a plain
    command line whose name happens to be an entry's is not)."""
    entry = agents.get(agent)
    return entry is not None and entry.argv() == list(command)


class StoreError(Exception):
    """The values could not be stored; the message says why, for the user."""


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _key(name: str) -> str:
    return name if BARE_KEY.fullmatch(name) else _string(name)


def _inline(values: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f"{_key(k)} = {_string(v)}" for k, v in values.items()) + " }"


def _header(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` or ``[[array]]`` header line, None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    array = stripped.startswith("[[")
    try:
        parsed: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(parsed, dict) and len(parsed) == 1:
        key, parsed = next(iter(parsed.items()))
        path.append(key)
        if isinstance(parsed, list) and array:
            break
    return tuple(path)


def _assigned(line: str) -> dict[str, Any] | None:
    """What a one-line ``key = value`` assigns, None for any other line."""
    try:
        parsed = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    return parsed or None


def _table(lines: list[str], path: tuple[str, ...]) -> tuple[int, int] | None:
    """The lines of the table ``path``: (its header's index, the index where the next header begins)."""
    start = None
    for index, line in enumerate(lines):
        found = _header(line)
        if found is None:
            continue
        if start is not None:
            return start, index
        if found == path and not line.strip().startswith("[["):
            start = index
    return (start, len(lines)) if start is not None else None


def _end_of_body(lines: list[str], start: int, end: int) -> int:
    """Where a line added to the table ``lines[start:end]`` goes: after its last non-blank line."""
    last = start
    for index in range(start + 1, end):
        if lines[index].strip() and not lines[index].strip().startswith("#"):
            last = index
    return last + 1


def _edited(text: str, name: str, env: Mapping[str, str], entry: AgentServerSettings | None) -> str:
    lines = text.splitlines()
    env_table = _table(lines, ("agents", name, "env"))
    if env_table is not None:
        start, end = env_table
        for var, value in env.items():
            line = f"{_key(var)} = {_string(value)}"
            found = next(
                (i for i in range(start + 1, end) if var in (_assigned(lines[i]) or {})),
                None,
            )
            if found is not None:
                lines[found] = line
            else:
                at = _end_of_body(lines, start, end)
                lines.insert(at, line)
                end += 1
        return "\n".join(lines) + "\n"
    table = _table(lines, ("agents", name))
    if table is not None:
        start, end = table
        env_lines = [i for i in range(start + 1, end) if "env" in (_assigned(lines[i]) or {})]
        line = f"env = {_inline(env)}"
        if env_lines:
            lines[env_lines[0]] = line
            for index in reversed(env_lines[1:]):
                del lines[index]
        else:
            lines.insert(_end_of_body(lines, start, end), line)
        return "\n".join(lines) + "\n"
    if entry is None:
        raise StoreError(f"[agents.{name}] is not a table of its own in the config; add env to it yourself")
    body = [f"[agents.{_key(name)}]", f"command = {_string(entry.command)}"]
    if entry.args:
        body.append(f"args = [{', '.join(_string(arg) for arg in entry.args)}]")
    body.append(f"env = {_inline(env)}")
    if entry.pass_env:
        body.append(f"pass_env = [{', '.join(_string(n) for n in entry.pass_env)}]")
    if entry.protocol != "acp":
        body.append(f"protocol = {_string(entry.protocol)}")
    head = text.rstrip("\n")
    return (head + "\n\n" if head else "") + "\n".join(body) + "\n"


def store_agent_env(
    path: Path, name: str, values: Mapping[str, str], entry: AgentServerSettings | None = None
) -> None:
    """Set ``values`` in ``[agents.NAME].env`` of the config file ``path`` (the user's config.toml),
    keeping the rest of the file as it is; the file is written atomically and private to the user (0600).
    Without such a table in the file, the whole entry ``entry`` (as the settings resolved it, from another
    layer) is added with the values in its env. :class:`StoreError` says why nothing was written: the
    file cannot be read or is not TOML, the agent's entry is written in a form this cannot edit (an
    inline table), or the edit would change anything else."""
    bad = [var for var in values if not VARIABLE_NAME.fullmatch(var)]
    if bad:
        raise StoreError(f"not environment variable names: {', '.join(map(repr, bad))}")
    target = path.resolve() if path.is_symlink() else path
    try:
        text = target.read_text(encoding="utf-8") if target.exists() else ""
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StoreError(f"{path} is not valid TOML ({exc}); fix it first") from exc
    agents = before.get("agents", {})
    current = agents.get(name) if isinstance(agents, dict) else None
    if current is not None and not isinstance(current, dict):
        raise StoreError(f"agents.{name} in {path} is not a table")
    old_env = (current or {}).get("env", entry.env if (current is None and entry) else {})
    if not isinstance(old_env, dict):
        raise StoreError(f"agents.{name}.env in {path} is not a table")
    env = {**old_env, **values}
    new_text = _edited(text, name, env, entry if current is None else None)
    expected = copy.deepcopy(before)
    if current is None:
        assert entry is not None  # _edited raised otherwise
        added: dict[str, Any] = {"command": entry.command}
        added |= {"args": list(entry.args)} if entry.args else {}
        added["env"] = env
        added |= {"pass_env": list(entry.pass_env)} if entry.pass_env else {}
        added |= {"protocol": entry.protocol} if entry.protocol != "acp" else {}
        expected.setdefault("agents", {})[name] = added
    else:
        expected["agents"][name]["env"] = env
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise StoreError(
            f"cannot edit [agents.{name}] in {path} safely (it is written in a form this does not edit); "
            "add the variables to its env yourself"
        )
    try:
        write_private(target, new_text)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


def defines_agent(path: Path, name: str) -> bool:
    """Whether the config file ``path`` (a workspace's .arbor/config.toml) has an ``[agents.NAME]`` entry,
    which, once trusted, is used instead of the user's."""
    try:
        agents = tomllib.loads(path.read_text(encoding="utf-8")).get("agents", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(agents, dict) and name in agents
