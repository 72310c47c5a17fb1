"""Stage 3, the classes: a model class's batched class, as code for the emit stage (``ir.ClassCode``).

``ClassRewriter`` decides what the batched class holds: its Params/State fields, the class
statement's bases and declarations (``bfy.Batched`` reads them), the rewritten constructor
(``ConstructorRewriter``), each stateful method's pure form (``methods.rewrite_method``) and the
one-line ``bfy.batched_method`` wrapper that names it, each preceded by the source lines it came from.
"""

from __future__ import annotations

import libcst as cst

from batchify.analyse import RESERVED, element_pairs, is_super_call, self_name_of
from batchify.cstwalk import Transformer, assigned, self_path, walk
from batchify.diagnostics import Diagnostic
from batchify.ir import ClassCode, FieldLine, ModelClass, ModuleIR
from batchify.names import (RUNTIME, SHARED_CLOCK_PARAMS, SHARED_DICT_PARAMS, STATE_FACTORIES, STATE_VARIABLES,
                            VARIABLE_CONTAINERS, pure_name)
from batchify.rewrite.methods import (
    identity_through_views,
    keyword_arg,
    rewrite_context_property,
    rewrite_method,
    with_example_for_holders,
)


def dict_literal(mapping: dict[str, str]) -> str:
    return "{" + ", ".join(f'"{k}": "{v}"' for k, v in sorted(mapping.items())) + "}"


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def statement_code(node: cst.CSTNode) -> str:
    """A statement's code without the blank lines and comments that led it in the source."""
    if hasattr(node, "leading_lines"):
        node = node.with_changes(leading_lines=[])
    return code(node).strip("\n")


def tuple_literal(items: list[str]) -> str:
    if len(items) == 1:
        return f'("{items[0]}",)'
    return "(" + ", ".join(f'"{i}"' for i in items) + ")"


def attribute_name(field_name: str) -> str:
    """The batched class's attribute for a field: a Variable named like a member the batched class
    defines (``self.state``) gets a trailing underscore (``self.state_``); its State field keeps the name."""
    return f"{field_name}_" if field_name in RESERVED else field_name


GROUP_UPDATE = '''def update_pure(self, params, state, *args):
    """One example of BrainPy's own group update (projections, then dynamics, then the rest)."""
    return self.library.call(params, state, super().update, *args)'''


