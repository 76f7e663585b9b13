"""Meta files: paths whose change alters what runs, what git does, or what Arbor trusts — Arbor's own
``.arbor/``, git's ``.gitattributes``/``.gitmodules``/``.gitignore``, CI pipelines, hooks, editor tasks, and
the build and test entry points that run code when you build, test or install (``pyproject.toml``,
``conftest.py``, ``Makefile``, ``sitecustomize.py``, ``*.pth``, ``package.json``, …) in any directory.

An agent's edit to one is marked in review with why it matters and is never covered by "Accept all":
the user accepts it on its own.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# (pattern on the whole path or on the file name, why it matters); first match wins.
RULES: tuple[tuple[str, str], ...] = (
    (
        ".arbor/*",
        "Arbor's own settings and workflows for this workspace: commands and hosts named here run once "
        "the workspace is trusted",
    ),
    (".gitattributes", "git attributes: can name filter and diff drivers that run commands"),
    (".gitmodules", "git submodules: the URLs git fetches code from"),
    (".gitignore", "changes what git (and Arbor's file lists) hide from you"),
    (".github/workflows/*", "a CI pipeline: runs on your CI with its secrets"),
    (".github/actions/*", "a CI action: runs on your CI with its secrets"),
    (".gitlab-ci.yml", "a CI pipeline: runs on your CI with its secrets"),
    (".circleci/*", "a CI pipeline: runs on your CI with its secrets"),
    (".travis.yml", "a CI pipeline: runs on your CI with its secrets"),
    ("azure-pipelines.yml", "a CI pipeline: runs on your CI with its secrets"),
    ("bitbucket-pipelines.yml", "a CI pipeline: runs on your CI with its secrets"),
    (".buildkite/*", "a CI pipeline: runs on your CI with its secrets"),
    (".drone.yml", "a CI pipeline: runs on your CI with its secrets"),
    ("Jenkinsfile", "a CI pipeline: runs on your CI with its secrets"),
    (".pre-commit-config.yaml", "git hooks (pre-commit): run on your machine when you commit"),
    (".husky/*", "git hooks (husky): run on your machine when you commit or push"),
    (".githooks/*", "git hooks: run on your machine when you commit or push"),
    ("lefthook.yml", "git hooks (lefthook): run on your machine when you commit or push"),
    (".lefthook.yml", "git hooks (lefthook): run on your machine when you commit or push"),
    (".envrc", "direnv: runs in your shell when you enter the directory"),
    (
        "pyproject.toml",
        "build settings: names the build backend and tools that run when you build or install",
    ),
    ("setup.py", "runs when you build or install the package"),
    ("setup.cfg", "build settings: names commands and plugins that run when you build, install or test"),
    ("conftest.py", "pytest loads and runs it when you test"),
    ("Makefile", "runs when you build or test with make"),
    ("GNUmakefile", "runs when you build or test with make"),
    ("makefile", "runs when you build or test with make"),
    ("tox.ini", "runs when you test with tox"),
    ("noxfile.py", "runs when you test with nox"),
    ("sitecustomize.py", "Python runs it at every start once it is on the path"),
    ("usercustomize.py", "Python runs it at every start once it is on the path"),
    ("*.pth", "Python runs its import lines at every start once it is in site-packages"),
    ("package.json", "its scripts run when you npm install, build or test"),
    (".vscode/*", "editor settings and tasks: can name programs your editor runs"),
    (".devcontainer/*", "dev container definition: what your editor builds and runs"),
)

NESTED = frozenset(
    {
        ".gitattributes",
        ".gitignore",
        ".envrc",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "conftest.py",
        "makefile",
        "gnumakefile",
        "tox.ini",
        "noxfile.py",
        "sitecustomize.py",
        "usercustomize.py",
        "package.json",
    }
)
"""Names that matter in any directory, not only at the top."""


_LOWER_RULES = tuple((pattern.lower(), why) for pattern, why in RULES)
_SUFFIXES = tuple(
    (pattern[1:], at) for at, (pattern, _) in enumerate(_LOWER_RULES) if pattern.startswith("*.")
)
_PREFIXES = tuple(
    (pattern[:-1], at)
    for at, (pattern, _) in enumerate(_LOWER_RULES)
    if pattern.endswith("/*") and not pattern.startswith("*.")
)
_EXACT = {  # reversed: a pattern listed twice keeps its first place
    pattern: at
    for at, (pattern, _) in reversed(list(enumerate(_LOWER_RULES)))
    if not pattern.startswith("*.") and not pattern.endswith("/*")
}
_ANY_SUFFIX = tuple(suffix for suffix, _ in _SUFFIXES)
_ANY_PREFIX = tuple(prefix for prefix, _ in _PREFIXES)


def meta_reason(path: str) -> str | None:
    """Why an edit to ``path`` (workspace-relative POSIX) needs its own accept, or None for plain files.

    Compared case-insensitively: on macOS and Windows ``.Arbor/config.toml`` is ``.arbor/config.toml``.
    The first rule of RULES that matches wins; the rules are looked up by kind (a file name, a folder, an
    extension) rather than tried one by one.
    """
    lower = path.lower()
    name = lower.rpartition("/")[2]
    if not name or name == ".":
        name = PurePosixPath(lower).name  # a path ending in "/" or "/.": pathlib's name of it
    found = [at for at in (_EXACT.get(lower), _EXACT.get(name) if name in NESTED else None) if at is not None]
    if lower.startswith(_ANY_PREFIX):
        found += [at for prefix, at in _PREFIXES if lower.startswith(prefix)]
    if name.endswith(_ANY_SUFFIX):
        found += [at for suffix, at in _SUFFIXES if name.endswith(suffix)]
    return _LOWER_RULES[min(found)][1] if found else None
