"""Exact definitions, imports and references per language, from small realistic sources."""

from __future__ import annotations

import pytest

from ide.codeintel.index.extract import extract
from ide.codeintel.index.languages import TAGGED, detect_language, query_source

JAVA = """\
package demo;
import java.util.List;
/** A shape. */
public class Shape implements Comparable<Shape> {
    public static final int SIDES = 4;
    private int n;
    public Shape(int n) { this.n = n; }
    public int area(int scale) { return compute(n) * scale; }
    interface Visitor { void visit(Shape s); }
    enum Kind { A, B }
}
"""

C = """\
#include <stdio.h>
#include "local.h"
#define MAX 10
#define SQR(x) ((x)*(x))
typedef struct point { int x; int y; } point_t;
enum color { RED, GREEN };
/* Adds. */
int add(int a, int b) { return a + b; }
static char *name(void) { return "n"; }
int main(void) { printf("%d", add(1, 2)); return 0; }
"""

CPP = """\
#include <vector>
namespace geo {
class Shape {
 public:
  virtual double area() const;
  ~Shape();
};
struct Point { int x; };
double Shape::area() const { return compute(1); }
Shape::~Shape() {}
using Vec = std::vector<int>;
}
int free_fn(int a) { return a; }
template <typename T> T twice(T v) { return v + v; }
"""

GO = """\
package shapes

import (
	"fmt"
	"math"
)

const Pi = 3.14

// Shape has an area.
type Shape interface {
	Area() float64
}

type Circle struct {
	R float64
}

type ID = string

func (c *Circle) Area() float64 {
	return math.Pi * c.R * c.R
}

func New(r float64) *Circle {
	fmt.Println(r)
	return &Circle{R: r}
}
"""

JAVASCRIPT = """\
import { x } from "./util.js";
const fs = require("fs");
const MAX = 10;
// Adds two numbers.
function add(a, b) {
  return a + b;
}
const mul = (a, b) => a * b;
class Shape extends Base {
  constructor(n) { this.n = n; }
  area() { return compute(this.n); }
}
export const VERSION = "1";
"""

RUST = """\
use std::collections::HashMap;
const LIMIT: usize = 3;
/// A point.
pub struct Point { x: i32, y: i32 }
pub enum Dir { Up, Down }
pub trait Area { fn area(&self) -> f64; }
impl Point {
    pub fn new(x: i32, y: i32) -> Self { Point { x, y } }
    fn len(&self) -> f64 { helper(self.x) }
}
impl Area for Point { fn area(&self) -> f64 { 0.0 } }
type Map = HashMap<String, i32>;
fn helper(v: i32) -> f64 { v as f64 }
mod inner { pub fn f() {} }
"""

TYPESCRIPT = """\
import { Thing } from "./thing";
export interface Named {
  name: string;
  greet(other: Named): string;
}
export type Id = string | number;
enum Color { Red, Green }
/** A user. */
export class User implements Named {
  constructor(public name: string) {}
  greet(other: Named): string { return hello(other.name); }
}
export function makeUser(name: string): User {
  return new User(name);
}
const LIMIT = 5;
"""

