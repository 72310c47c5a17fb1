"""Numerical equivalence of a generated batched class with its original (imports jax/brainpy).

The original runs example by example, each from the state it had right after
construction (restored from a snapshot, not through ``reset_state``, which may
re-randomise), examples 1.. from a seeded perturbation of it (``perturbed_starts``), so that
examples differ; the generated class runs ``from_model(original, B)`` on the stacked inputs,
from the same starts. Outputs and every state Variable are compared at every step: floats
within ``rtol``/``atol``, integers and booleans exactly. ``Strength`` says what the check
covered: a check where nothing moved or every example was the same could not have failed.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np

from batchify.drive import DriveError
from batchify.names import SHARED_KEYS


@dataclass
class Arg:
    """One argument of the stepping method: per-example values ``[B, T, ...]``, or shared."""

    per_example: np.ndarray | None = None  # [B, T, ...]
    shared: Callable[[int], Any] | None = None  # step index -> value shared by the batch
    keyword: str | None = None  # passed by name (an argument after one left to its default)

    # Inputs are jax arrays, as a BrainPy user's are: a numpy array would apply ``x >> layer`` elementwise.
    def example(self, e: int, t: int):
        return jax.numpy.asarray(self.per_example[e, t]) if self.per_example is not None else self.shared(t)

    def batch(self, t: int):
        return jax.numpy.asarray(self.per_example[:, t]) if self.per_example is not None else self.shared(t)


@contextlib.contextmanager
def originals_code(model_or_class, method: str):
    """Run the original model's own code: an exception raised in here is the model's (its step, its
    constructor, and BrainPy's code they run: a class of the file deriving from a built-in raises
    there with no frame of the source file in the traceback), tagged ``batchify_original =
    "Foo.update"`` so that verify reports it as the model's (BFY302), not as its own bug."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "batchify_original", None) is None:
            cls = model_or_class if isinstance(model_or_class, type) else type(model_or_class)
            with contextlib.suppress(AttributeError, TypeError):  # (an exception that takes no attributes)
                exc.batchify_original = f"{cls.__name__}.{method}"
        raise


def call(function, args: Sequence[Arg], values):
    """``function`` called with ``values`` (one per ``Arg``), by position or by name as each Arg says."""
    values = list(values)
    return function(*(v for a, v in zip(args, values) if a.keyword is None),
                    **{a.keyword: v for a, v in zip(args, values) if a.keyword is not None})


@dataclass
class Port:
    """An input port: a Variable (by attribute path) the caller writes before every step."""

    path: str
    values: np.ndarray  # [B, T, ...]