class ClassRewriter:
    def __init__(self, ir: ModuleIR, cls: ModelClass):
        self.ir = ir
        self.cls = cls
        self.diagnostics: list[Diagnostic] = []
        # A plain attribute named like a member of the batched class (`self.params = params`, a
        # configuration object) would hide that member: it is `self.params_` on the batched class.
        init = self.init_node = next((s for s in cls.node.body.body
                                      if type(s) is cst.FunctionDef and s.name.value == "__init__"), None)
        self.init_self = (self_name_of(init) or "self") if init is not None else "self"
        own = {f.name for f in ir.all_fields(cls)}
        builders = [init, *(cls.methods[h].node for h in cls.construction_helpers)] if init is not None else []
        self.plain_renamed = {t[0]: t[0] + "_" for b in builders for n in walk(b.body)
                              for target in assigned(n) for t in [self_path(target, self.init_self)]
                              if t and len(t) == 1 and t[0] in RESERVED and t[0] not in own}
        # A model run as library code by a parent is the copied original there (`self.N = LIF(n)`).
        own = {c.name for c in ir.chain(cls)}
        self.renamer = ModelNameRenamer({n: ir.classes[n].batched_name for n in ir.targets
                                         if n in own or n not in ir.library_models}, self.plain_renamed)

    def renamed(self, node: cst.CSTNode, source: cst.CSTNode | None = None) -> cst.CSTNode:
        """``node`` naming the batched classes. ``source``: the method ``node`` was rewritten from,
        whose names (walked already) say whether it has any to rename: a rewrite adds none."""
        # A walk is much cheaper than a transform: most methods never name a model class.
        if not any(type(n) is cst.Name and (n.value in self.renamer.names or n.value in self.plain_renamed)
                   for n in walk(node if source is None else source)):
            return node
        return node.visit(self.renamer)

    def code(self) -> ClassCode:
        ir, cls = self.ir, self.cls
        fields = ir.all_fields(cls)
        child_cls = {ch.name: ir.classes[ch.class_name] for ch in ir.all_children(cls)}
        libraries = ir.all_libraries(cls)
        lib = ["library"] if libraries else []  # one bfy.Library holds the built-ins' weights and states
        containers = {"list": "list[jax.Array]", "dict": "dict[str, jax.Array]"}

        def annotation(f) -> str:
            plain = containers.get(f.container, "jax.Array")
            return f"{plain} | None" if f.optional else plain

        state = [FieldLine(f.name, annotation(f)) for f in fields if f.kind == "state"]
        if cls.random:
            state.append(FieldLine("rng_key", "jax.Array"))
        return ClassCode(
            name=cls.name,
            batched_name=cls.batched_name,
            params_name=cls.params_name,
            state_name=cls.state_name,
            bases=(*self.bases(), *self.declarations()),
            params=(*[FieldLine(f.name, annotation(f)) for f in fields if f.kind == "param"],
                    *[FieldLine(ch, c.params_name) for ch, c in child_cls.items()],
                    *[FieldLine(name, "dict[str, jax.Array]") for name in lib]),
            state=(*state, *[FieldLine(ch, c.state_name) for ch, c in child_cls.items()],
                   *[FieldLine(name, "dict[str, jax.Array]") for name in lib]),
            body=(*self.class_body(), self.init(), *self.methods()),
        )

    def declarations(self) -> list[str]:
        """What the runtime's ``Batched`` reads besides the fields: ``params=FooParams, state=FooState, ...``."""
        ir, cls = self.ir, self.cls
        out = [f"params={cls.params_name}", f"state={cls.state_name}"]
        shared = {f.name: f.shared for f in ir.all_fields(cls) if f.shared}
        if shared:  # Variables learned online, one copy for the batch (--shared w=mean)
            out.append("shared=" + dict_literal(shared))
        libraries = ir.all_libraries(cls)
        if libraries:
            out.append(f"builtins={tuple_literal(list(libraries))}")
            given = [f for c in ir.chain(cls) for f in c.library_fields]
            if given:
                out.append(f"builtin_fields={tuple_literal(given)}")
        if self.plain_renamed:
            out.append("renamed=" + dict_literal(self.plain_renamed))
        registered = [name for c in ir.chain(cls) for name in c.registered]
        if registered:  # children the original's group constructor holds in its self.children, in order
            out.append(f"registered={tuple_literal(registered)}")
        bound = [f for c in ir.chain(cls) for f in sorted(c.bound_functions)]
        if bound:  # functions stored on self reading its fields: from_model rebinds them to the batch
            out.append(f"bound={tuple_literal(bound)}")
        created = ir.reset_created(cls)
        if created:
            out.append(f"created_by_reset={tuple_literal(list(created))}")
            if not cls.init_resets:  # reset_state() creates them and __init__ does not call it
                out.append("late=True")
        return out

    def source_comment(self, node: cst.CSTNode) -> str:
        """``# from examples/rate_rnn.py:27-30``: where a generated method came from."""
        pos = self.ir.positions.get(node)
        if pos is None:
            return ""
        lines = f"{pos.start.line}-{pos.end.line}" if pos.end.line > pos.start.line else f"{pos.start.line}"
        return f"# from {self.ir.shown_path or self.ir.path}:{lines}\n"

    def bases(self) -> list[str]:
        parts = [] if self.cls.model_base else [f"{RUNTIME}.Batched"]
        for base in self.cls.node.bases:
            if type(base.value) is cst.Name and base.value.value == self.cls.model_base:
                parts.append(self.ir.classes[self.cls.model_base].batched_name)
            else:
                parts.append(code(base.with_changes(comma=cst.MaybeSentinel.DEFAULT)))
        return parts

    def class_body(self) -> list[str]:
        """Class-level statements other than methods and the docstring (class attributes)."""
        body = list(self.cls.node.body.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        # (a function a class attribute holds may be handed a view: ``identity_through_views``; a nested
        # class stays as written, as the file's helper classes do)
        return [statement_code(self.renamed(s if type(s) is cst.ClassDef else identity_through_views(self.ir, s, None)))
                for s in body if type(s) is not cst.FunctionDef]

    def init(self) -> str:
        init = self.init_node
        if init is None:  # the class relies on its base's constructor
            if self.cls.model_base:
                if self.cls.random and not self.ir.classes[self.cls.model_base].random:
                    # It draws where its base does not: bfy.Batched gives each example a key from seed.
                    return ("def __init__(self, *args, batch_size, seed=None, **kwargs):\n"
                            "    # seed: each example's key, which bfy.Batched draws from it; the base takes none\n"
                            "    super().__init__(*args, batch_size=batch_size, **kwargs)")
                return ("def __init__(self, *args, batch_size, **kwargs):\n"
                        "    super().__init__(*args, batch_size=batch_size, **kwargs)")
            return ("def __init__(self, *args, batch_size, **kwargs):\n"
                    "    self.batch_size = batch_size\n    super().__init__(*args, **kwargs)")
        taken = {p.name.value for p in (*init.params.params, *init.params.kwonly_params, *init.params.posonly_params)}
        # The model's own `seed` (say, for its RandomState) keeps its name; the batch's seed gives way.
        seed_name = "batch_seed" if "seed" in taken else "seed"
        for p in (*init.params.params, *init.params.kwonly_params, *init.params.posonly_params):
            if p.name.value == "batch_size" or (self.cls.random and p.name.value == seed_name):
                self.report(p, "BFY010", f"__init__ already has a parameter named '{p.name.value}', "
                            "which the batched constructor adds; rename it")
        rewritten = init.visit(ConstructorRewriter(self.ir, self.cls, self_name_of(init) or "self", seed_name))
        return self.source_comment(init) + statement_code(self.renamed(rewritten))

    def reads_state(self, method) -> bool:
        """Whether ``method`` reads state, its own (directly or through methods it calls), a child's or a
        built-in's: each example has its own, unlike weights."""
        fields, methods = self.ir.field_map(self.cls), self.ir.all_methods(self.cls)
        seen, todo = set(), [method]
        while todo:
            m = todo.pop()
            if m.name in seen:
                continue
            seen.add(m.name)
            # (a read of anything but an own weight: a state field, a built-in, a child's Variable `self.l1.s`)
            if m.child_calls or m.draws or any(r not in fields or fields[r].kind == "state" for r in m.reads):
                return True
            todo.extend(methods[c] for c in m.self_calls if c in methods)
        return False

    def factory(self, func: cst.FunctionDef) -> cst.FunctionDef:
        """A classmethod building the class (``return cls(cfg['n'])``): the batched constructor needs the
        batch size (and takes a seed), so the copy takes them as the constructor does and passes them on."""
        params = func.params.params
        cls_name = params[0].name.value if params else None
        builds = [n for n in walk(func.body) if type(n) is cst.Call and type(n.func) is cst.Name
                  and n.func.value == cls_name]
        taken = {p.name.value for p in (*params, *func.params.kwonly_params)}
        if not builds or "batch_size" in taken:
            return func
        init = self.init_node
        own = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)} if init is not None else set()
        seed = "batch_seed" if "seed" in own else "seed"  # as the batched constructor names it
        added = ["batch_size", *([seed] if self.cls.random and seed not in taken else [])]

        class PassOn(cst.CSTTransformer):
            def leave_Call(self, original_node, updated_node):
                if not any(original_node is b for b in builds):
                    return updated_node
                args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated_node.args]
                return updated_node.with_changes(args=[*args, *(keyword_arg(k, cst.Name(k)) for k in added)])

        tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
        kwonly = [*func.params.kwonly_params, *(cst.Param(cst.Name(k)) if k == "batch_size" else
                                                cst.Param(cst.Name(k), default=cst.Name("None"), equal=tight)
                                                for k in added)]
        star = cst.ParamStar() if func.params.star_arg is cst.MaybeSentinel.DEFAULT else func.params.star_arg
        return func.visit(PassOn()).with_changes(params=func.params.with_changes(star_arg=star, kwonly_params=kwonly))

    def methods(self) -> list[str]:
        out = []
        for method in self.cls.methods.values():
            comment = self.source_comment(method.node)
            if method.name in self.cls.construction_helpers:
                out.append(comment + self.construction_helper(method.node))
                continue
            if method.name not in self.cls.stateful:
                own = None if method.kind == "static" else self_name_of(method.node)
                node = identity_through_views(self.ir, method.node, own)
                node = self.factory(node) if method.kind == "class" else node
                out.append(comment + statement_code(self.renamed(node)) + self.accessors(method.name))
                continue
            if method.name in self.cls.context_properties:  # an integrator's derivatives: no pure twin
                prop, diagnostics = rewrite_context_property(self.ir, self.cls, method)
                self.diagnostics.extend(diagnostics)
                out.append(comment + statement_code(self.renamed(prop)) + self.accessors(method.name))
                continue
            pure, diagnostics = rewrite_method(self.ir, self.cls, method)
            self.diagnostics.extend(diagnostics)
            bound = frozenset(f for c in self.ir.chain(self.cls) for f in c.bound_functions)
            pure = with_example_for_holders(pure, self.cls, bound)
            block = comment + statement_code(self.renamed(pure, method.node))
            if method.kind == "property":  # a reader, and its pure twin
                if self.reads_state(method):  # as written it would read the whole batch's Variables at once
                    out.append(block + "\n\n" + f'{method.name} = {RUNTIME}.batched_property("{pure_name(method.name)}")'
                               + self.accessors(method.name))
                else:  # weights only: the same for every example, kept as it is for use outside the steps
                    out.append(comment + statement_code(self.renamed(method.node)) + self.accessors(method.name)
                               + "\n\n" + statement_code(self.renamed(pure, method.node)))
                continue
            # bfy.Batched has reset_state; private helpers get no drop-in, a class's own __call__ does.
            if method.name == "__call__" or (method.name != "reset_state" and not method.name.startswith("_")):
                block += "\n\n" + self.wrapper(method.node)
            if method.name in self.cls.losses:  # the user's own loss (--function): its batch gradient
                block += "\n" + self.gradient(method.node, self.cls.losses[method.name])
            out.append(block)
        if self.group_of_builtins():
            out.append(GROUP_UPDATE + "\n\n" + 'update = bfy.batched_method("update_pure")')
        if self.cls.holder_values:
            out.append(self.rebuilt_holders())
        return out

    def accessors(self, name: str) -> str:
        """A property's ``@name.setter`` and ``@name.deleter``, as written, right after it: used from
        outside the steps, they act on the batched object (a Variable they set holds the batch's values)."""
        return "".join("\n\n" + self.source_comment(f) + statement_code(self.renamed(f))
                       for f in self.cls.accessors.get(name, ()))

    def construction_helper(self, func: cst.FunctionDef) -> str:
        """A method only construction runs (``self._init_state(n)`` in ``__init__``): what it creates is
        built batched, as in the constructor, with the batch size the constructor set first."""
        rewritten = func.visit(ConstructorRewriter(self.ir, self.cls, self_name_of(func) or "self", helper=True))
        return statement_code(self.renamed(rewritten))

    def rebuilt_holders(self) -> str:
        """``from_model`` calls this: the model's integrators hold derivatives reading its own Variables."""
        renamer = ModelNameRenamer({**self.renamer.names, self.init_self: "self"})
        lines = [f"self.{h} = {code(v.visit(renamer))}" for h, v in self.cls.holder_values.items()]
        return ("def _rebuild_integrators(self):\n"
                '    """The integrators built in ``__init__``, around this batch\'s derivatives (``from_model``)."""\n'
                + "".join(f"    {line}\n" for line in lines)).rstrip("\n")

    def group_of_builtins(self) -> bool:
        """A group of BrainPy built-ins without an update of its own: BrainPy's group update runs them."""
        return self.ir.group_of_builtins(self.cls)

    def gradient(self, func: cst.FunctionDef, has_aux: bool) -> str:
        """``loss_grad = bfy.batched_grad("loss_pure", has_aux=True)``: the batch's mean-loss gradient."""
        method = func.name.value
        shared = self.shared_args(func)
        extra = (", has_aux=True" if has_aux else "") + (", shared=" + tuple_literal(shared) if shared else "")
        return f'{method}_grad = {RUNTIME}.batched_grad("{pure_name(method)}"{extra})'

    def shared_args(self, func: cst.FunctionDef) -> list[str]:
        """The arguments of a stepping method every example shares: ``--shared``, the clock, ``tdi``."""
        args = [p.name.value for p in func.params.params[1:]]
        shared_args = set(self.ir.shared_args)
        if func.name.value == "update" and args[:1] and args[0] in SHARED_DICT_PARAMS:
            shared_args.add(args[0])
        shared_args |= set(args) & set(SHARED_CLOCK_PARAMS)
        return [a for a in args if a in shared_args]

    def wrapper(self, func: cst.FunctionDef) -> str:
        """The batched drop-in, one line: ``update = bfy.batched_method("update_pure", shared=("i",))``."""
        shared = self.shared_args(func)
        extra = ", shared=" + tuple_literal(shared) if shared else ""
        method = func.name.value
        return f'{method} = {RUNTIME}.batched_method("{pure_name(method)}"{extra})'

    def report(self, node: cst.CSTNode, code_: str, message: str) -> None:
        pos = self.ir.positions.get(node)
        line, col = (pos.start.line, pos.start.column + 1) if pos else (1, 1)
        self.diagnostics.append(Diagnostic(self.ir.path, line, col, code_, message))