CASES = [
    pytest.param(
        "S.java",
        JAVA,
        [
            ("Shape", "class", 4),
            ("Shape.Kind", "enum", 10),
            ("Shape.SIDES", "constant", 5),
            ("Shape.Shape", "method", 7),
            ("Shape.Visitor", "interface", 9),
            ("Shape.Visitor.visit", "method", 9),
            ("Shape.area", "method", 8),
        ],
        ["java.util.List"],
        id="java",
    ),
    pytest.param(
        "s.c",
        C,
        [
            ("MAX", "constant", 3),
            ("SQR", "function", 4),
            ("add", "function", 8),
            ("color", "enum", 6),
            ("main", "function", 10),
            ("name", "function", 9),
            ("point", "struct", 5),
            ("point_t", "type", 5),
        ],
        ["stdio.h", "local.h"],
        id="c",
    ),
    pytest.param(
        "s.cpp",
        CPP,
        [
            ("free_fn", "function", 13),
            ("geo", "namespace", 2),
            ("geo.Point", "struct", 8),
            ("geo.Shape", "class", 3),
            ("geo.Shape.area", "method", 5),
            ("geo.Shape.area", "method", 9),
            ("geo.Shape.~Shape", "method", 6),
            ("geo.Shape.~Shape", "method", 10),
            ("geo.Vec", "type", 11),
            ("twice", "function", 14),
        ],
        ["vector"],
        id="cpp",
    ),
    pytest.param(
        "s.go",
        GO,
        [
            ("Circle", "struct", 15),
            ("Circle.Area", "method", 21),
            ("ID", "type", 19),
            ("New", "function", 25),
            ("Pi", "constant", 8),
            ("Shape", "interface", 11),
            ("Shape.Area", "method", 12),
        ],
        ["fmt", "math"],
        id="go",
    ),
    pytest.param(
        "s.js",
        JAVASCRIPT,
        [
            ("MAX", "constant", 3),
            ("Shape", "class", 9),
            ("Shape.area", "method", 11),
            ("Shape.constructor", "method", 10),
            ("VERSION", "constant", 13),
            ("add", "function", 5),
            ("fs", "constant", 2),
            ("mul", "function", 8),
        ],
        ["./util.js", "fs"],
        id="javascript",
    ),
    pytest.param(
        "s.rs",
        RUST,
        [
            ("Area", "trait", 6),
            ("Area.area", "method", 6),
            ("Dir", "enum", 5),
            ("LIMIT", "constant", 2),
            ("Map", "type", 12),
            ("Point", "struct", 4),
            ("Point.area", "method", 11),
            ("Point.len", "method", 9),
            ("Point.new", "method", 8),
            ("helper", "function", 13),
            ("inner", "module", 14),
            ("inner.f", "function", 14),
        ],
        ["std::collections::HashMap"],
        id="rust",
    ),
    pytest.param(
        "s.ts",
        TYPESCRIPT,
        [
            ("Color", "enum", 7),
            ("Id", "type", 6),
            ("LIMIT", "constant", 16),
            ("Named", "interface", 2),
            ("Named.greet", "method", 4),
            ("User", "class", 9),
            ("User.constructor", "method", 10),
            ("User.greet", "method", 11),
            ("makeUser", "function", 13),
        ],
        ["./thing"],
        id="typescript",
    ),
    pytest.param(
        "s.tsx",
        TYPESCRIPT + "export const App = () => <div>{LIMIT}</div>;\n",
        [
            ("App", "function", 17),
            ("Color", "enum", 7),
            ("Id", "type", 6),
            ("LIMIT", "constant", 16),
            ("Named", "interface", 2),
            ("Named.greet", "method", 4),
            ("User", "class", 9),
            ("User.constructor", "method", 10),
            ("User.greet", "method", 11),
            ("makeUser", "function", 13),
        ],
        ["./thing"],
        id="tsx",
    ),
]


@pytest.mark.parametrize(("filename", "source", "definitions", "imports"), CASES)
def test_definitions_and_imports(
    filename: str, source: str, definitions: list[tuple[str, str, int]], imports: list[str]
) -> None:
    found = extract(source.encode(), detect_language(filename))
    assert found.status == "ok"
    assert sorted((d.qualname, d.kind, d.line) for d in found.definitions) == definitions
    assert found.imports == imports


def test_every_tagged_language_has_a_fixture() -> None:
    assert {detect_language(case.values[0]) for case in CASES} | {"python"} == set(TAGGED)


