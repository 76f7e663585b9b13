"""Context tiers: thresholds and the observation caps they allow."""

from __future__ import annotations

import pytest

from ide.llm import ContextTier


@pytest.mark.parametrize(
    ("tokens", "tier"),
    [
        (2_048, ContextTier.SMALL),
        (49_999, ContextTier.SMALL),
        (50_000, ContextTier.MEDIUM),
        (128_000, ContextTier.MEDIUM),
        (149_999, ContextTier.MEDIUM),
        (150_000, ContextTier.LARGE),
        (499_999, ContextTier.LARGE),
        (500_000, ContextTier.MASSIVE),
        (2_000_000, ContextTier.MASSIVE),
    ],
)
def test_tier_thresholds(tokens: int, tier: ContextTier) -> None:
    assert ContextTier.from_context_window(tokens) is tier


@pytest.mark.parametrize(
    ("tier", "cap"),
    [
        (ContextTier.SMALL, 8000),
        (ContextTier.MEDIUM, 16000),
        (ContextTier.LARGE, 32000),
        (ContextTier.MASSIVE, 64000),
    ],
)
def test_observation_cap_scales_with_tier(tier: ContextTier, cap: int) -> None:
    assert tier.observation_cap(8000) == cap


def test_tiers_are_strings() -> None:
    assert ContextTier("large") is ContextTier.LARGE
    assert f"{ContextTier.SMALL}" == "small"
