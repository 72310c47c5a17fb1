"""The transform pipeline: parse -> analyse -> rewrite -> emit -> validate.

Pure text in, text out; no file system, no argv, no jax or brainpy.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

from batchify.analyse import analyse
from batchify.cstwalk import walks_kept
from batchify.diagnostics import BatchifyError, Diagnostic
from batchify.emit import emit
from batchify.rewrite import rewrite_module
from batchify.harness import HarnessOptions
from batchify.parse import MAX_DEPTH, decode, parse
from batchify.provenance import HEADER_SOURCE, source_digest
from batchify.validate import validate


class TransformResult(NamedTuple):
    text: str
    classes: tuple[str, ...]
    warnings: tuple[Diagnostic, ...] = ()  # what was left out (BFY019)


def transform(
    source: bytes,
    path: str,
    *,
    classes: Iterable[str] = (),
    shared: Iterable[str] = (),
    command: str,
    header_path: str | None = None,
    harness: HarnessOptions | None = None,
    functions: Iterable[str] = (),
) -> TransformResult:
    """Generate the batched module for ``source``; raises BatchifyError with diagnostics.

    ``path`` is what diagnostics name; ``header_path`` (default: ``path``) is what the
    generated module's header names.
    """
    def stages() -> TransformResult:
        text = decode(source, path)
        refuse_foreign_input(text, path)
        module = parse(text, path)
        ir = analyse(module, path, only=classes, shared=shared, functions=harness.functions() if harness else (),
                     drivers=functions)
        ir.shown_path = header_path or path
        code = rewrite_module(ir, harness)
        out = emit(code, source_sha256=source_digest(source), command=command, source_path=ir.shown_path)
        validate(out, path, text)
        return TransformResult(out, tuple(ir.targets), tuple(ir.warnings))

    try:
        with walks_kept():
            return with_deep_stack(stages)
    except Exception as exc:
        if not caused_by_recursion(exc):
            raise
        raise BatchifyError([Diagnostic(path, 1, 1, "BFY009", f"the code nests too deeply to transform "
                                        f"(batchify reads at most {MAX_DEPTH} levels)")]) from None


def refuse_foreign_input(text: str, path: str) -> None:
    """A Jupyter notebook (JSON that parses as one Python dict) or batchify's own output is no model
    source: say what it is, rather than that it holds no model class or its Variables are untracked."""
    header = HEADER_SOURCE.match(text.lstrip("\ufeff"))
    if header:
        raise BatchifyError([Diagnostic(path, 1, 1, "BFY004", f"this file is batchify's output (its header says "
                                        f"so); transform the model source it was generated from, {header.group(1)}")])
    if path.endswith(".ipynb"):
        raise BatchifyError([Diagnostic(path, 1, 1, "BFY004", "this is a Jupyter notebook; batchify reads Python "
                                        "source: export the model's cells first (jupyter nbconvert --to script "
                                        "NOTEBOOK.ipynb) and transform the .py file")])


def caused_by_recursion(exc: BaseException | None) -> bool:
    """A RecursionError, or an error raised while handling one (LibCST's repr of a deep node)."""
    seen = 0
    while exc is not None and seen < 50:
        if isinstance(exc, RecursionError):
            return True
        exc, seen = exc.__context__, seen + 1
    return False


T = TypeVar("T")
STACK_BYTES = 512 * 1024 * 1024  # reserved, not committed: only deep inputs touch it
RECURSION_LIMIT = 60_000


def with_deep_stack(function: Callable[[], T]) -> T:
    """Run ``function`` on a thread with a large stack and recursion limit: LibCST's visitors and
    code generator recurse once per nesting level, and parse.MAX_DEPTH levels take a few thousand
    frames. The main thread's stack (8 MiB) would overflow, killing the process."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            outcome["error"] = exc

    old_size, old_limit = threading.stack_size(), sys.getrecursionlimit()
    threading.stack_size(STACK_BYTES)
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=run, name="batchify-transform")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
