"""Memory across sessions (lands with the memory issue)."""
