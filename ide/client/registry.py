"""The ACP agent registry's feed: read only when the user asks (Agent → Add Agent…), cached in Arbor's data
dir, and turned into ``[agents]`` entries.

The feed's format is the registry's (github.com/agentclientprotocol/registry, its FORMAT.md and
agent.schema.json): ``{"version", "agents": [...]}``, each agent
``{"id", "name", "version", "description", "distribution"}`` with one or more distributions — ``npx``
and ``uvx`` (``{"package", "args"?, "env"?}``; ``cmd`` when the package's program is named otherwise)
and ``binary`` (per platform, ``{"archive", "cmd", "args"?, "env"?}``). Qt-free.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ide.private import tightened, write_private

DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
MAX_FEED_BYTES = 4_000_000
"""A feed larger than this is refused (the registry's is tens of kilobytes)."""
FRESH_S = 3600.0
"""A cached feed younger than this is used without asking the network (Refresh asks anyway)."""
TIMEOUT_S = 20.0
KINDS = ("npx", "uvx", "binary")


class RegistryError(Exception):
    """The feed could not be read or is not a registry; the message says which, for the user."""


@dataclass(frozen=True)
class Distribution:
    """One way to run an agent: ``npx`` or ``uvx`` with a package, or a ``binary`` for one platform."""

    kind: str
    package: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cmd: str = ""
    platform: str = ""
    archive: str = ""

    @property
    def label(self) -> str:
        if self.kind == "binary":
            return f"binary ({self.platform})"
        return f"{self.kind} {self.package}"

    def argv(self) -> list[str]:
        """The command line the ``[agents]`` entry runs."""
        if self.kind == "npx":
            head = (
                ["npx", "-y", self.package] if not self.cmd else ["npx", "-y", "-p", self.package, self.cmd]
            )
        elif self.kind == "uvx":
            head = ["uvx", self.package] if not self.cmd else ["uvx", "--from", self.package, self.cmd]
        else:
            head = [self.cmd]
        return [*head, *self.args]


@dataclass(frozen=True)
class RegistryAgent:
    id: str
    name: str
    version: str
    description: str
    distributions: list[Distribution]


@dataclass(frozen=True)
class Feed:
    agents: list[RegistryAgent]
    url: str
    fetched_at: float
    from_cache: bool
    warning: str = ""
    """Said beside the list: the network failed and the cached feed is shown."""


def host_platform() -> str:
    """This machine as the registry names platforms: ``linux-x86_64``, ``darwin-aarch64``…"""
    system = {"darwin": "darwin", "win32": "windows"}.get(sys.platform, "linux")
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _distributions(raw: Any) -> list[Distribution]:
    found: list[Distribution] = []
    if not isinstance(raw, dict):
        return found
    for kind in ("npx", "uvx"):
        spec = raw.get(kind)
        if isinstance(spec, dict) and isinstance(spec.get("package"), str) and spec["package"]:
            cmd = spec.get("cmd") if isinstance(spec.get("cmd"), str) else ""
            found.append(
                Distribution(kind, spec["package"], _strings(spec.get("args")), _env(spec.get("env")), cmd)
            )
    binary = raw.get("binary")
    if isinstance(binary, dict):
        for target, spec in binary.items():
            if isinstance(spec, dict) and isinstance(spec.get("cmd"), str) and spec["cmd"]:
                found.append(
                    Distribution(
                        "binary",
                        args=_strings(spec.get("args")),
                        env=_env(spec.get("env")),
                        cmd=spec["cmd"],
                        platform=str(target),
                        archive=spec.get("archive") if isinstance(spec.get("archive"), str) else "",
                    )
                )
    return found


def parse_feed(body: bytes) -> list[RegistryAgent]:
    """The agents of a registry feed; an entry without id, name or a known distribution is skipped, a
    document that is not a registry is a :class:`RegistryError`."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError(f"the feed is not JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise RegistryError('the feed is not an ACP registry (no "agents" list)')
    agents: list[RegistryAgent] = []
    for raw in data["agents"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            continue
        distributions = _distributions(raw.get("distribution"))
        if not distributions:
            continue
        agents.append(
            RegistryAgent(
                id=raw["id"],
                name=str(raw.get("name") or raw["id"]),
                version=str(raw.get("version") or ""),
                description=str(raw.get("description") or ""),
                distributions=distributions,
            )
        )
    return sorted(agents, key=lambda agent: agent.name.lower())


def _local_path(url: str) -> Path | None:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    if parsed.scheme in ("http", "https"):
        return None
    if len(parsed.scheme) <= 1:  # a path (a Windows drive letter parses as a one-letter scheme)
        return Path(url).expanduser()
    raise RegistryError(f"cannot read {url!r}: only https, http, file URLs and paths are read")


def download(url: str, *, max_bytes: int = MAX_FEED_BYTES, timeout: float = TIMEOUT_S) -> bytes:
    """The feed's bytes from an http(s) URL, a ``file://`` URL or a path; at most ``max_bytes``."""
    local = _local_path(url)
    try:
        if local is not None:
            with local.open("rb") as source:
                body = source.read(max_bytes + 1)
        else:
            request = urllib.request.Request(url, headers={"User-Agent": "arbor"})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise RegistryError(f"{url} answered {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise RegistryError(f"cannot reach {url}: {exc.reason}") from exc
    except (OSError, ValueError) as exc:
        raise RegistryError(f"cannot read {url}: {exc}") from exc
    if len(body) > max_bytes:
        raise RegistryError(f"the feed at {url} is larger than {max_bytes // 1000} kB; not read")
    return body


def cache_path(data_dir: Path, url: str) -> Path:
    return data_dir / "registry" / f"{hashlib.sha1(url.encode()).hexdigest()[:16]}.json"


def _read_cache(path: Path) -> tuple[float, bytes] | None:
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        return float(cached["fetched_at"]), str(cached["body"]).encode("utf-8")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_feed(url: str, data_dir: Path, *, refresh: bool = False, max_bytes: int = MAX_FEED_BYTES) -> Feed:
    """The registry's agents: the cached feed while it is fresh (unless ``refresh``), else downloaded and
    cached. When the download or the feed fails and a cached feed exists, it is shown with a warning; with
    no cache the :class:`RegistryError` is raised. A bad feed never replaces a good cache."""
    path = cache_path(data_dir, url)
    cached = _read_cache(path)
    if cached is not None and not refresh and time.time() - cached[0] < FRESH_S:
        try:
            return Feed(parse_feed(cached[1]), url, cached[0], from_cache=True)
        except RegistryError:
            cached = None
    try:
        body = download(url, max_bytes=max_bytes)
        agents = parse_feed(body)
    except RegistryError as exc:
        if cached is None:
            raise
        try:
            agents = parse_feed(cached[1])
        except RegistryError:
            raise exc from None
        return Feed(agents, url, cached[0], from_cache=True, warning=f"{exc}; showing the copy read before")
    now = time.time()
    text = body.decode("utf-8")
    tightened(data_dir)
    write_private(path, json.dumps({"url": url, "fetched_at": now, "body": text}))
    return Feed(agents, url, now, from_cache=False)


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def toml_entry(agent: RegistryAgent, distribution: Distribution) -> str:
    """The ``[agents.ID]`` table that runs ``agent`` by ``distribution``, as written in config.toml."""
    command, *args = distribution.argv()
    key = agent.id if re.fullmatch(r"[A-Za-z0-9_-]+", agent.id) else _toml_string(agent.id)
    lines = [f"[agents.{key}]"]
    if distribution.kind == "binary":
        lines.insert(0, f"# unpack {distribution.archive or 'the archive'} and give cmd's full path")
    lines.append(f"command = {_toml_string(command)}")
    if args:
        lines.append(f"args = [{', '.join(_toml_string(arg) for arg in args)}]")
    if distribution.env:
        pairs = ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in distribution.env.items())
        lines.append(f"env = {{ {pairs} }}")
    return "\n".join(lines) + "\n"
