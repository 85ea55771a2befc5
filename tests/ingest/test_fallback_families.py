"""The regex fallback on language families without a grammar here: definitions named, chunk
boundaries at definitions. Snippets written for these tests in each language's usual style."""

from __future__ import annotations

import textwrap

import pytest

from qmd_daemon.ingest.chunk_fallback import chunk_fallback
from qmd_daemon.ingest.chunking import chunk_text
from tests.ingest.test_chunking import assert_defines, assert_valid


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# (language, path, text, {name: kind} expected among the definitions)
FAMILIES = [
    ("fsharp", "src/Parser.fs", _src("""
        module Shop.Parser

        open System

        type Token =
            | Number of int
            | Word of string

        let tokenize (input: string) =
            input.Split(' ')
            |> Array.map (fun w -> Word w)

        let rec eval tokens =
            match tokens with
            | [] -> 0
            | _ :: rest -> 1 + eval rest

        type Counter() =
            let mutable n = 0
            member this.Incr() = n <- n + 1
            member _.Value = n
        """),
     {"Shop.Parser": "module", "Token": "type", "tokenize": "function", "eval": "function",
      "Counter": "type", "Incr": "method"}),
    ("sml", "src/stack.sml", _src("""
        structure Stack =
        struct
          exception Empty
          val empty = []
          fun push (x, s) = x :: s
        end

        fun fact 0 = 1
          | fact n = n * fact (n - 1)
        """),
     {"Empty": "type", "empty": "function", "push": "function", "fact": "function"}),
    ("elm", "src/Main.elm", _src("""
        module Main exposing (main, update)

        type alias Model =
            { count : Int }

        type Msg
            = Increment
            | Decrement

        update : Msg -> Model -> Model
        update msg model =
            case msg of
                Increment ->
                    { model | count = model.count + 1 }

                Decrement ->
                    { model | count = model.count - 1 }
        """),
     {"Main": "module", "Model": "type", "Msg": "type", "update": "function"}),
    ("clojure", "src/ring/util/response.clj", _src("""
        (ns ring.util.response
          (:require [clojure.string :as str]))

        (def default-status 200)

        (defn response
          "Returns a skeletal Ring response with the given body."
          [body]
          {:status default-status :headers {} :body body})

        (defn- header-name [k]
          (str/lower-case (name k)))

        (defmacro with-header [resp & body]
          `(assoc ~resp :extra (do ~@body)))

        (defrecord Cookie [name value])

        (defprotocol Renderable
          (render [this]))
        """),
     {"ring.util.response": "module", "default-status": "variable", "response": "function",
      "header-name": "function", "with-header": "macro", "Cookie": "class", "Renderable": "class"}),
    ("commonlisp", "src/queue.lisp", _src("""
        (in-package :queue)

        (defparameter *max-size* 100)

        (defstruct queue items)

        (defun enqueue (q x)
          (push x (queue-items q)))

        (defgeneric size (q))

        (defmethod size ((q queue))
          (length (queue-items q)))
        """),
     {":queue": "module", "*max-size*": "variable", "queue": "class", "enqueue": "function",
      "size": "function"}),
    ("scheme", "lib/list.scm", _src("""
        (define (fold f acc xs)
          (if (null? xs)
              acc
              (fold f (f acc (car xs)) (cdr xs))))

        (define-syntax swap!
          (syntax-rules ()
            ((_ a b) (let ((tmp a)) (set! a b) (set! b tmp)))))

        (define-record-type point (make-point x y) point? (x point-x))
        """),
     {"fold": "function", "swap!": "macro", "point": "class"}),
    ("emacslisp", "lisp/my-mode.el", _src("""
        (defvar my-mode-hook nil
          "Hook run after entering my-mode.")

        (defcustom my-mode-indent 2
          "Indentation step.")

        (defun my-mode-indent-line ()
          "Indent the current line."
          (interactive)
          (indent-line-to my-mode-indent))
        """),
     {"my-mode-hook": "variable", "my-mode-indent": "function", "my-mode-indent-line": "function"}),
    ("erlang", "src/kv_store.erl", _src("""
        -module(kv_store).
        -behaviour(gen_server).
        -export([start_link/0, get/1]).

        -record(state, {table}).
        -define(TIMEOUT, 5000).

        start_link() ->
            gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

        get(Key) ->
            gen_server:call(?MODULE, {get, Key}, ?TIMEOUT).

        handle_call({get, Key}, _From, State) ->
            {reply, lookup(Key, State), State};
        handle_call(stop, _From, State) ->
            {stop, normal, ok, State}.

        lookup(Key, #state{table = T}) ->
            case ets:lookup(T, Key) of
                [{_, V}] -> {ok, V};
                [] -> not_found
            end.
        """),
     {"kv_store": "module", "state": "struct", "TIMEOUT": "macro", "start_link": "function",
      "get": "function", "handle_call": "function", "lookup": "function"}),
    ("objc", "Classes/Cache.m", _src("""
        #import "Cache.h"

        @implementation Cache

        - (instancetype)initWithCapacity:(NSUInteger)capacity {
            self = [super init];
            _capacity = capacity;
            return self;
        }

        + (instancetype)sharedCache {
            static Cache *shared;
            return shared;
        }

        @end
        """),
     {"Cache": "class", "initWithCapacity": "method", "sharedCache": "method"}),
    ("vb", "src/Invoice.vb", _src("""
        Namespace Billing
            Public Class Invoice
                Private _total As Decimal

                Public Sub New(total As Decimal)
                    _total = total
                End Sub

                Public Function Tax(rate As Decimal) As Decimal
                    Return _total * rate
                End Function

                Public ReadOnly Property Total As Decimal
                    Get
                        Return _total
                    End Get
                End Property
            End Class
        End Namespace
        """),
     {"Billing": "class", "Invoice": "class", "New": "function", "Tax": "function", "Total": "function"}),
    ("fortran", "src/solver.f90", _src("""
        module solver
          implicit none
          type :: grid
            real, allocatable :: u(:)
          end type grid
        contains
          pure function norm2(v) result(r)
            real, intent(in) :: v(:)
            real :: r
            r = sqrt(sum(v**2))
          end function norm2

          subroutine relax(g, steps)
            type(grid), intent(inout) :: g
            integer, intent(in) :: steps
            g%u = 0.5 * g%u
          end subroutine relax
        end module solver

        program main
          use solver
          call relax(g, 10)
        end program main
        """),
     {"solver": "module", "grid": "type", "norm2": "function", "relax": "function", "main": "module"}),
    ("clojure", "src/ring/core/protocols.clj", _src("""
        (ns ring.core.protocols)

        (defprotocol ^{:added "1.6"} StreamableResponseBody
          (write-body-to-stream [body response output-stream]))

        (def ^:private re-charset #"charset=([^;]+)")

        (defn- ^String response-charset [response]
          (get-charset response))

        (deftest ^:integration write-body-test
          (is (= 1 1)))
        """),
     {"StreamableResponseBody": "class", "re-charset": "variable", "response-charset": "function",
      "write-body-test": "test"}),
    ("fortran", "src/fpm_targets.f90", _src("""
        module fpm_targets
          implicit none

          type build_target_t
            character(:), allocatable :: output_file
          end type build_target_t

          interface add_target
            module procedure add_new_target
          end interface add_target
        contains
          subroutine add_new_target(targets, name)
            type(build_target_t), intent(inout) :: targets(:)
            character(*), intent(in) :: name
            select type (targets)
            type is (build_target_t)
              continue
            end select
          end subroutine add_new_target
        end module fpm_targets
        """),
     {"fpm_targets": "module", "build_target_t": "type", "add_target": "interface",
      "add_new_target": "function"}),
    ("vue", "src/components/ThemePicker/index.vue", _src("""
        <template>
          <el-color-picker v-model="theme" @change="updateTheme" />
        </template>

        <script>
        export default {
          data() {
            return { chalk: '', theme: '' }
          },
          computed: {
            defaultTheme() {
              return this.$store.state.settings.theme
            }
          },
          mounted() {
            this.theme = this.defaultTheme
          },
          methods: {
            updateStyle(style, oldCluster, newCluster) {
              let newStyle = style
              if (newStyle) {
                newStyle = newStyle.trim()
              }
              return newStyle
            },
            async getThemeCluster(theme) {
              const clusters = [theme]
              return clusters
            }
          }
        }
        </script>

        <style>
        .theme-picker .el-color-picker__trigger {
          height: 26px !important;
        }
        </style>
        """),
     {"template": "section", "script": "section", "style": "section", "data": "function",
      "defaultTheme": "function", "mounted": "function", "updateStyle": "function",
      "getThemeCluster": "function"}),
    # TypeScript in a component: method shorthand with a return type, an option's `function`
    # value, a quoted watcher key, an arrow with a return type
    ("vue", "src/views/Detail.vue", _src("""
        <script lang="ts">
        import { defineComponent } from 'vue'
        export default defineComponent({
          watch: {
            '$route'(to) {
              this.load(to.params.id)
            }
          },
          methods: {
            async load(id: number): Promise<void> {
              this.item = await fetchItem(id)
            },
            format: function (value) {
              return String(value)
            }
          }
        })
        const toLabel = (item: Item): string => {
          return item.name
        }
        </script>
        """),
     {"script": "section", "watch": "key", "$route": "function", "methods": "key", "load": "function",
      "format": "function", "toLabel": "function"}),
    ("svelte", "src/lib/Counter.svelte", _src("""
        <script lang="ts">
          export let start = 0;
          let count = start;

          const increment = (by: number) => {
            count += by;
          };

          function reset() {
            count = start;
          }
        </script>

        <button on:click={() => increment(1)}>{count}</button>
        <button on:click={reset}>reset</button>

        <style>
          button { padding: 4px; }
        </style>
        """),
     {"script": "section", "start": "property", "increment": "function", "reset": "function",
      "style": "section"}),
    ("tcl", "lib/cache.tcl", _src("""
        namespace eval ::cache {
            variable store
        }

        proc ::cache::get {key} {
            variable store
            return [dict get $store $key]
        }

        oo::class create Counter {
            method incr {} { incr n }
        }
        """),
     {"::cache": "module", "::cache::get": "function", "Counter": "class"}),
    ("solidity", "contracts/Token.sol", _src("""
        pragma solidity ^0.8.20;

        contract Token {
            mapping(address => uint256) public balances;

            event Transfer(address indexed from, address indexed to, uint256 value);
            error Insufficient(uint256 have, uint256 want);

            modifier onlyOwner() {
                require(msg.sender == owner, "not owner");
                _;
            }

            function transfer(address to, uint256 amount) external returns (bool) {
                balances[msg.sender] -= amount;
                balances[to] += amount;
                return true;
            }
        }
        """),
     {"Token": "class", "Transfer": "type", "Insufficient": "type", "onlyOwner": "function",
      "transfer": "function"}),
    ("verilog", "rtl/counter.sv", _src("""
        module counter #(parameter WIDTH = 8) (
            input  logic clk,
            output logic [WIDTH-1:0] q
        );
          always_ff @(posedge clk) q <= q + 1;
        endmodule

        function automatic logic [7:0] crc8(input logic [7:0] data);
          return data ^ 8'h07;
        endfunction

        task reset_all;
          $display("reset");
        endtask
        """),
     {"counter": "module", "crc8": "function", "reset_all": "function"}),
    # GDScript (a Godot add-on's subsystem): the script's global class, signals, an annotated and
    # a static function, an inner class, an enum
    ("gdscript", "addons/dialogic/Modules/Save/subsystem_save.gd", _src("""
        class_name DialogicSaveSubsystem
        extends DialogicSubsystem
        ## Saves and loads game states.

        signal saved(info: Dictionary)

        enum AutoSaveMode {ON_TIMELINE_JUMPS, ON_TIMER}

        const SAVE_SLOTS_DIR := "user://dialogic/saves/"

        func save(slot_name := "", is_autosave := false) -> Error:
        \tsaved.emit({"slot_name": slot_name})
        \treturn OK

        @rpc("any_peer")
        func sync_slot(slot_name: String) -> void:
        \tpass

        static func get_slot_path(slot_name: String) -> String:
        \treturn SAVE_SLOTS_DIR.path_join(slot_name)

        class SlotInfo:
        \tvar name := ""
        """),
     {"DialogicSaveSubsystem": "class", "saved": "signal", "AutoSaveMode": "enum", "save": "function",
      "sync_slot": "function", "get_slot_path": "function", "SlotInfo": "class"}),
    # Gleam (its standard library's style): an opaque type, a custom type, a constant, a public and
    # a private function, an external function without a body
    ("gleam", "src/gleam/dynamic/decode.gleam", _src("""
        import gleam/dict.{type Dict}

        pub type DecodeError {
          DecodeError(expected: String, found: String, path: List(String))
        }

        pub opaque type Decoder(t) {
          Decoder(function: fn(Dynamic) -> #(t, List(DecodeError)))
        }

        pub const int: Decoder(Int) = Decoder(decode_int)

        pub fn at(path: List(segment), inner: Decoder(a)) -> Decoder(a) {
          Decoder(function: fn(data) { index(path, inner, data) })
        }

        fn decode_int(data: Dynamic) -> #(Int, List(DecodeError)) {
          #(0, [])
        }

        @external(erlang, "gleam_stdlib", "index")
        fn bare_index(data: Dynamic, key: anything) -> Result(Dynamic, String)
        """),
     {"DecodeError": "type", "Decoder": "type", "int": "const", "at": "function", "decode_int": "function",
      "bare_index": "function"}),
    # Crystal (Lucky's style): a namespaced module, a macro, a class method named without `self.`,
    # a predicate, an operator, a struct, an alias
    ("crystal", "src/lucky/cookies/cookie_jar.cr", _src("""
        class Lucky::CookieJar
          alias Key = String | Symbol

          macro included
            before protect
          end

          def self.empty_jar : Lucky::CookieJar
            new
          end

          private def valid_csrf_token? : Bool
            true
          end

          def []=(key : Key, value : String) : HTTP::Cookie
            set(key, value)
          end

          struct Entry
            getter name : String
          end
        end
        """),
     {"Lucky::CookieJar": "class", "Key": "type", "included": "macro", "empty_jar": "function",
      "valid_csrf_token?": "function", "[]=": "function", "Entry": "class"}),
    ("d", "source/app.d", _src("""
        module app;

        import std.stdio;

        struct Point { int x, y; }

        int manhattan(Point a, Point b)
        {
            return abs(a.x - b.x) + abs(a.y - b.y);
        }

        void main(string[] args)
        {
            writeln(manhattan(Point(0, 0), Point(1, 2)));
        }
        """),
     {"app": "module", "Point": "class", "manhattan": "function", "main": "function"}),
    ("matlab", "src/Account.m", _src("""
        % ACCOUNT  a bank account
        classdef Account < handle
            properties
                Balance = 0
            end
            methods
                function obj = Account(initial)
                    obj.Balance = initial;
                end
                function [ok, left] = withdraw(obj, amount)
                    ok = amount <= obj.Balance;
                    left = obj.Balance - amount;
                end
            end
        end
        """),
     {"Account": "class", "withdraw": "function"}),
    ("matlab", "src/cleanplot.m", _src("""
        function cleanplot(varargin)
        % CLEANPLOT  remove points outside the axes
            h = gca;
            pruneOutside(h);
        end

        function mask = isInBox(data, xLim)
            mask = data(:,1) > xLim(1) & data(:,1) < xLim(2);
        end

        function [m2t, str] = drawLine(m2t, h)
            str = sprintf('%d', h);
        end
        """),
     {"cleanplot": "function", "isInBox": "function", "drawLine": "function"}),
    ("r", "R/summarise.R", _src("""
        #' Summarise each group down to one row
        #' @export
        summarise <- function(.data, ...) {
          UseMethod("summarise")
        }

        summarise.data.frame <- function(.data, ..., .by = NULL) {
          cols <- summarise_cols(.data, dplyr_quosures(...))
          out
        }

        `%||%` <- function(x, y) if (is.null(x)) y else x

        Counter <- R6::R6Class("Counter", public = list(n = 0))

        setClass("Person", representation(name = "character"))
        setGeneric("greet", function(obj) standardGeneric("greet"))
        """),
     {"summarise": "function", "summarise.data.frame": "function", "%||%": "function",
      "Counter": "class", "Person": "class", "greet": "function"}),
    # chronos's style: a `type` section's exported types, every routine keyword, a backticked operator
    ("nim", "chronos/ratelimit.nim", _src("""
        import std/[deques, options]

        type
          ReplenishMode* = enum
            Continuous
            Discrete

          TokenBucket* = ref object
            budget: int
            capacity: int

          AsyncQueue*[T] = ref object of RootRef
            queue: Deque[T]

        proc newTokenBucket*(capacity: int): TokenBucket =
          TokenBucket(budget: capacity, capacity: capacity)

        func isFull*(bucket: TokenBucket): bool =
          bucket.budget == bucket.capacity

        iterator items*[T](aq: AsyncQueue[T]): T =
          for item in aq.queue.items():
            yield item

        template checkBudget(bucket: TokenBucket) =
          doAssert bucket.budget >= 0

        proc `==`*(a, b: TokenBucket): bool =
          a.budget == b.budget
        """),
     {"ReplenishMode": "type", "TokenBucket": "type", "AsyncQueue": "type", "newTokenBucket": "function",
      "isFull": "function", "items": "function", "checkBudget": "macro", "==": "function"}),
    # Groovy where its grammar gives up: typed methods, a generic one, a constructor, a `def`; a
    # command call (`println format(x)`) and a control statement are no definitions
    ("groovy", "src/org/example/PipelineHelper.groovy", _src("""
        class PipelineHelper implements Serializable {

            private transient Map<String, Closure> allowed = [:]

            PipelineHelper() {
                allowed = [:]
            }

            void registerAllowedMethod(String name, List<Class> args = [], Closure closure) {
                allowed[name] = closure
                println format(name)
            }

            static <T> List<T> mergeAll(List<T> first,
                                        List<T> second) {
                return first + second
            }

            def callIfAllowed(String name, Object[] args) {
                if (allowed.containsKey(name)) {
                    return allowed[name]?.call(*args)
                }
            }
        }
        """),
     {"PipelineHelper": "function", "registerAllowedMethod": "function", "mergeAll": "function",
      "callIfAllowed": "function"}),
]


