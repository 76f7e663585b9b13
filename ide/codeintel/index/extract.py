"""Parse one file with tree-sitter and pull out its definitions, imports and references.

Runs in the indexer's worker processes and, for a handful of files, in the calling process; every
function here is pure and its results pickle cheaply.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from operator import attrgetter, itemgetter

import tree_sitter_language_pack as pack
from tree_sitter import Node, Parser, Query, QueryCursor

from ide.codeintel.index.languages import TAGGED, query_source
from ide.codeintel.index.model import Definition, FileSymbols

SIGNATURE_CAP = 240
DOC_CAP = 160
NAME_CAP = 200
CONTAINERS = frozenset({"class", "struct", "interface", "trait", "enum", "union"})
LEAVES = frozenset({"type", "constant"})
"""Kinds that never hold definitions (a C typedef wraps its struct; the struct is not its member)."""
_METHOD_PARENTS = CONTAINERS | {"scope"}
"""Kinds whose functions are methods."""
WEAK = LEAVES
"""Kinds a more specific pattern on the same node overrides (a Go type spec of a struct is a struct)."""
WRAPPERS = frozenset(
    {
        "export_statement",  # JS/TS: export function f() {}
        "lexical_declaration",  # JS/TS: const f = () => {}
        "variable_declaration",
        "expression_statement",  # JS: Foo.prototype.bar = function () {}
        "ambient_declaration",  # TS: declare function f(): void
        "template_declaration",  # C++: template <typename T> class X {}
        "type_declaration",  # Go: type X struct {}
        "const_declaration",
        "var_declaration",
    }
)
"""Nodes around a definition that its doc comment precedes instead of the definition itself."""
ATTRIBUTES = frozenset({"attribute_item", "decorator", "annotation", "marker_annotation"})
"""Siblings between a doc comment and its definition (Rust #[derive], decorators)."""
BY_CAPTURES = frozenset({"python"})
"""Languages whose definitions are read from the query's captures (``_by_captures``): each pattern has
one definition and one name, the name its first captured node, and no scopes or receivers."""
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_TRAILING_COMMENT = re.compile(r"(?<=[:{])\s*(?:#|//)[^\n]*$")
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? ([)\]])")
_COMMENT_MARK = re.compile(r"^\s*(?:///?!?|/\*\*?|\*+/?|#+|--|;+)\s?")


@dataclass(frozen=True)
class _Grammar:
    parser: Parser
    tags: Query
    """Definitions, scopes, imports and references in one query: one walk over the tree, not two."""


@cache
def compiled(language: str) -> _Grammar:
    """The parser and query of ``language``, compiled once per process (the workers inherit them from
    their fork server, ``preload.py``)."""
    lang = pack.get_language(language)  # type: ignore[arg-type]
    refs_source = ""
    with contextlib.suppress(FileNotFoundError):
        refs_source = query_source(language, "refs")
    return _Grammar(parser=Parser(lang), tags=Query(lang, query_source(language) + "\n" + refs_source))


def extract(source: bytes, language: str) -> FileSymbols:
    """Definitions, imports and references of ``source``; syntax errors give a partial result."""
    lines = source.count(b"\n") + (1 if source and not source.endswith(b"\n") else 0)
    if language not in TAGGED:
        return FileSymbols(language=language, status="skipped", note="no tag queries", lines=lines)
    grammar = compiled(language)
    tree = grammar.parser.parse(source)
    root = tree.root_node
    result = FileSymbols(language=language, lines=lines)
    if root.has_error:
        result.status = "partial"
        result.note = "syntax errors; indexed what parsed"
    _tags(grammar.tags, root, source, language, result)
    return result


def _capped(source: bytes, start: int, end: int, cap: int) -> bytes:
    """``source[start:end]``, at most ``cap * 4`` bytes of it (what ``cap`` characters of UTF-8 can take)."""
    if end - start > cap * 4:
        end = start + cap * 4
    return source[start:end]


