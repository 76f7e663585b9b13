"""The ACP registry's feed (Agent → Add Agent…): read from a path, a file:// URL or a local HTTP server,
cached in the data dir, bad feeds said and nothing lost; Arbor's own entry against the registry's schema."""

from __future__ import annotations

import json
import os
import re
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ide.client.registry import (
    Distribution,
    RegistryError,
    cache_path,
    load_feed,
    parse_feed,
    toml_entry,
)
from ide.settings import AgentServerSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
ACP = ROOT / "resources" / "acp"

FEED: dict[str, Any] = {
    "version": "1.0.0",
    "agents": [
        {
            "id": "qwen-code",
            "name": "Qwen Code",
            "version": "0.9.1",
            "description": "Alibaba's Qwen coding assistant",
            "distribution": {"npx": {"package": "@qwen-code/qwen-code@0.9.1", "args": ["--acp"]}},
        },
        {
            "id": "zeta",
            "name": "Zeta",
            "version": "2.0.0",
            "description": "Binary and uvx",
            "distribution": {
                "uvx": {"package": "zeta-agent==2.0.0", "env": {"ZETA_MODE": "acp"}},
                "binary": {
                    "linux-x86_64": {
                        "archive": "https://example.com/zeta.tar.gz",
                        "cmd": "./zeta",
                        "args": ["acp"],
                    }
                },
            },
        },
        {
            "id": "broken",
            "name": "No distribution",
            "version": "1.0.0",
            "description": "x",
            "distribution": {},
        },
    ],
    "extensions": [],
}


def feed_file(tmp_path: Path, feed: Any = FEED) -> Path:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(feed) if not isinstance(feed, str) else feed)
    return path


PLATFORMS = {f"{os}-{arch}" for os in ("darwin", "linux", "windows") for arch in ("aarch64", "x86_64")}


def entry_problems(entry: Any) -> list[str]:
    """What keeps ``entry`` from being a registry agent entry as the registry documents it (its FORMAT.md
    and contributing guide: id, name, version, description and at least one npx, uvx or binary
    distribution). Written here from that documentation: no package on the registries CI reaches carries
    the registry's own schema file, and Arbor commits no copies of other projects' files."""
    if not isinstance(entry, dict):
        return ["not an object"]
    problems = [
        f"no {key}" for key in ("id", "name", "version", "description", "distribution") if key not in entry
    ]
    if not re.fullmatch(r"[a-z][a-z0-9-]*", str(entry.get("id", ""))):
        problems.append("id is not lowercase letters, digits and hyphens")
    if not re.match(r"[0-9]+[.][0-9]+[.][0-9]+", str(entry.get("version", ""))):
        problems.append("version is not semantic")
    distribution = entry.get("distribution")
    if not isinstance(distribution, dict) or not distribution or set(distribution) - {"npx", "uvx", "binary"}:
        return [*problems, "distribution is not one or more of npx, uvx, binary"]
    for kind in ("npx", "uvx"):
        package = distribution.get(kind)
        if package is not None and not (
            isinstance(package, dict) and isinstance(package.get("package"), str)
        ):
            problems.append(f"{kind} names no package")
    for platform, target in (distribution.get("binary") or {}).items():
        if platform not in PLATFORMS or not {"archive", "cmd"} <= set(target):
            problems.append(f"binary {platform} is not a platform with an archive and a cmd")
    return problems


def feed_problems(feed: Any) -> list[str]:
    if not isinstance(feed, dict) or "version" not in feed or not isinstance(feed.get("agents"), list):
        return ["not a registry: a version and a list of agents"]
    return [
        f"{agent.get('id', '?')}: {problem}" for agent in feed["agents"] for problem in entry_problems(agent)
    ]


def test_the_test_feed_is_a_registry_by_its_documented_format() -> None:
    """The test feed is the registry's format, but for its last agent, which lists no distribution."""
    assert feed_problems({**FEED, "agents": FEED["agents"][:2]}) == []
    assert feed_problems(FEED) == ["broken: distribution is not one or more of npx, uvx, binary"]
    assert entry_problems(
        {"id": "Bad_Id", "name": "x", "version": "v1", "description": "", "distribution": {}}
    ) == [
        "id is not lowercase letters, digits and hyphens",
        "version is not semantic",
        "distribution is not one or more of npx, uvx, binary",
    ]


