"""Load the ORIGINAL model classes of a source file without running its other code.

Research scripts train at import time, so importing the file is not an option. The
loader executes only the model classes and the module-level statements they need (the
same set the generated module copies), compiled with their original line numbers so
that tracebacks point into the user's file. Executing them imports brainpy.
"""

from __future__ import annotations

import ast
import contextlib
import sys
import types
from pathlib import Path

from batchify.analyse import analyse
from batchify.parse import decode, parse


def load_models(path: str | Path, module_name: str | None = None, only=(), functions=(), also=()) -> types.ModuleType:
    """A module object holding the model classes of ``path`` (and what they need), nothing else;
    with ``only``, just those classes and what they need; with ``functions``, the user's functions
    that drive a model instance too (``--function``), and ``__batchify_driven__``, what each drives:
    the caller binds the instance (never the script's own ``model = ...``, which is not run); with
    ``also``, the module-level definitions of those names (``Config``, ``SIZE``: what ``--init`` reads)."""
    path = Path(path)
    source = path.read_bytes()
    text = decode(source, str(path))
    ir = analyse(parse(text, str(path)), str(path), only=only, declarations_needed=False, drivers=functions,
                 also=also)
    keep = set(ir.source_lines)
    module_ast_names = {n: stmt for stmt in ir.module.body if hasattr(stmt, "name")
                        for n in [getattr(stmt.name, "value", None)] if n in ir.driven}
    keep |= {ir.positions[stmt].start.line for stmt in module_ast_names.values()}
    tree = ast.parse(text, filename=str(path))
    tree.body = [stmt for stmt in tree.body if _lines(stmt) & keep]
    name = module_name or f"batchify_original_{path.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    # dont_inherit: this file's `from __future__ import annotations` must not change the user's code.
    with as_script(path):
        exec(compile(tree, str(path), "exec", dont_inherit=True), module.__dict__)
    module.__batchify_driven__ = {name: (ir.driven[name], ir.driver_methods[name], name in ir.takes_instance)
                                  for name in ir.driven}
    return module


def load_generated(path: str | Path, module_name: str | None = None) -> types.ModuleType:
    """Import a generated module from its path (it stands alone by construction)."""
    import importlib.util

    path = Path(path)
    name = module_name or f"batchify_generated_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with as_script(path):
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def as_script(path: Path):
    """``sys.argv`` as if the file were run with no arguments while it loads: a script's module-level
    ``parser.parse_args()`` (which the model reads, ``args.gain``) gets its defaults, not batchify's
    own command line."""
    saved = sys.argv
    sys.argv = [str(path)]
    try:
        yield
    finally:
        sys.argv = saved


def _lines(stmt: ast.stmt) -> set[int]:
    """Where a statement may be said to start: its keyword or its first decorator."""
    return {stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))}
