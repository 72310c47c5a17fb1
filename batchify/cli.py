"""The command line: the only module that touches argv, files, stdout and exit codes."""

from __future__ import annotations

import argparse
import contextlib
import errno
import itertools
import os
import re
import shlex
import signal
import stat
import sys
import tempfile
import threading
import time
import types
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from batchify import __version__
from batchify.diagnostics import (
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    BatchifyError,
    Diagnostic,
    exit_code_for,
)
from batchify.harness import HarnessOptions
from batchify.names import VARIABLE_MODES
from batchify.provenance import edited_by_hand, source_digest, up_to_date

STDIO = "-"


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="batchify",
        description="Rewrite a single-example BrainPy model into a batched, explicit-state module.",
        epilog="subcommands:\n"
               "  batchify verify SRC GENERATED   check a generated module numerically against its source\n"
               "  batchify hook [FILE ...]        regenerate (or --check) the [tool.batchify] targets, for pre-commit\n"
               "run 'batchify verify --help' or 'batchify hook --help' for their options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", metavar="SRC", help="the model source file, or - for standard input")
    p.add_argument("-o", "--output", metavar="OUT", default=STDIO,
                   help="where to write the generated module (default, or -: standard output)")
    p.add_argument("--class", dest="classes", metavar="NAME", action="append", default=[],
                   help="transform only this model class (and the classes it needs); repeatable")
    p.add_argument("--function", dest="functions", metavar="NAME", action="append", default=[],
                   help="a module-level function of yours that drives a model instance (a single-example "
                   "loss_fun calling model.reset_state() and model.step_run): batched alongside the class, "
                   "with its batch gradient NAME_grad; repeatable")
    p.add_argument("--shared", metavar="NAME", action="append", default=[],
                   help="a stepping-method argument shared by every example (e.g. a time index); repeatable. "
                   "With --verify, NAME=time or NAME=VALUE says how to drive it. For a Variable learned online: "
                   "NAME=mean or NAME=sum keeps one copy for the batch, updated by the mean or sum of the "
                   "examples' updates; NAME=example gives each example its own copy")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if OUT is missing or differs from what would be generated")
    p.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of OUT against the new output")
    p.add_argument("--force", action="store_true",
                   help="replace OUT even if batchify did not generate it, or it was edited since it was generated "
                   "(without --force both are refused: batchify never destroys what it did not write)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="how diagnostics are printed on stderr")
    p.add_argument("--stdin-filename", metavar="PATH", help="the path to report for a source read from standard input")
    p.add_argument("--absolute-paths", action="store_true", help="report absolute paths in diagnostics")
    p.add_argument("--verify", action="store_true",
                   help="after writing OUT, check it numerically against SRC (imports jax and brainpy)")
    h = p.add_argument_group("training harness (emitted with --harness)")
    h.add_argument("--harness", action="store_true", help="add a training harness for each top-level model class")
    h.add_argument("--harness-method", metavar="NAME", help="the stepping method (default: update, or the only one)")
    h.add_argument("--harness-steps", metavar="N", type=int, help="default steps for constant or function inputs")
    h.add_argument("--input-mode", metavar="MODE", help="sequence (default), constant, or function:NAME")
    h.add_argument("--readout", metavar="HOW", help="mean (default), sum, last, or function:NAME")
    h.add_argument("--loss", metavar="LOSS", help="cross_entropy (default), mse, nll_rate, or function:NAME")
    add_drive_flags(p, shared=False)
    p.add_argument("--version", action="version", version=f"batchify {__version__}")
    return p


class UsageError(Exception):
    pass


def add_drive_flags(p: argparse.ArgumentParser, shared: bool) -> None:
    """How to drive a class for verification; flags override [tool.batchify.verify."path::Class"]."""
    g = p.add_argument_group("verification (driving information)")
    g.add_argument("--init", metavar="ARGS", help="constructor arguments as Python literals: '64, 32, tau=8.0'")
    g.add_argument("--method", action="append", help="the stepping method (default: update, or the only public "
                   "stateful method); repeat it to check several, each on its own")
    g.add_argument("--input-shape", metavar="NAME=SHAPE", action="append",
                   help="a per-example argument: x=64, x=8x8, x=64:float32:2.0 (shape:dtype:scale); repeatable")
    if shared:
        g.add_argument("--shared", metavar="NAME[=time|VALUE]", action="append",
                       help="an argument shared by the batch: the step index (time, the default) or a constant")
        g.add_argument("--function", dest="functions", metavar="NAME", action="append", default=[],
                       help="check a function of yours batched with --function too: its loss, outputs and "
                            "gradients against bm.grad of the original, example by example (its inputs by "
                            "--input-shape); repeatable")
    g.add_argument("--port", metavar="PATH=SHAPE", action="append",
                   help="an input port: a Variable written before every step with per-example values "
                        "(input=64, E.input=64:float32:5.0); repeatable")
    g.add_argument("--bp-share", metavar="KEY=VALUE", action="append",
                   help="a value of BrainPy's shared context for the run (fit=True); repeatable")
    g.add_argument("--mode", choices=("nonbatching", "training", "batching"),
                   help="build the original under bm.environment(mode=...) (a model reading the global mode)")
    g.add_argument("--steps", type=int, help="steps to run (default 20)")
    g.add_argument("--batch", type=int, help="examples in the batch (default 4)")
    g.add_argument("--dt", type=float, help="set bp.share's i, t and dt before every step, as DSRunner does")
    g.add_argument("--rtol", type=float, help="relative tolerance (default 1e-5; gradients 10x)")
    g.add_argument("--atol", type=float, help="absolute tolerance (default 1e-5; gradients 10x)")
    g.add_argument("--seed", type=int, help="seed for constructor draws, inputs and per-example random streams")
    g.add_argument("--perturb", type=float, metavar="EPS",
                   help="examples 1.. start from a seeded perturbation of example 0's float state, up to EPS "
                        "of each Variable's mean magnitude (default 0.05; 0: every example starts alike)")
    g.add_argument("--strict", action="store_true",
                   help="a WEAK verdict (a check that could not have failed: no state moved, every example alike, "
                        "no spike, every gradient zero) exits 1, as a FAIL does")




def project_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return None


def located(path: Path) -> Path:
    """``path`` made absolute through its folder, keeping its own name: a symlinked output is named
    as the user named it, not as its target."""
    return path.parent.resolve() / path.name if path.name not in ("", ".", "..") else path.resolve()


def display_path(path: Path, root: Path | None) -> str:
    """``path`` relative to the project root when it lies inside it, in POSIX form."""
    resolved = located(path)
    if root is not None:
        try:
            return resolved.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def anchored_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (``../`` included when it lies outside), in POSIX form: what the
    header's command says, the same from any working directory."""
    return Path(os.path.relpath(located(path), root)).as_posix()


def transform_shared(item: str) -> str:
    """``--shared`` as the transform needs it: ``i`` (``i=time`` drives verification only), or a
    Variable's declaration ``w=mean`` / ``w=sum`` / ``w=example``."""
    name, _, mode = item.partition("=")
    return item if mode in VARIABLE_MODES else name


def regenerate_command(src: str, out: str | None, classes: list[str], shared: list[str],
                       harness: HarnessOptions | None = None, functions: list[str] = ()) -> str:
    words = ["batchify", src]
    if out is not None:
        words += ["-o", out]
    for name in classes:
        words += ["--class", name]
    for name in functions:
        words += ["--function", name]
    for name in shared:
        words += ["--shared", name]
    if harness is not None:
        words += harness.flags()
    return shlex.join(words)


def harness_options(args: argparse.Namespace) -> HarnessOptions | None:
    given = {"method": args.harness_method, "steps": args.harness_steps, "input": args.input_mode,
             "readout": args.readout, "loss": args.loss}
    if not args.harness and all(v is None for v in given.values()):
        return None
    return HarnessOptions(**{k: v for k, v in given.items() if v is not None})


def read_source(src: str, shown: str) -> bytes:
    if src == STDIO:
        return sys.stdin.buffer.read()
    path = Path(src)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        reason = "no such file"
    except IsADirectoryError:
        reason = "it is a directory"
    except PermissionError:
        reason = "permission denied"
    except OSError as exc:
        reason = exc.strerror or str(exc)
    raise BatchifyError([Diagnostic(shown, 1, 1, "BFY002", f"cannot read the source: {reason}")])


def write_atomically(path: Path, text: str, shown: str) -> None:
    """Write to a temporary file beside ``path`` and rename it into place: never a half-written output.

    A symlink is kept: its target is what is replaced. What is not a regular file (a FIFO, a
    terminal, ``/dev/stdout``, ``/dev/null``) is written to as it is, never replaced by a file.
    """
    tmp_name = None
    folder = path.parent if str(path.parent) else Path(".")
    created: list[Path] = []  # the folders this write made, deepest first: removed again if it fails
    try:
        if path.is_dir():
            raise IsADirectoryError(str(path))
        if path.exists() and not path.is_file():
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            return
        if path.is_symlink():
            try:
                path = path.resolve()
            except RuntimeError:  # a symlink loop, as Python < 3.13 reports it (3.13 raises OSError)
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
            folder = path.parent
        created = list(itertools.takewhile(lambda f: not f.exists(), (folder, *folder.parents)))
        folder.mkdir(parents=True, exist_ok=True)  # as code generators do; the write stays atomic
        mode = path.stat().st_mode & 0o777 if path.exists() else None
        remove_stale_temporaries(path)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="\n", dir=folder,
                                         prefix=f".{temp_stem(path)}.{TEMP_TAG}", suffix=".tmp", delete=False) as fh:
            tmp_name = fh.name
            fh.write(text)
        if mode is not None:
            os.chmod(tmp_name, mode)
        else:
            os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, path)
        tmp_name = None
        created = []
    except OSError as exc:
        reason = "it is a directory" if isinstance(exc, IsADirectoryError) else (exc.strerror or str(exc))
        where = f" (in {folder})" if not isinstance(exc, IsADirectoryError) else ""
        raise BatchifyError([Diagnostic(shown, 1, 1, "BFY007", f"cannot write the output: {reason}{where}")]) from None
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
        for made in created:
            try:
                made.rmdir()
            except OSError:  # no longer empty: something else put a file there meanwhile
                break


