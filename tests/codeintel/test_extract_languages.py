"""Definitions, imports, references and signatures per language, from realistic sources with the
constructs each grammar makes awkward: decorators, exports, receivers, impl blocks, templates, macros."""

from __future__ import annotations

import pytest

from ide.codeintel.index.extract import SIGNATURE_CAP, extract
from tests.support.language_samples import CPP, GO, JAVA, JAVASCRIPT, PYTHON, RUST, TSX, TYPESCRIPT, C

CASES = {
    "python": (
        PYTHON,
        [
            ("Cache", "class", 17),
            ("Cache.Entry", "class", 27),
            ("Cache.lookup", "method", 20),
            ("MAX_SIZE", "constant", 6),
            ("Store", "class", 10),
            ("Store.get", "method", 13),
            ("main", "function", 31),
            ("main.inner", "function", 32),
        ],
        ["os", ".util", "typing"],
    ),
    "javascript": (
        JAVASCRIPT,
        [
            ("Widget", "class", 14),
            ("Widget.create", "method", 20),
            ("Widget.gen", "method", 21),
            ("Widget.handle", "method", 18),
            ("Widget.value", "method", 19),
            ("fetchData", "function", 10),
            ("handler", "function", 34),
            ("helper", "function", 24),
            ("legacy", "function", 6),
            ("obj", "constant", 25),
            ("outer", "function", 29),
            ("outer.inner", "function", 30),
            ("outer.local", "function", 31),
        ],
        ["react", "path", "./foo", "./ab"],
    ),
    "typescript": (
        TYPESCRIPT,
        [
            ("Comp", "class", 5),
            ("Comp.abstract_thing", "method", 10),
            ("Comp.constructor", "method", 8),
            ("Comp.handler", "method", 6),
            ("Comp.ngOnInit", "method", 9),
            ("Flags", "enum", 26),
            ("Fn", "type", 27),
            ("NS.Inner", "namespace", 18),
            ("NS.Inner.nsFn", "function", 20),
            ("Props", "interface", 28),
            ("Props.render", "method", 28),
            ("Repo", "class", 12),
            ("Repo.find", "method", 13),
            ("ext", "function", 16),
            ("generic", "function", 31),
            ("overload", "function", 23),
            ("overload", "function", 24),
            ("overload", "function", 25),
            ("useThing", "function", 29),
        ],
        ["./foo", "fs"],
    ),
    "tsx": (
        TSX,
        [
            ("App", "function", 4),
            ("Page", "function", 7),
            ("Props", "interface", 2),
            ("generic", "function", 8),
        ],
        ["react"],
    ),
    "go": (
        GO,
        [
            ("A", "constant", 7),
            ("B", "constant", 8),
            ("Handler", "type", 20),
            ("Handler.Serve", "method", 24),
            ("Pair", "struct", 15),
            ("Pair.Key", "method", 22),
            ("Pair.Set", "method", 23),
            ("Reader", "interface", 14),
            ("Reader.Read", "method", 14),
            ("main", "function", 26),
        ],
        ["os", "fmt"],
    ),
    "rust": (
        RUST,
        [
            ("COUNT", "constant", 7),
            ("Config", "struct", 6),
            ("Config.fmt", "method", 9),
            ("Store", "trait", 15),
            ("Store.N", "constant", 15),
            ("Store.get", "method", 15),
            ("Wrapper.make", "method", 13),
            ("my_macro", "function", 16),
            ("run", "function", 17),
            ("tests", "module", 20),
            ("tests.it_works", "function", 23),
        ],
        ["std::{io, fmt::Display}", "crate::model::*", "serde", "super::*"],
    ),
    "java": (
        JAVA,
        [
            ("Api", "interface", 33),
            ("Api.NAME", "constant", 33),
            ("Api.hello", "method", 33),
            ("UserService", "class", 9),
            ("UserService.A", "constant", 12),
            ("UserService.C", "constant", 13),
            ("UserService.LOG", "constant", 11),
            ("UserService.Marker", "interface", 27),
            ("UserService.Point", "class", 25),
            ("UserService.State", "enum", 29),
            ("UserService.State.next", "method", 29),
            ("UserService.UserService", "method", 16),
            ("UserService.find", "method", 20),
            ("UserService.lambda", "method", 31),
        ],
        ["java.util", "java.lang.Math.max"],
    ),
    "c": (
        C,
        [
            ("VERSION", "constant", 4),
            ("callback_t", "type", 8),
            ("hash", "function", 13),
            ("level_t", "type", 9),
            ("list_free", "function", 16),
            ("node", "struct", 10),
            ("table_size", "constant", 5),
        ],
        ["stdlib.h"],
    ),
    "cpp": (
        CPP,
        [
            ("app.ui", "namespace", 3),
            ("app.ui.Widget", "class", 6),
            ("app.ui.Widget.Impl", "struct", 24),
            ("app.ui.Widget.Impl.get", "method", 24),
            ("app.ui.Widget.Mode", "enum", 14),
            ("app.ui.Widget.Widget", "method", 8),
            ("app.ui.Widget.Widget", "method", 9),
            ("app.ui.Widget.Widget", "method", 21),
            ("app.ui.Widget.create", "method", 12),
            ("app.ui.Widget.create", "method", 23),
            ("app.ui.Widget.operator==", "method", 13),
            ("app.ui.Widget.value", "method", 11),
            ("app.ui.Widget.~Widget", "method", 10),
            ("helper", "function", 28),
            ("kPi", "constant", 27),
            ("main", "function", 33),
            ("name_of", "function", 31),
            ("ns.Outer.Inner.deep", "method", 32),
        ],
        ["widget.hpp", "memory"],
    ),
}


