"""Credential files beyond .env, from a hostile (or careless) repository: the default secret patterns keep
each one away from every tool, the index, the repo map and workflow retrieval, and keep ordinary files
readable (issue 27, item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.fs import ConfinedFS
from ide.settings import Settings, WorkspaceSettings
from ide.tools import ToolServices
from ide.tools import toolbox as make_toolbox
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from ide.workflows.schema import RetrievalStrategy

CREDENTIALS = [
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".cargo/credentials.toml",
    ".vault-token",
    ".envrc",
    ".env_prod",
    "deploy/prod.env",
    "service-account.json",
    "config/secrets.json",
    "secrets.yaml",
    "settings/secrets.py",
    "terraform.tfstate",
    "terraform.tfvars",
    ".htpasswd",
    "deploy.ppk",
    "release.jks",
    ".yarnrc.yml",
]
"""The files of issue 27's item 2, each read and sent to a model by the old defaults."""

MORE_SECRETS = [
    "certs/server.key",
    "keys/signing.p12",
    "android/app/upload.keystore",
    "AuthKey_ABC123.p8",
    "infra/prod.tfstate.backup",
    "infra/vars.auto.tfvars.json",
    ".aws/credentials",
    ".azure/accessTokens.json",
    "home/.config/gcloud/application_default_credentials.json",
    "ci/.m2/settings.xml",
    ".gem/credentials",
    ".npmrc",
    ".pypirc",
    ".terraformrc",
    ".env.local",
    ".envs/.production/.django",
    "client_secret_1234.apps.googleusercontent.com.json",
    "k8s/db-secret.yaml",
    "config/credentials.yml",
    "app.properties.secret",
    "docs/secrets.md",
    "secrets/db_password.txt",
]
"""More of the pattern set: keys and keystores, cloud and package-manager credentials, Terraform state,
config files named for secrets or credentials."""

ORDINARY = [
    "README.md",
    "src/app/secret_sharing.py",
    "ide/secrets_check.py",
    "tests/test_secrets.py",
    "lib/credentials.py",
    "certs/ca.crt",
    "environment.yml",
    "migrations/env.py",
    "config/settings.yaml",
    "docs/secret-management.md",
    "package.json",
    "pyproject.toml",
    ".github/workflows/ci.yml",
    "src/keyboard.py",
    "docker-compose.yml",
]
"""Files a project needs read that only look like secrets by a word: they stay readable (the rule: code
whose name merely mentions a secret is code; config and data files naming one are secrets)."""


def value_of(rel: str) -> str:
    """The recognisable secret planted in ``rel``."""
    return "hunter2-" + rel.replace("/", "-").replace(".", "_")


def content(rel: str) -> str:
    value = value_of(rel)
    if rel.endswith(".py"):
        return f'def database_password() -> str:\n    return "{value}"\n\n\nAPI_TOKEN = "{value}"\n'
    if rel.endswith(".md"):
        return f"# Database password\n\nThe database password is {value}.\n"
    if rel.endswith(".json"):
        return f'{{"auths": {{"registry": {{"auth": "{value}"}}}}}}\n'
    return f"token: {value}\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel in [*CREDENTIALS, *MORE_SECRETS, *ORDINARY]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content(rel))
    (root / "app.py").write_text(
        "from settings.secrets import database_password\n\nprint(database_password())\n"
    )
    return root


@pytest.fixture
def index(workspace: Path, tmp_path: Path) -> Iterator[CodeIndex]:
    index = CodeIndex(workspace, tmp_path / "index.sqlite", WorkspaceSettings())
    index.refresh()
    yield index
    index.close()


@pytest.mark.parametrize("rel", [*CREDENTIALS, *MORE_SECRETS])
def test_a_credential_file_is_refused_by_read_file(workspace: Path, rel: str) -> None:
    toolbox = make_toolbox(workspace, Settings(), ChangeSet(workspace))
    outcome = toolbox.call("read_file", {"path": rel})
    assert outcome.failed and "secret file (workspace.secrets)" in outcome.output, outcome.output
    assert value_of(rel) not in outcome.output
    parent = rel.rsplit("/", 1)[0] if "/" in rel else "."
    listing = toolbox.call("list_dir", {"path": parent})
    assert rel.rsplit("/", 1)[-1] not in listing.output.split("\n"), listing.output


@pytest.mark.parametrize("rel", ORDINARY)
def test_files_that_only_mention_a_secret_stay_readable(workspace: Path, rel: str) -> None:
    toolbox = make_toolbox(workspace, Settings(), ChangeSet(workspace))
    outcome = toolbox.call("read_file", {"path": rel})
    assert not outcome.failed and value_of(rel) in outcome.output, outcome.output


