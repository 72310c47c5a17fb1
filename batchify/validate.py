"""Stage 5: refuse to hand out a module that does not compile (a batchify bug, BFY900)."""

from __future__ import annotations

from batchify.diagnostics import BatchifyError, Diagnostic


def validate(text: str, path: str) -> None:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise BatchifyError([Diagnostic(
            path, 1, 1, "BFY900",
            f"the generated module does not compile ({exc.msg} at generated line {exc.lineno}); "
            "this is a batchify bug: please report it with the source file",
        )]) from None
