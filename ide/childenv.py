"""The environment of every process Arbor starts on someone else's behalf: by allow-list, not deny-list.

Another agent (an ``[agents]`` entry, ``--agent "cmd …"``), a test run, a plan executor's ``run_command``,
an ``arbor eval`` check and a language server run code that is not Arbor's — the agent's, the
repository's, the model's. They get the variables a program needs to run and nothing that names a
credential, whatever the variable is called: a deny-list by name (``*_API_KEY``, ``*TOKEN*``) let
``DATABASE_URL=postgres://u:pw@…``, ``MYSQL_PWD``, ``OPENAI_KEY``, ``GH_PAT``, ``SENTRY_DSN``,
``SLACK_WEBHOOK_URL`` or ``DOCKER_AUTH_CONFIG`` through. Arbor's own backend is not such a process: it
needs the keys to reach models (:class:`ide.client.agentproc.AgentChoice`), and Arbor's git has its own
environment (:func:`ide.gitsafe.git_env`).

The base set, each for a reason (values are copied from Arbor's environment when set there):

- ``PATH`` — to find programs; ``HOME``, ``USER``, ``LOGNAME`` — who runs and where their tools keep
  their settings (an agent's own login lives there); ``SHELL`` — the shell an agent runs commands with.
- ``LANG``, ``LANGUAGE``, ``LC_*``, ``TZ`` — how text is encoded and time is told; ``TERM``,
  ``COLORTERM``, ``NO_COLOR`` — how output may be coloured.
- ``TMPDIR`` — where temporary files go (a confined agent gets its own).
- ``XDG_CONFIG_HOME``, ``XDG_CACHE_HOME``, ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` — directories tools keep
  config and caches in, when the user moved them. Not ``XDG_RUNTIME_DIR``: it holds the sockets of the
  session bus, the keyring, the GPG and SSH agents.
- ``VIRTUAL_ENV``, ``CONDA_PREFIX`` — the Python environment Arbor was started in, which Python tools
  (and the Python language server, :mod:`ide.codeintel.lsp.environment`) take as the project's;
  ``PYTHONIOENCODING``, ``PYTHONUTF8`` — text encoding; ``PYTHONDONTWRITEBYTECODE``,
  ``PYTHONPYCACHEPREFIX`` — where bytecode goes. Not ``PYTHONPATH``, ``PYTHONHOME``, ``PYTHONSTARTUP``,
  ``PYTHONUSERBASE``: they change what a child imports, and Arbor's are Arbor's, not the project's.
- ``CARGO_HOME``, ``RUSTUP_HOME``, ``GOPATH``, ``GOROOT``, ``JAVA_HOME`` — where a toolchain is installed
  when not in its default place, so ``cargo test``, ``go test`` or a Java build can run at all.
- ``SSL_CERT_FILE``, ``SSL_CERT_DIR``, ``REQUESTS_CA_BUNDLE``, ``NODE_EXTRA_CA_CERTS`` — certificate
  authorities (public certificates, not keys) without which nothing reaches a model behind a TLS proxy.
- ``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy`` (either case) — an agent may reach its
  model only through the proxy; a ``user:password@`` in the URL is removed (a proxy that needs the
  password: list the variable in the agent's ``pass_env``, which passes it as it is).

Never: ``SSH_AUTH_SOCK``, ``GPG_AGENT_INFO``, ``DBUS_SESSION_BUS_ADDRESS``, ``XDG_RUNTIME_DIR`` (each lets a
process act as the user: push, sign, unlock the keyring), ``DISPLAY``, ``WAYLAND_DISPLAY``, ``XAUTHORITY``
(an X client can read the screen and type into the user's other windows; no agent, test run or language
server Arbor starts needs one), nor anything else — ``ARBOR_*`` and model keys included.

To give a process more: an ``[agents.NAME]`` entry's ``pass_env`` lists names of Arbor's environment its
agent gets as they are, and its ``env`` literal values (:func:`agent_env`); ``ARBOR_PASS_ENV`` in Arbor's
own environment (names, separated by spaces or commas) gives every such process those variables — a test
run that needs ``DATABASE_URL`` for a test database. Only the user's environment can set it: no settings
file, so no repository. An ``arbor eval`` check ignores it (:func:`base_env` only: the same check
everywhere). ``PWD`` is set to the process's working directory. Qt-free and dependency-free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

BASE_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPYCACHEPREFIX",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "GOPATH",
        "GOROOT",
        "JAVA_HOME",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
)
"""Variables every such process gets from Arbor's environment (the module docstring says why each)."""
BASE_PREFIXES = ("LC_",)
PROXY_NAMES = frozenset(
    name for base in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") for name in (base, base.upper())
)
"""Proxy variables, passed with any ``user:password@`` taken out of the URL."""
PASS_ENV = "ARBOR_PASS_ENV"
"""Names of Arbor's environment variables every process of this module's kind also gets, as they are."""


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The base set of ``environ`` (default: Arbor's): the allow-listed names, proxies without
    credentials."""
    source = os.environ if environ is None else environ
    env: dict[str, str] = {}
    for name, value in source.items():
        if name in BASE_NAMES or name.startswith(BASE_PREFIXES):
            env[name] = value
        elif name in PROXY_NAMES:
            proxy = without_credentials(value)
            if proxy is not None:
                env[name] = proxy
    return env


def passed_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """The names :data:`PASS_ENV` of ``environ`` (default: Arbor's) lists."""
    source = os.environ if environ is None else environ
    return source.get(PASS_ENV, "").replace(",", " ").split()


def without_credentials(url: str) -> str | None:
    """``url`` (a proxy: ``http://u:pw@host:3128``, or ``u:pw@host:3128`` without a scheme) without its
    ``user:password@``; unchanged when it has none; None when it cannot be read, or an ``@`` is left
    (a password with an unescaped ``/``): it is then not passed at all."""
    if "@" not in url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    bare = "://" not in url
    try:
        parts = urlsplit("//" + url if bare else url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        return None
    cleaned = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    cleaned = cleaned.removeprefix("//") if bare else cleaned
    return None if "@" in cleaned else cleaned


def command_env(
    extra: Mapping[str, str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a command Arbor runs for the repository or a model — a test run, a plan
    executor's ``run_command``, a language server: the base set of ``environ`` (default: Arbor's) and the
    variables :data:`PASS_ENV` names, then ``extra`` (what Arbor itself sets for it), ``PWD`` = ``cwd``
    when given."""
    source = os.environ if environ is None else environ
    env = base_env(source)
    env.update({name: source[name] for name in passed_names(source) if name in source})
    env.update(extra or {})
    if cwd is not None:
        env["PWD"] = os.fspath(cwd)
    return env


def agent_env(
    entry_env: Mapping[str, str],
    pass_env: Sequence[str],
    cwd: str | None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of another agent: the base set of ``environ`` (default: Arbor's), the variables
    :data:`PASS_ENV` and its settings entry's ``pass_env`` name taken from there as they are, its ``env``
    values, and ``PWD`` = ``cwd`` (its shadow) when given."""
    source = os.environ if environ is None else environ
    env = base_env(source)
    env.update({name: source[name] for name in [*passed_names(source), *pass_env] if name in source})
    env.update(entry_env)
    if cwd:
        env["PWD"] = cwd
    return env
