"""Layered settings: defaults < user config.toml < <workspace>/.arbor/config.toml < ARBOR_* environment.

Every resolved value remembers where it came from (``ResolvedSettings.sources``) so ``arbor doctor`` can
print it, and every bad value is reported with its file and line (or variable), key and expected type.
The section models live in ``ide.settings.sections``; reading and merging the layers in
``ide.settings.loading``.
"""

from __future__ import annotations

from ide.settings.loading import (
    SETTING_KEYS,
    ResolvedSettings,
    SettingKey,
    SettingsError,
    load_settings,
    to_toml_value,
    trust_store,
    trust_store_path,
    user_config_path,
    workspace_config_path,
)
from ide.settings.sections import (
    APP_NAME,
    CONFIG_FILE,
    WORKSPACE_DIR,
    AgentServerSettings,
    AgentSettings,
    IndexSettings,
    LatsModels,
    LatsSettings,
    LlmSettings,
    LspServerSettings,
    LspSettings,
    MemorySettings,
    PlanModels,
    PlanSettings,
    RegistrySettings,
    ReviewSettings,
    Settings,
    SourceSettings,
    ToolSettings,
    TotModels,
    TotSettings,
    WorkflowSettings,
    WorkspaceSettings,
    workspace_key,
)

__all__ = [
    "APP_NAME",
    "CONFIG_FILE",
    "SETTING_KEYS",
    "WORKSPACE_DIR",
    "AgentServerSettings",
    "AgentSettings",
    "IndexSettings",
    "LatsModels",
    "LatsSettings",
    "LlmSettings",
    "LspServerSettings",
    "LspSettings",
    "MemorySettings",
    "PlanModels",
    "PlanSettings",
    "RegistrySettings",
    "ResolvedSettings",
    "ReviewSettings",
    "SettingKey",
    "Settings",
    "SettingsError",
    "SourceSettings",
    "ToolSettings",
    "TotModels",
    "TotSettings",
    "WorkflowSettings",
    "WorkspaceSettings",
    "load_settings",
    "to_toml_value",
    "trust_store",
    "trust_store_path",
    "user_config_path",
    "workspace_config_path",
    "workspace_key",
]