def test_a_feed_lists_agents_with_their_distributions(tmp_path: Path) -> None:
    feed = load_feed(str(feed_file(tmp_path)), tmp_path / "data")
    assert [agent.id for agent in feed.agents] == ["qwen-code", "zeta"]  # no distribution: skipped
    qwen, zeta = feed.agents
    assert [d.kind for d in qwen.distributions] == ["npx"]
    assert [d.label for d in zeta.distributions] == ["uvx zeta-agent==2.0.0", "binary (linux-x86_64)"]
    assert zeta.distributions[1].argv() == ["./zeta", "acp"] and not feed.from_cache


def test_the_entry_is_toml_the_settings_accept(tmp_path: Path) -> None:
    feed = load_feed((feed_file(tmp_path)).as_uri(), tmp_path / "data")
    qwen, zeta = feed.agents
    entries = [toml_entry(qwen, qwen.distributions[0]), toml_entry(zeta, zeta.distributions[0])]
    assert (
        entries[0]
        == '[agents.qwen-code]\ncommand = "npx"\nargs = ["-y", "@qwen-code/qwen-code@0.9.1", "--acp"]\n'
    )
    agents = Settings.model_validate(tomllib.loads("\n".join(entries))).agents
    assert agents["zeta"] == AgentServerSettings(
        command="uvx", args=["zeta-agent==2.0.0"], env={"ZETA_MODE": "acp"}
    )
    binary = toml_entry(zeta, zeta.distributions[1])
    assert binary.startswith("# unpack https://example.com/zeta.tar.gz") and 'command = "./zeta"' in binary
    with_cmd = Distribution("uvx", "arbor-ide==0.1.0", ["acp"], cmd="arbor")
    assert with_cmd.argv() == ["uvx", "--from", "arbor-ide==0.1.0", "arbor", "acp"]


class _Server:
    def __init__(self) -> None:
        self.body = json.dumps(FEED).encode()
        self.status = 200
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                self.send_response(server.status)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/registry.json"


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server()
    thread = threading.Thread(target=served.httpd.serve_forever, daemon=True)
    thread.start()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()
    thread.join(timeout=10)


def test_the_feed_is_cached_and_refreshed_only_when_asked(server: _Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = load_feed(server.url, data)
    assert not first.from_cache and server.requests == 1
    cached = cache_path(data, server.url)
    assert cached.is_file() and (os.name == "nt" or cached.stat().st_mode & 0o077 == 0)
    again = load_feed(server.url, data)
    assert again.from_cache and server.requests == 1 and [a.id for a in again.agents] == ["qwen-code", "zeta"]
    load_feed(server.url, data, refresh=True)
    assert server.requests == 2


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b"oops", "answered 500"),
        (200, b"<html>not json</html>", "not JSON"),
        (200, b'{"version": "1.0.0"}', "not an ACP registry"),
        (200, b"x" * 5000, "larger than 4 kB"),
    ],
)
def test_a_bad_feed_is_said_and_the_cached_one_stays(
    server: _Server, tmp_path: Path, status: int, body: bytes, message: str
) -> None:
    data = tmp_path / "data"
    load_feed(server.url, data)
    server.status, server.body = status, body
    kept = load_feed(server.url, data, refresh=True, max_bytes=4000)
    assert (
        kept.from_cache and message in kept.warning and [a.id for a in kept.agents] == ["qwen-code", "zeta"]
    )
    assert json.loads(cache_path(data, server.url).read_text())["body"] == json.dumps(FEED)  # not replaced
    with pytest.raises(RegistryError, match=message):
        load_feed(server.url, tmp_path / "empty", max_bytes=4000)


def test_unreachable_and_missing_feeds_are_explained(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="cannot read"):
        load_feed(str(tmp_path / "missing.json"), tmp_path / "data")
    with pytest.raises(RegistryError, match="cannot reach"):
        load_feed("http://127.0.0.1:9/registry.json", tmp_path / "data")  # the discard port: refused
    with pytest.raises(RegistryError, match="only https, http, file"):
        load_feed("ftp://example.com/registry.json", tmp_path / "data")
    with pytest.raises(RegistryError, match="not JSON"):
        parse_feed(b"\xff")


def test_arbors_own_entry_is_a_registry_entry() -> None:
    entry = json.loads((ACP / "arbor" / "agent.json").read_text())
    assert entry_problems(entry) == []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert entry["version"] == project["version"]
    assert entry["distribution"]["uvx"] == {
        "package": f"{project['name']}=={project['version']}",
        "args": ["acp"],
    }
    assert entry["license"] == project["license"]["text"]
    (agent,) = parse_feed(json.dumps({"version": "1.0.0", "agents": [entry]}).encode())
    assert agent.distributions[0].argv() == ["uvx", "arbor-ide==0.1.0", "acp"]
