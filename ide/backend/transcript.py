"""A session's channel to its client, and each turn's transcript: what it says, sent and saved for
`session/load`."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from acp import Client, RequestError, text_block, update_agent_thought, update_user_message
from acp.schema import PermissionOption, SessionNotification, ToolCallProgress
from pydantic import BaseModel

from ide.backend.permissions import ask_client
from ide.backend.store import TREE_RECORD
from ide.protocol import RoleUsage
from ide.protocol import model as md
from ide.protocol.tree import TREE_NOTIFICATION, TreeEvent

if TYPE_CHECKING:
    from ide.backend.session import Session
    from ide.backend.store import SessionStore

log = logging.getLogger(__name__)


def prompt_text(blocks: list[Any]) -> str:
    """The prompt as text: text blocks, plus the text of embedded resources and links to others."""
    parts = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(f"<file uri={resource.uri!r}>\n{text}\n</file>" if text else f"[{resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
    return "\n\n".join(p for p in parts if p)


class Channel:
    """A session's channel to its client, given to the session when it is built.

    What a turn says goes through that turn's :class:`Transcript` (:meth:`open_turn`), which saves it as it
    goes; the rest is sent as it happens: the slash commands (once per session and connection), the context
    fill and the spend (to Arbor's window only: other clients have no use for them), and a model router's
    notice (a thought of the running turn).
    """

    def __init__(
        self, conn: Client, session_id: str, cwd: str, store: SessionStore, *, arbor_client: bool
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.cwd = cwd
        self.store = store
        self.arbor_client = arbor_client
        """Arbor's window: it wants tree events, the context fill and the spend."""
        self._turn: Transcript | None = None
        self._commands_sent = False
        self._background: set[asyncio.Future[Any]] = set()

    def open_turn(self, text: str) -> Transcript:
        """The channel of a turn that answers ``text`` (saved as the turn's question first)."""
        self._turn = Transcript(self, text)
        return self._turn

    async def notice(self, note: str) -> None:
        """What a model router tells the user (a fallback model taken): a thought of the running turn."""
        update = update_agent_thought(text_block(note))
        if self._turn is not None:
            await self._turn.emit(update)
        else:
            await self.conn.session_update(session_id=self.session_id, update=update)

    async def offer_commands(self) -> None:
        """Tell the client the slash commands (once per session and connection)."""
        if self._commands_sent:
            return
        from ide.backend.commands import commands_update

        self._commands_sent = True
        await self.conn.session_update(session_id=self.session_id, update=commands_update())

    def context_fill(self, role: str, tokens: int, window: int) -> None:
        """How full the latest model request is of the model's window (sent without waiting)."""
        if not self.arbor_client:
            return
        fill = md.ContextFill(session_id=self.session_id, role=role, tokens=tokens, window=window)
        self._send(md.CONTEXT_NOTIFICATION, fill.model_dump())

    def usage_spent(self, usage: dict[str, RoleUsage]) -> None:
        """What the session's model calls have spent so far, mid-call included (sent without waiting)."""
        if not self.arbor_client:
            return
        spent = md.UsageSpent(session_id=self.session_id, usage=usage)
        self._send(md.USAGE_NOTIFICATION, spent.model_dump(mode="json"))

    def _send(self, method: str, params: dict[str, Any]) -> None:
        pending = asyncio.ensure_future(self.conn.ext_notification(method, params))
        self._background.add(pending)
        pending.add_done_callback(self._background.discard)


class Transcript:
    """One turn's channel to the client: session updates and search-tree events, saved as they go.

    The question is saved before the turn runs and the turn's updates at every finished tool call, so a
    backend killed mid-turn still replays what the user asked and what the agent had done.
    """

    def __init__(self, channel: Channel, text: str) -> None:
        self._channel = channel
        self._recorded: list[dict[str, Any]] = []
        store, session_id, cwd = channel.store, channel.session_id, channel.cwd
        self._turn = store.next_turn(session_id, cwd)
        user = update_user_message(text_block(text)).model_dump(mode="json", by_alias=True, exclude_none=True)
        store.append_events(session_id, cwd, self._turn, [user])
        store.update(session_id, cwd, title=text.strip().splitlines()[0][:80])

    def flush(self) -> None:
        """Save what was sent since the last flush."""
        channel = self._channel
        channel.store.append_events(channel.session_id, channel.cwd, self._turn, self._recorded)
        self._recorded.clear()

    async def emit(self, update: BaseModel) -> None:
        self._recorded.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))
        if isinstance(update, ToolCallProgress):
            self.flush()  # before the client hears of it, so what it saw is on disk
        await self._channel.conn.session_update(session_id=self._channel.session_id, update=update)

    async def emit_tree(self, events: list[TreeEvent]) -> None:
        batch = [event.model_dump(mode="json", exclude_defaults=True) for event in events]
        self._recorded.append({TREE_RECORD: batch})
        if self._channel.arbor_client:
            await self._channel.conn.ext_notification(
                TREE_NOTIFICATION, {"session_id": self._channel.session_id, "events": batch}
            )


async def replay(conn: Client, store: SessionStore, session_id: str, cwd: str, *, arbor_client: bool) -> None:
    """Send a stored session's history again (``session/load``): its updates, and its trees to Arbor."""
    for payload in store.events(session_id, cwd):
        if TREE_RECORD in payload:
            if arbor_client:
                params = {"session_id": session_id, "events": payload[TREE_RECORD]}
                await conn.ext_notification(TREE_NOTIFICATION, params)
            continue
        notification = SessionNotification.model_validate({"sessionId": session_id, "update": payload})
        await conn.session_update(session_id=session_id, update=notification.update)


async def ask_to_run_tests(
    conn: Client, session: Session, title: str, command: str, purpose: str = "tests"
) -> bool:
    """Ask the client before a command runs in a scratch worktree (a workflow's test stage, LATS
    evaluating an answer, a plan executor's run_command): allow once, always (this exact command, for the
    rest of the session), or no."""
    if command in session.allowed_commands:
        return True
    options = [
        PermissionOption(option_id="allow", name="Run it", kind="allow_once"),
        PermissionOption(
            option_id="always", name="Always run this command in this session", kind="allow_always"
        ),
        PermissionOption(option_id="deny", name="Do not run it", kind="reject_once"),
    ]
    where = "a scratch git worktree with the proposed changes"
    try:
        choice = await ask_client(
            conn,
            session.id,
            "arbor-tests",
            title,
            "execute",
            options,
            raw_input={"command": command, "purpose": purpose, "where": where},
        )
    except RequestError as exc:
        log.info("client cannot be asked to run %s (%s): not running it", command, exc)
        return False
    if choice == "always":
        session.allowed_commands.add(command)
    return choice in ("allow", "always")
