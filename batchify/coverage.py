"""Branch coverage of the original's run, for ``batchify verify``.

A check passes vacuously on a branch the inputs never take: a threshold never crossed leaves the
reset untested, a rectifier never fed a negative input is the identity. This module traces one
example's whole run of the original model (its Variables the program's inputs), evaluates that
program on the run's concrete values, and records, for every choice the user's own code makes,
which ways it went:

- a comparison (``V >= V_th``): true somewhere and false somewhere;
- ``where``/``lax.select``: every case chosen somewhere;
- ``max``/``min`` (``relu``, ``clip``, ``bm.maximum``): each argument the larger somewhere;
- ``lax.cond``/``bm.ifelse``: every branch taken; ``while_loop``: the body ran at least once;
- a Heaviside step (BrainPy's surrogate spikes): its input non-negative and negative somewhere.

"The user's own code" is where a primitive comes from: the first frame of its traceback outside
jax, BrainPy's math layer and its dependencies lies outside the installed packages. A library's
internals (a random draw, a built-in neuron, ``jnp.remainder``'s sign fix-up) are not the user's
choices and are not counted; a jitted library function counts as a whole only when it is itself a
choice (``where``, ``clip``, ``relu``...). Loop bodies (``scan``: ``bm.for_loop``; ``while``) and the
branch a ``cond`` takes are entered, iteration by iteration, up to a budget of evaluated primitives
(``Coverage.budget``); past it a loop runs whole and its remaining iterations are not measured
(``Coverage.cut`` counts them). This module imports jax and brainpy; the transform path never does.
"""

from __future__ import annotations

import linecache
import os
import sysconfig
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.extend import core as jex_core

COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
# Jitted or custom-derivative library functions that are a choice as a whole: their inner
# ``select_n``/``max``/``min`` are the user's, at the call's place.
CHOICE_FUNCTIONS = {"where", "select", "clip", "relu", "relu6", "leaky_relu", "hard_tanh", "heaviside",
                    "maximum", "minimum", "fmax", "fmin"}
CALLS = {"jit", "pjit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
         "custom_vjp_call", "custom_vjp_call_jaxpr"}
# The thin layers between a user's line and the primitive it binds: all of jax, and the parts of
# BrainPy and its dependencies that only forward to jax (operators on a Variable, bm.where,
# activations, control flow, surrogate spikes). Any other library frame is that library's own
# code (a random draw, a built-in neuron): its choices are not the user's.
_THROUGH = tuple(part.replace("/", os.sep) for part in (
    "/jax/", "/jaxlib/", "/saiunit/custom_array.py", "/saiunit/math/", "/brainunit/",
    "/brainpy/math/_utils.py", "/brainpy/math/ndarray.py", "/brainpy/math/compat_numpy.py",
    "/brainpy/math/activations.py", "/brainpy/math/others.py", "/brainpy/math/object_transform/controls.py",
    "/brainpy/_src/math/", "/brainstate/transform/_conditions.py", "/brainstate/transform/_loop_",
    "/brainstate/transform/_named_scope.py", "/braintools/surrogate/", "/brainpy/math/surrogate"))
_INSTALLED = tuple({os.path.realpath(p) + os.sep for key in ("purelib", "platlib", "stdlib", "platstdlib")
                    if (p := sysconfig.get_paths().get(key))})


@dataclass(frozen=True)
class Place:  # (a line, not a column: jax's traceback frames carry none)
    file: str
    line: int
    kind: str  # "compare", "select", "max", "min", "cond", "while", "heaviside"


# The outcomes each kind must show to count as taken both (every) way(s).
def _required(kind: str, ways: int) -> set:
    return {"compare": {True, False}, "max": {"first", "second"}, "min": {"first", "second"},
            "while": {"ran"}, "heaviside": {"on", "off"}}.get(kind, set(range(ways)))


@dataclass
class Coverage:
    """Per place in the user's code: the outcomes seen over every example and step."""

    seen: dict[Place, set] = field(default_factory=dict)
    ways: dict[Place, int] = field(default_factory=dict)
    # Primitives left to evaluate one by one inside loop bodies (each a Python-level bind: a model
    # looping thousands of sub-steps a step would otherwise take minutes), and the loop iterations
    # run whole once it was spent.
    budget: int = 200_000
    cut: int = 0

    def add(self, place: Place, outcomes, ways: int = 2) -> None:
        self.seen.setdefault(place, set()).update(outcomes)
        self.ways[place] = ways

    def lines(self) -> dict[tuple[str, int], list[str]]:
        """Each source line with a choice on it: what it never did (empty: covered)."""
        out: dict[tuple[str, int], list[str]] = {}
        for place in sorted(self.seen, key=lambda p: (p.file, p.line, p.kind)):
            missing = _required(place.kind, self.ways[place]) - self.seen[place]
            out.setdefault((place.file, place.line), []).extend(_describe(place, m, self.ways[place]) for m in sorted(missing, key=str))
        return out

    def untaken(self) -> list[str]:
        """``file:line `source`: never ...`` for each line with a way never taken."""
        found = []
        for (file, line), missing in self.lines().items():
            if missing:
                text = linecache.getline(file, line).strip()
                text = text if len(text) <= 70 else text[:67] + "..."
                found.append(f"{os.path.basename(file)}:{line} `{text}`: {'; '.join(dict.fromkeys(missing))}")
        return found


