"""What a student sees after `kit.py grade`: one screen that says where they stand and what to
do next, instead of every test of every step.

For one lab: a header (lab, variant, seed, GPU), a line per step (done / to do / failing /
not run: no CUDA device / not run: no counters), the Score, then the first unfinished step in
detail (how many of its tests fail, the first one or two failures with the start of their
messages) and "Next:" with commands that work when pasted from the repository root. For several labs: a line per lab and
the detail of the first unfinished one. Without a GPU it says so once and never counts the GPU
tests as passed; likewise the counter tests where nothing can read the GPU's counters.

Everything fits in `width` columns (long message lines are cut with "…") and in about one
screen; `kit.py grade --verbose` and the report files have everything else
(reports.render_terminal is the full table).
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import reports
from .manifest import Manifest, ManifestError, load_manifest
from .model import LabResult, RunResult, Status, TestResult, step_suffix

SCREEN_LINES = 20
"""What the view aims at: with the command line, the "Reports:" line and the prompt, one 24-line
terminal. The step table and the commands always show; failure messages get the lines left."""

MAX_MESSAGE_LINES = 4
"""Message lines shown under one failing test at most."""

KIT = "python3 grader/kit.py"
"""How every command shown starts: it works pasted from the repository root."""

DONE, TO_DO, FAILING, NO_DEVICE = "done", "to do", "failing", "not run: no CUDA device"
NO_COUNTERS = "not run: no counters"
_MARKS = {DONE: "✓", TO_DO: "○", FAILING: "✗", NO_DEVICE: "–", NO_COUNTERS: "–"}
_COLOURS = {DONE: "32", TO_DO: "33", FAILING: "31", NO_DEVICE: "33", NO_COUNTERS: "33"}

NO_GPU_NOTICE = "no CUDA device: GPU steps were not run; run this on a machine with an NVIDIA GPU"
"""Said once when GPU tests could not run (80 columns: one line in a standard terminal)."""
NO_COUNTERS_NOTICE = "no hardware counters: counter tests not run (see docs/students.md)"
"""Said once when counter tests could not run on a machine with a GPU (no ncu, no permission)."""


@dataclass(frozen=True)
class StepView:
    """One step of one lab as the student sees it."""

    id: str
    title: str
    tests: tuple[TestResult, ...]
    state: str

    @property
    def label(self) -> str:
        return reports.step_label(self.id)

    @property
    def suffix(self) -> str:
        return step_suffix(self.id)

    @property
    def points(self) -> str:
        return reports.fraction(sum(t.score for t in self.tests), sum(t.points for t in self.tests))

    @property
    def failing(self) -> list[TestResult]:
        return [t for t in self.tests if t.status.is_problem]


def step_views(lab: LabResult, gpu_available: bool) -> list[StepView]:
    """The lab's steps that have tests, in manifest order, each with its state."""
    views = []
    for step, title in lab.steps.items():
        tests = tuple(t for t in lab.tests if t.step == step)
        if tests:
            views.append(StepView(step, title, tests, step_state(tests, gpu_available)))
    return views


def step_state(tests: Sequence[TestResult], gpu_available: bool) -> str:
    """done: every test passed; failing: one failed, crashed or timed out; not run: no CUDA
    device: the rest passed but some could not run without a GPU (not run: no counters: only
    counter tests, where nothing could read the GPU's counters); to do: waiting on something
    else (a perf test behind the correctness gate)."""
    if all(t.status is Status.PASSED for t in tests):
        return DONE
    if any(t.status.is_problem for t in tests):
        return FAILING
    if all(t.status is Status.PASSED or t.lacked_device(gpu_available) for t in tests):
        return NO_COUNTERS if all(t.status is Status.PASSED or t.lacked_counters()
                                  for t in tests) else NO_DEVICE
    return TO_DO


def first_unfinished(steps: Sequence[StepView]) -> StepView | None:
    """The step to work on: the first failing or to-do one. A step that only lacks a GPU is no
    work for the student, so without a GPU this is the first step whose host tests fail."""
    return next((s for s in steps if s.state in (FAILING, TO_DO)), None)


MAX_WIDTH = 120
"""The widest the student view is drawn: `kit.py grade` and `watch` take the terminal's width up
to this (80 when the output is no terminal)."""


