"""Stage 4: render the generated module from the IR with the Jinja templates.

Python decides the content (LibCST renders every piece of code); the templates in
``templates/`` hold the layout. One Environment, built in one place.
"""

from __future__ import annotations

import functools
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import jinja2
import libcst as cst

from batchify import __version__
from batchify.provenance import stamp, template_dir
from batchify.analyse import RESERVED, is_super_call, self_name_of
from batchify.cstwalk import assigned, self_path, walk
from batchify.diagnostics import BatchifyError, Diagnostic
from batchify.harness import HarnessOptions, harness_classes
from batchify.harness import context as harness_context
from batchify.ir import ModelClass, ModuleIR
from batchify.names import (SHARED_CLOCK_PARAMS, SHARED_DICT_PARAMS, STATE_FACTORIES, STATE_VARIABLES,
                            VARIABLE_CONTAINERS)
from batchify.rewrite import (
    Namespace,
    drop_unused_star_params,
    keyword_arg,
    pure_name,
    rewrite_context_property,
    rewrite_method,
    with_example_for_holders,
)

LINE_LENGTH = 100

# What the generated support code itself imports: binding -> what it is bound to.
STANDARD_IMPORTS = {"NamedTuple": "typing.NamedTuple", "bm": "brainpy.math", "jax": "jax", "jnp": "jax.numpy"}
STANDARD_IMPORT_LINES = ("from typing import NamedTuple", "import brainpy.math as bm", "import jax", "import jax.numpy as jnp")
# What the training harness adds: binding -> what it is bound to, and the import line.
HARNESS_IMPORTS = {"brainstate": "brainstate", "brainpy_env": "brainpy.math.defaults.env",
                   "np": "numpy", "optax": "optax", "Mesh": "jax.sharding.Mesh",
                   "NamedSharding": "jax.sharding.NamedSharding", "PartitionSpec": "jax.sharding.PartitionSpec",
                   "tqdm": "tqdm"}
HARNESS_IMPORT_LINES = {"brainstate": "import brainstate", "bp": "import brainpy as bp",
                        "brainpy_env": "from brainpy.math.defaults import env as brainpy_env",
                        "np": "import numpy as np", "optax": "import optax",
                        "Mesh": "from jax.sharding import Mesh, NamedSharding, PartitionSpec",
                        "NamedSharding": "from jax.sharding import Mesh, NamedSharding, PartitionSpec",
                        "PartitionSpec": "from jax.sharding import Mesh, NamedSharding, PartitionSpec",
                        "tqdm": "import tqdm"}
# What the built-ins' library helper adds (it names BrainPy `bp`, whatever the source calls it).
LIBRARY_IMPORTS = {"brainstate": "brainstate", "bp": "brainpy"}
HELPERS = (
    "_Library", "_Nodes", "_replace_item", "_with_rng", "_for_loop", "_cond", "_while_loop", "_ifelse",
    "_stateless", "_stack", "_batched", "_unwrap", "_example_axis", "_example_keys", "_next_key",
    "_param_items", "_params_from", "_class_label", "_padded", "_nll_of_rates"
)


def indent_lines(text: str, width: int = 4, first: bool = False, blank: bool = False) -> str:
    """Jinja's ``indent`` filter, splitting at ``\n`` only: ``str.splitlines`` also splits at a form
    feed, U+2028 and other separators that may stand inside the user's strings and comments."""
    pad = " " * width if isinstance(width, int) else str(width)
    lines = (text + "\n").split("\n")[:-1]
    if blank:
        out = ("\n" + pad).join(lines)
    else:
        out = lines[0] + "".join("\n" + (pad + line if line else line) for line in lines[1:])
    return pad + out if first else out


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["indent"] = indent_lines
    return env


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


def keyword_call(func: str, kwargs: list[tuple[str, str]], indent: int, prefix: str = "") -> str:
    """``Foo(a=x, b=y)``, wrapped one argument a line when it would pass LINE_LENGTH."""
    flat = f"{func}({', '.join(f'{k}={v}' for k, v in kwargs)})"
    if indent + len(prefix) + len(flat) <= LINE_LENGTH or not kwargs:
        return flat
    pad = " " * (indent + 4)
    inner = "".join(f"\n{pad}{k}={v}," for k, v in kwargs)
    return f"{func}({inner}\n{' ' * indent})"


