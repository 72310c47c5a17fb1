"""Stage 3: rewrite. The analysed model (``ir.ModuleIR``) becomes the code of the generated module
(``ir.ModuleCode``), decided here and only laid out by the emit stage.

- ``methods``: the rewrite rules for a stateful method's body (``batchify.rules`` lists them), a
  ``def m(self, ...)`` becoming ``def m_pure(self, params, state, ...) -> (state, result)``;
- ``classes``: the batched class around them (fields, declarations, constructor, wrappers);
- here: the module around the classes (imports, the source's support code, harnesses).
"""

from __future__ import annotations

import re

import libcst as cst

from batchify.cstwalk import walk
from batchify.diagnostics import BatchifyError, Diagnostic
from batchify.harness import HarnessOptions, harness_classes
from batchify.harness import context as harness_context
from batchify.ir import BuiltinClassCode, LossHarnessCode, ModuleCode, ModuleIR, SupportCode
from batchify.names import RUNTIME, RUNTIME_CONTRACT
from batchify.rewrite.classes import ClassRewriter, code, statement_code, tuple_literal
from batchify.rewrite.methods import identity_through_views, ids_handed_on

# What every generated module imports: binding -> what it is bound to, and the import line.
# The runtime is imported under its contract: ``from batchify.runtime import v1 as bfy``.
STANDARD_IMPORTS = {"NamedTuple": "typing.NamedTuple", "jax": "jax", RUNTIME: f"batchify.runtime.v{RUNTIME_CONTRACT}"}
STANDARD_IMPORT_LINES = ("from typing import NamedTuple", "import jax",
                         f"from batchify.runtime import v{RUNTIME_CONTRACT} as {RUNTIME}")
# What a training harness adds (optax only for its built-in cross-entropy).
HARNESS_IMPORTS = {"jnp": "jax.numpy", "optax": "optax", "bm": "brainpy.math"}
HARNESS_IMPORT_LINES = {"jnp": "import jax.numpy as jnp", "optax": "import optax", "bm": "import brainpy.math as bm",
                        "bp": "import brainpy as bp"}
# Names the rewritten methods may use (``jnp.full_like`` for ``self.V.fill_(x)``, ``bm.NonBatchingMode()``
# for ``self.mode``): imported when they do, as the source spells them or else as here.
REWRITE_NAMES = {"jnp": "jax.numpy", "bm": "brainpy.math", "bp": "brainpy"}


def import_bindings(stmt: cst.CSTNode) -> list[tuple[str, str, cst.ImportAlias]]:
    """(bound name, what it is bound to, alias) for each name an import statement binds."""
    out = []
    if type(stmt) is not cst.SimpleStatementLine:
        return out
    for small in stmt.body:
        if type(small) is cst.Import:
            for al in small.names:
                dotted = "".join(code(al.name).split())  # `import brainpy .math` binds brainpy.math
                if al.asname is not None:
                    out.append((al.asname.name.value, dotted, al))
                else:
                    out.append((dotted.split(".")[0], dotted.split(".")[0], al))
        elif type(small) is cst.ImportFrom and type(small.names) is not cst.ImportStar and not small.relative:
            module = "".join(code(small.module).split()) if small.module is not None else ""
            for al in small.names:
                nm = code(al.name)
                bound = al.asname.name.value if al.asname is not None else nm
                out.append((bound, f"{module}.{nm}", al))
    return out


