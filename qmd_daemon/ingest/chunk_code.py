"""Chunk source code at symbol boundaries with tree-sitter.

A file is parsed once; one walk records every definition (name, kind, line, signature line),
then the top-level children are partitioned into units (a definition with the comments,
decorators and attributes directly above it, or filler such as imports). Small adjacent units
are merged up to the caps; a large class/impl/namespace is split into its members, each piece
keeping the container as `heading`; any other large unit is cut into overlapping windows.

`chunk_code` returns None when the language has no grammar or the parse is mostly errors; the
caller (`chunking.chunk_text`) then uses the regex fallback.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from qmd_daemon.ingest.chunk_fallback import (
    MAX_CHARS,
    MAX_LINES,
    OVERLAP_LINES,
    POD_TITLE_RE,
    Caps,
    DefTable,
    Lazy,
    LineIndex,
    Piece,
    Unit,
    clip_signature,
    group_units,
    make_units,
    pieces_to_chunks,
    pod_title,
    split_lines,
)
from qmd_daemon.text.chunk_model import Chunk, Definition

# Files above these sizes are not parsed (minified bundles, generated blobs): the fallback is
# cheaper and tree-sitter structure would not help.
MAX_PARSE_CHARS = 1_000_000
MAX_PARSE_LINE = 20_000
# A parse whose top-level ERROR nodes cover more than this share of the lines is abandoned.
MAX_ERROR_SHARE = 0.5
_MAX_DEPTH = 12

_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "haskell": ("tree_sitter_haskell", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "zig": ("tree_sitter_zig", "language"),
    "shell": ("tree_sitter_bash", "language"),
    "objc": ("tree_sitter_objc", "language"),
    "dart": ("tree_sitter_dart", "language"),
    "julia": ("tree_sitter_julia", "language"),
    "ocaml": ("tree_sitter_ocaml", "language_ocaml"),
    "perl": ("tree_sitter_perl", "language"),
    "groovy": ("tree_sitter_groovy", "language"),
    "powershell": ("tree_sitter_powershell", "language"),
}
SUPPORTED_LANGUAGES = frozenset(_GRAMMARS)


def available_languages() -> list[str]:
    """The languages whose grammar package is installed here, sorted. Without one a language is
    chunked by the regex fallback, so this list is part of the chunker's version: installing a
    grammar (or adding a language above) re-chunks what the fallback chunked."""
    return sorted(lang for lang, (module, _) in _GRAMMARS.items() if importlib.util.find_spec(module))


@dataclass(frozen=True)
class _Spec:
    defs: dict[str, str]  # node type -> definition kind
    containers: frozenset[str] = frozenset()  # definitions whose body members are split when large
    transparent: frozenset[str] = frozenset()  # non-definitions whose children are split when large
    wrappers: frozenset[str] = frozenset()  # nodes wrapping one definition (export, decorators...)
    attach: frozenset[str] = frozenset({"comment"})  # siblings that stick to the next definition
    bodies: frozenset[str] = frozenset()  # member-list node types, where the grammar has no `body` field
    flat: frozenset[str] = frozenset()  # containers whose members are their own children (@implementation)
    # a title line inside an `attach` node that attaches to nothing (POD's `=head2`)
    sections: re.Pattern[str] | None = None

    def body_of(self, node: Any) -> Any | None:
        if node.type in self.flat:
            return node
        body = node.child_by_field_name("body")
        if body is None and self.bodies:
            body = next((c for c in node.named_children if c.type in self.bodies), None)
        return body


_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
}
_TS_DEFS = {
    **_JS_DEFS,
    "function_signature": "function",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "namespace",
    "method_signature": "method",
    "abstract_method_signature": "method",
}
_C_DEFS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "union_specifier": "struct",
    "enum_specifier": "enum",
    "type_definition": "type",
    "preproc_def": "const",
    "preproc_function_def": "macro",
}
_C_TRANSPARENT = frozenset(
    {"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef",
     "linkage_specification"}
)
_OBJC_CONTAINERS = frozenset({"class_interface", "class_implementation", "protocol_declaration"})
_JS_SPEC = _Spec(
    _JS_DEFS,
    containers=frozenset({"class_declaration", "class"}),
    wrappers=frozenset({"export_statement"}),
)
_TS_SPEC = _Spec(
    _TS_DEFS,
    containers=frozenset(
        {"class_declaration", "class", "abstract_class_declaration", "interface_declaration",
         "internal_module", "module"}
    ),
    wrappers=frozenset({"export_statement", "ambient_declaration"}),
)
_SPECS: dict[str, _Spec] = {
    "python": _Spec(
        {"function_definition": "function", "class_definition": "class"},
        containers=frozenset({"class_definition"}),
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": _JS_SPEC,
    "typescript": _TS_SPEC,
    "tsx": _TS_SPEC,
    "go": _Spec(
        {"function_declaration": "function", "method_declaration": "method", "type_spec": "type",
         "type_alias": "type"},
        transparent=frozenset({"type_declaration", "const_declaration", "var_declaration"}),
        wrappers=frozenset({"type_declaration"}),
    ),
    "rust": _Spec(
        {"function_item": "function", "function_signature_item": "function", "struct_item": "struct",
         "union_item": "struct", "enum_item": "enum", "trait_item": "trait", "impl_item": "impl",
         "mod_item": "module", "type_item": "type", "const_item": "const", "static_item": "const",
         "macro_definition": "macro"},
        containers=frozenset({"impl_item", "trait_item", "mod_item"}),
        attach=frozenset({"line_comment", "block_comment", "attribute_item"}),
    ),
    "java": _Spec(
        {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
         "record_declaration": "class", "annotation_type_declaration": "interface",
         "method_declaration": "method", "constructor_declaration": "method",
         "compact_constructor_declaration": "method"},
        containers=frozenset(
            {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
        ),
        transparent=frozenset({"enum_body_declarations"}),
        attach=frozenset({"line_comment", "block_comment"}),
    ),
    "c": _Spec(_C_DEFS, transparent=_C_TRANSPARENT),
    "cpp": _Spec(
        {**_C_DEFS, "class_specifier": "class", "namespace_definition": "namespace",
         "alias_declaration": "type", "concept_definition": "type"},
        containers=frozenset(
            {"class_specifier", "struct_specifier", "union_specifier", "namespace_definition"}
        ),
        transparent=_C_TRANSPARENT,
        wrappers=frozenset({"template_declaration"}),
    ),
    "ruby": _Spec(
        {"method": "function", "singleton_method": "method", "class": "class", "singleton_class": "class",
         "module": "module"},
        containers=frozenset({"class", "module", "singleton_class"}),
    ),
    "php": _Spec(
        {"function_definition": "function", "class_declaration": "class",
         "interface_declaration": "interface", "trait_declaration": "trait", "enum_declaration": "enum",
         "method_declaration": "method",
         "namespace_definition": "namespace"},
        containers=frozenset(
            {"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration",
             "namespace_definition"}
        ),
    ),
    "csharp": _Spec(
        {"class_declaration": "class", "struct_declaration": "struct", "interface_declaration": "interface",
         "enum_declaration": "enum", "record_declaration": "class", "record_struct_declaration": "struct",
         "delegate_declaration": "type", "method_declaration": "method", "constructor_declaration": "method",
         "destructor_declaration": "method", "operator_declaration": "method",
         "conversion_operator_declaration": "method", "property_declaration": "property",
         "event_declaration": "property", "indexer_declaration": "property",
         "namespace_declaration": "namespace", "file_scoped_namespace_declaration": "namespace"},
        containers=frozenset(
            {"class_declaration", "struct_declaration", "interface_declaration", "record_declaration",
             "record_struct_declaration", "namespace_declaration"}
        ),
    ),
    "kotlin": _Spec(
        {"class_declaration": "class", "object_declaration": "object", "companion_object": "object",
         "function_declaration": "function", "secondary_constructor": "method", "type_alias": "type"},
        containers=frozenset({"class_declaration", "object_declaration", "companion_object"}),
        attach=frozenset({"line_comment", "block_comment"}),
        bodies=frozenset({"class_body", "enum_class_body", "function_body"}),
    ),
    "scala": _Spec(
        {"class_definition": "class", "object_definition": "object", "trait_definition": "trait",
         "enum_definition": "enum", "package_object": "object", "function_definition": "function",
         "function_declaration": "function", "type_definition": "type", "given_definition": "const",
         "extension_definition": "impl"},
        containers=frozenset({"class_definition", "object_definition", "trait_definition", "enum_definition",
                              "package_object", "extension_definition"}),
        attach=frozenset({"comment", "block_comment"}),
    ),
    "swift": _Spec(
        {"class_declaration": "class", "protocol_declaration": "interface",
         "function_declaration": "function", "protocol_function_declaration": "method",
         "init_declaration": "method",
         "subscript_declaration": "method", "typealias_declaration": "type"},
        containers=frozenset({"class_declaration", "protocol_declaration"}),
        attach=frozenset({"comment", "multiline_comment"}),
    ),
    # Elixir's definitions are macro calls (defmodule, def, ...): `_Collector.statement` reads them.
    "elixir": _Spec({}, attach=frozenset({"comment"}), bodies=frozenset({"do_block"})),
    "haskell": _Spec(
        {"function": "function", "bind": "function", "data_type": "type", "newtype": "type",
         "type_synonym": "type", "type_family": "type", "class": "class", "instance": "impl"},
        containers=frozenset({"class", "instance"}),
        transparent=frozenset({"declarations"}),
        # a type signature and its haddock belong to the equations below them
        attach=frozenset({"comment", "haddock", "signature", "pragma"}),
        bodies=frozenset({"class_declarations", "instance_declarations"}),
    ),
    "lua": _Spec({"function_declaration": "function"}, attach=frozenset({"comment"})),
    "zig": _Spec(
        {"function_declaration": "function", "test_declaration": "test"},
        attach=frozenset({"comment"}),
    ),
    "shell": _Spec({"function_definition": "function"}, attach=frozenset({"comment"})),
    "objc": _Spec(
        {**_C_DEFS, "class_interface": "class", "class_implementation": "class",
         "protocol_declaration": "interface", "method_declaration": "method", "method_definition": "method"},
        containers=_OBJC_CONTAINERS,
        transparent=_C_TRANSPARENT,
        wrappers=frozenset({"implementation_definition"}),
        flat=_OBJC_CONTAINERS,
    ),
    # a Dart function is a signature and a body side by side; in a class the signature is wrapped
    "dart": _Spec(
        {"class_definition": "class", "mixin_declaration": "class", "extension_declaration": "impl",
         "enum_declaration": "enum", "type_alias": "type", "function_signature": "function",
         "getter_signature": "method", "setter_signature": "method", "constructor_signature": "method",
         "factory_constructor_signature": "method"},
        containers=frozenset({"class_definition", "mixin_declaration", "extension_declaration"}),
        wrappers=frozenset({"method_signature", "declaration"}),
        attach=frozenset({"comment", "documentation_comment", "annotation"}),
        bodies=frozenset({"class_body", "extension_body"}),
    ),
    "julia": _Spec(
        {"module_definition": "module", "function_definition": "function", "macro_definition": "macro",
         "struct_definition": "struct", "abstract_definition": "type"},
        containers=frozenset({"module_definition"}),
        attach=frozenset({"line_comment", "block_comment", "string_literal"}),  # docstrings above
        flat=frozenset({"module_definition"}),
    ),
    "ocaml": _Spec(
        {"value_definition": "function", "type_definition": "type", "module_definition": "module",
         "module_type_definition": "interface", "class_definition": "class", "exception_definition": "type",
         "external": "function", "value_specification": "function"},  # `val f : t` of .mli and sigs
        containers=frozenset({"module_definition", "module_type_definition"}),
    ),
    # POD not directly above a sub (a module's docs after `__END__`) is cut at its `=head1`..`=head4`
    # lines, each section headed by its titles (`METHODS > run`: `=head2 NAME` documents a method)
    "perl": _Spec(
        {"subroutine_declaration_statement": "function", "method_declaration_statement": "method",
         "package_statement": "module", "class_statement": "class"},
        attach=frozenset({"comment", "pod"}),
        sections=POD_TITLE_RE,
    ),
    "groovy": _Spec(
        {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
         "method_declaration": "method", "constructor_declaration": "method",
         "function_definition": "function"},
        containers=frozenset({"class_declaration", "interface_declaration", "enum_declaration"}),
        attach=frozenset({"comment", "line_comment", "block_comment", "groovydoc_comment"}),
    ),
    # a script or module is a statement list; `function`, `filter` and `workflow` are function
    # statements named `Verb-Noun`; comment-based help (`<# .SYNOPSIS ... #>`) is a comment, so the
    # `function` lines of its examples are none
    "powershell": _Spec(
        {"function_statement": "function", "class_statement": "class", "class_method_definition": "method",
         "enum_statement": "enum"},
        containers=frozenset({"class_statement"}),
        transparent=frozenset({"statement_list"}),
        flat=frozenset({"class_statement"}),
    ),
}

# `function global:Get-Foo` defines Get-Foo (in the global scope): the scope is no part of its name
_POWERSHELL_SCOPE = re.compile(r"^(?i:global|local|script|private):")

_CLASSY = frozenset({"class", "struct", "interface", "trait", "impl", "enum", "object", "module"})
_VAR_KINDS = frozenset({"const", "variable"})
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
# Node types that never contain definitions worth recording: the walk does not enter them.
_NO_DEFS_INSIDE = frozenset(
    {"return_statement", "assignment", "augmented_assignment", "dictionary", "list", "tuple", "set", "pair",
     "keyword_argument", "raise_statement", "assert_statement", "delete_statement", "global_statement",
     "nonlocal_statement", "pass_statement", "break_statement", "continue_statement", "import_statement",
     "import_from_statement", "future_import_statement", "lambda", "string", "number", "integer", "float",
     "true", "false", "none", "null", "comment", "line_comment", "block_comment", "decorator",
     "field_declaration_list", "enumerator_list", "enum_variant_list", "use_declaration",
     "import_declaration", "package_clause", "package_declaration", "preproc_include", "using_directive",
     "namespace_use_declaration",
     "enum_body", "enum_member_declaration_list", "enum_declaration_list", "object_type",
     # Haskell: type-level `function` nodes (a -> b) live in these
     "signature", "data_constructors", "gadt_constructors", "deriving", "type_params", "type_patterns",
     "fundeps"}
)
# ... except where a language's node of that name holds definitions: OCaml's `sig ... end`.
_DEFS_INSIDE: dict[str, frozenset[str]] = {"ocaml": frozenset({"signature"})}
_NO_DEFS_MARKERS = ("expression", "literal", "argument", "parameter", "identifier", "annotation", "string")
_SKIP_CACHE: dict[str, bool] = {}
# Languages whose functions often hold nested named functions/classes worth recording; inside a
# function the walk only enters statement blocks.
_NESTED_DEFS = frozenset({"python", "javascript", "typescript", "tsx", "ruby", "php", "lua"})
_BLOCKY_SUFFIXES = ("block", "body", "clause", "_statement", "body_statement", "do_block", "then", "else",
                    "ensure", "rescue", "begin", "when", "in_clause", "case")
_BLOCKY_CACHE: dict[str, bool] = {}
# Node types `_Collector.statement` looks at, per language.
_JS_STATEMENTS = frozenset(
    {"lexical_declaration", "variable_declaration", "field_definition", "public_field_definition",
     "expression_statement"}
)
_STATEMENTS: dict[str, frozenset[str]] = {
    "python": frozenset({"expression_statement", "type_alias_statement"}),
    "javascript": _JS_STATEMENTS,
    "typescript": _JS_STATEMENTS,
    "tsx": _JS_STATEMENTS,
    "go": frozenset({"const_spec", "var_spec"}),
    "c": frozenset({"declaration", "field_declaration"}),
    "cpp": frozenset({"declaration", "field_declaration"}),
    "php": frozenset({"const_declaration"}),
    "elixir": frozenset({"call"}),
    "lua": frozenset({"variable_declaration", "assignment_statement"}),
    "zig": frozenset({"variable_declaration"}),
    "julia": frozenset({"assignment", "const_statement"}),
    "perl": frozenset({"expression_statement"}),
}
# `has name => ...` is a call of `has`, with or without parentheses
_PERL_CALLS = frozenset({"ambiguous_function_call_expression", "function_call_expression"})
_PERL_WORD = re.compile(r"[A-Za-z_]\w*")


def _perl_words(node: Any) -> list[Any]:
    """The names in `[qw(a b)]` or `['a', 'b']`: its string contents and barewords."""
    if node.type in ("string_content", "autoquoted_bareword", "bareword"):
        return [node]
    return [w for c in node.named_children for w in _perl_words(c)]


_ELIXIR_MODULES = {"defmodule": "module", "defprotocol": "interface", "defimpl": "impl"}
# a module name `alias` can shorten: `Plug.Conn`, `__MODULE__.Adapter` (not `Module.concat([A, B])`,
# nor an atom `:"Elixir.Foo.Bar"`)
_ELIXIR_ALIAS = re.compile(r"(?:[A-Z]\w*|__MODULE__)(?:\.[A-Z]\w*)+")
_ELIXIR_FUNCTIONS = {"def": "function", "defp": "function", "defmacro": "macro", "defmacrop": "macro",
                     "defguard": "function", "defguardp": "function", "defdelegate": "function",
                     "defn": "function", "defnp": "function"}
_SWIFT_KINDS = {"struct": "struct", "enum": "enum", "extension": "impl", "actor": "class"}
_ZIG_CONTAINERS = {"struct_declaration": "struct", "enum_declaration": "enum", "union_declaration": "struct",
                   "opaque_declaration": "struct", "error_set_declaration": "enum"}
_C_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "qualified_identifier", "destructor_name",
     "operator_name", "operator_cast", "template_function", "template_type", "primitive_type"}
)
_NOT_SIGNATURE = ("@", "#[", "[", "//", "/*", "*", "#")
_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


# Languages whose modules hold plain functions (not Ruby's module methods).
_MODULE_FUNCTIONS = frozenset({"julia", "ocaml"})
_OCAML_NAMES = frozenset(
    {"value_name", "type_constructor", "module_name", "module_type_name", "class_name", "constructor_name"}
)


def _julia_name(node: Any) -> Any | None:
    """The name of a Julia function/macro (`function Base.show(io, x)::T where T`: `Base.show`) or
    type (`struct Circle <: Shape`: `Circle`): the first identifier under its head."""
    head = next((c for c in node.named_children if c.type in ("signature", "type_head")), None)
    for _ in range(6):
        if head is None or "identifier" in head.type or head.type == "field_expression":
            return head
        if head.type == "call_expression":
            head = head.named_children[0] if head.named_child_count else None
            continue
        head = head.named_children[0] if head.named_child_count else None
    return None


# ---------------------------------------------------------------------------------------------
# parsers

_LANGUAGE_CACHE: dict[str, Any] = {}
_LOCAL = threading.local()


def _capsule(handle: Any) -> Any:
    """A grammar's language as tree_sitter.Language takes it, a capsule: tree-sitter-perl (2.0.3,
    its latest) hands the bare pointer as an int, which tree-sitter deprecates (a warning on every
    run that parses Perl) and will refuse."""
    if not isinstance(handle, int):
        return handle
    import ctypes

    signature = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return signature(("PyCapsule_New", ctypes.pythonapi))(handle, b"tree_sitter.Language", None)


def _parser(language: str) -> Any | None:
    """A tree-sitter Parser for the language, created lazily and cached per thread."""
    cache = getattr(_LOCAL, "parsers", None)
    if cache is None:
        cache = _LOCAL.parsers = {}
    if language in cache:
        return cache[language]
    parser = None
    try:
        import tree_sitter

        lang = _LANGUAGE_CACHE.get(language)
        if lang is None:
            module_name, func = _GRAMMARS[language]
            module = importlib.import_module(module_name)
            lang = _LANGUAGE_CACHE[language] = tree_sitter.Language(_capsule(getattr(module, func)()))
        parser = tree_sitter.Parser(lang)
    except Exception:
        parser = None
    cache[language] = parser
    return parser


# ---------------------------------------------------------------------------------------------
# definitions


@dataclass
class _Def:
    name: str
    kind: str
    row: int
    sig: Lazy
    body: Any = None  # the member list node, for containers
    container: bool = False
    is_var: bool = False

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}".strip()


def _eff_end(node: Any) -> int:
    """The last row a node really occupies (a node ending at column 0 ends on the row before)."""
    end = node.end_point
    row = end.row
    if end.column == 0 and row > node.start_point.row:
        row -= 1
    return row


@dataclass
class _Collector:
    spec: _Spec
    language: str
    src: bytes
    defs: dict[int, _Def] = field(default_factory=dict)  # node id -> definition (wrappers too)
    table: DefTable = field(default_factory=DefTable)

    # -- text helpers -------------------------------------------------------------------------

    def text(self, node: Any, limit: int = 200) -> str:
        if node is None:
            return ""
        start = node.start_byte
        return self.src[start : min(node.end_byte, start + limit)].decode("utf-8", "replace")

    def signature(self, node: Any, body: Any, prefix: str = "") -> str:
        start = node.start_byte
        stop = node.end_byte
        if body is not None and start < body.start_byte <= stop:
            stop = body.start_byte
        stop = min(stop, start + 1200)
        raw = self.src[start:stop].decode("utf-8", "replace")
        lines = raw.split("\n")
        while len(lines) > 1 and lines[0].strip().startswith(_NOT_SIGNATURE):
            lines.pop(0)
        while len(lines) > 1 and (not lines[-1].strip() or lines[-1].strip().startswith(_NOT_SIGNATURE)):
            lines.pop()
        if body is None:
            lines = lines[:1]
        sig = " ".join(" ".join(lines).split())
        sig = re.sub(r"\(\s+", "(", sig)
        sig = re.sub(r"\s+\)", ")", sig)
        sig = sig.rstrip("{").rstrip()
        if prefix and not sig.startswith(prefix):
            sig = prefix + sig
        return clip_signature(sig)

    def c_name(self, node: Any) -> tuple[str, Any]:
        decl = node.child_by_field_name("declarator")
        for _ in range(12):
            if decl is None:
                break
            if decl.type in _C_NAME_TYPES:
                return self.text(decl, 120), decl
            nxt = decl.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in decl.named_children if c.type in _C_NAME_TYPES), None)
                if nxt is None and decl.named_child_count:
                    nxt = decl.named_children[0]
            decl = nxt
        return "", None

    def ns_enum_name(self, node: Any) -> Any | None:
        """`typedef NS_ENUM(NSUInteger, AFSSLPinningMode) {...}` (and NS_OPTIONS...), Apple's way
        to declare an enum: its name is the macro's last argument, not the first constant."""
        spec = node.child_by_field_name("type")
        if spec is None or spec.type != "macro_type_specifier":
            return None
        if not self.text(spec.child_by_field_name("name"), 40).startswith("NS_"):
            return None
        types = spec.children_by_field_name("type")
        return types[-1] if types else None

    def has_function_declarator(self, node: Any) -> bool:
        decl = node.child_by_field_name("declarator")
        for _ in range(12):
            if decl is None:
                return False
            if decl.type == "function_declarator":
                return True
            decl = decl.child_by_field_name("declarator")
        return False

    # -- recording ------------------------------------------------------------------------------

    def add(self, node: Any, name: str, kind: str, name_node: Any, *, body: Any = None, sig_node: Any = None,
            sig_body: Any = None, container: bool = False, is_var: bool = False, prefix: str = "") -> _Def:
        name = " ".join(name.split())[:160] or "(anonymous)"
        row = name_node.start_point.row if name_node is not None else node.start_point.row
        sig = Lazy(self.signature, sig_node if sig_node is not None else node, sig_body, prefix)
        info = _Def(name, kind, row, sig, body, container and body is not None, is_var or kind in _VAR_KINDS)
        self.defs[node.id] = info
        self.table.add(row, Definition(name, kind, row + 1), sig)
        return info

    def definition(self, node: Any, kind: str, ctx: str) -> _Def | None:
        t = node.type
        lang = self.language
        body = self.spec.body_of(node)
        name_node = node.child_by_field_name("name")
        name = self.text(name_node, 160)
        if kind == "function" and ctx in _CLASSY and not (ctx == "module" and lang in _MODULE_FUNCTIONS):
            kind = "method"
        if lang == "objc" and t == "type_definition" and (enum := self.ns_enum_name(node)) is not None:
            return self.add(node, self.text(enum, 120), "enum", enum, body=body)
        if lang in ("c", "cpp", "objc") and t in ("function_definition", "type_definition"):
            name, name_node = self.c_name(node)
            if t == "function_definition" and ctx in _CLASSY:
                kind = "method"
        elif t in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier"):
            if body is None:  # `class basic_json;` declares a name that another file defines
                return None
        elif t == "impl_item":
            trait = node.child_by_field_name("trait")
            typ = node.child_by_field_name("type")
            name = self.text(typ, 160)
            if trait is not None:
                name = f"{self.text(trait, 120)} for {name}"
            name_node = typ
        elif t == "type_spec":
            typ = node.child_by_field_name("type")
            ttype = typ.type if typ is not None else ""
            kind = {"struct_type": "struct", "interface_type": "interface"}.get(ttype, "type")
            return self.add(node, name, kind, name_node, prefix="type ")
        elif t == "singleton_class":
            name_node = node.child_by_field_name("value")
            name = "<< " + self.text(name_node, 120)
        elif t == "operator_declaration" and not name:
            name = "operator"
        elif t == "class_declaration" and lang == "swift":
            declared = self.text(node.child_by_field_name("declaration_kind"), 20)
            kind = _SWIFT_KINDS.get(declared, kind)
        elif lang == "julia" and t != "module_definition":
            name_node = _julia_name(node)
            name = self.text(name_node, 160)
        elif lang == "ocaml":
            return self.ocaml_definition(node, kind)
        elif lang == "powershell":
            names = ("function_name", "simple_name")
            name_node = next((c for c in node.named_children if c.type in names), None)
            name = _POWERSHELL_SCOPE.sub("", self.text(name_node, 160))
        elif t == "test_declaration":
            name_node = next((c for c in node.named_children if c.type in ("string", "identifier")), None)
            name = self.text(name_node, 160).strip('"')
        if not name and name_node is None:
            for child in node.named_children:
                if "identifier" in child.type or child.type in ("name", "constant"):
                    name_node, name = child, self.text(child, 160)
                    break
        container = t in self.spec.containers
        sig_body = None if body is node else body  # a flat container: its first line
        return self.add(node, name, kind, name_node, body=body, sig_body=sig_body, container=container)

    def ocaml_definition(self, node: Any, kind: str) -> _Def | None:
        """`let f x = ...`, `type t = ...`, `module M = struct ... end`, `val f : t` and `module M :
        sig ... end` (interfaces): the name is in the first binding; a `let` without parameters or
        a function value is a variable, `let () =` nothing."""
        binding = next((c for c in node.named_children if c.type.endswith(("binding", "declaration"))), None)
        if node.type in ("module_type_definition", "external", "value_specification"):
            binding = node
        if binding is None:
            return None
        name_node = binding.child_by_field_name("pattern") or binding.child_by_field_name("name")
        if name_node is None:
            name_node = next((c for c in binding.named_children if c.type.endswith("_name")), None)
        if name_node is None or name_node.type not in _OCAML_NAMES:
            return None
        body = binding.child_by_field_name("body")
        if body is None and node.type == "module_definition":
            body = binding.child_by_field_name("module_type")  # `module M : sig ... end` of a .mli
        if node.type == "value_definition" and not (
            any(c.type == "parameter" for c in binding.named_children)
            or (body is not None and body.type in ("function_expression", "fun_expression"))
        ):
            kind = "variable"
        members = body if body is not None and body.type in ("structure", "signature") else None
        return self.add(node, self.text(name_node, 160), kind, name_node, body=members, sig_body=body,
                        container=members is not None)

    # -- module-level variables and function-valued declarations -------------------------------------

    def statement(self, node: Any, ctx: str, top: bool) -> bool:
        """Record variable-like statements; True when the node was handled (do not descend)."""
        t = node.type
        lang = self.language
        if lang == "python":
            if t == "expression_statement" and top:
                child = node.named_children[0] if node.named_child_count else None
                if child is not None and child.type == "assignment":
                    left = child.child_by_field_name("left")
                    if left is not None and left.type == "identifier":
                        name = self.text(left, 160)
                        if not (name.startswith("__") and name.endswith("__")):
                            upper = name.upper() == name and any(c.isalpha() for c in name)
                            kind = "const" if upper else "variable"
                            if self.text(child.child_by_field_name("type"), 40).strip() == "TypeAlias":
                                kind = "type"
                            self.add(node, name, kind, left, is_var=kind != "type")
                return True
            if t == "type_alias_statement":
                left = node.named_children[0] if node.named_child_count else None
                self.add(node, self.text(left, 160), "type", left)
                return True
            return False
        if lang in ("javascript", "typescript", "tsx"):
            if t in ("lexical_declaration", "variable_declaration"):
                first: _Def | None = None
                is_const = self.src[node.start_byte : node.start_byte + 6].startswith(b"const")
                for decl in node.named_children:
                    if decl.type != "variable_declarator":
                        continue
                    name_node = decl.child_by_field_name("name")
                    if name_node is None or name_node.type != "identifier":
                        continue
                    value = decl.child_by_field_name("value")
                    vtype = value.type if value is not None else ""
                    if vtype == "call_expression" and self.text(value, 8).startswith("require"):
                        continue  # an import
                    if vtype in _JS_FUNCTION_VALUES:
                        info = self.add(decl, self.text(name_node), "function", name_node, sig_node=node,
                                        sig_body=value.child_by_field_name("body"))
                    elif vtype == "class":
                        cbody = value.child_by_field_name("body")
                        info = self.add(decl, self.text(name_node), "class", name_node, body=cbody,
                                        sig_node=node, sig_body=cbody, container=True)
                        self.walk(cbody, "class", False)
                    elif top:
                        info = self.add(decl, self.text(name_node), "const" if is_const else "variable",
                                        name_node, sig_node=node)
                    else:
                        continue
                    if first is None or (first.is_var and not info.is_var):
                        first = info
                if first is not None:
                    self.defs[node.id] = first
                return True
            if t == "expression_statement" and top:
                # CommonJS style: app.listen = function listen() {...}; module.exports = function...
                child = node.named_children[0] if node.named_child_count else None
                if child is None or child.type != "assignment_expression":
                    return False
                left = child.child_by_field_name("left")
                right = child.child_by_field_name("right")
                if left is None or right is None or right.type not in _JS_FUNCTION_VALUES:
                    return True
                name = self.text(left, 160)
                kind = "method" if ".prototype." in name else "function"
                info = self.add(node, name, kind, left, sig_body=right.child_by_field_name("body"))
                self.defs[node.id] = info
                return True
            if t in ("field_definition", "public_field_definition") and ctx in _CLASSY:
                value = node.child_by_field_name("value")
                name_node = node.child_by_field_name("property") or node.child_by_field_name("name")
                if value is not None and value.type in _JS_FUNCTION_VALUES and name_node is not None:
                    self.add(node, self.text(name_node), "method", name_node,
                             sig_body=value.child_by_field_name("body"))
                return True
            return False
        if lang == "go":
            if t in ("const_spec", "var_spec") and top:
                name_node = node.child_by_field_name("name")
                if name_node is not None:
                    kind = "const" if t == "const_spec" else "variable"
                    keyword = "const " if kind == "const" else "var "
                    self.add(node, self.text(name_node), kind, name_node, prefix=keyword)
                return True
            return False
        if lang in ("c", "cpp"):
            # a function declared at the top or in a namespace, a method declared in a class body
            declared = (t == "declaration" and (top or ctx == "namespace")) or (
                t == "field_declaration" and ctx in _CLASSY
            )
            if not declared or not self.has_function_declarator(node):
                return False
            name, name_node = self.c_name(node)
            if name:
                self.add(node, name, "function" if t == "declaration" else "method", name_node, is_var=True)
            return True
        if lang == "elixir":
            return self.elixir_call(node, ctx)
        if lang == "lua":
            return self.lua_assignment(node, top)
        if lang == "zig":
            return self.zig_declaration(node, top)
        if lang == "julia":
            return self.julia_assignment(node, ctx, top)
        if lang == "perl":
            return self.perl_attribute(node, ctx, top)
        if lang == "php" and t == "const_declaration" and (top or ctx in _CLASSY):
            for element in node.named_children:
                if element.type == "const_element":
                    name_node = next((c for c in element.named_children if c.type == "name"), None)
                    if name_node is not None:
                        self.add(element, self.text(name_node), "const", name_node, sig_node=node)
            return True
        return False

    def elixir_call(self, node: Any, ctx: str) -> bool:
        """defmodule/defprotocol/defimpl (containers) and def/defp/defmacro... (functions); any
        other call is an expression, not entered."""
        macro = self.text(node.child_by_field_name("target"), 20)
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        head = args.named_children[0] if args is not None and args.named_child_count else None
        if macro in _ELIXIR_MODULES:
            body = self.spec.body_of(node)
            name, kind = self.text(head, 160), _ELIXIR_MODULES[macro]
            info = self.add(node, name, kind, head, body=body, sig_body=body, container=True)
            if macro != "defimpl" and _ELIXIR_ALIAS.fullmatch(name):
                # `alias Plug.Conn` makes `Conn` the name the code (and a question) uses
                self.table.add(info.row, Definition(name.rsplit(".", 1)[1], kind, info.row + 1), info.sig)
            self.walk(body, "module", False)
            return True
        if macro in _ELIXIR_FUNCTIONS and head is not None:
            if head.type == "binary_operator":  # def name(args) when guard
                head = head.child_by_field_name("left") or head
            name_node = head.child_by_field_name("target") if head.type == "call" else head
            kind = _ELIXIR_FUNCTIONS[macro]
            self.add(node, self.text(name_node, 160), kind, name_node, sig_body=self.spec.body_of(node))
        return True

    def lua_assignment(self, node: Any, top: bool) -> bool:
        """`local f = function() end` and `M.f = function() end` are function definitions."""
        assign = node if node.type == "assignment_statement" else next(
            (c for c in node.named_children if c.type == "assignment_statement"), None)
        if assign is None:
            return True
        names = next((c for c in assign.named_children if c.type == "variable_list"), None)
        values = next((c for c in assign.named_children if c.type == "expression_list"), None)
        if names is None or values is None or not names.named_child_count or not values.named_child_count:
            return True
        value = values.named_children[0]
        if value.type == "function_definition":
            name_node = names.named_children[0]
            kind = "method" if name_node.type != "identifier" else "function"
            body = value.child_by_field_name("body")
            self.add(node, self.text(name_node, 160), kind, name_node, sig_body=body)
        return True

    def julia_assignment(self, node: Any, ctx: str, top: bool) -> bool:
        """`area(b::Box) = b.w^2` is a function (Julia's short form); `const LIMIT = 3` a constant."""
        if not (top or ctx == "module"):
            return True
        assign = node if node.type == "assignment" else next(
            (c for c in node.named_children if c.type == "assignment"), None)
        left = assign.named_children[0] if assign is not None and assign.named_child_count else None
        if left is None:
            return True
        if left.type == "call_expression" and left.named_child_count:
            name_node = left.named_children[0]
            self.add(node, self.text(name_node, 160), "function", name_node)
        elif node.type == "const_statement" and left.type == "identifier":
            self.add(node, self.text(left, 160), "const", left)
        return True

    def perl_attribute(self, node: Any, ctx: str, top: bool) -> bool:
        """`has backend => sub {...};` at a package's top: an attribute (Mojo::Base, Moose, Moo
        declare their accessors so), named by its first argument: a bareword, a string, or each
        word of `has [qw(a b)] => ...`. Any other statement is an expression (not entered)."""
        call = node.named_children[0] if node.named_child_count else None
        if not (top or ctx == "module") or call is None or call.type not in _PERL_CALLS:
            return True
        if self.text(call.child_by_field_name("function"), 8) != "has":
            return True
        args = next((c for c in call.named_children if c.type == "list_expression"), None)
        if args is None or not args.named_child_count:
            return True
        first = args.named_children[0]
        sub = next((c for c in args.named_children if c.type == "anonymous_subroutine_expression"), None)
        body = next((c for c in sub.named_children if c.type == "block"), None) if sub is not None else None
        if first.type == "anonymous_array_expression":
            names = _PERL_WORD.findall(" ".join(self.text(w) for w in _perl_words(first)))
        else:
            names = _PERL_WORD.findall(self.text(first, 160))[:1]
        infos = [self.add(node, name, "property", first, sig_body=body) for name in names]
        if infos:
            self.defs[node.id] = infos[0]
        return True

    def zig_declaration(self, node: Any, top: bool) -> bool:
        """`const Name = struct {...}` is a container (its members are split when large); other
        top-level constants are recorded, imports (`@import`) are not."""
        name_node = next((c for c in node.named_children if c.type == "identifier"), None)
        if name_node is None:
            return True
        value = next((c for c in node.named_children if c.type in _ZIG_CONTAINERS), None)
        if value is not None:
            self.add(node, self.text(name_node, 160), _ZIG_CONTAINERS[value.type], name_node, body=value,
                     sig_body=value, container=True)
            self.walk(value, _ZIG_CONTAINERS[value.type], False)
            return True
        if top and not any(c.type == "builtin_function" for c in node.named_children):
            is_const = self.src[node.start_byte : node.end_byte].removeprefix(b"pub ").startswith(b"const")
            self.add(node, self.text(name_node, 160), "const" if is_const else "variable", name_node)
        return True

    # -- the walk -----------------------------------------------------------------------------

    def walk(self, node: Any, ctx: str, top: bool, in_func: bool = False) -> None:
        """Record the definitions below node. Inside a function only statement blocks are entered
        (nested functions and classes), and only for languages where those are common."""
        if node is None:
            return
        spec = self.spec
        statements = _STATEMENTS.get(self.language, frozenset())
        for child in node.named_children:
            t = child.type
            if t in _COMMENTS:
                continue
            if t in statements and self.statement(child, ctx, top):
                continue
            kind = spec.defs.get(t)
            if kind is not None:
                info = self.definition(child, kind, ctx)
                if t == "type_spec":
                    continue
                inner_ctx = info.kind if info is not None else ctx
                func = inner_ctx in ("function", "method")
                if func and self.language not in _NESTED_DEFS:
                    continue
                self.walk(self.spec.body_of(child) or child, inner_ctx, False, in_func or func)
                continue
            if t in spec.wrappers or (t == "expression_statement" and child.named_child_count == 1
                                      and child.named_children[0].type in spec.defs):
                self.walk(child, ctx, top, in_func)
                for inner in child.named_children:
                    info = self.defs.get(inner.id)
                    if info is not None:
                        self.defs[child.id] = info
                        break
                continue
            skip = _SKIP_CACHE.get(t)
            if skip is None:
                skip = _SKIP_CACHE[t] = t in _NO_DEFS_INSIDE or any(m in t for m in _NO_DEFS_MARKERS)
            if skip and t not in _DEFS_INSIDE.get(self.language, ()):
                continue
            if in_func:
                blocky = _BLOCKY_CACHE.get(t)
                if blocky is None:
                    blocky = _BLOCKY_CACHE[t] = t.endswith(_BLOCKY_SUFFIXES)
                if not blocky:
                    continue
            self.walk(child, ctx, top and (t in spec.transparent or t == "declaration_list"), in_func)