TEMP_TAG = "batchify-"
STALE_SECONDS = 600  # older than any write takes: a run that was killed left it


def temp_stem(path: Path) -> str:
    """The output's name in its temporary's name, cut so that a name near the file system's 255-byte
    limit still leaves room for the temporary's own prefix and suffix."""
    return path.name.encode()[:120].decode(errors="ignore")


def remove_stale_temporaries(path: Path) -> None:
    """Delete what a killed run of batchify left beside ``path`` (``.NAME.batchify-XXXXXXXX.tmp``); a
    fresh one may belong to a running write. Only the tagged name is batchify's: an untagged
    ``.NAME.XXXXXXXX.tmp`` (what versions before the tag wrote) may as well be the user's own."""
    folder = path.parent if str(path.parent) else Path(".")
    ours = re.compile(rf"\.{re.escape(temp_stem(path))}\.{TEMP_TAG}[a-z0-9_]{{8}}\.tmp")
    try:
        candidates = [p for p in folder.iterdir() if ours.fullmatch(p.name)]
    except OSError:
        return
    now = time.time()
    for candidate in candidates:
        try:
            if candidate.is_file() and not candidate.is_symlink() and now - candidate.stat().st_mtime > STALE_SECONDS:
                candidate.unlink()
        except OSError:
            pass


def unsafe_output(out: Path, sources: list[Path], current: str | None) -> str | None:
    """Why the hook must not write ``out``: it is a source (however spelled: `./`, `//`, `..`,
    a symlinked folder, a hard link), or a file batchify did not generate."""
    for src in sources:
        if same_file(src, out):
            return (f"the configured output is the source {src.name} (the same file under another spelling); "
                    "batchify never overwrites a source")
    refusal = overwrite_refusal(out, current)
    if refusal == NOT_OURS:
        return f"the configured output {NOT_OURS}; move it away or fix the target"
    if refusal:
        return f"the configured output {refusal}; move the edit into the source, then delete it to regenerate it"
    return None


GENERATED = "# Generated by batchify"
NOT_OURS = "exists and was not generated by batchify"