@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_family_definitions_are_found(case) -> None:
    language, path, text, expected = case
    chunks = chunk_fallback(path, text, language)
    assert_valid(text, chunks)
    assert_defines(text, chunks, expected, lambda name: name.strip("'")[-3:])


@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_family_chunks_start_at_definitions(case) -> None:
    language, path, text, _expected = case
    lines = text.split("\n")
    chunks = chunk_fallback(path, text, language, max_lines=8, max_chars=400, overlap=1)
    assert_valid(text, chunks)
    assert sum(1 for c in chunks if c.definitions) >= 2, "chunks anchored at definitions"
    # a chunk that holds a definition starts at its first one, or at the comments or blank lines
    # just above it (a window cut from a long definition holds none and may start anywhere)
    for chunk in chunks[1:]:
        if not chunk.definitions:
            continue
        first = min(d.line for d in chunk.definitions)
        gap = lines[chunk.start_line - 1 : first - 1]
        assert all(not g.strip() or g.lstrip()[:1] in "/(;#%*@-\"" for g in gap), (
            chunk.start_line, first, [(c.start_line, c.end_line) for c in chunks])


def test_erlang_clauses_of_one_function_are_one_definition() -> None:
    _lang, path, text, _expected = next(c for c in FAMILIES if c[0] == "erlang")
    names = [d.name for c in chunk_fallback(path, text, "erlang") for d in c.definitions]
    assert names.count("handle_call") == 1