@pytest.mark.parametrize("language", CASES)
def test_exact_definitions_and_imports(language: str) -> None:
    source, definitions, imports = CASES[language]
    found = extract(source.encode(), language)
    assert (found.status, found.language) == ("ok", language)
    assert sorted((d.qualname, d.kind, d.line) for d in found.definitions) == definitions
    assert found.imports == imports


@pytest.mark.parametrize(
    ("language", "qualname", "line", "signature", "params", "returns", "doc"),
    [
        (
            "python",
            "Cache.lookup",
            20,
            'def lookup(self, key: str, *, default: bytes = b"") -> bytes',
            '(self, key: str, *, default: bytes = b"")',
            "bytes",
            "Look a key up.",
        ),
        (
            "javascript",
            "fetchData",
            10,
            "async function fetchData(url, opts = {})",
            "(url, opts = {})",
            "",
            "Fetches data.",  # the JSDoc precedes `export`, not the function
        ),
        ("javascript", "Widget.handle", 18, "handle = (e) =>", "(e)", "", ""),
        ("typescript", "useThing", 29, "useThing = <T,>(x: T): T =>", "(x: T)", "T", ""),
        (
            "typescript",
            "Comp",
            5,
            "class Comp<T> extends Base<T> implements OnInit, Other",
            "",
            "",
            "Decorated.",
        ),
        ("typescript", "Fn", 27, "type Fn = (a: number) => string;", "", "", ""),
        ("tsx", "App", 4, "App: React.FC<Props> = ({ title }) =>", "({ title })", "", "The app."),
        ("go", "Pair.Key", 22, "func (p Pair[K, V]) Key() K", "()", "K", ""),
        ("go", "Handler", 20, "Handler func(w Writer) error", "", "", "Handler handles."),
        ("rust", "Wrapper.make", 13, "pub const fn make(v: T) -> Self", "(v: T)", "Self", "Makes one."),
        ("rust", "Config", 6, "pub struct Config<'a>", "", "", "The config."),  # past #[derive]
        (
            "java",
            "UserService.find",
            20,
            "@Override public <T extends User> List<T> find(String id, int... more) throws IOException",
            "(String id, int... more)",
            "List<T>",
            "Finds.",
        ),
        (
            "c",
            "hash",
            13,
            "static inline unsigned long long hash(const char *s, size_t n)",
            "(const char *s, size_t n)",
            "unsigned long long",
            "",
        ),
        (
            "cpp",
            "name_of",
            31,
            "const std::string& name_of(const Thing& t)",
            "(const Thing& t)",
            "std::string",
            "",
        ),
        ("cpp", "app.ui.Widget", 6, "class Widget : public Base<T>, private Mixin", "", "", "A widget."),
    ],
)
def test_signature_params_returns_and_doc(
    language: str, qualname: str, line: int, signature: str, params: str, returns: str, doc: str
) -> None:
    source = CASES[language][0]
    (got,) = [
        d for d in extract(source.encode(), language).definitions if (d.qualname, d.line) == (qualname, line)
    ]
    assert (got.signature, got.params, got.returns, got.doc) == (signature, params, returns, doc)