def overwrite_refusal(out: Path, current: str | None) -> str | None:
    """Why replacing ``out`` would destroy something batchify did not write: a file that is not a
    generated module, or a generated one edited since (its header's stamp says so). A missing or
    empty file, a FIFO or a device holds nothing to lose."""
    try:
        info = out.stat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return None
    if current is None or not current.removeprefix("\ufeff").startswith(GENERATED):  # (a BOM an editor added)
        return NOT_OURS
    if edited_by_hand(current):
        return "was edited since it was generated (the hash its header records of the rest no longer matches)"
    return None


def unprintable(text: str) -> str | None:
    """The first character of a path that a header line or a one-line diagnostic cannot hold as it is
    (a newline, a carriage return, an escape or another control character): None when there is none."""
    return next((c for c in text if not c.isprintable() and c != " "), None)


def escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii") if unprintable(text) else text


def refuse_unprintable(path: str | None, code: str, what: str) -> None:
    bad = unprintable(path or "")
    if bad is not None:
        raise BatchifyError([Diagnostic(escaped(path), 1, 1, code, (
            f"cannot {what}: its path holds a control character (U+{ord(bad):04X}), which the generated "
            "header could not record on one line; rename it"))])


def reads_stdin_from(out: Path) -> bool:
    """Whether standard input is the file ``out`` (``batchify - -o m.py < m.py``)."""
    try:
        given, target = os.fstat(sys.stdin.fileno()), out.stat()
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISREG(given.st_mode) and (given.st_dev, given.st_ino) == (target.st_dev, target.st_ino)


def config_diagnostic(exc) -> Diagnostic:
    """A [tool.batchify] problem, at its line of pyproject.toml."""
    where = str(exc.where) if getattr(exc, "where", None) else "pyproject.toml"
    return Diagnostic(where, exc.line(), 1, "BFY016", str(exc).removeprefix(f"{where}: "))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def report(diagnostics: list[Diagnostic], fmt: str) -> None:
    if fmt == "json":
        import json  # (lazily, as difflib: a plain run's start-up is what hooks and IDEs wait for)

        sys.stderr.write(json.dumps({"version": 1, "diagnostics": [d.to_json() for d in diagnostics]}) + "\n")
    else:
        for d in diagnostics:
            sys.stderr.write(d.format() + "\n")


class Job(NamedTuple):
    """One source to transform: where it is, where it goes, how both are shown."""

    src: Path | None  # None: standard input
    out: Path | None  # None: standard output
    src_shown: str  # in the header and its command: relative to the project root, else the source's folder
    out_shown: str | None
    src_report: str  # in diagnostics: the same, or absolute with --absolute-paths
    out_report: str | None
    classes: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    harness: HarnessOptions | None = None
    functions: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return regenerate_command(self.src_shown if self.src is not None else STDIO, self.out_shown,
                                  list(self.classes), list(self.shared), self.harness, list(self.functions))


def make_job(src: Path | None, out: Path | None, *, classes=(), shared=(), stdin_filename: str | None = None,
             absolute: bool = False, harness: HarnessOptions | None = None, functions=()) -> Job:
    named = src if src is not None else Path(stdin_filename) if stdin_filename else None
    # Paths in the header are relative to the project root, or outside any project to the source's
    # own folder: never to the working directory, so --check answers the same from anywhere.
    # Diagnostics keep the paths as a caller resolves them (the project root's, else as typed).
    folder = (named.parent if named is not None else Path(".")).resolve()
    root = project_root(folder)
    src_shown = anchored_path(named, root or folder) if named is not None else "<stdin>"
    out_shown = anchored_path(out, root or folder) if out is not None else None

    def report_path(path: Path | None) -> str | None:
        if path is None:
            return None
        return str(path.resolve()) if absolute else display_path(path, root)

    return Job(src, out, src_shown, out_shown, report_path(named) or "<stdin>", report_path(out),
               tuple(sorted(dict.fromkeys(classes))), tuple(sorted(dict.fromkeys(shared))), harness,
               tuple(dict.fromkeys(functions)))


def generate(job: Job, source: bytes):
    """The ``TransformResult``: the generated module's text and its warnings (classes left out, BFY019)."""
    from batchify.pipeline import transform  # LibCST and Jinja: not needed when the header says up to date

    return transform(source, job.src_report, header_path=job.src_shown, classes=job.classes,
                     shared=job.shared, command=job.command, harness=job.harness, functions=job.functions)


def same_bytes(path: Path, text: str) -> bool:
    """Whether ``path`` is a regular file holding exactly ``text`` (newlines included)."""
    try:
        return path.is_file() and not path.is_symlink() and path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False