# ---------------------------------------------------------------------------------------------
# partition


@dataclass(frozen=True)
class _Section:
    """A titled section of documentation among code: its heading path."""

    title: str


@dataclass
class _Partitioner:
    spec: _Spec
    defs: dict[int, _Def]
    index: LineIndex
    caps: Caps
    titles: list[tuple[int, str]] = field(default_factory=list)  # open section titles: (level, title)

    def section_starts(self, node: Any) -> list[tuple[int, bool, object]]:
        """Unit starts at the title lines of documentation node NODE (spec.sections), each with
        its heading path; the titles stay open for later nodes (POD's `=head1 METHODS` then
        `=head2 run` in another block)."""
        pattern = self.spec.sections
        if pattern is None:
            return []
        first = node.start_point.row
        starts: list[tuple[int, bool, object]] = []
        for offset, line in enumerate(self.index.lines[first : _eff_end(node) + 1]):
            m = pattern.match(line)
            if m is None:
                continue
            level, title = int(m.group(1)), pod_title(m.group(2))
            while self.titles and self.titles[-1][0] >= level:
                self.titles.pop()
            self.titles.append((level, title))
            starts.append((first + offset, False, _Section(" > ".join(t for _, t in self.titles))))
        if starts and starts[0][0] > first:  # `=encoding utf8` before the first title
            starts.insert(0, (first, False, _Section("")))
        return starts

    def members(self, node: Any) -> list[Any]:
        body = self.spec.body_of(node)
        return list((body if body is not None else node).named_children)

    def partition(self, children: list[Any], lo: int, hi: int, heading: str, depth: int) -> list[Piece]:
        spec = self.spec
        defs = self.defs
        items = []
        for child in children:
            s = child.start_point.row
            e = _eff_end(child)
            if e < lo or s > hi:
                continue
            items.append((s, e, child))
        starts: list[tuple[int, bool, object]] = []
        titled_end = -1  # the last row of the last titled section
        i = 0
        while i < len(items):
            s, e, child = items[i]
            if s == titled_end and child.id not in defs:  # Perl's empty data_section after `=cut`
                i += 1
                continue
            if child.type in spec.attach:
                j, end = i, e
                while (
                    j + 1 < len(items) and items[j + 1][2].type in spec.attach and items[j + 1][0] <= end + 1
                ):
                    j += 1
                    end = max(end, items[j][1])
                nxt = items[j + 1] if j + 1 < len(items) else None
                if nxt is not None and nxt[0] <= end + 1:
                    info = defs.get(nxt[2].id)
                    if info is not None and not info.is_var:
                        starts.append((s, True, nxt[2]))
                        i = j + 2
                        continue
                sections = [start for _, _, node in items[i : j + 1] for start in self.section_starts(node)]
                if not sections or sections[0][0] > s:
                    starts.append((s, False, None))
                starts.extend(sections)
                titled_end = end if sections else titled_end
                i = j + 1
                continue
            info = defs.get(child.id)
            payload = child if info is not None or child.type in spec.transparent else None
            starts.append((s, bool(info is not None and not info.is_var), payload))
            i += 1

        units: list[Unit] = []
        for start, end, node in make_units(starts, lo, hi):
            if node is None:
                units.append(Unit(start, end))
                continue
            if isinstance(node, _Section):
                title = f"{heading} > {node.title}" if heading and node.title else node.title or None
                units.append(Unit(start, end, heading=title, titled=True, split=_titled(title or heading)))
                continue
            info = defs.get(node.id)  # type: ignore[attr-defined]
            split = None
            if depth < _MAX_DEPTH:
                if info is not None and info.container and info.body is not None:
                    label = info.label
                    sub_heading = f"{heading} > {label}" if heading else label
                    split = self._splitter(list(info.body.named_children), sub_heading, depth + 1)
                elif node.type in spec.transparent:  # type: ignore[attr-defined]
                    split = self._splitter(self.members(node), heading, depth + 1)
            if info is not None and not info.is_var:
                units.append(Unit(start, end, True, info.sig, info.row, info.label, split=split))
            else:
                units.append(Unit(start, end, split=split))
        return group_units(units, self.index, self.caps, heading)

    def _splitter(self, members: list[Any], heading: str, depth: int):
        def split(s: int, e: int) -> list[Piece]:
            return self.partition(members, s, e, heading, depth)

        return split


