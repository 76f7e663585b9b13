"""Answering ``session/prompt``: the turn runs as its session's task (:mod:`ide.backend.turn`), a cancel
stops it, the features' hooks run at its end (the review offers its changes) or after a cancel (they stay
pending), and a failure is answered as a classified error the client can show with its fix.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import PromptResponse

from ide.backend.extensions import registry
from ide.backend.limits import cap_prompt
from ide.backend.transcript import prompt_text
from ide.gcpolicy import settle_heap
from ide.protocol import ERROR_CODE, META_KEY, ErrorInfo, TurnMeta, error_data

if TYPE_CHECKING:
    from ide.backend.extensions import Backend
    from ide.backend.session import Session

log = logging.getLogger(__name__)


def arbor_error(info: ErrorInfo) -> RequestError:
    """A JSON-RPC error carrying a classified, fixable failure."""
    return RequestError(ERROR_CODE, info.text(), error_data(info))


async def answer_prompt(backend: Backend, session: Session, blocks: list[Any]) -> PromptResponse:
    """Run one turn of ``session`` for the prompt ``blocks`` and answer with its stop reason and figures."""
    if session.prompting:
        # Until its answer is sent (changes still being offered included), or a second turn would reset
        # the first one's cancel and the two would cancel each other, leaving both unanswered.
        raise RequestError.invalid_request(
            {"sessionId": session.id, "message": "a prompt turn is already running in this session"}
        )
    text, cut = cap_prompt(prompt_text(blocks))
    if not text.strip():
        raise RequestError.invalid_params({"message": "the prompt is empty"})
    if cut is not None:
        session.notice(cut)
    from ide.backend.turn import learn_error, run_turn
    from ide.llm import ModelError

    transcript = session.channel.open_turn(text)
    # The turn's first step is in its task, so a cancel that arrives while the commands are sent stops it.
    task = session.start_turn(run_turn(session, text, transcript))
    try:
        result = await task
        if not session.cancel_requested:
            await registry().turn_ended(backend, session)  # e.g. its changes offered for review
        if session.cancel_requested:  # stopped while its changes were being offered
            return await _cancelled(backend, session)
    except asyncio.CancelledError:
        if not session.cancel_requested:
            task.cancel()  # the request itself was cancelled: the connection is closing
            raise
        transcript.flush()
        return await _cancelled(backend, session)
    except ModelError as exc:
        await session.save_review()
        log.warning("turn failed: %s", exc)
        await learn_error(session, text, exc.info.text())
        raise arbor_error(exc.info) from None
    except Exception as exc:
        log.exception("turn failed")
        await learn_error(session, text, f"{type(exc).__name__}: {exc}")
        raise arbor_error(
            ErrorInfo(kind="internal", message=f"The agent failed: {type(exc).__name__}: {exc}")
        ) from None
    finally:
        session.prompt_answered()
        transcript.flush()
        settle_heap(full=False)  # once: what the first turn imported is never walked again (ide.gcpolicy)
    await session.save_review()
    return PromptResponse(
        stop_reason=result.stop_reason, field_meta={META_KEY: result.meta.model_dump(mode="json")}
    )


async def _cancelled(backend: Backend, session: Session) -> PromptResponse:
    # What the agent proposed before the user stopped it (a search's best branch so far) stays
    # pending, never dropped and never written; the response lists it.
    pending = session.changeset.changed_paths()
    await registry().turn_cancelled(backend, session)
    await session.save_review()
    meta = TurnMeta(usage=session.router.usage_snapshot(), pending=pending)
    return PromptResponse(stop_reason="cancelled", field_meta={META_KEY: meta.model_dump(mode="json")})
