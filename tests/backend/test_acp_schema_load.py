"""The ACP SDK's schema imported the cheap way (``ide.acpload``) is the same schema: every model has the same
JSON schema but for the descriptions taken from attribute docstrings, and real messages validate and
serialise byte for byte as with a plain import. Each side runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

DESCRIBE = r"""
import inspect, json, sys
if sys.argv[1] == "arbor":
    import ide  # installs the loader
import acp.schema as schema
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node

classes = [
    cls
    for name, cls in sorted(vars(schema).items())
    if inspect.isclass(cls) and issubclass(cls, BaseModel) and cls.__module__ == schema.__name__
]
_, every = models_json_schema([(cls, "validation") for cls in classes])  # each model's schema, once
models = strip(every["$defs"])
messages = [
    ("SessionNotification", {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "héllo"}}}),
    ("SessionNotification", {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1",
        "title": "Edit a.py", "kind": "edit", "status": "in_progress",
        "locations": [{"path": "/w/a.py", "line": 3}], "rawInput": {"path": "a.py"}}}),
    ("SessionNotification", {"sessionId": "s1", "update": {"sessionUpdate": "plan",
        "entries": [{"content": "read", "priority": "high", "status": "pending"}]}}),
    ("InitializeRequest", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True,
        "writeTextFile": True}, "terminal": False, "_meta": {"arbor": {"review": True}}}}),
    ("PromptRequest", {"sessionId": "s1", "prompt": [{"type": "text", "text": "fix it"},
        {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}]}),
    ("RequestPermissionRequest", {"sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "Run tests"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}),
]
dumped = []
for name, payload in messages:
    model = getattr(schema, name).model_validate(payload)
    dumped.append(model.model_dump_json(by_alias=True, exclude_none=True))
print(json.dumps({"loader": type(schema.__loader__).__name__, "models": models, "messages": dumped}))
"""


def describe(side: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", DESCRIBE, side], capture_output=True, text=True, timeout=100, check=True
    )
    return json.loads(done.stdout)


def test_the_cheap_import_gives_the_same_models_and_the_same_messages() -> None:
    plain, arbor = describe("plain"), describe("arbor")
    assert arbor["loader"] == "_SchemaLoader" and plain["loader"] != "_SchemaLoader"
    assert len(plain["models"]) > 200  # type: ignore[arg-type]
    assert arbor["models"] == plain["models"]
    assert arbor["messages"] == plain["messages"]


def test_pydantic_is_left_as_it_was_for_every_other_model(tmp_path: Path) -> None:
    script = r"""
import ide, acp.schema
from pydantic import BaseModel
from pydantic._internal import _config

class Later(BaseModel):
    x: int
    '''the x'''
    model_config = {"use_attribute_docstrings": True}

print(_config.config_defaults["defer_build"], type(Later.__pydantic_validator__).__name__,
      Later.model_fields["x"].description)
"""
    (tmp_path / "later.py").write_text(script)  # a file: pydantic reads a class's docstrings from its source
    done = subprocess.run(
        [sys.executable, str(tmp_path / "later.py")], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=2) == ["False", "SchemaValidator", "the x\n"]