def _titled(heading: str):
    """A section too big for one chunk: its windows keep its title."""

    def split(start: int, end: int) -> list[Piece]:
        return [Piece(start, end, heading)]

    return split


# ---------------------------------------------------------------------------------------------
# entry point


# Grammars whose ERROR root means the file was not understood: tree-sitter-groovy 0.1.2 gives up
# on valid classes (default parameter values), tree-sitter-kotlin on Kotlin 2's guard conditions
# (`is String if ... ->`), and the fallback's families name their definitions. Elsewhere an ERROR
# root still holds most definitions, more than a regex's (C headers, Cython output, PowerShell's
# Verb-Noun names): `python bench/error_roots.py`, docs/ranking.md.
_ERROR_ROOT_UNPARSED = frozenset({"groovy", "kotlin"})


def _error_share(root: Any, total_lines: int, language: str) -> float:
    """The share of lines the parse's top-level ERROR nodes cover; all of them when the root
    itself is one in a language of _ERROR_ROOT_UNPARSED (its children were counted, not it: such
    a Groovy file was one chunk defining two misnamed methods, a Kotlin one often none)."""
    if not root.has_error:
        return 0.0
    if root.type == "ERROR" and language in _ERROR_ROOT_UNPARSED:
        return 1.0
    rows = 0
    for child in root.children:
        if child.type == "ERROR" or child.is_missing:
            rows += _eff_end(child) - child.start_point.row + 1
    return rows / max(1, total_lines)


