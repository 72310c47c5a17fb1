"""Stage 1: source bytes to a LibCST module, or BFY001/BFY003/BFY009 diagnostics.

CPython's own parser reads the text first: what it refuses is not Python (LibCST accepts a NUL
byte, ``*property`` or a repeated keyword), and it measures how deeply the code nests before
LibCST, whose visitors recurse once per level, ever sees it.
"""

from __future__ import annotations

import ast
import unicodedata
import warnings

import libcst as cst

from batchify.cstwalk import Transformer
from batchify.diagnostics import BatchifyError, Diagnostic

# How deeply expressions and blocks may nest (CPython's syntax tree levels). Real models stay far
# below; past it LibCST's recursion would need more stack than a pre-commit hook should take.
MAX_DEPTH = 250


def decode(source: bytes, path: str) -> str:
    try:
        return source.decode("utf-8-sig")  # a leading BOM is no character of the code, as for Python
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        column = exc.start - (source.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BatchifyError(
            [Diagnostic(path, line, column, "BFY003", f"the source is not valid UTF-8 ({exc.reason} at byte {exc.start})")]
        ) from None


def check_python(text: str, path: str) -> None:
    """Refuse what CPython would not compile (BFY001) and what nests past MAX_DEPTH (BFY009)."""
    with warnings.catch_warnings():  # Python's own warnings about the code ('\l' in a string) are
        warnings.simplefilter("ignore", SyntaxWarning)  # Python's to show when it runs: not batchify's lines
        _check_python(text, path)


def _check_python(text: str, path: str) -> None:
    try:
        tree = ast.parse(text, path)
    except SyntaxError as exc:
        raise syntax_error(exc, path) from None
    except ValueError as exc:  # "source code string cannot contain null bytes"
        line = text.count("\n", 0, text.find("\0")) + 1 if "\0" in text else 1
        raise BatchifyError([Diagnostic(path, line, 1, "BFY001", f"syntax error: {exc}")]) from None
    except (RecursionError, MemoryError):
        raise BatchifyError([Diagnostic(path, 1, 1, "BFY009", f"the code nests too deeply for Python's own parser; "
                                        f"batchify reads at most {MAX_DEPTH} levels")]) from None
    deepest = nesting_past(tree, MAX_DEPTH)
    if deepest is not None:
        raise BatchifyError([Diagnostic(
            path, getattr(deepest, "lineno", 1), getattr(deepest, "col_offset", 0) + 1, "BFY009",
            f"this code nests more than {MAX_DEPTH} levels deep (a very long chain of operators, attribute "
            "accesses or calls); split it into several statements")])
    try:  # the compiler's own checks (a repeated keyword argument, a misplaced starred expression)
        compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise syntax_error(exc, path) from None


def syntax_error(exc: SyntaxError, path: str) -> BatchifyError:
    return BatchifyError([Diagnostic(path, exc.lineno or 1, max(exc.offset or 1, 1), "BFY001",
                                     f"syntax error: {exc.msg}")])


def nesting_past(tree: ast.AST, limit: int) -> ast.AST | None:
    """The first node deeper than ``limit`` levels, found without recursion (linear in the tree)."""
    stack = [(tree, 0, tree)]
    while stack:
        node, depth, where = stack.pop()
        where = node if hasattr(node, "lineno") else where  # operators and contexts have no position
        if depth > limit:
            return where
        stack.extend((child, depth + 1, where) for child in ast.iter_child_nodes(node))
    return None


def parse(text: str, path: str) -> cst.Module:
    check_python(text, path)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).splitlines()[0] if str(exc.message) else "invalid syntax"
        raise BatchifyError(
            [Diagnostic(path, exc.raw_line, exc.raw_column + 1, "BFY001", f"syntax error: {first}")]
        ) from None
    return module if text.isascii() else module.visit(_NormalisedNames())


class _NormalisedNames(Transformer):
    """Identifiers as Python reads them: NFKC-normalised (PEP 3131), so ``self.Ｖ`` is ``self.V``."""

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if updated_node.value.isascii():
            return updated_node
        return updated_node.with_changes(value=unicodedata.normalize("NFKC", updated_node.value))