def _describe(place: Place, missing, ways: int) -> str:
    if place.kind == "compare":
        return f"the comparison was never {'true' if missing else 'false'}"
    if place.kind == "select":
        if ways == 2:  # where(c, a, b) is select_n(c, b, a): case 1 is c's true side
            return f"the where() never took its {'true' if missing == 1 else 'false'} side"
        return f"the select never took case {missing}"
    if place.kind in ("max", "min"):  # (argument order is the library's: clip is max(lo, x), relu max(x, 0))
        return f"{place.kind}() always chose the same argument"
    if place.kind == "cond":
        return f"branch {missing} never taken"
    if place.kind == "while":
        return "the loop body never ran"
    return "the step's input was never non-negative" if missing == "on" else "the step's input was never negative"


def _is_user_file(path: str) -> bool:
    if not path or path.startswith("<"):
        return False
    return not os.path.realpath(path).startswith(_INSTALLED)


def user_place(eqn, kind: str) -> Place | None:
    """Where the user's code bound ``eqn``: its first frame outside the libraries' plumbing
    (``_THROUGH``), when that frame is the user's own file (not an installed package) and the jax
    function the user reached is a choice itself (``jnp.unravel_index``'s own ``where`` is not)."""
    traceback = eqn.source_info.traceback
    if traceback is None:
        return None
    reached = None  # the outermost jax function on the way: the one the user (or a thin wrapper) called
    entry = None  # the outermost function of BrainPy's math layer on the way: the one the user called
    for frame in traceback.frames:  # innermost first
        name = frame.file_name
        if any(part in name for part in _INDEXING):
            return None  # an index's normalisation (`idx < 0`, clamping), not a choice of the model
        if kind != "heaviside" and frame.function_name.rsplit(".", 1)[-1] == "surrogate_grad":
            return None  # a surrogate's gradient, computed with its spike (ReluGrad's max): not a choice
        if any(part in name for part in _THROUGH):
            if _JAX in name and not any(part in name for part in _JAX_MACHINERY):
                reached = frame.function_name.rsplit(".", 1)[-1]
            elif _JAX not in name:
                entry = frame.function_name.rsplit(".", 1)[-1]
            continue
        if not _is_user_file(name) or (reached is not None and reached not in _CHOICE_ENTRIES):
            return None
        if kind in _GUARD_KINDS and entry is not None and not _library_choice(entry):
            return None  # a guard inside a numeric function (bm.exprel's where for x near 0): not the model's
        return Place(name, frame.line_num, kind)
    return None


_JAX = f"{os.sep}jax{os.sep}"
# jax's indexing, reached through the `op` that forwards `x[idx]` (an operator, like `>=`): its
# comparisons and selects wrap negative indices and clamp out-of-range ones.
_INDEXING = tuple(part.replace("/", os.sep) for part in ("/jax/_src/numpy/indexing.py", "/jax/_src/lax/slicing.py"))
# jax's own tracing machinery, between any API function and the primitive it binds.
_JAX_MACHINERY = tuple(f"{os.sep}{name}" for name in (
    "traceback_util.py", "pjit.py", "core.py", "source_info_util.py", "partial_eval.py", "api.py",
    "linear_util.py", "api_util.py", "dispatch.py"))
# The jax functions whose primitives are the choice the user asked for: operators (`op`), ufuncs
# (`jnp.maximum` is a ufunc object), a custom derivative's call (relu), where/select, clip,
# comparisons, cond/switch and the loops.
_CHOICE_ENTRIES = CHOICE_FUNCTIONS | {"op", "__call__", "select_n", "clamp", "greater", "greater_equal", "less",
                                      "less_equal", "equal", "not_equal", "cond", "switch", "while_loop", "fori_loop"}


# The choices a function of BrainPy's math layer (brainunit's, saiunit's) may make for the user: a
# comparison, a where, a max or min reached through a wrapper that is the choice itself (bm.where,
# bm.maximum, bm.relu: `new_fun` around jnp, an Array's operator `__ge__`); reached through any other
# (bm.exprel's where for x near 0, a norm's guard) it is that function's own business, as a jax
# function's is (`reached` above). Conditions, loops and surrogate spikes are the user's either way.
_GUARD_KINDS = frozenset({"compare", "select", "max", "min"})
_LIBRARY_WRAPPERS = frozenset({"new_fun", "wrapper", "fun", "f", "op", "call", "ifelse", "for_loop", "while_loop",
                               "scan", "switch", "cond"})