def resolve(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def write_ports(model, ports: Sequence[Port], example: int, t: int) -> None:
    """Before step ``t`` of ``example`` on the original: each port's value for it."""
    for port in ports:
        variable = resolve(model, port.path)
        value = bm.asarray(port.values[example, t])
        if jnp.shape(variable.value) != jnp.shape(value):  # a --port shape that is not the Variable's
            raise DriveError(f"--port {port.path}: the model's {port.path} has shape "
                             f"{tuple(jnp.shape(variable.value))}, the port gives {tuple(jnp.shape(value))} (write "
                             f"--port {port.path}={'x'.join(map(str, jnp.shape(variable.value))) or '1'})")
        variable.value = value


def set_in_state(state, path: str, value):
    """``state`` (a generated ``FooState``) with the Variable at ``path`` replaced by ``value``."""
    first, _, rest = path.partition(".")
    if first in getattr(state, "_fields", ()):  # a State field keeps the Variable's own name
        return state._replace(**{first: set_in_state(getattr(state, first), rest, value) if rest else value})
    library = getattr(state, "library", None)
    if isinstance(library, dict):  # a built-in's Variable, keyed by its path (a class batched whole: "model.")
        for key in (path, f"model.{path}"):
            if key in library:
                return state._replace(library={**library, key: value})
    raise KeyError(f"no state Variable at {path!r} to write the port into")


@dataclass
class Mismatch:
    quantity: str  # "output" or "state <name>"
    step: int | None
    example: int | None
    max_abs: float
    max_rel: float

    def __str__(self) -> str:
        if self.max_abs == float("inf") and self.step is None:  # structural: a shape, an attribute
            return f"{self.quantity} differs"
        where = f" first diverges at step {self.step}" if self.step is not None else " diverges"
        who = f" (example {self.example})" if self.example is not None else ""
        return f"{self.quantity}{where}{who}; max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}"


def first_divergences(mismatches: list[Mismatch]) -> list[Mismatch]:
    """One line per quantity: where it first diverged, and its worst errors over all steps."""
    merged: dict[str, Mismatch] = {}
    for m in mismatches:
        old = merged.get(m.quantity)
        if old is None:
            merged[m.quantity] = Mismatch(m.quantity, m.step, m.example, m.max_abs, m.max_rel)
        else:
            old.max_abs, old.max_rel = max(old.max_abs, m.max_abs), max(old.max_rel, m.max_rel)
    return list(merged.values())


@dataclass
class Strength:
    """What a check covered, measured on the original's run (each example alone)."""

    state_leaves: int = 0  # state Variables of the original (children and built-ins included)
    moved: int = 0  # of those, how many changed from their start (beyond a perturbed start's relaxing)
    unmoved: list[str] = field(default_factory=list)  # the others, by path
    # How far the float state that moved got from its start, in multiples of its tolerance (the
    # largest over its elements, steps and examples): a state that moved 10 tolerances would hide a
    # bug changing its updates by 10 %. ``name -> multiple``, for those under ``SENSITIVE``.
    barely: dict[str, float] = field(default_factory=dict)
    examples_differ: bool = False  # some output or state differs between two examples at some step
    spikes: int | None = None  # true values seen in boolean state over the run; None without any
    outputs: int = 0  # float output leaves per step
    outputs_vary: bool = False  # some float output differs between two steps or two examples
    weights: int = 0
    weights_with_gradient: int | None = None  # weights whose gradient is not exactly zero; None: not run
    # Of the weights whose gradient is exactly zero in every example: those the loss reads (through a
    # branch the inputs never take, a spike that never comes: compared as zeros, a check that could
    # not fail), and of those it never reads (the loss is built from the float outputs), the ones
    # the state depends on (a readout accumulated into a Variable, weights reaching only boolean
    # outputs and the state): their gradient went unchecked. A weight the checked method does not
    # touch at all (another method's readout) is in neither: nothing to check here.
    weights_without_gradient: list[str] = field(default_factory=list)
    weights_outside_loss: list[str] = field(default_factory=list)
    # Weights only reset_state reads: their gradient compared through the reset (``weights_through_reset``),
    # or not (``weights_reset_unchecked``, ``reset_unchecked_why`` saying why: a reset drawing random
    # numbers, or one bm.grad cannot take)
    weights_through_reset: list[str] = field(default_factory=list)
    weights_reset_unchecked: list[str] = field(default_factory=list)
    reset_unchecked_why: str = ""
    # Why no reset of the batch was compared: every reset of the original raised (even given its own
    # batch size); the batch's resets could not have failed. Empty: compared, or no reset checked.
    resets_unchecked: str = ""
    functions_alike: list[str] = field(default_factory=list)  # --function losses equal for every example
    functions_without_gradient: list[str] = field(default_factory=list)  # --function gradients all zero
    # Lines of the user's code with a choice on them (a comparison, where, max/min, cond, while; see
    # ``coverage``), and of those the ones some way of which the run never took; None: not measured.
    branches: int | None = None
    untaken: list[str] = field(default_factory=list)
    branches_note: str | None = None  # why branches were not measured, or only in part
    # State the batched constructor drew for each example (reset_state() while it ran): compared by
    # shape only, as from_model copies one example's.
    constructor_shapes_only: list[str] = field(default_factory=list)
    defaults_only: list[str] = field(default_factory=list)  # stepping-method arguments left to their defaults
    # Whether the step takes an input drawn per example; False: only the starts (--perturb) set the
    # examples apart, so that is the advice when a check is weak. None: not known (advice for inputs).
    drawn_inputs: bool | None = None
    nan_only: list[str] = field(default_factory=list)  # outputs and states NaN in every element at every step

    def weak_reasons(self, steps: int, batch: int) -> list[str]:
        reasons = []
        starts = (" (the step takes no input to drive: a larger --perturb moves each example's start further "
                  "from the first's, more --steps let it run longer)" if self.drawn_inputs is False else "")
        if self.state_leaves and not self.moved and not self.outputs_vary:
            reasons.append(f"no state Variable changed and no output varied in {steps} steps{starts}")
        elif self.moved and len(self.barely) == self.moved:
            most = max(self.barely.values())
            reasons.append(f"the state that changed moved at most {most:.0f} times its tolerance from its start in "
                           f"{steps} steps ({', '.join(sorted(self.barely)[:4])}): a bug that changes its updates by "
                           f"less than 1/{max(most, 1.0):.0f} of their size could not show (more --steps, or larger "
                           "inputs)")
        if not self.state_leaves and not self.outputs:
            reasons.append("no state and no float output: nothing was compared")
        if self.nan_only:
            reasons.append(f"NaN in every element at every step of every example: {', '.join(self.nan_only)} "
                           "(NaN compared with NaN agrees, so this could not fail; look for a 0/0 or a log of "
                           "zero the inputs never move away from)")
        if batch > 1 and not self.examples_differ:
            reasons.append("every example of the batch ran the same (inputs and states): mixing examples "
                           "could not show" + starts)
        if self.spikes == 0:
            reasons.append(f"no spike: boolean state never true in {steps} steps (scale the inputs up)")
        if self.weights and self.weights_with_gradient == 0:
            reasons.append("every weight's gradient is exactly zero" + (
                "; the step has no float output for the loss to depend on (return a float, such as the membrane "
                "potential, to check gradients)" if not self.outputs else ""))
        elif self.weights_without_gradient:
            count, names = len(self.weights_without_gradient), ", ".join(self.weights_without_gradient)
            one = count == 1
            reasons.append(f"no gradient reached {names} ({count} of the {self.weights} weights) in any example, "
                           f"though the loss reads {'it' if one else 'them'}: {'its gradient was' if one else 'their gradients were'} "
                           "compared as zeros (drive the inputs into what uses them, e.g. --input-shape x=SHAPE:float32:SCALE)")
        if self.weights_outside_loss and self.weights_with_gradient:  # (none at all: said above)
            names, one = ", ".join(self.weights_outside_loss), len(self.weights_outside_loss) == 1
            reasons.append(f"the gradient of {names} was not checked: {'it does' if one else 'they do'} not reach "
                           f"the step's float outputs, which the gradient check's loss is made of (only the "
                           f"state, or nothing); return what {'it feeds' if one else 'they feed'} from the step to "
                           f"check {'it' if one else 'them'}")
        if self.weights_reset_unchecked:
            names, one = ", ".join(self.weights_reset_unchecked), len(self.weights_reset_unchecked) == 1
            reasons.append(f"the gradient of {names} was not checked: only reset_state reads {'it' if one else 'them'}, "
                           f"and {self.reset_unchecked_why}")
        if self.resets_unchecked:
            reasons.append(f"the resets were not compared, so a wrong reset of the batch could not show: "
                           f"{self.resets_unchecked}")
        if self.untaken:
            count, shown = len(self.untaken), "; ".join(self.untaken[:3]) + ("; ..." if len(self.untaken) > 3 else "")
            reasons.append(f"a choice in the model's code went one way only in {steps} steps ({count} of the "
                           f"{self.branches} lines with one), so the other way could not fail: {shown}"
                           + (starts or " (drive the inputs into it: a larger SCALE, or an OFFSET for negative "
                              "values, in --input-shape x=SHAPE:DTYPE:SCALE:OFFSET)"))
        for name in self.functions_alike:
            reasons.append(f"{name}() gave every example the same loss: mixing examples could not show")
        for name in self.functions_without_gradient:
            reasons.append(f"{name}()'s gradient is exactly zero for every example, or the model has no weights "
                           "to take it for (BrainPy's built-ins make TrainVars in training mode only: --mode "
                           "training)")
        return reasons

    def summary(self) -> str:
        unmoved = ", ".join(self.unmoved[:4]) + (", ..." if len(self.unmoved) > 4 else "")
        barely = ", ".join(f"{n} {r:.0f}x" for n, r in sorted(self.barely.items())[:4])
        parts = [(f"state moved {self.moved}/{self.state_leaves}" + (f" (not: {unmoved})" if self.unmoved else "")
                  + (f" (barely, in tolerances: {barely})" if self.barely else ""))
                 if self.state_leaves else "no state",
                 "examples differ" if self.examples_differ else "examples alike"]
        if self.spikes is not None:
            parts.append(f"{self.spikes} spikes")
        if self.weights and self.weights_with_gradient is not None:
            parts.append(f"gradient non-zero {self.weights_with_gradient}/{self.weights}"
                         + (f" ({len(self.weights_outside_loss)} not reaching the float outputs)"
                            if self.weights_outside_loss else "")
                         + (f" ({', '.join(self.weights_through_reset)} through reset_state)"
                            if self.weights_through_reset else ""))
        elif self.weights:  # (skipped: the section says why)
            parts.append(f"gradients of the {self.weights} weight{'s' if self.weights > 1 else ''} not compared")
        if self.defaults_only:
            parts.append(f"arguments left to their defaults: {', '.join(self.defaults_only)}")
        if self.constructor_shapes_only:
            parts.append(f"constructor state drawn per example, compared by shape: {', '.join(self.constructor_shapes_only)}")
        if self.branches:
            parts.append(f"choices taken every way on {self.branches - len(self.untaken)}/{self.branches} lines")
        if self.branches_note:
            parts.append(f"choices {self.branches_note}")
        return ", ".join(parts)


@dataclass
class Report:
    steps: int
    batch: int
    mismatches: list[Mismatch] = field(default_factory=list)
    max_abs: float = 0.0
    # The largest error as a fraction of its tolerance, atol + rtol * |original| (a pass is <= 1):
    # max_abs alone mixes quantities of very different scales (gradients of 1e5 next to states of 1).
    of_tolerance: float = 0.0
    strength: Strength = field(default_factory=Strength)
    resets_skipped: str | None = None  # why the resets were not compared (the original cannot be reset so)
    resets_left_out: str | None = None  # the resets that were not, when others were, and why

    @property
    def ok(self) -> bool:
        return not self.mismatches


def variables(obj) -> dict[str, bm.Variable]:
    """Every Variable of ``obj`` by attribute path (``hidden.v``, ``traces-0``): BrainPy's
    ``vars(method="relative")``, which gives all items of a top-level VarList the same name."""
    found: dict[str, bm.Variable] = {}
    for path, node in obj.nodes(method="relative").items():
        prefix = f"{path}." if path else ""
        for k, v in vars(node).items():
            if isinstance(v, bm.VarList):
                found.update((f"{prefix}{k}-{i}", item) for i, item in enumerate(v))
            elif isinstance(v, bm.VarDict):
                found.update((f"{prefix}{k}-{key}", item) for key, item in v.items())
            elif isinstance(v, bm.Variable) and k not in getattr(node, "_excluded_vars", ()):
                found[f"{prefix}{k}"] = v
        found.update((f"{prefix}{k}", v) for k, v in node.implicit_vars.items())
    # A view (`bm.VariableView`: the Variables of a slice `self.E[:k]`) reads and writes the Variable
    # it views: that one is perturbed, restored and compared.
    found = {k: v for k, v in found.items() if not isinstance(v, bm.VariableView)}
    # Each once: one reached by two paths (a synapse's `S.pre.spike` is its neuron's `N.spike`) under
    # the shortest, so that it is perturbed, restored, counted and compared once; of two as short, the
    # first BrainPy walks (`pre.spike`, not `delay.delay_target`: the name a bfy.Library keys it by).
    paths: dict[int, str] = {}
    for k, v in found.items():
        if id(v) not in paths or k.count(".") < paths[id(v)].count("."):
            paths[id(v)] = k
    return {k: v for k, v in found.items() if paths[id(v)] == k}


def state_vars(obj) -> dict[str, bm.Variable]:
    """Every non-weight Variable of ``obj`` by its attribute path (``hidden.v``)."""
    weights = (bm.TrainVar, bm.Parameter)
    return {k: v for k, v in variables(obj).items() if not isinstance(v, weights)}


def batched_state_vars(batched, original=None) -> dict[str, bm.Variable]:
    """``state_vars`` of a generated class, where a built-in's single-example Variable (shared with
    the original) stands for its batch of values, which its ``bfy.Library`` keeps. With ``original``,
    also every Variable of the original that a ``bfy.Library`` batches, under the original's name."""
    stand_ins, own = {}, set()
    nodes = batched.nodes(method="relative")
    for path, node in nodes.items():
        if type(node).__name__ == "Library":
            owner = nodes[path.rpartition(".")[0]]
            stand_ins.update({id(v): node.batched[k] for k, v in node.variables.items()})
            stand_ins.update({id(v): getattr(owner, name) for name, v in node.fields.items()})
            own.update(id(v) for v in node.batched.values())
    from batchify.analyse import RESERVED

    def original_name(path: str) -> str:  # `self.state` is `state_` on the batched class
        return ".".join(p[:-1] if p.endswith("_") and p[:-1] in RESERVED else p for p in path.split("."))

    found = {original_name(k): stand_ins.get(id(v), v) for k, v in state_vars(batched).items() if id(v) not in own}
    if original is not None:
        found.update({k: stand_ins[id(v)] for k, v in state_vars(original).items() if id(v) in stand_ins})
    return found


def random_states(obj) -> dict[str, bm.random.RandomState]:
    """The model's own ``RandomState`` objects by attribute path (BrainPy does not list them in vars());
    not BrainPy's global stream held on an attribute (``self.rng = bm.random.default_rng()``), which is
    seeded as the global stream is."""
    return {f"{path}.{k}" if path else k: v for path, node in obj.nodes(method="relative").items()
            for k, v in vars(node).items() if isinstance(v, bm.random.RandomState) and v is not bm.random.DEFAULT}


SHARE = "<bp.share>"  # (not an attribute path: BrainPy's shared context, kept with the model's values)


def snapshot(obj) -> dict[str, np.ndarray]:
    values = {k: np.asarray(v.value) for k, v in variables(obj).items()}
    values.update({k: v.value for k, v in random_states(obj).items()})  # typed keys stay jax arrays
    # What the model keeps in bp.share (bp.share.save('k', ...) in __init__, loaded by the next step) is
    # part of where a run starts: a run left before (the batch's values) must not reach the next.
    values[SHARE] = dict(bp.share.get_shargs())
    return values


def forget_share(keys) -> None:
    """Take ``keys`` out of bp.share (brainstate's environment, which BrainPy's shared context is)."""
    try:
        import brainstate
        from brainpy.math.defaults import env
    except ImportError:  # (another BrainPy layout: they stay, as before)
        return
    for key in keys:
        brainstate.environ.pop(key, None, env=env)


def restore(obj, values: dict[str, np.ndarray]) -> None:
    found = variables(obj)
    if SHARE in values:
        now = bp.share.get_shargs()
        bp.share.save(**{k: v for k, v in values[SHARE].items() if now.get(k, values) is not v})
        forget_share([k for k in now if k not in values[SHARE] and k not in SHARED_KEYS])
    appeared = [k for k in found if k not in values]
    if appeared:  # (a KeyError here was batchify's internal error)
        error = DriveError(f"the original's Variables changed while it ran: {', '.join(appeared)} became "
                         f"{'a Variable' if len(appeared) == 1 else 'Variables'} after it was built (as "
                         "bp.dyn.STDP_Song2000 makes its connection's plain weight one at its first step); "
                         "batchify batches the Variables a model holds once built, so it can neither "
                         "compare nor batch this: create it as a Variable (or TrainVar) when building the model")
        error.model, error.paths = type(obj).__name__, tuple(appeared)
        raise error
    for k, v in found.items():
        v.value = bm.asarray(values[k])
    for k, v in random_states(obj).items():
        v.value = values[k]


def to_numpy(tree):
    """Leaves as numpy arrays; a BrainPy Array counts as one leaf, like the jax Array it wraps."""
    return jax.tree.map(np.asarray, tree, is_leaf=lambda x: isinstance(x, bm.Array))


def compare(report: Report, quantity: str, step: int | None, want, got, rtol: float, atol: float,
            scale=None) -> None:
    """Compare per-leaf; ``want`` stacked over examples on axis 0, like ``got``.

    ``scale`` (a tree like ``want``) makes it a mean over examples instead: no example axis, and
    the relative tolerance taken of ``scale``, the mean of the examples' magnitudes. A mean's
    round-off grows with the terms summed, not with their mean, which cancels to near zero where the
    examples' gradients point different ways (a chaotic network's, say)."""
    scales = jax.tree.leaves(scale) if scale is not None else None
    want_paths, want_def = jax.tree_util.tree_flatten_with_path(want)
    got_leaves, got_def = jax.tree.flatten(got)
    if want_def != got_def:
        report.mismatches.append(Mismatch(f"{quantity} (structure {want_def} vs {got_def})", step, None,
                                          float("inf"), float("inf")))
        return
    for i, ((path, w), g) in enumerate(zip(want_paths, got_leaves)):
        quantity_leaf = quantity + jax.tree_util.keystr(path)
        magnitude = np.abs(np.asarray(scales[i], np.float64)) if scales is not None else None
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape:
            report.mismatches.append(Mismatch(f"{quantity_leaf} (shape {w.shape} vs {g.shape})", step, None,
                                              float("inf"), float("inf")))
            continue
        if w.dtype.kind in "biu":
            bad = w != g
            if bad.any():
                example = int(np.argwhere(bad)[0][0]) if bad.ndim and scales is None else None
                err = float(np.abs(w.astype(np.int64) - g.astype(np.int64)).max())
                report.mismatches.append(Mismatch(quantity_leaf, step, example, err, float("inf")))
                # (the table's columns too: a flag or count must agree exactly, so any difference is past it)
                report.max_abs, report.of_tolerance = max(report.max_abs, err), float("inf")
            continue
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        # The same infinity, or NaN on both sides, is equal; NaN against a number is an infinite error.
        same = (w64 == g64) | (np.isnan(w64) & np.isnan(g64))
        with np.errstate(invalid="ignore"):
            diff = np.where(same, 0.0, np.nan_to_num(np.abs(w64 - g64), nan=np.inf))
        report.max_abs = max(report.max_abs, float(diff.max(initial=0.0)))
        tolerance = np.where(np.isfinite(w64), atol + rtol * (np.abs(w64) if magnitude is None else magnitude), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            used = np.where(diff == 0, 0.0, diff / tolerance)  # an error against a zero tolerance: inf
        report.of_tolerance = max(report.of_tolerance, float(np.nan_to_num(used, nan=np.inf).max(initial=0.0)))
        bad = diff > tolerance
        if bad.any():
            example = int(np.argwhere(bad)[0][0]) if bad.ndim and scales is None else None
            with np.errstate(invalid="ignore"):  # (NaN on both sides is no error; NaN against a number, inf)
                rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(w64), 1e-30))
            rel = float(np.nan_to_num(rel, nan=np.inf).max())
            report.mismatches.append(Mismatch(quantity_leaf, step, example, float(diff.max()), rel))