class ModelNameRenamer(Transformer):
    """References to a model class of the file (``super(Foo, self)``, ``isinstance(x, Foo)``,
    ``Foo.helper(...)``) name its batched class: the generated module defines no ``Foo``."""

    def __init__(self, names: dict[str, str], attributes: dict[str, str] | None = None):
        super().__init__()
        self.names = names
        self.attributes = attributes or {}  # `self.params` -> `self.params_` (see ClassEmitter)
        self.self_names: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if not self.self_names:  # a method: its first parameter is the object
            self.self_names.append(self_name_of(node) or "")
        else:  # a function nested in one (``@jax.vmap def get_J(x)``) reads the method's ``self``
            own = {p.name.value for p in (*node.params.params, *node.params.posonly_params,
                                          *node.params.kwonly_params)}
            self.self_names.append("" if self.self_names[-1] in own else self.self_names[-1])
        return True

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.names.get(updated_node.value, updated_node.value))

    # Names that are not references keep their spelling.
    def leave_Attribute(self, original_node, updated_node):
        attribute = original_node.attr
        if (self.self_names and type(original_node.value) is cst.Name
                and original_node.value.value == self.self_names[-1] and attribute.value in self.attributes):
            attribute = cst.Name(self.attributes[attribute.value])
        return updated_node.with_changes(attr=attribute)

    def leave_Arg(self, original_node, updated_node):
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Param(self, original_node, updated_node):
        return updated_node.with_changes(name=original_node.name)

    def leave_FunctionDef(self, original_node, updated_node):
        self.self_names.pop()
        return updated_node.with_changes(name=original_node.name)


