"""Logging set-up shared by the backend, the window and ``arbor mcp``: API keys never reach a log."""

from __future__ import annotations

import logging
import re
import sys

SECRET_PATTERNS = (
    re.compile(
        r"\b(sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|ghp_[A-Za-z0-9]{16,}|xox[abp]-[A-Za-z0-9-]{10,})"
    ),
    re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})"),
    re.compile(
        r"(?i)\b((?:api[_-]?key|token|secret|password|authorization)\b[\"']?\s*[:=]\s*[\"']?)"
        r"(?!bearer\b|\[redacted\])([^\s\"',;]+)"
    ),
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with API keys, tokens and passwords replaced by ``[redacted]``."""
    text = SECRET_PATTERNS[0].sub(REDACTED, text)
    for pattern in SECRET_PATTERNS[1:]:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites every record's message (arguments merged) through :func:`redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def setup_logging(level: str | int, prefix: str = "arbor") -> None:
    """Configure the root logger to stderr with the redacting filter on its handler."""
    if isinstance(level, str):
        level = getattr(logging, level.upper(), logging.WARNING)
    logging.basicConfig(
        level=level, stream=sys.stderr, format=f"{prefix} %(levelname)s %(name)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