def tick(dt: float | None, t) -> None:
    """Set BrainPy's shared clock for step ``t``, as DSRunner does (no-op without ``dt``)."""
    if dt is not None:
        import brainpy as bp

        bp.share.save(i=t, t=t * dt, dt=dt)


def clear_inputs(model) -> None:
    """Clear the model's input ports after a step, as DSRunner and ``step_run`` do (``bp.clear_input``):
    a built-in neuron's ``input`` that a step adds its current to is the next step's zero again."""
    import brainpy as bp

    bp.clear_input(model)


def example_key(seed: int, example: int):
    """The seeding rule: example ``i`` of a batch draws from ``fold_in(PRNGKey(seed), i)``,
    exactly what the original draws when BrainPy's global key is set to that key."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), example)


def seed_example(model, seed: int, example: int, initial: dict) -> None:
    """What example ``example`` of a batch draws from, set on the original: BrainPy's global key,
    and for each ``RandomState`` the model holds, ``fold_in(its key, example)``."""
    bm.random.DEFAULT.value = example_key(seed, example)
    for path, variable in random_states(model).items():
        variable.value = jax.random.fold_in(initial[path], example)


def draws_randomly(batched_cls) -> bool:
    import inspect

    return "seed" in inspect.signature(batched_cls.from_model).parameters


def declares_random(batched_cls) -> bool:
    """Whether a generated class says it (a base or a child) draws random numbers; True when unsure
    (a built-in batched whole). ``draws_randomly`` answers whether it takes a seed, which all do."""
    from batchify import runtime

    return runtime.spec_of(batched_cls).random if issubclass(batched_cls, runtime.Batched) else True


def batch_of(batched_cls, model, batch: int, seed: int):
    """``batched_cls.from_model(model, batch)``, with ``seed`` when the class draws random numbers."""
    if draws_randomly(batched_cls):
        return batched_cls.from_model(model, batch, seed=seed)
    return batched_cls.from_model(model, batch)


def perturbed_starts(model, initial: dict, batch: int, seed: int, eps: float) -> list[dict]:
    """Where each example starts: example 0 from ``initial``, examples 1.. from ``initial`` with every
    float state Variable moved by ``eps * max(mean |value|, 0.1) * U(-1, 1)`` per element, drawn from
    ``numpy.random.default_rng(seed + 2)``; with ``eps`` > 0, integer state also moved up by 0, 1 or 2
    and boolean state with a quarter of its flags flipped, per element (``default_rng(seed + 3)``, so
    the float starts do not depend on them): a counter or flag every example moves alike would
    otherwise start and stay equal in every example, and sharing it across the batch could not show.
    Weights and BrainPy's random states stay as they are."""
    rng, discrete = np.random.default_rng(seed + 2), np.random.default_rng(seed + 3)
    dtypes = {k: np.asarray(v.value).dtype for k, v in state_vars(model).items()
              if not isinstance(v, bm.random.RandomState)}
    floats = sorted(k for k, d in dtypes.items() if np.issubdtype(d, np.floating))
    others = sorted(k for k, d in dtypes.items() if np.issubdtype(d, np.integer) or d == np.bool_)
    starts = [initial]
    for _ in range(1, batch):
        start = dict(initial)
        for name in floats if eps else ():
            value = np.asarray(initial[name])
            scale = eps * max(float(np.abs(value).mean()) if value.size else 0.0, 0.1)
            start[name] = (value + scale * rng.uniform(-1.0, 1.0, value.shape)).astype(value.dtype)
        for name in others if eps else ():
            value = np.asarray(initial[name])
            if value.dtype == np.bool_:
                start[name] = value ^ (discrete.random(value.shape) < 0.25)
            else:
                start[name] = (value + discrete.integers(0, 3, value.shape)).astype(value.dtype)
        starts.append(start)
    return starts


