"""Command line of the CUDA lab kit grader (``python3 grader/kit.py ...``).

Subcommands: ``list`` (labs and steps), ``hint LAB STEP [--level N]`` (progressive hints)
and ``grade [LAB ...]`` (build, run every test, print tables, write reports).

Exit codes of `kit.py grade` (the other commands use 0 and 2 only):

  0  every test that ran passed and none was left unrun, except GPU tests on a machine
     without a GPU (unless --require-gpu)
  1  at least one test failed, crashed or timed out, or was not run for another reason
  2  usage or configuration error (unknown lab, malformed option, bad labs.json, missing
     report directory parent); one line on stderr, no report written
  3  the build failed, or a lab binary is missing or could not list its tests
  4  --require-gpu was given and some GPU test was not run for lack of a device
  130  interrupted (Ctrl-C); the tests still running are killed, no report is written

When several apply, the highest-priority one wins, in the order 2, 3, 4, 1.
"""

from __future__ import annotations

import argparse
import io
import os
import secrets
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import NoReturn, TextIO

from . import reports, runner, sanitize, selftest, thresholds
from .build import BuildError, ensure_built
from .manifest import Lab, Manifest, ManifestError, load_manifest
from .model import RunResult, Status, TestResult

SEED_MAX = 2**32 - 1


class ExitCode(IntEnum):
    OK = 0
    TESTS_FAILED = 1
    USAGE = 2
    BUILD_OR_BINARY = 3
    NO_GPU = 4
    INTERRUPTED = 130


class UsageError(Exception):
    """Bad command line or configuration: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Context:
    """What every subcommand gets besides its parsed arguments."""

    root: Path
    stdout: TextIO
    stderr: TextIO

    def manifest(self) -> Manifest:
        return load_manifest(self.root / "grader" / "labs.json")


Handler = Callable[[argparse.Namespace, Context], int]
Registrar = Callable[["argparse._SubParsersAction[_Parser]"], None]


class _Parser(argparse.ArgumentParser):
    """Turns argparse's usage errors into UsageError so they print as one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


# ---------------------------------------------------------------- list

