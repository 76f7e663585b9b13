"""Sizes of what the backend puts on the wire: an over-long JSON line kills ACP stdio readers."""

RAW_IO_CAP = 4000
"""Bytes of a tool's input or output sent as rawInput/rawOutput."""

DIFF_INLINE_CAP = 256_000
"""Characters of old + new text sent inline as diff content; larger files are reviewed by hunks only."""