def library_call(ir: ModuleIR, cls: ModelClass, owner: str) -> str:
    """``_Library(owner, ("N", "fc"), batch_size)``, naming the own Variables the built-ins were given."""
    names = tuple_literal(list(ir.all_libraries(cls)))
    fields = [f for c in ir.chain(cls) for f in c.library_fields]
    given = f", fields={tuple_literal(fields)}" if fields else ""
    return f"_Library({owner}, {names}, batch_size{given})"


def attribute_name(field_name: str) -> str:
    """The batched class's attribute for a field: a Variable named like a member the batched class
    defines (``self.state``) gets a trailing underscore (``self.state_``); its State field keeps the name."""
    return f"{field_name}_" if field_name in RESERVED else field_name


GROUP_UPDATE = '''def update_pure(self, params, state, *args):
    """One example of BrainPy's own group update (projections, then dynamics, then the rest)."""
    return self.library.call(params, state, super().update, *args)'''


@dataclass
class FieldLine:
    name: str
    annotation: str


class ClassEmitter:
    def __init__(self, ir: ModuleIR, cls: ModelClass):
        self.ir = ir
        self.cls = cls
        self.diagnostics: list[Diagnostic] = []
        # A plain attribute named like a member of the batched class (`self.params = params`, a
        # configuration object) would hide that member: it is `self.params_` on the batched class.
        init = self.init_node = next((s for s in cls.node.body.body
                                      if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        self.init_self = (self_name_of(init) or "self") if init is not None else "self"
        own = {f.name for f in ir.all_fields(cls)}
        self.plain_renamed = {t[0]: t[0] + "_" for n in (walk(init.body) if init is not None else ())
                              for target in assigned(n) for t in [self_path(target, self.init_self)]
                              if t and len(t) == 1 and t[0] in RESERVED and t[0] not in own}
        self.renamer = ModelNameRenamer({n: ir.classes[n].batched_name for n in ir.targets}, self.plain_renamed)

    def renamed(self, node: cst.CSTNode) -> cst.CSTNode:
        # A walk is much cheaper than a transform: most methods never name a model class.
        if not any(isinstance(n, cst.Name) and (n.value in self.renamer.names or n.value in self.plain_renamed)
                   for n in walk(node)):
            return node
        return node.visit(self.renamer)

    def context(self) -> dict:
        ir, cls = self.ir, self.cls
        fields = ir.all_fields(cls)
        children = ir.all_children(cls)
        child_cls = {ch.name: ir.classes[ch.class_name] for ch in children}
        params = [f.name for f in fields if f.kind == "param"]
        state = [f.name for f in fields if f.kind == "state"]
        shared = {f.name: f.shared for f in fields if f.shared}  # one copy for the batch (--shared w=mean)
        batched_state = [f for f in state if f not in shared]
        stored = state + ["rng_key"] if cls.random else state  # what state() holds besides children
        libraries = ir.all_libraries(cls)
        lib = ["library"] if libraries else []  # one _Library holds the built-ins' weights and states
        own = {f.name for f in fields}

        def a(name: str) -> str:  # the model's Variables may be renamed; rng_key is ours
            return attribute_name(name) if name in own else name

        optional = {f.name for f in fields if f.optional}  # created on some paths only: None when absent
        holder_renamer = ModelNameRenamer({**self.renamer.names, self.init_self: "batched"})

        containers = {f.name: f.container for f in fields if f.container}  # bm.VarList / bm.VarDict

        def read(name: str) -> str:
            if containers.get(name) == "list":
                value = f"[variable.value for variable in self.{a(name)}]"
            elif containers.get(name) == "dict":
                value = f"{{key: variable.value for key, variable in self.{a(name)}.items()}}"
            else:
                value = f"self.{a(name)}.value"
            return f'{value} if hasattr(self, "{a(name)}") else None' if name in optional else value

        def write(name: str, tree: str) -> str:
            if containers.get(name) == "list":
                line = f"for variable, value in zip(self.{a(name)}, {tree}.{name}):\n    variable.value = value"
            elif containers.get(name) == "dict":
                line = f"for key, variable in self.{a(name)}.items():\n    variable.value = {tree}.{name}[key]"
            else:
                line = f"self.{a(name)}.value = {tree}.{name}"
            return f"if {tree}.{name} is not None:\n" + textwrap.indent(line, "    ") if name in optional else line

        return {
            "has_library": bool(libraries),
            "name": cls.name,
            "batched_name": cls.batched_name,
            "params_name": cls.params_name,
            "state_name": cls.state_name,
            "bases": self.bases(),
            "params": [FieldLine(p, "jax.Array") for p in params]
            + [FieldLine(ch, child_cls[ch].params_name) for ch in child_cls]
            + [FieldLine(name, "dict[str, jax.Array]") for name in lib],
            "state": [FieldLine(s, {"list": "list[jax.Array]", "dict": "dict[str, jax.Array]"}.get(
                containers.get(s), "jax.Array")) for s in stored]
            + [FieldLine(ch, child_cls[ch].state_name) for ch in child_cls]
            + [FieldLine(name, "dict[str, jax.Array]") for name in lib],
            "library_from_model": library_call(ir, cls, "model") if libraries else "",
            "state_summary": ", ".join(f"``{s}``" for s in batched_state) or "none",
            "shared_summary": ", ".join(f"``{s}`` ({m})" for s, m in shared.items()),
            "params_summary": ", ".join(f"``{p}``" for p in params) or "none",
            "class_body": self.class_body(),
            "init": self.init(),
            "replaced": tuple_literal([*batched_state, *child_cls, *lib]),
            "own_state": [{"name": f, "attr": a(f), "optional": f in optional, "container": containers.get(f),
                           "late": not cls.init_resets and f in cls.reset_fields} for f in batched_state],
            "shares_state": ir.shares_state(cls),
            "state_axes": keyword_call(cls.state_name, [(s, "None" if s in shared else "0") for s in stored]
                                       + [(ch, f"self.{ch}.state_axes()" if ir.shares_state(c) else "0")
                                          for ch, c in child_cls.items()]
                                       + [(n, "0") for n in lib], 8, "return "),
            "reduced": keyword_call("state._replace",
                                    [(s, f"state.{s}.mean(0)" if m == "mean"
                                      else f"self.{a(s)}.value + (state.{s} - self.{a(s)}.value).sum(0)")
                                     for s, m in shared.items()]
                                    + [(ch, f"self.{ch}.reduced(state.{ch})") for ch, c in child_cls.items()
                                       if ir.shares_state(c)], 8, "return "),
            # A child's full reset (bp.reset_state): its own reset unless it holds children or built-ins.
            "children": [{"name": ch, "batched_name": c.batched_name,
                          "reset_all": "reset_all_example" if ir.all_children(c) or ir.all_libraries(c)
                          else "reset_example"} for ch, c in child_cls.items()],
            "resets_tree": bool(children) or bool(libraries),
            "params_value": keyword_call(cls.params_name, [(p, read(p)) for p in params]
                                         + [(ch, f"self.{ch}.params()") for ch in child_cls]
                                         + [(n, f"self.{n}.params()") for n in lib], 8, "return "),
            "state_value": keyword_call(cls.state_name, [(s, read(s)) for s in stored]
                                        + [(ch, f"self.{ch}.state()") for ch in child_cls]
                                        + [(n, f"self.{n}.state()") for n in lib], 8, "return "),
            "set_params": [write(p, "params") for p in params]
            + [f"self.{ch}.set_params(params.{ch})" for ch in child_cls]
            + [f"self.{n}.set_params(params.{n})" for n in lib] or ["pass"],
            "set_state": [write(s, "state") for s in stored]
            + [f"self.{ch}.set_state(state.{ch})" for ch in child_cls]
            + [f"self.{n}.set_state(state.{n})" for n in lib] or ["pass"],
            "reset_pure": "reset_state" in cls.stateful,
            "defines_reset": "reset_state" in ir.all_methods(cls),
            "resets": "reset_state" in cls.stateful or bool(children) or bool(libraries),
            "reset_fields": [{"name": f, "attr": a(f), "optional": f in optional} for f in cls.reset_fields],
            # reset_state creates these and __init__ does not call it: a model not reset yet lacks them.
            "late_fields": [] if cls.init_resets else list(cls.reset_fields),
            "plain_renamed": dict_literal(self.plain_renamed) if self.plain_renamed else "",
            # __init__'s `self` is `batched` there; model classes of the file are their batched classes.
            "rebuilt_holders": [f"batched.{h} = {code(v.visit(holder_renamer))}" for h, v in cls.holder_values.items()],
            "empty_state": keyword_call(cls.state_name, [(s, "None" if s in cls.reset_fields else read(s))
                                                         for s in stored]
                                        + [(ch, f"self.{ch}.state()") for ch in child_cls]
                                        + [(n, f"self.{n}.state()") for n in lib], 8, "empty = "),
            "random": cls.random,
            "methods": self.methods(),
        }

    def bases(self) -> str:
        parts = []
        for base in self.cls.node.bases:
            if isinstance(base.value, cst.Name) and base.value.value == self.cls.model_base:
                parts.append(self.ir.classes[self.cls.model_base].batched_name)
            else:
                parts.append(code(base.with_changes(comma=cst.MaybeSentinel.DEFAULT)))
        return ", ".join(parts)

    def class_body(self) -> list[str]:
        """Class-level statements other than methods and the docstring (class attributes)."""
        body = list(self.cls.node.body.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        out = [statement_code(self.renamed(s)) for s in body if not isinstance(s, cst.FunctionDef)]
        if self.cls.holders:  # set by _OneExample while an integrator runs for one example
            out.append("_example = None  # (params, state) of the example an integrator is called for")
        return out

    def init(self) -> str:
        init = self.init_node
        if init is None:  # the class relies on its base's constructor
            if self.cls.model_base:
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
        rewritten = init.visit(InitRewriter(self.ir, self.cls, self_name_of(init) or "self", seed_name))
        return statement_code(self.renamed(rewritten))

    def methods(self) -> list[str]:
        out = []
        for method in self.cls.methods.values():
            if method.name not in self.cls.stateful:
                out.append(statement_code(self.renamed(method.node)))
                continue
            if method.name in self.cls.context_properties:  # an integrator's derivatives: no pure twin
                prop, diagnostics = rewrite_context_property(self.ir, self.cls, method)
                self.diagnostics.extend(diagnostics)
                out.append(statement_code(self.renamed(prop)))
                continue
            pure, diagnostics = rewrite_method(self.ir, self.cls, method)
            self.diagnostics.extend(diagnostics)
            out.append(statement_code(self.renamed(with_example_for_holders(pure, self.cls))))
            if method.name == "reset_state":
                continue  # the batched reset_state is part of the template
            if not method.name.startswith("_"):
                out.append(self.wrapper(self.renamed(method.node)))
        if self.group_of_builtins():
            out.append(GROUP_UPDATE)
            out.append(self.wrapper(cst.parse_statement("def update(self, *args):\n    return args\n")))
        return out

    def group_of_builtins(self) -> bool:
        """A group of BrainPy built-ins without an update of its own: BrainPy's group update runs them."""
        ir, cls = self.ir, self.cls
        return bool(ir.all_libraries(cls)) and not ir.all_children(cls) and "update" not in ir.all_methods(cls)

    def wrapper(self, func: cst.FunctionDef) -> str:
        """The batched drop-in: vmap the pure function over the state and per-example arguments."""
        args = [p.name.value for p in func.params.params[1:]]
        shared_args = set(self.ir.shared_args)
        if func.name.value == "update" and args[:1] and args[0] in SHARED_DICT_PARAMS:
            shared_args.add(args[0])
        shared_args |= set(args) & set(SHARED_CLOCK_PARAMS)
        self_name = self_name_of(func) or "self"
        ns = Namespace(func.params)
        state, out = ns.fresh("state"), ns.fresh("out")
        state_axis = f"{self_name_of(func) or 'self'}.state_axes()" if self.ir.shares_state(self.cls) else "0"
        star = drop_unused_star_params(func).params.star_arg  # `*args` the body reads: each per example
        star_name = star.name.value if isinstance(star, cst.Param) else None
        # A per-example argument's axis is checked against the batch (a forgotten --shared says so).
        axes = ", ".join(["None", state_axis] + ["None" if a in shared_args
                                                 else f'_example_axis({a}, "{a}", {self_name}.batch_size)'
                                                 for a in args]
                         + ([f"*map(_example_axis, {star_name})"] if star_name else []))
        header = code(func.with_changes(body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]),
                                        leading_lines=[])).strip("\n").rsplit("\n", 1)[0]
        shared = [a for a in args if a in shared_args]
        per_example = [a for a in args if a not in shared_args] + ([f"*{star_name}"] if star_name else [])
        doc = f"Batched ``{func.name.value}``: runs ``{pure_name(func.name.value)}`` on every example."
        lines = [header, f'    """{doc}']
        if per_example or shared:
            lines.append("")
        if per_example:
            listed = ", ".join(f"``{a}``" for a in per_example)
            verb = "carries" if len(per_example) == 1 else "carry"
            lines.append(f"    {listed} {verb} a leading batch axis (a Python scalar is used for every example).")
        if shared:
            listed = ", ".join(f"``{a}``" for a in shared)
            lines.append(f"    {listed} {'is' if len(shared) == 1 else 'are'} shared by every example.")
        lines[-1] += '"""' if not (per_example or shared) else ""
        if per_example or shared:
            lines.append('    """')
        if func.name.value in self.cls.context_methods:  # an integrator's derivative, inside one example's step
            passed = ", ".join([*args] + ([f"*{star_name}"] if star_name else []))
            lines.append(f"    if {self_name}._example is not None:  # called by an integrator for one example")
            lines.append(f"        return {self_name}.{pure_name(func.name.value)}(*{self_name}._example, {passed})[1]")
        call_args = ", ".join([f"{self_name}.params()", f"{self_name}.state()", *args]
                              + ([f"*{star_name}"] if star_name else []))
        in_axes = f"({axes})"
        stmt = ""
        if "_example_axis" in axes:  # computed per call: a statement of its own
            in_axes = ns.fresh("in_axes")
            stmt = f"    {in_axes} = ({axes})\n"
            if len(stmt) > LINE_LENGTH:
                stmt = f"    {in_axes} = (\n        {axes}\n    )\n"
        vmap = f"jax.vmap({self_name}.{pure_name(func.name.value)}, in_axes={in_axes})"
        call = f"    {state}, {out} = {vmap}({call_args})"
        if len(call) > LINE_LENGTH:
            call = f"    {state}, {out} = {vmap}(\n        {call_args}\n    )"
        stmt += call
        if self.ir.shares_state(self.cls):  # the Variables the batch shares take the reduced updates
            stmt += f"\n    {state} = {self_name}.reduced({state})"
        lines += [stmt, f"    {self_name}.set_state({state})", f"    return {out}"]
        return "\n".join(lines)

    def report(self, node: cst.CSTNode, code_: str, message: str) -> None:
        pos = self.ir.positions.get(node)
        line, col = (pos.start.line, pos.start.column + 1) if pos else (1, 1)
        self.diagnostics.append(Diagnostic(self.ir.path, line, col, code_, message))


class ModelNameRenamer(cst.CSTTransformer):
    """References to a model class of the file (``super(Foo, self)``, ``isinstance(x, Foo)``,
    ``Foo.helper(...)``) name its batched class: the generated module defines no ``Foo``."""

    def __init__(self, names: dict[str, str], attributes: dict[str, str] | None = None):
        super().__init__()
        self.names = names
        self.attributes = attributes or {}  # `self.params` -> `self.params_` (see ClassEmitter)
        self.self_names: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.self_names.append(self_name_of(node) or "")
        return True

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.names.get(updated_node.value, updated_node.value))

    # Names that are not references keep their spelling.
    def leave_Attribute(self, original_node, updated_node):
        attribute = original_node.attr
        if (self.self_names and isinstance(original_node.value, cst.Name)
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


class InitRewriter(cst.CSTTransformer):
    """The original constructor, building a batch: state Variables and children get ``batch_size``."""

    def __init__(self, ir: ModuleIR, cls: ModelClass, self_name: str, seed_name: str = "seed"):
        super().__init__()
        self.ir, self.cls, self.self_name, self.seed_name = ir, cls, self_name, seed_name
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
        if not self.cls.reset_fields or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        return (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                and self_path(small.value.func, self.self_name) == ["reset_state"])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth:
            return updated_node
        params = updated_node.params
        added = [cst.Param(cst.Name("batch_size"))]
        if self.cls.random:
            added.append(cst.Param(cst.Name(self.seed_name), default=cst.Name("None"),
                                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        star = params.star_arg if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) else cst.ParamStar()
        params = params.with_changes(
            params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params.params],
            star_arg=star,
            kwonly_params=[*params.kwonly_params, *added],
        )
        body = list(updated_node.body.body)
        first = 1 if body and _is_docstring(body[0]) else 0
        set_batch = cst.parse_statement(f"{self.self_name}.batch_size = batch_size\n")
        body.insert(first, set_batch)
        make_key = cst.parse_statement(
            f"{self.self_name}.rng_key = bm.Variable(_example_keys({self.seed_name}, batch_size), batch_axis=0)\n")
        creates = [i for i, stmt in enumerate(body) if self.is_reset_call(stmt)]
        if creates:  # reset_state creates Variables: each example's, drawn from its own key
            body[creates[0]] = cst.parse_statement(f"{self.self_name}._create_state()\n").with_changes(
                leading_lines=body[creates[0]].leading_lines)
            if self.creates_key:
                body.insert(creates[0], make_key)
        elif self.creates_key:  # one key per example, after the weights are drawn as the original draws them
            body.append(make_key)
        if self.cls.libraries:  # the built-ins' batch of states, next to their single-example Variables
            library = library_call(self.ir, self.cls, self.self_name)
            body.append(cst.parse_statement(f"{self.self_name}.library = {library}\n"))
            for i, f in enumerate(self.cls.library_fields):  # given to a built-in as one example's Variable
                comment = "# Batched now; BrainPy's setattr would write into the Variable, so rebind it in vars().\n"
                rebind = f'vars({self.self_name})["{f}"] = _batched({self.self_name}.{f}, batch_size)\n'
                body.append(cst.parse_statement((comment if i == 0 else "") + rebind))
        if self.cls.reset_fields and not self.cls.init_resets:
            body.append(cst.parse_statement(
                f"# {self.cls.name} leaves its state to reset_state(), which its users call before running.\n"
                f"{self.self_name}._create_state()\n"))
        return updated_node.with_changes(params=params, body=updated_node.body.with_changes(body=body))

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if len(original_node.targets) != 1:
            return updated_node
        value = self.batched_value(original_node.targets[0].target, original_node.value, updated_node.value)
        return updated_node.with_changes(value=value)

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
        if path is None or len(path) != 1 or not isinstance(value, cst.Call):
            return updated
        if path[0] in self.state and {q.name for q in self.ir.qualified.get(value.func, ())} & (
                STATE_VARIABLES | STATE_FACTORIES | set(VARIABLE_CONTAINERS)):
            return cst.Call(cst.Name("_batched"), [cst.Arg(updated, comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(cst.Name("batch_size"))])
        if path[0] in self.children and isinstance(value.func, cst.Name):
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.args]
            args.append(keyword_arg("batch_size", cst.Name("batch_size")))
            return updated.with_changes(func=cst.Name(self.children[path[0]]), args=args)
        return updated

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
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


# -- module level ---------------------------------------------------------------------

def import_bindings(stmt: cst.CSTNode) -> list[tuple[str, str, cst.ImportAlias]]:
    """(bound name, what it is bound to, alias) for each name an import statement binds."""
    out = []
    if not isinstance(stmt, cst.SimpleStatementLine):
        return out
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for al in small.names:
                dotted = "".join(code(al.name).split())  # `import brainpy .math` binds brainpy.math
                if al.asname is not None:
                    out.append((al.asname.name.value, dotted, al))
                else:
                    out.append((dotted.split(".")[0], dotted.split(".")[0], al))
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and not small.relative:
            module = "".join(code(small.module).split()) if small.module is not None else ""
            for al in small.names:
                nm = code(al.name)
                bound = al.asname.name.value if al.asname is not None else nm
                out.append((bound, f"{module}.{nm}", al))
    return out


def support_code(ir: ModuleIR, diagnostics: list[Diagnostic], extra_imports: dict[str, str]) -> tuple[str, str]:
    """The import block and the copied module-level code, laid out as PEP 8 asks."""
    standard = {**STANDARD_IMPORTS, **extra_imports}
    reserved = set(standard) | set(HELPERS)
    for c in ir.targets:
        cls = ir.classes[c]
        reserved |= {cls.params_name, cls.state_name, cls.batched_name}
    reserved |= {f"{n}{suffix}" for n in ir.library_targets for suffix in ("Params", "State", "Batched")}
    imports: list[str] = []
    rest: list[cst.CSTNode] = []
    for stmt in ir.support:
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
                if isinstance(small, cst.ImportFrom):
                    small = small.with_changes(names=keep, lpar=None, rpar=None)
                else:
                    small = small.with_changes(names=keep)
                imports.append(statement_code(stmt.with_changes(body=[small])))
            continue
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value in reserved:
            _clash(ir, stmt.name, stmt.name.value, diagnostics)
        rest.append(stmt)
    # Every module-level binding of a reserved name in the source would shadow ours.
    for stmt in ir.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name) and t.target.value in reserved and stmt in ir.support:
                            _clash(ir, t.target, t.target.value, diagnostics)
    blocks: list[str] = []
    previous_simple = False
    for stmt in rest:
        text = statement_code(stmt)
        simple = isinstance(stmt, cst.SimpleStatementLine)
        if blocks:
            blocks.append("\n" if simple and previous_simple else "\n\n\n")
        blocks.append(text)
        previous_simple = simple
    extra_lines = [HARNESS_IMPORT_LINES.get(name, f"import {name}") for name in extra_imports]
    return sort_imports([*STANDARD_IMPORT_LINES, *dict.fromkeys(extra_lines), *imports]), "".join(blocks)