@pytest.mark.parametrize(
    ("language", "used"),
    [
        ("python", {"helper": [25], "Cache": [33], "dataclass": [16]}),
        ("javascript", {"fetch": [11], "Widget": [20], "setState": [18], "require": [4]}),
        ("typescript", {"Base": [5], "OnInit": [5], "Service": [8], "Item": [13, 30], "Map": [30]}),
        ("tsx", {"Layout": [5], "Button": [5], "App": [7], "go": [5]}),
        ("go", {"Println": [28], "Reader": [29], "impl": [29], "Writer": [20]}),
        ("rust", {"Config": [8, 17], "new": [7, 17], "helper": [17], "write": [9], "assert_eq": [23]}),
        (
            "java",
            {"LoggerFactory": [11], "getLogger": [11], "Query": [22], "Repo": [14, 17], "Override": [20]},
        ),
        ("c", {"strlen": [14], "free": [18], "node": [10, 12, 16, 17]}),
        ("cpp", {"compute": [28], "Thing": [31, 33], "make_unique": [21, 23], "Mixin": [6], "helper": [33]}),
    ],
)
def test_references(language: str, used: dict[str, list[int]]) -> None:
    references = extract(CASES[language][0].encode(), language).references
    assert {name: references.get(name) for name in used} == used


def test_parents_and_end_lines() -> None:
    found = {(d.qualname, d.line): d for d in extract(CPP.encode(), "cpp").definitions}
    assert found["app.ui.Widget.create", 23].parent == "app.ui.Widget"
    assert found["app.ui.Widget", 6].end_line == 19
    go = {d.qualname: d for d in extract(GO.encode(), "go").definitions}
    assert (go["Pair.Set"].parent, go["Pair.Set"].name) == ("Pair", "Set")


def test_cpp_out_of_line_definitions_in_a_known_namespace_stay_functions() -> None:
    source = (
        b"namespace util { int twice(int); }\nint util::twice(int v) { return v * 2; }\nvoid Foo::bar() {}\n"
    )
    found = sorted((d.qualname, d.kind, d.line) for d in extract(source, "cpp").definitions)
    assert found == [
        ("Foo.bar", "method", 3),
        ("util", "namespace", 1),
        ("util.twice", "function", 1),
        ("util.twice", "function", 2),
    ]


def test_javascript_prototype_and_exports_assignments() -> None:
    source = (
        b"// Adds.\nCounter.prototype.add = function (n) { this.n += n; };\n"
        b"exports.make = () => new Counter();\n"
    )
    found = {d.qualname: d for d in extract(source, "javascript").definitions}
    assert {(q, d.kind) for q, d in found.items()} == {("Counter.add", "method"), ("make", "function")}
    assert (found["Counter.add"].params, found["Counter.add"].doc) == ("(n)", "Adds.")


@pytest.mark.parametrize(
    ("language", "source", "good"),
    [
        (
            "python",
            "def good():\n    pass\n\nclass Half(:\n    x = \n\ndef also_good(a) -> int:\n    return a\n",
            {("good", "function"), ("also_good", "function")},
        ),
        (
            "typescript",
            "export function ok(a: number): number { return a; }\n"
            "function broken(a: number) { return foo(a; }\n"
            "export class Fine { run(): void {} }\n",
            {("ok", "function"), ("Fine", "class"), ("Fine.run", "method")},
        ),
        (
            "cpp",
            "int good(int a) { return a; }\nclass Broken { void f( };\n"
            "struct Fine { int x; };\nint also() { return 1; }\n",
            {("good", "function"), ("also", "function")},
        ),
    ],
)
def test_syntax_errors_keep_the_good_definitions(
    language: str, source: str, good: set[tuple[str, str]]
) -> None:
    found = extract(source.encode(), language)
    assert found.status == "partial"
    assert good <= {(d.qualname, d.kind) for d in found.definitions}


@pytest.mark.parametrize("language", ["python", "javascript", "go", "c", "java"])
def test_invalid_utf8_does_not_crash(language: str) -> None:
    source = CASES[language][0].encode() + b"\n/* \xff\xfe caf\xe9 */\n\xc3\x28 \x80\x80\n"
    found = extract(source, language)
    assert found.status in ("ok", "partial")
    assert found.definitions and all(isinstance(d.signature, str) for d in found.definitions)
    latin1 = extract(b"def caf\xe9():\n    return '\xff'\n\n\ndef ok():\n    pass\n", "python")
    assert [(d.name, d.signature) for d in latin1.definitions] == [
        ("caf", "def caf\ufffd()"),
        ("ok", "def ok()"),
    ]


def test_a_200_kb_minified_line_gives_capped_signatures() -> None:
    params = ",".join(f"p{i}" for i in range(3000))
    body = ";".join(f"var v{i}=call{i}(a,b)" for i in range(8000))
    source = f"const big=function({params}){{{body}}};function f(a){{return big(a)}};".encode()
    assert len(source) > 200_000 and source.count(b"\n") == 0
    found = {d.name: d for d in extract(source, "javascript").definitions}
    assert set(found) == {"big", "f"}
    assert found["big"].line == found["big"].end_line == 1
    assert len(found["big"].signature) <= SIGNATURE_CAP and found["big"].signature.endswith("…")
    assert len(found["big"].params) <= SIGNATURE_CAP
    assert found["f"].signature == "function f(a)"
