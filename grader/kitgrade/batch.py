"""``kit.py batch ROOT [LAB ...] --report-dir OUT``: grades every submission in a folder, one
after the other in one build directory, and writes OUT/scores.csv (instructor-only: a student
edition leaves this module out)."""

from __future__ import annotations

import argparse
import csv
import io
from collections.abc import Sequence
from pathlib import Path

from . import reports, runner, submission
from .build import BuildError
from .cli import _add_run_arguments, _build_and_run, grade_exit_code
from .context import (SUBMISSION_BUILD, Context, ExitCode, UsageError, check_thresholds,
                      default_build_dir, env_seed, seed_arg, select_labs)
from .manifest import Lab, Manifest
from .submission import SubmissionError


BATCH_HELP = """Grades each subdirectory of ROOT as one submission (as `grade --submission`
would), one after the other in one build directory, and writes each submission's reports to
OUT/<name>/ and one row per submission to OUT/scores.csv: name, total, max, the points of each
lab, status. A submission that is missing files or does not build gets a row saying so
(its build log goes to OUT/<name>/build.log) and the batch goes on.

Exit codes: 0 every submission was graded (whatever its score), 2 usage error (nothing
written), 3 some submission could not be graded (missing files, build failed, grader could not
run), 4 --require-gpu and some GPU test could not run for lack of a device (or a counter test
for lack of hardware counters)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch", help="grade every submission in a folder and write scores.csv",
        description=BATCH_HELP)
    parser.add_argument("root", type=Path, metavar="ROOT", help="folder with one subfolder per submission")
    parser.add_argument("labs", nargs="*", metavar="LAB",
                        help="labs to grade (default: those each submission has files for)")
    parser.add_argument("--report-dir", type=Path, required=True, metavar="OUT",
                        help="where OUT/<name>/ reports and OUT/scores.csv go")
    parser.add_argument("--build-dir", type=Path,
                        help=f"CMake build directory (default: <repo>/{SUBMISSION_BUILD})")
    parser.add_argument("--seed", type=seed_arg, help="one seed for every submission (default: $KIT_SEED or random)")
    _add_run_arguments(parser)
    parser.set_defaults(handler=_cmd_batch)


def _cmd_batch(args: argparse.Namespace, ctx: Context) -> int:
    manifest = ctx.manifest()
    labs = select_labs(manifest, args.labs)
    root = args.root.absolute()
    if not root.is_dir():
        raise UsageError(f"submissions folder is not a directory: {root}")
    folders = sorted((d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")),
                     key=lambda d: d.name)
    if not folders:
        raise UsageError(f"submissions folder {root} has no subfolder (one per submission)")
    out_dir = args.report_dir.absolute()
    if not out_dir.parent.is_dir():
        raise UsageError(f"report directory parent does not exist: {out_dir.parent}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"report directory is not a directory: {out_dir}")
    seed = args.seed if args.seed is not None else env_seed()
    build_dir = default_build_dir(ctx, args.build_dir, SUBMISSION_BUILD)
    check_thresholds(ctx)

    ctx.stdout.write(f"Batch: {len(folders)} submission(s) in {root}, {reports.seed_text(seed)}\n")
    ctx.stdout.flush()
    out_dir.mkdir(exist_ok=True)
    # One set of judges grades every submission: each is pinned at the first (RunOptions).
    options = runner.RunOptions("student", seed, args.jobs, args.timeout, pinned_judges={})
    columns = [lab.id for lab in labs]
    rows: list[list[str]] = []
    code = ExitCode.OK
    for folder in folders:
        row, row_code = _grade_submission(ctx, manifest, labs, bool(args.labs), folder,
                                          out_dir / folder.name, build_dir, options,
                                          args.require_gpu)
        rows.append(row)
        code = _worse(code, row_code)
        ctx.stdout.write(f"  {folder.name}: {row[1] or '-'}/{row[2] or '-'} ({row[-1]})\n")
        ctx.stdout.flush()
        _write_scores(out_dir / "scores.csv", columns, rows)
    ctx.stdout.write(f"Scores: {out_dir / 'scores.csv'}\n")
    return code


def _grade_submission(ctx: Context, manifest: Manifest, labs: Sequence[Lab], explicit: bool,
                      folder: Path, out_dir: Path, build_dir: Path, options: runner.RunOptions,
                      require_gpu: bool) -> tuple[list[str], ExitCode]:
    """One row of scores.csv (name, total, max, per-lab points..., status) and its exit code."""
    empty = ["" for _ in labs]
    try:
        sub = submission.locate(folder, labs, explicit)
    except SubmissionError as err:
        return [folder.name, "", "", *empty, f"not graded: {err}"], ExitCode.BUILD_OR_BINARY
    log = io.StringIO()
    try:
        run = _build_and_run(ctx, manifest, sub.labs, build_dir, options, sub=sub, quiet=True,
                             no_build=False, build_out=log, progress=None)
    except BuildError as err:
        out_dir.mkdir(exist_ok=True)
        reports.write_atomic(out_dir / "build.log", f"{log.getvalue()}\nbuild failed: {err}\n")
        return [folder.name, "", "", *empty, "build failed"], ExitCode.BUILD_OR_BINARY
    reports.write_reports(run, out_dir)
    graded = {lab.lab: lab for lab in run.labs if lab.error is None}
    cells = [reports.fmt_points(graded[lab.id].score) if lab.id in graded else "" for lab in labs]
    row_code = grade_exit_code(run, require_gpu)
    if run.errors:
        status = "incomplete: not graded: " + ", ".join(lab.lab for lab in run.errors)
    elif row_code is ExitCode.NO_GPU:
        status = "graded without a GPU (GPU tests not run)"
    else:
        status = "graded"
    if row_code is ExitCode.TESTS_FAILED:
        row_code = ExitCode.OK  # a low score is the submission's result, not a batch failure
    return ([folder.name, reports.fmt_points(run.score), reports.fmt_points(run.max_score), *cells,
             status], row_code)


def _worse(a: ExitCode, b: ExitCode) -> ExitCode:
    """The exit code that wins, in the documented order 2, 3, 4, 1, 0."""
    order = [ExitCode.USAGE, ExitCode.BUILD_OR_BINARY, ExitCode.NO_GPU, ExitCode.TESTS_FAILED,
             ExitCode.OK]
    return a if order.index(a) <= order.index(b) else b


def _write_scores(path: Path, columns: list[str], rows: list[list[str]]) -> None:
    """Rewritten after every submission, atomically, so a long batch shows its progress."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["name", "total", "max", *columns, "status"])
    writer.writerows(rows)
    reports.write_atomic(path, text.getvalue())