def _library_choice(entry: str) -> bool:
    return (entry.startswith("__") and entry.endswith("__")) or entry in _LIBRARY_WRAPPERS or \
        entry.lstrip("_") in _CHOICE_ENTRIES


def _kind(primitive: str) -> str | None:
    if primitive in COMPARISONS:
        return "compare"
    if primitive == "select_n":
        return "select"
    if primitive in ("max", "min", "cond", "while"):
        return primitive
    if "heaviside" in primitive:
        return "heaviside"
    return None


def _inner(eqn):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        if inner is not None and hasattr(getattr(inner, "jaxpr", inner), "eqns"):
            return inner
    return None


def _record(coverage: Coverage, place: Place, eqn, invals, outvals) -> None:
    kind = place.kind
    if kind == "compare":
        out = np.asarray(outvals[0])
        coverage.add(place, {True} if out.any() else set())
        coverage.add(place, {False} if not out.all() else set())
    elif kind == "select":
        which = np.asarray(invals[0])
        coverage.add(place, {int(w) for w in np.unique(which)}, ways=len(invals) - 1)
    elif kind in ("max", "min"):
        a, b = (np.asarray(v) for v in invals[:2])
        first, second = (a > b, a < b) if kind == "max" else (a < b, a > b)
        coverage.add(place, ({"first"} if first.any() else set()) | ({"second"} if second.any() else set()))
    elif kind == "cond":
        coverage.add(place, {int(np.asarray(invals[0]))}, ways=len(eqn.params["branches"]))
    elif kind == "while":
        coverage.add(place, {"ran"} if outvals else set())  # (outvals: the iterations it ran)
    elif kind == "heaviside":
        x = np.asarray(invals[0])
        coverage.add(place, ({"on"} if (x >= 0).any() else set()) | ({"off"} if (x < 0).any() else set()))


def evaluate(jaxpr, consts, args, coverage: Coverage, inherited: Place | None = None,
             live_args: list[bool] | None = None) -> list:
    """``jaxpr`` on concrete ``args``, eqn by eqn, recording the user's choices in ``coverage``.
    ``inherited``: the user's call this jaxpr is the inside of (a ``where``), or None. ``live_args``:
    which args depend on the run's inputs and state (default: all); a choice made on constants alone
    (``bm.where(self.noise != 0.0, ...)`` on a constructor setting) is the model's configuration, one
    way for good, not a choice the inputs could drive, and is not counted."""
    env = {}
    live: set = set()

    def read(v):
        return v.val if isinstance(v, jex_core.Literal) else env[v]

    def is_live(v) -> bool:
        return not isinstance(v, jex_core.Literal) and v in live

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    # (the run's inputs are closed over as constants: only literals, Python's own values, are settings)
    live.update(jaxpr.constvars)
    live.update(v for v, on in zip(jaxpr.invars, live_args or [True] * len(jaxpr.invars)) if on)
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        deciding = eqn.invars[:1] if eqn.primitive.name in ("select_n", "cond") else eqn.invars
        decided = any(is_live(v) for v in deciding)
        name = eqn.primitive.name
        kind = _kind(name)
        own = user_place(eqn, kind or "call")
        place = own or inherited
        inner = _inner(eqn) if name in CALLS else None
        if inner is not None:
            closed = inner if hasattr(inner, "consts") else None
            function = str(eqn.params.get("name", "")).lstrip("_")  # jnp.where traces as `_where`
            # A choice function (where, clip, relu) is the user's choice at the call's place; a custom
            # derivative's body is the function the user called (a surrogate spike's forward step).
            through = place if (function in CHOICE_FUNCTIONS or name.startswith("custom_")) else None
            outvals = evaluate(closed.jaxpr if closed else inner, closed.consts if closed else (), invals,
                               coverage, through, [is_live(v) for v in eqn.invars])
        elif name in _ENTERED:
            outvals, ran = _ENTERED[name](eqn, invals, coverage)
            if kind is not None and place is not None and decided:
                _record(coverage, Place(place.file, place.line, kind), eqn, invals, ran)
        else:
            outvals = _bind(eqn, invals)
            if kind is not None and place is not None and decided:
                _record(coverage, Place(place.file, place.line, kind), eqn, invals, outvals)
        for var, val in zip(eqn.outvars, outvals):
            env[var] = val
        if any(is_live(v) for v in eqn.invars):
            live.update(eqn.outvars)
    return [read(v) for v in jaxpr.outvars]