def test_no_search_index_map_or_retrieval_carries_a_credential(workspace: Path, index: CodeIndex) -> None:
    secrets = [value_of(rel) for rel in [*CREDENTIALS, *MORE_SECRETS]]
    toolbox = make_toolbox(workspace, Settings(), ChangeSet(workspace), ToolServices(index=index))
    outputs = {
        "grep": toolbox.call("grep", {"pattern": "hunter2"}).output,
        "find_symbol": toolbox.call("find_symbol", {"query": "database_password"}).output,
        "find_symbol API_TOKEN": toolbox.call("find_symbol", {"query": "API_TOKEN"}).output,
        "repo_map": toolbox.call("repo_map", {"focus": "database_password"}).output,
        "search_text": toolbox.call("grep", {"pattern": "registry|auth|token"}).output,
    }
    for name, output in outputs.items():
        leaked = [value for value in secrets if value in output]
        assert not leaked, (name, leaked, output)
    assert "settings/secrets.py" not in outputs["repo_map"] + outputs["find_symbol"]
    # The ordinary files are found: the searches worked.
    assert value_of("src/app/secret_sharing.py") in outputs["grep"]
    assert "src/app/secret_sharing.py" in outputs["find_symbol"]
    indexed = {row[0] for row in index.db.execute("SELECT path FROM files")}
    assert indexed.isdisjoint([*CREDENTIALS, *MORE_SECRETS]), indexed & {*CREDENTIALS, *MORE_SECRETS}
    assert "src/app/secret_sharing.py" in indexed
    why = index.why_not_indexed("settings/secrets.py")
    assert why == "settings/secrets.py is a secret file (workspace.secrets): never indexed"


async def test_workflow_retrieval_carries_no_credential(workspace: Path, index: CodeIndex) -> None:
    strategy = RetrievalStrategy.model_validate(
        {"rag_strategy": {"sources": [{"name": "code_index"}, {"name": "documentation"}]}}
    )
    request = RetrievalRequest(
        task="Where is database_password defined? What is the database password?",
        stage_name="analysis",
        strategy=strategy,
        is_code=True,
    )
    for agent_index in (index, None):
        result = await RetrievalAgent(workspace, Settings(), index=agent_index).retrieve(request)
        text = "\n".join(f"{s.path}\n{s.text}" for s in result.snippets)
        leaked = [rel for rel in [*CREDENTIALS, *MORE_SECRETS] if value_of(rel) in text]
        assert not leaked, (leaked, text)
        assert value_of("src/app/secret_sharing.py") in text or agent_index is None
        assert value_of("docs/secret-management.md") in text