def render(run: RunResult, *, width: int = 80, colour: bool = False, verbose: bool = False,
           manifest: Manifest | None = None) -> str:
    """The student's screen for `run`, at most `width` columns wide.

    verbose: the full report (every test, every message) instead. manifest: the labs in order,
    for "next lab" once everything is done (default: the kit's own grader/labs.json).
    """
    if verbose:
        return reports.render_terminal(run, colour, width)
    return "\n".join(_View(run, max(width, 10), colour, manifest).lines()) + "\n"


class _View:
    def __init__(self, run: RunResult, width: int, colour: bool, manifest: Manifest | None):
        self.run = run
        self.width = width
        self.colour = colour
        self.manifest = manifest
        self.gpu = run.gpu_available

    # ------------------------------------------------------------ layout

    def lines(self) -> list[str]:
        if len(self.run.labs) == 1:
            return self._one_lab(self.run.labs[0])
        return self._many_labs()

    def _one_lab(self, lab: LabResult) -> list[str]:
        head = [self._header(f"{lab.lab} · {lab.title}")]
        if lab.error is not None:
            return head + [self._paint(cut_middle(f"Not graded: {self._error(lab)}", self.width),
                                       "31"),
                           *self._wrap("Next: build it if needed and grade it, with every "
                                       "message:"),
                           self._cut(f"  {self._grade_command(lab)} --verbose")]
        steps = step_views(lab, self.gpu)
        head += self._step_table(steps)
        head.append(self._paint(self._score_line(lab), "1"))
        head += self._device_notice([lab])
        return head + self._focus(lab, steps, len(head), show_lab=False)

    def _many_labs(self) -> list[str]:
        head = [self._header("kit grade")]
        head += self._lab_table()
        head.append(self._paint(self._total_line(), "1"))
        head += self._device_notice(self.run.labs)
        for lab in self.run.labs:
            if lab.error is None:
                steps = step_views(lab, self.gpu)
                if first_unfinished(steps) is not None:
                    return head + self._focus(lab, steps, len(head), show_lab=True)
        return head + self._all_done_or_no_gpu(self.run.labs)

    def _focus(self, lab: LabResult, steps: Sequence[StepView], used: int,
               show_lab: bool) -> list[str]:
        """The first unfinished step in detail, then Next; or what to do when none is."""
        step = first_unfinished(steps)
        if step is None:
            return self._all_done_or_no_gpu([lab])
        out = ["", self._cut(self._step_heading(lab, step, show_lab))]
        next_lines = self._next_lines(lab, step)
        room = SCREEN_LINES - used - len(out) - len(next_lines)
        out += self._failures(step, room) if step.failing else self._waiting(step)
        return out + next_lines

    # ------------------------------------------------------------ pieces

    def _header(self, what: str) -> str:
        device = self.run.device.get("name", "GPU") if self.gpu else "no GPU"
        source = f"submission {self.run.submission}" if self.run.submission else self.run.variant
        line = f"{what} · {source} · seed {self.run.seed} · {device}"
        return self._paint(self._cut(line), "1")

    def _step_table(self, steps: Sequence[StepView]) -> list[str]:
        label_w = max((len(s.label) for s in steps), default=0)
        points_w = max((len(s.points) for s in steps), default=0)
        state_w = max((len(s.state) for s in steps), default=0)
        title_w = max(8, self.width - (2 + 2 + label_w + 2) - (2 + points_w) - (2 + state_w))
        rows = []
        for s in steps:
            middle = (f" {s.label:<{label_w}}  {reports._truncate(s.title, title_w):<{title_w}}"
                      f"  {s.points:>{points_w}}  ")
            rows.append(self._row(s.state, middle, s.state))
        return rows

    def _lab_table(self) -> list[str]:
        labs = self.run.labs
        id_w = max(len(lab.lab) for lab in labs)
        points = {lab.lab: reports.fraction(lab.score, lab.max_score) for lab in labs}
        points_w = max(len(p) for p in points.values())
        statuses = {lab.lab: self._lab_status(lab) for lab in labs if lab.error is None}
        status_w = max((len(status) for _, status in statuses.values()), default=0)
        title_w = max(8, self.width - (2 + 2 + id_w + 2) - (2 + points_w) - (2 + status_w))
        rows = []
        for lab in labs:
            if lab.error is not None:
                line = cut_middle(f"  {_MARKS[FAILING]} {lab.lab:<{id_w}}  not graded: "
                                  f"{self._error(lab)}", self.width)
                rows.append(self._marked(FAILING, line[4:]))
                continue
            state, status = statuses[lab.lab]
            middle = (f" {lab.lab:<{id_w}}  {reports._truncate(lab.title, title_w):<{title_w}}"
                      f"  {points[lab.lab]:>{points_w}}  ")
            rows.append(self._row(state, middle, status))
        return rows

    def _lab_status(self, lab: LabResult) -> tuple[str, str]:
        """(state, what the lab table says): its first unfinished step, done, or no GPU."""
        steps = step_views(lab, self.gpu)
        step = first_unfinished(steps)
        if step is not None:
            return step.state, f"{step.label} {step.state}"
        if all(s.state == DONE for s in steps):
            return DONE, DONE
        if all(s.state in (DONE, NO_COUNTERS) for s in steps):
            return NO_COUNTERS, "counter tests not run"
        return NO_DEVICE, "GPU steps not run"

    def _row(self, state: str, middle: str, status: str) -> str:
        """ "  <mark><middle><status>", cut to the width before the colours go on."""
        plain = self._cut(f"  {_MARKS[state]}{middle}{status}")
        mark, rest = plain[2], plain[3:]
        if not self.colour:
            return plain
        if rest.endswith(status):
            rest = rest[: len(rest) - len(status)] + self._paint(status, _COLOURS[state])
        return "  " + self._paint(mark, _COLOURS[state]) + rest

    def _score_line(self, lab: LabResult) -> str:
        line = reports.lab_score_line(lab)
        needs = [(sum(t.points for t in lab.tests if self._lacked_gpu(t)), "a GPU"),
                 (sum(t.points for t in lab.tests if t.lacked_counters()), "hardware counters")]
        missing = [f"{reports.fmt_points(points)} points need {what}" for points, what in needs
                   if points]
        if missing:
            line += f" ({', '.join(missing)})"
        return self._cut(line)

    def _lacked_gpu(self, test: TestResult) -> bool:
        """Not run for lack of a GPU (a counter test that lacked only counters did not)."""
        return test.lacked_device(self.gpu) and not test.lacked_counters()

    def _total_line(self) -> str:
        run = self.run
        line = f"Total: {reports.fraction(run.score, run.max_score)} over {len(run.labs)} labs"
        if run.errors:
            line += f", not graded: {', '.join(lab.lab for lab in run.errors)}"
        return self._cut(line)

    def _device_notice(self, labs: Sequence[LabResult]) -> list[str]:
        """Once, when some GPU test could not run for lack of a device, or (with a GPU) a
        counter test for lack of counters."""
        tests = [t for lab in labs for t in lab.tests]
        if any(self._lacked_gpu(t) for t in tests):
            return self._wrap(NO_GPU_NOTICE)
        if any(t.lacked_counters() for t in tests):
            return self._wrap(NO_COUNTERS_NOTICE)
        return []

    def _step_heading(self, lab: LabResult, step: StepView, show_lab: bool) -> str:
        where = f"{lab.lab} · " if show_lab else ""
        total = len(step.tests)
        if step.failing:
            what = f"{len(step.failing)} of {total} tests fail"
        else:
            what = "waiting"
        lacking = sum(1 for t in step.tests if self._lacked_gpu(t))
        if lacking:
            what += f", {lacking} need a GPU"
        counting = sum(1 for t in step.tests if t.lacked_counters())
        if counting:
            what += f", {counting} need hardware counters"
        return f"{where}{step.label}: {what} · {step.title}"

    def _failures(self, step: StepView, room: int) -> list[str]:
        """The first one or two failing tests: title, then the start of the message, in the
        `room` lines left; the first failure always shows, with at least one message line."""
        failing = step.failing[:2]
        if len(failing) == 2 and room < 2 * 3:  # two failures only with two message lines each
            failing = failing[:1]
        budget = max(len(failing), room - len(failing))  # message lines, all failures together
        out: list[str] = []
        for i, test in enumerate(failing):
            share = -(-budget // (len(failing) - i))  # an even split of what is left, rounded up
            shown = message_lines(test)[: max(1, min(MAX_MESSAGE_LINES, share))]
            budget -= len(shown)
            out.append(self._marked(FAILING, reports._truncate(test.title, self.width - 4)))
            out += [self._cut(f"      {line}") for line in shown]
        return out

    def _waiting(self, step: StepView) -> list[str]:
        """A step with nothing failing that is still to do: why its tests did not run."""
        reasons = dict.fromkeys(t.reason for t in step.tests
                                if t.status is Status.NOT_RUN and not t.lacked_device(self.gpu))
        return [self._cut(f"  not run: {reason}") for reason in reasons][:2]

    def _next_lines(self, lab: LabResult, step: StepView) -> list[str]:
        number = lab.lab.split("_", 1)[0]
        section = f"Step {step.suffix}" if step.suffix.isdigit() else "Performance step"
        return [
            self._cut(f'Next: read "{section}" in docs/labs/{lab.lab}.md; for a hint:'),
            self._cut(f"  {KIT} hint {number} {step.suffix}"),
            self._cut(f"Same inputs again (seed {self.run.seed}), or every test and message:"),
            self._cut(f"  KIT_SEED={self.run.seed} {self._grade_command(lab)}"),
            self._cut(f"  {self._grade_command(lab)} --verbose"),
        ]

    def _all_done_or_no_gpu(self, labs: Sequence[LabResult]) -> list[str]:
        """Nothing failing: what could not be graded, what the GPU steps need, or
        congratulations and the next lab."""
        graded = [lab for lab in labs if lab.error is None]
        if len(graded) < len(labs):
            return ["", *self._wrap("Every lab that could be graded passed; why the others "
                                    "could not:"),
                    self._cut(f"  {self._grade_command(*labs)} --verbose")]
        if not any(self._lacked_gpu(t) for lab in graded for t in lab.tests) and \
                any(t.lacked_counters() for lab in graded for t in lab.tests):
            return ["", *self._wrap("Every test that could run here passed. The counter tests "
                                    "need Nsight Compute and permission to read the GPU's "
                                    "counters (docs/students.md). Every test and message:"),
                    self._cut(f"  {self._grade_command(*labs)} --verbose")]
        if any(t.lacked_device(self.gpu) for lab in graded for t in lab.tests):
            return ["", *self._wrap("Every test that could run here passed. The GPU steps need "
                                    "a machine with an NVIDIA GPU. Every test and message:"),
                    self._cut(f"  {self._grade_command(*labs)} --verbose")]
        names = ", ".join(lab.lab for lab in graded)
        out = ["", *self._wrap(f"All steps of {names} done. Well done!")]
        following = self._next_lab(graded[-1].lab)
        if following is not None:
            number, lab_id, title = following
            return out + [self._cut(f"Next lab: {lab_id} · {title} (docs/labs/{lab_id}.md):"),
                          self._cut(f"  {KIT} grade {number}{self._flags()}")]
        suffix = "_reference" if self.run.variant == "reference" else ""
        return out + [*self._wrap("That was the last lab. Benchmark your kernels, for example:"),
                      self._cut(f"  build/bin/bench_{graded[-1].lab}{suffix}")]

    def _next_lab(self, after: str) -> tuple[str, str, str] | None:
        manifest = self.manifest or _kit_manifest()
        if manifest is None:
            return None
        ids = manifest.lab_ids()
        if after not in ids:
            return None
        later = manifest.labs[ids.index(after) + 1:]
        return (later[0].number, later[0].id, later[0].title) if later else None

    # ------------------------------------------------------------ helpers

    def _grade_command(self, *labs: LabResult) -> str:
        numbers = " ".join(lab.lab.split("_", 1)[0] for lab in labs)
        return f"{KIT} grade {numbers}{self._flags()}"

    def _flags(self) -> str:
        if self.run.submission:
            return f" --submission {shlex.quote(self.run.submission)}"
        return " --variant reference" if self.run.variant == "reference" else ""

    def _wrap(self, text: str) -> list[str]:
        return textwrap.wrap(text, self.width, break_on_hyphens=False) or [""]

    def _error(self, lab: LabResult) -> str:
        """Why the lab could not be graded, its paths shortened to file names when the whole
        line would not fit (the end says what went wrong: "... was killed by SIGSEGV")."""
        error = lab.error or ""
        return error if len(error) + 30 <= self.width else _DIRECTORIES.sub("", error)

    def _marked(self, state: str, text: str) -> str:
        """ "  <mark> <text>" cut to the width, then the mark coloured."""
        plain = self._cut(f"  {_MARKS[state]} {text}")
        return "  " + self._paint(plain[2], _COLOURS[state]) + plain[3:]

    def _cut(self, line: str) -> str:
        """`line` (no colours yet) cut to the width, "…" marking the cut."""
        return cut(line, self.width)

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text


def cut(line: str, width: int) -> str:
    """One line of at most `width` characters, "…" marking a cut."""
    line = line.rstrip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def cut_middle(line: str, width: int) -> str:
    """Like cut(), but keeps the end too: an error's last words say what went wrong."""
    line = line.rstrip()
    if len(line) <= width:
        return line
    head = width // 2
    return line[:head].rstrip() + "…" + line[len(line) - (width - head - 1):].lstrip()


# ---------------------------------------------------------------- failure messages

_DIRECTORIES = re.compile(r"(?<![\w.~])/(?:[^\s/]+/)+")
"""The directories of an absolute path: "/work/build/bin/grade_01" -> "grade_01"."""
_LOCATION = re.compile(r"^(\S+\.(cu|cuh|cpp|cc|cxx|c|h|hpp):\d+|unknown file)(: (Failure|error))?$")
_NOISE = re.compile(r"^(Failure|Failed|seed \d+ \(rerun with KIT_SEED=\d+\))$")
_LITERAL = re.compile(r"^-?[0-9][0-9.e+-]*[uUlLfF]*$")


def message_lines(test: TestResult) -> list[str]:
    """The start of what a failing test told the student, compacted: GoogleTest's five-line
    "Expected equality of these values" becomes one line ("expected 4, got 0: f(1000, 256)"),
    and file:line locations, blank lines and the seed line (the view shows the seed) are left
    out."""
    lines = []
    if test.reason:
        lines.append(reports.describe(test))
    lines += _compact(test.output.splitlines())
    return lines or [reports.describe(test)]


def _compact(raw: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(raw):
        line = raw[i].strip()
        i += 1
        if not line or _LOCATION.match(line) or _NOISE.match(line):
            continue
        if line == "Expected equality of these values:":
            sides, i = _equality_sides(raw, i)
            if len(sides) == 2:
                out.append(_equality(*sides))
                continue
        if line.startswith("Value of: ") and i + 1 < len(raw):
            actual, expected = raw[i].strip(), raw[i + 1].strip()
            if actual.startswith("Actual: ") and expected.startswith("Expected: "):
                out.append(f"expected {expected[len('Expected: '):]}, "
                           f"got {actual[len('Actual: '):]}: {line[len('Value of: '):]}")
                i += 2
                continue
        out.append(line)
    return out


def _equality_sides(raw: list[str], i: int) -> tuple[list[tuple[str, str, bool]], int]:
    """The two sides after "Expected equality of these values:", each (expression, value,
    whether the expression is a literal: "4u", or a number GoogleTest shows without "Which is")."""
    sides = []
    while len(sides) < 2 and i < len(raw) and raw[i].startswith("  ") \
            and not raw[i].startswith("    "):
        expression = raw[i].strip()
        i += 1
        if i < len(raw) and raw[i].strip().startswith("Which is: "):
            value = raw[i].strip()[len("Which is: "):]
            i += 1
            literal = bool(_LITERAL.match(expression)) and expression.rstrip("uUlLfF") == value
            sides.append((expression, value, literal))
        else:
            sides.append((expression, expression, bool(_LITERAL.match(expression))))
    return sides, i


def _equality(a: tuple[str, str, bool], b: tuple[str, str, bool]) -> str:
    """One line, the values first so a cut keeps them: "expected 4, got 0: f(1000, 256)" when
    one side is a literal (that is the expected value), else "0 ≠ 7: f(n) vs want"."""
    if a[2] != b[2]:
        (expression, got, _), (_, expected, _) = (b, a) if a[2] else (a, b)
        return f"expected {expected}, got {got}: {expression}"
    return f"{a[1]} ≠ {b[1]}: {a[0]} vs {b[0]}"


def _kit_manifest() -> Manifest | None:
    try:
        return load_manifest(Path(__file__).resolve().parents[1] / "labs.json")
    except ManifestError:
        return None
