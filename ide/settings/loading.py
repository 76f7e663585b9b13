"""Reading and merging the settings layers, with the workspace's trusted keys held back until trusted."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, TypeAdapter, ValidationError

from ide.settings.projectenv import project_interpreter
from ide.settings.sections import APP_NAME, CONFIG_FILE, WORKSPACE_DIR, Settings
from ide.trust import (
    ALWAYS_UNION,
    TRUST_ENV,
    TRUST_FILE,
    HeldBack,
    TrustStore,
    kind_of,
    reason,
    trust_digest,
)


class SettingsError(ValueError):
    """A setting that could not be read; the message names the place, the key and the expected type."""


@dataclass(frozen=True)
class SettingKey:
    """One leaf setting: its dotted key, type and the environment variables that set it."""

    key: str
    annotation: Any
    env: tuple[str, ...]
    description: str | None

    @property
    def adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.annotation)


def _leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[SettingKey]:
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _leaves(annotation, path)
            continue
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        env = tuple(extra.get("env") or ["ARBOR_" + "_".join(path).upper()])
        yield SettingKey(".".join(path), annotation, env, info.description)


SETTING_KEYS: dict[str, SettingKey] = {leaf.key: leaf for leaf in _leaves(Settings)}


@dataclass
class ResolvedSettings:
    """Settings plus, for every dotted key, where its value came from, and what waits for trust."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    trust_keys: list[HeldBack] = field(default_factory=list)
    """The workspace's settings that need trust (ide.trust), applied or not."""
    trusted: bool = False
    """The workspace's trusted keys were applied (it asked for some, and the user trusts them)."""
    digest: str | None = None
    """Digest of the workspace's trusted keys (ide.trust), None when it sets none."""
    workspace: Path | None = None

    @property
    def held_back(self) -> list[HeldBack]:
        """Workspace settings not applied because the workspace is not trusted (empty once it is)."""
        return [] if self.trusted else self.trust_keys

    def rows(self) -> list[tuple[str, Any, str]]:
        """(key, value, source) for every setting, in declaration order."""
        dumped = self.settings.model_dump(mode="json")
        rows = []
        for key in SETTING_KEYS:
            value: Any = dumped
            for part in key.split("."):
                value = value[part]
            rows.append((key, value, self.sources.get(key, "default")))
        return rows


def user_config_path() -> Path:
    """The user's config.toml (``ARBOR_CONFIG_DIR`` overrides the platform's config dir)."""
    base = os.environ.get("ARBOR_CONFIG_DIR") or platformdirs.user_config_dir(APP_NAME, appauthor=False)
    return Path(base) / CONFIG_FILE


def workspace_config_path(workspace: Path) -> Path:
    """The workspace's optional ``.arbor/config.toml``."""
    return workspace / WORKSPACE_DIR / CONFIG_FILE


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("pathlib.", "")


def _describe_error(exc: ValidationError, annotation: Any) -> str:
    first = exc.errors()[0]
    expected = first.get("msg", "invalid value")
    return f"expected {_type_name(annotation)} ({expected})"


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in table.items():
        key = f"{prefix}{name}"
        if key in SETTING_KEYS:
            yield key, value
        elif isinstance(value, Mapping):
            yield from _flatten(value, key + ".")
        else:
            yield key, value


def _line_of(text: str, key: str) -> int | None:
    """Line (1-based) where ``key`` is assigned in TOML ``text``, tracking [table] headers."""
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"^\[\s*([A-Za-z0-9_.\-\s]+?)\s*\]", stripped)
        if header:
            table = header.group(1).replace(" ", "")
            if table.startswith(key + "."):
                return number  # a table inside a table setting: [lsp.servers.jedi] for lsp.servers
            continue
        assign = re.match(r"^([A-Za-z0-9_.\-\"]+)\s*=", stripped)
        if assign:
            full = ".".join(p for p in (table, assign.group(1).replace('"', "")) if p)
            if full == key or key.startswith(full + "."):
                return number
    return None


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read settings ({exc.strerror})") from exc
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from exc


def _parse_env(leaf: SettingKey, raw: str) -> Any:
    """Environment values are strings; lists and dicts may be JSON or comma-separated."""
    adapter = leaf.adapter
    text = raw.strip()
    if text[:1] in "[{":
        return adapter.validate_json(text)
    origin = getattr(leaf.annotation, "__origin__", None)
    if origin is list:
        return adapter.validate_python([part.strip() for part in text.split(",") if part.strip()])
    if origin is dict:
        pairs = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        return adapter.validate_python({k.strip(): v.strip() for k, v in pairs.items()})
    if text == "" and "None" in str(leaf.annotation):
        return None
    return adapter.validate_python(text)


def _put(values: dict[str, Any], key: str, value: Any) -> None:
    """Record a layer's value; tables (dict settings) merge key by key onto the layers below."""
    if isinstance(value, dict):
        below = values.get(key)
        if below is None:
            below = _default_of(key)
        value = {**below, **value}
    values[key] = value