def start_batch(batched, model, starts: list[dict]) -> None:
    """Give the batched model the examples' starting states (what ``perturbed_starts`` chose)."""
    if all(s is starts[0] for s in starts):
        return
    for name, variable in batched_state_vars(batched, model).items():
        if name in starts[0] and variable.shape == (len(starts), *np.shape(starts[0][name])):
            variable.value = bm.asarray(np.stack([s[name] for s in starts]))


def own_reset(model) -> None:
    """``model.reset_state()``, given a batch size of 1 where its signature requires one, as the
    batched class resets (``runtime.required_reset_args``; BrainPy wraps the bound method: read the class's).
    A model built in a batching or training mode is given its own batch size (its mode's, 1), as BrainPy
    resets it (``reset_state(1)``; given none it raises) and as the batch resets each example
    (``runtime.example_batch_size``)."""
    from batchify.runtime import example_batch_size, required_reset_args

    reset = type(model).reset_state
    parameters = list(inspect.signature(reset).parameters.values())
    if parameters and parameters[0].kind in (parameters[0].POSITIONAL_ONLY, parameters[0].POSITIONAL_OR_KEYWORD):
        parameters = parameters[1:]  # self (BrainPy's default, wrapped, shows ``(*args, **kwargs)``)
    arguments = dict(zip((p.name for p in parameters), required_reset_args(reset, 1)))
    size = example_batch_size(model)
    if size is not None and any(p.name == "batch_size" for p in parameters):
        arguments["batch_size"] = size
    elif size is not None and any(p.kind is p.VAR_POSITIONAL for p in parameters) and not arguments:
        model.reset_state(size)  # BrainPy's default (``reset_state(self, *args)``): bp.reset_state(model, 1)
        return
    model.reset_state(**arguments)


