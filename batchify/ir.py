"""The typed IRs the stages share: ``ModuleIR`` (analysis -> rewrite; nodes point back into the
parsed LibCST tree) and ``ModuleCode`` (rewrite -> emit: code as text, decided, not yet laid out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Collection, Mapping
from typing import Literal, NamedTuple

import libcst as cst
from libcst.metadata import CodeRange, QualifiedName

FieldKind = Literal["state", "param"]


class Field(NamedTuple):
    """A Variable created in ``__init__``: ``state`` gets a batch axis, ``param`` is shared."""

    name: str
    kind: FieldKind
    optional: bool = False  # created only on some paths (under an `if`): absent fields hold None
    shared: str | None = None  # "mean" / "sum": one copy for the batch, updated by the reduced updates
    container: str | None = None  # "list" / "dict": a bm.VarList / bm.VarDict of state Variables


class Child(NamedTuple):
    """A sub-model attribute whose class is a model class of the same file."""

    name: str
    class_name: str


class Method(NamedTuple):
    name: str
    node: cst.FunctionDef
    reads: frozenset[str]  # own and inherited fields read directly
    writes: frozenset[str]  # own and inherited fields written directly
    self_calls: frozenset[str]  # methods called as self.m(...) or super().m(...)
    child_calls: frozenset[tuple[str, str]]  # (child, method) called as self.c(...) / self.c.m(...)
    kind: Literal["method", "static", "class", "property"] = "method"
    draws: bool = False  # calls bm.random.<sampler> without an explicit key
    multiplied: frozenset[str] = frozenset()  # fields on the right of a matrix product (like weights)
    incremented: frozenset[str] = frozenset()  # fields changed by an augmented assignment
    left_multiplied: frozenset[str] = frozenset()  # fields on the left of a matrix product (``self.W @ x``)


@dataclass
class ModelClass:
    name: str
    node: cst.ClassDef
    model_base: str | None  # a model class of the same file this one derives from
    fields: tuple[Field, ...]  # own fields, in creation order
    children: tuple[Child, ...]  # own children, in creation order
    methods: dict[str, Method]  # own methods, in source order
    # Derived from bp.BrainPyObject, not a DynamicalSystem: no update of BrainPy's to fall back on.
    updateless: bool = False
    # Own attributes holding BrainPy built-in models (bp.dnn.Dense, bp.dyn.LifRef, ...): called as
    # library code with one example's values bound into their Variables, never re-implemented.
    libraries: tuple[str, ...] = ()
    library_fields: tuple[str, ...] = ()  # own state Variables given to a built-in (``bm.LengthDelay(self.x)``)
    # Own attributes holding a stochastic integrator (``self.integral = bp.sdeint(...)``).
    noisy_integrators: tuple[str, ...] = ()
    # Own attributes holding BrainPy's global random stream (``self.rng = bm.random.default_rng()``).
    global_streams: tuple[str, ...] = ()
    # ... or one of its samplers (``self.sample = bm.random.normal``), drawn from by calling it.
    global_samplers: tuple[str, ...] = ()
    # A property's setter and deleter (``@tau.setter``), by property name: copied after it as written.
    accessors: dict[str, list[cst.FunctionDef]] = field(default_factory=dict)
    # Methods only construction runs (``self._init_weights(n)`` in __init__): they create fields too,
    # and the batched class's copy builds them batched (``bfy.batched(..., self.batch_size)``).
    construction_helpers: tuple[str, ...] = ()
    # ``self.pops = [self.E, self.I]`` in __init__, never changed: the attribute -> the models it
    # lists, in order (aliases.py unrolls a step's loop over it). ``gathered_models``: one holding
    # models that cannot be followed (changed later, or other values beside them) -> why.
    model_sequences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    gathered_models: dict[str, str] = field(default_factory=dict)
    # Children the original hands its BrainPy group's constructor (``super().__init__(E2E, E=E)``), stored
    # as attributes here: in the order the group registers them in the original's ``self.children``.
    registered: tuple[str, ...] = ()
    # ``(attribute, local)``: a Variable made into a name of __init__, then stored (``self.h = h``):
    # a state Variable is batched where it is stored.
    local_variables: frozenset[tuple[str, str]] = frozenset()
    # Fields first created in reset_state (``self.h = bm.Variable(...)`` there).
    reset_fields: tuple[str, ...] = ()
    # Whether __init__ calls reset_state (``self.reset_state(self.mode)``); if not, the user does
    # before running, and the batched class creates those fields at the end of its constructor.
    init_resets: bool = True
    # Derivatives that read state, handed to an integrator in __init__ (``bp.odeint(self.dV)``,
    # ``bp.odeint(f=self.derivative)`` of a property returning lambdas): called by the integrator
    # from inside one example's step, they read that example's state (``bfy.one_example``).
    context_methods: frozenset[str] = frozenset()  # reader methods: their batched wrapper defers
    context_properties: frozenset[str] = frozenset()  # properties: their reads go to the example
    holders: frozenset[str] = frozenset()  # attributes holding such an integrator (``self.integral``)
    # Functions stored on self in __init__ that read its fields (``self.f = lambda x: self.w * x``):
    # called in a pure step, they run with one example's values bound (``bfy.example_values``).
    bound_functions: dict[str, frozenset[str]] = field(default_factory=dict)  # function -> fields it reads
    # Each holder's constructor expression in __init__: from_model rebuilds it around the batch's
    # derivatives (the model's own integrator would read the model's single-example Variables).
    holder_values: dict[str, cst.BaseExpression] = field(default_factory=dict)
    stateful: set[str] = field(default_factory=set)  # own and inherited stateful methods
    readers: set[str] = field(default_factory=set)  # stateful methods that only read (no writes, no draws)
    random: bool = False  # it, a base or a child draws from BrainPy's global random stream
    # The user's functions named with --function, now methods (drivers.py): name -> returns (loss, aux...).
    losses: dict[str, bool] = field(default_factory=dict)

    @property
    def batched_name(self) -> str:
        return f"{self.name}Batched"

    @property
    def params_name(self) -> str:
        return f"{self.name}Params"

    @property
    def state_name(self) -> str:
        return f"{self.name}State"


@dataclass
class ModuleIR:
    path: str  # as diagnostics name the source (absolute with --absolute-paths)
    module: cst.Module
    classes: dict[str, ModelClass]  # every model class, bases and children before users
    targets: list[str]  # classes to emit (targets of --class plus what they need), in order
    support: list[cst.CSTNode]  # module-level statements the targets need, in source order
    shared_args: frozenset[str] = frozenset()
    # As the generated module names the source (its header, each method's `# from` line): the same from
    # any working directory and with --absolute-paths, so that the committed output does not depend on them.
    shown_path: str = ""
    # Classes deriving from a BrainPy built-in, batched whole as library code: name -> the built-in.
    library_targets: Mapping[str, str] = field(default_factory=dict)
    # Per library target: Variables that exist only once the model is reset (see analyse.late_state).
    library_late: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Model classes a parent runs as library code (handed to a built-in), with their model bases:
    # copied as written, and their name stays theirs outside their own batched class.
    library_models: frozenset[str] = frozenset()
    # Variables declared with --shared NAME[=mean|sum|example]: how each is batched.
    variable_modes: Mapping[str, str] = field(default_factory=dict)
    # The user's functions batched with --function (drivers.py): function -> the instance it drives
    # (a module-level name, or its first parameter for those in ``takes_instance``), and its method.
    driven: Mapping[str, str] = field(default_factory=dict)
    driver_methods: Mapping[str, str] = field(default_factory=dict)
    takes_instance: frozenset[str] = frozenset()
    # First lines of the source statements the targets consist of (classes and support).
    source_lines: list[int] = field(default_factory=list)
    # Warnings (severity "warning"): classes that look like models and are left out (BFY019).
    warnings: list = field(default_factory=list)
    # Metadata of the analysed tree, for the rewrite stage's diagnostics and name lookups.
    positions: Mapping[cst.CSTNode, CodeRange] = field(default_factory=dict)
    qualified: Mapping[cst.CSTNode, Collection[QualifiedName]] = field(default_factory=dict)
    # ids of the Variable constructions that are a lambda's whole body (`full = lambda v: bm.Variable(v)`):
    # the lambda makes the Variable its calls stand for, so they stay Variables where it is rewritten.
    factory_bodies: frozenset[int] = frozenset()

    def chain(self, cls: ModelClass) -> list[ModelClass]:
        """``cls`` and its same-file model bases, base first."""
        out = [cls]
        while out[0].model_base is not None:
            out.insert(0, self.classes[out[0].model_base])
        return out

    def all_fields(self, cls: ModelClass) -> tuple[Field, ...]:
        return tuple(f for c in self.chain(cls) for f in c.fields)

    def all_children(self, cls: ModelClass) -> tuple[Child, ...]:
        return tuple(ch for c in self.chain(cls) for ch in c.children)

    def reset_created(self, cls: ModelClass) -> tuple[str, ...]:
        """The state fields ``reset_state`` creates, its bases' included (an override calling
        ``super().reset_state()``, or a base's ``__init__`` running the override)."""
        return tuple(dict.fromkeys(f for c in self.chain(cls) for f in c.reset_fields))

    def all_model_sequences(self, cls: ModelClass) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
        """``model_sequences`` and ``gathered_models`` of ``cls`` and its bases (a subclass's own win)."""
        sequences: dict[str, tuple[str, ...]] = {}
        gathered: dict[str, str] = {}
        for c in self.chain(cls):
            for name, models in c.model_sequences.items():
                sequences[name] = models
                gathered.pop(name, None)
            for name, why in c.gathered_models.items():
                gathered[name] = why
                sequences.pop(name, None)
        return sequences, gathered

    def all_libraries(self, cls: ModelClass) -> tuple[str, ...]:
        return tuple(dict.fromkeys(lib for c in self.chain(cls) for lib in c.libraries))

    def all_global_streams(self, cls: ModelClass) -> frozenset[str]:
        """Attributes of ``cls`` or a base holding BrainPy's global random stream (``bm.random.default_rng()``)."""
        return frozenset(n for c in self.chain(cls) for n in c.global_streams)

    def all_global_samplers(self, cls: ModelClass) -> frozenset[str]:
        """Attributes of ``cls`` or a base holding a sampler of that stream (``bm.random.normal``)."""
        return frozenset(n for c in self.chain(cls) for n in c.global_samplers)

    def group_of_builtins(self, cls: ModelClass) -> bool:
        """A group of BrainPy built-ins without an update of its own: BrainPy's group update runs them
        (not for a bp.BrainPyObject, which has no update)."""
        return (bool(self.all_libraries(cls)) and not self.all_children(cls) and "update" not in self.all_methods(cls)
                and not cls.updateless)

    def all_methods(self, cls: ModelClass) -> dict[str, Method]:
        out: dict[str, Method] = {}
        for c in self.chain(cls):
            out.update(c.methods)
        return out

    def shares_state(self, cls: ModelClass) -> bool:
        """Whether ``cls`` or a child holds a Variable shared by the batch (``--shared NAME=mean``)."""
        return any(f.shared for f in self.all_fields(cls)) or any(
            self.shares_state(c) for c in self.child_map(cls).values())

    def field_map(self, cls: ModelClass) -> dict[str, Field]:
        return {f.name: f for f in self.all_fields(cls)}

    def child_map(self, cls: ModelClass) -> dict[str, ModelClass]:
        return {ch.name: self.classes[ch.class_name] for ch in self.all_children(cls)}


