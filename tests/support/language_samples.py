"""Realistic sources of each language the index tags, with the constructs each grammar makes awkward:
decorators, exports, receivers, impl blocks, templates, macros (extraction and index-output tests)."""

PYTHON = '''\
"""Module doc."""
import os
from .util import helper as h
from typing import Protocol

MAX_SIZE = 10
_private = 1


class Store(Protocol):
    """A store."""

    def get(self, key: str) -> bytes: ...


@dataclass
class Cache(Base):
    limit: int = MAX_SIZE

    def lookup(self, key: str, *, default: bytes = b"") -> bytes:
        """Look a key up.

        More text.
        """
        return helper(key) or default

    class Entry:
        pass


async def main(argv: list[str]) -> int:
    def inner():
        return Cache()
    return 0
'''

JAVASCRIPT = """\
import React, { useState } from 'react';
import * as path from "path";
export { foo } from './foo';
const { a, b } = require('./ab');
let counter = 0;
var legacy = function () {};
/**
 * Fetches data.
 */
export async function fetchData(url, opts = {}) {
  const res = await fetch(url);
  return res.json();
}
export default class Widget extends React.Component {
  static defaultProps = {};
  #secret = 1;
  state = { x: 1 };
  handle = (e) => { this.setState({}); };
  get value() { return this.#secret; }
  static create() { return new Widget(); }
  async *gen() {}
}
module.exports = { fetchData };
exports.helper = function helper() {};
const obj = {
  method() {},
  arrow: () => 1,
};
function outer() {
  function inner() {}
  const local = () => 2;
  return inner;
}
export const handler = async (event) => {
  return process(event);
};
"""

TYPESCRIPT = """\
import type { Foo } from "./foo";
import fs = require("fs");
/** Decorated. */
@Component({ selector: "x" })
export class Comp<T> extends Base<T> implements OnInit, Other {
  private readonly handler = (e: Event): void => {};
  @Input() name: string;
  constructor(private svc: Service) { super(); }
  ngOnInit(): void { this.svc.load<Foo>(); }
  abstract_thing?(): void;
}
export abstract class Repo {
  abstract find(id: string): Promise<Item>;
}
declare module "ext" {
  export function ext(): void;
}
namespace NS.Inner {
  export const X = 1;
  export function nsFn(): number { return X; }
}
export default function (a: number) {}
export function overload(a: string): string;
export function overload(a: number): number;
export function overload(a: any): any { return a; }
export const enum Flags { A = 1 }
type Fn = (a: number) => string;
interface Props { onClick?: () => void; render(): JSX.Element }
const useThing = <T,>(x: T): T => x;
let mutable: Map<string, Item> = new Map();
function generic<T extends Item>(items: T[]): T | undefined { return items[0]; }
"""

TSX = """\
import React from "react";
interface Props { title: string }
// The app.
export const App: React.FC<Props> = ({ title }) => {
  return <Layout title={title}><Button onClick={() => go()} /></Layout>;
};
export default function Page(props: Props) { return <App title="x" />; }
function generic<T,>(x: T) { return x; }
"""

GO = """\
package main

import "os"
import f "fmt"

const (
	A = iota
	B
)

var Global = 1

type (
	Reader interface{ Read() }
	Pair[K comparable, V any] struct { k K; v V }
)

// Handler handles.
// Second line.
type Handler func(w Writer) error

func (p Pair[K, V]) Key() K { return p.k }
func (p *Pair[K, V]) Set(k K) { p.k = k }
func (Handler) Serve() {}

func main() {
	x := func() int { return 1 }
	f.Println(os.Args, x())
	var r Reader = &impl{}
	_ = r
}
"""

RUST = """\
use std::{io, fmt::Display};
use crate::model::*;
extern crate serde;
/// The config.
#[derive(Debug, Clone)]
pub struct Config<'a> { name: &'a str }
static COUNT: AtomicUsize = AtomicUsize::new(0);
impl<'a> Display for Config<'a> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "x") }
}
impl<T: Clone> Wrapper<T> {
    /// Makes one.
    pub const fn make(v: T) -> Self { Self(v) }
}
pub trait Store { type Item; const N: usize; fn get(&self) -> Option<Self::Item> { None } }
macro_rules! my_macro { () => {}; }
pub(crate) async fn run() -> Result<(), Box<dyn Error>> { let c = Config::new(); helper::go(); Ok(()) }
impl std::fmt::Debug for Other {}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn it_works() { assert_eq!(2, 2); }
}
"""

JAVA = """\
package com.example;

import java.util.*;
import static java.lang.Math.max;

/**
 * Service docs.
 */
@Service
public final class UserService extends Base implements Api {
    private static final Logger LOG = LoggerFactory.getLogger(UserService.class);
    static final String A = "a", B = "b";
    final static int C = 1;
    private final Repo repo;

    @Autowired
    public UserService(Repo repo) { this.repo = repo; }

    /** Finds. */
    @Override
    public <T extends User> List<T> find(String id, int... more) throws IOException {
        return repo.query(new Query(id));
    }

    public record Point(int x, int y) { Point { } }

    public @interface Marker {}

    private enum State { ON, OFF; State next() { return OFF; } }

    void lambda() { Runnable r = () -> helper(); }
}
interface Api { String NAME = "api"; default void hello() {} }
"""

C = """\
#include <stdlib.h>
#ifndef GUARD_H
#define GUARD_H
#define VERSION "1.0"
static const int table_size = 64;
const char *const names[] = { "a" };
int global_counter;
typedef int (*callback_t)(void *ctx);
typedef enum { LOW, HIGH } level_t;
struct node { struct node *next; };
/** Frees a list. */
void list_free(struct node *head);
static inline unsigned long long hash(const char *s, size_t n) {
    return strlen(s) + n;
}
void list_free(struct node *head) {
    struct node *n = head;
    free(n);
}
int (*get_handler(int id))(int) { return 0; }
#endif
"""

CPP = """\
#include "widget.hpp"
#include <memory>
namespace app::ui {
/// A widget.
template <typename T>
class Widget : public Base<T>, private Mixin {
 public:
  explicit Widget(int w);
  Widget(const Widget&) = delete;
  ~Widget() override;
  T value() const { return impl_->get(); }
  static std::unique_ptr<Widget> create();
  bool operator==(const Widget& o) const;
  enum class Mode { A, B };
 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  static constexpr int kMax = 4;
};
template <typename T>
Widget<T>::Widget(int w) : impl_(std::make_unique<Impl>()) {}
template <typename T>
std::unique_ptr<Widget<T>> Widget<T>::create() { return std::make_unique<Widget<T>>(1); }
struct Widget<int>::Impl { int get() { return 0; } };
}  // namespace app::ui
namespace {
constexpr double kPi = 3.14;
int helper() { return app::ui::compute(); }
}
auto lambda = [](int x) { return x; };
const std::string& name_of(const Thing& t) { return t.name; }
void ns::Outer::Inner::deep() {}
int main(int argc, char** argv) { app::ui::Widget<int> w(1); auto p = new Thing(); helper(); }
"""
