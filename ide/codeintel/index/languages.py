"""Which tree-sitter language a file is, and which languages have our own tag queries."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

QUERY_DIR = Path(__file__).parent / "queries"

# File extensions of the languages in tree-sitter-language-pack 0.13 that people keep in repositories.
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "cpp",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".ipp": "cpp", ".inl": "cpp",
    ".cs": "csharp", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".swift": "swift",
    ".m": "objc", ".mm": "objc", ".rb": "ruby", ".php": "php", ".lua": "lua", ".pl": "perl",
    ".pm": "perl", ".r": "r", ".jl": "julia", ".dart": "dart", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hrl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml_interface",
    ".clj": "clojure", ".cljs": "clojure", ".elm": "elm", ".zig": "zig", ".nim": "nim", ".v": "verilog",
    ".sv": "verilog", ".vhd": "vhdl", ".vhdl": "vhdl", ".f90": "fortran", ".f95": "fortran",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".fish": "fish", ".ps1": "powershell",
    ".sql": "sql", ".proto": "proto", ".thrift": "thrift", ".graphql": "graphql", ".gql": "graphql",
    ".tf": "hcl", ".hcl": "hcl", ".nix": "nix", ".cmake": "cmake", ".mk": "make",
    ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss", ".vue": "vue", ".svelte": "svelte",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".xml": "xml", ".ini": "ini",
    ".md": "markdown", ".rst": "rst", ".tex": "latex", ".cu": "cuda", ".glsl": "glsl", ".sol": "solidity",
    ".groovy": "groovy", ".gradle": "groovy", ".tcl": "tcl", ".vim": "vim", ".el": "elisp",
}  # fmt: skip

FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "dockerfile",
    "CMakeLists.txt": "cmake", "meson.build": "meson", "BUILD": "starlark", "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark", "go.mod": "gomod", "requirements.txt": "requirements",
}  # fmt: skip

SHEBANGS = {"python": "python", "node": "javascript", "bash": "bash", "sh": "bash", "zsh": "bash"}

TAGGED = ("python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp")
"""Languages with definition/reference queries in ``queries/``; the others get a file-level entry."""


def detect_language(path: str | PurePosixPath, head: bytes = b"") -> str | None:
    """The pack's language name for a file, by name, extension, then a ``#!`` line in ``head``."""
    name = PurePosixPath(path).name
    if name in FILENAMES:
        return FILENAMES[name]
    suffix = PurePosixPath(name).suffix.lower()
    if suffix:
        return EXTENSIONS.get(suffix)
    if head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0].decode("ascii", "replace").split()
        words = [w.rsplit("/", 1)[-1] for w in first[:2]]
        program = words[1] if words and words[0] == "env" and len(words) > 1 else (words[0] if words else "")
        for prefix, language in SHEBANGS.items():
            if program.startswith(prefix):
                return language
    return None


INHERITS = "; inherits:"
"""First line of a query file whose grammar extends another's (nvim-treesitter's convention):
``; inherits: c`` puts c's file of the same kind before this one, so the file holds only what c lacks."""


def query_source(language: str, kind: str = "") -> str:
    """Text of ``<language>.scm`` (definitions, scopes, imports) or ``<language>.<kind>.scm``, after the
    text of each language its first line inherits from; FileNotFoundError when the file does not exist."""
    path = QUERY_DIR / (f"{language}.{kind}.scm" if kind else f"{language}.scm")
    if not path.is_file():
        raise FileNotFoundError(f"no {kind or 'tag'} queries for {language}")
    text = path.read_text("utf-8")
    first = text.split("\n", 1)[0]
    bases = first.removeprefix(INHERITS).split(",") if first.startswith(INHERITS) else []
    return "\n".join([*(query_source(base.strip(), kind) for base in bases), text])
