"""Shared test helpers (fake servers, builders) importable as ``tests.support``."""
