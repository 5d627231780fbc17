"""What `kit.py grade` shows while it builds and runs the tests.

Three kinds, one interface (`Console.building`, `Console.testing`):

* RichConsole, for a student at a terminal: `rich` progress bars, one for the build (ninja's
  ``[N/M]`` lines: "Building grade_01_indexing" N/M) and one per lab for its tests (done of
  total). Chosen when `rich` can be imported, stdout is a terminal, NO_COLOR is unset, TERM is
  not "dumb" and KIT_PLAIN is unset.
* PlainConsole, for a student otherwise (piped output, no rich, KIT_PLAIN=1): a line when the
  build starts and one when it ends, and one line per lab when its tests are done.
* StreamConsole, for logs (--verbose, --report-dir, --quiet, batch): the build's own output as
  it comes (or only its tail on failure, when quiet) and, unless quiet, a line per test
  (test_lines) on stderr.

A failing build shows the compiler's messages in every kind: the student consoles hold the
output back and print it from ninja's first "FAILED:" line (or the failing command's output).
"""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from . import protocol, reports
from .model import TestResult
from .runner import LabTarget

PLAIN_ENV = "KIT_PLAIN"
"""Set (to anything but "" or "0") for plain output even on a terminal with rich installed:
no progress bars, no colours."""

FAILURE_LINES_MAX = 200
"""The most lines of a failed build's output a student console prints."""

ResultCallback = Callable[[TestResult], None]

_NINJA_STATUS = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")
_MAKE_STATUS = re.compile(r"^\[\s*(\d+)%\] (.*)$")


def plain_requested() -> bool:
    return os.environ.get(PLAIN_ENV, "") not in ("", "0")


def use_colour(stream: TextIO) -> bool:
    """Colours for a terminal (reports.use_colour: a TTY, no NO_COLOR, TERM not dumb),
    unless KIT_PLAIN asks for plain output."""
    return reports.use_colour(stream) and not plain_requested()


def load_rich() -> Any | None:
    """The rich modules the progress bars need, or None when rich is not installed (or
    KIT_PLAIN is set)."""
    if plain_requested():
        return None
    try:
        import rich.console
        import rich.progress
    except ImportError:
        return None
    return rich


def for_student(stream: TextIO) -> Console:
    """Progress bars on a terminal with rich, plain lines otherwise."""
    rich = load_rich() if use_colour(stream) else None
    return RichConsole(stream, rich) if rich is not None else PlainConsole(stream)


class Console:
    """The interface: what the build and the test run report to, and what they show."""

    quiet_build = False
    """Passed to build.ensure_built: hold the build output back (its tail shows on failure)."""

    @contextmanager
    def building(self, targets: Sequence[str]) -> Iterator[TextIO]:
        """The stream build.ensure_built writes its output to, while it builds `targets`."""
        raise NotImplementedError
        yield  # pragma: no cover

    @contextmanager
    def testing(self, targets: Sequence[LabTarget], variant: str) -> Iterator[ResultCallback]:
        """The callback runner.run calls as each test finishes."""
        raise NotImplementedError
        yield  # pragma: no cover


class StreamConsole(Console):
    """The build's own output to `out` (quiet: only its tail, on failure), and `on_result`
    (e.g. a line per test) called as each test finishes."""

    def __init__(self, out: TextIO, on_result: ResultCallback | None = None, *,
                 quiet: bool = False):
        self.out = out
        self.on_result = on_result
        self.quiet_build = quiet

    @contextmanager
    def building(self, targets: Sequence[str]) -> Iterator[TextIO]:
        yield self.out

    @contextmanager
    def testing(self, targets: Sequence[LabTarget], variant: str) -> Iterator[ResultCallback]:
        yield self.on_result or (lambda _: None)


