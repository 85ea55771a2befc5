"""chunk_text: symbol-boundary chunking with real tree-sitter grammars, and its invariants."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from qmd_daemon.ingest.chunk_code import MAX_PARSE_LINE, SUPPORTED_LANGUAGES, available_languages, chunk_code
from qmd_daemon.ingest.chunking import CHUNKER_VERSION, chunk_text
from qmd_daemon.text.chunk_model import Chunk


def split_file_lines(text: str) -> list[str]:
    if "\n" not in text and "\r" in text:  # old Mac line endings
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def assert_valid(text: str, chunks: list[Chunk]) -> None:
    """Lines in range, text = the lines, in order, every non-blank line covered, defs inside."""
    lines = split_file_lines(text)
    covered = [False] * len(lines)
    previous_start = 0
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk
        assert chunk.start_line >= previous_start, "chunks out of order"
        previous_start = chunk.start_line
        expected = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        if chunk.text != expected:
            # only a single enormous line may be cut by characters
            assert chunk.start_line == chunk.end_line and chunk.text in expected, chunk
        assert chunk.text.strip()
        for definition in chunk.definitions:
            assert chunk.start_line <= definition.line <= chunk.end_line, (definition, chunk)
        for row in range(chunk.start_line - 1, chunk.end_line):
            covered[row] = True
    missing = [i + 1 for i, line in enumerate(lines) if line.strip() and not covered[i]]
    assert not missing, f"non-blank lines not in any chunk: {missing[:10]}"


def assert_defines(
    text: str, chunks: list[Chunk], expected: dict[str, str], shown: Callable[[str], str]
) -> None:
    """Each expected name is defined with its kind, and each definition's line shows `shown(name)`."""
    lines = text.split("\n")
    found: dict[str, set[str]] = {}
    for chunk in chunks:
        for d in chunk.definitions:
            found.setdefault(d.name, set()).add(d.kind)
            assert shown(d.name) in lines[d.line - 1], ("the line does not show the name", d)
    for name, kind in expected.items():
        assert kind in found.get(name, set()), (name, kind, found)


def chunk_of(chunks: list[Chunk], name: str) -> Chunk:
    for chunk in chunks:
        if name in chunk.symbols:
            return chunk
    raise AssertionError(f"no chunk defines {name}: {[c.symbols for c in chunks]}")