def chunk_code(
    path: str,
    text: str,
    language: str,
    *,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    overlap: int = OVERLAP_LINES,
) -> list[Chunk] | None:
    """Chunks of a source file at symbol boundaries, or None to ask for the regex fallback."""
    if language not in _GRAMMARS:
        return None
    if not text.strip():
        return []
    if len(text) > MAX_PARSE_CHARS:
        return None
    caps = Caps(max_lines, max_chars, overlap).normalized()
    lines = split_lines(text)
    if max(map(len, lines)) > MAX_PARSE_LINE:
        return None
    joined = "\n".join(lines)
    unparsable = _UNPARSABLE_LINES.get(language)
    if unparsable is not None:  # blanked to as many spaces: rows and byte offsets stay
        joined = unparsable.sub(lambda m: " " * len(m.group()), joined)
    src = joined.encode("utf-8", "replace")
    tree = _parse(language, src, len(lines))
    if tree is None and language == "c":  # C++ in a .h file
        language = "cpp"
        tree = _parse(language, src, len(lines))
    if tree is None:
        return None
    root = tree.root_node
    spec = _SPECS[language]
    collector = _Collector(spec, language, src)
    collector.walk(root, "", True)
    collector.table.sort()
    index = LineIndex(lines)
    partitioner = _Partitioner(spec, collector.defs, index, caps)
    pieces = partitioner.partition(list(root.named_children), 0, len(lines) - 1, "", 0)
    return pieces_to_chunks(index, pieces, collector.table, caps)


# Lines of a language's usual code that its grammar cannot parse, blanked for the parse only:
# Apple's bare `NS_ASSUME_NONNULL_BEGIN`/`_END` macros around nearly every Objective-C header made
# the `@interface` between them an ERROR, so no class or method of a header was a definition.
_UNPARSABLE_LINES: dict[str, re.Pattern[str]] = {
    "objc": re.compile(r"^[ \t]*NS_[A-Z_]+_(?:BEGIN|END)\b(?:\([^)\n]*\))?[ \t]*$", re.M),
}


def _parse(language: str, src: bytes, total_lines: int) -> Any | None:
    parser = _parser(language)
    if parser is None:
        return None
    tree = parser.parse(src)
    if _error_share(tree.root_node, total_lines, language) > MAX_ERROR_SHARE:
        return None
    return tree