def register_list(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    parser = subparsers.add_parser("list", help="show labs, steps and their titles")
    parser.set_defaults(handler=_cmd_list)


def _cmd_list(args: argparse.Namespace, ctx: Context) -> int:
    for lab in ctx.manifest().labs:
        ctx.stdout.write(f"{lab.id}  {lab.title}  (edit: {', '.join(lab.student_files)})\n")
        for step in lab.steps:
            ctx.stdout.write(f"    {step.id:<16} {step.title}\n")
    return ExitCode.OK


# ---------------------------------------------------------------- hint

def register_hint(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    parser = subparsers.add_parser(
        "hint", help="show hints for a step, one level at a time",
        description="Hints go from a nudge (level 1) to nearly the answer; "
                    "--level N shows hints 1..N.")
    parser.add_argument("lab", help='lab: "01", "01_indexing" or "indexing"')
    parser.add_argument("step", help='step: "1" or "indexing.1"')
    parser.add_argument("--level", type=_positive_int, default=1, help="how many hints (default 1)")
    parser.set_defaults(handler=_cmd_hint)


def _cmd_hint(args: argparse.Namespace, ctx: Context) -> int:
    lab = _find_lab(ctx.manifest(), args.lab)
    step = lab.find_step(args.step)
    if step is None:
        raise UsageError(f"lab {lab.id} has no step {args.step!r}; steps: "
                         + ", ".join(s.id for s in lab.steps))
    shown = min(args.level, len(step.hints))
    ctx.stdout.write(f"{lab.id} · {step.id} · {step.title}\n")
    for i, hint in enumerate(step.hints[:shown], start=1):
        ctx.stdout.write(textwrap.fill(hint, 88, initial_indent=f"\nHint {i}/{len(step.hints)}: ",
                                       subsequent_indent="  ") + "\n")
    if shown < len(step.hints):
        ctx.stdout.write(f"\nStuck? Next: kit.py hint {lab.id} {step.id} --level {shown + 1}\n")
    else:
        ctx.stdout.write("\n(that was the last hint for this step)\n")
    return ExitCode.OK


# ---------------------------------------------------------------- grade

def register_grade(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    parser = subparsers.add_parser(
        "grade", help="build, run the tests and write reports",
        description="Builds the lab graders, runs each test in its own process and writes "
                    "kit-results.json, junit.xml, results.json (Gradescope) and summary.md.",
        epilog=_exit_code_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labs", nargs="*", metavar="LAB", help="labs to grade (default: all)")
    parser.add_argument("--variant", choices=tuple(runner.VARIANT_PREFIX), default="student",
                        help="grade your code (student) or the reference solution")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--seed", type=_seed, help="random seed (default: $KIT_SEED or random)")
    parser.add_argument("--jobs", type=_positive_int, default=min(8, os.cpu_count() or 1),
                        help="correctness tests run in parallel (default: %(default)s)")
    parser.add_argument("--timeout", type=_positive_float, metavar="S",
                        help="per-test timeout in seconds (default: per lab in labs.json)")
    parser.add_argument("--report-dir", type=Path,
                        help="where reports go (default: <build-dir>/reports/<variant>)")
    parser.add_argument("--require-gpu", action="store_true",
                        help="exit 4 if GPU tests could not run for lack of a device")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    parser.add_argument("--quiet", action="store_true",
                        help="no build output (unless it fails) and no per-test progress")
    parser.set_defaults(handler=_cmd_grade)


def _cmd_grade(args: argparse.Namespace, ctx: Context) -> int:
    manifest = ctx.manifest()
    labs = [_find_lab(manifest, name) for name in args.labs] if args.labs else list(manifest.labs)
    labs = list(dict.fromkeys(labs))  # "01 indexing" names one lab once
    seed = args.seed if args.seed is not None else _env_seed()
    build_dir = (args.build_dir or ctx.root / "build").absolute()
    report_dir = _report_dir(args.report_dir, build_dir, args.variant)
    try:
        thresholds.load(thresholds.thresholds_path(ctx.root))
    except thresholds.ThresholdsError as err:
        raise UsageError(str(err)) from err

    ctx.stdout.write(f"Grading {', '.join(lab.id for lab in labs)} ({args.variant}), "
                     f"{reports.seed_text(seed)}\n")
    ctx.stdout.flush()
    if not args.no_build:
        try:
            ensure_built(ctx.root, build_dir, [runner.target_name(lab, args.variant) for lab in labs],
                         out=ctx.stdout, quiet=args.quiet)
        except BuildError as err:
            ctx.stderr.write(f"build failed: {err}\n")
            return ExitCode.BUILD_OR_BINARY

    targets = [runner.lab_target(ctx.root, build_dir, lab, args.variant) for lab in labs]
    options = runner.RunOptions(args.variant, seed, args.jobs, args.timeout)
    run = runner.run(targets, options, None if args.quiet else _progress(ctx.stderr))

    ctx.stdout.write("\n" + reports.render_terminal(run, reports.use_colour(ctx.stdout)))
    try:
        paths = reports.write_reports(run, report_dir)
    except OSError as err:
        raise UsageError(f"cannot write reports to {report_dir}: {err.strerror}") from err
    ctx.stdout.write("Reports:\n" + "".join(f"  {p}\n" for p in paths))
    return grade_exit_code(run, args.require_gpu)


def grade_exit_code(run: RunResult, require_gpu: bool) -> ExitCode:
    """Maps a finished run to the documented exit codes (see the module docstring)."""
    if run.errors:
        return ExitCode.BUILD_OR_BINARY
    tests = run.tests()
    if require_gpu and any(t.lacked_device(run.gpu_available) for t in tests):
        return ExitCode.NO_GPU
    if any(t.status.is_problem for t in tests):
        return ExitCode.TESTS_FAILED
    if any(t.status is Status.NOT_RUN and not t.lacked_device(run.gpu_available) for t in tests):
        return ExitCode.TESTS_FAILED
    return ExitCode.OK


def _progress(stream: TextIO) -> Callable[[TestResult], None]:
    def show(test: TestResult) -> None:
        stream.write(f"  {test.status.value:<9} {test.lab} {test.id} ({test.duration_s:.1f} s)\n")
        stream.flush()
    return show


def _report_dir(explicit: Path | None, build_dir: Path, variant: str) -> Path:
    """Checked before anything runs, so a typo fails fast and writes nothing."""
    if explicit is None:
        return build_dir / "reports" / variant
    path = explicit.absolute()
    if not path.parent.is_dir():
        raise UsageError(f"report directory parent does not exist: {path.parent}")
    if path.exists() and not path.is_dir():
        raise UsageError(f"report directory is not a directory: {path}")
    return path


def _env_seed() -> int:
    text = os.environ.get("KIT_SEED")
    if text is None or text == "":
        return secrets.randbelow(SEED_MAX + 1)
    try:
        return _seed(text)
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"KIT_SEED: {err}") from err


def _exit_code_help() -> str:
    """The exit code section of the module docstring, so --help and the docs agree."""
    doc = __doc__ or ""
    return doc[doc.index("Exit codes of"):].rstrip()


# ---------------------------------------------------------------- argument types

def _seed(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer 0..{SEED_MAX}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _find_lab(manifest: Manifest, name: str) -> Lab:
    lab = manifest.find_lab(name)
    if lab is None:
        raise UsageError(f"unknown lab {name!r}; labs: {', '.join(manifest.lab_ids())}")
    return lab


# ---------------------------------------------------------------- entry point

# A subcommand is one register_<name>(subparsers) function that adds its parser and sets
# `handler=<function(args: argparse.Namespace, ctx: Context) -> int>`, plus one line below.
SUBCOMMANDS: tuple[Registrar, ...] = (
    register_list,
    register_hint,
    register_grade,
    selftest.register,
    sanitize.register,
)


def build_parser() -> _Parser:
    parser = _Parser(prog="kit.py", description="CUDA lab kit: hints and grading.",
                     epilog=_exit_code_help(),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, root: Path | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Runs one command; returns the exit code instead of exiting (handy for tests)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # "·" and "—" must not crash an ASCII console
    ctx = Context(root or Path(__file__).resolve().parents[2], stdout or sys.stdout,
                  stderr or sys.stderr)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("kit.py: a command is required (list, hint, grade...); see --help")
        handler: Handler = args.handler
        return int(handler(args, ctx))
    except (UsageError, ManifestError) as err:
        ctx.stderr.write(f"error: {err}\n")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        ctx.stderr.write("interrupted\n")
        return ExitCode.INTERRUPTED