def test_ml_local_lets_are_not_definitions() -> None:
    text = _src("""
        let area w h =
          let half = w / 2 in
          half * h
        """)
    names = [d.name for c in chunk_fallback("a.ml", text, "ocaml") for d in c.definitions]
    assert names == ["area"]


@pytest.mark.parametrize(
    ("language", "path", "text", "expected"),
    [
        ("fortran", "heat.f90", _src("""
            subroutine step(u, n)
              integer, intent(in) :: n
              real(8), intent(inout) :: u(n)
              integer :: i
              logical :: done
              do i = 2, n - 1
                u(i) = 0.5d0 * u(i)
              end do
            end subroutine step
            """), ["step"]),
        ("r", "R/mutate.R", _src("""
            mutate_col <- function(dots, data) {
              tryCatch(
                chunks <- eval(dots),
                error = function(e) abort(e),
                warning = function(w) warn(w)
              )
            }
            """), ["mutate_col"]),
        ("matlab", "getColor.m", _src("""
            function [m2t, xcolor] = getColor(m2t, handle, color)
                xcolor = rgb2name(color);
            end
            """), ["getColor"]),
        ("verilog", "uart_tx.v", _src("""
            module uart_tx (
                input  wire clk,
                input  wire [7:0] data,
                output reg  tx
            );
            endmodule

            interface bus_if;
            endinterface
            """), ["uart_tx", "bus_if"]),
        ("solidity", "contracts/utils/MerkleProof.sol", _src("""
            library MerkleProof {
                function processProof(
                    bytes32[] memory proof,
                    bytes32 leaf,
                    function(bytes32, bytes32) view returns (bytes32) hasher
                ) internal view returns (bytes32) {
                    return leaf;
                }
            }
            """), ["MerkleProof", "processProof"]),
        ("fsharp", "src/Giraffe/Core.fs", _src("""
            module Core =
                let compose (handler1: HttpHandler) (handler2: HttpHandler) : HttpHandler =
                    fun (final: HttpFunc) ->
                        let func = final |> handler2 |> handler1
                        func

            type HttpContextExtensions() =
                static member BindJsonAsync<'T>(ctx: HttpContext) =
                    let serializer = ctx.GetJsonSerializer()
                    serializer.DeserializeAsync<'T> ctx.Request.Body
            """), ["Core", "compose", "HttpContextExtensions", "BindJsonAsync"]),
        ("vue", "src/views/Table.vue", _src("""
            <script>
            export default {
              methods: {
                filter(rows) {
                  for (const row of rows) {
                    if (row.hidden) {
                      continue
                    }
                  }
                }
              }
            }
            </script>
            """), ["script", "methods", "filter"]),
        ("vue", "src/components/Sized.vue", _src("""
            <script>
            export default {
              props: {
                size: {
                  type: Number,
                  default: function () {
                    return 1
                  }
                }
              },
              watch: {
                size: {
                  handler: function (value) {
                    this.resize(value)
                  }
                }
              }
            }
            </script>
            """), ["script", "props", "watch"]),
    ],
    ids=["fortran", "r", "matlab", "verilog", "solidity", "fsharp", "vue", "vue-option-keys"],
)
def test_declarations_are_not_definitions(language: str, path: str, text: str, expected: list[str]) -> None:
    """`integer :: i` (Fortran) and `input wire clk` (Verilog) declare variables and ports; the
    generic patterns read them as a Haskell signature and a GraphQL `input` type. R's
    `error = function(e)` is a handler passed to tryCatch, and MATLAB's `function [m2t, xcolor] =
    getColor(...)` defines getColor, not its outputs. A Solidity parameter of function type
    (`function(bytes32, bytes32) view returns (bytes32) hasher`) was a function `view`; F#'s
    `let`s inside a function or a member are locals (no `in` ends them, as OCaml's); in a Vue
    component's methods, `for (...) {` and `if (...) {` are no method shorthand, nor a prop's
    `default: function` or a watcher's `handler: function` a method."""
    names = [d.name for c in chunk_fallback(path, text, language) for d in c.definitions]
    assert names == expected


