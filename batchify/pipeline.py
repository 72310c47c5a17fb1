"""The transform pipeline: parse -> analyse -> rewrite/emit -> validate.

Pure text in, text out; no file system, no argv, no jax or brainpy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from batchify.analyse import analyse
from batchify.emit import emit
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
) -> TransformResult:
    """Generate the batched module for ``source``; raises BatchifyError with diagnostics."""
    text = decode(source, path)
    module = parse(text, path)
    ir = analyse(module, path, only=classes, shared=shared)
    out = emit(ir, source_sha256=hashlib.sha256(source).hexdigest(), command=command)
    validate(out, path)
    return TransformResult(out, tuple(ir.targets))
