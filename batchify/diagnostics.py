"""Diagnostics: what batchify reports instead of tracebacks.

Every problem a user can cause is a :class:`Diagnostic` with a stable code; the
codes, their meaning and their exit status are listed once, in ``CODES``, and
documented in ``docs/diagnostics.md`` (a test keeps the two in step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

EXIT_OK = 0
EXIT_FAIL = 1  # stale output, or diagnostics
EXIT_USAGE = 2
EXIT_INTERNAL = 123


class Code(NamedTuple):
    summary: str
    exit_code: int = EXIT_FAIL


CODES: dict[str, Code] = {
    # Input and output.
    "BFY001": Code("syntax error in the source file"),
    "BFY002": Code("the source cannot be read (missing, a directory, or no permission)"),
    "BFY003": Code("the source is not valid UTF-8"),
    "BFY004": Code("no BrainPy model class in the source"),
    "BFY005": Code("a class named with --class is not a model class in the source"),
    "BFY006": Code("the output path is the source path; batchify never overwrites its input", EXIT_USAGE),
    "BFY007": Code("the output cannot be written"),
    "BFY008": Code("the output file is stale (--check)"),
    "BFY016": Code("[tool.batchify] in pyproject.toml is invalid (an absolute path, an output outside the project)",
                   EXIT_USAGE),
    "BFY009": Code("the source nests too deeply (past batchify's documented limit)"),
    "BFY018": Code("the command line is invalid (with --format json; otherwise a plain 'batchify: error:' line)",
                   EXIT_USAGE),
    # Names the generated module needs.
    "BFY010": Code("the model uses a name that the generated class reserves"),
    "BFY011": Code("a module-level name clashes with a name the generated module imports"),
    "BFY013": Code("the training harness cannot be generated as configured (method, input, readout or loss)"),
    "BFY012": Code("a name the model uses is not defined at module level (only in a __main__ block, or nowhere), "
                   "or comes from a star import of brainpy, jax or numpy"),
    "BFY014": Code("copied module-level code uses an instance of a model class (a module-level `model = Foo(...)`), "
                   "or module-level code changes a model class (`Foo.gain = 3.0`, a class decorator), or a model "
                   "class is defined twice"),
    "BFY015": Code("--shared NAME names no argument of a stepping method and no state Variable"),
    "BFY019": Code("a warning: a class with a stepping method derives from a class imported from another file, "
                   "and is left out of the generated module", EXIT_OK),
    "BFY017": Code("a function named with --function is not a module-level function of the source, or cannot "
                   "be made a method of the model it drives"),
    # Model structure.
    "BFY101": Code("a Variable is created outside __init__"),
    "BFY102": Code("a Variable is created but not assigned directly to a self attribute"),
    "BFY103": Code("an unsupported Variable container (TimeDelay, NodeList, NodeDict, self.register_delay)"),
    "BFY104": Code("a BrainPy built-in held as library code reaches a model of this file built for it alone, "
                   "or a weight of this file; or an object batchify cannot see (built by a class given to the "
                   "constructor, or imported) is built from models of this class"),
    "BFY105": Code("child models are held in a container (list, dict, Sequential) or handed to the base "
                   "constructor (`super().__init__(E=E)`)"),
    "BFY106": Code("a model holds an instance of a class of this file that creates Variables but is not a model, "
                   "or a model class is defined inside another"),
    "BFY107": Code("one attribute holds a Variable on one path and a model on another, or models of two classes"),
    "BFY108": Code("a model class derives from two or more model classes of the same file"),
    # Method bodies.
    "BFY201": Code("a weight (TrainVar / Parameter) is written in a stepping method"),
    "BFY202": Code("a plain attribute is assigned in a stepping method"),
    "BFY203": Code("state is written inside a nested function or lambda, or read in one a loop body calls"),
    "BFY204": Code("a stateful call or random draw sits where it cannot be moved out of the expression"),
    "BFY205": Code("an unsupported way of writing a Variable"),
    "BFY206": Code("a numpy.random draw in a stepping method (it would run once, when the step is traced)"),
    "BFY207": Code("an unsupported signature for a stepping method (**kwargs or positional-only)"),
    "BFY208": Code("a property that changes state, or a classmethod or staticmethod that touches it"),
    "BFY209": Code("an attribute is used as a Variable but is not one of the class's Variables"),
    "BFY210": Code("a Python if, while, conditional expression or assert tests a Variable (a traced, per-example value)"),
    "BFY211": Code("a Variable learned online (a weight written outside update) needs --shared NAME=mean|sum|example"),
    "BFY212": Code("a function stored on self in __init__ reads a Variable and reaches a child, a built-in or a method"),
    "BFY213": Code("a Variable is reached by another name in a way batchify cannot follow"),
    "BFY214": Code("a stepping method has a Python side effect (print, reseeding, writing a global or a list)"),
    "BFY215": Code("a statement reads state before a call in it changes that state (`self.V + self.step(x)`, "
                   "`self.V.value += self.step(x)`)"),
    "BFY216": Code("a stateful method has a decorator that may change what it computes"),
    "BFY217": Code("a subclass's override touches state where the base's method did not, and a stepping method "
                   "of the base calls it"),
    "BFY218": Code("super(Other, self) in a class that does not derive from Other (Python raises TypeError there)"),
    "BFY219": Code("--class names a class that its parent builds with the parent's models (`ExpSyn(self.E, self.I)`)"),
    "BFY220": Code("a stepping method runs BrainPy's sweep over a model (`bp.reset_state(self)`, `self.reset()`, "
                   "`bp.clear_input(self)`)"),
    "BFY221": Code("a stepping method runs BrainPy's inherited `step_run` (`bm.for_loop(self.step_run, ...)`)"),
    "BFY222": Code("a self-documenting f-string field (`{expr=}`) that batchify rewrites spans lines, or holds a "
                   "backslash, `!=` or a raw string's own quote"),
    # Verification.
    "BFY301": Code("verification lacks driving information (constructor arguments, method, inputs)", EXIT_USAGE),
    "BFY303": Code("verification FAIL: the generated module raised when run (a transformation bug)"),
    "BFY302": Code("verification cannot run (bad driving information, or the generated module does not load)",
                   EXIT_USAGE),
    # batchify's own failure.
    "BFY900": Code("internal error: the generated module does not compile (please report it)", EXIT_INTERNAL),
}


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    column: int
    code: str
    message: str
    end_line: int | None = None
    end_column: int | None = None
    severity: str = "error"

    def __post_init__(self) -> None:
        if self.code not in CODES:  # a code must be documented before it can be raised
            raise ValueError(f"undocumented diagnostic code {self.code}")

    @property
    def exit_code(self) -> int:
        return CODES[self.code].exit_code

    def format(self) -> str:
        message = " ".join(self.message.split())  # always one line
        kind = "" if self.severity == "error" else f"{self.severity}: "
        return f"{self.path}:{self.line}:{self.column}: {self.code} {kind}{message}"

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line if self.end_line is not None else self.line,
            "end_column": self.end_column if self.end_column is not None else self.column,
            "code": self.code,
            "message": " ".join(self.message.split()),
            "severity": self.severity,
        }


class BatchifyError(Exception):
    """Raised inside the pipeline; carries the diagnostics to report."""

    def __init__(self, diagnostics: list[Diagnostic]):
        diagnostics = list(dict.fromkeys(diagnostics))  # each once (a class scanned twice finds it twice)
        super().__init__("\n".join(d.format() for d in diagnostics))
        self.diagnostics = diagnostics


def exit_code_for(diagnostics: list[Diagnostic]) -> int:
    return max((d.exit_code for d in diagnostics), default=EXIT_OK)