def test_fsharp_double_backtick_tests_are_definitions_and_their_lets_locals() -> None:
    """xUnit tests in F# are named in double backticks; they were no definitions, so each test's
    `let ctx`/`let expected` were read as top-level functions."""
    text = _src("""
        module Giraffe.Tests.RoutingTests

        [<Fact>]
        let ``route: GET "/" returns "Hello World"`` () =
            let ctx = Substitute.For<HttpContext>()
            let expected = "Hello World"
            ctx |> ignore
        """)
    names = [d.name for c in chunk_fallback("tests/RoutingTests.fs", text, "fsharp") for d in c.definitions]
    assert names == ["Giraffe.Tests.RoutingTests", 'route: GET "/" returns "Hello World"']


def test_fsharp_double_backtick_members_are_named_by_their_backticks() -> None:
    """A test class's members (`member _.``GET / returns 200`` () =`) were read by the plain
    `member` pattern first: every such test was a method named `_` (or `this`)."""
    text = _src("""
        type RoutingTests() =
            [<Fact>]
            member _.``GET / returns 200`` () =
                let ctx = 1
                ctx

            member this.``POST /x returns 201`` () =
                ()

            static member ``a static case`` () =
                ()
        """)
    names = [d.name for c in chunk_fallback("tests/RoutingTests.fs", text, "fsharp") for d in c.definitions]
    assert names == ["RoutingTests", "GET / returns 200", "POST /x returns 201", "a static case"]


