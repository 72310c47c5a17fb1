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

from batchify.cstwalk import Transformer, walk
from batchify.diagnostics import Diagnostic


def module_instances(module: cst.Module, models: dict[str, cst.ClassDef]) -> dict[str, str]:
    """Module-level names bound once to an instance of a model class of the file: ``model = SNN(...)``."""
    bound: dict[str, list[str | None]] = {}
    for stmt in module.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) in (cst.Assign, cst.AnnAssign):
                targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
                value = small.value
                for target in targets:
                    if type(target) is cst.Name:
                        cls = (value.func.value if type(value) is cst.Call and type(value.func) is cst.Name
                               and value.func.value in models else None)
                        bound.setdefault(target.value, []).append(cls)
    return {name: classes[0] for name, classes in bound.items() if len(classes) == 1 and classes[0]}


def names_read(func: cst.FunctionDef) -> set[str]:
    return {n.value for n in walk(func.body) if type(n) is cst.Name}


class _AsMethod(Transformer):
    """The function with the instance as ``self`` and the other driving functions as its methods:
    ``model.step_run(i, x)`` -> ``self.step_run(i, x)``, ``model(x)`` -> ``self(x)`` (its ``__call__``),
    ``step_run(i, x)`` -> ``self.step_run_fn(i, x)`` (``step_run(model, i, x)`` too, for a function
    that takes the instance as its first parameter)."""

    def __init__(self, instance: str, methods: dict[str, str], inherit, takes_instance: set[str] = frozenset()):
        super().__init__()
        self.instance, self.methods, self.inherit = instance, methods, inherit
        self.takes_instance = takes_instance

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

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = original_node.func
        if (type(func) is cst.Name and func.value in self.takes_instance and original_node.args
                and type(original_node.args[0].value) is cst.Name
                and original_node.args[0].value.value == self.instance):
            return updated_node.with_changes(args=updated_node.args[1:])  # step_run(model, i, x): a method now
        args = original_node.args
        if (len(args) >= 2 and type(args[0].value) is cst.Name and args[0].value.value in self.takes_instance
                and type(args[1].value) is cst.Name and args[1].value.value == self.instance):
            # functools.partial(step_run, model, x_single=x): the instance is self now
            return updated_node.with_changes(args=[updated_node.args[0], *updated_node.args[2:]])
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
                                                         dict[str, str], list[str], list[Diagnostic], frozenset[str]]:
    """For the functions ``names`` (``--function``): the methods to add to each model class, the
    method each function became (``{"loss_fun": "loss_fun", "step_run": "step_run_fn"}``), the
    instance each drives, the functions that drive no model (copied as they are), diagnostics and the
    functions that take the instance as their first parameter."""
    functions = {s.name.value: s for s in module.body if type(s) is cst.FunctionDef}
    instances = module_instances(module, models)
    diagnostics: list[Diagnostic] = []
    plain: list[str] = []

    param_classes: dict[str, str] = {}  # a function taking the instance first -> the instance's class

    def instance_parameter(func: cst.FunctionDef) -> str | None:
        """``def loss(model, x, y)``: a first parameter annotated with a model class, or used as an
        instance of exactly one model class of the file (the methods called on it are its methods)."""
        if not func.params.params:
            return None
        param = func.params.params[0]
        first = param.name.value
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is cst.Name and annotation.value in models:
            param_classes[func.name.value] = annotation.value
            return first
        called = {n.func.attr.value for n in walk(func.body) if type(n) is cst.Call
                  and type(n.func) is cst.Attribute and type(n.func.value) is cst.Name
                  and n.func.value.value == first}
        if not called:
            return None
        fits = [c for c, node in models.items() if called - {"reset_state", "reset", "update"}
                <= {s.name.value for s in node.body.body if type(s) is cst.FunctionDef}]
        if len(fits) == 1:
            param_classes[func.name.value] = fits[0]
            return first
        return None

    def driven(func: cst.FunctionDef, seen: frozenset[str] = frozenset()) -> str | None:
        """The instance a function drives, directly or through the functions of the file it calls."""
        read = names_read(func)
        direct = [n for n in read if n in instances]
        if direct:
            return direct[0]
        given = instance_parameter(func)
        if given is not None:
            return given
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
            diagnostics.append(Diagnostic(path, 1, 1, "BFY017", f"--function {name}: no module-level function of "
                                          f"that name (functions here: {', '.join(sorted(functions)) or 'none'})"))
            continue
        several = sorted(n for n in names_read(func) if n in instances)
        if len(several) > 1:  # one function becomes a method of one model: which of them is not ours to pick
            report(func.name, "BFY017", f"--function {name} drives {len(several)} model instances "
                   f"({', '.join(several)}); batchify makes a function a method of the one model it drives: "
                   f"build them in one model class of the file (a network holding "
                   f"{', '.join(instances[n] for n in several)} as children) and drive an instance of that")
            plain.append(name)  # (copied, so that the error stands where the function does)
            continue
        instance = driven(func)
        if instance is None:
            plain.append(name)  # drives no model: copied unchanged
            continue
        chosen[name] = instance
        todo += [n for n in sorted(names_read(func) & set(functions)) if driven(functions[n])]
    by_class: dict[str, list[cst.FunctionDef]] = {}
    renamed: dict[str, str] = {}
    def class_of(name: str) -> str:
        return param_classes.get(name) or instances[chosen[name]]

    for name, instance in chosen.items():
        cls = models[class_of(name)]
        taken = {s.name.value for s in cls.body.body if type(s) is cst.FunctionDef}
        renamed[name] = f"{name}_fn" if name in taken else name
    order = list(functions)
    for name, instance in sorted(chosen.items(), key=lambda item: order.index(item[0])):
        func = functions[name]
        others = {n: renamed[n] for n in chosen if class_of(n) == class_of(name) and n != name}
        takes_instance = name in param_classes
        if not takes_instance and any(p.name.value == instance for p in (*func.params.params, *func.params.kwonly_params)):
            report(func.name, "BFY017", f"{name}() takes a parameter named like the model instance "
                   f"'{instance}'; rename the parameter")
            continue
        method = func.visit(_AsMethod(instance, others, inherit, set(param_classes)))
        params = method.params
        if takes_instance:  # its first parameter is the instance: self now
            params = params.with_changes(params=params.params[1:])
        method = method.with_changes(
            name=cst.Name(renamed[name]), decorators=[],
            params=params.with_changes(params=[cst.Param(cst.Name("self"), comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" "))) if params.params or params.star_arg
                not in (cst.MaybeSentinel.DEFAULT, None) or params.kwonly_params else cst.Param(cst.Name("self")),
                *params.params]))
        inherit(method, func)
        by_class.setdefault(class_of(name), []).append(method)
    return by_class, renamed, chosen, plain, diagnostics, frozenset(param_classes)


def returns_aux(func: cst.FunctionDef) -> bool:
    """Whether a loss returns ``(loss, aux, ...)``: its returns are tuples of two or more (its own
    returns: a step function defined inside it, `def step(u): return model.update(u)`, returns its own)."""
    nested = {id(n) for d in walk(func.body) if type(d) in (cst.FunctionDef, cst.ClassDef) for n in walk(d.body)}
    returns = [n for n in walk(func.body) if type(n) is cst.Return and n.value is not None and id(n) not in nested]
    # `res = (loss, err); return res`: the tuples a returned name is bound to
    bound = {}
    for n in walk(func.body):
        if type(n) is cst.Assign and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name:
            bound.setdefault(n.targets[0].target.value, []).append(n.value)

    def is_tuple(value: cst.BaseExpression) -> bool:
        if type(value) is cst.Name and value.value in bound:
            values = [v for v in bound[value.value] if type(v) is not cst.Name]
            return bool(values) and all(is_tuple(v) for v in values)
        return type(value) is cst.Tuple and len(value.elements) >= 2

    return bool(returns) and all(is_tuple(r.value) for r in returns)
