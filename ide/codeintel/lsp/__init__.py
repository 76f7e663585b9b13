"""Language servers on demand (pygls client): definitions, references, types, signatures, diagnostics."""

from ide.codeintel.lsp.gate import LspGate
from ide.codeintel.lsp.pool import At, Diagnostic, Location, LspBridge, LspPool
from ide.codeintel.lsp.registry import LspError, LspUnavailable

__all__ = ["At", "Diagnostic", "Location", "LspBridge", "LspError", "LspGate", "LspPool", "LspUnavailable"]