def current_output(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None


def stale_reason(current: str | None, source: bytes, command: str, path: Path | None = None) -> str:
    """Why a committed output differs: a missing file (or a folder, or a file that cannot be read in its
    place), a changed source, other options, a changed generator, or a hand edit (its header records
    each of them, see provenance.py)."""
    from batchify.provenance import REGENERATE, SOURCE_PATTERN, STAMP_PATTERN, generator_fingerprint

    if current is None:
        if path is not None and path.is_dir():
            return "is a directory, where the generated file should be"
        if path is not None and path.exists():
            return "cannot be read as a generated file (not a regular UTF-8 file, or no permission)"
        return "is missing"
    lines = current.split("\n", 3) + ["", "", ""]
    match = SOURCE_PATTERN.search(lines[0])
    if match is None or match.group(1) != source_digest(source):
        return "is stale: its source changed since it was generated"
    if lines[1] != REGENERATE + command:
        return "is stale: it was generated with other options"
    recorded = STAMP_PATTERN.fullmatch(lines[2])
    if recorded and recorded.group(1) == generator_fingerprint():
        return "is stale: it was edited since it was generated"
    return "is stale: another batchify version (or a changed template) generates different code"


def generated_by_batchify(current: str | None) -> bool:
    """Whether ``current`` starts with batchify's header (edited since, or not)."""
    from batchify.provenance import SOURCE_PATTERN

    return current is not None and SOURCE_PATTERN.search(current.split("\n", 1)[0]) is not None


def stale_message(current: str | None, source: bytes, command: str, path: Path) -> str:
    """BFY008's message: why the output is stale, and the command that regenerates it."""
    reason = stale_reason(current, source, command, path)
    if current is None and path.exists():
        return f"{reason}; move it away, then regenerate with: {command}"
    if overwrite_refusal(path, current):  # hand-edited: regenerating replaces the edits, so it asks for --force
        return f"{reason}; move the edit into the source, then regenerate with: {command} --force"
    return f"{reason}; regenerate with: {command}"


def configured_target(src: Path, out: Path):
    """The [tool.batchify] target for exactly this source and output, if there is one."""
    from batchify.config import ConfigError, find_config

    try:
        config = find_config(src.resolve().parent)
    except ConfigError:
        return None
    if config is None:
        return None
    try:
        targets = config.targets(among=src)
    except ConfigError:  # an invalid target (an output outside the project) is not picked up
        return None
    return next((t for t in targets if same_file(t.source, src) and t.output.resolve() == out.resolve()), None)


def run(args: argparse.Namespace) -> int:
    stdin_source = args.src == STDIO
    src = None if stdin_source else Path(args.src)
    out = None if args.output == STDIO else Path(args.output)
    classes, shared, harness = args.classes, [transform_shared(s) for s in args.shared], harness_options(args)
    functions = args.functions
    if src is not None and out is not None and not (classes or shared or harness or functions):
        # No options given: a configured target for this pair supplies them (as the hook would).
        target = configured_target(src, out)
        if target is not None:
            classes, shared, harness = list(target.classes), list(target.shared), target.harness
            functions = list(target.functions)
    refuse_unprintable(args.src if src is not None else args.stdin_filename, "BFY002", "read the source")
    refuse_unprintable(args.output, "BFY007", "write the output")
    if out is not None and args.output.endswith(("/", os.sep)) and not out.is_dir():
        # `-o gen/`: a folder meant, which Path() would read as a file named `gen`
        raise BatchifyError([Diagnostic(args.output, 1, 1, "BFY007", "cannot write the output: the path names a "
                                        "folder (it ends with a slash); name the file: -o "
                                        f"{args.output}{(src or Path('out.py')).stem}_batched.py")])
    job = make_job(src, out, classes=classes, shared=shared, stdin_filename=args.stdin_filename,
                   absolute=args.absolute_paths, harness=harness, functions=functions)
    named = job.src if job.src is not None else Path(args.stdin_filename) if args.stdin_filename else None
    if job.out is not None and named is not None and same_file(named, job.out):
        raise BatchifyError([Diagnostic(job.src_report, 1, 1, "BFY006",
                                        "the output path is the source path; batchify never overwrites its input")])
    if job.out is not None and stdin_source and reads_stdin_from(job.out):
        raise BatchifyError([Diagnostic(job.out_report, 1, 1, "BFY006", "the output is the file standard input "
                                        "reads the source from; batchify never overwrites its input")])
    if (args.check or args.diff) and job.out is None:
        raise UsageError("--check and --diff need an output file (-o OUT)")

    source = read_source(args.src, job.src_report)
    if args.check and up_to_date(current_output(job.out), source, job.command):
        return EXIT_OK  # its header records this source, these options and this generator
    result = generate(job, source)
    text = result.text
    if result.warnings:
        report(list(result.warnings), args.format)

    current = current_output(job.out) if job.out is not None else None
    refusal = overwrite_refusal(job.out, current) if job.out is not None and not args.force else None
    if refusal and args.check and generated_by_batchify(current):  # hand-edited: stale, as the hook says too
        report([Diagnostic(job.out_report, 1, 1, "BFY008", stale_message(current, source, job.command, job.out))],
               args.format)
        return EXIT_FAIL
    if refusal and not args.diff:
        advice = "" if args.check else "; move it away, or pass --force to replace it"
        raise BatchifyError([Diagnostic(job.out_report, 1, 1, "BFY006", f"the output {refusal}; batchify never "
                                        f"replaces what it did not write{advice}")])
    if args.check or args.diff:
        stale = current != text
        if args.diff and stale:
            import difflib  # --diff only

            sys.stdout.writelines(difflib.unified_diff(
                (current or "").splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=job.out_report, tofile=f"{job.out_report} (regenerated)"))
        if args.check and stale:
            report([Diagnostic(job.out_report, 1, 1, "BFY008",
                               stale_message(current, source, job.command, job.out))],
                   args.format)
            return EXIT_FAIL
        return EXIT_OK
    if job.out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    elif current != text or not same_bytes(job.out, text):
        write_atomically(job.out, text, job.out_report)
    # (else the output is already these bytes: left as it is, so an editor or a build sees no change)
    if args.verify:
        if job.src is None or job.out is None:
            raise UsageError("--verify needs a source file and an output file (-o OUT)")
        return verify_files(job.src, job.out, args)
    return EXIT_OK


def raised_in(exc: BaseException, src: Path, shown: str, generated: Path) -> Diagnostic | None:
    """Where an exception raised during verification comes from: the source's own code (the user's
    to fix: BFY302 at that line), the generated module (a transformation bug: a verification FAIL,
    BFY303 at the generated line), or neither (None: batchify's own bug)."""
    import traceback

    files = {os.path.realpath(src): ("source", shown), os.path.realpath(generated): ("generated", str(generated))}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.realpath(f.filename) in files]
    if not frames:
        return None
    frame = frames[-1]
    kind, where = files[os.path.realpath(frame.filename)]
    message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    if kind == "source":
        return Diagnostic(where, frame.lineno or 1, 1, "BFY302", f"cannot verify: the model's own code raised "
                          f"{message} (in {frame.name}); fix the model or the driving information")
    return Diagnostic(where, frame.lineno or 1, 1, "BFY303", f"verification FAIL: the batched model raised "
                      f"{message} (in {frame.name}); this is a transformation bug, please report it")