def test_a_repository_cannot_take_a_secret_off_the_list(tmp_path: Path) -> None:
    """Secret patterns only add: a `!` pattern appended by a repository's .arbor/config.toml (the secret
    list is a union the repository may add to untrusted) would otherwise take .env off it."""
    from ide.settings import load_settings

    root = tmp_path / "ws"
    (root / ".arbor").mkdir(parents=True)
    (root / ".arbor" / "config.toml").write_text('[workspace]\nsecrets = ["!.env", "!*.pem", "!.env*"]\n')
    (root / ".env").write_text("API_KEY=sk-live-0123456789\n")
    (root / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    settings = load_settings(root).settings
    assert "!.env" in settings.workspace.secrets  # the layer applied as a union ...
    fs = ConfinedFS(root, settings.workspace)
    assert fs.is_secret(fs.root / ".env") and fs.is_secret(fs.root / "server.pem")  # ... took nothing off
    toolbox = make_toolbox(root, settings, ChangeSet(root))
    outcome = toolbox.call("read_file", {"path": ".env"})
    assert outcome.failed and "sk-live" not in outcome.output
    assert ".env" not in toolbox.call("list_dir", {"path": "."}).output.split("\n")


def test_an_index_built_before_a_file_became_secret_forgets_it_at_open(
    workspace: Path, tmp_path: Path
) -> None:
    """An index from before the secret list grew (the old defaults, a pattern the user just added) holds
    the file's definitions with their lines; they are gone as soon as the index opens, before the pass
    that would drop them after its walk."""
    db = tmp_path / "old-index.sqlite"
    before = CodeIndex(workspace, db, WorkspaceSettings(secrets=[]))
    before.refresh()
    assert "settings/secrets.py" in before.paths((".py",))
    before.close()
    index = CodeIndex(workspace, db, WorkspaceSettings(secrets=["settings/secrets.py"]))
    try:
        assert "settings/secrets.py" not in index.paths((".py",))
        shown = [f"{s.path} {s.signature}" for s in index.search("API_TOKEN", 50)]
        assert not [line for line in shown if value_of("settings/secrets.py") in line], shown
        assert any(value_of("src/app/secret_sharing.py") in line for line in shown), shown
    finally:
        index.close()


async def test_retrieval_reads_no_secret_a_change_set_proposed(tmp_path: Path) -> None:
    """A pending change set from before the file became secret (a batch restored from an earlier session)
    proposes it; document retrieval lists the change set's files, and must not read that one."""
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Database\n\nThe database runs on port 5432.\n")
    changeset = ChangeSet(root)
    changeset.write("docs/vault.md", "# Database password\n\nThe database password is hunter2-vault.\n")
    settings = Settings.model_validate({"workspace": {"secrets": ["docs/vault.md"]}})
    strategy = RetrievalStrategy.model_validate({"rag_strategy": {"sources": [{"name": "documentation"}]}})
    request = RetrievalRequest(
        task="database password", stage_name="analysis", strategy=strategy, is_code=False
    )
    result = await RetrievalAgent(root, settings, changeset=changeset).retrieve(request)
    text = "\n".join(f"{s.path}\n{s.text}" for s in result.snippets)
    assert "hunter2-vault" not in text and "docs/vault.md" not in text, text
    assert "port 5432" in text


def test_the_one_regex_before_the_patterns_misses_no_path_they_match() -> None:
    """The scan asks one regex (``any_pattern``) before the excludes and secret patterns one by one: every
    path a pattern matches must be found by it, or a secret would be listed."""
    import sysconfig

    from pathspec import GitIgnoreSpec
    from pathspec.util import normalize_file

    from ide.fs import any_pattern, secret_patterns

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = [
        *CREDENTIALS,
        *(f"a/b/{rel}" for rel in CREDENTIALS),
        ".env",
        "x/.env.local",
        "a/.git/",
        "b/.git",
    ]
    paths += [
        rel + suffix
        for path in sorted(stdlib.glob("[a-j]*/**/*"))[:20000]
        for rel, suffix in [(path.relative_to(stdlib).as_posix(), "/" if path.is_dir() else "")]
    ]
    specs = [
        GitIgnoreSpec.from_lines([".git/", *secret_patterns(WorkspaceSettings().secrets)]),
        GitIgnoreSpec.from_lines(
            ["/build", "docs/*.md", "**/tests/", "!keep.env", "*.py[co]", "a?c", "[abc]*.h"]
        ),
    ]
    for spec in specs:
        finder = any_pattern(spec)
        matched = [path for path in paths if spec.match_file(path)]
        assert matched and all(finder.search(normalize_file(path)) for path in matched)
    assert not any_pattern(GitIgnoreSpec.from_lines([])).search("a/b.py")


def test_is_secret_answers_what_the_patterns_answer_path_by_path(tmp_path: Path) -> None:
    """``is_secret`` asks one regex before the patterns and reads a Path's text without pathlib's
    parsing (a shadow asks it for every file of a 100,000-file checkout): it must answer exactly what
    the secret patterns, matched on the path and each of its folders, answer."""
    from pathspec import GitIgnoreSpec

    from ide.fs import secret_patterns
    from ide.tools import Workspace

    fs = Workspace(tmp_path, WorkspaceSettings())
    spec = GitIgnoreSpec.from_lines(secret_patterns(WorkspaceSettings().secrets))
    names = [*CREDENTIALS, "main.py", "a.env.py", "notes.txt", "x.pem.bak", "secret", "config.json", "id_rsa"]
    folders = [
        "",
        "src/",
        "deep/a/b/",
        ".aws/",
        "x/.docker/",
        ".config/gcloud/",
        "secrets/",
        "pkg.pem/",
        "ok/",
    ]
    rels = [folder + name for folder in folders for name in names]

    def expected(rel: str) -> bool:
        parts = rel.split("/")
        return any(
            spec.match_file("/".join(parts[:n]) + "/") for n in range(1, len(parts))
        ) or spec.match_file(rel)

    answers = {rel: fs.is_secret(fs.root / rel) for rel in rels}
    assert answers == {rel: expected(rel) for rel in rels}
    assert any(answers.values()) and not all(answers.values())
    assert fs.is_secret(Path(str(fs.root) + "/src/../.env"))  # not normal text: pathlib's way, as before
    # The shadow's question, by a workspace-relative name (twice: the second from its folders' memory),
    # and names that are not normal text, which it asks as is_secret does.
    odd = ["src/../.env", "./.env", "src//id_rsa", "/.env", "src/./x.pem", "ok/", "..", ".", "", "a/.."]
    for rel in [*rels, *rels, *odd]:
        assert fs.is_secret_rel(rel) == (bool(rel) and fs.is_secret(fs.root / rel.lstrip("/"))), rel
