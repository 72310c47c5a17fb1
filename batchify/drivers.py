"""The user's own single-example code: module-level functions that drive a model instance.

The seed question's script keeps a module-level ``model = SNN(...)`` and functions around it:
``step_run(i, x_single)`` calls ``model.step_run``, ``loss_fun(x_single, y_single)`` calls
``model.reset_state()`` and ``bm.for_loop`` over ``step_run``. Such a function is a method of the
model in all but name: with the instance as ``self`` it reads and writes the model's Variables
exactly as a method does. So each one named with ``--function`` (and each function of the file it
calls that drives the same instance) becomes a method of the instance's class, and from there on the
same rules rewrite it: ``loss_fun_pure(self, params, state, x_single, y_single)``, one example, its
state explicit. A function that drives no model is copied unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from batchify.cstwalk import walk
from batchify.diagnostics import Diagnostic


def module_instances(module: cst.Module, models: dict[str, cst.ClassDef]) -> dict[str, str]:
    """Module-level names bound once to an instance of a model class of the file: ``model = SNN(...)``."""
    bound: dict[str, list[str | None]] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                value = small.value
                for target in targets:
                    if isinstance(target, cst.Name):
                        cls = (value.func.value if isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                               and value.func.value in models else None)
                        bound.setdefault(target.value, []).append(cls)
    return {name: classes[0] for name, classes in bound.items() if len(classes) == 1 and classes[0]}


def names_read(func: cst.FunctionDef) -> set[str]:
    return {n.value for n in walk(func.body) if isinstance(n, cst.Name)}


class _AsMethod(cst.CSTTransformer):
    """The function with the instance as ``self`` and the other driving functions as its methods."""

    def __init__(self, instance: str, methods: dict[str, str], inherit):
        super().__init__()
        self.instance, self.methods, self.inherit = instance, methods, inherit
        self.depth = 0

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        if isinstance(updated, cst.CSTNode) and updated is not original_node:
            self.inherit(updated, original_node)  # diagnostics keep pointing at the user's line
        return updated

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if original_node.value == self.instance:
            return updated_node.with_changes(value="self")
        if original_node.value in self.methods:
            return cst.Attribute(cst.Name("self"), cst.Name(self.methods[original_node.value]))
        return updated_node

    # Names that are not references keep their spelling.
    def leave_Attribute(self, original_node, updated_node):
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Arg(self, original_node, updated_node):
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Param(self, original_node, updated_node):
        return updated_node.with_changes(name=original_node.name)


def driver_methods(module: cst.Module, models: dict[str, cst.ClassDef], names: Iterable[str], path: str,
                   positions, inherit, report) -> tuple[dict[str, list[cst.FunctionDef]], dict[str, str],
                                                         dict[str, str], list[str], list[Diagnostic]]:
    """For the functions ``names`` (``--function``): the methods to add to each model class, the
    method each function became (``{"loss_fun": "loss_fun", "step_run": "step_run_fn"}``), the
    instance each drives, the functions that drive no model (copied as they are) and diagnostics."""
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    instances = module_instances(module, models)
    diagnostics: list[Diagnostic] = []
    plain: list[str] = []

    def driven(func: cst.FunctionDef, seen: frozenset[str] = frozenset()) -> str | None:
        """The instance a function drives, directly or through the functions of the file it calls."""
        read = names_read(func)
        direct = [n for n in read if n in instances]
        if direct:
            return direct[0]
        for name in sorted(read & set(functions)):
            if name not in seen:
                found = driven(functions[name], seen | {func.name.value})
                if found:
                    return found
        return None

    chosen: dict[str, str] = {}  # function -> instance
    todo = list(dict.fromkeys(names))
    while todo:
        name = todo.pop(0)
        if name in chosen:
            continue
        func = functions.get(name)
        if func is None:
            diagnostics.append(Diagnostic(path, 1, 1, "BFY015", f"--function {name}: no module-level function of "
                                          f"that name (functions here: {', '.join(sorted(functions)) or 'none'})"))
            continue
        instance = driven(func)
        if instance is None:
            plain.append(name)  # drives no model: copied unchanged
            continue
        chosen[name] = instance
        todo += [n for n in sorted(names_read(func) & set(functions)) if driven(functions[n])]
    by_class: dict[str, list[cst.FunctionDef]] = {}
    renamed: dict[str, str] = {}
    for name, instance in chosen.items():
        cls = models[instances[instance]]
        taken = {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        renamed[name] = f"{name}_fn" if name in taken else name
    order = list(functions)
    for name, instance in sorted(chosen.items(), key=lambda item: order.index(item[0])):
        func = functions[name]
        others = {n: renamed[n] for n in chosen if chosen[n] == instance and n != name}
        if any(p.name.value == instance for p in (*func.params.params, *func.params.kwonly_params)):
            report(func.name, "BFY015", f"{name}() takes a parameter named like the model instance "
                   f"'{instance}'; rename the parameter")
            continue
        method = func.visit(_AsMethod(instance, others, inherit))
        params = method.params
        method = method.with_changes(
            name=cst.Name(renamed[name]), decorators=[],
            params=params.with_changes(params=[cst.Param(cst.Name("self"), comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" "))) if params.params or params.star_arg
                not in (cst.MaybeSentinel.DEFAULT, None) or params.kwonly_params else cst.Param(cst.Name("self")),
                *params.params]))
        inherit(method, func)
        by_class.setdefault(instances[instance], []).append(method)
    return by_class, renamed, chosen, plain, diagnostics


def returns_aux(func: cst.FunctionDef) -> bool:
    """Whether a loss returns ``(loss, aux, ...)``: its returns are tuples of two or more."""
    returns = [n for n in walk(func.body) if isinstance(n, cst.Return) and n.value is not None]
    return bool(returns) and all(isinstance(r.value, cst.Tuple) and len(r.value.elements) >= 2 for r in returns)