def original_raised(exc: BaseException, src: Path, shown: str) -> Diagnostic | None:
    """BFY302 for an exception the original model's own code raised with no frame of the source in
    its traceback (a class of the file deriving from a BrainPy built-in, raising in BrainPy's code it
    runs: ``equivalence.originals_code`` tags it ``Foo.update``), at the class's line; None for
    any other."""
    import ast

    where = getattr(exc, "batchify_original", None)
    if not isinstance(where, str):
        return None
    name = where.partition(".")[0]
    line, col = 1, 1
    try:
        tree = ast.parse(src.read_bytes())
        cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is not None:
            line, col = cls.lineno, cls.col_offset + 1
    except (OSError, SyntaxError, ValueError):
        pass
    message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return Diagnostic(shown, line, col, "BFY302", f"cannot verify: the model's own code raised {message} (in "
                      f"{where}, in BrainPy's code it runs); fix the model or the driving information")


def built_at(src: Path, exc: BaseException) -> tuple[int, int]:
    """Where the class ``exc.model`` names (``FooBatched`` or ``Foo``) first assigns the attribute
    that leads to ``exc.paths[0]`` (``syn`` of ``syn.comm.weight``): the line to fix for a Variable
    the batched model refused to run with, or the original grew. The class's line without one; 1:1
    without the class (or an exception naming none)."""
    import ast

    model, paths = getattr(exc, "model", ""), getattr(exc, "paths", ())
    if not model:
        return 1, 1
    try:
        tree = ast.parse(src.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return 1, 1
    name = model.removesuffix("Batched")
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        return 1, 1
    attr = paths[0].split(".")[0] if paths else None
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign | ast.AugAssign) else []
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name):
                    return t.lineno, t.col_offset + 1
    return cls.lineno, cls.col_offset + 1


def not_traceable(exc, src: Path, shown: str, generated: Path) -> Diagnostic:
    """BFY302 at the source line whose code cannot be traced (``verify.NotTraceable``)."""
    where = raised_in(exc.error, src, shown, generated)
    line, col = (where.line, where.column) if where is not None and where.path == shown else (1, 1)
    message = f"{type(exc.error).__name__}: {exc.error}".splitlines()[0][:300]
    return Diagnostic(shown, line, col, "BFY302", f"cannot verify: the model's own code cannot be traced: one step "
                      f"of it under jit (bm.jit, as DSRunner runs it by default) raises {message}, and the batched "
                      f"model, which always runs traced (vmap), raised {type(exc.batched_error).__name__}. Make the "
                      f"step traceable: bm.where(mask, value, V) for V[mask] = value, bm.cond or bm.where for an "
                      f"`if` on a value")


def build_verify_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="batchify verify",
                       description="Check a generated module numerically against its source (imports jax, brainpy).")
    p.add_argument("src", metavar="SRC", help="the single-example model source")
    p.add_argument("generated", metavar="GENERATED", help="the module batchify generated from it")
    p.add_argument("--class", dest="classes", metavar="NAME", action="append", default=[],
                   help="verify this class (default: the classes with a verify table, else the top-level models)")
    add_drive_flags(p, shared=True)
    p.add_argument("--format", choices=("text", "json"), default="text", help="the report on stdout")
    p.add_argument("--no-speed", action="store_true",
                   help="skip the speed-up measurement (it compiles both models once more)")
    p.add_argument("--no-triage", action="store_true",
                   help="on a mismatch, skip the float64 rerun that tells round-off from a transformation bug")
    p.add_argument("--x64-probe", action="store_true", help=argparse.SUPPRESS)  # the float64 rerun's child
    return p


def share_source_classes(original, generated) -> None:
    """The generated module's verbatim copies of the source's plain classes (an Enum of solver
    kinds, a built-in's subclass) become the source's own: ``from_model`` carries the original's
    objects over, and ``self.kind == Kind.A`` must compare them with the same class."""
    import enum

    replaced = {}
    for name, obj in vars(original).items():
        if isinstance(obj, type) and obj.__module__ == original.__name__ and isinstance(vars(generated).get(name), type):
            replaced[vars(generated)[name]] = obj
            setattr(generated, name, obj)

    def shared(value):  # an Enum member of a replaced copy: the source's member of that name
        source_cls = replaced.get(type(value))
        return source_cls[value.name] if source_cls is not None and isinstance(value, enum.Enum) else value

    # Defaults evaluated when the generated module ran (``solver=Solver.HALF``) hold the copies' members.
    for cls in [v for v in vars(generated).values() if isinstance(v, type) and v.__module__ == generated.__name__]:
        for key, member in list(vars(cls).items()):
            if isinstance(member, type) and member in replaced:  # ``model_class`` of a built-in's subclass
                setattr(cls, key, replaced[member])
                continue
            function = getattr(member, "__wrapped__", member)  # a batched constructor wraps the original's
            if isinstance(function, types.FunctionType):
                function.__defaults__ = tuple(map(shared, function.__defaults__ or ())) or None
                if function.__kwdefaults__:
                    function.__kwdefaults__ = {k: shared(v) for k, v in function.__kwdefaults__.items()}


def provenance_warnings(src: Path, generated: Path, shown: str) -> list[Diagnostic]:
    """What verify checks is the generated file as it is: say so when it is not what batchify made of
    this source (edited since, or generated from another version of it). Warnings: the check runs."""
    from batchify.provenance import HEADER_SOURCE, edited_by_hand, source_digest

    try:
        text = generated.read_text(encoding="utf-8")
        digest = source_digest(src.read_bytes())
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    header = re.search(r"\(sha256 ([0-9a-f]{64})\)", text.split("\n", 1)[0]) if HEADER_SOURCE.match(text) else None
    if header and header.group(1) != digest:
        out.append(Diagnostic(shown, 1, 1, "BFY008", "was generated from another version of the source (the sha256 "
                              "in its header differs): this checks that older code; regenerate it to check what "
                              "batchify makes of the source now", severity="warning"))
    if edited_by_hand(text):
        out.append(Diagnostic(shown, 1, 1, "BFY008", "was edited after batchify wrote it (its header's stamp "
                              "differs): this checks the edited code, not batchify's", severity="warning"))
    return out


