"""The transform pipeline: parse -> analyse -> rewrite/emit -> validate.

Pure text in, text out; no file system, no argv, no jax or brainpy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from batchify.analyse import analyse
from batchify.emit import emit
from batchify.harness import HarnessOptions
from batchify.parse import decode, parse
from batchify.validate import validate


@dataclass(frozen=True)
class TransformResult:
    text: str
    classes: tuple[str, ...]


def transform(
    source: bytes,
    path: str,
    *,
    classes: Iterable[str] = (),
    shared: Iterable[str] = (),
    command: str,
    header_path: str | None = None,
    harness: HarnessOptions | None = None,
) -> TransformResult:
    """Generate the batched module for ``source``; raises BatchifyError with diagnostics.

    ``path`` is what diagnostics name; ``header_path`` (default: ``path``) is what the
    generated module's header names.
    """
    text = decode(source, path)
    module = parse(text, path)
    ir = analyse(module, path, only=classes, shared=shared, functions=harness.functions() if harness else ())
    out = emit(ir, source_sha256=hashlib.sha256(source).hexdigest(), command=command,
               source_path=header_path or path, harness=harness)
    validate(out, path)
    return TransformResult(out, tuple(ir.targets))