@pytest.mark.parametrize(
    ("filename", "source", "name", "signature", "params", "returns", "doc"),
    [
        ("s.js", JAVASCRIPT, "add", "function add(a, b)", "(a, b)", "", "Adds two numbers."),
        (
            "s.ts",
            TYPESCRIPT,
            "makeUser",
            "function makeUser(name: string): User",
            "(name: string)",
            "User",
            "",
        ),
        ("s.go", GO, "Area", "func (c *Circle) Area() float64", "()", "float64", ""),
        ("s.rs", RUST, "new", "pub fn new(x: i32, y: i32) -> Self", "(x: i32, y: i32)", "Self", ""),
        ("S.java", JAVA, "area", "public int area(int scale)", "(int scale)", "int", ""),
        ("s.c", C, "add", "int add(int a, int b)", "(int a, int b)", "int", "Adds."),
        ("s.cpp", CPP, "free_fn", "int free_fn(int a)", "(int a)", "int", ""),
    ],
)
def test_signature_parameters_returns_and_doc(
    filename: str, source: str, name: str, signature: str, params: str, returns: str, doc: str
) -> None:
    found = {d.name: d for d in extract(source.encode(), detect_language(filename)).definitions}
    got = found[name]
    assert (got.signature, got.params, got.returns, got.doc) == (signature, params, returns, doc)


@pytest.mark.parametrize(
    ("filename", "source", "used"),
    [
        ("s.js", JAVASCRIPT, {"compute": [11], "require": [2], "Base": [9]}),
        ("s.go", GO, {"Println": [26], "Circle": [21, 25, 27]}),
        ("s.rs", RUST, {"helper": [9]}),
        ("S.java", JAVA, {"compute": [8]}),
        ("s.c", C, {"printf": [10], "add": [10]}),
        ("s.cpp", CPP, {"compute": [9]}),
    ],
)
def test_references(filename: str, source: str, used: dict[str, list[int]]) -> None:
    references = extract(source.encode(), detect_language(filename)).references
    assert {name: references.get(name) for name in used} == used


def test_a_syntax_error_keeps_the_good_definitions() -> None:
    broken_go = GO.replace("func New(r float64) *Circle {", "func New(r float64 *Circle {{")
    found = extract(broken_go.encode(), "go")
    assert found.status == "partial"
    assert {("Circle", "struct"), ("Circle.Area", "method"), ("Shape", "interface")} <= {
        (d.qualname, d.kind) for d in found.definitions
    }
    broken_py = "def good():\n    pass\n\nclass Half(:\n    x = \n\ndef also_good(a) -> int:\n    return a\n"
    found = extract(broken_py.encode(), "python")
    assert found.status == "partial"
    assert {"good", "also_good"} <= {d.name for d in found.definitions}


def test_invalid_utf8_and_a_huge_minified_line_are_handled() -> None:
    latin1 = b"function caf\xe9() { return 1; }\nfunction plain() { return caf\xe9(); }\n"
    found = extract(latin1, "javascript")
    assert {d.name for d in found.definitions} == {"caf", "plain"}  # the byte ends the identifier
    minified = (("function f" + "x" * 300 + "(a){return a};var y=1;") * 2000).encode()
    found = extract(minified, "javascript")
    assert found.lines == 1 and len(found.definitions) == 2000
    assert all(len(d.signature) <= 240 and len(d.name) <= 200 for d in found.definitions)


def test_a_parameter_list_over_several_lines_reads_as_one() -> None:
    source = b"def run(\n    path: list[\n        int\n    ],\n    query: str,\n) -> int:\n    pass\n"
    (found,) = extract(source, "python").definitions
    assert (found.signature, found.params) == (
        "def run(path: list[int], query: str) -> int",
        "(path: list[int], query: str)",
    )


def test_a_query_file_inherits_its_base_language_first() -> None:
    c, cpp = query_source("c"), query_source("cpp")
    assert cpp.startswith(c) and "class_specifier" in cpp and "class_specifier" not in c
    assert query_source("tsx", "refs").startswith(query_source("typescript", "refs"))
    assert query_source("tsx").startswith(query_source("ecma"))
    with pytest.raises(FileNotFoundError):
        query_source("ecma", "refs")


def test_cpp_finds_what_it_inherits_from_c() -> None:
    source = b"static inline int **slots(struct obj *o) { return o->slots; }\n"
    for language in ("c", "cpp"):
        assert [(d.name, d.kind) for d in extract(source, language).definitions] == [("slots", "function")]
