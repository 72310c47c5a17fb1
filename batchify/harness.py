"""The training harness's content: which method is the time step, how inputs, readout and loss
are written. The layout is ``templates/harness.py.jinja``; this module only decides what goes in.
"""

from __future__ import annotations

from typing import NamedTuple, TYPE_CHECKING

from batchify.diagnostics import Diagnostic

if TYPE_CHECKING:  # the CLI imports this module on every run; LibCST only when it transforms
    from batchify.ir import HarnessCode, ModelClass, ModuleIR

INPUT_MODES = ("sequence", "constant")
READOUTS = ("sum", "mean", "last")
LOSSES = ("cross_entropy", "mse", "nll_rate")
FUNCTION = "function:"


class HarnessOptions(NamedTuple):
    method: str | None = None  # default: update, or the only public stepping method
    steps: int | None = None  # default number of steps for constant / function inputs
    input: str = "sequence"  # sequence | constant | function:NAME (NAME(t, x) -> x_t)
    readout: str = "mean"  # sum | mean | last | function:NAME (NAME(outputs) -> prediction)
    loss: str = "cross_entropy"  # cross_entropy | mse | nll_rate | function:NAME (NAME(pred, y) -> scalar)

    def functions(self) -> list[str]:
        """Module-level functions of the source the harness calls (copied into the module)."""
        return [v[len(FUNCTION):] for v in (self.input, self.readout, self.loss) if v.startswith(FUNCTION)]

    def flags(self) -> list[str]:
        """The command-line form, for the regeneration command in the header."""
        out = ["--harness"]
        if self.method:
            out += ["--harness-method", self.method]
        if self.steps is not None:
            out += ["--harness-steps", str(self.steps)]
        for flag, value, default in (("--input-mode", self.input, "sequence"), ("--readout", self.readout, "mean"),
                                     ("--loss", self.loss, "cross_entropy")):
            if value != default:
                out += [flag, value]
        return out

    def problems(self) -> list[str]:
        out = []
        for what, value, allowed in (("input mode", self.input, INPUT_MODES), ("readout", self.readout, READOUTS),
                                     ("loss", self.loss, LOSSES)):
            if value not in allowed and not (value.startswith(FUNCTION) and value[len(FUNCTION):].isidentifier()):
                out.append(f"unknown {what} {value!r} (one of {', '.join(allowed)}, or function:NAME)")
        if self.steps is not None and self.steps < 1:  # a rollout of no step has no output: a NaN loss
            out.append(f"--harness-steps must be at least 1, not {self.steps}")
        return out


def returns_a_value(func) -> bool:
    """Whether ``func`` has a ``return <value>`` of its own (not one of a function nested in it)."""
    import libcst as cst

    from batchify.cstwalk import walk

    nested = {id(n) for f in walk(func.body) if type(f) in (cst.FunctionDef, cst.Lambda) for n in walk(f)}
    return any(type(n) is cst.Return and n.value is not None and id(n) not in nested for n in walk(func.body))


def harness_classes(ir: ModuleIR) -> list[str]:
    """The classes a harness is emitted for: the targets no other target uses as a child or base (a
    class of the file that is not a target does not count: ``--class Layer`` in a file whose ``Net``
    holds a Layer got no harness at all)."""
    targets = [ir.classes[name] for name in ir.targets]
    used = {ch.class_name for c in targets for ch in c.children} | {c.model_base for c in targets if c.model_base}
    return [name for name in ir.targets if name not in used]


