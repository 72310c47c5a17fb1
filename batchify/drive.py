"""How to drive a model class for verification: constructor arguments, stepping method,
inputs, steps, batch size, clock, tolerances, seed.

Driving information comes from ``[tool.batchify.verify."path::Class"]`` in pyproject.toml,
overridden by command-line flags. Parsing needs neither jax nor brainpy; checking that it
is complete needs the original class (``missing``), so that the message can show the
constructor's and the method's real signatures.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass, field, replace
from pathlib import Path

from batchify.names import SHARED_CLOCK_PARAMS, SHARED_DICT_PARAMS


class DriveError(Exception):
    """Driving information is missing or malformed: verification cannot run (exit 2). ``model`` and
    ``paths``, where it names Variables of a model (as ``runtime.UnbatchedStateError``), let the CLI
    point at the line that builds them."""

    model: str = ""
    paths: tuple[str, ...] = ()


DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "bool")
MODES = ("nonbatching", "training", "batching")  # bm.nonbatching_mode, bm.training_mode, bm.batching_mode


@dataclass(frozen=True)
class Input:
    """One argument of the stepping method."""

    kind: str  # "example": per-example random data; "time": the step index, shared; "value": a shared constant;
    # "clock": the step's time, t * dt (BrainPy 2's `_t`)
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    scale: float = 1.0
    offset: float = 0.0
    value: object = None

    @staticmethod
    def parse_shape(text: str) -> Input:
        """``64``, ``8x8``, ``3,4``, ``64:float32:2.0`` (shape:dtype:scale), ``64:float32:2.0:-1.0``
        (uniform in [offset, offset + scale)), ``:int32:5`` (a scalar per example)."""
        dims, _, rest = text.partition(":")
        dtype, _, rest = rest.partition(":")
        scale, _, offset = rest.partition(":")
        try:
            shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
            if (dtype or "float32") not in DTYPES:
                raise ValueError
            return Input("example", shape, dtype or "float32", float(scale) if scale else 1.0,
                         float(offset) if offset else 0.0)
        except ValueError:
            raise DriveError(f"cannot read the input shape {text!r} (write e.g. 64, 8x8, 64:float32:2.0 or "
                             f"64:float32:2.0:-1.0 for shape:dtype:scale:offset; dtypes {', '.join(DTYPES)})") from None

    @staticmethod
    def parse_shared(text: str) -> Input:
        if text == "time":
            return Input("time")
        try:
            return Input("value", value=ast.literal_eval(text))
        except (ValueError, SyntaxError):
            raise DriveError(f"cannot read the shared value {text!r} (write time, or a Python literal)") from None

    @staticmethod
    def from_toml(name: str, value) -> Input:
        if value == "time":
            return Input("time")
        if isinstance(value, dict):
            if "value" in value:
                return Input("value", value=value["value"])
            shape = value.get("shape", [])
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            dtype = value.get("dtype", "float32")
            if dtype not in DTYPES:
                raise DriveError(f"input {name}: unknown dtype {dtype!r} (one of {', '.join(DTYPES)})")
            return Input("example", shape, dtype, float(value.get("scale", 1.0)), float(value.get("offset", 0.0)))
        if isinstance(value, (int, list)):
            return Input("example", (value,) if isinstance(value, int) else tuple(value))
        return Input("value", value=value)


@dataclass(frozen=True)
class Drive:
    cls: str
    init_args: tuple = ()
    init_kwargs: dict = field(default_factory=dict)
    init_given: bool = False
    method: str | None = None
    inputs: dict[str, Input] = field(default_factory=dict)
    # Input ports: Variables the caller writes before every step (``input`` of a neuron, ``E.input``),
    # by attribute path; per-example random values like inputs.
    ports: dict[str, Input] = field(default_factory=dict)
    # Extra values of BrainPy's shared context for the run (``bp.share.save(fit=True)``).
    share: dict = field(default_factory=dict)
    # The computing mode the original is built under (``bm.environment(mode=...)``): "training", ...
    mode: str | None = None
    steps: int = 20
    batch: int = 4
    dt: float | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    seed: int = 0
    # Examples 1.. start from example 0's state moved by up to this fraction of each float state
    # Variable's mean magnitude (at least 0.1): examples that differ, so that mixing shows. 0: off.
    perturb: float = 0.05
    # The user's own functions to check too (--function): each against its batched form.
    functions: tuple[str, ...] = ()
    # Every method one run checks (--method, repeated): an input named by another's parameters is that one's.
    methods: tuple[str, ...] = ()
    # Not a flag: set from the analysis when the class (or a child) creates its state in a
    # reset_state() that __init__ never calls; the original is reset once after construction,
    # as its users must before running it.
    reset_first: bool = False

    def missing(self, original_cls, stateful: list[str]) -> list[str]:
        """What is needed and not given, each as the flag that would give it."""
        needs = []
        init_sig = inspect.signature(original_cls.__init__)
        required = [p for p in list(init_sig.parameters.values())[1:]
                    if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        if required and not self.init_given:
            needs.append(f"--init ARGS for {self.cls}{_signature(init_sig)}")
        method = self.pick_method(stateful)
        if method is None:
            needs.append(f"--method NAME (one of {', '.join(stateful) or 'no stateful method'})")
            return needs
        sig = inspect.signature(getattr(original_cls, method))
        for p in stepping_parameters(original_cls, method):
            if p.name not in self.inputs and p.default is inspect.Parameter.empty and p.kind != p.VAR_POSITIONAL:
                needs.append(f"--input-shape {p.name}=SHAPE or --shared {p.name}=time|VALUE "
                             f"for {method}{_signature(sig)}")
        return needs

    def pick_method(self, stateful: list[str]) -> str | None:
        if self.method:
            return self.method
        if "update" in stateful:
            return "update"
        public = [m for m in stateful if (not m.startswith("_") or m == "__call__") and m != "reset_state"]
        return public[0] if len(public) == 1 else None


@dataclass
class Plan:
    """A class to verify, planned before jax is imported: its drive, or what is missing."""

    cls: str
    drive: Drive
    line: int
    missing: list[str] = field(default_factory=list)


def clock_inputs(drive: Drive, original_cls, stateful: list[str]) -> Drive:
    """``update(self, _t, _dt, x)``, BrainPy 2's clock arguments, always shared: left out of the flags,
    ``_t`` is the step's time (``t * dt``) and ``_dt`` the time step, as BrainPy's runner passes them."""
    method = drive.pick_method(stateful)
    if method is None or not hasattr(original_cls, method):
        return drive
    clock = {p.name: Input("clock") if p.name == "_t" else Input("value", value=drive.dt)
             for p in stepping_parameters(original_cls, method)
             if p.name in SHARED_CLOCK_PARAMS and p.name not in drive.inputs and p.default is p.empty}
    return replace(drive, inputs={**drive.inputs, **clock}) if clock else drive


def stepping_parameters(original_cls, method: str) -> list[inspect.Parameter]:
    """The parameters a caller gives the stepping method: not ``*args``/``**kwargs``, and not the old
    ``update(self, tdi, ...)``'s ``tdi`` (or 2.3's ``update(self, s, x)``'s ``s``), which BrainPy fills
    from ``bp.share``."""
    params = list(inspect.signature(getattr(original_cls, method)).parameters.values())[1:]
    if method == "update" and params[:1] and params[0].name == shared_dict_parameter(original_cls):
        params = params[1:]
    return [p for p in params if p.kind != p.VAR_KEYWORD]  # `*args` only as far as inputs are given


def shared_dict_parameter(original_cls) -> str | None:
    """The parameter of ``original_cls.update`` BrainPy hands its shared dict (``analyse.shared_dict_parameter``,
    read from the method's source), or None."""
    update = getattr(original_cls, "update", None)
    params = list(inspect.signature(update).parameters) if update is not None else []
    if len(params) < 2:
        return None
    if params[1] in SHARED_DICT_PARAMS:
        return params[1]
    try:
        source = textwrap.dedent(inspect.getsource(update))
    except (OSError, TypeError):  # BrainPy's own, or made at run time
        return None
    import libcst as cst

    from batchify.analyse import shared_dict_parameter as rule
    try:
        func = next(n for n in cst.parse_module(source).body if type(n) is cst.FunctionDef)
    except (cst.ParserSyntaxError, StopIteration):
        return None
    return rule(func)


def _signature(sig: inspect.Signature) -> str:
    params = list(sig.parameters.values())[1:]
    return "(" + ", ".join(str(p) for p in params) + ")"


@dataclass(frozen=True)
class InitExpr:
    """A constructor argument built by a call (``mode=bm.training_mode``, ``pre=bp.dyn.Lif(10)``,
    ``Config(n=4)``): resolved when the model is built, from BrainPy (``bp``/``bm``) and the source
    file's own names, calling only BrainPy's functions and classes and the source file's own."""

    node: ast.expr
    text: str

    def resolve(self, module=None):
        import brainpy
        import brainpy.math

        roots = {"bp": brainpy, "brainpy": brainpy, "bm": brainpy.math}
        own = getattr(module, "__name__", None)
        where = f"{Path(module.__file__).name}" if getattr(module, "__file__", None) else "the source"

        def value(node):
            if isinstance(node, ast.Name):
                if module is not None and hasattr(module, node.id):
                    return getattr(module, node.id)
                if node.id in roots:
                    return roots[node.id]
                raise DriveError(f"--init {self.text!r}: {node.id} is not a class, function or constant defined "
                                 f"in {where} (only those and BrainPy's bp/bm may be used)")
            if isinstance(node, ast.Attribute):
                found = getattr(value(node.value), node.attr)
                if isinstance(found, types.ModuleType) and not found.__name__.startswith(BRAINPY_NAMESPACES):
                    raise DriveError(f"--init {self.text!r}: {node.attr} is the module {found.__name__}, not "
                                     "part of BrainPy; only BrainPy's own names may be used")
                return found
            if isinstance(node, ast.Call):
                function = value(node.func)
                home = str(getattr(function, "__module__", "") or "")
                if not (home.startswith(BRAINPY_NAMESPACES) or (own is not None and home == own)):
                    raise DriveError(f"--init {self.text!r}: {ast.unparse(node.func)} is neither a function or "
                                     f"class of {where} nor BrainPy's; only those may be called")
                return function(*[value(a) for a in node.args], **{k.arg: value(k.value) for k in node.keywords})
            if isinstance(node, (ast.List, ast.Tuple)):
                items = [value(e) for e in node.elts]
                return items if isinstance(node, ast.List) else tuple(items)
            if isinstance(node, ast.UnaryOp):
                operand = value(node.operand)
                return -operand if isinstance(node.op, ast.USub) else +operand
            return ast.literal_eval(node)

        try:
            return value(self.node)
        except DriveError:
            raise
        except Exception as exc:  # noqa: BLE001 - a wrong name or argument is the user's to fix
            raise DriveError(f"--init {self.text!r}: {type(exc).__name__}: {exc}") from None


# Where the modules and callables an --init expression reaches may come from: BrainPy and the
# parts of its family it exposes under bm (bm.random is brainstate's, bm.surrogate braintools').
BRAINPY_NAMESPACES = ("brainpy", "brainstate", "braintools.surrogate")

# The only syntax an --init expression may use: names, public attributes, calls with plain
# arguments, literals, lists and tuples.
_INIT_NODES = (ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.List, ast.Tuple, ast.keyword, ast.Load,
               ast.UnaryOp, ast.USub, ast.UAdd)


def _init_value(node: ast.expr, text: str):
    """A literal, or an expression of BrainPy's and the source file's names to resolve when the model is built."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        nodes = list(ast.walk(node))
        allowed = (all(isinstance(n, _INIT_NODES) for n in nodes)
                   and not any(isinstance(n, ast.Name) and n.id.startswith("_") for n in nodes)
                   and not any(isinstance(n, ast.Attribute) and n.attr.startswith("_") for n in nodes)
                   and not any(isinstance(n, ast.keyword) and n.arg is None for n in nodes))
        if allowed:
            return InitExpr(node, ast.get_source_segment(text, node) or "")
        raise


def init_names(drive: Drive) -> set[str]:
    """The names a drive's ``--init`` expressions read (``Config`` of ``Config(n=SIZE)``, and ``SIZE``)."""
    values = [*drive.init_args, *drive.init_kwargs.values()]
    return {n.id for v in values if isinstance(v, InitExpr) for n in ast.walk(v.node) if isinstance(n, ast.Name)}


def resolve_init(value, module=None):
    """A constructor argument's value: an ``InitExpr`` built with ``module``'s (the source's) names."""
    return value.resolve(module) if isinstance(value, InitExpr) else value


def parse_init(text: str) -> tuple[tuple, dict]:
    """``64, 32, tau=8.0`` -> ``((64, 32), {"tau": 8.0})``: Python literals, or objects built from
    ``bp``/``bm`` (``mode=bm.training_mode``, ``pre=bp.dyn.Lif(10)``) and the source file's own
    names (``Config(n=64)``); never other code."""
    try:
        source = f"f({text})"
        call = ast.parse(source, mode="eval").body
        return (tuple(_init_value(a, source) for a in call.args),
                {k.arg: _init_value(k.value, source) for k in call.keywords})
    except (ValueError, SyntaxError, TypeError):
        raise DriveError(f"cannot read --init {text!r}: give Python literals, BrainPy objects built under bp/bm "
                         "or objects of the source file's own classes, e.g. --init '64, 32, tau=8.0, "
                         "mode=bm.training_mode' or --init 'Config(n=64)'") from None


def from_toml(cls: str, table: dict) -> Drive:
    known = {"init", "method", "inputs", "ports", "share", "mode", "steps", "batch", "dt", "rtol", "atol", "seed",
             "perturb", "functions"}
    unknown = set(table) - known
    if unknown:
        raise DriveError(f"{cls}: unknown keys {sorted(unknown)} in its verify table (known: {sorted(known)})")
    drive = Drive(cls)
    if "init" in table:
        init = table["init"]
        if isinstance(init, dict):
            drive = replace(drive, init_args=tuple(init.get("args", [])), init_kwargs=dict(init.get("kwargs", {})),
                            init_given=True)
        else:
            drive = replace(drive, init_args=tuple(init), init_given=True)
    inputs = {name: Input.from_toml(name, value) for name, value in table.get("inputs", {}).items()}
    ports = {name: Input.from_toml(name, value) for name, value in table.get("ports", {}).items()}
    if any(p.kind != "example" for p in ports.values()):
        raise DriveError(f"{cls}: a port takes per-example values: {{ shape = [...], scale = ..., offset = ... }}")
    mode = table.get("mode")
    if mode is not None and mode not in MODES:
        raise DriveError(f"{cls}: unknown mode {mode!r} (one of {', '.join(MODES)})")
    return replace(drive, method=table.get("method"), inputs=inputs, ports=ports, share=dict(table.get("share", {})),
                   mode=mode, functions=tuple(table.get("functions", ())),
                   **{k: table[k] for k in ("steps", "batch", "dt", "rtol", "atol", "seed", "perturb") if k in table})


def _named(items, flag: str, example: str):
    """``NAME=VALUE`` flag values as pairs; one without ``=`` is a DriveError naming the flag."""
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq:
            raise DriveError(f"{flag} {item!r}: write {example}")
        yield name, value


def with_flags(drive: Drive, flags) -> Drive:
    """Flags override the pyproject table, field by field."""
    changes: dict = {}
    if flags.init is not None:
        args, kwargs = parse_init(flags.init)
        changes.update(init_args=args, init_kwargs=kwargs, init_given=True)
    if flags.method:  # a list (--method repeats): the first; several get one plan each from the caller
        changes["method"] = flags.method[0]
    inputs = dict(drive.inputs)
    for name, spec in _named(flags.input_shape, "--input-shape", "NAME=SHAPE, e.g. x=64"):
        inputs[name] = Input.parse_shape(spec)
    for item in flags.shared or []:
        name, eq, spec = item.partition("=")
        inputs[name] = Input.parse_shared(spec if eq else "time")
    changes["inputs"] = inputs
    ports = dict(drive.ports)
    for name, spec in _named(getattr(flags, "port", None), "--port",
                             "PATH=SHAPE, e.g. input=64 or E.input=64:float32:5.0"):
        ports[name] = Input.parse_shape(spec)
    changes["ports"] = ports
    share = dict(drive.share)
    for key, text in _named(getattr(flags, "bp_share", None), "--bp-share", "KEY=VALUE, e.g. fit=True"):
        try:
            share[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise DriveError(f"--bp-share {key}={text!r}: the value must be a Python literal") from None
    changes["share"] = share
    if getattr(flags, "mode", None):
        if flags.mode not in MODES:
            raise DriveError(f"--mode {flags.mode!r}: one of {', '.join(MODES)}")
        changes["mode"] = flags.mode
    for key in ("steps", "batch", "dt", "rtol", "atol", "seed", "perturb"):
        value = getattr(flags, key, None)
        if value is not None:
            changes[key] = value
    if getattr(flags, "functions", None):
        changes["functions"] = tuple(dict.fromkeys((*drive.functions, *flags.functions)))
    return replace(drive, **changes)
