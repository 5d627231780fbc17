"""Command line of the CUDA lab kit grader (``python3 grader/kit.py ...``).

Subcommands: ``list`` (labs and steps), ``hint LAB STEP [--level N]`` (progressive hints),
``grade [LAB ...] [--submission DIR]`` (build, run every test, print tables, write reports), and
the commands of their own modules in SUBCOMMANDS and INSTRUCTOR_MODULES.

Exit codes of `kit.py grade` (the other commands use 0 and 2 only):

  0  every test that ran passed and none was left unrun, except GPU tests on a machine
     without a GPU and counter tests where nothing can read the GPU's counters (unless
     --require-gpu)
  1  at least one test failed, crashed or timed out, or was not run for another reason
  2  usage or configuration error (unknown lab, malformed option, bad labs.json, missing
     report directory parent, a --submission directory that is missing or lacks files);
     one line on stderr, no report written
  3  the build failed, or a lab binary is missing or could not list its tests
  4  --require-gpu was given and some GPU test was not run for lack of a device (or a counter
     test for lack of hardware counters)
  130  interrupted (Ctrl-C); the tests still running are killed, no report is written

When several apply, the highest-priority one wins, in the order 2, 3, 4, 1.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from . import console, profile, reports, runner, sanitize, selftest, student_view, submission
from . import check, diagnose_build, handout, progress, reset, watch
from .context import (KIT_ROOT, SUBMISSION_BUILD, TERMINAL_WIDTH, Context, ExitCode, Parser,
                      UsageError, check_thresholds, default_build_dir, env_seed, find_lab,
                      positive_float, positive_int, seed_arg, select_labs)
from .build import SUBMISSION_VARIABLE, BuildError, cached_value, ensure_built, grading_targets
from .manifest import Lab, Manifest, ManifestError
from .model import RunResult, Status, TestResult
from .submission import Submission

Handler = Callable[[argparse.Namespace, Context], int]
Registrar = Callable[["argparse._SubParsersAction[Parser]"], None]


# ---------------------------------------------------------------- list

def register_list(subparsers: argparse._SubParsersAction[Parser]) -> None:
    parser = subparsers.add_parser("list", help="show labs, steps and their titles")
    parser.set_defaults(handler=_cmd_list)


def _cmd_list(args: argparse.Namespace, ctx: Context) -> int:
    for lab in ctx.manifest().labs:
        lines = reports.wrap_lines(f"{lab.id}  {lab.title}  (edit: "
                                   f"{', '.join(lab.student_files)})", TERMINAL_WIDTH, 0, 4)
        for step in lab.steps:
            lines += reports.wrap_lines(f"{step.id:<16} {step.title}", TERMINAL_WIDTH, 4, 21)
        ctx.stdout.writelines(f"{line}\n" for line in lines)
    return ExitCode.OK


# ---------------------------------------------------------------- hint

def register_hint(subparsers: argparse._SubParsersAction[Parser]) -> None:
    parser = subparsers.add_parser(
        "hint", help="show hints for a step, one level at a time",
        description="Hints go from a nudge (level 1) to nearly the answer; "
                    "--level N shows hints 1..N.")
    parser.add_argument("lab", help='lab: "01", "01_indexing" or "indexing"')
    parser.add_argument("step", help='step: "1" or "indexing.1"')
    parser.add_argument("--level", type=positive_int, default=1, help="how many hints (default 1)")
    parser.set_defaults(handler=_cmd_hint)


def _cmd_hint(args: argparse.Namespace, ctx: Context) -> int:
    lab = find_lab(ctx.manifest(), args.lab)
    step = lab.find_step(args.step)
    if step is None:
        raise UsageError(f"lab {lab.id} has no step {args.step!r}; steps: "
                         + ", ".join(s.id for s in lab.steps))
    shown = min(args.level, len(step.hints))
    ctx.stdout.write(textwrap.fill(f"{lab.id} · {step.id} · {step.title}", TERMINAL_WIDTH,
                                   subsequent_indent="  ") + "\n")
    for i, hint in enumerate(step.hints[:shown], start=1):
        first = f"Hint {i}/{len(step.hints)}: "
        ctx.stdout.write("\n" + textwrap.fill(hint, TERMINAL_WIDTH, initial_indent=first,
                                              subsequent_indent="  ") + "\n")
    if shown < len(step.hints):
        ctx.stdout.write(f"\nStuck? Next:\n  {student_view.KIT} hint {lab.number} {step.suffix} "
                         f"--level {shown + 1}\n")
    else:
        ctx.stdout.write("\n(that was the last hint for this step)\n")
    return ExitCode.OK


# ---------------------------------------------------------------- grade

def register_grade(subparsers: argparse._SubParsersAction[Parser]) -> None:
    parser = subparsers.add_parser(
        "grade", help="build, run the tests and write reports",
        description="Builds the lab graders, runs the tests (each lab's correctness tests in one "
                    "process, started again past a crash; timed and perf tests alone on the GPU) "
                    "and writes kit-results.json, junit.xml, results.json (Gradescope) and "
                    "summary.md.",
        epilog=_exit_code_help())
    parser.add_argument("labs", nargs="*", metavar="LAB", help="labs to grade (default: all)")
    if (KIT_ROOT / "solutions").is_dir():  # a student edition has no reference to grade
        parser.add_argument("--variant", choices=tuple(runner.VARIANT_PREFIX), default="student",
                            help="grade your code (student) or the reference solution")
    else:
        parser.set_defaults(variant="student")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="grade the student files in DIR (DIR/labs/<lab>/<file>, DIR/<lab>/<file>, "
                             "or DIR/<file> for one lab) instead of labs/; builds in its own "
                             "directory (default: <repo>/build-submission)")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--seed", type=seed_arg, help="random seed (default: $KIT_SEED or random)")
    _add_run_arguments(parser)
    parser.add_argument("--report-dir", type=Path,
                        help="where reports go (default: <build-dir>/reports/<variant>)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    parser.add_argument("--quiet", action="store_true",
                        help="no build output (unless it fails), no per-test progress, the full "
                             "table")
    parser.add_argument("--verbose", action="store_true",
                        help="the build's output, a line per test and the full table with every "
                             "message (what --report-dir prints too); without it you see one "
                             "screen: steps, score, the first failures and what to do next")
    parser.set_defaults(handler=_cmd_grade)


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a grading run that `grade` and `batch` share."""
    parser.add_argument("--jobs", type=positive_int, default=min(8, os.cpu_count() or 1),
                        help="correctness tests run in parallel (default: %(default)s)")
    parser.add_argument("--timeout", type=positive_float, metavar="S",
                        help="per-test timeout in seconds (default: per lab in labs.json)")
    parser.add_argument("--require-gpu", action="store_true",
                        help="exit 4 if GPU tests could not run for lack of a device")