def test_bats_files_are_chunked_at_their_tests() -> None:
    """bash's grammar reads `@test "..." {` as an error: chunks of a .bats file started inside
    tests (at a `}` or an assertion) and no test was a definition."""
    tests = "\n\n".join(
        f'@test "case {i} reports its status" {{\n  run ./tool --case {i}\n'
        + "".join(f'  [ "${{lines[{k}]}}" = "line {k}" ]\n' for k in range(12))
        + '  [ "$status" -eq 0 ]\n}'
        for i in range(5)
    )
    text = "#!/usr/bin/env bats\n\nsetup() {\n  cd \"$BATS_TEST_DIRNAME\"\n}\n\n" + tests + "\n"
    chunks = chunk_text("test/tool.bats", text)
    assert_valid(text, chunks)
    lines = text.split("\n")
    names = [d.name for c in chunks for d in c.definitions]
    assert names == ["setup"] + [f"case {i} reports its status" for i in range(5)]
    for chunk in chunks[1:]:
        assert lines[chunk.start_line - 1].startswith("@test"), (chunk.start_line, chunk.text[:60])


def test_a_kotlin_file_its_grammar_cannot_parse_is_chunked_by_the_fallback() -> None:
    """tree-sitter-kotlin predates Kotlin 2's guard conditions (`is String if ... ->`): such a file
    parses to an ERROR root and its partial parse missed the class and most functions (exposed's
    UUIDColumnType.kt: none). The fallback names a function past its type parameters and its
    receiver, as the grammar does (`withEntryLock`, not `Ledger` or `<T>`)."""
    text = _src("""
        package org.example.money

        class AmountColumnType : ColumnType<Amount>() {
            override fun valueFromDB(value: Any): Amount = when (value) {
                is String if value.startsWith("$") -> Amount.parse(value.drop(1))
                is Number -> Amount(value.toLong())
                else -> error("unexpected amount $value")
            }

            override fun notNullValueToDB(value: Amount): Any = value.cents

            suspend inline fun <T> Ledger.withEntryLock(block: () -> T): T = lock.withLock { block() }

            fun Map<String, List<Pair<Amount, Amount>>>.totalsByAccount(): Map<String, Amount> =
                mapValues { (_, pairs) -> pairs.fold(Amount.ZERO) { sum, pair -> sum + pair.first } }
        }
        """)
    found = {(d.name, d.kind) for c in chunk_text("src/AmountColumnType.kt", text) for d in c.definitions}
    assert {("AmountColumnType", "class"), ("valueFromDB", "function"), ("notNullValueToDB", "function"),
            ("withEntryLock", "function"), ("totalsByAccount", "function")} <= found, found