def test_lines(stream: TextIO, width: int = 80) -> ResultCallback:
    """A line per finished test, at most `width` columns: "  failed    01 Suite.Name (0.3 s)",
    the lab by its number, a test id too long for the line shortened in its middle."""
    def show(test: TestResult) -> None:
        lab = test.lab.split("_", 1)[0]
        took = f" ({test.duration_s:.1f} s)"
        room = max(10, width - 2 - 9 - 1 - len(lab) - 1 - len(took))
        name = test.id if len(test.id) <= room else (
            test.id[:room // 2 - 1] + "…" + test.id[len(test.id) - (room - room // 2):])
        stream.write(f"  {test.status.value:<9} {lab} {name}{took}\n")
        stream.flush()
    return show


class BuildLines(io.TextIOBase):
    """A text stream that hands each complete line written to it to `on_line`, and keeps
    them all (`lines`) for the failure message."""

    def __init__(self, on_line: Callable[[str], None]):
        super().__init__()
        self.on_line = on_line
        self.lines: list[str] = []
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._partial += text
        *complete, self._partial = self._partial.split("\n")
        for line in complete:
            self.lines.append(line)
            self.on_line(line)
        return len(text)

    def failure_text(self) -> str:
        """What a student needs from a failed build: from ninja's first "FAILED:" line on,
        else the output of the last command run ("$ ..." lines start one)."""
        lines = self.lines + ([self._partial] if self._partial else [])
        start = next((i for i, line in enumerate(lines) if line.startswith("FAILED: ")), None)
        if start is None:
            commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
            start = commands[-1] + 1 if commands else 0
        shown = lines[start:]
        if len(shown) > FAILURE_LINES_MAX:
            shown = [f"... ({len(shown) - FAILURE_LINES_MAX} lines above left out)",
                     *shown[-FAILURE_LINES_MAX:]]
        return "".join(f"{line}\n" for line in shown)


class _BuildStatus:
    """What the build's output says about where it is: configuring or building, step N of M."""

    def __init__(self, targets: Sequence[str]):
        self.what = targets[0] if len(targets) == 1 else f"{len(targets)} graders"
        self.phase = ""
        self.done: int | None = None
        self.total: int | None = None
        self.item = ""
        self.up_to_date = False

    def feed(self, line: str) -> bool:
        """Takes one line of output; True when the phase changed (configure -> build)."""
        if line.startswith("$ cmake "):
            phase = "build" if " --build " in line else "configure"
            changed = phase != self.phase
            self.phase, self.done, self.total = phase, None, None
            return changed
        ninja, make = _NINJA_STATUS.match(line), _MAKE_STATUS.match(line)
        if ninja:
            self.done, self.total = int(ninja.group(1)), int(ninja.group(2))
            self.item = _item(ninja.group(3))
        elif make:  # "[ 45%] Building ..." from Unix Makefiles
            self.done, self.total = int(make.group(1)), 100
            self.item = _item(make.group(2))
        elif line.strip() == "ninja: no work to do.":
            self.up_to_date = True
        return False

    @property
    def description(self) -> str:
        if self.phase == "configure":
            return "Configuring the build (first time only)"
        return f"Building {self.what}"


def _item(text: str) -> str:
    """ "Building CUDA object grader/.../indexing.cu.o" -> "indexing.cu"."""
    last = text.split()[-1] if text.split() else ""
    name = Path(last).name
    return name[:-2] if name.endswith(".o") else name


class _LabCounts:
    """Tests done per lab, against the totals the lab binaries list (None: unknown)."""

    def __init__(self, targets: Sequence[LabTarget], variant: str):
        self.totals = {t.lab.id: _count_tests(t, variant) for t in targets}
        self.done = dict.fromkeys(self.totals, 0)
        self.started = time.monotonic()

    def add(self, test: TestResult) -> bool:
        """Counts `test`; True when its lab has no test left to run."""
        self.done[test.lab] = self.done.get(test.lab, 0) + 1
        return self.done[test.lab] == self.totals.get(test.lab)

    def lap(self) -> float:
        """Seconds since the previous lab finished (or testing began)."""
        now = time.monotonic()
        seconds, self.started = now - self.started, now
        return seconds


def _count_tests(target: LabTarget, variant: str) -> int | None:
    """How many tests the lab binary lists; None when it cannot say (the runner then reports
    the lab as not graded)."""
    if not target.binary.is_file():
        return None
    steps = [step.id for step in target.lab.steps]
    try:
        return len(protocol.list_tests(target.binary, target.lab.id, variant, steps,
                                       target.judge_args(variant)))
    except protocol.ProtocolError:
        return None


class PlainConsole(Console):
    """A few plain lines: no bars, no per-test flood."""

    def __init__(self, out: TextIO):
        self.out = out

    def _say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    @contextmanager
    def building(self, targets: Sequence[str]) -> Iterator[TextIO]:
        status = _BuildStatus(targets)
        started = time.monotonic()

        def on_line(line: str) -> None:
            if status.feed(line):
                self._say(f"{status.description} ...")

        stream = BuildLines(on_line)
        try:
            yield stream
        except BaseException:
            self.out.write(stream.failure_text())
            raise
        seconds = time.monotonic() - started
        if status.up_to_date:
            self._say(f"Built {status.what}: up to date")
        else:
            self._say(f"Built {status.what} in {seconds:.0f} s")

    @contextmanager
    def testing(self, targets: Sequence[LabTarget], variant: str) -> Iterator[ResultCallback]:
        counts = _LabCounts(targets, variant)
        reported: set[str] = set()

        def show(test: TestResult) -> None:
            if counts.add(test):
                reported.add(test.lab)
                self._say(f"Tested {test.lab}: {counts.done[test.lab]} tests in "
                          f"{counts.lap():.1f} s")

        yield show
        for lab, done in counts.done.items():  # labs whose total was unknown
            if done and lab not in reported:
                self._say(f"Tested {lab}: {done} tests in {counts.lap():.1f} s")


class RichConsole(Console):
    """rich progress bars, cleared when done, so the result is what stays on the screen."""

    def __init__(self, out: TextIO, rich: Any):
        self.out = out
        self.rich = rich
        self.terminal = rich.console.Console(file=out, highlight=False)

    def _progress(self, *columns: Any) -> Any:
        p = self.rich.progress
        return p.Progress(p.SpinnerColumn(), p.TextColumn("{task.description}"), p.BarColumn(),
                          p.MofNCompleteColumn(), p.TimeElapsedColumn(), *columns,
                          console=self.terminal, transient=True)

    @contextmanager
    def building(self, targets: Sequence[str]) -> Iterator[TextIO]:
        status = _BuildStatus(targets)
        progress = self._progress(self.rich.progress.TextColumn("{task.fields[item]}"))
        task = progress.add_task(status.description, total=None, item="")

        def on_line(line: str) -> None:
            status.feed(line)
            progress.update(task, description=status.description, total=status.total,
                            completed=status.done or 0, item=status.item)

        stream = BuildLines(on_line)
        started = time.monotonic()
        try:
            with progress:
                yield stream
        except BaseException:
            self.out.write(stream.failure_text())
            raise
        seconds = time.monotonic() - started
        if not status.up_to_date:
            self.out.write(f"Built {status.what} in {seconds:.0f} s\n")

    @contextmanager
    def testing(self, targets: Sequence[LabTarget], variant: str) -> Iterator[ResultCallback]:
        counts = _LabCounts(targets, variant)
        progress = self._progress()
        tasks = {lab: progress.add_task(f"Testing {lab}", total=total)
                 for lab, total in counts.totals.items()}

        def show(test: TestResult) -> None:
            counts.add(test)
            if test.lab in tasks:
                progress.update(tasks[test.lab], completed=counts.done[test.lab])

        with progress:
            yield show