def _default_of(key: str) -> Any:
    value: Any = Settings().model_dump()
    for part in key.split("."):
        value = value[part]
    return value


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def load_settings(
    workspace: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    trust: bool | None = None,
) -> ResolvedSettings:
    """Resolve settings for ``workspace`` (None: user config and environment only).

    The workspace's ``.arbor/config.toml`` is input, not configuration (ide.trust): its trusted keys
    apply only when ``trust`` is True, or, when ``trust`` is None, when ``ARBOR_TRUST_WORKSPACE=1`` or
    the user trusted these exact settings of this workspace before; the rest are in ``held_back``.
    Raises SettingsError naming the file and line or the environment variable, the key and the type.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    files: list[Path] = []

    user_path = user_config or user_config_path()
    layers = [(user_path, False)]
    if workspace is not None:
        layers.append((workspace_config_path(workspace), True))
    from_workspace: list[tuple[str, Any, str]] = []
    for path, is_workspace in layers:
        if not path.is_file():
            continue
        files.append(path)
        for key, value, where in _read_layer(path):
            if is_workspace:
                from_workspace.append((key, value, where))
            else:
                _put(values, key, value)
                sources[key] = where

    held = _workspace_layer(values, sources, from_workspace)
    if workspace is not None:
        held += _own_interpreter(workspace, values, from_workspace, environ)
    digest = trust_digest(held) if held else None
    if trust is None and held and workspace is not None:
        trust = environ.get(TRUST_ENV) == "1" or TrustStore(trust_store_path(user_path)).is_trusted(
            workspace, digest or ""
        )
    trusted = bool(trust)
    if trusted:
        for item in held:
            _put(values, item.key, item.value)
            sources[item.key] = f"{item.source} (trusted)"

    for leaf in SETTING_KEYS.values():
        for name in leaf.env:
            if name not in environ:
                continue
            raw = environ[name]
            try:
                _put(values, leaf.key, _parse_env(leaf, raw))
            except (ValidationError, ValueError) as exc:
                detail = (
                    _describe_error(exc, leaf.annotation)
                    if isinstance(exc, ValidationError)
                    else f"expected {_type_name(leaf.annotation)}"
                )
                raise SettingsError(f"environment {name}={raw!r}: {leaf.key}: {detail}") from None
            sources[leaf.key] = f"env {name}"
            break

    tree: dict[str, Any] = {}
    for key, value in values.items():
        _set(tree, key, value)
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        raise SettingsError(f"{sources.get(key, 'settings')}: {key}: {error['msg']}") from None
    return ResolvedSettings(
        settings=settings,
        sources=sources,
        files=files,
        trust_keys=held,
        trusted=trusted,
        digest=digest,
        workspace=Path(os.path.realpath(workspace)) if workspace is not None else None,
    )


def trust_store_path(user_config: Path | None = None) -> Path:
    """The user's record of trusted workspaces, beside their config.toml."""
    return (user_config or user_config_path()).parent / TRUST_FILE


def trust_store() -> TrustStore:
    """The user's trust record (``ARBOR_CONFIG_DIR`` moves it with the config)."""
    return TrustStore(trust_store_path())


def _read_layer(path: Path) -> Iterator[tuple[str, Any, str]]:
    """(key, validated value, FILE:LINE) of every setting in one config file."""
    table, text = _read_toml(path)
    for key, raw in _flatten(table):
        line = _line_of(text, key)
        where = f"{path}:{line}" if line else str(path)
        leaf = SETTING_KEYS.get(key)
        if leaf is None:
            known = ", ".join(k for k in SETTING_KEYS if k.split(".")[0] == key.split(".")[0])
            hint = f" (known keys here: {known})" if known else ""
            raise SettingsError(f"{where}: unknown setting '{key}'{hint}")
        try:
            if isinstance(raw, bool) and "bool" not in str(leaf.annotation):
                # pydantic would read true as 1; in a typed file that is a mistake, not a number
                raise ValidationError.from_exception_data(
                    "bool", [{"type": "int_type", "loc": (key,), "input": raw}]
                )
            value = leaf.adapter.validate_python(raw)
        except ValidationError as exc:
            raise SettingsError(
                f"{where}: {key} = {raw!r}: {_describe_error(exc, leaf.annotation)}"
            ) from None
        yield key, value, where


INTERPRETER_KEY = "lsp.python_interpreter"


def _own_interpreter(
    workspace: Path, values: dict[str, Any], layer: list[tuple[str, Any, str]], environ: Mapping[str, str]
) -> list[HeldBack]:
    """The workspace's own Python environment, as a setting that waits for trust like any command the
    repository names; nothing when the user, the environment or the workspace's config sets one."""
    if INTERPRETER_KEY in values or any(key == INTERPRETER_KEY for key, _, _ in layer):
        return []
    if any(name in environ for name in SETTING_KEYS[INTERPRETER_KEY].env):
        return []
    found = project_interpreter(workspace, environ)
    if found is None:
        return []
    why = "the workspace's own Python environment: the language server runs it and what its packages run"
    return [HeldBack(INTERPRETER_KEY, str(found.path), found.convention, why)]


def _workspace_layer(
    values: dict[str, Any], sources: dict[str, str], layer: list[tuple[str, Any, str]]
) -> list[HeldBack]:
    """Apply what a workspace may set untrusted; return what waits for trust (ide.trust)."""
    held: list[HeldBack] = []
    for key, value, where in layer:
        kind = kind_of(key, value)
        below = values.get(key, _default_of(key))
        if kind == "preference":
            _put(values, key, value)
            sources[key] = where
        elif kind == "trusted":
            held.append(HeldBack(key, _plain(value), where, reason(key, value)))
        elif kind == "union":
            added = [item for item in value if item not in below]
            if added:
                values[key] = [*below, *added]
                sources[key] = f"{sources.get(key, 'default')} + {where}"
            if key not in ALWAYS_UNION and any(item not in value for item in below):
                held.append(HeldBack(key, list(value), where, reason(key, value)))
        elif value <= below:  # at_most: a lower limit applies at once, a higher one waits
            _put(values, key, value)
            sources[key] = where
        else:
            held.append(HeldBack(key, value, where, reason(key, value)))
    return held


def _plain(value: Any) -> Any:
    """Validated values as plain data (models of lsp.servers / workflows.sources become dicts)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def to_toml_value(value: Any) -> str:
    """Render a resolved value the way it would be written in config.toml (for doctor output)."""
    if value is None:
        return "(unset)"
    return json.dumps(value) if not isinstance(value, str) else value
