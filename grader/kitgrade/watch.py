"""``kit.py watch LAB``: rebuilds and regrades a lab every time you save one of its files.

It grades once at the start, then looks at the lab's student files (their modification time,
size and inode) every 0.3 s; a save starts a new build and grade within half a second. Each
grade replaces the screen (on a terminal) with the student view of the result; a file that does
not compile shows the compiler's own messages (without the build tool's noise), an explanation
of the errors the kit knows (kitgrade.diagnose_build), and waits for the next save. The bottom
lines say when the change was seen (and how long after the save), when the grade ended, and
which files are watched. Ctrl-C stops it (exit code 0); the tests still running are killed.

Every grade is a student grade of labs/, so `kit.py progress` shows it.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from . import diagnose_build, progress, protocol, reports, runner
from .build import BuildError, ensure_built
from .manifest import Lab, Manifest
from .model import RunResult
from .context import (check_thresholds, default_build_dir, env_seed, find_lab, positive_float,
                      positive_int, seed_arg)

POLL_S = 0.3
SETTLE_S = 0.05
"""After a change is seen, how long to wait for the editor to finish writing (once or twice)."""
CLEAR = "\033[H\033[2J"

Fingerprint = tuple[tuple[int, int, int] | None, ...]


def fingerprint(paths: Sequence[Path]) -> Fingerprint:
    """What changes when a file is saved: modification time, size and inode (an editor that
    writes a new file and renames it over the old one), or None for a missing file."""
    result = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            result.append(None)
            continue
        result.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(result)


@dataclass
class Attempt:
    """One build and grade: the run, or the build's failure and its output."""

    run: RunResult | None = None
    build_error: str | None = None
    build_output: str = ""


@dataclass(frozen=True)
class Change:
    seen_at: float
    """When the regrade started (the change was seen, and the files stopped changing)."""
    saved_at: float
    """The newest modification time among the files that changed."""
    names: tuple[str, ...]


def build_and_grade(root: Path, build_dir: Path, lab: Lab,
                    options: Callable[[], runner.RunOptions]) -> Attempt:
    """Builds the lab's student grader (quietly) and grades it, as `kit.py grade LAB` does, and
    records the result for `kit.py progress`."""
    log = io.StringIO()
    try:
        ensure_built(root, build_dir, [runner.target_name(lab, "student")], out=log, quiet=True)
    except BuildError as err:
        return Attempt(build_error=str(err), build_output=err.output or log.getvalue())
    run = runner.run([runner.lab_target(root, build_dir, lab, "student")], options())
    progress.save(run, build_dir)
    return Attempt(run=run)


def render_run(run: RunResult, width: int, colour: bool, manifest: Manifest | None = None) -> str:
    """The student view (kitgrade.student_view) of a grade; the instructor table until that
    module exists."""
    try:
        from . import student_view
    except ModuleNotFoundError as err:
        if err.name != f"{__package__}.student_view":
            raise
        return reports.render_terminal(run, colour, width)
    return student_view.render(run, width=min(width, student_view.MAX_WIDTH), colour=colour,
                               manifest=manifest)


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]


