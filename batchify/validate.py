"""Stage 5: refuse to hand out a module that does not compile or reads a name it never binds.

Both are batchify bugs (BFY900, exit 123): the generated module stands alone, so every name it
reads must be bound in it or be a builtin. CPython's ``symtable`` answers that from the text in
one C pass (a LibCST scope analysis of the output would cost as much as the whole transform).
"""

from __future__ import annotations

import builtins
import re
import symtable
import warnings

import _symtable

from batchify.diagnostics import BatchifyError, Diagnostic
from batchify.names import RUNTIME, RUNTIME_API

BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__",
                                       "__package__", "__builtins__", "__path__"}


def validate(text: str, path: str, source: str | None = None) -> None:
    """``source``: the text it was generated from; a name the source never binds either is the
    source's own error (BFY012 at its first use), not batchify's."""
    try:
        with warnings.catch_warnings():  # (the source's own '\l' in a string, copied: see parse.check_python)
            warnings.simplefilter("ignore", SyntaxWarning)
            compile(text, path, "exec", dont_inherit=True)
            table = _symtable.symtable(text, path, "exec")
    except SyntaxError as exc:
        raise BatchifyError([Diagnostic(
            path, 1, 1, "BFY900",
            f"the generated module does not compile ({exc.msg} at generated line {exc.lineno}); "
            "this is a batchify bug: please report it with the source file",
        )]) from None
    unknown = sorted(set(re.findall(rf"(?<![\w.]){RUNTIME}\.(\w+)", text)) - RUNTIME_API)
    if unknown:  # a runtime helper the generator names but the runtime does not define
        raise BatchifyError([Diagnostic(
            path, 1, 1, "BFY900", f"the generated module calls {', '.join(f'{RUNTIME}.{n}' for n in unknown)}, "
            "which batchify.runtime does not define; this is a batchify bug: please report it with the source file")])
    missing = sorted(unbound_names(table))
    if missing and source is not None:
        try:
            theirs = unbound_names(_symtable.symtable(source, path, "exec"))
        except SyntaxError:
            theirs = set()
        if set(missing) <= theirs:
            diagnostics = []
            for name in missing:
                match = re.search(rf"(?<![\w.]){re.escape(name)}\b", source)
                line = source.count("\n", 0, match.start()) + 1 if match else 1
                column = match.start() - (source.rfind("\n", 0, match.start()) + 1) + 1 if match else 1
                diagnostics.append(Diagnostic(path, line, column, "BFY012", f"'{name}' is read but never defined "
                                              "in the source (a NameError when this code runs); define it"))
            raise BatchifyError(diagnostics)
    if missing:
        name = missing[0]
        match = re.search(rf"(?<![\w.]){re.escape(name)}\b", text)
        line = text.count("\n", 0, match.start()) + 1 if match else 1
        raise BatchifyError([Diagnostic(
            path, 1, 1, "BFY900",
            f"the generated module reads {', '.join(repr(n) for n in missing)}, which it never binds (generated "
            f"line {line}); this is a batchify bug: please report it with the source file",
        )])


def unbound_names(top) -> set[str]:
    """Global names read anywhere in the module that no module-level statement binds.

    ``top``: the compiler's own table (``_symtable.symtable``: names -> flags, and children). Its
    flags are read as ``symtable.Symbol`` reads them (``is_referenced``, ``is_global``, ...) without
    making Symbols: each one scans all of its table's children (for ``is_namespace``), quadratic in
    a class with thousands of methods (1.4 s at 20,000 lines)."""
    def scope(flags: int) -> int:
        return (flags >> symtable.SCOPE_OFF) & symtable.SCOPE_MASK

    globals_ = (symtable.GLOBAL_IMPLICIT, symtable.GLOBAL_EXPLICIT)
    raw = top
    bound = {name for name, flags in raw.symbols.items()
             if flags & (symtable.DEF_LOCAL | symtable.DEF_IMPORT)}
    wanted: set[str] = set()
    stack = [raw]
    while stack:
        table = stack.pop()
        stack.extend(table.children)
        for name, flags in table.symbols.items():
            if not flags & symtable.USE:
                continue
            if table is raw or scope(flags) in globals_ or (
                    table.type == _symtable.TYPE_CLASS and not flags & symtable.DEF_LOCAL
                    and scope(flags) != symtable.FREE):
                wanted.add(name)
    return wanted - bound - BUILTINS