def bp_reset_state(model) -> None:
    """``bp.reset_state(model)``; ``bp.reset_state(model, 1)`` for a model built in a batching or
    training mode (its own batch size, as BrainPy's trainers reset it)."""
    import brainpy as bp

    from batchify.runtime import example_batch_size

    size = example_batch_size(model)
    bp.reset_state(model, *(() if size is None else (size,)))


def batch_bp_reset_state(batched) -> None:
    """``bp.reset_state(batched)``: the batch keeps its size (each example is given its own)."""
    import brainpy as bp

    bp.reset_state(batched)


def model_reset(model) -> None:
    """``model.reset()``: the model's own where its class defines one (a partial reset of its fast
    Variables, say), else BrainPy's, which is ``bp.reset_state(model)``; a model built in a batching
    or training mode given its own batch size where the reset takes one."""
    from batchify.runtime import example_batch_size

    reset = getattr(type(model), "reset", None)
    if reset is not None and not getattr(reset, "__module__", "").startswith("brainpy"):
        size = example_batch_size(model)
        if size is not None and "batch_size" in inspect.signature(reset).parameters:
            model.reset(batch_size=size)
        else:
            model.reset()
    else:
        bp_reset_state(model)


# The resets compared after the steps: the original's, and the batched class's for the whole batch.
RESETS = {"reset()": (model_reset, lambda batched: batched.reset()),
          "bp.reset_state": (bp_reset_state, batch_bp_reset_state),  # BrainPy's own sweep over the batch's nodes
          "reset_state()": (own_reset, lambda batched: batched.reset_state())}