def support_code(ir: ModuleIR, diagnostics: list[Diagnostic],
                 extra_imports: dict[str, str]) -> tuple[tuple[str, ...], tuple[SupportCode, ...]]:
    """The import statements and the module-level code of the source the classes need."""
    standard = {**STANDARD_IMPORTS, **extra_imports}
    reserved = set(standard)
    for c in ir.targets:
        cls = ir.classes[c]
        reserved |= {cls.params_name, cls.state_name, cls.batched_name}
    reserved |= {f"{n}{suffix}" for n in ir.library_targets for suffix in ("Params", "State", "Batched")}
    imports: list[str] = []
    rest: list[cst.CSTNode] = []
    # `from __future__ import annotations` binds no name the code reads, yet changes what it means
    # (annotations not evaluated: `-> Rate` inside RateBatched, renamed, would not exist yet).
    future = [small for stmt in ir.module.body if type(stmt) is cst.SimpleStatementLine for small in stmt.body
              if type(small) is cst.ImportFrom and small.module is not None and code(small.module) == "__future__"]
    imports += [f"from __future__ import {', '.join(code(al.name) for al in small.names)}" for small in future]
    for stmt in ir.support:
        if type(stmt) is cst.SimpleStatementLine and any(small in future for small in stmt.body):
            continue
        bindings = import_bindings(stmt)
        if bindings:
            keep = []
            for bound, target, alias in bindings:
                if standard.get(bound) == target:
                    continue  # already imported by the generated module
                if bound in reserved:
                    _clash(ir, alias, bound, diagnostics)
                    continue
                keep.append(alias)
            if keep:
                small = stmt.body[0]
                keep = [al.with_changes(comma=cst.MaybeSentinel.DEFAULT) for al in keep]
                if type(small) is cst.ImportFrom:
                    small = small.with_changes(names=keep, lpar=None, rpar=None)
                else:
                    small = small.with_changes(names=keep)
                imports.append(statement_code(stmt.with_changes(body=[small])))
            continue
        if type(stmt) in (cst.FunctionDef, cst.ClassDef) and stmt.name.value in reserved:
            _clash(ir, stmt.name, stmt.name.value, diagnostics)
        # (a helper class stays a verbatim copy: verify runs the source's own in its place, share_source_classes)
        rest.append(stmt if type(stmt) is cst.ClassDef else identity_through_views(ir, stmt, None))
    # Every module-level binding of a reserved name in the source would shadow ours.
    for stmt in ir.module.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Assign:
                    for t in small.targets:
                        if type(t.target) is cst.Name and t.target.value in reserved and stmt in ir.support:
                            _clash(ir, t.target, t.target.value, diagnostics)
    support = tuple(SupportCode(statement_code(stmt), type(stmt) is cst.SimpleStatementLine,
                                type(stmt) in (cst.FunctionDef, cst.ClassDef)) for stmt in rest)
    extra_lines = [HARNESS_IMPORT_LINES[name] for name in extra_imports]
    return (*STANDARD_IMPORT_LINES, *dict.fromkeys(extra_lines), *imports), support


def _clash(ir: ModuleIR, node: cst.CSTNode, bound: str, diagnostics: list[Diagnostic]) -> None:
    pos = ir.positions.get(node)
    line, col = (pos.start.line, pos.start.column + 1) if pos else (1, 1)
    diagnostics.append(Diagnostic(ir.path, line, col, "BFY011", f"'{bound}' is a name the generated module "
                                  "defines or imports; rename it in the source"))


def rewrite_module(ir: ModuleIR, harness: HarnessOptions | None = None) -> ModuleCode:
    """The generated module's code; every problem found on the way is one BatchifyError."""
    diagnostics: list[Diagnostic] = []
    classes = []
    for name in ir.targets:
        rewriter = ClassRewriter(ir, ir.classes[name])
        classes.append(rewriter.code())
        diagnostics.extend(rewriter.diagnostics)
    harnesses, loss_harnesses = [], []
    if harness is not None and ir.driven:  # the user's own loss: the harness trains on it
        chosen = [flag for flag in harness.flags()[1:] if flag.startswith("--") and flag not in ("--harness-steps",)]
        if chosen:
            diagnostics.append(Diagnostic(ir.path, 1, 1, "BFY013", f"harness: with --function the harness trains on "
                                          f"your own loss; {', '.join(chosen)} would not be used, leave it out"))
        loss_harnesses = loss_harness_code(ir, diagnostics)
    elif harness is not None:
        for problem in harness.problems():
            diagnostics.append(Diagnostic(ir.path, 1, 1, "BFY013", f"harness: {problem}"))
        if not diagnostics:
            for name in harness_classes(ir):
                h = harness_context(ir, ir.classes[name], harness, diagnostics)
                if h is not None:
                    harnesses.append(h)
    extra = {}
    for binding, module in REWRITE_NAMES.items():
        if any(re.search(rf"(?<![\w.]){binding}\.", block) for c in classes for block in c.body):
            extra[binding] = module
    if harnesses or loss_harnesses:
        extra["jnp"] = HARNESS_IMPORTS["jnp"]
        if any("optax." in h.loss_expr for h in harnesses):
            extra["optax"] = HARNESS_IMPORTS["optax"]
    builtins = tuple(BuiltinClassCode(n, f"{n}Batched", builtin, (
        f"{RUNTIME}.BuiltinBatched", f"model={n}",
        *([f"late={tuple_literal(list(late))}"] if (late := ir.library_late.get(n)) else [])))
        for n, builtin in ir.library_targets.items())
    imports, support = support_code(ir, diagnostics, extra)
    diagnostics.extend(ids_handed_on(ir))
    if diagnostics:
        unique = sorted(set(diagnostics), key=lambda d: (d.line, d.column, d.code, d.message))
        raise BatchifyError(unique)
    return ModuleCode(imports=imports, support=support, classes=tuple(classes), builtin_classes=builtins,
                      harnesses=tuple(harnesses), loss_harnesses=tuple(loss_harnesses))


