"""``arbor eval --ray ADDRESS|local``: the evaluation's runs as Ray tasks on a Ray cluster.

The driver (``arbor eval``'s own process) keeps the report; each run is one Ray task that calls the same
:func:`ide.eval.execute.execute` a local run calls, on a worker: the task's workspace is built there from
the pinned packages installed there, ``arbor acp`` (or another agent) runs there and reaches the model
server by its URL, and the task returns its :class:`~ide.eval.execute.RunRecord` — the
:class:`~ide.protocol.eval.EvalRun` and the files the driver writes beside the report (the tree, an agent
run's diff and transcript) — as plain JSON. What names the model server travels with each run: the user's
config.toml as the driver reads it (:attr:`~ide.eval.session.RunSettings.config_text`) and the driver's
``ARBOR_*`` and model-provider variables (:data:`FORWARDED`), set on the worker for the run's time.

Ray is an optional extra (``arbor-ide[ray]``), imported only here and only when ``--ray`` is given. A
run whose worker died, or whose task raised, is that run's ``error`` with the reason; a stop (Ctrl-C,
SIGTERM) cancels the runs in flight: the worker's run is cancelled as a local one is (its backend stopped,
its scratch removed), and a worker that does not end within :data:`CANCEL_GRACE_S` is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ide.eval.execute import RunRecord, RunSpec, error_record, execute

LOCAL = "local"
"""``--ray local``: start a Ray instance on this machine, sized by ``--jobs``."""
RAY_INSTALL = "pip install 'arbor-ide[ray]'"
FORWARDED = (
    "OLLAMA_HOST",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)
"""Variables sent with every run to its worker, beside every ``ARBOR_*`` one but the config and data
dirs (each run has its own): what names and opens the model server."""
LOCAL_ONLY = ("ARBOR_CONFIG_DIR", "ARBOR_DATA_DIR")
CANCEL_GRACE_S = 45.0
"""Time a cancelled run has on its worker to stop its backend (whose turn has 30 s to end) before the
worker is killed."""
TICK_S = 0.2
"""How often a worker's run lets Python see a cancel: Ray's interrupt reaches the run only between
bytecodes, never while the event loop sleeps in its poll."""


class RayUnavailable(RuntimeError):
    """Ray cannot be used: not installed, or the cluster cannot be reached; the message says what to do."""


def import_ray() -> ModuleType:
    """The ``ray`` module; :class:`RayUnavailable` saying how to install it when it is not there."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            f"--ray needs Ray, which is not installed here ({exc.msg}): {RAY_INSTALL}"
        ) from None
    return ray


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The driver's variables each run takes to its worker (:data:`FORWARDED`, ``ARBOR_*``)."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if (name in FORWARDED or name.startswith("ARBOR_")) and name not in LOCAL_ONLY
    }


_pruned = False


def run_on_worker(spec: RunSpec, env: dict[str, str]) -> dict[str, Any]:
    """The Ray task: one run on this worker, with the driver's ``env`` set for its time; its record as JSON
    data (:meth:`RunRecord.to_wire`)."""
    global _pruned
    if not _pruned:  # what a killed worker left in this machine's temporary directory, once per worker
        from ide.changes.worktree import prune_stale_worktrees

        prune_stale_worktrees(None, spec.settings.scratch_dir)
        _pruned = True
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return asyncio.run(_ticking(spec)).to_wire()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def _ticking(spec: RunSpec) -> RunRecord:
    """:func:`execute`, with the loop waking every :data:`TICK_S` so that a cancel (Ray's interrupt,
    which asyncio turns into the run's cancellation) is seen at once."""

    async def tick() -> None:
        while True:  # noqa: ASYNC110 - the wake-up is the point, not waiting for something
            await asyncio.sleep(TICK_S)

    ticker = asyncio.ensure_future(tick())
    try:
        return await execute(spec)
    finally:
        ticker.cancel()