def run_resets(model, variables_: dict) -> dict[str, dict[str, np.ndarray] | str]:
    """Each of ``RESETS`` applied to ``model`` as it is now (each from here): the state it leaves; or
    why the original cannot be reset so (that reset is then not compared; the others still are)."""
    after, key = snapshot(model), bm.random.DEFAULT.value
    out: dict[str, dict[str, np.ndarray] | str] = {}
    for kind, (reset, _) in RESETS.items():
        restore(model, after)
        bm.random.DEFAULT.value = key
        try:
            reset(model)
        except Exception as exc:  # noqa: BLE001 - the original's own limitation, reported as a skip
            out[kind] = (f"the original's {kind} raised {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:200] if str(exc) else ''}")
            continue
        out[kind] = {k: np.asarray(v.value) for k, v in variables_.items()}
    restore(model, after)
    bm.random.DEFAULT.value = key
    return out


def run_original(model, method: str, args: Sequence[Arg], batch: int, steps: int, starts: list[dict],
                 dt: float | None = None, seed: int | None = None, ports: Sequence[Port] = (), resets=None):
    """Each example alone, from its start: outputs[e][t] and states[e][t] (after step t).

    With ``seed``, BrainPy's global key is set to example ``e``'s key before it runs. With a list
    ``resets``, each example's ``run_resets`` after its steps is appended to it.
    """
    outputs, states = [], []
    for e in range(batch):
        restore(model, starts[e])
        if seed is not None:
            seed_example(model, seed, e, starts[0])
        step = getattr(model, method)
        per_step, per_state = [], []
        variables_ = state_vars(model)
        for t in range(steps):
            tick(dt, t)
            write_ports(model, ports, e, t)
            with originals_code(model, method):
                out = call(step, args, (a.example(e, t) for a in args))
            per_step.append(to_numpy(out))
            # (before the ports are cleared: a step whose only effect is `self.post.input += I` shows there)
            per_state.append({k: np.asarray(v.value) for k, v in variables_.items()})
            clear_inputs(model)
        outputs.append(per_step)
        states.append(per_state)
        if resets is not None:
            resets.append(run_resets(model, variables_))
    restore(model, starts[0])
    return outputs, states