def context(ir: ModuleIR, cls: ModelClass, options: HarnessOptions, diagnostics: list[Diagnostic]) -> HarnessCode | None:
    from batchify.ir import HarnessCode  # the CLI imports this module on every run; LibCST only when it transforms

    methods = ir.all_methods(cls)
    stepping = [m for m in methods if m in cls.stateful and (not m.startswith("_") or m == "__call__")
                and m != "reset_state"]
    method = options.method or ("update" if "update" in stepping else stepping[0] if len(stepping) == 1 else None)

    def fail(message: str, node=None) -> None:
        """BFY013 at ``node`` (its line and column), or at the class's line."""
        pos = ir.positions.get(node if node is not None else cls.node)
        column = pos.start.column + 1 if pos and node is not None else 1
        diagnostics.append(Diagnostic(ir.path, pos.start.line if pos else 1, column, "BFY013", message))

    if method is None or method not in stepping:
        fail(f"harness for {cls.name}: choose the stepping method with --harness-method "
             f"(one of {', '.join(stepping) or 'none'})")
        return None
    func = methods[method].node
    reset = methods.get("reset_state")
    required = [p.name.value for p in (reset.node.params.params[1:] if reset is not None else [])
                if p.default is None and p.name.value != "batch_size"]
    if required:  # each rollout resets its example with reset_state(): it could give these nothing
        fail(f"harness for {cls.name}: reset_state() requires {', '.join(required)}, which the harness's reset "
             f"of each example cannot give; give {required[0]} a default", reset.node)
        return None
    if not options.readout.startswith(FUNCTION) and not returns_a_value(func):
        fail(f"harness for {cls.name}: {method}() returns nothing, so the {options.readout} readout has no "
             "output to read: return the output, or read the state with --readout function:NAME", func)
        return None
    args, per_example = [], 0
    for param in func.params.params[1:]:
        name = param.name.value
        if name in ir.shared_args:
            args.append("t")
        elif param.default is None:
            per_example += 1
            args.append("STEP_INPUT")
        else:
            break  # the rest take their defaults
    for param in func.params.kwonly_params:  # by name: shared ones get the step, the rest their defaults
        name = param.name.value
        if name in ir.shared_args:
            args.append(f"{name}=t")
        elif param.default is None:
            fail(f"harness for {cls.name}: {method}() takes the keyword-only {name} without a default, which "
                 f"the harness's rollout cannot give (it gives one per-example input); give {name} a default, "
                 f"or pass it as --shared {name} (the step index)", func)
            return None
    if per_example != 1:
        fail(f"harness for {cls.name}: {method}() must take exactly one per-example input (the others "
             f"--shared, e.g. a time index); it takes {per_example}")
        return None
    # The runtime's rollout scans a sequence itself: the step gets x[t] as x.
    input_expr = {"sequence": "x", "constant": "x"}.get(options.input) or f"{options.input[len(FUNCTION):]}(t, x)"
    args = [input_expr if a == "STEP_INPUT" else a for a in args]
    classifies = options.loss in ("cross_entropy", "nll_rate")
    first = "bfy.first_output(outputs)"
    readout_expr = {
        "sum": f"jnp.sum({first}, axis=0)",
        "mean": f"jnp.mean({first}, axis=0)",
        "last": f"{first}[-1]",
    }.get(options.readout) or f"{options.readout[len(FUNCTION):]}(outputs)"
    loss_expr = {
        "cross_entropy": "optax.softmax_cross_entropy_with_integer_labels(bfy.class_scores(pred), bfy.class_label(y))",
        "mse": "jnp.mean((pred - y) ** 2)",
        "nll_rate": "bfy.nll_of_rates(bfy.class_scores(pred), bfy.class_label(y))",
    }.get(options.loss) or f"{options.loss[len(FUNCTION):]}(pred, y)"
    docs = {
        "sequence": "``x``, step ``t``'s slice of a sequence ``[T, ...]`` per example (T steps)",
        "constant": "``x`` itself at every step",
        "cross_entropy": "softmax cross-entropy of the prediction against an integer label",
        "mse": "mean squared error against a target",
        "nll_rate": "``-log(rate[y] / sum(rate))`` of the output rates + 1e-6 (the seed question's NLL)",
        "sum": "the sum over time of the (first) output",
        "mean": "the mean over time of the (first) output",
        "last": "the (first) output at the last step",
    }

    def doc(value: str, kind: str) -> str:
        if value.startswith(FUNCTION):
            name = value[len(FUNCTION):]
            return {"input": f"``{name}(t, x)``", "readout": f"``{name}(outputs)``",
                    "loss": f"``{name}(pred, y)``"}[kind]
        return docs[value]

    # What the runtime's Harness needs to know, declared in the class statement.
    declared = [f"model={cls.batched_name}"]
    if options.steps is not None and options.input != "sequence":
        declared.append(f"steps={options.steps}")
    if options.input == "sequence":
        declared.append("sequence=True")  # T steps, from the input's leading axis
    if classifies:  # integer class labels (shaped [B] or [B, 1]) and an accuracy
        declared.append("classifies=True")
    if cls.random:
        declared.append("random=True")
    return HarnessCode(
        name=f"{cls.name}Harness",
        bases=("bfy.Harness", *declared),
        batched=cls.batched_name,
        method=method,
        random=cls.random,
        call_args=", ".join(args),
        readout_expr=readout_expr,
        loss_expr=loss_expr,
        input_doc=doc(options.input, "input"),
        readout_doc=doc(options.readout, "readout"),
        loss_doc=doc(options.loss, "loss"),
    )