def test_kotlin_functions_past_deeply_generic_receivers_are_named_in_the_fallback() -> None:
    """The fallback's receiver pattern nested type arguments three levels deep: exposed's
    SchemaUtilityApi.kt (an ERROR root) defined `Map` for `fun Map<Pair<Table,
    LinkedHashSet<Column<*>>>, List<ForeignKeyConstraint>>.filterAndLogExcessConstraints(` and
    headed the chunks after it `function Map`. Likewise a function-type receiver, `fun<T>` without
    a space, type parameters bounded by nested generics and a function after an annotation."""
    text = _src("""
        abstract class SchemaUtilityApi {
            val guard = when (x) { is String if x.isEmpty() -> 1; else -> 2 }

            @InternalApi
            protected fun Map<Pair<Table, Set<Col<*>>>, List<FK>>.filterAndLogExcessConstraints(
                withLogs: Boolean
            ): List<FK> = emptyList()

            fun <T> Foo<Bar<Baz<Qux<T>>>>.deepestName(a: Int) {}

            internal fun <R, T> (suspend (R) -> T).startUndispatched(receiver: R) {}

            private fun<T> Class<T>.timeoutAnnotation(): Optional<CoroutinesTimeout> = Optional.empty()

            suspend inline fun <T, K, M : MutableMap<in K, MutableList<T>>> Flow<T>.groupByTo(m: M): M = m

            @Test fun testNotAutoIncTable() {}
        }
        """)
    chunks = chunk_text("src/SchemaUtilityApi.kt", text)
    names = {d.name for c in chunks for d in c.definitions}
    assert {"filterAndLogExcessConstraints", "deepestName", "startUndispatched", "timeoutAnnotation",
            "groupByTo", "testNotAutoIncTable"} <= names, names
    assert not names & {"Map", "Foo", "Class"}, names
    assert not any("function Map" in c.heading for c in chunks)


def test_a_groovy_file_its_grammar_cannot_parse_is_chunked_by_the_fallback() -> None:
    """tree-sitter-groovy gives up on some valid classes (default parameter values in an inner
    class: jenkins-pipeline-unit's DockerMock) with an ERROR root, whose share of the file was
    counted as 0: the file stayed one chunk defining two misnamed "methods"."""
    text = _src("""
        package org.example.release

        class ReleaseMock implements Serializable {

            private transient StepRecorder recorder

            ReleaseMock(StepRecorder recorder) {
                this.recorder = recorder
            }

            class Artifact implements Serializable {
                String name

                Artifact(String name = 'unnamed') {
                    this.name = name
                }

                def upload(String repository = '', Closure body) {
                    recorder.record('upload', name)
                    body()
                }
            }

            Artifact artifact(String name) {
                return new Artifact(name)
            }

            void withRepository(String url, String credentialsId = '', Closure body) {
                recorder.record('withRepository', url)
                body()
            }
        }
        """)
    found = {(d.name, d.kind) for c in chunk_text("src/ReleaseMock.groovy", text) for d in c.definitions}
    assert {("ReleaseMock", "class"), ("Artifact", "class"), ("upload", "function"),
            ("artifact", "function"), ("withRepository", "function")} <= found, found