class RayRuns:
    """Runs :class:`RunSpec` s as Ray tasks: :meth:`open` connects (or starts ``local``), :meth:`run` makes
    one run and returns its record, never raising for what went wrong on the worker, :meth:`close`."""

    def __init__(self, address: str, cpus: int, *, temp_dir: Path | None = None) -> None:
        self.address = address
        self.cpus = max(1, cpus)
        self.temp_dir = temp_dir
        self._ray: ModuleType | None = None
        self._remote: Any = None
        self._owned = False
        self._ray_env: dict[str, tuple[str | None, str]] = {}
        self._env = forwarded_env()

    def open(self) -> None:
        """Connect to the cluster (start a local one for ``local``); :class:`RayUnavailable` if it cannot.
        A process already connected (``ray.init`` called before) keeps its connection."""
        environ = dict(os.environ)  # before the import too: it sets RAY_CLIENT_MODE
        ray = import_ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
            if self.address == LOCAL:
                options.update(num_cpus=self.cpus, include_dashboard=False)
                if self.temp_dir is not None:
                    options["_temp_dir"] = str(self.temp_dir)
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError… all say the same
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                said = f"--ray {self.address}: Ray could not start or connect: {first}"
                raise RayUnavailable(said) from None
            self._owned = True
            # What Ray's import and driver set in this process's environment, and what each was before.
            changed = {key: value for key, value in os.environ.items() if environ.get(key) != value}
            self._ray_env = {key: (environ.get(key), value) for key, value in changed.items()}
        self._ray = ray
        self._remote = ray.remote(num_cpus=1, max_retries=0)(run_on_worker)

    def close(self) -> None:
        """Disconnect (and stop a Ray instance this started)."""
        if self._ray is not None and self._owned:
            self._ray.shutdown()
            # Ray's driver leaves variables of its own behind (PYTHONBREAKPOINT pointing into Ray, which
            # whatever this process starts next would inherit): those it set, and nothing changed since,
            # go back to what they were.
            for key, (before, set_by_ray) in self._ray_env.items():
                if os.environ.get(key) == set_by_ray:
                    if before is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = before
            self._owned = False
        self._ray = self._remote = None

    async def run(self, spec: RunSpec) -> RunRecord:
        """One run on a worker; its record, or an error record saying what Ray reported. Cancelled (a
        stop), it cancels the Ray task and waits for the worker to end it (killing it after a grace)."""
        assert self._ray is not None, "open() first"
        ray = self._ray
        ref = self._remote.remote(spec, self._env)
        try:
            data = await ref
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(ref))
            raise
        except Exception as exc:
            return error_record(spec.key, why_failed(exc, ray))
        try:
            return RunRecord.from_wire(data)
        except ValueError as exc:
            first = str(exc).strip().splitlines()[0]
            return error_record(spec.key, f"the worker's answer could not be read: {first}")

    async def _cancel(self, ref: Any) -> None:
        ray = self._ray
        assert ray is not None
        with contextlib.suppress(Exception):
            ray.cancel(ref)
        try:
            await asyncio.wait_for(_ended(ref), CANCEL_GRACE_S)
        except TimeoutError:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)


async def _ended(ref: Any) -> None:
    with contextlib.suppress(Exception):
        await ref


def why_failed(exc: BaseException, ray: ModuleType) -> str:
    """What the driver says of a run Ray could not bring back: one line, never a traceback."""
    errors = ray.exceptions
    if isinstance(exc, errors.RayTaskError):
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        if isinstance(exc, errors.TaskCancelledError):
            return "its Ray task was cancelled"
        if cause is None:
            return f"its Ray task failed: {_first_line(exc)}"
        said = f"the run raised {type(cause).__name__} on its Ray worker: {_first_line(cause)}"
        if isinstance(cause, ImportError):
            said += " (every worker needs Arbor installed: pip install 'arbor-ide[eval]')"
        return said
    if isinstance(exc, errors.WorkerCrashedError):
        return "the Ray worker running it died (killed, out of memory, or crashed)"
    if isinstance(exc, errors.NodeDiedError):
        return "the Ray node running it died"
    if isinstance(exc, errors.TaskCancelledError):
        return "its Ray task was cancelled"
    return f"Ray could not run it: {type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
