"""The command line: the only module that touches argv, files, stdout and exit codes."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

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
from batchify.pipeline import transform

STDIO = "-"


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="batchify",
        description="Rewrite a single-example BrainPy model into a batched, explicit-state module.",
    )
    p.add_argument("src", metavar="SRC", help="the model source file, or - for standard input")
    p.add_argument("-o", "--output", metavar="OUT", default=STDIO,
                   help="where to write the generated module (default, or -: standard output)")
    p.add_argument("--class", dest="classes", metavar="NAME", action="append", default=[],
                   help="transform only this model class (and the classes it needs); repeatable")
    p.add_argument("--shared", metavar="NAME", action="append", default=[],
                   help="a stepping-method argument shared by every example (e.g. a time index); repeatable")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if OUT is missing or differs from what would be generated")
    p.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of OUT against the new output")
    p.add_argument("--format", choices=("text", "json"), default="text", help="how diagnostics are printed on stderr")
    p.add_argument("--stdin-filename", metavar="PATH", help="the path to report for a source read from standard input")
    p.add_argument("--version", action="version", version=f"batchify {__version__}")
    return p


class UsageError(Exception):
    pass




def project_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return None


def display_path(path: Path, root: Path | None) -> str:
    """``path`` relative to the project root when it lies inside it, in POSIX form."""
    resolved = path.resolve()
    if root is not None:
        try:
            return resolved.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def regenerate_command(src: str, out: str | None, classes: list[str], shared: list[str]) -> str:
    words = ["batchify", src]
    if out is not None:
        words += ["-o", out]
    for name in classes:
        words += ["--class", name]
    for name in shared:
        words += ["--shared", name]
    return shlex.join(words)


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
    """Write to a temporary file beside ``path`` and rename it into place: never a half-written output."""
    folder = path.parent if str(path.parent) else Path(".")
    tmp_name = None
    try:
        if path.is_dir():
            raise IsADirectoryError(str(path))
        mode = path.stat().st_mode & 0o777 if path.exists() else None
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="\n", dir=folder,
                                         prefix=f".{path.name}.", suffix=".tmp", delete=False) as fh:
            tmp_name = fh.name
            fh.write(text)
        if mode is not None:
            os.chmod(tmp_name, mode)
        else:
            os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        reason = "it is a directory" if isinstance(exc, IsADirectoryError) else (exc.strerror or str(exc))
        raise BatchifyError([Diagnostic(shown, 1, 1, "BFY007", f"cannot write the output: {reason}")]) from None
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def report(diagnostics: list[Diagnostic], fmt: str) -> None:
    if fmt == "json":
        sys.stderr.write(json.dumps({"version": 1, "diagnostics": [d.to_json() for d in diagnostics]}) + "\n")
    else:
        for d in diagnostics:
            sys.stderr.write(d.format() + "\n")


def run(args: argparse.Namespace) -> int:
    stdin_source = args.src == STDIO
    src_path = Path(args.stdin_filename or "<stdin>") if stdin_source else Path(args.src)
    to_stdout = args.output == STDIO
    out_path = None if to_stdout else Path(args.output)
    root = project_root((src_path.parent if not stdin_source else Path.cwd()).resolve())
    src_shown = (args.stdin_filename or "<stdin>") if stdin_source and not args.stdin_filename \
        else display_path(src_path, root)
    out_shown = display_path(out_path, root) if out_path is not None else None

    if out_path is not None and not stdin_source and same_file(src_path, out_path):
        raise BatchifyError([Diagnostic(src_shown, 1, 1, "BFY006",
                                        "the output path is the source path; batchify never overwrites its input")])
    if (args.check or args.diff) and out_path is None:
        raise UsageError("--check and --diff need an output file (-o OUT)")

    source = read_source(args.src, src_shown)
    classes = sorted(dict.fromkeys(args.classes))
    shared = sorted(dict.fromkeys(args.shared))
    command = regenerate_command(src_shown if not stdin_source else STDIO, out_shown, classes, shared)
    result = transform(source, src_shown, classes=classes, shared=shared, command=command)

    if args.check or args.diff:
        try:
            current = out_path.read_text(encoding="utf-8") if out_path.is_file() else None
        except (OSError, UnicodeDecodeError):
            current = None
        stale = current != result.text
        if args.diff and stale:
            sys.stdout.writelines(difflib.unified_diff(
                (current or "").splitlines(keepends=True), result.text.splitlines(keepends=True),
                fromfile=out_shown, tofile=f"{out_shown} (regenerated)"))
        if args.check and stale:
            what = "is missing" if current is None else "is stale"
            report([Diagnostic(out_shown, 1, 1, "BFY008", f"{what}; regenerate with: {command}")], args.format)
            return EXIT_FAIL
        return EXIT_OK
    if out_path is None:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    else:
        write_atomically(out_path, result.text, out_shown)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        sys.stderr.write(f"batchify: error: {exc} (see batchify --help)\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        return EXIT_OK if not exc.code else EXIT_USAGE
    try:
        return run(args)
    except BatchifyError as exc:
        report(exc.diagnostics, args.format)
        return exit_code_for(exc.diagnostics)
    except UsageError as exc:
        sys.stderr.write(f"batchify: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - anything else is our bug: one line, no traceback
        if os.environ.get("BATCHIFY_DEBUG"):
            raise
        where = getattr(args, "src", "?")
        sys.stderr.write(f"{where}:1:1: BFY900 internal error: {type(exc).__name__}: {exc} "
                         "(please report it; set BATCHIFY_DEBUG=1 for the traceback)\n")
        return EXIT_INTERNAL