def loss_harness_code(ir: ModuleIR, diagnostics: list[Diagnostic]) -> list[LossHarnessCode]:
    """A harness per loss named with --function: it trains on the user's loss, taking (x, y) per example."""
    out = []
    for cls in (ir.classes[n] for n in ir.targets):
        for method, has_aux in cls.losses.items():
            function = next(f for f, m in ir.driver_methods.items() if m == method)
            node = cls.methods[method].node
            args = tuple(p.name.value for p in node.params.params[1:])
            if len(args) != 2:
                pos = ir.positions.get(node)
                diagnostics.append(Diagnostic(ir.path, pos.start.line if pos else 1, 1, "BFY013", (
                    f"harness: {function}() takes {len(args)} per-example arguments; a harness trains on a "
                    "loss of one input and one target, (x, y)")))
                continue
            if cls.random:  # every example would start from the template's one key: one noise draw for all
                pos = ir.positions.get(node)
                diagnostics.append(Diagnostic(ir.path, pos.start.line if pos else 1, 1, "BFY013", (
                    f"harness: {function}() drives {cls.name}, which "
                    + ("holds BrainPy built-ins (whose code may draw from BrainPy's random stream)"
                       if ir.all_libraries(cls) and not any(m.draws for m in ir.all_methods(cls).values())
                       else "draws random numbers")
                    + ", and the --function harness does not give each example its own random key yet (every "
                    f"example would get the same noise); train with {cls.batched_name}.{method}_grad, which "
                    "does, or with the --harness of the class itself")))
                continue
            has_state = any(f.kind == "state" for f in ir.all_fields(cls)) or ir.all_children(cls) \
                or ir.all_libraries(cls)
            resets = any(type(n) is cst.Call and type(n.func) is cst.Attribute
                         and n.func.attr.value in ("reset_state", "reset") for n in walk(node))
            if has_state and not resets:  # (model.reset_state(), BrainPy's own one too, or bp.reset_state(model))
                # The harness starts every example from a reset; a loss that carries the state on from
                # whatever ran before would train on another loss than the one verify checks.
                pos = ir.positions.get(node)
                diagnostics.append(Diagnostic(ir.path, pos.start.line if pos else 1, 1, "BFY013", (
                    f"harness: {function}() does not reset {cls.name}, and the harness starts every example "
                    "from its reset state: it would train on another loss than yours; call "
                    f"{ir.driven.get(function, 'model')}.reset_state() at the top of {function}() (as a training "
                    f"loss of one example does), or train with {cls.batched_name}.{method}_grad, which runs it as "
                    "written")))
                continue
            out.append(LossHarnessCode(f"{cls.name}Harness", cls.batched_name,
                                       ("bfy.LossHarness", f"model={cls.batched_name}", *(["has_aux=True"] if has_aux else [])),
                                       function, method, args, has_aux))
    return out