def verify_files(src: Path, generated: Path, args: argparse.Namespace) -> int:
    """Plan (no jax), then run (imports jax and brainpy), then report."""
    from batchify.analyse import analyse
    from batchify.config import ConfigError, find_config
    from batchify.drive import Drive, DriveError, Plan, clock_inputs, from_toml, init_names, with_flags
    from batchify.parse import decode, parse

    root = project_root(src.resolve().parent)
    shown = display_path(src, root)
    for path in (src, generated):
        if not path.is_file():
            raise BatchifyError([Diagnostic(str(path), 1, 1, "BFY302", "cannot verify: no such file")])
    warnings = provenance_warnings(src, generated, display_path(generated, root))
    if warnings:
        report(warnings, getattr(args, "format", "text"))
    try:
        config = find_config(Path.cwd())
    except ConfigError as exc:
        raise BatchifyError([Diagnostic(shown, 1, 1, "BFY302", str(exc))]) from None
    entries: dict[str, dict] = {}
    if config is not None:
        rel = display_path(src, config.root)
        entries = {key.split("::", 1)[1]: table for key, table in config.verify.items()
                   if "::" in key and key.split("::", 1)[0] == rel}
    # Only the classes to verify (and what they need) are analysed and loaded: a broken neighbour
    # in the same file is not theirs to answer for.
    requested = list(dict.fromkeys(getattr(args, "classes", []) or [])) or list(entries)
    ir = analyse(parse(decode(src.read_bytes(), shown), shown), shown, only=requested, declarations_needed=False)
    used = {ch.class_name for c in ir.classes.values() for ch in c.children}
    used |= {c.model_base for c in ir.classes.values() if c.model_base}
    top = [name for name in [*ir.targets, *ir.library_targets] if name not in used]
    classes = list(dict.fromkeys(getattr(args, "classes", []) or [])) or list(entries) or top
    if not classes:  # checking nothing would pass: not a verification
        raise BatchifyError([Diagnostic(shown, 1, 1, "BFY302", "cannot verify: no model class to check in this file")])
    # Flags that say how one class is built and driven would be ignored for several: say so.
    class_flags = [flag for flag, dest in (("--init", "init"), ("--method", "method"), ("--input-shape", "input_shape"),
                                           ("--shared", "shared"), ("--port", "port"), ("--function", "functions"))
                   if getattr(args, dest, None)]
    if class_flags and len(classes) > 1 and not getattr(args, "classes", None):
        raise BatchifyError([Diagnostic(shown, 1, 1, "BFY301", f"{class_flags[0]} drives one class, and this file has "
                                        f"{len(classes)} to verify ({', '.join(classes)}): name the one it is for with "
                                        "--class NAME")])
    plans = []
    diagnostics = []
    for name in classes:
        cls = ir.classes.get(name)
        line = ir.positions[cls.node].start.line if cls is not None else 1
        if cls is None and name not in ir.library_targets:
            diagnostics.append(Diagnostic(shown, 1, 1, "BFY302", f"cannot verify {name}: no model class of that name"))
            continue
        try:
            drive = from_toml(name, entries[name]) if name in entries else Drive(name)
            if getattr(args, "classes", None) or len(classes) == 1:
                drive = with_flags(drive, args)
        except DriveError as exc:
            diagnostics.append(Diagnostic(shown, line, 1, "BFY302", f"cannot verify {name}: {exc}"))
            continue
        methods = getattr(args, "method", None) or []
        if (getattr(args, "classes", None) or len(classes) == 1) and len(methods) > 1:
            every = tuple(dict.fromkeys(methods))
            plans += [Plan(name, replace(drive, method=m, methods=every), line) for m in every]
        else:
            plans.append(Plan(name, drive, line))
    if diagnostics:
        raise BatchifyError(diagnostics)
    # A built-in's subclass, or a group of built-ins without an update of its own: BrainPy's update.
    def stateful_methods(name: str) -> list[str]:
        if name not in ir.classes:
            return ["update"]
        cls = ir.classes[name]
        methods = [m for m in ir.all_methods(cls) if m in cls.stateful]
        return methods + ["update"] if ir.group_of_builtins(cls) else methods

    stateful = {name: stateful_methods(name) for name in classes}

    def unchecked(name: str, checked: list[str]) -> list[str]:
        """The public stateful methods of ``name`` that the ``checked`` ones never call: not checked by this run."""
        cls = ir.classes.get(name)
        if cls is None:
            return []
        import libcst as cst  # (loaded already: the IR is built)

        methods, reached, todo = ir.all_methods(cls), set(), list(checked)
        # An integrator built in __init__ around a derivative method (`self.integral =
        # bp.odeint(f=self.dV)`) calls that method whenever the step calls the integrator.
        through = {holder: set(re.findall(r"\bself\.(\w+)", cst.Module([]).code_for_node(value)))
                   for holder, value in cls.holder_values.items()}
        while todo:
            m = todo.pop()
            if m in methods and m not in reached:
                reached.add(m)
                todo += methods[m].self_calls
                code = cst.Module([]).code_for_node(methods[m].node) if through else ""
                todo += [d for holder, derivatives in through.items()
                         if re.search(rf"\bself\.{holder}\b", code) for d in derivatives]
        return [m for m in stateful[name] if m not in reached and not m.startswith("_")
                and m not in ("reset_state", "reset", "clear_input") and methods.get(m) is not None
                and methods[m].kind == "method"]

    def resets_late(name: str) -> bool:  # it, a base or a child leaves its Variables to reset_state()
        cls = ir.classes.get(name)
        if cls is None:
            return bool(ir.library_late.get(name))
        return ((ir.reset_created(cls) and not cls.init_resets)
                or any(resets_late(ch.class_name) for ch in ir.all_children(cls)))

    for plan in plans:
        plan.drive = replace(plan.drive, reset_first=resets_late(plan.cls))

    from batchify import verify as engine  # imports jax and brainpy
    from batchify.loader import load_generated, load_models

    # The model's own prints (a seed it reports) go to stderr: stdout holds the report alone.
    functions = list(dict.fromkeys(f for plan in plans for f in plan.drive.functions))
    try:
        with contextlib.redirect_stdout(sys.stderr):
            original = load_models(src, only=requested, functions=functions,
                                   also=sorted(set().union(*(init_names(plan.drive) for plan in plans))))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the source's own module-level code (an import,
        diagnostic = raised_in(exc, src, shown, generated)  # a parse_args() needing arguments) raised
        if diagnostic is None:
            raise
        raise BatchifyError([diagnostic]) from None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            batched = load_generated(generated)
    except Exception as exc:  # noqa: BLE001 - the user's generated file: report, do not crash
        raise BatchifyError([Diagnostic(str(generated), 1, 1, "BFY302",
                                        f"the generated module does not load: {type(exc).__name__}: {exc}")]) from None
    share_source_classes(original, batched)
    import brainpy.math as bm  # verification only: the transform path never imports brainpy

    for plan in plans:  # BrainPy's clock ticks at the source's dt (`bm.set_dt` there), as DSRunner's would
        if plan.drive.dt is None:
            plan.drive = replace(plan.drive, dt=bm.get_dt())
        plan.drive = clock_inputs(plan.drive, getattr(original, plan.cls), stateful[plan.cls])
    for plan in plans:
        plan.missing = plan.drive.missing(getattr(original, plan.cls), stateful[plan.cls])
    missing = [Diagnostic(shown, p.line, 1, "BFY301", f"cannot verify {p.cls}: batchify found no stateful method "
                          "in it (none reads or writes a Variable, or calls a child model by its attribute), so "
                          "nothing would be checked") if not stateful[p.cls] and not p.drive.method else
               Diagnostic(shown, p.line, 1, "BFY301", f"cannot verify {p.cls} without driving information: "
                          f"missing {'; '.join(p.missing)}. Give them as flags, or in pyproject.toml under "
                          f'[tool.batchify.verify."{shown}::{p.cls}"]') for p in plans if p.missing]
    if missing:
        raise BatchifyError(missing)

    def rerun_argv(name: str, method: str | None) -> list[str]:
        argv = [str(src), str(generated), "--class", name, "--x64-probe"] + (["--method", method] if method else [])
        for flag in ("init", "steps", "batch", "dt", "rtol", "atol", "seed", "perturb", "mode"):
            value = getattr(args, flag, None)
            if value is not None:
                argv += [f"--{flag}", str(value)]
        for item in getattr(args, "input_shape", None) or []:
            argv += ["--input-shape", item]
        for item in getattr(args, "port", None) or []:
            argv += ["--port", item]
        for item in getattr(args, "bp_share", None) or []:
            argv += ["--bp-share", item]
        for item in getattr(args, "shared", None) or []:
            argv += ["--shared", item]
        for item in getattr(args, "functions", None) or []:
            argv += ["--function", item]
        return argv

    fmt = getattr(args, "format", "text")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            results = engine.run_plans(plans, original, batched, stateful,
                                       rerun_argv=None if args.x64_probe or getattr(args, "no_triage", False)
                                       else rerun_argv, probe=args.x64_probe,
                                       speed=not (getattr(args, "no_speed", False) or args.x64_probe))
    except DriveError as exc:
        line, col = built_at(src, exc)
        raise BatchifyError([Diagnostic(shown, line, col, "BFY302", f"cannot verify: {exc}")]) from None
    except engine.NotTraceable as exc:  # the model's code runs eagerly only: the user's to fix
        raise BatchifyError([not_traceable(exc, src, shown, generated)]) from None
    except RuntimeError as exc:  # the generated code refused to run (a built-in learning its weights online)
        diagnostic = raised_in(exc, src, shown, generated) or original_raised(exc, src, shown)
        if diagnostic is not None and diagnostic.path == shown:  # the original's own code (NotImplementedError)
            raise BatchifyError([diagnostic]) from None
        line, col = built_at(src, exc)
        raise BatchifyError([Diagnostic(shown, line, col, "BFY302", f"cannot verify: the batched model refused "
                                        f"to run: {exc}")]) from None
    except Exception as exc:  # noqa: BLE001 - the user's model or the generated one raised: say whose
        diagnostic = raised_in(exc, src, shown, generated) or original_raised(exc, src, shown)
        if diagnostic is None:
            raise  # batchify's own code: an internal error
        raise BatchifyError([diagnostic]) from None
    import json

    if args.x64_probe:
        sys.stdout.write(json.dumps(engine.probe_summary(results)) + "\n")
        return EXIT_OK
    for result in results:
        result.unchecked = unchecked(result.cls, [r.method for r in results if r.cls == result.cls])
    if fmt == "json":
        sys.stdout.write(json.dumps(engine.to_json(results)) + "\n")
    else:
        sys.stdout.write(engine.format_table(results, shown, display_path(generated, root)))
    if not all(r.ok for r in results):
        return EXIT_FAIL
    return EXIT_FAIL if getattr(args, "strict", False) and any(r.weak for r in results) else EXIT_OK


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code when parsing ended the run (--help, a usage error)."""
    try:
        return parser.parse_args(argv)
    except UsageError as exc:
        return usage_error(f"{exc} (see {parser.prog} --help)", requested_format(argv), parser.prog)
    except SystemExit as exc:  # --help and --version
        return EXIT_OK if not exc.code else EXIT_USAGE


def verify_main(argv: list[str]) -> int:
    args = parse_args(build_verify_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: verify_files(Path(args.src), Path(args.generated), args), args.format, args.src)


def requested_format(argv: list[str]) -> str:
    """The ``--format`` a command line asks for, read without parsing it (parsing it failed)."""
    for i, arg in enumerate(argv):
        option, equals, value = arg.partition("=")
        if len(option) >= len("--form") and "--format".startswith(option):
            value = value if equals else (argv[i + 1] if i + 1 < len(argv) else "")
            if value == "json":
                return "json"
    return "text"


def usage_error(message: str, fmt: str, prog: str = "batchify") -> int:
    """A usage error: one line on stderr, or with ``--format json`` one BFY018 diagnostic."""
    if fmt == "json":
        report([Diagnostic("<command line>", 1, 1, "BFY018", message)], fmt)
    else:
        sys.stderr.write(f"{prog}: error: {message}\n")
    return EXIT_USAGE


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (an editor stopping its task, a terminal closed)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def ending_cleanly_on_signals():
    """SIGTERM and SIGHUP end the run as Ctrl-C does, through the ``finally`` clauses that remove a
    temporary file: by default they kill the process on the spot, leaving it half-written beside the
    output. The handlers are put back afterwards (``main`` also runs inside other programs' processes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated(signum)

    wanted = [s for s in ("SIGTERM", "SIGHUP") if hasattr(signal, s)]
    previous = {s: signal.signal(getattr(signal, s), stop) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(getattr(signal, s), handler)


def guarded(action, fmt: str, where: str) -> int:
    """Run ``action``; diagnostics and our own bugs become one line each, never a traceback."""
    try:
        return action()
    except BatchifyError as exc:
        report(exc.diagnostics, fmt)
        return exit_code_for(exc.diagnostics)
    except UsageError as exc:
        return usage_error(str(exc) if fmt != "json" else f"{exc} (see batchify --help)", fmt)
    except KeyboardInterrupt:
        return 130
    except Terminated as exc:
        return 128 + exc.signum
    except BrokenPipeError:  # the reader of standard output stopped (`| head`): as if killed by SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except Exception as exc:  # noqa: BLE001 - anything else is our bug: one line, no traceback
        if os.environ.get("BATCHIFY_DEBUG"):
            raise
        report([Diagnostic(where, 1, 1, "BFY900", f"internal error: {type(exc).__name__}: {exc} "
                           "(please report it; set BATCHIFY_DEBUG=1 for the traceback)")], fmt)
        return EXIT_INTERNAL


def build_hook_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="batchify hook",
                       description="Regenerate (or --check) the targets of [tool.batchify] in pyproject.toml; "
                       "for pre-commit. Exits 1 when a file was changed, created or is stale.")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="only the targets whose source or output is one of these (default: all targets)")
    p.add_argument("--check", action="store_true", help="write nothing; fail when an output is missing or stale")
    p.add_argument("--verify", action="store_true",
                   help="also verify numerically the targets with a [tool.batchify.verify] table (imports jax)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="how diagnostics are printed")
    p.add_argument("--absolute-paths", action="store_true", help="report absolute paths in diagnostics")
    return p


def hook(args: argparse.Namespace) -> int:
    from batchify.config import ConfigError, find_config

    try:
        config = find_config(Path.cwd())
    except ConfigError as exc:
        raise BatchifyError([config_diagnostic(exc)]) from None
    if config is None:
        raise UsageError("no [tool.batchify] table in pyproject.toml (searched from here upwards)")
    try:
        targets = config.targets()
    except ConfigError as exc:
        raise BatchifyError([config_diagnostic(exc)]) from None
    sources = [t.source for t in targets]
    every_target = targets
    wanted = {Path(f).resolve() for f in args.files}
    config_changed = config.where is not None and config.where.resolve() in wanted  # then every target
    if args.files and not config_changed:
        targets = [t for t in targets if t.source.resolve() in wanted or t.output.resolve() in wanted]
    status = EXIT_OK
    diagnostics: list[Diagnostic] = []
    warnings: list[Diagnostic] = []  # classes left out (BFY019): reported, and no failure
    for target in targets:
        try:
            refuse_unprintable(str(target.source), "BFY002", "read the source")
            refuse_unprintable(str(target.output), "BFY007", "write the output")
        except BatchifyError as exc:
            diagnostics.extend(exc.diagnostics)
            status = max(status, exit_code_for(exc.diagnostics))
            continue
        job = make_job(target.source, target.output, classes=target.classes, shared=target.shared,
                       absolute=args.absolute_paths, harness=target.harness, functions=target.functions)
        current = current_output(target.output)
        try:
            source = read_source(str(target.source), job.src_report)
            if up_to_date(current, source, job.command):
                continue  # its header records this source, these options and this generator: no transform
            result = generate(job, source)
            text = result.text
            warnings.extend(result.warnings)
        except BatchifyError as exc:
            diagnostics.extend(exc.diagnostics)
            status = max(status, exit_code_for(exc.diagnostics))
            continue
        if current == text:
            continue
        status = max(status, EXIT_FAIL)
        if args.check:
            diagnostics.append(Diagnostic(job.out_report, 1, 1, "BFY008",
                                          stale_message(current, source, job.command, target.output)))
            continue
        refusal = unsafe_output(target.output, sources, current)
        if refusal:
            diagnostics.append(Diagnostic(job.out_report, 1, 1, "BFY006", refusal))
            status = max(status, EXIT_USAGE)
            continue
        try:
            write_atomically(target.output, text, job.out_report)
        except BatchifyError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        sys.stderr.write(f"batchify: {'created' if current is None else 'regenerated'} {job.out_report}\n")
    for output, source in config.orphans(every_target):  # reported, never deleted: it may hold the only copy
        shown = str(output.resolve()) if args.absolute_paths else display_path(output, config.root)
        diagnostics.append(Diagnostic(escaped(shown), 1, 1, "BFY008", f"was generated from {escaped(source)}, which "
                                      "no longer exists (renamed or deleted?); delete it, or restore its source"))
        status = max(status, EXIT_FAIL)
    report(diagnostics + warnings, args.format)
    if args.verify and not diagnostics:
        import copy

        for target in targets:
            verify_args = copy.copy(args)
            for flag in ("init", "method", "input_shape", "shared", "steps", "batch", "dt", "rtol", "atol", "seed",
                         "perturb", "port", "bp_share", "mode"):
                setattr(verify_args, flag, None)
            # A check that could not have failed (nothing moved, every example alike) fails the hook.
            verify_args.classes, verify_args.x64_probe, verify_args.strict = [], False, True
            rel = display_path(target.source, config.root)
            if not any(key.split("::", 1)[0] == rel for key in config.verify):
                sys.stderr.write(f"batchify: {rel}: no [tool.batchify.verify] table; not verified\n")
                continue
            status = max(status, guarded(lambda t=target, a=verify_args: verify_files(t.source, t.output, a),
                                         args.format, rel))
    return status


def hook_main(argv: list[str]) -> int:
    args = parse_args(build_hook_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: hook(args), args.format, "pyproject.toml")


def main(argv: list[str] | None = None) -> int:
    with ending_cleanly_on_signals():
        return dispatch(sys.argv[1:] if argv is None else argv)


def dispatch(argv: list[str]) -> int:
    if argv[:1] == ["verify"]:
        return verify_main(argv[1:])
    if argv[:1] == ["hook"]:
        return hook_main(argv[1:])
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    args.x64_probe = False
    return guarded(lambda: run(args), args.format, args.src)


if __name__ == "__main__":  # `python -m batchify.cli` as well as `python -m batchify`
    sys.exit(main())