def _bind(eqn, invals, **changed) -> list:
    params = {**eqn.params, **changed}
    with eqn.ctx.manager:  # as jax.core.eval_jaxpr binds it
        outvals = eqn.primitive.bind(*invals, **eqn.primitive.get_bind_params(params))
    return outvals if eqn.primitive.multiple_results else [outvals]


def _body(closed, args, coverage: Coverage) -> list:
    coverage.budget -= len(closed.jaxpr.eqns)
    return evaluate(closed.jaxpr, closed.consts, args, coverage)


def _enter_cond(eqn, invals, coverage: Coverage):
    """The branch taken, entered: its own choices are the user's too."""
    return _body(eqn.params["branches"][int(np.asarray(invals[0]))], invals[1:], coverage), None


def _enter_while(eqn, invals, coverage: Coverage):
    """Iteration by iteration while the budget lasts, then the rest whole. The loop's own
    predicate is not recorded (it is false at the end of every loop): whether it was ever true is
    whether the body ran, the iterations returned second."""
    p = eqn.params
    cond, body, nc, nb = p["cond_jaxpr"], p["body_jaxpr"], p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, carry = invals[:nc], invals[nc:nc + nb], list(invals[nc + nb:])
    ran = 0
    while evaluate(cond.jaxpr, cond.consts, [*cond_consts, *carry], Coverage())[0]:
        if coverage.budget <= 0:
            coverage.cut += 1  # (a loop, not its iterations: they are not counted)
            return _bind(eqn, [*cond_consts, *body_consts, *carry]), ran + 1
        carry = _body(body, [*body_consts, *carry], coverage)
        ran += 1
    return carry, ran


def _enter_scan(eqn, invals, coverage: Coverage):
    """Iteration by iteration (from the end when ``reverse``) while the budget lasts, then the
    rest whole; the per-iteration outputs stacked as the scan stacks them."""
    p = eqn.params
    length = p["length"]
    if "ft_in" in p:  # jax >= 0.12: the operands' and results' groups as flat trees
        consts, carry, xs = (list(group) for group in p["ft_in"].update(invals).unpack())
        n_carry = len(p["ft_out"].unpack()[0])
    else:
        n_consts, n_carry = p["num_consts"], p["num_carry"]
        consts, carry, xs = invals[:n_consts], list(invals[n_consts:n_consts + n_carry]), invals[n_consts + n_carry:]
    if length == 0:
        return _bind(eqn, invals), None
    ys: dict[int, list] = {}
    for i in range(length - 1, -1, -1) if p["reverse"] else range(length):
        if coverage.budget <= 0:  # the rest whole: indices [0, i] from the end, or [i, length)
            rest = range(0, i + 1) if p["reverse"] else range(i, length)
            out = _bind(eqn, [*consts, *carry, *(x[rest.start:rest.stop] for x in xs)], length=len(rest))
            carry = out[:n_carry]
            ys.update({j: [y[j - rest.start] for y in out[n_carry:]] for j in rest})
            coverage.cut += 1
            break
        out = _body(p["jaxpr"], [*consts, *carry, *(x[i] for x in xs)], coverage)
        carry, ys[i] = out[:n_carry], out[n_carry:]
    stacked = [jax.numpy.stack([ys[i][k] for i in range(length)]) for k in range(len(eqn.outvars) - n_carry)]
    return [*carry, *stacked], None


# The primitives whose bodies are entered: each returns its outputs and what ``_record`` reads.
_ENTERED = {"cond": _enter_cond, "while": _enter_while, "scan": _enter_scan}


def trace_and_measure(function, coverage: Coverage) -> None:
    """``function()``, a step loop of a BrainPy model, traced to one program whose inputs are the
    state it reads (BrainPy's ``StatefulFunction``: the model's Variables are left as they were),
    then evaluated on the state's values now, recording into ``coverage``."""
    import brainstate

    traced = brainstate.transform.StatefulFunction(function, name="batchify_coverage")
    closed = traced.get_jaxpr()
    values = jax.tree.leaves([s.value for s in traced.get_states()])
    evaluate(closed.jaxpr, closed.consts, [_as_input(v, var.aval) for v, var in zip(values, closed.jaxpr.invars)],
             coverage)


def _as_input(value, aval):
    """A random key as the traced program takes it: its raw data or a typed key (a RandomState may
    hold either, depending on how it was last seeded)."""
    typed = jax.dtypes.issubdtype(getattr(value, "dtype", None), jax.dtypes.prng_key)
    wants_typed = jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)
    if typed and not wants_typed:
        return jax.random.key_data(value)
    if wants_typed and not typed:
        return jax.random.wrap_key_data(value)
    return value
