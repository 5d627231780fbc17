"""``kit.py bench-grader [LAB ...]``: how long each phase of grading takes (instructor-only: a
student edition leaves this module out).

Grades the labs as ``kit.py grade`` does and times each phase: configure
(kitgrade.build.configure), build (kitgrade.build.ensure_built of the targets grade builds), the
tests as the runner times them (list, correctness, sanitizer, timed, counters, perf, from
RunResult.timings; when the runner reports none, the whole of runner.run as "tests"), and the
reports (written into a temporary folder). "other" is runner.run's time outside its phases (the
judges' checksums, any wait for the device query, which runs beside the listing). With
--repeat K it grades K times and prints each phase's median, min and max, and the total's.
Under the table, the SLOWEST tests of the last run, each with its own duration (tests side by
side overlap, so these do not add up to a phase).

The build directory is reused as grade reuses it: configure runs only when the directory is not
configured for labs/ yet (0 s otherwise), and the build rebuilds what changed. --fresh-build
times a build from nothing: each run in a new temporary directory, removed afterwards, or in
--build-dir, removed first. ccache, when the build uses it, still serves compiled objects to a
fresh directory; CCACHE_DISABLE=1 times cold compiles.

With --trace FILE, every grader process of each run appends its KIT_TRACE lines to FILE
(emptied at the start of each run; kit/timing.h: "pid ms what", on the clock all processes
share), and under the table each test process of the last run gets a line: when it started,
when its first test ended (the wait for its CUDA contexts shows there), when it ended, how many
tests it ran and the first one: which process the correctness phase waited for last.

With --versus NAME=VALUE (repeatable) each of the K rounds grades twice, first with the
environment as it is (A), then with those variables set (B), and the table compares them: each
phase's median and range under A and under B, and B's median less A's. The runs alternate, so a
machine that drifts (clocks, other users) moves both alike: how to tell whether a setting such as
KIT_JUDGE_POOL=0 or KIT_PERF_EARLY=0 pays on this machine.

Without a GPU it still runs and prints the table: the GPU tests report "not run", so the test
phases time the host tests only.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from . import reports, runner
from .build import (SUBMISSION_VARIABLE, BuildError, cached_value, configure, ensure_built,
                    grading_targets)
from .context import (KIT_ROOT, Context, ExitCode, UsageError, check_thresholds,
                      default_build_dir, env_seed, positive_int, select_labs)
from .manifest import Lab
from .model import RunResult, Status

PHASES = ("configure", "build", "list", "correctness", "sanitizer", "timed", "counters", "perf",
          "other", "tests", "reports")
"""The table's rows, in order; a row shows when some run timed that phase."""
RUNNER_PHASES = ("list", "correctness", "sanitizer", "timed", "counters", "perf")
"""The keys of RunResult.timings (seconds), as runner.run fills them."""
WIDTH = 80
SLOWEST = 10
"""Tests listed under the table: where the time of the test phases went."""
T = TypeVar("T")


@dataclass
class Sample:
    """One grading run: seconds per phase, and what the table's notes need."""

    seconds: dict[str, float] = field(default_factory=dict)
    configured: bool = False
    """Whether configure ran (False: the build directory was already configured for labs/)."""
    gpu: bool = False
    not_graded: list[str] = field(default_factory=list)
    """Labs the runner could not grade (missing binary, listing failed), with why."""
    slowest: list[tuple[float, str]] = field(default_factory=list)
    """The SLOWEST tests that ran longest, (seconds, "lab test kind"), longest first."""
    build_steps: list[tuple[float, float, str]] = field(default_factory=list)
    """A build from nothing: its BUILD_STEPS longest steps from Ninja's log, (seconds, started
    at, output), longest first."""
    build_cpu: float = 0.0
    """The same build: every step's seconds added up (the build's work, whatever ran at once)."""
    tests: int = 0
    """Tests graded (every verdict, not run included)."""
    passed: int = 0
    """Of those, the tests that passed: a run where fewer passed skipped work (a closed perf
    gate, a failed step) and is not comparable to one where all did."""

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench-grader", help="time each phase of grading (configure, build, tests, reports)",
        description=__doc__)
    parser.add_argument("labs", nargs="*", metavar="LAB", help="labs to grade (default: all)")
    if (KIT_ROOT / "solutions").is_dir():
        parser.add_argument("--variant", choices=tuple(runner.VARIANT_PREFIX), default="student",
                            help="grade labs/ (student, default) or the reference solution")
    else:
        parser.set_defaults(variant="student")
    parser.add_argument("--fresh-build", action="store_true",
                        help="configure and build from nothing in every run: a new temporary "
                             "build directory, or --build-dir removed first")
    parser.add_argument("--build-dir", type=Path,
                        help="CMake build directory (default: <repo>/build, or a temporary one "
                             "with --fresh-build)")
    parser.add_argument("--jobs", type=positive_int, default=min(8, os.cpu_count() or 1),
                        help="correctness tests run in parallel (default: %(default)s)")
    parser.add_argument("--repeat", type=positive_int, default=1, metavar="K",
                        help="grade K times; the table shows median, min and max (default 1)")
    parser.add_argument("--trace", type=Path, metavar="FILE",
                        help="write the grader processes' KIT_TRACE lines to FILE and list the "
                             "last run's test processes under the table")
    parser.add_argument("--versus", action="append", metavar="NAME=VALUE", default=[],
                        help="each round grades as is, then with this environment variable set "
                             "(repeatable), and the table compares the two")
    parser.set_defaults(handler=_cmd_bench_grader)