def _text_at(source: bytes, start: int, end: int, cap: int = NAME_CAP) -> str:
    return _capped(source, start, end, cap).decode("utf-8", "replace")[:cap]


def _text(source: bytes, node: Node, cap: int = NAME_CAP) -> str:
    return _text_at(source, node.start_byte, node.end_byte, cap)


def _one_line(text: str, cap: int) -> str:
    # Whitespace runs as one space (str.split's whitespace is the regex \s's); the substitutions only where
    # their text occurs: most signatures have none, and a regex call costs more than the `in` tests.
    text = " ".join(text.split())
    # A parameter list spread over lines ("def f(\n    a,\n)") reads as one ("def f(a)").
    if "( " in text or "[ " in text:
        text = _OPEN.sub(r"\1", text)
    if " )" in text or " ]" in text:
        text = _CLOSE.sub(r"\1", text)
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _tags(query: Query, root: Node, source: bytes, language: str, result: FileSymbols) -> None:
    # (start, -end, kind, name, owner, node); scopes (kind "") qualify names without being definitions.
    found = _by_captures(query, root, source, result) if language in BY_CAPTURES else None
    if found is None:  # (the captures' are in this order already)
        found = _by_matches(query, root, source, result)
        found.sort(key=_range)
    stack: list[tuple[int, str, str]] = []  # (end_byte, qualname, kind) of open containers
    namespaces: set[str] = set()  # a C++ `void ns::f() {}` is a function, `void Foo::f() {}` a method
    for start, neg_end, kind, name, owner, node in found:
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent_qual, parent_kind = (stack[-1][1], stack[-1][2]) if stack else ("", "")
        if owner:  # Go receivers and C++ out-of-line definitions name their type: Foo.bar
            parent_qual = f"{parent_qual}.{owner}" if parent_qual else owner
            parent_kind = "namespace" if parent_qual in namespaces else "scope"
        qualname = f"{parent_qual}.{name}" if parent_qual else name
        if kind not in LEAVES:
            stack.append((-neg_end, qualname, kind or "scope"))
        if not kind:
            continue
        if kind == "namespace":
            namespaces.add(qualname)
        if kind == "function" and parent_kind in _METHOD_PARENTS:
            kind = "method"
        result.definitions.append(_definition(node, source, language, name, qualname, kind, parent_qual))


def _add_references(nodes: list[Node], references: dict[str, list[int]]) -> None:
    """Lines where each name is used, once each, in the order of ``nodes``."""
    by_text: dict[bytes, list[int]] = {}  # a name's bytes → its lines (most names are used many times)
    for text, row in zip(map(_node_text, nodes), map(_row, map(_start_point, nodes)), strict=True):
        lines = by_text.get(text)
        if lines is None:
            by_text[text] = [row + 1]
        elif lines[-1] != row + 1:
            lines.append(row + 1)
    names = [_used_name(text) for text in by_text]
    if len(set(names)) < len(names) or not references.keys().isdisjoint(names):
        _add_references_by_name(nodes, references)  # two texts give one name: their lines interleave
        return
    references.update(zip(names, by_text.values(), strict=True))


def _used_name(text: bytes) -> str:
    name = text.decode("utf-8", "replace")[:NAME_CAP]
    if "::" in name:  # a::b::f() and std::make_unique<T>() use f and make_unique
        name = name.rsplit("::", 1)[1].split("<", 1)[0]
    return name


def _add_references_by_name(nodes: list[Node], references: dict[str, list[int]]) -> None:
    """``_add_references`` one node at a time, by name (where two texts give one name)."""
    used_names: dict[bytes | None, str] = {}  # a name's bytes → the name
    for node in nodes:
        text = node.text
        name = used_names.get(text)
        if name is None:
            name = used_names[text] = _used_name(text)  # type: ignore[arg-type]
        line = node.start_point[0] + 1
        lines = references.get(name)
        if lines is None:
            references[name] = [line]
        elif lines[-1] != line:
            lines.append(line)


