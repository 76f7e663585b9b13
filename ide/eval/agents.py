"""``arbor eval --agent NAME|"CMD"``: another agent (ACP or CLI) run on every task, judged as Arbor's modes.

Each run is one turn of the agent on the task's workspace, exactly as ``arbor run --agent`` drives it
(:class:`~ide.headless.foreign.ForeignRun`): Arbor's backend makes a shadow of the workspace, the agent
works there (confined when ``review.confine_agents`` is on), and what it changed — by ``fs/*``, its own
tools or a shell — is captured for review. Its commands are allowed (they run in the shadow). Then every
hunk is accepted and applied to the run's workspace as the window's Apply all does, and the task's check
runs; a question's check reads what the agent answered.

Tokens are counted by a :class:`~ide.eval.proxy.MeteringProxy` in front of the model server, one per
run: :func:`pointed` makes the agent's command line and environment name the proxy where they named the
model server (``{base_url}`` and ``{model}`` in them stand for the proxy's URL and the evaluated model).
The budgets stop the agent — cancelled, then its process ended — when its calls spent the tokens or the
time ran out.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from ide.client.agentproc import AgentChoice, error_from_request
from ide.eval.proxy import MeteringProxy, Spend
from ide.eval.tasks import EvalTask, run_check
from ide.protocol.eval import AGENT_PREFIX, EvalAgent, EvalRun, RoleCost

BASE_URL = "{base_url}"
"""In an agent's command or env: the model server's URL, as the metering proxy serves it."""
MODEL = "{model}"
"""In an agent's command or env: the evaluated model's name (``--model`` without its provider)."""
AGENT_ROLE = "agent"
"""The one role of another agent's spend (the metering proxy cannot tell its calls apart)."""
CANCEL_GRACE_S = 10.0
"""Time a cancelled agent may take to end its turn before its process is ended."""


@dataclass(frozen=True)
class AgentUnderTest:
    """One ``--agent`` of the evaluation: its mode (``agent:NAME``) and how it is started."""

    mode: str
    choice: AgentChoice

    @property
    def name(self) -> str:
        return self.mode.removeprefix(AGENT_PREFIX)

    def record(self, model_server: str | None) -> EvalAgent:
        protocol = "cli" if self.choice.protocol == "cli" else "acp"
        return EvalAgent(
            mode=self.mode,
            name=self.name,
            command=shlex.join(self.choice.command),
            protocol=protocol,
            model_server=model_server,
        )


def agents_under_test(choices: list[AgentChoice]) -> list[AgentUnderTest]:
    """The agents with a mode each, named after the agent (``agent:qwen``; a second of the same name
    ``agent:qwen-2``); ValueError for Arbor itself (its modes are ``--modes``)."""
    taken: set[str] = set()
    found = []
    for choice in choices:
        if choice.is_arbor:
            raise ValueError("--agent arbor: Arbor's own agent is evaluated by --modes")
        base = "".join(c if c.isalnum() or c in "-_." else "-" for c in choice.name) or "agent"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        found.append(AgentUnderTest(AGENT_PREFIX + name, choice))
    return found


def _server_path(model_server: str) -> str:
    return urlsplit(model_server).path.rstrip("/")


def pointed(
    choice: AgentChoice,
    proxy_origin: str,
    model_server: str,
    model: str,
    environ: dict[str, str] | None = None,
) -> tuple[AgentChoice, bool]:
    """``choice`` pointed at the metering proxy, and whether anything pointed it there (else its tokens
    cannot be counted): in its command and env, ``{base_url}`` becomes the proxy's URL (the model server's
    path kept), ``{model}`` the model's name, and the model server's origin the proxy's. A variable its
    ``pass_env`` takes from Arbor's environment that names the server is given pointed, in its env."""
    source = os.environ if environ is None else environ
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(model_server))
    base_url = proxy_origin + _server_path(model_server)
    hits = 0

    def point(text: str) -> str:
        nonlocal hits
        changed = text.replace(BASE_URL, base_url).replace(origin, proxy_origin)
        hits += changed != text
        return changed.replace(MODEL, model)

    command = [point(word) for word in choice.command]
    env = {name: point(value) for name, value in choice.env.items()}
    for name in choice.pass_env:
        if name in source and name not in env and origin in source[name]:
            env[name] = point(source[name])
    return replace(choice, command=command, env=env), hits > 0


class _Transcript(io.TextIOBase):
    """One of a run's two streams: kept in ``own`` (the answer) when given, and in the shared transcript."""

    def __init__(self, transcript: list[str], own: list[str] | None = None) -> None:
        self.transcript, self.own = transcript, own

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.transcript.append(text)
        if self.own is not None:
            self.own.append(text)
        return len(text)


@dataclass
class AgentOutcome:
    """How one run of another agent went."""

    status: str
    reason: str
    spend: Spend
    metered: bool
    wall_s: float
    diff: str
    transcript: str

    def as_run(self, task: str, mode: str, attempt: int) -> EvalRun:
        """The report's record of this run (no diff or transcript file yet)."""
        spend = self.spend
        cost = RoleCost(calls=spend.calls, input_tokens=spend.input_tokens, output_tokens=spend.output_tokens)
        return EvalRun(
            task=task,
            mode=mode,
            attempt=attempt,
            status=self.status,  # type: ignore[arg-type]
            reason=self.reason,
            usage={AGENT_ROLE: cost} if self.metered else {},
            model_calls=spend.calls,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            wall_s=self.wall_s,
            metered=self.metered,
        )