# -- what the rewrite stage hands the emit stage: code, decided; emit only lays it out -----------

class FieldLine(NamedTuple):
    """One field of a generated Params or State NamedTuple."""

    name: str
    annotation: str


class ClassCode(NamedTuple):
    """A batched class: ``class {batched_name}({bases}):`` holding ``body``, after its Params and State."""

    name: str
    batched_name: str
    params_name: str
    state_name: str
    bases: tuple[str, ...]  # bases, then the declarations bfy.Batched reads (``params=FooParams``, ...)
    params: tuple[FieldLine, ...]
    state: tuple[FieldLine, ...]
    body: tuple[str, ...]  # class attributes, then methods (each led by a ``# from path:lines`` comment)


class BuiltinClassCode(NamedTuple):
    """A class deriving from a BrainPy built-in, batched whole as library code (``bfy.BuiltinBatched``)."""

    name: str
    batched_name: str
    builtin: str
    bases: tuple[str, ...]  # bfy.BuiltinBatched, model=Foo, and late=(...): Variables that exist once it is reset


class HarnessCode(NamedTuple):
    """A training harness: the model-specific part of a ``bfy.Harness``."""

    name: str
    batched: str
    bases: tuple[str, ...]
    method: str
    random: bool
    call_args: str
    readout_expr: str
    loss_expr: str
    input_doc: str
    readout_doc: str
    loss_doc: str


class LossHarnessCode(NamedTuple):
    """A training harness on the user's own loss (``--function NAME --harness``)."""

    name: str
    batched: str
    bases: tuple[str, ...]
    function: str  # the user's function
    method: str  # its method on the batched class
    args: tuple[str, ...]  # its per-example parameters: (x, y)
    has_aux: bool


class SupportCode(NamedTuple):
    """A module-level statement of the source that the classes need, copied as it is."""

    code: str
    simple: bool  # a simple statement line (no blank lines between consecutive ones)
    definition: bool = False  # a function or class (two blank lines around it, as PEP 8 asks)


class ModuleCode(NamedTuple):
    imports: tuple[str, ...]  # one import statement each, in any order (emit sorts them)
    support: tuple[SupportCode, ...]
    classes: tuple[ClassCode, ...]
    builtin_classes: tuple[BuiltinClassCode, ...]
    harnesses: tuple[HarnessCode, ...]
    loss_harnesses: tuple[LossHarnessCode, ...] = ()