_node_text = attrgetter("text")
_start_point = attrgetter("start_point")
_row = itemgetter(0)
_range = itemgetter(0, 1)


_Found = list[tuple[int, int, str, str, str, Node]]


def _by_captures(query: Query, root: Node, source: bytes, result: FileSymbols) -> _Found | None:
    """The definitions from the query's captures, without a Python dict per match (most matches are
    references): each definition is paired with its name by position, which holds where every pattern's
    name is the first named capture inside its definition and nothing else is captured (``BY_CAPTURES``).
    None when the captures do not pair up so (the caller then goes by matches)."""
    captures = QueryCursor(query).captures(root)  # each capture's nodes, not in source order
    definitions: list[tuple[int, int, str, Node]] = []
    names = sorted(captures.get("name", ()), key=_start)
    for capture, nodes in captures.items():
        if capture.startswith("definition."):
            kind = capture.removeprefix("definition.")
            definitions += [(node.start_byte, -node.end_byte, kind, node) for node in nodes]
        elif capture not in ("name", "reference", "import"):
            return None  # scopes and receivers need their match
    if len(definitions) != len(names):
        return None
    definitions.sort(key=_range)
    found: _Found = []
    previous_start = previous_end = None
    for (start, neg_end, kind, node), name_node in zip(definitions, names, strict=True):
        name_start, name_end = name_node.start_byte, name_node.end_byte
        if (
            start == previous_start and neg_end == previous_end
        ) or not start <= name_start < name_end <= -neg_end:
            return None  # two patterns on one node, or a name outside its definition
        previous_start, previous_end = start, neg_end
        found.append((start, neg_end, kind, _text_at(source, name_start, name_end), "", node))
    imports = captures.get("import")
    if imports:
        imports.sort(key=_start)
        result.imports.extend(_module(source, node) for node in imports)
    used = captures.get("reference")
    if used:
        used.sort(key=_start)
        _add_references(used, result.references)
    return found


def _module(source: bytes, node: Node) -> str:
    """An import's module name, without the quotes or brackets some grammars capture with it."""
    return _text(source, node).strip("\"'<>`")


_start = attrgetter("start_byte")
"""A node's start, as a sort key (a C getter: sorting by a Python function cost ~0.1 s of a pass)."""


def _by_matches(query: Query, root: Node, source: bytes, result: FileSymbols) -> _Found:
    found: _Found = []
    seen: dict[tuple[int, int], int] = {}  # node range → index in found
    used: list[Node] = []
    for _index, captures in QueryCursor(query).matches(root):
        references = captures.get("reference")
        if references is not None:
            used += references
            continue
        imports = captures.get("import")
        if imports:
            result.imports.extend(_module(source, node) for node in imports)
            continue
        names = captures.get("name")
        if not names:
            continue
        receiver = captures.get("receiver")
        for capture, nodes in captures.items():
            if capture.startswith("definition."):
                kind = capture.split(".", 1)[1]
            elif capture == "scope":
                kind = ""
            else:
                continue
            node = nodes[0]
            key = (node.start_byte, node.end_byte if kind else -node.end_byte)
            owner = _text(source, receiver[0]) if receiver else ""
            name = _text(source, names[0])
            if "::" in name:  # C++ out-of-line members and nested namespaces: Foo<T>::bar, a::b
                scope, name = name.rsplit("::", 1)
                scope = _qualify(scope)
                owner = f"{owner}.{scope}" if owner else scope
            entry = (node.start_byte, -node.end_byte, kind, name, owner, node)
            at = seen.get(key)
            if at is None:
                seen[key] = len(found)
                found.append(entry)
            elif found[at][2] in WEAK and kind not in WEAK:  # `const f = () => …` is a function
                found[at] = entry
            break
    _add_references(used, result.references)
    return found