class Watcher:
    """The loop, with everything it touches injected so tests can drive it without a build."""

    def __init__(self, paths: Sequence[Path], shown: str, grade: Callable[[], Attempt], *,
                 out: TextIO, poll_s: float = POLL_S, max_cycles: int | None = None,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 size: Callable[[], os.terminal_size] = lambda: shutil.get_terminal_size((80, 24)),
                 render: Callable[[RunResult, int, bool], str] = render_run) -> None:
        self.paths = list(paths)
        self.shown = shown
        self.grade = grade
        self.out = out
        self.poll_s = poll_s
        self.max_cycles = max_cycles
        self.clock = clock
        self.sleep = sleep
        self.size = size
        self.render = render
        self.tty = _isatty(out)

    def run(self) -> int:
        cycles = 0
        change: Change | None = None
        try:
            while True:
                before = fingerprint(self.paths)
                started = self.clock()
                if change is not None:
                    self.out.write(f"\nchange seen {_clock(change.seen_at)} in "
                                   f"{', '.join(change.names)}: rebuilding and grading...\n")
                    self.out.flush()
                attempt = self.grade()
                self._show(attempt, change, started, self.clock())
                cycles += 1
                if self.max_cycles is not None and cycles >= self.max_cycles:
                    return 0
                change = self._wait(before)
        except KeyboardInterrupt:
            protocol.kill_running()
            self.out.write("\nwatch: stopped\n")
            self.out.flush()
            return 0

    def _wait(self, before: Fingerprint) -> Change:
        """Polls until a file differs from `before`, then until it stops changing (briefly)."""
        while True:
            now = fingerprint(self.paths)
            if now != before:
                break
            self.sleep(self.poll_s)
        for _ in range(3):  # an editor may truncate, then write: let it finish
            self.sleep(SETTLE_S)
            settled = fingerprint(self.paths)
            if settled == now:
                break
            now = settled
        changed = [i for i, (a, b) in enumerate(zip(before, now)) if a != b]
        saved = [now[i][0] / 1e9 for i in changed if now[i] is not None]
        seen = self.clock()
        return Change(seen, max(saved) if saved else seen,
                      tuple(self.paths[i].name for i in changed))

    def _show(self, attempt: Attempt, change: Change | None, started: float,
              finished: float) -> None:
        size = self.size()
        colour = reports.use_colour(self.out)
        footer = [self._timing(attempt, change, started, finished),
                  f"watching {self.shown} (Ctrl-C to stop)"]
        if attempt.run is not None:
            body = self.render(attempt.run, size.columns, colour).rstrip("\n").splitlines()
        else:
            body = self._build_failure(attempt, size, len(footer))
        screen = "\n".join([*body, "", *footer]) + "\n"
        self.out.write((CLEAR if self.tty else "\n") + screen)
        self.out.flush()

    def _build_failure(self, attempt: Attempt, size: os.terminal_size, footer: int) -> list[str]:
        messages = diagnose_build.filter_output(attempt.build_output)
        why = [line for text in diagnose_build.explain(attempt.build_output)
               for line in diagnose_build.wrapped(text, max(size.columns - 1, 40))]
        head = ["Build failed: the compiler says:"]
        if self.tty:  # keep the first error on the screen: it is the one to fix
            room = max(size.lines - len(head) - len(why) - footer - 4, 6)  # 4: blanks, last lines
            rows = [-(-max(len(line), 1) // size.columns) for line in messages]  # wrapped
            if sum(rows) > room:
                shown = 0
                while sum(rows[:shown + 1]) < room:
                    shown += 1
                messages = messages[:shown] + [f"... ({len(messages) - shown} more lines; fix "
                                               "the first error first)"]
        if not messages:
            messages = [attempt.build_error or "the build failed"]
        tail = ["", *why] if why else []
        return [*head, *messages, *tail, "Fix the first error and save: watch rebuilds then."]

    @staticmethod
    def _timing(attempt: Attempt, change: Change | None, started: float, finished: float) -> str:
        what = "graded" if attempt.run is not None else "build failed"
        if change is None:
            return f"first grade started {_clock(started)}, {what} {_clock(finished)}"
        lag = max(change.seen_at - change.saved_at, 0.0)
        return (f"change seen {_clock(change.seen_at)} ({lag:.2f} s after the save), "
                f"{what} {_clock(finished)}")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def shown_files(lab: Lab) -> str:
    """labs/01_indexing/{index_math.cuh, indexing.cu}"""
    names = lab.student_files
    inner = names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"
    return f"labs/{lab.id}/{inner}"


# ---------------------------------------------------------------- the command

def register(subparsers: argparse._SubParsersAction) -> None:

    parser = subparsers.add_parser(
        "watch", help="rebuild and regrade a lab every time you save one of its files",
        description=__doc__)
    parser.add_argument("lab", metavar="LAB", help='lab: "01", "01_indexing" or "indexing"')
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--seed", type=seed_arg,
                        help="random seed of every grade (default: $KIT_SEED or a new one each time)")
    parser.add_argument("--jobs", type=positive_int, default=min(8, os.cpu_count() or 1),
                        help="correctness tests run in parallel (default: %(default)s)")
    parser.add_argument("--timeout", type=positive_float, metavar="S",
                        help="per-test timeout in seconds (default: the lab's, from labs.json)")
    parser.add_argument("--interval", type=positive_float, default=POLL_S, metavar="S",
                        help="seconds between two looks at the files (default: %(default)s)")
    cycles = parser.add_mutually_exclusive_group()
    cycles.add_argument("--max-cycles", type=positive_int, metavar="N",
                        help="stop after N grades (for scripts and tests)")
    cycles.add_argument("--once", action="store_const", const=1, dest="max_cycles",
                        help="grade once and stop (the same as --max-cycles 1)")
    parser.set_defaults(handler=_cmd_watch)


def _cmd_watch(args: argparse.Namespace, ctx: Any) -> int:

    manifest = ctx.manifest()
    lab = find_lab(manifest, args.lab)
    build_dir = default_build_dir(ctx, args.build_dir)
    check_thresholds(ctx)

    def options() -> runner.RunOptions:
        seed = args.seed if args.seed is not None else env_seed()
        return runner.RunOptions("student", seed, args.jobs, args.timeout)

    options()  # a bad KIT_SEED is a usage error now, not at the first save
    paths = [ctx.root / "labs" / lab.id / name for name in lab.student_files]
    ctx.stdout.write(f"watch: building and grading {lab.id}...\n")
    ctx.stdout.flush()
    watcher = Watcher(paths, shown_files(lab),
                      lambda: build_and_grade(ctx.root, build_dir, lab, options),
                      out=ctx.stdout, poll_s=args.interval, max_cycles=args.max_cycles,
                      render=lambda run, width, colour: render_run(run, width, colour, manifest))
    return watcher.run()