class ConstructorRewriter(Transformer):
    """The original constructor, building a batch: state Variables and children get ``batch_size``."""

    def __init__(self, ir: ModuleIR, cls: ModelClass, self_name: str, seed_name: str = "seed",
                 helper: bool = False):
        super().__init__()
        self.ir, self.cls, self.self_name, self.seed_name = ir, cls, self_name, seed_name
        # A construction helper (``self._init_state(n)``): the same rewrites of what it creates, reading
        # the batch size from the object, and its signature and body otherwise as written.
        self.helper = helper
        self.batch_size = (cst.Attribute(cst.Name(self_name), cst.Name("batch_size")) if helper
                           else cst.Name("batch_size"))
        self.state = {f.name for f in cls.fields if f.kind == "state" and not f.shared} - set(cls.library_fields)
        self.fields = {f.name for f in ir.all_fields(cls)}
        self.children = {ch.name: ir.classes[ch.class_name].batched_name for ch in cls.children}
        self.depth = 0
        base = ir.classes[cls.model_base] if cls.model_base else None
        self.base_random = bool(base and base.random)
        self.creates_key = cls.random and not self.base_random

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1  # leave nested functions alone

    def is_reset_call(self, stmt: cst.CSTNode) -> bool:
        """``self.reset_state(...)``, which creates this class's Variables."""
        if not self.ir.reset_created(self.cls) or type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        return (type(small) is cst.Expr and type(small.value) is cst.Call
                and self_path(small.value.func, self.self_name) == ["reset_state"])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth or self.helper:  # a helper keeps its signature and body
            return updated_node
        body = list(updated_node.body.body)
        for rule in self.BODY_RULES:
            body = getattr(self, rule)(body)
        return updated_node.with_changes(params=self.constructor_signature(updated_node.params),
                                         body=updated_node.body.with_changes(body=body))

    # What the batched constructor adds to the original's body, in this order (batchify.rules).
    BODY_RULES = ("set_batch_size_first", "reset_creates_state", "attach_builtins", "late_state")

    def constructor_signature(self, params: cst.Parameters) -> cst.Parameters:
        """``def __init__(self, n)`` -> ``def __init__(self, n, *, batch_size)`` (and ``seed=None`` with random draws)."""
        added = [cst.Param(cst.Name("batch_size"))]
        if self.cls.random:
            added.append(cst.Param(cst.Name(self.seed_name), default=cst.Name("None"),
                                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        star = params.star_arg if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) else cst.ParamStar()
        return params.with_changes(
            params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params.params],
            star_arg=star,
            kwonly_params=[*params.kwonly_params, *added],
        )

    def set_batch_size_first(self, body: list) -> list:
        """``self.batch_size = batch_size`` first: BrainPy's constructor already reads ``self.mode``."""
        first = 1 if body and _is_docstring(body[0]) else 0
        return [*body[:first], cst.parse_statement(f"{self.self_name}.batch_size = batch_size\n"), *body[first:]]

    def reset_creates_state(self, body: list) -> list:
        """``self.reset_state(...)`` creating Variables -> ``self._create_state(...)``, every example as it
        resets, with the same arguments;
        a model drawing random numbers gets its per-example keys first (after the weights are drawn)."""
        if self.creates_key:
            make_key = cst.parse_statement(
                f"{self.self_name}.rng_key = {RUNTIME}.key_variable({self.seed_name}, batch_size)\n")
        creates = [i for i, stmt in enumerate(body) if self.is_reset_call(stmt)]
        body = list(body)
        if creates:
            reset = body[creates[0]].body[0].value  # its arguments are the original's (a batch size, the mode)
            body[creates[0]] = body[creates[0]].with_changes(body=[cst.Expr(reset.with_changes(
                func=cst.Attribute(cst.Name(self.self_name), cst.Name("_create_state"))))])
            if self.creates_key:
                body.insert(creates[0], make_key)
        elif self.creates_key:
            body.append(make_key)
        return body

    def attach_builtins(self, body: list) -> list:
        """Built-ins held as library code: ``bfy.attach_library(self, batch_size)`` at the end."""
        if not self.cls.libraries:
            return body
        return [*body, cst.parse_statement(f"{RUNTIME}.attach_library({self.self_name}, batch_size)\n")]

    def late_state(self, body: list) -> list:
        """State that ``reset_state`` creates and ``__init__`` never calls it: created at the end."""
        if not (self.ir.reset_created(self.cls) and not self.cls.init_resets):
            return body
        return [*body, cst.parse_statement(
            f"# {self.cls.name} leaves its state to reset_state(), which its users call before running.\n"
            f"{self.self_name}._create_state()\n")]

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if len(original_node.targets) != 1:
            return updated_node
        target, value = original_node.targets[0].target, original_node.value
        pairs = element_pairs(target, value)
        if len(pairs) > 1 or pairs[0][0] is not target:  # `self.u, self.v = bm.Variable(a), bm.Variable(b)`
            elements = [e.with_changes(value=self.batched_value(t, v, e.value))
                        for (t, v), e in zip(pairs, updated_node.value.elements)]
            return updated_node.with_changes(value=updated_node.value.with_changes(elements=elements))
        return updated_node.with_changes(value=self.batched_value(target, value, updated_node.value))

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        """``self.v: bm.Variable = bm.Variable(...)``: batched like the plain assignment."""
        if original_node.value is None:
            return updated_node
        return updated_node.with_changes(value=self.batched_value(original_node.target, original_node.value,
                                                                  updated_node.value))

    def batched_value(self, target: cst.BaseExpression, value: cst.BaseExpression,
                      updated: cst.BaseExpression) -> cst.BaseExpression:
        """The value assigned to ``self.NAME`` in the batched constructor: a state Variable batched,
        a child built with ``batch_size``; anything else unchanged."""
        path = self_path(target, self.self_name)
        if path is not None and len(path) == 1 and type(value) is cst.IfExp:  # `Child(n) if c else None`
            return updated.with_changes(body=self.batched_value(target, value.body, updated.body),
                                        orelse=self.batched_value(target, value.orelse, updated.orelse))
        if path is not None and len(path) == 1 and type(value) is cst.Name:
            return self.batched_local(path[0], value, updated) or updated
        if path is None or len(path) != 1 or type(value) is not cst.Call:
            return updated
        return self.batched_variable(path[0], value, updated) or self.batched_child(path[0], value, updated) or updated

    def batched_local(self, attribute: str, value: cst.Name, updated: cst.BaseExpression) -> cst.BaseExpression | None:
        """``h = bm.Variable(...)``, then ``self.h = h`` -> ``self.h = bfy.batched(h, batch_size)``."""
        if attribute in self.state and (attribute, value.value) in self.cls.local_variables:
            return self.batched_call(updated)
        return None

    def batched_variable(self, attribute: str, value: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``self.V = bm.Variable(...)`` -> ``self.V = bfy.batched(bm.Variable(...), batch_size)``."""
        if attribute in self.state and {q.name for q in self.ir.qualified.get(value.func, ())} & (
                STATE_VARIABLES | STATE_FACTORIES | set(VARIABLE_CONTAINERS)):
            return self.batched_call(updated)
        return None

    def batched_call(self, variable: cst.BaseExpression) -> cst.Call:
        """``bfy.batched(variable, batch_size)``."""
        return cst.Call(cst.Attribute(cst.Name(RUNTIME), cst.Name("batched")), [cst.Arg(variable, comma=cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(self.batch_size)])

    def batched_child(self, attribute: str, value: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``self.c = Child(n)`` -> ``self.c = ChildBatched(n, batch_size=batch_size)``."""
        if attribute in self.children and type(value.func) is cst.Name:
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.args]
            args.append(keyword_arg("batch_size", self.batch_size))
            return updated.with_changes(func=cst.Name(self.children[attribute]), args=args)
        return None

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        path = self_path(original_node, self.self_name)
        if path and len(path) == 1 and path[0] in self.fields and attribute_name(path[0]) != path[0]:
            return updated_node.with_changes(attr=cst.Name(attribute_name(path[0])))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """``super().__init__(...)`` of a same-file model base passes ``batch_size`` on."""
        func = original_node.func
        if self.cls.model_base and is_super_call(func) and func.attr.value == "__init__":
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated_node.args]
            args.append(keyword_arg("batch_size", cst.Name("batch_size")))
            if self.base_random:
                args.append(keyword_arg("seed", cst.Name(self.seed_name)))
            return updated_node.with_changes(args=args)
        return updated_node


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1
            and type(stmt.body[0]) is cst.Expr
            and type(stmt.body[0].value) in (cst.SimpleString, cst.ConcatenatedString))
