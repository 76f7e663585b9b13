"""Fixtures of the code-intelligence tests: the ``shop`` package the language-server tests read."""

from tests.support.lsp_shop import shop  # noqa: F401  (the fixture)