def _definition(
    node: Node, source: bytes, language: str, name: str, qualname: str, kind: str, parent: str
) -> Definition:
    body = node.child_by_field_name("body")
    if body is not None and language == "python":
        found = _python_definition(node, body, source, name, qualname, kind, parent)
        if found is not None:
            return found
    value = None
    if body is None:  # const f = () => {…}: the body belongs to the value
        value = node.child_by_field_name("value") or node.child_by_field_name("right")
        body = value.child_by_field_name("body") if value is not None else None
    head_end = body.start_byte if body is not None else node.end_byte
    head = _capped(source, node.start_byte, head_end, SIGNATURE_CAP)
    signature = head.decode("utf-8", "replace")
    if body is None:
        signature = signature.split("\n", 1)[0] if kind not in ("function", "method") else signature
    signature = signature.rstrip()
    if "#" in signature or "//" in signature:
        signature = _TRAILING_COMMENT.sub("", signature)  # class X:  # note → class X:
    signature = _one_line(signature.rstrip().rstrip(":{").rstrip(), SIGNATURE_CAP)
    leaf = kind in LEAVES
    params_node = None if leaf else _find_field(node, "parameters")
    returns_node = None if leaf else _returns(node, kind) or (_returns(value, kind) if value else None)
    return Definition(
        name=name,
        qualname=qualname,
        kind=kind,
        line=node.start_point[0] + 1,
        end_line=node.end_point[0] + 1,
        signature=signature,
        params=_cached(source, params_node, SIGNATURE_CAP, _PARAMS, _params) if params_node else "",
        returns=_cached(source, returns_node, 120, _RETURNS, _returns_text) if returns_node else "",
        doc=_doc(node, body, source, language),
        parent=parent,
    )


def _python_definition(
    node: Node, body: Node, source: bytes, name: str, qualname: str, kind: str, parent: str
) -> Definition | None:
    """``_definition`` of a Python function or class with a body, without the other grammars' detours:
    Python's ``function_definition`` has ``parameters`` and ``return_type`` fields and no declarator,
    value or result, its ``class_definition`` none of them, so ``_find_field`` and ``_returns`` come to
    these two fields (the same rows; ``tests/codeintel/test_index_output.py``). None for another node."""
    node_type = node.type
    if node_type == "function_definition":
        params_node = node.child_by_field_name("parameters")
        returns_node = node.child_by_field_name("return_type")
    elif node_type != "class_definition":
        return None
    else:
        params_node = returns_node = None
    signature = _capped(source, node.start_byte, body.start_byte, SIGNATURE_CAP).decode("utf-8", "replace")
    signature = signature.rstrip()
    if "#" in signature or "//" in signature:
        signature = _TRAILING_COMMENT.sub("", signature)
    signature = _one_line(signature.rstrip().rstrip(":{").rstrip(), SIGNATURE_CAP)
    return Definition(
        name,
        qualname,
        kind,
        node.start_point[0] + 1,
        node.end_point[0] + 1,
        signature,
        _cached(source, params_node, SIGNATURE_CAP, _PARAMS, _params) if params_node else "",
        _cached(source, returns_node, 120, _RETURNS, _returns_text) if returns_node else "",
        _python_doc(body, source),
        parent,
    )


def _params(raw: bytes) -> str:
    return _one_line(raw.decode("utf-8", "replace")[:SIGNATURE_CAP], SIGNATURE_CAP)


def _returns_text(raw: bytes) -> str:
    return _one_line(raw.decode("utf-8", "replace")[:120].lstrip(":").strip(), 120)


_PARAMS: dict[bytes, str] = {}
_RETURNS: dict[bytes, str] = {}
_CACHED_MAX = 20_000
"""Texts of parameter lists and return types by their bytes (``(self)``, ``None``, ``str`` come again and
again); a cache is emptied when it holds this many."""


