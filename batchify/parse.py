"""Stage 1: source bytes to a LibCST module, or BFY001/BFY003 diagnostics."""

from __future__ import annotations

import libcst as cst

from batchify.diagnostics import BatchifyError, Diagnostic


def decode(source: bytes, path: str) -> str:
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        column = exc.start - (source.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BatchifyError(
            [Diagnostic(path, line, column, "BFY003", f"the source is not valid UTF-8 ({exc.reason} at byte {exc.start})")]
        ) from None


def parse(text: str, path: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).splitlines()[0] if str(exc.message) else "invalid syntax"
        raise BatchifyError(
            [Diagnostic(path, exc.raw_line, exc.raw_column + 1, "BFY001", f"syntax error: {first}")]
        ) from None