def defs_by_name(chunks: list[Chunk]) -> dict[str, tuple[str, int]]:
    return {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.split("\n"), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def big_python_class(methods: int = 12, body_lines: int = 8) -> str:
    parts = [
        '"""HTTP client session."""',
        "",
        "import asyncio",
        "from typing import Any",
        "",
        "",
        "class ClientSession:",
        '    """First-class interface for making HTTP requests."""',
        "",
        "    ATTRS = frozenset(['_base_url', '_connector'])",
        "",
    ]
    for i in range(methods):
        if i % 3 == 0:
            parts.append("    @property")
        parts.append(f"    async def method_{i}(self, url: str, *, timeout: float = 5.0) -> Any:")
        parts.append(f'        """Do thing number {i}."""')
        for j in range(body_lines):
            parts.append(f"        value_{j} = await self._request('GET', url, attempt={j})  # step {j}")
        parts.append(f"        return value_{body_lines - 1}")
        parts.append("")
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# python


PY_SMALL = textwrap.dedent(
    '''\
    """Helpers for cookies."""

    import re
    from http.cookies import SimpleCookie

    MAX_AGE = 3600
    _COOKIE_RE = re.compile(r"(\\w+)=(\\w+)")


    def parse_cookie(header: str) -> dict[str, str]:
        """Parse a Cookie header."""
        return dict(_COOKIE_RE.findall(header))


    # Serialize one cookie.
    @staticmethod
    def dump_cookie(name: str, value: str) -> str:
        return f"{name}={value}"


    class CookieJar:
        """Stores cookies."""

        def __init__(self) -> None:
            self._cookies = SimpleCookie()

        def update(self, header: str) -> None:
            for key, value in parse_cookie(header).items():
                self._cookies[key] = value
    '''
)


def test_python_small_file_merges_into_one_chunk_with_all_definitions() -> None:
    chunks = chunk_text("aiohttp/cookies.py", PY_SMALL, "python")
    assert_valid(PY_SMALL, chunks)
    assert len(chunks) == 1
    defs = defs_by_name(chunks)
    assert defs["parse_cookie"] == ("function", line_of(PY_SMALL, "def parse_cookie"))
    assert defs["dump_cookie"] == ("function", line_of(PY_SMALL, "def dump_cookie"))
    assert defs["CookieJar"] == ("class", line_of(PY_SMALL, "class CookieJar"))
    assert defs["__init__"][0] == "method"
    assert defs["update"] == ("method", line_of(PY_SMALL, "def update"))
    assert defs["MAX_AGE"][0] == "const"
    sig = chunks[0].signature.split("\n")
    assert "def parse_cookie(header: str) -> dict[str, str]:" in sig
    assert len(sig) <= 5


def test_python_boundaries_at_functions_with_decorators_and_comments() -> None:
    chunks = chunk_text("cookies.py", PY_SMALL, "python", max_lines=10)
    assert_valid(PY_SMALL, chunks)
    dump = chunk_of(chunks, "dump_cookie")
    # the comment and the decorator above the function are in its chunk
    assert dump.start_line == line_of(PY_SMALL, "# Serialize one cookie.")
    assert "@staticmethod" in dump.text
    assert dump.signature.startswith("def dump_cookie(name: str, value: str) -> str:")
    parse = chunk_of(chunks, "parse_cookie")
    assert parse.text.rstrip().endswith("return dict(_COOKIE_RE.findall(header))")
    # the module docstring goes into the first chunk
    assert chunks[0].start_line == 1 and '"""Helpers for cookies."""' in chunks[0].text


def test_python_large_class_is_split_into_methods_with_heading() -> None:
    text = big_python_class()
    chunks = chunk_text("aiohttp/client.py", text, "python")
    assert_valid(text, chunks)
    assert len(chunks) > 2
    first = chunk_of(chunks, "ClientSession")
    assert first.start_line == 1  # module docstring and imports glued to the class header
    assert first.signature.split("\n")[0] == "class ClientSession:"
    assert first.heading == "class ClientSession"
    for i in range(12):
        chunk = chunk_of(chunks, f"method_{i}")
        assert chunk.heading == "class ClientSession"
        definition = next(d for d in chunk.definitions if d.name == f"method_{i}")
        assert definition.kind == "method"
        assert definition.line == line_of(text, f"async def method_{i}(")
        assert f"async def method_{i}(self, url: str, *, timeout: float = 5.0) -> Any:" in chunk.signature
        if i % 3 == 0:  # the decorator line is in the method's chunk
            assert chunk.start_line <= definition.line - 1
            assert text.split("\n")[definition.line - 2].strip() == "@property"
    # no method is cut between chunks: each method's lines are inside one chunk
    for i in range(12):
        start = line_of(text, f"async def method_{i}(")
        chunk = chunk_of(chunks, f"method_{i}")
        assert chunk.start_line <= start and start + 10 <= chunk.end_line
    assert all(c.end_line - c.start_line + 1 <= 70 for c in chunks)


def test_python_long_function_is_windowed_with_overlap() -> None:
    body = "\n".join(f"    total += compute({i}, total)  # accumulate step {i}" for i in range(200))
    text = f"def run(n: int) -> int:\n    total = 0\n{body}\n    return total\n"
    chunks = chunk_text("run.py", text, "python", max_lines=60, overlap=4)
    assert_valid(text, chunks)
    assert len(chunks) >= 4
    assert all(c.end_line - c.start_line + 1 <= 60 for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line <= a.end_line  # a little overlap
        assert a.end_line - b.start_line + 1 <= 4
    assert chunks[0].definitions[0].name == "run"
    # continuation windows keep the function's signature as context
    assert all(c.signature.startswith("def run(n: int) -> int:") for c in chunks)


def test_python_nested_class_heading_path() -> None:
    inner = "\n".join(
        f"        def m{i}(self):\n" + "\n".join(f"            x = {j}" for j in range(12)) for i in range(6)
    )
    text = f"class Outer:\n    class Inner:\n{inner}\n"
    chunks = chunk_text("n.py", text, "python", max_lines=30)
    assert_valid(text, chunks)
    assert chunk_of(chunks, "m3").heading == "class Outer > class Inner"


# ---------------------------------------------------------------------------------------------
# other languages

JS = textwrap.dedent(
    """\
    // Router utilities.
    import { parse } from 'url';
    const METHODS = ['get', 'post'];

    /**
     * Create a router.
     */
    export function createRouter(options) {
      const stack = [];
      return { stack, options };
    }

    export default class Router extends EventEmitter {
      constructor(opts) {
        super();
        this.opts = opts;
      }

      handle(req, res, next) {
        return next();
      }
    }

    const toPath = (url) => parse(url).pathname;

    Router.prototype.route = function route(path) {
      return new Route(path);
    };
    """
)

TS = textwrap.dedent(
    """\
    import type { Request } from './request';

    export interface Handler {
      handle(req: Request): Promise<void>;
    }

    export type Middleware = (req: Request, next: () => void) => void;

    export enum Method { Get = 'GET', Post = 'POST' }

    export abstract class BaseHandler implements Handler {
      private count = 0;
      abstract handle(req: Request): Promise<void>;
      protected log(message: string): void {
        console.log(message);
      }
    }

    namespace Internal {
      export function helper(): number { return 1; }
    }
    """
)

TSX = textwrap.dedent(
    """\
    import React from 'react';

    export function Button({ label }: { label: string }) {
      return <button className="btn">{label}</button>;
    }

    export const Panel: React.FC = () => <div>panel</div>;
    """
)

GO = textwrap.dedent(
    """\
    package server

    import (
    \t"fmt"
    \t"net/http"
    )

    // MaxConns bounds the pool.
    const MaxConns = 64

    // Server serves HTTP.
    type Server struct {
    \tAddr string
    \tmux  *http.ServeMux
    }

    // Handler handles one request.
    type Handler interface {
    \tServeHTTP(w http.ResponseWriter, r *http.Request)
    }

    // ListenAndServe starts the server.
    func (s *Server) ListenAndServe() error {
    \treturn http.ListenAndServe(s.Addr, s.mux)
    }

    func New(addr string) *Server {
    \tfmt.Println("new server", addr)
    \treturn &Server{Addr: addr, mux: http.NewServeMux()}
    }
    """
)

RUST = textwrap.dedent(
    """\
    use std::fmt;

    /// A parsed URL.
    #[derive(Debug, Clone)]
    pub struct Url {
        scheme: String,
        host: String,
    }

    impl Url {
        pub fn parse(input: &str) -> Result<Url, Error> {
            todo!()
        }

        pub fn host(&self) -> &str {
            &self.host
        }
    }

    impl fmt::Display for Url {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "{}://{}", self.scheme, self.host)
        }
    }

    pub trait Resolve {
        fn resolve(&self, name: &str) -> Vec<String>;
    }

    pub enum Error { Invalid, Empty }

    const DEFAULT_PORT: u16 = 80;
    """
)

JAVA = textwrap.dedent(
    """\
    package com.example.http;

    import java.util.List;

    /** A client. */
    @ThreadSafe
    public class HttpClient implements AutoCloseable {
        private final int timeout;

        public HttpClient(int timeout) {
            this.timeout = timeout;
        }

        @Override
        public void close() {
            pool.shutdown();
        }

        public List<String> send(Request request) throws IOException {
            return List.of(request.url());
        }
    }

    interface Request { String url(); }

    enum Status { OK, ERROR }
    """
)

C = textwrap.dedent(
    """\
    #ifndef BUFFER_H
    #define BUFFER_H

    #include <stdlib.h>

    #define BUF_MAX 4096

    typedef struct buffer {
        char *data;
        size_t len;
    } buffer_t;

    /* Allocate a buffer. */
    buffer_t *buffer_new(size_t cap) {
        buffer_t *b = malloc(sizeof(buffer_t));
        b->data = malloc(cap);
        b->len = 0;
        return b;
    }

    void buffer_free(buffer_t *b);

    #endif
    """
)

CPP = textwrap.dedent(
    """\
    #include <vector>

    namespace net {

    template <typename T>
    class Queue {
     public:
      void push(const T& item) { items_.push_back(item); }
      bool empty() const;
     private:
      std::vector<T> items_;
    };

    struct Endpoint {
      int port;
    };

    }  // namespace net

    bool net::Queue<int>::empty() const { return items_.empty(); }
    """
)

RUBY = textwrap.dedent(
    """\
    require 'json'

    # Serializes records.
    module Serializers
      class JsonSerializer < Base
        attr_reader :options

        def initialize(options = {})
          @options = options
        end

        def self.call(record)
          new.serialize(record)
        end

        def serialize(record)
          JSON.generate(record.to_h)
        end
      end
    end

    def helper
      42
    end
    """
)

PHP = textwrap.dedent(
    """\
    <?php
    namespace App\\Http;

    use Psr\\Log\\LoggerInterface;

    function helper(string $name): string {
        return strtoupper($name);
    }

    interface Middleware {
        public function handle($request);
    }

    /**
     * The kernel.
     */
    final class Kernel implements Middleware {
        const VERSION = '1.0';

        public function __construct(private LoggerInterface $logger) {}

        public function handle($request) {
            return $this->logger->info('handled');
        }
    }
    """
)

CSHARP = textwrap.dedent(
    """\
    using System;

    namespace Shop.Orders
    {
        /// <summary>An order.</summary>
        [Serializable]
        public class Order
        {
            public int Id { get; set; }

            public Order(int id)
            {
                Id = id;
            }

            public decimal Total()
            {
                return 0m;
            }
        }

        public interface IOrderRepository
        {
            Order Find(int id);
        }

        public enum Status { Open, Closed }

        public struct Money { public decimal Amount; }
    }
    """
)

KOTLIN = textwrap.dedent(
    """\
    package shop.orders

    import kotlinx.coroutines.Job

    /** An order book. */
    class OrderBook(private val owner: String) {
        private val orders = mutableListOf<Order>()

        fun add(order: Order) {
            orders.add(order)
        }

        fun total(): Long {
            return orders.sumOf { it.amount }
        }

        companion object Factory {
            fun empty(): OrderBook = OrderBook("nobody")
        }
    }

    object Registry {
        fun lookup(id: Int): OrderBook? = null
    }

    typealias Orders = List<Order>

    fun launchAll(jobs: List<Job>) {
        jobs.forEach { it.start() }
    }
    """
)

SCALA = textwrap.dedent(
    """\
    package io.shop

    import cats.Eq

    /** A JSON value. */
    sealed abstract class Json extends Product {
      def isNull: Boolean

      def fold[X](jsonNull: => X, jsonBoolean: Boolean => X): X = {
        jsonNull
      }
    }

    object Json {
      final case class JBoolean(value: Boolean) extends Json {
        def isNull: Boolean = false
      }

      def fromBoolean(value: Boolean): Json = JBoolean(value)
    }

    trait Encoder[A] {
      def apply(a: A): Json
    }

    type Result[A] = Either[String, A]
    """
)

SWIFT = textwrap.dedent(
    """\
    import Foundation

    /// Creates and manages requests.
    open class Session {
        public let queue: DispatchQueue

        public init(queue: DispatchQueue) {
            self.queue = queue
        }

        func cancelAllRequests() {
            queue.async { }
        }
    }

    extension Session {
        func request(_ url: String) -> String {
            return url
        }
    }

    public protocol RequestAdapter {
        func adapt(_ request: String) -> String
    }

    struct Timing {
        let start: Double
    }

    public typealias Handler = (String) -> Void

    func makeSession() -> Session {
        return Session(queue: .main)
    }
    """
)

ELIXIR = textwrap.dedent(
    """\
    defmodule Plug.Conn do
      @moduledoc "The connection."

      defstruct assigns: %{}, halted: false

      @doc "Assigns a value."
      def assign(%Plug.Conn{assigns: assigns} = conn, key, value) when is_atom(key) do
        %{conn | assigns: Map.put(assigns, key, value)}
      end

      def halt(conn) do
        %{conn | halted: true}
      end

      defp run_before_send(conn, state) do
        conn
      end

      defmacro sigil(term, _modifiers), do: term
    end

    defprotocol Plug.Exception do
      def status(exception)
    end
    """
)

HASKELL = textwrap.dedent(
    """\
    module XMonad.Core (X, runX, LayoutClass(..)) where

    import Data.Maybe (fromMaybe)

    -- | The X monad.
    newtype X a = X (IO a)

    data WindowSet = WindowSet { current :: Int, visible :: [Int] }

    type Window = Int

    -- | Run the X monad.
    runX :: X a -> IO a
    runX (X io) = io

    class LayoutClass layout where
        runLayout :: layout -> Int -> IO [Int]
        runLayout _ n = return [n]

        doLayout :: layout -> Int -> IO [Int]
        doLayout l n = runLayout l n

        description :: layout -> String
        description _ = "layout"

    instance Show WindowSet where
        show ws = "windows " ++ show (current ws)

    whenJust :: Maybe a -> (a -> IO ()) -> IO ()
    whenJust mg f = maybe (return ()) f mg
    """
)

LUA = textwrap.dedent(
    """\
    local Util = require("lazy.core.util")

    local M = {}

    ---@param opts table
    function M.setup(opts)
      M.options = opts or {}
      return M.options
    end

    function M:reload()
      self.loaded = false
    end

    local function normalize(name)
      return name:lower()
    end

    M.find = function(name)
      return normalize(name)
    end

    return M
    """
)

ZIG = textwrap.dedent(
    """\
    const std = @import("std");

    pub const max_depth = 16;

    /// A language server.
    pub const Server = struct {
        allocator: std.mem.Allocator,

        pub fn init(allocator: std.mem.Allocator) Server {
            return .{ .allocator = allocator };
        }

        pub fn deinit(self: *Server) void {
            _ = self;
        }
    };

    pub const Status = enum { idle, busy };

    fn parseHeader(line: []const u8) usize {
        return line.len;
    }

    test "parse header" {
        try std.testing.expect(parseHeader("ab") == 2);
    }
    """
)

SHELL = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    NVM_DIR="${HOME}/.nvm"

    # Print to stdout.
    nvm_echo() {
      command printf %s\\n "$*" 2>/dev/null
    }

    nvm_err() {
      >&2 nvm_echo "$@"
    }

    function nvm_has() {
      type "${1-}" >/dev/null 2>&1
    }

    nvm_echo "loaded"
    """
)

OBJC = textwrap.dedent(
    """\
    #import <Foundation/Foundation.h>

    @protocol Greeter <NSObject>
    - (NSString *)greet:(NSString *)name;
    @end

    @interface Session : NSObject <Greeter>
    @property (nonatomic) NSInteger retries;
    - (void)resume;
    @end

    @implementation Session

    - (NSString *)greet:(NSString *)name {
        return [NSString stringWithFormat:@"hello %@", name];
    }

    // Starts the task again after a failure.
    - (void)resume {
        self.retries += 1;
        [self.task resume];
    }

    + (instancetype)sharedSession {
        static Session *shared = nil;
        return shared;
    }

    @end

    static int clamp(int value, int low, int high) {
        return value < low ? low : (value > high ? high : value);
    }
    """
)
DART = textwrap.dedent(
    """\
    import 'dart:async';

    /// A shape on a canvas.
    abstract class Shape {
      double get area;

      Shape.named(this.label);

      final String label;

      void draw(Canvas canvas) {
        canvas.paint(label);
        canvas.flush();
      }

      static Shape unit() => Square(1);
    }

    mixin Loud on Shape {}

    extension Twice on int {
      int twice() => this * 2;
    }

    enum Color { red, green }

    typedef Callback = void Function(int);

    Future<void> main(List<String> args) async {
      print(args);
    }
    """
)
JULIA = textwrap.dedent(
    """\
    module Geometry

    export area

    abstract type Shape end

    struct Circle <: Shape
        r::Float64
    end

    mutable struct Box
        w::Float64
    end

    function area(c::Circle)
        return pi * c.r^2
    end

    area(b::Box) = b.w^2

    macro twice(ex)
        :($ex; $ex)
    end

    const LIMIT = 3

    end
    """
)
# a header as Apple's SDK and most Objective-C libraries write them: between the bare
# NS_ASSUME_NONNULL_BEGIN/END macros (which the grammar cannot parse)
OBJC_HEADER = textwrap.dedent(
    """\
    #import <Foundation/Foundation.h>

    typedef NS_ENUM(NSUInteger, AFSSLPinningMode) {
        AFSSLPinningModeNone,
        AFSSLPinningModePublicKey,
        AFSSLPinningModeCertificate,
    };

    NS_ASSUME_NONNULL_BEGIN

    /**
     `AFSecurityPolicy` evaluates server trust against pinned X.509 certificates and public keys.
     */
    @interface AFSecurityPolicy : NSObject <NSSecureCoding, NSCopying>

    @property (readonly, nonatomic, assign) AFSSLPinningMode SSLPinningMode;

    /**
     Returns the shared default security policy, which does not allow invalid certificates.
     */
    + (instancetype)defaultPolicy;

    /**
     Whether or not the specified server trust should be accepted, based on the security policy.
     */
    - (BOOL)evaluateServerTrust:(SecTrustRef)serverTrust
                      forDomain:(nullable NSString *)domain;

    @end

    NS_ASSUME_NONNULL_END
    """
)
# an interface (.mli): its `val` specifications are what a reader looks up (angstrom.mli holds
# the library's documentation)
OCAML_INTERFACE = textwrap.dedent(
    """\
    type +'a t
    (** A parser for values of type ['a]. *)

    val peek_char : char option t
    (** [peek_char] accepts any char and returns it, or returns [None] if the end of input has
        been reached. This parser does not advance the input. *)

    val sep_by : _ t -> 'a t -> 'a list t

    external identity : 'a -> 'a = "%identity"

    module Unsafe : sig
      val take : int -> (bigstring -> off:int -> len:int -> 'a) -> 'a t
      (** [take n f] accepts exactly [n] characters of input into an unsafe buffer. *)

      val take_while : (char -> bool) -> (bigstring -> off:int -> len:int -> 'a) -> 'a t
      (** [take_while check f] accepts input as long as [check] returns [true]. *)

      val peek : int -> (bigstring -> off:int -> len:int -> 'a) -> 'a t
      (** [peek n ~f] like [take], but does not advance the input. *)
    end
    """
)
OCAML = textwrap.dedent(
    """\
    open Printf

    type shape = Circle of float | Square of float

    exception Invalid of string

    let area = function
      | Circle r -> 3.14 *. r *. r
      | Square s -> s *. s

    let rec fact n = if n = 0 then 1 else n * fact (n - 1)

    let default_size = 10

    module Stack = struct
      type 'a t = 'a list
      let empty = []
      let push x s = x :: s
      let pop = function
        | [] -> None
        | x :: rest -> Some (x, rest)
    end

    module type ORDERED = sig
      val compare : int -> int -> int
    end

    let () = printf "%d\\n" (fact 5)
    """
)
PERL = textwrap.dedent(
    """\
    package Mojo::Cache;
    use strict;
    use warnings;

    our $VERSION = '1.0';

    # Creates an empty cache.
    sub new {
        my ($class, %args) = @_;
        return bless {max_keys => 100, %args}, $class;
    }

    sub get { (shift->{cache} // {})->{shift()} }

    sub set {
        my ($self, $key, $value) = @_;
        $self->{cache}{$key} = $value;
        return $self;
    }

    package Mojo::Cache::Null;

    sub get { undef }

    1;
    """
)
GROOVY = textwrap.dedent(
    """\
    package org.example

    import groovy.transform.CompileStatic

    @CompileStatic
    class Greeter implements Runnable {
        String name

        Greeter(String name) { this.name = name }

        def greet(who) {
            println "Hello ${who}"
        }

        void run() {
            [1, 2, 3].each { greet(it) }
        }
    }

    interface Shape { double area() }

    def helper(a, b) {
        return a + b
    }
    """
)
# Pester's style: a byte-order mark before the first `function`, Verb-Noun names, comment-based
# help whose example defines a function (a comment: no definition), a filter, a class, an enum
POWERSHELL = "\ufeff" + textwrap.dedent(
    """\
    function InModuleScope {
        <#
        .EXAMPLE
        function PrivateFunction { }
        #>
        param([string] $ModuleName)
        Invoke-InModule $ModuleName
    }

    filter Select-Passed { if ($_.Passed) { $_ } }

    class PesterRun : Base {
        [int] $Count
        [string] ToString() {
            return "run $($this.Count)"
        }
        [void] Add([int] $n) {
            $this.Count += $n
        }
        static [void] Reset() {
            [PesterRun]::Last = $null
        }
    }

    enum Result { Passed; Failed }

    function New-TestDrive {
        New-Item -ItemType Directory -Path $Path
    }
    """
)

# (language, path, text, {name: kind}, name of a container, name of a member inside it)
CASES = [
    ("javascript", "src/router.js", JS,
     {"createRouter": "function", "Router": "class", "constructor": "method", "handle": "method",
      "toPath": "function", "METHODS": "const", "Router.prototype.route": "method"}, "Router", "handle"),
    ("typescript", "src/handler.ts", TS,
     {"Handler": "interface", "Middleware": "type", "Method": "enum", "BaseHandler": "class", "log": "method",
      "Internal": "namespace", "helper": "function"}, "BaseHandler", "log"),
    ("tsx", "src/button.tsx", TSX, {"Button": "function", "Panel": "function"}, None, None),
    ("go", "server/server.go", GO,
     {"MaxConns": "const", "Server": "struct", "Handler": "interface", "ListenAndServe": "method",
      "New": "function"}, None, None),
    ("rust", "src/url.rs", RUST,
     {"Url": "struct", "parse": "method", "host": "method", "fmt::Display for Url": "impl",
      "Resolve": "trait", "Error": "enum", "DEFAULT_PORT": "const", "fmt": "method"}, "Url", "host"),
    ("java", "src/HttpClient.java", JAVA,
     {"HttpClient": "class", "close": "method", "send": "method", "Request": "interface", "Status": "enum"},
     "HttpClient", "send"),
    ("c", "src/buffer.h", C,
     {"BUF_MAX": "const", "buffer_t": "type", "buffer": "struct", "buffer_new": "function",
      "buffer_free": "function"}, None, None),
    ("cpp", "src/queue.cpp", CPP,
     {"net": "namespace", "Queue": "class", "push": "method", "empty": "method", "Endpoint": "struct",
      "net::Queue<int>::empty": "function"}, "Queue", "push"),
    ("ruby", "lib/serializers.rb", RUBY,
     {"Serializers": "module", "JsonSerializer": "class", "initialize": "method", "call": "method",
      "serialize": "method", "helper": "function"}, "JsonSerializer", "serialize"),
    ("php", "src/Kernel.php", PHP,
     {"helper": "function", "Middleware": "interface", "Kernel": "class", "handle": "method",
      "VERSION": "const"}, "Kernel", "__construct"),
    ("csharp", "src/Order.cs", CSHARP,
     {"Shop.Orders": "namespace", "Order": "class", "Id": "property", "Total": "method",
      "IOrderRepository": "interface", "Status": "enum", "Money": "struct"}, "Order", "Total"),
    ("kotlin", "src/OrderBook.kt", KOTLIN,
     {"OrderBook": "class", "add": "method", "total": "method", "Factory": "object", "empty": "method",
      "Registry": "object", "lookup": "method", "Orders": "type", "launchAll": "function"},
     "OrderBook", "total"),
    ("scala", "src/Json.scala", SCALA,
     {"Json": "object", "isNull": "method", "fold": "method", "JBoolean": "class", "fromBoolean": "method",
      "Encoder": "trait", "apply": "method", "Result": "type"}, "Json", "fromBoolean"),
    ("swift", "Source/Session.swift", SWIFT,
     {"Session": "impl", "init": "method", "cancelAllRequests": "method", "request": "method",
      "RequestAdapter": "interface", "adapt": "method", "Timing": "struct", "Handler": "type",
      "makeSession": "function"}, "Session", "cancelAllRequests"),
    ("elixir", "lib/plug/conn.ex", ELIXIR,
     {"Plug.Conn": "module", "Conn": "module", "assign": "function", "halt": "function",
      "run_before_send": "function", "sigil": "macro", "Plug.Exception": "interface",
      "Exception": "interface", "status": "function"}, "Plug.Conn", "halt"),
    ("haskell", "src/XMonad/Core.hs", HASKELL,
     {"X": "type", "WindowSet": "type", "Window": "type", "runX": "function", "LayoutClass": "class",
      "description": "method", "Show": "impl", "show": "method", "whenJust": "function"}, "LayoutClass",
     "description"),
    ("lua", "lua/lazy/core/config.lua", LUA,
     {"M.setup": "function", "M:reload": "function", "normalize": "function", "M.find": "method"},
     None, None),
    ("zig", "src/Server.zig", ZIG,
     {"max_depth": "const", "Server": "struct", "init": "method", "deinit": "method", "Status": "enum",
      "parseHeader": "function", "parse header": "test"}, "Server", "deinit"),
    ("shell", "nvm.sh", SHELL, {"nvm_echo": "function", "nvm_err": "function", "nvm_has": "function"},
     None, None),
    ("objc", "Classes/Session.m", OBJC,
     {"Greeter": "interface", "greet": "method", "Session": "class", "resume": "method",
      "sharedSession": "method", "clamp": "function"}, "Session", "sharedSession"),
    ("objc", "AFNetworking/AFSecurityPolicy.h", OBJC_HEADER,
     {"AFSSLPinningMode": "enum", "AFSecurityPolicy": "class", "defaultPolicy": "method",
      "evaluateServerTrust": "method"},
     "AFSecurityPolicy", "evaluateServerTrust"),
    ("dart", "lib/shape.dart", DART,
     {"Shape": "class", "area": "method", "draw": "method", "unit": "method", "Loud": "class",
      "Twice": "impl", "twice": "method", "Color": "enum", "Callback": "type", "main": "function"},
     "Shape", "draw"),
    ("julia", "src/Geometry.jl", JULIA,
     {"Geometry": "module", "Shape": "type", "Circle": "struct", "Box": "struct", "area": "function",
      "twice": "macro", "LIMIT": "const"}, "Geometry", "twice"),
    ("ocaml", "lib/shape.ml", OCAML,
     {"shape": "type", "Invalid": "type", "area": "function", "fact": "function", "default_size": "variable",
      "Stack": "module", "push": "function", "pop": "function", "ORDERED": "interface"}, "Stack", "pop"),
    ("ocaml", "lib/angstrom.mli", OCAML_INTERFACE,
     {"t": "type", "peek_char": "function", "sep_by": "function", "identity": "function", "Unsafe": "module",
      "take": "function", "peek": "function"}, "Unsafe", "peek"),
    ("perl", "lib/Mojo/Cache.pm", PERL,
     {"Mojo::Cache": "module", "new": "function", "get": "function", "set": "function",
      "Mojo::Cache::Null": "module"}, None, None),
    ("groovy", "src/Greeter.groovy", GROOVY,
     {"Greeter": "class", "greet": "method", "run": "method", "Shape": "interface", "helper": "function"},
     "Greeter", "run"),
    ("powershell", "src/functions/InModuleScope.ps1", POWERSHELL,
     {"InModuleScope": "function", "Select-Passed": "function", "PesterRun": "class", "ToString": "method",
      "Reset": "method", "Result": "enum", "New-TestDrive": "function"}, "PesterRun", "Reset"),
]


def test_powershell_help_examples_are_no_definitions() -> None:
    # comment-based help is a comment: its `.EXAMPLE` function is an example, not this file's
    chunks = chunk_code("src/functions/InModuleScope.ps1", POWERSHELL, "powershell")
    assert chunks is not None
    names = {d.name for c in chunks for d in c.definitions}
    assert "PrivateFunction" not in names
    assert {"InModuleScope", "New-TestDrive"} <= names


def test_a_powershell_functions_scope_is_no_part_of_its_name() -> None:
    # `function global:Get-Greeting` (a profile's, a test's mock) defines Get-Greeting in the
    # global scope: it was named `global:Get-Greeting`, so the one-name question `Get-Greeting`
    # (pipeline.mark_defined_word: the whole name, where defined) never found it
    text = ("function global:Get-Greeting { 'hi' }\n\nfunction script:Set-Mood([string] $Mood) { $Mood }\n\n"
            "Function Private:Read-State { 1 }\n")
    chunks = chunk_code("profile.ps1", text, "powershell")
    assert chunks is not None
    assert [d.name for c in chunks for d in c.definitions] == ["Get-Greeting", "Set-Mood", "Read-State"]


MOJO_MODULE = (
    "package Mojo::Server::Morbo;\nuse Mojo::Base -base;\n\n"
    "has backend => sub {\n  my $backend = $ENV{MOJO_MORBO_BACKEND} || 'Poll';\n"
    "  return $backend;\n};\n"
    "has daemon => sub { Mojo::Server::Daemon->new };\nhas [qw(silent quiet)] => 1;\n"
    "has 'listen' => (is => 'ro');\n\n"
    "sub run {\n  my ($self, $app) = @_;\n  has_inside($self);\n"
    "  return $self->daemon->run($app);\n}\n\n"
    "1;\n\n__END__\n\n=encoding utf8\n\n=head1 NAME\n\nMojo::Server::Morbo - Tonight at 11...DOOM!\n\n"
    "=head1 DESCRIPTION\n\n"
    + "L<Mojo::Server::Morbo> is a full featured, self-restart capable web server.\n\n" * 30
    + "=head1 ATTRIBUTES\n\n=head2 backend\n\n  my $backend = $morbo->backend;\n\nBackend, usually a\n"
    "L<Mojo::Server::Morbo::Backend::Poll> object.\n\n=head2 daemon\n\n  my $daemon = $morbo->daemon;\n\n"
    "=head1 METHODS\n\n=head2 C<run>\n\n"
    + "  $morbo->run('script/my_app');\n\nRun server for application.\n\n" * 12
    + "=cut\n"
)


def test_perl_attributes_are_definitions_and_pod_titles_head_their_chunks() -> None:
    """Mojo::Base, Moose and Moo declare a module's accessors with `has name => ...`: they were no
    definitions, so `backend` found Morbo.pm by its words only. The POD after `__END__` (a module's
    documentation, `=head2 run` for each method) was cut into windows without headings."""
    chunks = chunk_code("lib/Mojo/Server/Morbo.pm", MOJO_MODULE, "perl")
    assert chunks is not None
    found = [(d.name, d.kind) for c in chunks for d in c.definitions]
    assert found == [("Mojo::Server::Morbo", "module"), ("backend", "property"), ("daemon", "property"),
                     ("silent", "property"), ("quiet", "property"), ("listen", "property"),
                     ("run", "function")]
    lines = MOJO_MODULE.split("\n")
    headings = {c.heading for c in chunks if lines[c.start_line - 1].startswith("=")}
    assert {"NAME", "DESCRIPTION", "METHODS > run"} <= headings, headings
    code = [c for c in chunks if c.definitions]
    assert all(not c.heading for c in code), [c.heading for c in code]  # code takes no section's title
    run_doc = [c for c in chunks if "$morbo->run(" in c.text]
    assert run_doc and all(c.heading == "METHODS > run" for c in run_doc), [c.heading for c in run_doc]
    attributes = next(c for c in chunks if c.text.startswith("=head1 ATTRIBUTES"))
    assert "run" not in attributes.heading  # not glued to the big section after it


def test_a_pod_title_of_a_long_line_is_read_in_linear_time() -> None:
    """A POD title's pattern ended `(\\S.*?)\\s*$` and its formatting codes `<+\\s*([^<>]*?)\\s*>+`:
    lazy runs around optional spaces, backtracking at every character of a line of spaces (a
    generated table, a pasted log): 3.3 s for a `=head1` line of 20k characters (the longest
    parsed), and the codes' pattern no answer in 300 s for `C<` and 20k spaces: a file's update
    held. The bound is loose for a shared machine."""
    pad = " " * (MAX_PARSE_LINE - 100)  # a longer line is not parsed (the fallback reads it)
    text = ("package Pad;\n\nsub run { 1 }\n\n1;\n\n__END__\n\n"
            + f"=head1 NAME{pad}x\n\ntext\n\n=head2 NAME{pad}y\n\n=head1 C<{pad}b\n\n=cut\n")
    began = time.perf_counter()
    chunks = chunk_code("lib/Pad.pm", text, "perl")
    took = time.perf_counter() - began
    assert chunks is not None and took < 1.0, f"{took:.2f} s"
    assert any((c.heading or "").startswith("NAME") and (c.heading or "").endswith("x") for c in chunks)


def test_every_supported_language_has_a_case_and_a_grammar() -> None:
    assert {case[0] for case in CASES} | {"python"} == set(SUPPORTED_LANGUAGES)
    assert available_languages() == sorted(SUPPORTED_LANGUAGES), "a grammar package is missing"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_language_definitions_and_small_chunks(case) -> None:
    language, path, text, expected, _container, _member = case
    chunks = chunk_code(path, text, language)
    assert chunks is not None, "tree-sitter path not taken"
    assert_valid(text, chunks)
    def last_part(name: str) -> str:  # what the line of a qualified name shows
        return name.split("::")[-1].split(" for ")[-1].split(".")[-1]

    assert_defines(text, chunks, expected, last_part)
    assert any(c.signature for c in chunks)
    assert chunk_text(path, text, language) == chunks


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_language_boundaries_at_symbols_with_tiny_caps(case) -> None:
    language, path, text, _expected, container, member = case
    chunks = chunk_code(path, text, language, max_lines=6, max_chars=400, overlap=1)
    assert chunks is not None
    assert_valid(text, chunks)
    assert len(chunks) >= 2
    assert all(c.end_line - c.start_line + 1 <= 6 for c in chunks)
    if container:
        chunk = chunk_of(chunks, member)
        assert container in chunk.heading, (chunk.heading, container)


def test_go_method_and_doc_comment_in_one_chunk() -> None:
    chunks = chunk_code("server.go", GO, "go", max_lines=6)
    chunk = chunk_of(chunks, "ListenAndServe")
    assert chunk.text.startswith("// ListenAndServe starts the server.")
    assert chunk.signature.split("\n")[0] == "func (s *Server) ListenAndServe() error"
    assert "type Server struct" in chunk_of(chunks, "Server").signature


def test_rust_attributes_and_doc_comments_stay_with_the_item() -> None:
    chunks = chunk_code("url.rs", RUST, "rust", max_lines=8)
    chunk = chunk_of(chunks, "Url")
    assert chunk.text.split("\n")[0] in ("/// A parsed URL.", "use std::fmt;")
    assert "#[derive(Debug, Clone)]" in chunk.text
    impl = chunk_of(chunks, "fmt")
    assert "impl fmt::Display for Url" in (impl.heading + impl.signature)


def test_java_annotations_belong_to_the_method() -> None:
    chunks = chunk_code("HttpClient.java", JAVA, "java", max_lines=5)
    chunk = chunk_of(chunks, "close")
    assert chunk.text.strip().startswith("@Override")
    assert chunk.heading == "class HttpClient"
    assert "public void close()" in chunk.signature


def test_small_pieces_are_merged_until_the_cap() -> None:
    functions = "\n\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(30))
    text = "import os\nimport sys\n\nLIMIT = 3\n\n\n" + functions + "\n"
    chunks = chunk_text("many.py", text, "python", max_lines=40)
    assert_valid(text, chunks)
    assert 2 <= len(chunks) <= 4
    assert all(c.end_line - c.start_line + 1 <= 40 for c in chunks)
    assert all(len(c.definitions) >= 5 for c in chunks)
    assert sum(len(c.definitions) for c in chunks) == 31


def test_broken_syntax_still_chunks() -> None:
    text = "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass K:\n    x = (\n"
    chunks = chunk_text("broken.py", text, "python")
    assert_valid(text, chunks)
    assert "ok" in defs_by_name(chunks)


def test_garbage_in_a_code_language_falls_back() -> None:
    text = "\n".join("}{ ]] <<<>>> ;;; @@@ ~~~ }" for _ in range(50))
    chunks = chunk_text("garbage.rs", text, "rust")
    assert_valid(text, chunks)


def test_c_header_with_cpp_content() -> None:
    text = "#pragma once\nclass Widget {\n public:\n  Widget();\n  int size() const;\n};\n" * 3
    chunks = chunk_text("widget.h", text, "c")
    assert_valid(text, chunks)


def test_cpp_forward_declarations_are_not_definitions() -> None:
    """`class basic_json;` in a `*_fwd.hpp` names what another file defines: counted as a
    definition, the forward header outranked the class's own file for questions about it."""
    text = (
        "namespace nlohmann {\n"
        "template<typename T = void>\nstruct adl_serializer;\n\n"
        "template<template<typename U> class ObjectType = std::map>\nclass basic_json;\n\n"
        "class json_pointer;\n"
        "class Real { public: int x; };\n"
        "}\n"
    )
    chunks = chunk_text("include/json_fwd.hpp", text, "cpp")
    assert_valid(text, chunks)
    names = defs_by_name(chunks)
    assert "Real" in names and "nlohmann" in names
    assert not {"basic_json", "json_pointer", "adl_serializer"} & set(names)


def test_crlf_line_endings() -> None:
    text = PY_SMALL.replace("\n", "\r\n")
    chunks = chunk_text("crlf.py", text, "python", max_lines=10)
    assert_valid(text, chunks)
    assert all("\r" not in c.text for c in chunks)
    assert defs_by_name(chunks)["parse_cookie"][1] == line_of(PY_SMALL, "def parse_cookie")


# ---------------------------------------------------------------------------------------------
# bad input never raises

BAD_INPUTS = {
    "empty": "",
    "whitespace": "   \n\t\n  \n",
    "nul": "def f():\n    return '\x00'\n\x00\x00\nclass A:\n    pass\n",
    "surrogates": "def f():\n    return '\udcff\ud800'\n# \udc80 comment\n",
    "one_mb_line": "x = '" + "a" * 1_000_000 + "'\n",
    "crlf": "def a():\r\n    pass\r\n\r\nclass B:\r\n    def c(self):\r\n        pass\r\n",
    "cr_only": "def a():\r    pass\r\rdef b():\r    pass\r",
    "binaryish": "".join(chr(i) for i in range(1, 300)) * 20,
    "no_final_newline": "def a():\n    pass",
    "deep_nesting": "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "only_comments": "# a\n# b\n",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
@pytest.mark.parametrize(
    "path,language",
    [("f.py", "python"), ("f.js", "javascript"), ("f.go", "go"), ("f.md", "markdown"), ("f.kt", "kotlin"),
     ("f.rst", "rst"), ("f.txt", "text"), ("f.bin", None), ("f.yaml", "yaml")],
)
def test_bad_input_never_raises(name: str, path: str, language: str | None) -> None:
    text = BAD_INPUTS[name]
    chunks = chunk_text(path, text, language)
    if not text.strip():
        assert chunks == []
        return
    assert chunks
    assert_valid(text, chunks)
    for chunk in chunks:
        assert len(chunk.text) <= 2400 or chunk.end_line - chunk.start_line + 1 > 1
        chunk.content_hash  # hashable even with surrogates  # noqa: B018


def test_one_mb_line_is_cut_by_characters() -> None:
    text = "x = '" + "a" * 1_000_000 + "'\n"
    chunks = chunk_text("big.py", text, "python", max_chars=2400)
    assert len(chunks) >= 400
    assert all(c.start_line == c.end_line == 1 and len(c.text) <= 2400 for c in chunks)
    assert "".join(c.text for c in chunks) == text.rstrip("\n")


def test_bytes_input_is_decoded() -> None:
    chunks = chunk_text("b.py", PY_SMALL.encode(), "python")  # type: ignore[arg-type]
    assert_valid(PY_SMALL, chunks)


def test_language_guessed_from_path_when_none() -> None:
    chunks = chunk_text("src/url.rs", RUST, None, max_lines=8)
    found = {(d.name, d.kind, d.line) for c in chunks for d in c.definitions}
    assert ("Url", "struct", line_of(RUST, "pub struct Url")) in found
    assert ("Url", "impl", line_of(RUST, "impl Url")) in found


def test_real_files_from_the_installed_packages(tmp_path: Path) -> None:
    """Chunk real source files from disk (the chunker's own package and pytest) with invariants."""
    import _pytest

    import qmd_daemon

    roots = [Path(qmd_daemon.__file__).parent, Path(_pytest.__file__).parent]
    files = [p for root in roots for p in sorted(root.rglob("*.py"))][:80]
    assert files
    copy = tmp_path / "copy.py"
    for file in files:
        text = file.read_text(encoding="utf-8", errors="surrogateescape")
        copy.write_text(text, encoding="utf-8", errors="surrogateescape")
        chunks = chunk_text(str(copy), copy.read_text(encoding="utf-8", errors="surrogateescape"), "python")
        assert_valid(text, chunks)
        assert all(c.end_line - c.start_line + 1 <= 70 and len(c.text) <= 2400 for c in chunks), file


def test_chunker_version_follows_the_grammar_list() -> None:
    """Without the Kotlin grammar (a real interpreter where the wheel cannot be imported) .kt files
    are chunked by the fallback, so the version differs and the next update re-chunks them."""
    script = (
        "import json, sys\n"
        "sys.modules['tree_sitter_kotlin'] = None  # as if the wheel were not installed\n"
        "from qmd_daemon.ingest.chunking import CHUNKER_VERSION, chunk_text\n"
        "chunks = chunk_text('src/OrderBook.kt', sys.stdin.read())\n"
        "print(json.dumps([CHUNKER_VERSION, [d.kind for c in chunks for d in c.definitions]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], input=KOTLIN, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    version_without, kinds_without = json.loads(out.stdout)
    kinds_with = [d.kind for c in chunk_text("src/OrderBook.kt", KOTLIN) for d in c.definitions]
    assert version_without != CHUNKER_VERSION
    assert "object" in kinds_with and "object" not in kinds_without  # the fallback knows no objects


def test_every_grammar_loads_without_a_deprecation_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    # tree-sitter-perl hands its language as an int, which tree-sitter deprecates: every test run
    # (and every daemon that parsed Perl) printed the warning
    import threading
    import warnings

    from qmd_daemon.ingest import chunk_code

    monkeypatch.setattr(chunk_code, "_LANGUAGE_CACHE", {})
    loaded: dict[str, bool] = {}

    def load() -> None:  # a thread of its own: parsers are cached per thread
        for language in chunk_code._GRAMMARS:
            loaded[language] = chunk_code._parser(language) is not None

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=load)
        thread.start()
        thread.join()
    assert [str(w.message) for w in caught] == []
    assert loaded and all(loaded.values()), loaded
