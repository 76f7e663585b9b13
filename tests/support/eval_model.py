"""A simulated model working on ``arbor eval`` tasks, for FakeOllama's ``responder`` hook (tests only).

It answers what each request asks, as a real model behind Ollama would, through the real
langchain-ollama client (FakeOllama counts the tokens):

- a request with ``format`` (a JSON schema) gets a schema-valid instance: enums, numbers within their
  bounds, required fields, arrays of their minimum length — filled from what the prompt shows (a node id
  it lists, a workflow of the task's kind, a high score once the work is done, ``is_solution`` /
  ``done`` / ``terminate`` once it is);
- a request whose system prompt asks for a JSON object in its text (the plan planner, executor and
  replanner, workflow stage reports) gets that object as text;
- a request offering ``edit_file`` gets, for the task whose prompt the conversation holds, one step at a
  time: read the file, then the edits of the task's ``reference`` diff (the reversed ``mutation`` when
  there is none), then a final answer — or, by its **skill**, a wrong edit (``wrong``), endless reading
  (``read``, to run over a budget), or a wrong first session and a right later one (``second_try``, the
  retry baseline's case);
- a role offered a tool that records its result (the plan planner's ``create_subtask``, the executor's
  ``attempt_completion``) calls it once before answering;
- anything else gets a short answer; for a question, its ``sample_answer``.

Skills are looked up by ``"task/mode"``, then task id, then mode (``react``, ``lats``, ``tot``,
``plan``, ``workflow``, recognised from the system prompt; the retry baseline runs ``react``), else
``default``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ide.eval.tasks import EvalTask
from ide.search.base import schema_hint
from ide.search.plan_prompts import PlanReply, ReplanReply, TaskReport

Skill = Literal["solve", "wrong", "read", "second_try"]
EDIT_TOOLS = ("edit_file", "write_file", "create_file")
_PROPOSED = re.compile(r"\b(edited|wrote|created) \S+ \(proposed")
_NODE_ID = re.compile(r"\bn\d+\b")
_WORKFLOW_LINE = re.compile(r"^- ([A-Za-z0-9_][A-Za-z0-9_.-]*) \((\w+)\)", re.MULTILINE)
WORKFLOW_TYPES = {
    "bug": ("code_fix",),
    "feature": ("code_implementation", "code_fix"),
    "question": ("investigation", "analysis", "research"),
}
TEXT_REPLIES = (PlanReply, ReplanReply, TaskReport)
"""Models whose JSON some prompts ask for in the reply's text (no ``format``)."""
READ_WINDOW = 20
CREATE_SUBTASK, ATTEMPT_COMPLETION = "create_subtask", "attempt_completion"
"""Tools of the plan planner and executor that record their result (called once, when offered)."""


@dataclass
class Edit:
    path: str
    old: str | None
    """None: create the file with ``new``."""
    new: str


@dataclass
class SimTask:
    """What the simulated model "knows" of one task."""

    id: str
    kind: str
    prompt: str
    summary: str
    edits: list[Edit] = field(default_factory=list)
    sample_answer: str | None = None

    @property
    def key(self) -> str:
        return " ".join(self.prompt.split())[:300]

    @property
    def focus(self) -> str:
        return self.edits[0].path if self.edits else "."


def parse_reference(diff: str) -> list[Edit]:
    """The edits of a unified diff: per hunk, its old lines (context + removed) → new lines."""
    edits: list[Edit] = []
    path: str | None = None
    created = False
    old: list[str] = []
    new: list[str] = []
    in_hunk = False

    def flush() -> None:
        if in_hunk and path is not None and (old or new):
            text_old, text_new = "\n".join(old) + "\n", "\n".join(new) + "\n"
            edits.append(Edit(path, None if created else text_old, text_new))

    for line in diff.splitlines():
        if line.startswith("--- "):
            flush()
            in_hunk, old, new = False, [], []
            created = line[4:].strip() == "/dev/null"
        elif line.startswith("+++ "):
            target = line[4:].strip().split("\t")[0]
            path = target[2:] if target.startswith("b/") else target
        elif line.startswith("@@"):
            flush()
            in_hunk, old, new = True, [], []
        elif in_hunk and line.startswith("\\"):
            continue
        elif in_hunk and line[:1] in (" ", ""):
            old.append(line[1:])
            new.append(line[1:])
        elif in_hunk and line.startswith("-"):
            old.append(line[1:])
        elif in_hunk and line.startswith("+"):
            new.append(line[1:])
    flush()
    return edits


def sim_task(task: EvalTask) -> SimTask:
    """The simulator's view of ``task``: its fix from the reference (or the reversed mutation)."""
    edits = parse_reference(task.reference) if task.reference else []
    if not edits:
        edits = [Edit(m.path, m.replace, m.find) for m in task.mutation if m.replace]
    return SimTask(task.id, task.kind, task.prompt, task.summary, edits, task.sample_answer)