def _cmd_grade(args: argparse.Namespace, ctx: Context) -> int:
    manifest = ctx.manifest()
    labs = select_labs(manifest, args.labs)
    sub: Submission | None = None
    if args.submission is not None:
        if args.variant != "student":
            raise UsageError("--submission grades a student's files; it cannot be combined with "
                             "--variant reference")
        if args.no_build:
            raise UsageError("--submission builds the submission; it cannot be combined with --no-build")
        sub = submission.locate(args.submission, labs, explicit=bool(args.labs))
        labs = list(sub.labs)
    seed = args.seed if args.seed is not None else env_seed()
    build_dir = default_build_dir(ctx, args.build_dir, SUBMISSION_BUILD if sub else "build")
    report_dir = _report_dir(args.report_dir, build_dir, args.variant)
    check_thresholds(ctx)
    built_for = cached_value(build_dir / "CMakeCache.txt", SUBMISSION_VARIABLE)
    if args.no_build and built_for:
        raise UsageError(f"{build_dir} was last built for the submission staged in {built_for}; "
                         "grade without --no-build (or use another --build-dir)")

    # A student (no --report-dir, --quiet or --verbose) sees one screen; logs get everything.
    student = not (args.quiet or args.verbose or args.report_dir is not None)
    source = f", submission {sub.root}" if sub else ""
    if student:
        what = labs[0].id if len(labs) == 1 else f"{len(labs)} labs"
        ctx.stdout.write(f"Grading {what} ({args.variant}{source}), seed {seed}\n")
        show: console.Console = console.for_student(ctx.stdout)
    else:
        ctx.stdout.writelines(f"{line}\n" for line in reports.wrap_lines(
            f"Grading {', '.join(lab.id for lab in labs)} ({args.variant}{source}), "
            f"{reports.seed_text(seed)}", _terminal_width(ctx.stdout), 0, 2))
        lines = None if args.quiet else console.test_lines(ctx.stderr, _terminal_width(ctx.stderr))
        show = console.StreamConsole(ctx.stdout, lines, quiet=args.quiet)
    ctx.stdout.flush()
    options = runner.RunOptions(args.variant, seed, args.jobs, args.timeout)
    try:
        run = _build_and_run(ctx, manifest, labs, build_dir, options, sub=sub,
                             no_build=args.no_build, show=show)
    except BuildError as err:
        ctx.stderr.write(f"build failed: {err}\n")
        ctx.stderr.writelines(f"{line}\n" for text in diagnose_build.explain(err.output)
                              for line in diagnose_build.wrapped(
                                  text, _terminal_width(ctx.stderr) - 2))
        return ExitCode.BUILD_OR_BINARY
    progress.save(run, build_dir)  # a student grade of labs/ is the lab's state in `kit.py progress`

    colour = console.use_colour(ctx.stdout)
    if student:
        ctx.stdout.write("\n" + student_view.render(run, width=_terminal_width(ctx.stdout),
                                                     colour=colour, manifest=manifest))
    else:
        ctx.stdout.write("\n" + reports.render_terminal(run, colour, _terminal_width(ctx.stdout)))
    try:
        paths = reports.write_reports(run, report_dir)
    except OSError as err:
        raise UsageError(f"cannot write reports to {report_dir}: {err.strerror}") from err
    if student:
        ctx.stdout.write(f"Reports: {_shown_dir(report_dir, ctx.root)}\n")
    else:
        ctx.stdout.write("Reports:\n" + "".join(f"  {p}\n" for p in paths))
    return grade_exit_code(run, args.require_gpu)


