"""Context tiers: how much room a model's context window leaves, and what that allows."""

from __future__ import annotations

from enum import StrEnum


class ContextTier(StrEnum):
    """Coarse size class of a context window; prompts and observation caps scale with it."""

    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"
    MASSIVE = "massive"

    @classmethod
    def from_context_window(cls, tokens: int) -> ContextTier:
        """<50k small, <150k medium, <500k large, else massive."""
        if tokens < 50_000:
            return cls.SMALL
        if tokens < 150_000:
            return cls.MEDIUM
        if tokens < 500_000:
            return cls.LARGE
        return cls.MASSIVE

    def observation_cap(self, base_bytes: int) -> int:
        """Bytes of tool output to show the model: ``base_bytes`` times 1, 2, 4 or 8 by tier."""
        return base_bytes * _CAP_FACTOR[self]


_CAP_FACTOR = {ContextTier.SMALL: 1, ContextTier.MEDIUM: 2, ContextTier.LARGE: 4, ContextTier.MASSIVE: 8}