# A moved state is compared with sensitivity when it got this many tolerances from its start: a bug
# changing its updates by 1 % then shows.
SENSITIVE = 100.0


def measure(starts: list[dict], outputs, states, rtol: float = 1e-5, atol: float = 1e-5) -> Strength:
    """What the original's run covered (see ``Strength``)."""
    s = Strength()
    names = sorted(states[0][0]) if states and states[0] else []
    s.state_leaves = len(names)

    def moved(name: str) -> bool:
        # In example 0 (its start as the model has it), or in another example further than its start
        # was perturbed: a state that only relaxes from its perturbation (a refractory counter whose
        # branch the inputs never take) was not driven, and a wrong branch there could not show.
        def far(e: int) -> float:
            return max((float(np.max(np.abs(np.asarray(step[name], float) - np.asarray(starts[e][name], float))))
                        for step in states[e] if np.size(step[name])), default=0.0)

        if any(not np.array_equal(step[name], starts[0][name], equal_nan=True) for step in states[0]):
            return True
        return any(far(e) > float(np.max(np.abs(np.asarray(starts[e][name], float)
                                                - np.asarray(starts[0][name], float)), initial=0.0))
                   for e in range(1, len(states)))

    unmoved = [name for name in names if not moved(name)]
    s.moved, s.unmoved = len(names) - len(unmoved), unmoved

    def tolerances(name: str) -> float:  # the farthest it got from its start, in its tolerances
        far = 0.0
        for e, run in enumerate(states):
            start = np.asarray(starts[e][name], float)
            for step in run:
                now = np.asarray(step[name], float)
                if np.any(np.isnan(start) & ~np.isnan(now)):
                    return float("inf")  # from NaN ("no decision yet") to a number: no small change
                # (a number turned NaN is no move a check could see: NaN compared with NaN agrees)
                with np.errstate(invalid="ignore"):
                    ratio = np.abs(now - start) / (atol + rtol * np.abs(start))
                far = max(far, float(ratio[np.isfinite(ratio)].max(initial=0.0)))
        return far

    floats = [n for n in names if n not in unmoved and np.issubdtype(np.asarray(states[0][0][n]).dtype, np.floating)]
    s.barely = {n: r for n in floats if (r := tolerances(n)) < SENSITIVE}
    flat = [[[np.asarray(x) for x in jax.tree.leaves(out)] + [step[n] for n in names]
             for out, step in zip(outputs[e], states[e])] for e in range(len(outputs))]
    s.examples_differ = any(not np.array_equal(a, b, equal_nan=True) for e in range(1, len(flat))
                            for step0, step in zip(flat[0], flat[e]) for a, b in zip(step0, step))
    booleans = [n for n in names if np.asarray(states[0][0][n]).dtype == np.bool_]
    if booleans:
        # Spikes the model made: a flag turned true by a step, not one true from the start (examples 1..
        # start from perturbed flags, which a latch `fired |= spike` keeps without ever firing).
        s.spikes = int(sum(np.count_nonzero(np.asarray(step[n]) & ~np.asarray(before[n]))
                           for e, run in enumerate(states) for before, step in zip([starts[e], *run], run)
                           for n in booleans))
    first = [np.asarray(x) for x in jax.tree.leaves(outputs[0][0])] if outputs and outputs[0] else []
    s.outputs = sum(np.issubdtype(x.dtype, np.floating) for x in first)
    # A stateless step (an already functional `step(x, h) -> h_next`) is covered by its outputs.
    s.outputs_vary = any(not np.array_equal(a, np.asarray(b), equal_nan=True) for run in outputs for out in run
                         for a, b in zip(first, jax.tree.leaves(out)))

    # NaN compared with NaN agrees (``compare``): what is NaN throughout could not fail.
    def nan_throughout(values) -> bool:
        values = [np.asarray(v) for v in values]
        return bool(values) and all(np.issubdtype(v.dtype, np.floating) and v.size and np.isnan(v).all()
                                    for v in values)

    leaves = len(first)
    s.nan_only = [("the output" if leaves == 1 else f"output {i}") for i in range(leaves)
                  if nan_throughout(jax.tree.leaves(out)[i] for run in outputs for out in run)]
    s.nan_only += [name for name in names if nan_throughout(step[name] for run in states for step in run)]
    return s