def _terminal_width(stream: TextIO) -> int:
    if not stream.isatty():
        return TERMINAL_WIDTH
    return max(40, min(student_view.MAX_WIDTH, shutil.get_terminal_size((80, 24)).columns))


def _shown_dir(path: Path, root: Path) -> str:
    """ "build/reports/student/" under the repository root, else the absolute path."""
    try:
        return f"{path.relative_to(root.absolute())}/"
    except ValueError:
        return f"{path}/"


def _build_and_run(ctx: Context, manifest: Manifest, labs: Sequence[Lab], build_dir: Path,
                   options: runner.RunOptions, *, sub: Submission | None, no_build: bool,
                   quiet: bool = False, build_out: TextIO | None = None,
                   progress: Callable[[TestResult], None] | None = None,
                   show: console.Console | None = None) -> RunResult:
    """Stages the submission (if any), builds the graders of `labs`, and grades them.
    Raises BuildError when the build fails.

    `show` says what the build and the tests show while they run; without it the build's output
    goes to `build_out` (stdout; with `quiet` only its tail, on failure) and `progress` is
    called as each test finishes."""
    show = show or console.StreamConsole(build_out or ctx.stdout, progress, quiet=quiet)
    staging = submission.stage(sub, manifest.labs, ctx.root, build_dir) if sub else None
    if not no_build:
        names = grading_targets(ctx.root, labs, options.variant)
        with show.building(names) as out:
            ensure_built(ctx.root, build_dir, names, out=out, quiet=show.quiet_build,
                         submission_dir=staging)
    targets = [runner.lab_target(ctx.root, build_dir, lab, options.variant,
                                 sources=sub.sources(lab) if sub else None) for lab in labs]
    with show.testing(targets, options.variant) as on_result:
        run = runner.run(targets, options, on_result)
    run.submission = str(sub.root) if sub else None
    return run


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


def _exit_code_help() -> str:
    """The exit code section of the module docstring, so --help and the docs agree."""
    doc = __doc__ or ""
    return doc[doc.index("Exit codes of"):].rstrip()


# ---------------------------------------------------------------- entry point

# A subcommand is one register_<name>(subparsers) function that adds its parser and sets
# `handler=<function(args: argparse.Namespace, ctx: Context) -> int>`, plus one line below.
SUBCOMMANDS: tuple[Registrar, ...] = (
    register_list,
    register_hint,
    register_grade,
    selftest.register,
    sanitize.register,
    profile.register,
    progress.register,
    reset.register,
    watch.register,
    handout.register,
    check.register,
)


INSTRUCTOR_MODULES = ("batch", "noise", "calibrate", "leaderboard", "release", "gradescope",
                      "new_lab", "bench_grader", "mutate")
"""Modules of the instructor-only commands. A student edition (kit.py release) leaves their files
out, and the command line then simply does not have them."""


def instructor_commands() -> list[Registrar]:
    found = []
    for name in INSTRUCTOR_MODULES:
        if (Path(__file__).parent / f"{name}.py").is_file():
            found.append(importlib.import_module(f".{name}", __package__).register)
    return found


def build_parser() -> Parser:
    parser = Parser(prog="kit.py", description="CUDA lab kit: hints and grading.",
                     epilog=_exit_code_help())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(subparsers)
    for register in instructor_commands():
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, root: Path | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Runs one command; returns the exit code instead of exiting (handy for tests)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # "·" and "—" must not crash an ASCII console
    ctx = Context(root or KIT_ROOT, stdout or sys.stdout,
                  stderr or sys.stderr)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("kit.py: a command is required (list, hint, grade, batch...); see --help")
        handler: Handler = args.handler
        return int(handler(args, ctx))
    except (UsageError, ManifestError) as err:
        ctx.stderr.write(f"error: {err}\n")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        ctx.stderr.write("interrupted\n")
        return ExitCode.INTERRUPTED

