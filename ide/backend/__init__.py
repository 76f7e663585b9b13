"""The ACP backend: the agent side of Arbor, served by `arbor acp`."""