def check_equivalence(model, batched_cls, method: str, args: Sequence[Arg], *, batch: int, steps: int,
                      rtol: float = 1e-5, atol: float = 1e-5, driver: str = "eager",
                      dt: float | None = None, seed: int = 0, perturb: float = 0.05,
                      ports: Sequence[Port] = ()) -> Report:
    """Run ``model`` example by example and ``batched_cls.from_model(model, batch)`` on the batch.

    ``driver`` is how the batched class is stepped: ``eager`` (a Python loop; every state is
    compared at every step) or ``for_loop`` (``bm.for_loop`` over the steps, compiled; the final
    state). With ``dt``, BrainPy's shared clock (``bp.share``: ``i``, ``t``, ``dt``) is set before
    every step, as DSRunner does. ``perturb``: see ``perturbed_starts`` (0: every example alike).
    """
    initial = snapshot(model)
    starts = perturbed_starts(model, initial, batch, seed, perturb)
    random = draws_randomly(batched_cls)
    global_key = bm.random.DEFAULT.value
    want_resets = [] if driver == "eager" else None
    want_out, want_state = run_original(model, method, args, batch, steps, starts, dt, seed if random else None,
                                        ports, want_resets)
    bm.random.DEFAULT.value = global_key
    batched = batch_of(batched_cls, model, batch, seed)
    start_batch(batched, model, starts)
    got_vars = batched_state_vars(batched, model)
    # A port's Variable by the name it is listed under: one reached by two paths is listed once
    # (``pre.spike`` is also a delay's ``delay.delay_target``), maybe not under the port's.
    listed = {id(v): k for k, v in state_vars(model).items()}
    port_names = {port.path: listed.get(id(resolve(model, port.path)), port.path) for port in ports}
    step = getattr(batched, method)
    got_state = None
    if driver == "eager":
        got_out, got_state = [], []
        for t in range(steps):
            tick(dt, t)
            for port in ports:
                got_vars[port_names[port.path]].value = bm.asarray(port.values[:, t])
            got_out.append(to_numpy(call(step, args, (a.batch(t) for a in args))))
            got_state.append({name: np.asarray(got_vars[name].value) for name in want_state[0][0]})
            clear_inputs(batched)
    elif driver == "for_loop" and not ports:
        def body(t):
            tick(dt, t)
            out = call(step, args, (_traced(a, t) for a in args))
            clear_inputs(batched)
            return out

        stacked = to_numpy(bm.for_loop(body, np.arange(steps)))
        got_out = [jax.tree.map(lambda x, t=t: x[t], stacked) for t in range(steps)]
    else:
        raise ValueError(f"unknown driver {driver!r}")
    report = Report(steps, batch, strength=measure(starts, want_out, want_state, rtol, atol))
    if want_resets:
        compare_resets(report, batched, got_vars, want_resets, list(want_state[0][0]), rtol, atol)
        if not declares_random(batched_cls) and any(s is not starts[0] for s in starts):
            # Again from the perturbed starts: a reset that leaves a Variable alone passes from a last
            # step that happened to leave it at its reset value (no spike then), not from these.
            variables_ = state_vars(model)
            from_starts = []
            for e in range(batch):
                restore(model, starts[e])
                from_starts.append(run_resets(model, variables_))
            restore(model, initial)
            start_batch(batched, model, starts)
            compare_resets(report, batched, got_vars, from_starts, list(want_state[0][0]), rtol, atol,
                           when=" from the start")
    for t in range(steps):
        want = jax.tree.map(lambda *xs: np.stack(xs), *[want_out[e][t] for e in range(batch)])
        compare(report, "output", t, want, got_out[t], rtol, atol)
    for name in want_state[0][0]:  # the original's Variables; the batched rng_key has no counterpart
        for t in range(steps) if got_state is not None else [steps - 1]:
            want = np.stack([s[t][name] for s in want_state])
            got = got_state[t][name] if got_state is not None else np.asarray(got_vars[name].value)
            compare(report, f"state {name}", t, want, got, rtol, atol)
    return report


def compare_resets(report: Report, batched, got_vars: dict, want: list, names: list[str], rtol: float,
                   atol: float, when: str = "") -> None:
    """After the steps: the batch reset by ``batched.reset()`` and ``batched.reset_state()`` (each
    from the state the steps left, or the one the batch holds, ``when``) against each example reset
    alone (``run_resets``). A reset the original cannot do (``bp.reset_state`` of a model whose
    ``reset_state`` requires a batch size) is left out and named; the others are compared."""
    why = {kind: next((w[kind] for w in want if isinstance(w[kind], str)), None) for kind in RESETS}
    left_out = [kind for kind in RESETS if why[kind] is not None]
    if len(left_out) == len(RESETS):
        report.resets_skipped = why[left_out[0]]
        report.strength.resets_unchecked = why[left_out[0]]
        return
    if left_out and report.resets_left_out is None:
        report.resets_left_out = f"{' and '.join(left_out)} not compared: {why[left_out[0]]}"
    after = batched.state()
    for kind, (_, reset) in RESETS.items():
        if kind in left_out:
            continue
        batched.set_state(after)
        reset(batched)
        for name in names:
            compare(report, f"reset {kind}{when} {name}", None, np.stack([w[kind][name] for w in want]),
                    np.asarray(got_vars[name].value), rtol, atol)
    batched.set_state(after)


def _traced(arg: Arg, t):
    """The batch's value of ``arg`` at a traced step index ``t`` (inside bm.for_loop)."""
    if arg.per_example is not None:
        return jax.numpy.asarray(arg.per_example)[:, t]
    return arg.shared(t)
