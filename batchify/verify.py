"""``batchify verify``: the generated module against its source, numerically.

For each class: the original runs example by example from the state it had right after
construction (examples 1.. from a seeded perturbation of it); ``FooBatched.from_model(original, B)``
runs the stacked inputs from the same starts. Compared: outputs and every state at every step,
the state ``reset()`` and ``reset_state()`` leave after the steps, the batch built by
``FooBatched(*init, batch_size=B)`` against ``from_model``'s, and gradients of a scalar loss of
the outputs with respect to every weight, per example and
their mean, computed through the original with ``bm.grad`` and through the generated pure
functions with ``jax.grad``. A check that could not have failed (no state moved, every example
alike, no spike, every gradient zero, a weight the step reads without a gradient) is WEAK, not PASS. A mismatch is
rerun in float64 (a fresh process with ``jax_enable_x64``) to tell round-off from a
transformation bug. This module imports jax and brainpy; the transform path never does.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace

from batchify.drive import Drive, DriveError, Input, Plan, resolve_init, shared_dict_parameter, stepping_parameters
from batchify.names import pure_name

X64_ENV = "BATCHIFY_X64"
if os.environ.get(X64_ENV):  # the float64 rerun: before jax is imported anywhere
    os.environ["JAX_ENABLE_X64"] = "1"

import brainpy as bp  # noqa: E402
import brainpy.math as bm  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from batchify.coverage import Coverage, trace_and_measure  # noqa: E402
from batchify.equivalence import (  # noqa: E402
    Arg,
    Mismatch,
    Port,
    Report,
    Strength,
    batch_of,
    call,
    clear_inputs,
    compare,
    declares_random,
    draws_randomly,
    first_divergences,
    originals_code,
    own_reset,
    perturbed_starts,
    resolve,
    restore,
    seed_example,
    set_in_state,
    snapshot,
    start_batch,
    to_numpy,
    write_ports,
    variables,
    tick,
)
from batchify.runtime import example_axis, param_items, stable_path, unwrap  # noqa: E402

if os.environ.get(X64_ENV):
    bm.enable_x64()


@dataclass
class Section:
    """One compared quantity group: forward outputs, state at every step, gradients."""

    name: str
    ok: bool = True
    max_abs: float = 0.0
    mismatches: list[dict] = field(default_factory=list)
    skipped: str | None = None
    of_tolerance: float = 0.0  # the largest error over its tolerance (<= 1 passes)
    note: str | None = None  # what of it was not compared, when the rest was


@dataclass
class ClassResult:
    cls: str
    method: str
    batch: int
    steps: int
    sections: list[Section]
    speedup: float | None = None
    classification: str | None = None  # round-off / transformation bug / undetermined, after the float64 rerun
    x64_max_abs: float | None = None
    strength: Strength = field(default_factory=Strength)
    unchecked: list[str] = field(default_factory=list)  # public stateful methods no checked method calls
    # Floating dtypes of the model's Variables narrower than the run's widest (bfloat16, float16; float32
    # in the float64 rerun): round-off the float64 rerun cannot widen.
    narrow: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.sections)

    @property
    def weak_reasons(self) -> list[str]:
        return self.strength.weak_reasons(self.steps, self.batch)

    @property
    def weak(self) -> bool:
        return self.ok and bool(self.weak_reasons)

    @property
    def verdict(self) -> str:
        if self.ok:
            return "WEAK" if self.weak else "PASS"
        return "FAIL" + (f" ({self.classification})" if self.classification else "")


def _dtype(name: str):
    if name.startswith("float") and os.environ.get(X64_ENV):
        return np.float64
    return {"bfloat16": jnp.bfloat16}.get(name, np.dtype(name))


def make_args(drive: Drive, signature_names: list[str], keyword_only: frozenset[str] = frozenset()) -> list[Arg]:
    """The stepping method's arguments, in signature order, as comparison inputs (those named in
    ``keyword_only`` passed by name)."""
    unknown = sorted(n for n in set(drive.inputs) - set(signature_names) if "." not in n)  # (FUNCTION.NAME: its own)
    if unknown:
        close = difflib.get_close_matches(unknown[0], signature_names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise DriveError(f"{drive.cls}: no parameter named '{unknown[0]}' in the stepping method{hint}; its "
                         f"parameters are {', '.join(signature_names) or 'none'}")
    rng = np.random.default_rng(drive.seed)
    args = []
    gap = False  # an argument left to its default: those after it are passed by name
    for name in signature_names:
        spec = drive.inputs.get(name)
        if spec is None:
            gap = True
            continue
        keyword = name if gap or name in keyword_only else None
        if spec.kind == "time":
            args.append(Arg(shared=lambda t: t, keyword=keyword))
        elif spec.kind == "clock":
            args.append(Arg(shared=lambda t, dt=drive.dt: t * dt, keyword=keyword))
        elif spec.kind == "value":
            args.append(Arg(shared=lambda t, v=spec.value: v, keyword=keyword))
        else:
            args.append(Arg(per_example=random_input(rng, spec, drive.batch, drive.steps), keyword=keyword))
    return args


def random_input(rng, spec: Input, batch: int, steps: int) -> np.ndarray:
    shape = (batch, steps, *spec.shape)
    dtype = _dtype(spec.dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(0, max(int(spec.scale), 1) + 1, shape).astype(dtype)
    return (rng.random(shape) * spec.scale + spec.offset).astype(dtype)


def key_data(tree):
    """``tree`` with typed random keys (a built-in's ``RandomState``) as their integer data, for numpy."""
    return jax.tree.map(lambda a: jax.random.key_data(a) if jnp.issubdtype(jnp.result_type(a), jax.dtypes.prng_key)
                        else a, tree)


AUTO_NAME = re.compile(r"(?<![^.])([^.]*?)(\d+)(?![^.])")  # a path segment ending in digits


def by_structure(tree, like=None):
    """``tree`` with the built-ins' paths in each dict (``i2r.children.Expon4.g``) freed of BrainPy's
    automatic node names, whose numbers count every node made in the process, so that two models
    built one after the other compare: each numbered segment becomes its rank among the keys that
    differ only there. With ``like``, ``tree``'s values under ``like``'s keys instead."""
    if isinstance(tree, dict):
        ranked = _ranked(tree)
        if like is None:
            return {ranked[k]: by_structure(v) for k, v in tree.items()}
        mine = {ranked[k]: k for k in tree}
        return {k: by_structure(tree[mine[r]], like[k]) for k, r in _ranked(like).items()}
    if hasattr(tree, "_asdict"):
        return type(tree)(**{k: by_structure(v, None if like is None else getattr(like, k))
                             for k, v in tree._asdict().items()})
    if isinstance(tree, (list, tuple)):
        return type(tree)(by_structure(v, None if like is None else like[i]) for i, v in enumerate(tree))
    return tree


def _ranked(mapping) -> dict:
    groups: dict[str, list] = {}
    for key in mapping:
        if isinstance(key, str):
            groups.setdefault(AUTO_NAME.sub(r"\1#", key), []).append(key)
    out = {}
    for pattern, keys in groups.items():
        by_number = sorted(keys, key=lambda k: [int(n) for _, n in AUTO_NAME.findall(k)])
        out.update({key: f"{pattern}@{rank}" if len(keys) > 1 else pattern for rank, key in enumerate(by_number)})
    return {k: out.get(k, k) for k in mapping}


def batched_spec(batched_cls):
    """What a generated ``Batched`` class declares (None for a class batched whole as library code)."""
    from batchify import runtime

    return runtime.spec_of(batched_cls) if issubclass(batched_cls, runtime.Batched) else None


def structural(report: Report, quantity: str) -> None:
    """A mismatch no tolerance excuses (a shape, an attribute): its error is infinite."""
    report.mismatches.append(Mismatch(quantity, None, None, float("inf"), float("inf")))
    report.max_abs = report.of_tolerance = float("inf")


def read_leaves(function, tree):
    """``tree`` with each leaf replaced by whether ``function(tree)`` reads it, from its jaxpr (an
    equation counts when something it computes reaches the result; a nested jit is followed, anything
    else that reads a value counts as reading all of it). On any trouble tracing, every leaf counts."""
    structure = jax.tree.structure(tree)
    try:
        closed = jax.make_jaxpr(function)(tree)
    except Exception:  # noqa: BLE001 - a conservative answer: every weight read
        return jax.tree.unflatten(structure, [True] * structure.num_leaves)
    return jax.tree.unflatten(structure, _live_inputs(closed.jaxpr, [True] * len(closed.jaxpr.outvars)))


def _live_inputs(jaxpr, used_outputs: list[bool]) -> list[bool]:
    from jax.extend.core import Var

    live = {v for v, used in zip(jaxpr.outvars, used_outputs) if used and isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        outputs = [v in live for v in eqn.outvars]
        if not any(outputs) and not eqn.effects:
            continue
        inner = eqn.params.get("jaxpr") if eqn.primitive.name in ("jit", "pjit", "closed_call") else None
        inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's, or the Jaxpr itself
        if inner is not None and not eqn.effects and len(inner.invars) == len(eqn.invars):
            reads = _live_inputs(inner, outputs)
        else:
            reads = [True] * len(eqn.invars)
        live |= {v for v, used in zip(eqn.invars, reads) if used and isinstance(v, Var)}
    return [v in live for v in jaxpr.invars]


def section_from(report: Report, name: str, predicate) -> Section:
    bad = first_divergences([m for m in report.mismatches if predicate(m.quantity)])
    return Section(name, not bad, report.max_abs, [asdict(m) for m in bad], of_tolerance=report.of_tolerance)


# What JAX raises when code needs a concrete value it is only tracing: code that runs eagerly and
# not under jit. The batched model always runs traced (vmap): when it fails and the original raises
# one of these under jit, the model's code is what cannot run there.
TRACE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError,
                jax.errors.TracerArrayConversionError, jax.errors.TracerIntegerConversionError)


def forget_names() -> None:
    """Let the next build reuse the names of the models built before it. BrainPy refuses a second live
    object of one explicit name (a child built with `name='E'`, the docs' `rates.FHN(..., name='fhn')`),
    and verify holds several builds at once (the original, one built again for the constructor check,
    the batched class's own build). Only the registry of names in use is cleared: the counters of
    automatic names (`Lif3`) go on, so no two objects alive share an automatic name."""
    from brainpy.math.object_transform import naming

    registry = getattr(naming, "_name2id", None)
    if isinstance(registry, dict):
        registry.clear()
    else:  # another BrainPy's layout: its public reset (which also restarts the automatic names)
        bm.clear_name_cache(ignore_warn=True)


class NotTraceable(Exception):
    """The batched model raised, and one step of the original under ``bm.jit`` raises one of
    ``TRACE_ERRORS``: the model's own code cannot be traced (``error``, raised where it is), not a
    transformation bug."""

    def __init__(self, error: BaseException, batched_error: BaseException):
        super().__init__(str(error))
        self.error, self.batched_error = error, batched_error


class Verifier:
    def __init__(self, original_cls, batched_cls, drive: Drive, method: str, original_module=None):
        self.original_cls = original_cls
        self.batched_cls = batched_cls
        self.drive = drive
        self.method = method
        self.module = original_module
        driven = getattr(original_module, "__batchify_driven__", {})
        self.functions = {}  # name -> (the original function, its method on the batched class, takes the instance)
        for name in drive.functions:
            if name not in driven:
                raise DriveError(f"--function {name}: not a function of the source that drives a model instance")
            instance, method_name, takes = driven[name]
            self.functions[name] = (getattr(original_module, name), instance, method_name, takes)
        parameters = stepping_parameters(original_cls, method)
        names = [p.name for p in parameters]
        # Arguments left to their defaults: a branch on one (`if inhibit:`) is checked one way only.
        self.defaults_only = [f"{method}({p.name}={p.default!r})" for p in parameters
                              if p.default is not p.empty and p.name not in drive.inputs]
        # The resets are compared as called with no argument: the model's own reset_state's other
        # parameters (`level=0.0`) only at their defaults.
        reset = getattr(original_cls, "reset_state", None)
        if reset is not None and not getattr(reset, "__module__", "").startswith(("brainpy", "brainstate")):
            self.defaults_only += [f"reset_state({p.name}={p.default!r})"
                                   for p in list(inspect.signature(reset).parameters.values())[1:]
                                   if p.default is not p.empty and p.name != "batch_size"
                                   and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        function_inputs = {p for f, _, _, takes in self.functions.values()
                           for p in list(inspect.signature(f).parameters)[1 if takes else 0:]}
        # (an input of another method checked in the same run is that method's)
        function_inputs |= {p.name for m in drive.methods if m != method and hasattr(original_cls, m)
                            for p in stepping_parameters(original_cls, m)}
        self.args = make_args(replace(drive, inputs={k: v for k, v in drive.inputs.items()
                                                     if k in names or k not in function_inputs}), names,
                              frozenset(p.name for p in parameters if p.kind is p.KEYWORD_ONLY))
        self.check_shared(names)
        port_rng = np.random.default_rng(drive.seed + 3)  # its own stream: the inputs' draws stay as they were
        self.ports = [Port(path, random_input(port_rng, spec, drive.batch, drive.steps))
                      for path, spec in sorted(drive.ports.items())]
        self.random = draws_randomly(batched_cls)

    def check_shared(self, names: list[str]) -> None:
        """A value ``--shared NAME=VALUE`` gives every example, which the generated module takes per
        example (made without ``--shared NAME``) and would refuse as the runtime refuses it (a dict
        of strings, a string: not a Python number): a DriveError saying to regenerate the module."""
        declared = getattr(getattr(self.batched_cls, self.method, None), "__batchify_shared__", None)
        if declared is None:  # (a method the runtime did not make, or a module of an older runtime)
            return
        for name in names:
            spec = self.drive.inputs.get(name)
            if spec is None or spec.kind != "value" or name in declared:
                continue
            try:
                example_axis(unwrap(spec.value), name, self.drive.batch)
            except ValueError:
                try:
                    made = os.path.basename(inspect.getsourcefile(self.batched_cls) or "") or "the generated module"
                except TypeError:
                    made = "the generated module"
                error = DriveError(
                    f"--shared {name}={spec.value!r}: {made} was generated without --shared {name}, so its "
                    f"{self.batched_cls.__name__}.{self.method} takes {name} per example, with a leading batch "
                    f"axis of {self.drive.batch}, and refuses one value for every example; regenerate the module "
                    f"with --shared {name} (batchify SRC -o OUT --shared {name}), then verify it again")
                error.model = self.original_cls.__name__  # (reported at the class's line)
                raise error from None

    def build(self):
        bm.random.seed(self.drive.seed)
        if self.drive.share:
            bp.share.save(**self.drive.share)
        with originals_code(self.original_cls, "__init__"):
            model = self.construct(self.original_cls)
        if self.drive.reset_first:  # its state exists only once reset_state() has run
            with originals_code(model, "reset_state"):
                own_reset(model)
        return model

    def construct(self, cls, **extra):
        """``cls(*init, **extra)``, in the drive's global computing mode if it names one."""
        forget_names()
        args = [resolve_init(a, self.module) for a in self.drive.init_args]
        kwargs = {**{k: resolve_init(v, self.module) for k, v in self.drive.init_kwargs.items()}, **extra}
        if self.drive.mode:  # a model that reads the global computing mode
            with bm.environment(mode=getattr(bm, f"{self.drive.mode}_mode")):
                return cls(*args, **kwargs)
        return cls(*args, **kwargs)

    def run(self, speed: bool = True) -> ClassResult:
        d = self.drive
        model = self.build()
        from batchify.equivalence import check_equivalence

        for port in self.ports:  # a port's values take its Variable's dtype (BrainPy refuses another)
            try:
                dtype = np.asarray(resolve(model, port.path).value).dtype
            except AttributeError:
                raise DriveError(f"{d.cls}: --port {port.path}: the model has no Variable at that path") from None
            port.values = port.values.astype(dtype)

        try:
            report = check_equivalence(model, self.batched_cls, self.method, self.args, batch=d.batch,
                                       steps=d.steps, rtol=d.rtol, atol=d.atol, dt=d.dt, seed=d.seed,
                                       perturb=d.perturb, ports=self.ports)
        except Exception as exc:  # noqa: BLE001 - re-raised unless the original cannot be traced either
            # (a boolean mask the original indexes with eagerly, which traced code cannot: the batched
            # code may fail otherwise, say on a BrainPy Array the original never holds as state)
            traced = self.traced_error(model)
            if traced is not None:
                raise NotTraceable(traced, exc) from None
            raise
        sections = [section_from(report, "forward", lambda q: q.startswith("output")),
                    section_from(report, "state", lambda q: q.startswith("state"))]
        resets = section_from(report, "reset", lambda q: q.startswith("reset "))
        resets.skipped, resets.note = report.resets_skipped, report.resets_left_out
        sections += [resets, self.constructor_section(report.strength)]
        strength = report.strength
        sections += self.gradients(model, strength)
        for name in self.functions:
            sections += self.function_sections(model, name, strength)
        self.branch_coverage(model, strength)  # last: its traced run may touch what the checks read
        strength.defaults_only = list(self.defaults_only)
        strength.drawn_inputs = bool(self.ports) or any(a.per_example is not None for a in self.args)
        result = ClassResult(d.cls, self.method, d.batch, d.steps, sections, strength=strength)
        widest = 64 if jax.config.jax_enable_x64 else 32
        result.narrow = sorted({np.dtype(v.dtype).name for v in model.vars().unique().values()
                                if jnp.issubdtype(v.dtype, jnp.floating) and jnp.finfo(v.dtype).bits < widest})
        result.speedup = self.speed(model) if speed else None
        return result

    def traced_error(self, model) -> BaseException | None:
        """What one step of the original raises under ``bm.jit`` (its inputs of example 0, from its
        state as it is, put back after): one of ``TRACE_ERRORS``, or None when it runs traced."""
        initial = snapshot(model)
        step = getattr(model, self.method)
        try:
            tick(self.drive.dt, 0)
            write_ports(model, self.ports, 0, 0)
            jax.block_until_ready(bm.jit(lambda *xs: call(step, self.args, xs))(*(a.example(0, 0) for a in self.args)))
        except TRACE_ERRORS as exc:
            return exc
        except Exception:  # noqa: BLE001 - anything else is not this question's answer
            return None
        finally:
            restore(model, initial)
        return None

    # -- branch coverage ----------------------------------------------------------------
    def branch_coverage(self, model, strength: Strength) -> None:
        """Which ways the choices in the user's code went over the original's run, every example
        from its start (``coverage``): each example's steps traced to one program with the model's
        Variables as its inputs (BrainPy's own tracing of stateful code), evaluated on their values."""
        d = self.drive
        initial, key = snapshot(model), bm.random.DEFAULT.value
        starts = perturbed_starts(model, initial, d.batch, d.seed, d.perturb)
        found = Coverage()
        try:
            for e in range(d.batch):
                restore(model, starts[e])
                if self.random:
                    seed_example(model, d.seed, e, initial)

                def run(e=e):
                    for t in range(d.steps):
                        tick(d.dt, t)
                        write_ports(model, self.ports, e, t)
                        call(getattr(model, self.method), self.args, (a.example(e, t) for a in self.args))
                        clear_inputs(model)

                trace_and_measure(run, found)
        except Exception as exc:  # noqa: BLE001 - coverage is a measure of the check, never its verdict
            strength.branches_note = (f"not measured: tracing the original's run raised {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0][:160] if str(exc) else ''}")
            return
        finally:
            restore(model, initial)
            bm.random.DEFAULT.value = key
        strength.branches = len(found.lines())
        strength.untaken = found.untaken()
        if found.cut:
            strength.branches_note = (f"inside loop bodies measured only up to {Coverage.budget:,} evaluated "
                                      f"primitives ({found.cut} loop run{'s' if found.cut > 1 else ''} finished whole)")

    # -- the batched constructor ---------------------------------------------------------
    def constructor_section(self, strength: Strength) -> Section:
        """``FooBatched(*init, batch_size=B)`` against ``FooBatched.from_model(Foo(*init), B)`` (which
        ``check_equivalence`` compares with the original), both built from the same seed: weights,
        plain attributes, state (by value, but by shape alone where each example drew its own:
        ``Strength.constructor_shapes_only``), and the outputs of the steps from the same state.
        Where they differ, the original is built twice more: an original whose two builds from the
        same seed differ draws from a random state of its own, which the seed does not reach, and
        the batched constructor cannot be held to it (skipped, saying so)."""
        d = self.drive
        reference = batch_of(self.batched_cls, self.build(), d.batch, d.seed)
        bm.random.seed(d.seed)
        kwonly = {n for n, p in inspect.signature(self.batched_cls.__init__).parameters.items()
                  if p.kind is p.KEYWORD_ONLY}
        draws = getattr(batched_spec(self.batched_cls), "random", True)  # from_model takes a seed either way
        seed_name = next((n for n in ("batch_seed", "seed") if n in kwonly), None) if draws else None
        built = self.construct(self.batched_cls, batch_size=d.batch, **({seed_name: d.seed} if seed_name else {}))
        report = self.compare_builds(reference, built, draws, strength.constructor_shapes_only)
        if report.mismatches:
            again = self.compare_builds(batch_of(self.batched_cls, self.build(), d.batch, d.seed),
                                        batch_of(self.batched_cls, self.build(), d.batch, d.seed), draws, [])
            if again.mismatches:
                first = first_divergences(again.mismatches)[0]
                return Section("constructor", skipped=(
                    f"the original's own constructor builds a different model from the same seed (two builds of "
                    f"{self.original_cls.__name__} differ: {first.quantity.removeprefix('constructor ')}): it draws "
                    "from a random state the seed does not reach (an initializer with a seed of its own as a "
                    "default argument, a NumPy generator), so the batched constructor cannot be compared with it; "
                    "from_model(original) is what the other checks compare"))
        return section_from(report, "constructor", lambda q: q.startswith("constructor"))

    def compare_builds(self, reference, built, draws: bool, shapes_only: list[str]) -> Report:
        """``built`` against ``reference`` (both batched, from the same seed): what
        ``constructor_section`` compares. State each example drew for itself is compared by shape
        (its names added to ``shapes_only``)."""
        d = self.drive
        report = Report(steps=d.steps, batch=d.batch)
        compare(report, "constructor params", None, to_numpy(by_structure(reference.params())),
                to_numpy(by_structure(built.params())), d.rtol, d.atol)

        def state_of(model):  # by structure (a built-in's keys), keys as data, as arrays
            return to_numpy(key_data(by_structure(model.state())))

        want_state, got_state = state_of(reference), state_of(built)
        if draws:
            want_shapes, got_shapes = jax.tree.map(np.shape, want_state), jax.tree.map(np.shape, got_state)
            if want_shapes != got_shapes:
                structural(report, f"constructor state shapes ({str(got_shapes)[:200]} built, "
                                   f"{str(want_shapes)[:200]} by from_model)")
            else:
                # What the constructor drew once for the whole batch is the original's draw from the same
                # seed (weights are compared so too); only what reset_state() drew for each example while
                # the constructor ran (and the examples' keys) can be compared by shape alone.
                for (path, want), got in zip(jax.tree_util.tree_flatten_with_path(want_state)[0],
                                             jax.tree.leaves(got_state)):
                    name = jax.tree_util.keystr(path, simple=True, separator=".")
                    if np.ndim(got) and len(got) > 1 and not all(np.array_equal(g, got[0], equal_nan=np.issubdtype(
                            got.dtype, np.inexact)) for g in got[1:]):  # (NaN, "not yet", is alike in every example)
                        if name != "rng_key" and not name.endswith(".rng_key"):
                            shapes_only.append(name)
                    else:
                        compare(report, f"constructor state {name}", None, want, got, d.rtol, d.atol)
        else:
            compare(report, "constructor state", None, want_state, got_state, d.rtol, d.atol)
        for name, value in sorted(vars(reference).items()):
            if name.startswith("_") or not isinstance(value, (bool, int, float, str, tuple, type(None))):
                continue
            got = vars(built).get(name, "<missing>")
            if got != value:
                structural(report, f"constructor attribute {name} ({repr(got)[:100]} built, "
                                   f"{repr(value)[:100]} by from_model)")
        if not report.mismatches:  # the same state, so that the steps compare what the constructor built
            built.set_state(by_structure(reference.state(), like=built.state()))
            for t in range(d.steps):
                tick(d.dt, t)
                outputs = [to_numpy(call(getattr(b, self.method), self.args, (a.batch(t) for a in self.args)))
                           for b in (reference, built)]
                compare(report, "constructor output", t, outputs[0], outputs[1], d.rtol, d.atol)
                # (a step may return nothing: what it wrote is where an integrator built wrong shows)
                compare(report, "constructor stepped state", t, state_of(reference), state_of(built), d.rtol, d.atol)
        return report

    # -- the user's own functions (--function) ------------------------------------------
    def function_sections(self, model, name: str, strength: Strength) -> list[Section]:
        """The original function run example by example under ``bm.grad`` against the generated
        ``NAME_grad``: losses, auxiliary outputs, the batch's mean gradient and each example's."""
        d = self.drive
        function, instance, method, takes = self.functions[name]
        if not takes:
            function.__globals__[instance] = model  # the script's own `model = ...` never ran
        params = list(inspect.signature(function).parameters)[1 if takes else 0:]
        # `--input-shape loss_fun.x=6x4`: the function's own, where a stepping method names x too
        inputs = {p: d.inputs.get(f"{name}.{p}", d.inputs.get(p)) for p in params}
        missing = [p for p in params if inputs[p] is None or inputs[p].kind != "example"]
        if missing:
            raise DriveError(f"--function {name}: give its per-example inputs with --input-shape "
                             f"({', '.join(f'{p}=SHAPE' for p in missing)})")
        rng = np.random.default_rng(d.seed + 11)
        # jax arrays, as a user's loop hands them over (a numpy array indexed by a traced step fails)
        values = [jax.numpy.asarray(random_input(rng, inputs[p], d.batch, 1)[:, 0]) for p in params]
        call = (lambda *a: function(model, *a)) if takes else function
        initial = snapshot(model)
        train_vars = model.train_vars().unique()
        probe = call(*[v[0] for v in values])
        has_aux = isinstance(probe, tuple) and len(probe) >= 2
        restore(model, initial)
        first = probe[0] if has_aux else probe
        if not train_vars and not (hasattr(first, "shape") and int(np.prod(np.shape(first))) == 1):
            # No weights and no scalar: a recall or predict loop, not a loss; with weights, a loss that
            # is not a scalar is the user's to fix (bm.grad says so below)
            return self.function_outputs(model, name, call, values, initial)

        def scalar(loss):  # a loss of shape [1] (a [1] label) is the scalar it is, as the harness takes it
            loss = bm.as_jax(loss)
            return loss.reshape(()) if loss.shape == (1,) else loss

        def reference(*args):
            out = call(*args)
            return (scalar(out[0]), *out[1:]) if has_aux else scalar(out)

        grad_f = bm.grad(reference, grad_vars=train_vars, has_aux=has_aux, return_value=True)
        want = []
        for e in range(d.batch):
            restore(model, initial)
            if self.random:
                seed_example(model, d.seed, e, initial)
            try:
                want.append(grad_f(*[v[e] for v in values]))
            except Exception as exc:  # noqa: BLE001 - the user's loss under bm.grad: theirs to fix
                restore(model, initial)
                raise DriveError(f"--function {name}: bm.grad of the original {name}() raised "
                                 f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (a loss "
                                 "must be a scalar, or of shape [1])") from None
        restore(model, initial)
        batched = batch_of(self.batched_cls, model, d.batch, d.seed)
        gradient = getattr(batched, f"{method}_grad")
        batch_start = snapshot(batched)
        grads, losses, aux = gradient(*values, train_vars=train_vars)
        restore(batched, batch_start)  # (a function that steps the model moved the batch's state, as the original's)
        each, _, _ = gradient(*values, train_vars=train_vars, per_example=True)
        restore(model, initial)
        report = Report(steps=1, batch=d.batch)
        rtol, atol = d.rtol * 10, d.atol * 10  # gradients: 10x, as for the stepping method's
        compare(report, f"fn {name} loss", None, np.asarray([float(w[1]) for w in want]), losses, d.rtol, d.atol)
        if has_aux:
            stacked_aux = jax.tree.map(lambda *xs: np.stack(xs), *[to_numpy(w[2]) for w in want])
            compare(report, f"fn {name} aux", None, stacked_aux, to_numpy(aux), d.rtol, d.atol)
        # each weight by its attribute path (``w1``, ``hidden.w``), as the stepping method's gradients
        # are named, not by BrainPy's automatic node name (``RateSNN2.w1``, which changes from run to run)
        paths = {id(v): path for path, v in variables(model).items()}
        for key in train_vars:
            stacked = np.stack([np.asarray(w[0][key]) for w in want])
            label = paths.get(id(train_vars[key]), key)
            compare(report, f"fn {name} grad {label} (mean)", None, stacked.mean(0), grads[key], rtol, atol,
                    scale=np.abs(stacked).mean(0))
            compare(report, f"fn {name} grad {label} (example)", None, stacked, each[key], rtol, atol)
        losses_want = np.array([float(w[1]) for w in want])
        if d.batch > 1 and np.all(losses_want == losses_want[0]):
            strength.functions_alike.append(name)
        if not train_vars or all(not np.any(np.asarray(w[0][k])) for w in want for k in train_vars):
            strength.functions_without_gradient.append(name)
        return [section_from(report, f"fn {name}", lambda q: q.startswith(f"fn {name} ") and "grad" not in q),
                section_from(report, f"fn {name}/grad", lambda q: q.startswith(f"fn {name} grad"))]

    def function_outputs(self, model, name: str, call, values, initial) -> list[Section]:
        """A --function that is not a loss (a recall or predict loop: its result is not a scalar): its
        outputs, example by example, against the generated batched function's; no gradient to take."""
        d = self.drive
        method = self.functions[name][2]
        want = []
        for e in range(d.batch):
            restore(model, initial)
            if self.random:
                seed_example(model, d.seed, e, initial)
            want.append(to_numpy(call(*[v[e] for v in values])))
        restore(model, initial)
        batched = batch_of(self.batched_cls, model, d.batch, d.seed)
        got = to_numpy(getattr(batched, method)(*values))
        restore(model, initial)
        report = Report(steps=1, batch=d.batch)
        compare(report, f"fn {name} output", None, jax.tree.map(lambda *xs: np.stack(xs), *want), got, d.rtol,
                d.atol)
        skipped = f"{name}() is not a loss (its result is not a scalar): its outputs are compared, no gradient"
        return [section_from(report, f"fn {name}", lambda q: q.startswith(f"fn {name} ")),
                Section(f"fn {name}/grad", skipped=skipped)]

    # -- gradients ------------------------------------------------------------------
    def gradients(self, model, strength: Strength) -> list[Section]:
        d = self.drive
        weights = {k: v for k, v in variables(model).items()
                   if isinstance(v, (bm.TrainVar, bm.Parameter))}
        strength.weights = len(weights)
        if not weights:
            skipped = "the model has no weights"
            return [Section("grad/example", skipped=skipped), Section("grad/mean", skipped=skipped)]
        initial = snapshot(model)
        starts = perturbed_starts(model, initial, d.batch, d.seed, d.perturb)
        global_key = bm.random.DEFAULT.value
        projections = self.projections(model, initial)

        def loss_of(outputs):
            total = 0.0
            for t, out in enumerate(outputs):
                for leaf, proj in zip(float_leaves(out), projections[t]):
                    total = total + jnp.sum(leaf * proj)
            return total

        # Through the original, one example at a time, with bm.grad.
        paths = sorted(weights)
        # The batched model keys a built-in's weights by position where BrainPy names them automatically
        # (``seq.children.0.W`` for the original's ``seq.children.Dense0.W``): its gradients by the original's paths.
        original_path = {stable_path(model, p): p for p in paths}

        def keyed(tree):
            return {original_path.get(k, k): v for k, v in param_items(tree)}

        per_example, losses = [], []
        for e in range(d.batch):
            restore(model, starts[e])
            if self.random:
                seed_example(model, d.seed, e, initial)

            def original_loss(e=e, reset=False):
                if reset:  # the harness's rollouts start so: a weight reset_state reads gets its gradient there
                    own_reset(model)
                outs = []
                for t in range(d.steps):
                    tick(d.dt, t)
                    write_ports(model, self.ports, e, t)
                    out = call(getattr(model, self.method), self.args, (a.example(e, t) for a in self.args))
                    # The value now, not the object: an update returning its own Variable would
                    # otherwise be read at the end, every step seeing the last value.
                    outs.append(jax.tree.map(lambda x: x.value if isinstance(x, bm.Array) else x, out,
                                             is_leaf=lambda x: isinstance(x, bm.Array)))
                return loss_of(outs)

            try:
                grads = bm.grad(original_loss, grad_vars=[weights[p] for p in paths])()
            except ValueError as exc:  # `bm.while_loop` (lax.while_loop) in the step: JAX has no reverse mode
                if "Reverse-mode differentiation does not work" not in str(exc):
                    raise
                restore(model, initial)
                bm.random.DEFAULT.value = global_key
                skipped = ("the original is not reverse-differentiable (JAX: reverse-mode differentiation does "
                           "not work for lax.while_loop, which bm.while_loop runs); its gradients cannot be compared")
                return [Section("grad/example", skipped=skipped), Section("grad/mean", skipped=skipped)]
            per_example.append({p: np.asarray(g) for p, g in zip(paths, grads)})
            losses.append(original_loss)
        restore(model, initial)
        bm.random.DEFAULT.value = global_key
        strength.weights_with_gradient = sum(any(np.any(g[p] != 0) for g in per_example) for p in paths)

        # Through the generated pure function, with jax.grad and vmap.
        batched = batch_of(self.batched_cls, model, d.batch, d.seed)
        start_batch(batched, model, starts)
        pure = getattr(batched, pure_name(self.method))
        # The old ``update(self, tdi, x)``: the caller leaves ``tdi`` out and BrainPy fills it from
        # bp.share, as it does for the original; the pure method takes it explicitly.
        after_state = list(inspect.signature(pure).parameters)[2:3]  # after params, state
        takes_shared = self.method == "update" and bool(after_state) and after_state[0] == shared_dict_parameter(
            self.original_cls)
        params, state0 = batched.params(), batched.state()
        per_example_inputs = [a.per_example for a in self.args if a.per_example is not None]
        per_example_inputs += [port.values for port in self.ports]

        def example_run(p, state, *xs):
            xs = iter(xs)
            picked = [next(xs) if a.per_example is not None else None for a in self.args]
            ports = [(port.path, next(xs)) for port in self.ports]
            outs = []
            for t in range(d.steps):
                tick(d.dt, t)
                for path, values in ports:
                    state = set_in_state(state, path, values[t])
                call_args = [x[t] if x is not None else a.shared(t) for a, x in zip(self.args, picked)]
                shared = (bp.share.get_shargs(),) if takes_shared else ()
                state, out = call(functools.partial(pure, p, state, *shared), self.args, call_args)
                outs.append(out)
            return outs, state

        def example_loss(p, state, *xs):
            return loss_of(example_run(p, state, *xs)[0])

        def example_final_state(p, state, *xs):  # what the steps leave in the float state
            return sum(jnp.sum(leaf) for leaf in float_leaves(example_run(p, state, *xs)[1]))

        in_axes = (None, 0, *([0] * len(per_example_inputs)))
        zero = [p for p in paths if not any(np.any(g[p] != 0) for g in per_example)]
        outside = []
        if zero:  # read through a branch the inputs never took, or not reaching the loss at all?
            read = keyed(read_leaves(lambda p: jnp.sum(jax.vmap(example_loss, in_axes=in_axes)(
                p, state0, *per_example_inputs)), params))
            strength.weights_without_gradient = [p for p in zero if read.get(p, True)]
            outside = [p for p in zero if not read.get(p, True)]
            if outside:  # of those, the ones the state depends on: their gradient went unchecked
                into_state = keyed(read_leaves(lambda p: jnp.sum(jax.vmap(
                    example_final_state, in_axes=in_axes)(p, state0, *per_example_inputs)), params))
                strength.weights_outside_loss = [p for p in outside if into_state.get(p, False)]
        got_each = jax.vmap(jax.grad(example_loss), in_axes=in_axes)(params, state0, *per_example_inputs)
        got_mean = jax.grad(lambda p: jnp.mean(jax.vmap(example_loss, in_axes=in_axes)(
            p, state0, *per_example_inputs)))(params)
        each = keyed(got_each)  # by the weights' paths: ``hidden.w``, a built-in's ``fc.W``
        mean = keyed(got_mean)

        rep_each, rep_mean = Report(d.steps, d.batch), Report(d.steps, d.batch)
        for p in paths:
            want_each = np.stack([g[p] for g in per_example])
            compare(rep_each, f"gradient {p}", None, want_each, np.asarray(each[p]), d.rtol * 10, d.atol * 10)
            compare(rep_mean, f"gradient {p} (mean)", None, want_each.mean(0), np.asarray(mean[p]),
                    d.rtol * 10, d.atol * 10, scale=np.abs(want_each).mean(0))

        # A weight the steps never read but reset_state does (`self.h.value = bm.tanh(self.h0)`): its
        # gradient comes through the reset every harness rollout starts from. Compared so, from the
        # same starts reset: the original's own reset_state under bm.grad, the pure reset_example.
        unchecked = [p for p in outside if p not in strength.weights_outside_loss]
        reset = getattr(self.original_cls, "reset_state", None)
        own = reset is not None and not getattr(reset, "__module__", "").startswith(("brainpy", "brainstate"))
        if unchecked and own and hasattr(batched, "reset_example"):
            def reset_loss(p, state, *xs):
                return example_loss(p, batched.reset_example(p, state), *xs)

            read = keyed(read_leaves(lambda p: jnp.sum(jax.vmap(reset_loss, in_axes=in_axes)(
                p, state0, *per_example_inputs)), params))
            through = [p for p in unchecked if read.get(p, False)]
            want = []
            if through and declares_random(self.batched_cls):  # draws in the reset: keys not lined up here
                strength.weights_reset_unchecked = through
                strength.reset_unchecked_why = "it draws random numbers, which this check does not line up"
            elif through:
                try:
                    for e in range(d.batch):
                        restore(model, starts[e])
                        grads = bm.grad(functools.partial(losses[e], reset=True),
                                        grad_vars=[weights[p] for p in through])()
                        want.append({p: np.asarray(g) for p, g in zip(through, grads)})
                except Exception as exc:  # noqa: BLE001 - the original's reset under bm.grad: said, not raised
                    want = []
                    strength.weights_reset_unchecked = through
                    strength.reset_unchecked_why = (f"the original's reset_state() under bm.grad raised "
                                                    f"{type(exc).__name__}")
                restore(model, initial)
            if want:
                got_each = keyed(jax.vmap(jax.grad(reset_loss), in_axes=in_axes)(
                    params, state0, *per_example_inputs))
                got_mean = keyed(jax.grad(lambda p: jnp.mean(jax.vmap(reset_loss, in_axes=in_axes)(
                    p, state0, *per_example_inputs)))(params))
                for p in through:
                    want_each = np.stack([g[p] for g in want])
                    compare(rep_each, f"gradient {p} (through reset_state)", None, want_each, np.asarray(got_each[p]),
                            d.rtol * 10, d.atol * 10)
                    compare(rep_mean, f"gradient {p} (through reset_state, mean)", None, want_each.mean(0),
                            np.asarray(got_mean[p]), d.rtol * 10, d.atol * 10, scale=np.abs(want_each).mean(0))
                strength.weights_through_reset = through
                strength.weights_with_gradient += sum(any(np.any(g[p] != 0) for g in want) for p in through)
        return [section_from(rep_each, "grad/example", lambda q: True),
                section_from(rep_mean, "grad/mean", lambda q: True)]

    def projections(self, model, initial):
        """Fixed random weights that turn each step's outputs into one scalar loss."""
        restore(model, initial)
        rng = np.random.default_rng(self.drive.seed + 1)
        key = bm.random.DEFAULT.value
        if self.random:
            seed_example(model, self.drive.seed, 0, initial)
        shapes = []
        for t in range(self.drive.steps):
            tick(self.drive.dt, t)
            write_ports(model, self.ports, 0, t)
            out = call(getattr(model, self.method), self.args, (a.example(0, t) for a in self.args))
            shapes.append([np.shape(leaf) for leaf in float_leaves(out)])
        restore(model, initial)
        bm.random.DEFAULT.value = key
        return [[rng.standard_normal(s).astype(np.float32) for s in step] for step in shapes]

    # -- speed ----------------------------------------------------------------------------
    def speed(self, model) -> float | None:
        """Compiled forward: B single-example runs of the original over the batched run."""
        d = self.drive
        try:
            initial = snapshot(model)
            step = getattr(model, self.method)
            per_example = [a.per_example for a in self.args]

            def original_run(*xs):
                def body(t):
                    tick(d.dt, t)
                    return call(step, self.args, (x[t] if x is not None else a.shared(t)
                                                  for a, x in zip(self.args, xs)))
                return bm.for_loop(body, jnp.arange(d.steps))

            batched = batch_of(self.batched_cls, model, d.batch, d.seed)
            bstep = getattr(batched, self.method)

            def batched_run(*xs):
                def body(t):
                    tick(d.dt, t)
                    return call(bstep, self.args, (x[:, t] if x is not None else a.shared(t)
                                                   for a, x in zip(self.args, xs)))
                return bm.for_loop(body, jnp.arange(d.steps))

            f_orig, f_batch = bm.jit(original_run), bm.jit(batched_run)
            examples = [[None if x is None else jnp.asarray(x[e]) for x in per_example] for e in range(d.batch)]
            whole = [None if x is None else jnp.asarray(x) for x in per_example]
            jax.block_until_ready(f_orig(*examples[0]))
            jax.block_until_ready(f_batch(*whole))
            t0 = time.perf_counter()
            for xs in examples:
                jax.block_until_ready(f_orig(*xs))
            t1 = time.perf_counter()
            jax.block_until_ready(f_batch(*whole))
            t2 = time.perf_counter()
            restore(model, initial)
            return (t1 - t0) / max(t2 - t1, 1e-9)
        except Exception:  # noqa: BLE001 - speed is informative; never fail verification over it
            return None


def float_leaves(tree):
    leaves = jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, bm.Array))
    return [jnp.asarray(leaf.value if isinstance(leaf, bm.Array) else leaf) for leaf in leaves
            if jnp.issubdtype(jnp.asarray(leaf.value if isinstance(leaf, bm.Array) else leaf).dtype, jnp.floating)]


def classify(result: ClassResult, rerun: dict | None) -> None:
    """Round-off if the float64 rerun agrees to 1e-6 of the tolerance; a bug if it still fails, unless
    the model keeps Variables narrower than float64 there (bfloat16...): then it cannot tell."""
    if rerun is None:
        result.classification = "undetermined: the float64 rerun did not run"
        return
    result.x64_max_abs = rerun["max_abs"]
    if rerun["ok_strict"]:
        result.classification = "float32 round-off: float64 agrees"
    elif rerun.get("narrow"):
        result.classification = (f"undetermined: the model keeps {' and '.join(rerun['narrow'])} Variables, which the "
                                 f"float64 rerun does not widen: round-off at that precision cannot be told from a "
                                 f"bug; check with --rtol/--atol suited to it")
    elif not rerun["ok"]:
        result.classification = "transformation bug: float64 disagrees too"
    else:
        result.classification = "undetermined: float64 passes the tolerances but not 1e-6 of them"


def rerun_in_float64(argv: list[str]) -> dict | None:
    env = {**os.environ, X64_ENV: "1", "JAX_ENABLE_X64": "1"}
    proc = subprocess.run([sys.executable, "-m", "batchify", "verify", *argv, "--format", "json"],
                          capture_output=True, text=True, env=env)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None


__all__ = ["ClassResult", "DriveError", "Verifier", "classify", "rerun_in_float64"]


# -- orchestration: what `batchify verify` runs -----------------------------------------------

def run_plans(plans: list[Plan], original_module, generated_module, stateful: dict[str, list[str]],
              rerun_argv=None, probe: bool = False, speed: bool = True) -> list[ClassResult]:
    results = []
    for plan in plans:
        original = getattr(original_module, plan.cls)
        batched = getattr(generated_module, f"{plan.cls}Batched", None)
        if batched is None:
            raise DriveError(f"the generated module has no {plan.cls}Batched; regenerate it")
        method = plan.drive.pick_method(stateful[plan.cls])
        if probe:  # the float64 rerun: strict tolerances first, then the given ones
            strict = replace(plan.drive, rtol=plan.drive.rtol * 1e-6, atol=plan.drive.atol * 1e-6)
            strict_result = Verifier(original, batched, strict, method, original_module).run(speed)
            result = strict_result if strict_result.ok else Verifier(original, batched, plan.drive, method,
                                                                     original_module).run(speed)
            result.classification = "strict" if strict_result.ok else None
            results.append(result)
            continue
        result = Verifier(original, batched, plan.drive, method, original_module).run(speed)
        if not result.ok and rerun_argv is not None:
            classify(result, rerun_in_float64(rerun_argv(plan.cls, method)))
        results.append(result)
    return results


def probe_summary(results: list[ClassResult]) -> dict:
    return {
        "ok": all(r.ok for r in results),
        "ok_strict": all(r.classification == "strict" for r in results),
        "max_abs": max((s.max_abs for r in results for s in r.sections), default=0.0),
        "narrow": sorted({dtype for r in results for dtype in r.narrow}),
    }


def to_json(results: list[ClassResult]) -> dict:
    return {"version": 2, "ok": all(r.ok for r in results), "weak": any(r.weak for r in results), "classes": [
        {**asdict(r), "ok": r.ok, "weak": r.weak, "weak_reasons": r.weak_reasons, "verdict": r.verdict}
        for r in results]}


def format_table(results: list[ClassResult], src: str, generated: str) -> str:
    head = ["class", "method", "B", "T", "forward", "state", "reset", "constructor", "grad/example", "grad/mean",
            "max abs err", "err/tol", "speed-up", "verdict"]
    rows = []
    for r in results:
        cells = {s.name: ("skip" if s.skipped else "ok" if s.ok else "MISMATCH") for s in r.sections}
        err = max((s.max_abs for s in r.sections), default=0.0)
        used = max((s.of_tolerance for s in r.sections), default=0.0)
        rows.append([r.cls, r.method, str(r.batch), str(r.steps), cells["forward"], cells["state"],
                     cells.get("reset", "-"), cells.get("constructor", "-"),
                     cells["grad/example"], cells["grad/mean"], f"{err:.1e}", f"{used:.2g}",
                     f"{r.speedup:.1f}x" if r.speedup else "-", r.verdict])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = [f"batchify verify: {generated} against {src}", ""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    for r in results:
        # a class checked through several methods: each row's lines name its method
        who = f"{r.cls}.{r.method}()" if sum(x.cls == r.cls for x in results) > 1 else r.cls
        lines.append(f"  {who}: covered: {r.strength.summary()}")
        if r.unchecked:
            lines.append(f"  {who}: not checked: {', '.join(m + '()' for m in r.unchecked)}, stateful and never "
                         "called by the method checked; check each with --method NAME (repeatable)")
        for s in r.sections:
            if s.name.startswith("fn ") and not s.name.endswith("/grad"):
                grad = next(g for g in r.sections if g.name == f"{s.name}/grad")
                if grad.skipped:  # not a loss: its outputs alone
                    lines.append(f"  {who}: {s.name[3:]}(): outputs {'ok' if s.ok else 'MISMATCH'} against the "
                                 "original example by example")
                    continue
                lines.append(f"  {who}: {s.name[3:]}(): losses and outputs {'ok' if s.ok else 'MISMATCH'}, "
                             f"gradients (mean and per example) {'ok' if grad.ok else 'MISMATCH'} against bm.grad "
                             f"example by example")
        for reason in r.weak_reasons if r.ok else ():
            lines.append(f"  {who}: WEAK: {reason}")
        for s in r.sections:
            if s.skipped:
                lines.append(f"  {who}: {s.name} skipped: {s.skipped}")
            elif s.note:
                lines.append(f"  {who}: {s.name}: {s.note}")
            for m in s.mismatches:
                lines.append(f"  {who}: {s.name}: {Mismatch(**m)}")
        if not r.ok and r.classification:
            extra = f" (float64 max abs error {r.x64_max_abs:.1e})" if r.x64_max_abs is not None else ""
            lines.append(f"  {who}: float64 rerun: {r.classification}{extra}")
    lines.append("")
    lines.append("err/tol: the largest error as a fraction of its tolerance, atol + rtol * |original| (at most 1 "
                 "passes); max abs err mixes quantities of different scales.")
    lines.append("speed-up: the batched forward (compiled) against B compiled single-example runs of the original.")
    if any(r.weak for r in results):
        lines.append("WEAK: the check passed but could not have failed as it was driven; change the driving "
                     "flags (inputs, steps, --perturb) until it covers the model (--strict exits 1 on WEAK).")
    return "\n".join(lines) + "\n"