async def run_agent(
    agent: AgentUnderTest,
    task: EvalTask,
    workspace: Path,
    *,
    model_server: str | None,
    model: str,
    budget_tokens: int,
    budget_s: float,
    backend_env: dict[str, str],
    confine: list[str] | None,
    backend_command: list[str] | None = None,
) -> AgentOutcome:
    """One turn of ``agent`` on ``task`` in ``workspace`` (already built), its changes applied there when
    it finished within the budgets, and the check run."""
    from ide.headless.foreign import ForeignRun

    said: list[str] = []
    answer: list[str] = []
    out, err = _Transcript(said, answer), _Transcript(said)
    started = time.monotonic()
    proxy = MeteringProxy(model_server, budget_tokens) if model_server else None
    async with contextlib.AsyncExitStack() as stack:
        if proxy is not None:
            await stack.enter_async_context(proxy)
        choice, metered = agent.choice, False
        if proxy is not None and model_server is not None:
            choice, metered = pointed(agent.choice, proxy.origin, model_server, model)
        if not metered:
            err.write("[eval] its command and env do not name the model server: its tokens are not counted\n")
        run = ForeignRun(
            str(workspace),
            choice,
            out,  # type: ignore[arg-type]
            err,  # type: ignore[arg-type]
            allow_commands=True,
            backend_command=backend_command,
            confine=confine,
            backend_env=backend_env,
        )
        status, reason, diff = "failed", "", ""
        try:
            async with run:
                status, reason = await _turn(run, task, proxy, budget_tokens, budget_s)
                captured = await run.session.capture(workspace=True)
                changes = captured.changeset if captured is not None else None
                if changes is not None and changes.files:
                    from ide.headless import apply_and_report, marked_diff

                    diff = marked_diff(changes)
                    if status == "finished" and not await apply_and_report(run.review, run.review_id, err):
                        reason = "its changes could not all be applied"
        except Exception as exc:  # the agent or the backend failed: this run's error, not the evaluation's
            status, reason = "error", _why(exc, run)
        spend = proxy.spend() if proxy is not None else Spend()
    if status == "finished":
        check = await asyncio.to_thread(run_check, task, workspace, "".join(answer))
        if check.passed and spend.tokens <= budget_tokens:
            status, reason = "solved", ""
        elif spend.tokens > budget_tokens:
            status = "over_budget"
            reason = f"its model calls spent {spend.tokens} tokens, over the budget of {budget_tokens}"
        else:
            status = "failed"
            reason = "; ".join(p for p in (reason, tail(check.output)) if p)
    return AgentOutcome(
        status=status,
        reason=reason,
        spend=spend,
        metered=metered,
        wall_s=round(time.monotonic() - started, 3),
        diff=diff,
        transcript="".join(said),
    )


async def _turn(
    run: object,
    task: EvalTask,
    proxy: MeteringProxy | None,
    budget_tokens: int,
    budget_s: float,
) -> tuple[str, str]:
    """The agent's turn, stopped at a budget: ("finished", "") or ("failed", why) for a turn it ended
    itself, ("over_budget" | "timeout", why) when stopped. The time budget counts from the prompt, as for
    Arbor's modes: the start of Arbor's backend and the shadow depends on the load, not the agent."""
    from ide.headless.foreign import ForeignRun

    assert isinstance(run, ForeignRun)
    turn = asyncio.ensure_future(run.turn(task.prompt))
    turn.add_done_callback(lambda done: done.cancelled() or done.exception())
    over = asyncio.ensure_future(proxy.over.wait()) if proxy is not None else None
    waits = {turn, over} if over is not None else {turn}
    try:
        done, _ = await asyncio.wait(
            waits,
            timeout=budget_s,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        if over is not None:
            over.cancel()
    if turn in done:
        response, _ = turn.result()
        reason = getattr(response, "stop_reason", "end_turn")
        if reason == "end_turn":
            return "finished", ""
        code = getattr(response, "exit_code", None)
        return "failed", f"it exited with code {code}" if code is not None else f"its turn ended: {reason}"
    run.cancel()  # ACP: session/cancel; a CLI agent: SIGTERM to its process group
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(turn), CANCEL_GRACE_S)
    turn.cancel()
    with contextlib.suppress(BaseException):
        await turn
    if proxy is not None and proxy.over.is_set():
        return "over_budget", f"its model calls passed the budget of {budget_tokens} tokens"
    return "timeout", f"its turn ran past the time budget of {budget_s:.0f} s"


def _why(exc: Exception, run: object) -> str:
    from acp import RequestError

    from ide.client import agentconn
    from ide.client.signin import SignInNeeded

    if isinstance(exc, RequestError):
        return error_from_request(exc).message
    if isinstance(exc, agentconn.NoAnswer):
        return exc.info.text()
    if isinstance(exc, SignInNeeded):
        return str(exc)
    said = getattr(getattr(run, "log_tail", None), "text", lambda: "")()
    if isinstance(exc, ConnectionError):
        return "the agent or Arbor's backend stopped" + (f": {tail(said, 500)}" if said else "")
    if isinstance(exc, OSError):
        return f"the agent could not start: {exc.strerror or exc}"
    return f"unexpected {type(exc).__name__}: {exc}"


def tail(text: str, limit: int = 1500) -> str:
    """The end of a long output (a failing check's), marked as cut."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]