def parse_versus(items: Sequence[str]) -> dict[str, str]:
    """The variables of --versus ({} without it); a malformed item is a UsageError."""
    found: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name or not (name[0].isalpha() or name[0] == "_") or \
                not all(c.isalnum() or c == "_" for c in name) or not name.isascii():
            raise UsageError(f"--versus {item!r}: expected NAME=VALUE, e.g. KIT_JUDGE_POOL=0")
        found[name] = value
    return found


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` set, as it was afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _cmd_bench_grader(args: argparse.Namespace, ctx: Context) -> int:
    labs = select_labs(ctx.manifest(), args.labs)
    explicit = args.build_dir.absolute() if args.build_dir is not None else None
    if args.fresh_build and explicit is not None:
        _check_removable(explicit, ctx.root)
    versus = parse_versus(args.versus)
    check_thresholds(ctx)
    seed = env_seed()
    options = runner.RunOptions(args.variant, seed, args.jobs)
    what = ", ".join(lab.id for lab in labs) if len(labs) <= 3 else f"{len(labs)} labs"
    setups = [{}, versus] if versus else [{}]
    count = args.repeat * len(setups)
    runs = f"{count} runs" if count > 1 else "1 run"
    ctx.stdout.write(_wrap(f"bench-grader: {what} ({args.variant}), {runs}, seed {seed}") + "\n")
    ctx.stdout.write(_wrap(_build_dir_line(ctx, explicit, args.fresh_build)) + "\n")
    if versus:
        ctx.stdout.write(_wrap(f"A: the environment as it is; B: {_setting(versus)}; "
                               f"{args.repeat} round(s) of A then B") + "\n")
    ctx.stdout.flush()
    samples: list[list[Sample]] = [[] for _ in setups]
    for i in range(count):
        which = i % len(setups)
        try:
            with _environment(setups[which]), \
                    _build_dir(ctx, explicit, args.fresh_build) as build_dir, _tracing(args.trace):
                sample = bench_once(ctx.root, labs, build_dir, options)
        except BuildError as err:
            ctx.stderr.write(f"build failed: {err}\n{err.output}")
            return ExitCode.BUILD_OR_BINARY
        samples[which].append(sample)
        label = f" ({'AB'[which]})" if versus else ""
        ctx.stdout.write(_progress_line(i + 1, count, sample, label) + "\n")
        ctx.stdout.flush()
    notes = [CCACHE_NOTE] if args.fresh_build and _ccache_serves() else []
    if versus:
        ctx.stdout.write("\n" + render_versus(samples[0], samples[1], _setting(versus), notes))
    else:
        ctx.stdout.write("\n" + render(samples[0], notes))
    if args.trace is not None:
        text = args.trace.read_text(errors="replace") if args.trace.is_file() else ""
        ctx.stdout.write("\n" + render_trace(trace_processes(text)))
    return ExitCode.OK


@contextmanager
def _tracing(path: Path | None) -> Iterator[None]:
    """KIT_TRACE=path (emptied first) for the graders started inside; nothing when None."""
    if path is None:
        yield
        return
    path.write_text("")
    with _environment({"KIT_TRACE": str(path.absolute())}):
        yield


@dataclass
class TraceProcess:
    """One grader process of a KIT_TRACE file, its times in seconds from the file's first line."""

    start: float
    end: float
    first_end: float | None  # when its first test ended
    tests: int
    first: str  # its first test's id


def trace_processes(text: str) -> list[TraceProcess]:
    """The processes of a KIT_TRACE file that ran tests, by start time. Lines that do not read as
    "pid ms what" are skipped."""
    events: dict[str, list[tuple[float, str]]] = {}
    for line in text.splitlines():
        parts = line.split(" ", 2)
        try:
            ms = float(parts[1])
        except (IndexError, ValueError):
            continue
        events.setdefault(parts[0], []).append((ms, parts[2] if len(parts) > 2 else ""))
    if not events:
        return []
    origin = min(ms for seen in events.values() for ms, _ in seen)
    processes = []
    for seen in events.values():
        starts = [(ms, what[len("start "):]) for ms, what in seen if what.startswith("start ")]
        if not starts:
            continue  # a listing, or a worker's own lines
        ends = [ms for ms, what in seen if what.startswith("end ")]
        first_end = min(ends) if ends else None
        processes.append(TraceProcess(
            start=(min(ms for ms, _ in seen) - origin) / 1000,
            end=(max(ms for ms, _ in seen) - origin) / 1000,
            first_end=None if first_end is None else (first_end - origin) / 1000,
            tests=len(starts), first=min(starts)[1]))
    return sorted(processes, key=lambda p: (p.start, p.end))


def render_trace(processes: Sequence[TraceProcess]) -> str:
    """The processes as lines of at most 80 columns, seconds from the trace's first line."""
    if not processes:
        return "trace: no test process wrote a line (a grader built before KIT_TRACE?)\n"
    lines = ["test processes of the last run (KIT_TRACE; seconds from its first line):",
             " start  first test ended    end  tests  first test"]
    for p in processes:
        first_end = f"{p.first_end:6.2f}" if p.first_end is not None else "     -"
        row = f"{p.start:6.2f}  {first_end:>16}  {p.end:5.2f}  {p.tests:5d}  "
        lines.append(row + p.first[:80 - len(row)])
    return "\n".join(lines) + "\n"


CCACHE_NOTE = ("build: compiled through ccache, which serves a fresh build directory the "
               "objects it has compiled before; CCACHE_DISABLE=1 times cold compiles")


def _ccache_serves() -> bool:
    """Whether the kit's build compiles through ccache (CMakeLists.txt: when it is installed,
    unless KIT_USE_CCACHE=OFF; ccache itself is off while CCACHE_DISABLE is set, to any value)."""
    return shutil.which("ccache") is not None and "CCACHE_DISABLE" not in os.environ


# ---------------------------------------------------------------- one run

def bench_once(root: Path, labs: Sequence[Lab], build_dir: Path,
               options: runner.RunOptions) -> Sample:
    """Grades `labs` once in `build_dir` as kit.py grade does, timing each phase.
    Raises BuildError when configuring or building fails."""
    sample = Sample()
    out = io.StringIO()  # the build's output; BuildError carries its tail
    cache = build_dir / "CMakeCache.txt"
    fresh = not cache.is_file()
    if fresh:
        sample.seconds["configure"] = _timed(lambda: configure(root, build_dir, out=out,
                                                                 quiet=True))[1]
        sample.configured = True
    elif cached_value(cache, SUBMISSION_VARIABLE):  # last built for a submission: back to labs/
        sample.seconds["configure"] = _timed(lambda: configure(
            root, build_dir, f"-D{SUBMISSION_VARIABLE}=", out=out, quiet=True))[1]
        sample.configured = True
    else:
        sample.seconds["configure"] = 0.0
    names = grading_targets(root, labs, options.variant)
    sample.seconds["build"] = _timed(lambda: ensure_built(root, build_dir, names, out=out,
                                                          quiet=True))[1]
    if fresh:  # built from nothing: Ninja's log holds this build alone
        steps = ninja_steps(build_dir / ".ninja_log")
        sample.build_cpu = sum(seconds for seconds, _, _ in steps)
        sample.build_steps = steps[:BUILD_STEPS]
    targets = [runner.lab_target(root, build_dir, lab, options.variant) for lab in labs]
    run, seconds = _timed(lambda: runner.run(targets, options))
    sample.seconds.update(runner_phases(run, seconds))
    sample.gpu = run.gpu_available
    sample.not_graded = [f"{lab.lab}: {lab.error}" for lab in run.errors]
    sample.slowest = slowest_tests(run)
    verdicts = [test.status for lab in run.labs for test in lab.tests]
    sample.tests = len(verdicts)
    sample.passed = sum(status is Status.PASSED for status in verdicts)
    with tempfile.TemporaryDirectory(prefix="kit-bench-reports-") as tmp:
        sample.seconds["reports"] = _timed(lambda: reports.write_reports(run, Path(tmp)))[1]
    return sample


BUILD_STEPS = 5
"""How many of a fresh build's longest steps the table lists."""


def ninja_steps(log: Path) -> list[tuple[float, float, str]]:
    """The steps in Ninja's log (`.ninja_log`: start and end in ms, mtime, output, hash per line),
    (seconds, started at in s, output), longest first; a step with several outputs once. Empty
    when there is no log (another generator)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    steps: dict[tuple[int, int, str], str] = {}
    for line in lines:
        fields = line.split("\t")
        if line.startswith("#") or len(fields) < 5:
            continue
        try:
            start, end = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        steps.setdefault((start, end, fields[4]), fields[3])
    return sorted(((end - start) / 1000, start / 1000, output)
                  for (start, end, _), output in steps.items())[::-1]


def slowest_tests(run: RunResult, count: int = SLOWEST) -> list[tuple[float, str]]:
    """The `count` tests of `run` that took longest (each test's own duration, as the reports
    give it), longest first."""
    timed = [(test.duration_s, f"{lab.lab[:2]} {test.id} ({test.kind})")
             for lab in run.labs for test in lab.tests
             if test.duration_s > 0 and test.status is not Status.NOT_RUN]
    return sorted(timed, key=lambda item: -item[0])[:count]


def runner_phases(run: RunResult, seconds: float) -> dict[str, float]:
    """The runner's own phases (RunResult.timings) plus "other", the rest of `seconds` (how long
    runner.run took); only "tests" = `seconds` when the runner timed no phase."""
    timings = getattr(run, "timings", None) or {}
    phases = {name: float(timings[name]) for name in RUNNER_PHASES if name in timings}
    if not phases:
        return {"tests": seconds}
    phases["other"] = max(0.0, seconds - sum(phases.values()))
    return phases


def _timed(action: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


# ---------------------------------------------------------------- build directories

@contextmanager
def _build_dir(ctx: Context, explicit: Path | None, fresh: bool) -> Iterator[Path]:
    """The build directory of one run: `explicit` (removed first with `fresh`), a new temporary
    one (`fresh` without `explicit`, removed afterwards), or <repo>/build."""
    if not fresh:
        yield default_build_dir(ctx, explicit)
    elif explicit is not None:
        shutil.rmtree(explicit, ignore_errors=True)
        yield explicit
    else:
        with tempfile.TemporaryDirectory(prefix="kit-bench-build-") as tmp:
            yield Path(tmp)


def _check_removable(path: Path, root: Path) -> None:
    """--fresh-build removes --build-dir: only a build directory (or an empty or missing folder),
    and never one holding the kit."""
    if path == root.absolute() or root.absolute().is_relative_to(path):
        raise UsageError(f"--fresh-build would remove {path}, which holds the kit")
    if path.exists() and not (path / "CMakeCache.txt").is_file() and any(path.iterdir()):
        raise UsageError(f"--fresh-build would remove {path}, which is not a CMake build "
                         "directory (no CMakeCache.txt); give an empty or new folder")


def _build_dir_line(ctx: Context, explicit: Path | None, fresh: bool) -> str:
    if not fresh:
        return (f"build dir: {default_build_dir(ctx, explicit)} (reused as kit.py grade does; "
                "--fresh-build times a build from nothing)")
    if explicit is not None:
        return f"build dir: {explicit}, removed before each run (--fresh-build)"
    return "build dir: a new temporary one for each run (--fresh-build)"


# ---------------------------------------------------------------- output

def _setting(values: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in values.items())


def _progress_line(i: int, runs: int, sample: Sample, label: str = "") -> str:
    """One line per run: its total, and configure, build, tests (the runner's phases together)
    and reports."""
    tests = sum(v for k, v in sample.seconds.items() if k not in ("configure", "build", "reports"))
    parts = {"configure": sample.seconds.get("configure", 0.0),
             "build": sample.seconds.get("build", 0.0), "tests": tests,
             "reports": sample.seconds.get("reports", 0.0)}
    return (f"run {i}/{runs}{label}: {sample.total:.2f} s ("
            + ", ".join(f"{name} {value:.2f}" for name, value in parts.items())
            + f"; {sample.passed}/{sample.tests} passed)")


def render(samples: Sequence[Sample], notes: Sequence[str] = ()) -> str:
    """The table (80 columns): a row per phase, then the total; seconds of the one run, or the
    median, min and max over the runs; each phase's share of the total median; then its notes
    and `notes`."""
    many = len(samples) > 1
    head = (f"{'phase':<14}{'median s':>10}{'min s':>10}{'max s':>10}{'share':>8}" if many
            else f"{'phase':<14}{'seconds':>10}{'share':>8}")
    total = statistics.median(s.total for s in samples)
    lines = [head, "-" * len(head)]
    for name in PHASES:
        if any(name in s.seconds for s in samples):
            lines.append(_row(name, [s.seconds.get(name, 0.0) for s in samples], total, many))
    lines.append("-" * len(head))
    lines.append(_row("total", [s.total for s in samples], total, many))
    return _table_text(lines, [*_notes(samples), *notes], samples[-1], "the last run")


def render_versus(a: Sequence[Sample], b: Sequence[Sample], setting: str,
                  notes: Sequence[str] = ()) -> str:
    """The comparison (80 columns): a row per phase, then the total; under A and under B the
    median and the range of the runs; then B's median less A's. Notes as render()'s, the slowest
    tests of the last run (B's)."""
    head = (f"{'phase':<14}{'A median':>10}{'A range':>15}{'B median':>10}{'B range':>15}"
            f"{'B - A':>9}")
    lines = [head, "-" * len(head)]
    both = [*a, *b]
    for name in PHASES:
        if any(name in s.seconds for s in both):
            lines.append(_versus_row(name, [s.seconds.get(name, 0.0) for s in a],
                                     [s.seconds.get(name, 0.0) for s in b]))
    lines.append("-" * len(head))
    lines.append(_versus_row("total", [s.total for s in a], [s.total for s in b]))
    return _table_text(lines, [f"B: {setting}", *_notes(both), *notes], both[-1],
                       "the last run, B")


def _table_text(lines: Sequence[str], notes: Sequence[str], last: Sample, which: str) -> str:
    """A table's lines, its notes (wrapped) and the slowest tests of `last`, the run `which`."""
    text = "\n".join(lines) + "\n" + "".join(f"{_wrap(note)}\n" for note in notes)
    if last.build_steps:
        text += (f"\nlongest build steps ({which}, {last.build_cpu:.0f} s of steps in all; from "
                 "Ninja's log):\n" + "".join(
                     f"{seconds:7.1f} s  from {start:5.1f} s  {_tail(_step_name(output), 52)}\n"
                     for seconds, start, output in last.build_steps))
    if last.slowest:
        text += f"\nslowest tests ({which}; tests side by side overlap):\n" + "".join(
            f"{seconds:7.2f} s  {what[:68]}\n" for seconds, what in last.slowest)
    return text


def _step_name(output: str) -> str:
    """An object's path from the target's folder on ("judge_03_coalescing.dir/test_coalescing.cu.o"
    for grader/03_coalescing/CMakeFiles/judge_03_coalescing.dir/test_coalescing.cu.o)."""
    return output.rsplit("CMakeFiles/", 1)[-1].replace("__/", "")


def _tail(text: str, width: int) -> str:
    """`text` cut from the left to `width` characters (a path's end says most)."""
    return text if len(text) <= width else "..." + text[-(width - 3):]


def _versus_row(name: str, a: Sequence[float], b: Sequence[float]) -> str:
    def spread(values: Sequence[float]) -> str:
        return f"{min(values):.2f}-{max(values):.2f}"
    a_median, b_median = statistics.median(a), statistics.median(b)
    return (f"{name:<14}{a_median:>10.2f}{spread(a):>15}{b_median:>10.2f}{spread(b):>15}"
            f"{b_median - a_median:>+9.2f}")


def _row(name: str, values: Sequence[float], total: float, many: bool) -> str:
    median = statistics.median(values)
    share = f"{100 * median / total:.0f}%" if total > 0 else "-"
    if many:
        return f"{name:<14}{median:>10.2f}{min(values):>10.2f}{max(values):>10.2f}{share:>8}"
    return f"{name:<14}{median:>10.2f}{share:>8}"


def _notes(samples: Sequence[Sample]) -> list[str]:
    notes = []
    if not all(s.configured for s in samples):
        notes.append("configure: 0 s where the build directory was already configured (as in "
                     "kit.py grade)")
    if not any(s.gpu for s in samples):
        notes.append("no GPU: the GPU tests were not run; the test phases time the host tests "
                     "only")
    if any("tests" in s.seconds for s in samples):
        notes.append("tests: the runner timed no phase of its own (no RunResult.timings), so "
                     "this is all of runner.run")
    for failure in dict.fromkeys(f for s in samples for f in s.not_graded):
        notes.append(f"not graded: {failure}")
    short = [i for i, s in enumerate(samples, start=1) if s.gpu and s.passed < s.tests]
    if short:
        notes.append(f"not every test passed in run(s) {', '.join(map(str, short))}: a failed "
                     "step or a closed perf gate skips work, so those runs are not comparable")
    return notes


def _wrap(note: str) -> str:
    """A line within WIDTH columns, continued lines indented (a long path is not broken)."""
    return textwrap.fill(note, WIDTH, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)