def test_groovy_variables_and_command_calls_are_no_definitions_in_the_fallback() -> None:
    """A Groovy file its grammar gives up on comes here (chunk_code._ERROR_ROOT_UNPARSED), where the
    generic `def` pattern read every `def result = helper.runSh('pwd')` as a function: 9 of
    GenericPipelineDeclaration.groovy's 25 "definitions" were its locals, and a Jenkinsfile's
    `input message: 'Ship?'` (a step called with a named argument) was the type `message:`. A
    closure bound to a name (`def notifyAll = {`) still is one."""
    text = _src("""
        class ReleaseSteps {
            def binding = null

            def publish(String name) {
                def result = helper.runSh('pwd')
                final def componentInstance = componentType.newInstance()
                def closure = { println 'inline' }
                input message: 'Ship?'
                return result
            }

            def notifyAll = { String text ->
                println text
            }
        }
        """)
    found = {(d.name, d.kind) for c in chunk_fallback("ReleaseSteps.groovy", text, "groovy")
             for d in c.definitions}
    assert {("ReleaseSteps", "class"), ("publish", "function"), ("notifyAll", "function")} <= found, found
    names = {name for name, _kind in found}
    assert not names & {"binding", "result", "componentInstance", "closure", "message:"}, found


def test_systemverilog_typedefs_are_named_at_their_end() -> None:
    """ibex's packages declare their types as `typedef enum logic [5:0] { ... } ctrl_fsm_e;`: the
    name follows the body, on its closing line (or on the typedef's own line). No typedef was a
    definition; a forward `typedef class` declares no type of its own."""
    text = _src("""
        package ibex_pkg;
          typedef enum logic [1:0] {
            RESET,
            BOOT_SET
          } ctrl_fsm_e;

          typedef struct packed {
            logic        current_pc;
            struct packed { logic a; } inner;
          } crash_dump_t;

          typedef enum logic { FIRST_CYCLE, MULTI_CYCLE } id_fsm_e;
          typedef logic [31:0] word_t;
          typedef class ibex_driver;
        endpackage
        """)
    chunks = chunk_fallback("rtl/ibex_pkg.sv", text, "verilog")
    defs = [(d.name, d.kind) for c in chunks for d in c.definitions]
    assert defs == [("ibex_pkg", "module"), ("ctrl_fsm_e", "type"), ("crash_dump_t", "type"),
                    ("id_fsm_e", "type"), ("word_t", "type")]


@pytest.mark.parametrize(
    ("language", "path", "text", "after_end", "heading"),
    [
        ("verilog", "rtl/ibex_compressed_decoder.sv", _src("""
            module ibex_compressed_decoder (
              input  logic [31:0] instr_i,
              output logic [31:0] instr_o
            );
              function automatic logic [6:0] cm_stack_adj(input logic [3:0] rlist);
                return {rlist, 3'b000};
              endfunction

              always_comb begin
                instr_o = instr_i;
                unique case (instr_i[1:0])
                  2'b00: instr_o = {instr_i[15:2], 2'b11};
                  default: instr_o = instr_i;
                endcase
              end
            endmodule
            """), "always_comb begin", "module ibex_compressed_decoder"),
        ("svelte", "src/Pagination/Pagination.svelte", _src("""
            <script>
              export let page = 1;

              function getWindowedPages(current, total, size) {
                return [current, total, size];
              }
            </script>

            <div class="bx--pagination">
              {#each getWindowedPages(page, 10, 3) as item}
                <span>{item}</span>
              {/each}
            </div>
            """), '<span>{item}</span>', ""),
        ("crystal", "src/lucky/force_ssl_handler.cr", _src("""
            module Lucky
              class ForceSSLHandler
                include HTTP::Handler

                def call(context : HTTP::Server::Context)
                  call_next(context)
                end

                getter redirect_status : Int32 = 308
                getter enabled : Bool = true
                getter max_age : Time::Span = 365.days
                getter include_subdomains : Bool = true
                getter preload : Bool = false
              end
            end
            """), "getter preload", "module Lucky > class ForceSSLHandler"),
    ],
    ids=["verilog", "svelte", "crystal"],
)
def test_closing_lines_end_definitions(
    language: str, path: str, text: str, after_end: str, heading: str
) -> None:
    """The code after `endfunction`, Svelte's markup after `</script>`, a class's lines after a
    method's `end` are not the function's: they were headed `module X > function cm_stack_adj`,
    `section script > function getWindowedPages` (every window of the markup) and
    `class X > function call`."""
    chunks = chunk_fallback(path, text, language, max_lines=6, max_chars=400, overlap=0)
    assert_valid(text, chunks)
    row = text.split("\n").index(next(line for line in text.split("\n") if after_end in line)) + 1
    holding = [c for c in chunks if c.start_line <= row <= c.end_line]
    assert [c.heading for c in holding] == [heading]


def test_a_modules_code_after_its_function_is_a_window_of_the_module() -> None:
    """ibex_lockstep.sv: the module's code after a typedef's `} delayed_outputs_t;` was the
    typedef's (then, closed, no definition's at all: it lost the signature that makes the module's
    windows one definition for ranking). Those lines carry the module's signature."""
    body = "\n".join(f"  assign out_{i} = in_{i};" for i in range(12))
    text = _src("""
        module ibex_lockstep (
          input  logic clk_i
        );
          typedef struct packed {
            logic instr_req;
          } delayed_outputs_t;

        """) + body + "\nendmodule\n"
    chunks = chunk_fallback("rtl/ibex_lockstep.sv", text, "verilog", max_lines=6, max_chars=400, overlap=0)
    assert_valid(text, chunks)
    after = [c for c in chunks if c.start_line > 6]
    assert after and all(c.signature.startswith("module ibex_lockstep (") for c in after), [
        (c.start_line, c.signature) for c in chunks]