def sort_imports(lines: list[str]) -> str:
    """Group imports as isort does: __future__, standard library, third party, relative."""

    def module_of(line: str) -> str:
        words = line.split()
        return words[1]

    def group(line: str) -> int:
        module = module_of(line)
        if module == "__future__":
            return 0
        if module.startswith("."):
            return 3
        return 1 if module.split(".")[0] in sys.stdlib_module_names else 2

    groups: dict[int, list[str]] = {}
    for line in dict.fromkeys(lines):
        groups.setdefault(group(line), []).append(line)
    blocks = ["\n".join(sorted(g, key=lambda line: (line.startswith("from "), module_of(line), line)))
              for _, g in sorted(groups.items())]
    return "\n\n".join(blocks)


def _clash(ir: ModuleIR, node: cst.CSTNode, bound: str, diagnostics: list[Diagnostic]) -> None:
    pos = ir.positions.get(node)
    line, col = (pos.start.line, pos.start.column + 1) if pos else (1, 1)
    diagnostics.append(Diagnostic(ir.path, line, col, "BFY011", f"'{bound}' is a name the generated module "
                                  "defines or imports; rename it in the source"))


def emit(ir: ModuleIR, *, source_sha256: str, command: str, source_path: str,
         harness: HarnessOptions | None = None) -> str:
    diagnostics: list[Diagnostic] = []
    classes = []
    for name in ir.targets:
        emitter = ClassEmitter(ir, ir.classes[name])
        classes.append(emitter.context())
        diagnostics.extend(emitter.diagnostics)
    harnesses = []
    if harness is not None:
        for problem in harness.problems():
            diagnostics.append(Diagnostic(ir.path, 1, 1, "BFY013", f"harness: {problem}"))
        if not diagnostics:
            for name in harness_classes(ir):
                h = harness_context(ir, ir.classes[name], harness, diagnostics)
                if h is not None:
                    harnesses.append(h)
    extra = dict(HARNESS_IMPORTS) if harness is not None else {}
    library_classes = [{"name": n, "batched_name": f"{n}Batched", "params_name": f"{n}Params",
                        "state_name": f"{n}State", "builtin": builtin, "late": ir.library_late.get(n, ())}
                       for n, builtin in ir.library_targets.items()]
    def uses(helper: str) -> bool:
        """Whether a rewritten method calls this helper of the module template."""
        return any(f"{helper}(" in m for c in classes for m in c["methods"])

    with_rng = uses("_with_rng")
    if with_rng or library_classes or any(c["has_library"] for c in classes):  # these bind BrainPy's global key
        extra.update(LIBRARY_IMPORTS)
    imports, support = support_code(ir, diagnostics, extra)
    if diagnostics:
        unique = sorted(set(diagnostics), key=lambda d: (d.line, d.column, d.code, d.message))
        raise BatchifyError(unique)
    text = environment().get_template("module.py.jinja").render(
        version=__version__,
        source_path=source_path,
        source_sha256=source_sha256,
        command=command,
        imports=imports,
        support=support,
        classes=classes,
        random=any(c["random"] for c in classes) or bool(library_classes),
        library=any(c["has_library"] for c in classes) or bool(library_classes),
        library_classes=library_classes,
        with_rng=with_rng,
        one_example=uses("_OneExample"),
        replace_item=uses("_replace_item"),
        for_loop=uses("_for_loop"),
        cond=uses("_cond"),
        while_loop=uses("_while_loop"),
        ifelse=uses("_ifelse"),
        containers=any(f.container for c in ir.targets for f in ir.all_fields(ir.classes[c])),
        harnesses=harnesses,
    )
    # One newline convention: a CRLF line copied from the source would make every later --check stale.
    return stamp(text.replace("\r\n", "\n").replace("\r", "\n"))