def architecture_of(system: str) -> str:
    """The architecture asking, from its system prompt."""
    if "Tree-of-Thoughts" in system:
        return "tot"
    if any(
        marker in system
        for marker in (
            "one branch of a search",
            "You score one step",
            "partial trajectory",
            "attempt at a task",
        )
    ):
        return "lats"
    if re.search(r"You are the (planner|executor|replanner) of Arbor", system):
        return "plan"
    if system.startswith("You are Arbor, a coding agent working in the workspace"):
        return "react"
    return "workflow"


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _calls(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the assistant made earlier in the conversation."""
    found = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            args = function.get("arguments") or {}
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {}
            found.append((str(function.get("name")), dict(args) if isinstance(args, dict) else {}))
    return found


class EvalModel:
    """The responder: ``FakeOllama(responder=EvalModel(tasks, skills={...}))``; thread-safe."""

    def __init__(
        self, tasks: Iterable[EvalTask], skills: Mapping[str, Skill] | None = None, default: Skill = "solve"
    ) -> None:
        self.tasks = [sim_task(t) for t in tasks]
        self.skills = dict(skills or {})
        self.default = default
        self.requests: list[tuple[str, str | None]] = []
        """(architecture, task id) of every request answered, in order."""
        self._lock = threading.Lock()
        self._sessions: dict[str, int] = {}

    def skill(self, task: SimTask, mode: str) -> Skill:
        for key in (f"{task.id}/{mode}", task.id, mode):
            if key in self.skills:
                return self.skills[key]
        return self.default

    def find_task(self, messages: list[Mapping[str, Any]]) -> SimTask | None:
        text = " ".join(" ".join(_text(m).split()) for m in messages)
        matches = [t for t in self.tasks if t.key and t.key in text]
        if matches:
            return max(matches, key=lambda t: len(t.key))
        return self.tasks[0] if len(self.tasks) == 1 else None

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = next((_text(m) for m in messages if m.get("role") == "system"), "")
        mode = architecture_of(system)
        task = self.find_task(messages)
        with self._lock:
            self.requests.append((mode, task.id if task else None))
        if task is None:
            return {"content": "I cannot tell which task this is about."}
        progress = self._progress(task, messages)
        schema = body.get("format")
        if schema:
            filled = Filler(task, messages, progress).fill(schema if isinstance(schema, dict) else {})
            return {"content": json.dumps(filled)}
        tools = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or []}
        if "edit_file" in tools:
            step = self._step(task, mode, messages)
            if step is not None:
                return {"content": "", "tool_calls": [step]}
            progress = True
        closing = self._closing_call(task, tools, messages, progress)
        if closing is not None:
            return {"content": "", "tool_calls": [closing]}
        return {"content": self._answer(task, system, messages, progress)}

    def _closing_call(
        self, task: SimTask, tools: set[str], messages: list[Mapping[str, Any]], progress: bool
    ) -> dict[str, Any] | None:
        """A role's own tool that records its result, once: a planner's subtask, an executor's completion."""
        made = {name for name, _ in _calls(messages)}
        if CREATE_SUBTASK in tools and CREATE_SUBTASK not in made:
            title = f"Fix {task.summary}" if task.kind != "question" else f"Answer: {task.summary}"
            return _call(CREATE_SUBTASK, title=title[:200], detail=task.prompt[:1000])
        if ATTEMPT_COMPLETION in tools and ATTEMPT_COMPLETION not in made:
            status = "done" if progress else "failed"
            return _call(ATTEMPT_COMPLETION, status=status, summary=final_text(task, progress))
        return None

    def _progress(self, task: SimTask, messages: list[Mapping[str, Any]]) -> bool:
        """Whether the work looks done from this conversation: an answer is known, or an edit was made."""
        if task.kind == "question":
            return True
        if any(name in EDIT_TOOLS for name, _ in _calls(messages)):
            return True
        return any(_PROPOSED.search(_text(m)) for m in messages)

    def _step(self, task: SimTask, mode: str, messages: list[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The next tool call of an editing agent on ``task``, or None when it is time to answer."""
        if task.kind == "question":
            return None
        skill = self.skill(task, mode)
        calls = _calls(messages)
        reads = [args for name, args in calls if name == "read_file"]
        edits = [args for name, args in calls if name in EDIT_TOOLS]
        if skill == "read":
            start = 1 + (len(reads) % 10) * READ_WINDOW
            return _call("read_file", path=task.focus, start_line=start, end_line=start + READ_WINDOW - 1)
        if skill == "second_try":
            if not reads:
                with self._lock:
                    self._sessions[task.id] = seen = self._sessions.get(task.id, 0) + 1
                # The first read says which session this is: later requests of it read it back.
                return (
                    _call("read_file", path=task.focus, start_line=1)
                    if seen == 1
                    else _call("read_file", path=task.focus)
                )
            skill = "wrong" if reads[0].get("start_line") == 1 else "solve"
        if not reads:
            return _call("read_file", path=task.focus)
        if skill == "wrong":
            if edits or not task.edits or task.edits[0].old is None:
                return None
            first = task.edits[0]
            assert first.old is not None
            indent = first.old[: len(first.old) - len(first.old.lstrip())]
            return _call(
                "edit_file", path=first.path, old_text=first.old, new_text=f"{indent}# checked\n{first.old}"
            )
        done = {(a.get("path"), a.get("old_text")) for a in edits}
        for edit in task.edits:
            if edit.old is None and (edit.path, None) not in done:
                return _call("create_file", path=edit.path, content=edit.new)
            if edit.old is not None and (edit.path, edit.old) not in done:
                return _call("edit_file", path=edit.path, old_text=edit.old, new_text=edit.new)
        return None

    def _answer(self, task: SimTask, system: str, messages: list[Mapping[str, Any]], progress: bool) -> str:
        """A final reply: the JSON object the prompt asks for in text, else prose."""
        prompt_text = system + "\n" + "\n".join(_text(m) for m in messages[-2:])
        for model in TEXT_REPLIES:
            if schema_hint(model) in prompt_text:
                return json.dumps(Filler(task, messages, progress).fill(model.model_json_schema()))
        return final_text(task, progress)


def final_text(task: SimTask, progress: bool) -> str:
    if task.kind == "question":
        return task.sample_answer or "I do not know."
    if progress:
        where = ", ".join(sorted({e.path for e in task.edits})) or "the code"
        return f"Fixed: {task.summary}. The change is in {where}."
    return f"I am still looking into {task.focus}; the cause of '{task.summary}' is not clear yet."


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


class Filler:
    """A schema-valid instance of a JSON schema, filled from what the request shows."""

    def __init__(self, task: SimTask, messages: list[Mapping[str, Any]], progress: bool) -> None:
        self.task = task
        self.progress = progress
        self.last = next((_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
        self.system = next((_text(m) for m in messages if m.get("role") == "system"), "")
        self.defs: dict[str, Any] = {}

    def fill(self, schema: Mapping[str, Any]) -> Any:
        self.defs = dict(schema.get("$defs") or {})
        return self._value(schema, "")

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._resolve(self.defs.get(ref.rsplit("/", 1)[-1], {}))
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            usable = [o for o in options if self._resolve(o).get("type") != "null"]
            return self._resolve(usable[0] if usable else options[0])
        return schema

    def _value(self, schema: Mapping[str, Any], name: str) -> Any:
        schema = self._resolve(schema)
        if "enum" in schema:
            values = list(schema["enum"])
            return "done" if "done" in values else values[0]
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if kind == "object":
            return {key: self._value(sub, key) for key, sub in (schema.get("properties") or {}).items()}
        if kind == "array":
            return self._array(schema, name)
        if kind == "boolean":
            return self.progress if name in ("is_solution", "done", "terminate") else False
        if kind in ("number", "integer"):
            low = float(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
            high = float(schema.get("maximum", schema.get("exclusiveMaximum", max(low, 10))))
            value = (9.0 if self.progress else 4.0) if name == "score" else (low + high) / 2
            value = min(max(value, low), high)
            return int(value) if kind == "integer" else value
        return self._string(name)

    def _array(self, schema: Mapping[str, Any], name: str) -> list[Any]:
        items = schema.get("items") or {}
        count = int(schema.get("minItems", 0))
        if name == "tasks" and not self.progress:
            count = max(count, 1)
        if name == "continue_ids":
            ids = _NODE_ID.findall(self.last)
            return [] if self.progress or not ids else [ids[0]]
        if name == "thoughts":
            count = max(count, 1)
        return [self._value(items, name.rstrip("s")) for _ in range(count)]

    def _string(self, name: str) -> str:
        task = self.task
        if name == "node_id":
            ids = _NODE_ID.findall(self.last)
            return ids[0] if ids else "n1"
        if name == "workflow":
            listed = _WORKFLOW_LINE.findall(self.system)
            for wanted in WORKFLOW_TYPES.get(task.kind, ()):
                for workflow, kind in listed:
                    if kind == wanted:
                        return workflow
            return listed[0][0] if listed else "bugfix"
        if name in ("answer", "summary", "analysis", "detail", "findings"):
            return final_text(task, self.progress)
        if name in ("task", "title"):
            return f"Fix {task.summary} in {task.focus}" if task.kind != "question" else task.summary
        return f"{name or 'value'} for {task.id}"