def test_a_gdscript_signal_is_one_line() -> None:
    """DialogicGameHandler.gd: the variables after `signal text_signal(argument)` were headed
    `signal text_signal`, windows of it; a signal is declared on its one line."""
    members = "\n".join(f"var paused_{i} := false" for i in range(12))
    head = "class_name DialogicGameHandler\nextends Node\n\nsignal text_signal(argument: String)\n\n"
    text = head + members + "\n\nfunc _ready() -> void:\n\tpass\n"
    chunks = chunk_fallback("Core/DialogicGameHandler.gd", text, "gdscript", max_lines=6, max_chars=400,
                            overlap=0)
    assert_valid(text, chunks)
    assert [c.heading for c in chunks if "paused_9" in c.text] == [""]


def test_a_block_right_after_a_closing_tag_is_still_a_block() -> None:
    """vue-element-admin's Kanban/index.vue: `<style>` on the line after `</script>` was no block
    (the closing tag's trailing lines took the row it starts on): its windows lost their heading."""
    text = _src("""
        <script>
        export default {
          name: 'DragKanban'
        }
        </script>
        <style lang="scss" scoped>
        .board-column {
          min-width: 300px;
        }
        </style>
        """)
    chunks = chunk_fallback("src/components/Kanban/index.vue", text, "vue", max_lines=3, max_chars=400,
                            overlap=0)
    assert [c.heading for c in chunks if "</style>" in c.text] == ["section style"]


def test_a_svelte_components_props_are_its_definitions() -> None:
    """carbon-components-svelte declares each prop `export let name = default;` (Svelte 3/4): they
    were no definitions, so a prop's name asked alone found the components that pass it more often
    than the one declaring it. A prop is one line: the script's code after it is not the prop's."""
    text = _src("""
        <script lang="ts">
          /** Specify the size of the button */
          export let size = "default";
          export let itemText = (min, max) => `${min}-${max}`;
          export let open: boolean;
          export let hideCopyButton = false;
          export const labelId = "label";
          let local = size;
        """) + "\n".join(f"  $: derived_{i} = open && size;" for i in range(12)) + "\n</script>\n"
    chunks = chunk_fallback("src/Button/Button.svelte", text, "svelte", max_lines=6, max_chars=400, overlap=0)
    assert_valid(text, chunks)
    found = [(d.name, d.kind) for c in chunks for d in c.definitions]
    assert found == [("script", "section"), ("size", "property"), ("itemText", "function"),
                     ("open", "property"), ("hideCopyButton", "property"), ("labelId", "property")]
    assert [c.heading for c in chunks if "derived_9" in c.text] == ["section script"]


def test_svelte_5_props_destructured_from_the_props_rune_are_definitions() -> None:
    """Svelte 5 declares a component's props as one destructuring of `$props()` (runes), on one
    line or many: each key is a prop (`class: className` is the prop `class`), a rest element and
    what a default's braces hold are not, and the props are the script's own level (indented
    under their `let {`, they were read as nested in the definition above)."""
    text = _src("""
        <script lang="ts">
          type Props = { size?: string; open?: boolean; children?: Snippet };

          let {
            /** The size of the dialog */
            size = "default",
            open = $bindable(false),
            onclose = () => {},
            class: className = "",
            style = { color: "red", width: 2 },
            children,
            ...rest
          }: Props = $props();

          function close() {
            open = false;
          }
        </script>

        <dialog {open} class={className}>{@render children?.()}</dialog>
        """)
    chunks = chunk_fallback("src/Dialog.svelte", text, "svelte", max_lines=6, max_chars=400, overlap=0)
    assert_valid(text, chunks)
    found = [(d.name, d.kind) for c in chunks for d in c.definitions]
    assert found == [("script", "section"), ("Props", "type"), ("size", "property"), ("open", "property"),
                     ("onclose", "property"), ("class", "property"), ("style", "property"),
                     ("children", "property"), ("close", "function")]
    lines = text.split("\n")
    assert all(lines[d.line - 1].strip().startswith(d.name) for c in chunks for d in c.definitions
               if d.kind == "property")
    assert all(c.heading == "section script" for c in chunks if "size =" in c.text or "children," in c.text)
    one_line = "<script>\n  let { a, b = 1, c: cc } = $props();\n  let x = a;\n</script>\n"
    names = [d.name for c in chunk_fallback("A.svelte", one_line, "svelte") for d in c.definitions]
    assert names == ["script", "a", "b", "c"]
    # the nearest `let {` above a pattern's end is another statement's: no props, its code read as code
    other = ("<script>\n  const { x } = y;\n  function f() {\n    return x;\n  }\n"
             "  let props =\n    { a: 1 }\n  } = $props();\n</script>\n")
    names = [d.name for c in chunk_fallback("B.svelte", other, "svelte") for d in c.definitions]
    assert names == ["script", "f"]
    # a default's string holds text, not keys: its comma, its `//`, its escaped quote (review22)
    strings = ("<script>\n  let { label = \"a, b\", title = 'it\\'s, fine', url = \"http://x.org\", "
               "open = false } = $props();\n</script>\n")
    names = [d.name for c in chunk_fallback("C.svelte", strings, "svelte") for d in c.definitions]
    assert names == ["script", "label", "title", "url", "open"]