def _cached(
    source: bytes, node: Node, cap: int, cache: dict[bytes, str], make: Callable[[bytes], str]
) -> str:
    """``make`` of the node's bytes (its first ``cap * 4``, as ``_text`` reads them), from ``cache`` when
    the same bytes came before."""
    raw = _capped(source, node.start_byte, node.end_byte, cap)
    text = cache.get(raw)
    if text is None:
        if len(cache) >= _CACHED_MAX:
            cache.clear()
        text = cache[raw] = make(raw)
    return text


def _python_doc(body: Node, source: bytes) -> str:
    """``_doc`` of a Python definition with a body: the first line of its docstring."""
    if not body.named_child_count:
        return ""
    string = body.named_child(0)
    string_type = string.type
    if string_type == "expression_statement" and string.named_child_count:
        string = string.named_child(0)
        string_type = string.type
    if string_type != "string":
        return ""
    return _first_line(_text(source, string, DOC_CAP * 4).lstrip("rRbBuUfF").strip("\"'"))


def _find_field(node: Node, field: str) -> Node | None:
    """``field`` of the node or of its declarator chain (C and C++ nest parameters in declarators)."""
    current: Node | None = node
    for _ in range(5):
        if current is None:
            return None
        found = current.child_by_field_name(field)
        if found is not None:
            return found
        following = (
            current.child_by_field_name("declarator")
            or current.child_by_field_name("value")
            or current.child_by_field_name("right")
        )
        if following is None and current.type.endswith("_declarator") and current.named_child_count:
            following = current.named_child(0)  # C++ reference_declarator has no declarator field
        current = following
    return None


def _returns(node: Node, kind: str) -> Node | None:
    for field in ("return_type", "result"):
        found = node.child_by_field_name(field)
        if found is not None:
            return found
    if kind in ("function", "method") and node.child_by_field_name("declarator") is not None:
        return node.child_by_field_name("type")  # C, C++ and Java put the return type first
    if kind == "method" and node.type == "method_declaration":
        return node.child_by_field_name("type")
    return None


def _doc(node: Node, body: Node | None, source: bytes, language: str) -> str:
    if language == "python" and body is not None:
        return _python_doc(body, source)
    comment = node.prev_named_sibling
    while comment is not None and comment.type in ATTRIBUTES:  # #[derive(…)] between doc and item
        node, comment = comment, comment.prev_named_sibling
    parent = node.parent
    while (
        (comment is None or "comment" not in comment.type) and parent is not None and parent.type in WRAPPERS
    ):
        node, comment = parent, parent.prev_named_sibling  # the doc precedes `export`, `template <…>`
        while comment is not None and comment.type in ATTRIBUTES:
            node, comment = comment, comment.prev_named_sibling
        parent = node.parent
    if comment is None or "comment" not in comment.type or comment.end_point[0] < node.start_point[0] - 1:
        return ""
    # Walk up a block of line comments to its first line.
    while True:
        previous = comment.prev_named_sibling
        if (
            previous is None
            or "comment" not in previous.type
            or previous.end_point[0] < comment.start_point[0] - 1
        ):
            break
        comment = previous
    return _first_line(_text(source, comment, DOC_CAP * 4))


def _qualify(scope: str) -> str:
    """``ns::Foo<T>`` → ``ns.Foo``."""
    while "<" in scope:
        stripped = _TEMPLATE_ARGS.sub("", scope)
        if stripped == scope:
            break
        scope = stripped
    return scope.replace("::", ".").replace(" ", "")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()  # \s and str.strip's whitespace are the same characters
        if line[:1] in _MARK_STARTS:  # (most lines start with none: no regex call)
            line = _COMMENT_MARK.sub("", line).strip()
        line = line.rstrip("*/").strip()
        if line:
            return _one_line(line, DOC_CAP)
    return ""


_MARK_STARTS = frozenset("/*#-;")
"""The characters a ``_COMMENT_MARK`` starts with after its whitespace."""
