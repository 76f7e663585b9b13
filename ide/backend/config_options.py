"""What a session lets any ACP client set (``configOptions``: mode, model, workflow) and how the backend is
authenticated (``authMethods``: the model provider's API key, read from the backend's environment).

The legacy session modes (``modes``, ``session/set_mode``) stay beside the ``mode`` option for older clients;
both change the same thing, and every change is told with a ``config_option_update``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError
from acp.schema import (
    AuthEnvVar,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    EnvVarAuthMethod,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
)

from ide.protocol.modes import MODES
from ide.settings import Settings

if TYPE_CHECKING:
    from ide.backend.session import Session

MODE, MODEL, WORKFLOW = "mode", "model", "workflow"
AUTO_WORKFLOW = "auto"

KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""Providers whose key the backend reads from its environment (Ollama and the scripted model need none)."""
KEY_NAMES = {"openai": "OpenAI-compatible API key", "anthropic": "Anthropic API key"}


def configured_models(settings: Settings) -> list[str]:
    """``llm.model`` first, then every other model a role is set to (no server is asked)."""
    llm = settings.llm
    found = [llm.model, llm.orchestrator, llm.retrieval, llm.compactor]
    for section in (llm.lats, llm.tot, llm.plan):
        found += [value for value in section.model_dump().values() if isinstance(value, str)]
    found += list(llm.agents.values())
    return list(dict.fromkeys(model.strip() for model in found if model and model.strip()))


async def workflow_names(cwd: str) -> list[str]:
    """``auto`` (the orchestrator picks), then the workflows the session can run (as ``/workflow`` lists)."""
    from ide.workflows.loader import load_catalog

    catalog = await asyncio.to_thread(load_catalog, Path(cwd))
    return [AUTO_WORKFLOW, *(name for name in catalog.workflows if name != AUTO_WORKFLOW)]


def _select(
    option_id: str, name: str, description: str, current: str, values: list[tuple[str, str, str | None]]
) -> SessionConfigOptionSelect:
    category = option_id if option_id in (MODE, MODEL) else None
    return SessionConfigOptionSelect(
        type="select",
        id=option_id,
        name=name,
        description=description,
        category=category,
        current_value=current,
        options=[SessionConfigSelectOption(value=v, name=n, description=d) for v, n, d in values],
    )


async def config_options(
    session: Session, workflows: list[str] | None = None
) -> list[SessionConfigOptionSelect]:
    """The session's options with their current values (``workflows``: already listed, else read now)."""
    workflows = workflows if workflows is not None else await workflow_names(session.cwd)
    if session.workflow not in workflows:
        workflows = [*workflows, session.workflow]
    models = configured_models(session.settings)
    return [
        _select(
            MODE,
            "Mode",
            "The agent architecture the next prompts run with",
            session.mode,
            [(m.id, m.name, m.description) for m in MODES.values()],
        ),
        _select(
            MODEL,
            "Model",
            "The default model of the next turns (roles given their own model keep it)",
            session.settings.llm.model,
            [(m, m, None) for m in models],
        ),
        _select(
            WORKFLOW,
            "Workflow",
            "The YAML workflow the workflow mode runs (auto: the orchestrator picks)",
            session.workflow,
            [(w, "Auto" if w == AUTO_WORKFLOW else w, None) for w in workflows],
        ),
    ]


async def restore(session: Session, saved: dict[str, str]) -> None:
    """Set a loaded session's model and workflow back to what they were set to before (``saved``, from
    the session store), keeping its mode. One the settings no longer offer is said in a notice at the next
    turn, and the session goes on with today's."""
    model, workflow = saved.get(MODEL), saved.get(WORKFLOW)
    if model and model != session.settings.llm.model:
        if model in configured_models(session.settings):
            session.use_model(model)
        else:
            session.notice(
                f"This session ran on {model}, which the settings no longer name: it goes on with "
                f"{session.settings.llm.model}."
            )
    if workflow and workflow != session.workflow:
        if workflow in await workflow_names(session.cwd):
            session.choose_workflow(workflow, switch_mode=False)
        else:
            session.notice(f"This session ran the workflow {workflow}, which is gone: it goes on with auto.")


def options_update(options: list[SessionConfigOptionSelect]) -> ConfigOptionUpdate:
    return ConfigOptionUpdate(session_update="config_option_update", config_options=list(options))


def _refuse(config_id: str, value: object, message: str) -> RequestError:
    return RequestError.invalid_params({"configId": config_id, "value": str(value)[:200], "message": message})


async def set_option(session: Session, config_id: str, value: str | bool) -> list[SessionConfigOptionSelect]:
    """Set one of the session's options to ``value`` (one of its select's values); the options after it.
    Tells the client (config_option_update, and current_mode_update when the mode changed)."""
    known = (MODE, MODEL, WORKFLOW)
    if config_id not in known:
        raise _refuse(config_id, value, f"there is no option {config_id!r}; options: {', '.join(known)}")
    workflows = await workflow_names(session.cwd)
    current = await config_options(session, workflows)
    allowed = [choice.value for choice in next(o for o in current if o.id == config_id).options]
    if not isinstance(value, str) or value not in allowed:
        message = f"{value!r} is not a value of {config_id}; values: {', '.join(allowed)}"
        raise _refuse(config_id, value, message)
    mode_before = session.mode
    if config_id == MODE:
        session.set_mode(value)
    elif config_id == WORKFLOW:
        session.choose_workflow(value)
    else:
        session.use_model(value)
    options = await config_options(session, workflows)
    if session.mode != mode_before:
        await tell(
            session, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.mode)
        )
    await tell(session, options_update(options))
    return options


async def tell(session: Session, update: ConfigOptionUpdate | CurrentModeUpdate) -> None:
    await session.channel.conn.session_update(session_id=session.id, update=update)


def auth_methods(settings: Settings) -> list[EnvVarAuthMethod]:
    """One env-var method per provider with a key that a configured model uses (none for Ollama)."""
    providers = dict.fromkeys(
        model.partition(":")[0].strip().lower() for model in configured_models(settings)
    )
    return [
        EnvVarAuthMethod(
            type="env_var",
            id=f"{provider}-api-key",
            name=KEY_NAMES[provider],
            description=f"Arbor reads {KEY_VARS[provider]} from its environment: start it with the key set",
            vars=[
                AuthEnvVar(
                    name=KEY_VARS[provider],
                    label=KEY_NAMES[provider],
                    # A local OpenAI-compatible server usually takes no key.
                    optional=provider == "openai" and bool(settings.llm.openai_base_url),
                )
            ],
        )
        for provider in providers
        if provider in KEY_VARS
    ]


def authenticate(settings: Settings, method_id: str) -> None:
    """Accept ``method_id`` when the variable it names is set in the backend's environment; else refuse."""
    methods = {method.id: method for method in auth_methods(settings)}
    method = methods.get(method_id)
    if method is None:
        offered = ", ".join(methods) or "none (the configured model needs no key)"
        message = f"there is no auth method {method_id!r}; methods: {offered}"
        raise RequestError.invalid_params({"methodId": method_id[:200], "message": message})
    missing = [var.name for var in method.vars if not var.optional and not os.environ.get(var.name)]
    if missing:
        message = f"{missing[0]} is not set in Arbor's environment: start `arbor acp` with {missing[0]} set"
        raise RequestError.auth_required({"methodId": method_id, "message": message})
