"""``kit.py progress``: every lab and step with its state at its last grade, a progress bar, and
the step to do next.

The states come from the last grade of each lab, never from a new one (no build, no GPU work):
`kit.py grade` and `kit.py watch` call save() after grading, which writes each lab's result
(model.LabResult.to_dict(), with the run's seed, time, variant and whether a GPU was there) to
``<build-dir>/progress/<lab>.json``. Only grades of the student's own files in labs/ count: a
grade of the reference solution or of a --submission folder is not saved.

A step is

  done            every test of the step passed
  failing         some test failed, crashed or timed out
  not run         no test failed but some did not run: "not run: no CUDA device" on a machine
                  without a GPU (never done), or a performance step whose correctness steps
                  did not all pass
  not graded yet  no grade of the lab recorded

and a lab whose student files were saved after its last grade is marked "changed since last
grade" (its states are those of the older code).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from . import reports
from .context import TERMINAL_WIDTH, default_build_dir
from .manifest import Lab, Manifest, Step
from .model import LabResult, RunResult, Status, TestResult

RECORD_FORMAT = 1
PROGRESS_DIR = "progress"
"""Folder of the build directory that holds one record per lab."""
BAR_WIDTH = 30
KIT = "python3 grader/kit.py"


# ---------------------------------------------------------------- the records `grade` keeps

def save(run: RunResult, build_dir: Path) -> list[Path]:
    """Records each lab of a student grade of labs/ as the lab's last grade; returns the files
    written. A reference or --submission run is not the student's progress: nothing is written.
    A build directory that cannot be written is not an error (progress is a convenience)."""
    if run.variant != "student" or run.submission is not None:
        return []
    folder = build_dir / PROGRESS_DIR
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for lab in run.labs:
            record = {"format": RECORD_FORMAT, "seed": run.seed, "graded_at": run.started_at,
                      "variant": run.variant, "gpu_available": run.gpu_available,
                      "lab": lab.to_dict()}
            path = folder / f"{lab.lab}.json"
            reports.write_atomic(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
            written.append(path)
    except OSError:
        pass
    return written


@dataclass(frozen=True)
class Record:
    """One lab's last grade, as save() wrote it."""

    lab: LabResult
    seed: int
    graded_at: datetime
    gpu_available: bool

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        return cls(LabResult.from_dict(data["lab"]), int(data["seed"]),
                   datetime.fromisoformat(data["graded_at"]), bool(data["gpu_available"]))


def load_record(build_dir: Path, lab: Lab) -> Record | None:
    """The lab's last grade, or None when there is none (or it cannot be read)."""
    try:
        data = json.loads((build_dir / PROGRESS_DIR / f"{lab.id}.json").read_text(encoding="utf-8"))
        record = Record.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if record.lab.lab == lab.id else None


# ---------------------------------------------------------------- states

class State(Enum):
    DONE = "done"
    FAILING = "failing"
    NOT_RUN = "not run"
    NOT_GRADED = "not graded yet"


@dataclass(frozen=True)
class StepState:
    step: Step
    state: State
    detail: str = ""
    """Why, in a few words: "2 of 7 tests failing", "not run: no CUDA device"."""
    lacks_device: bool = False
    """Not run only because the machine had no GPU: this machine cannot finish the step."""


@dataclass(frozen=True)
class LabProgress:
    lab: Lab
    record: Record | None
    steps: list[StepState]
    changed: bool
    """A student file of the lab was saved after the recorded grade."""

    @property
    def done(self) -> int:
        return sum(s.state is State.DONE for s in self.steps)


def step_states(lab: Lab, record: Record | None) -> list[StepState]:
    if record is None or record.lab.error is not None:
        return [StepState(step, State.NOT_GRADED) for step in lab.steps]
    states = []
    for step in lab.steps:
        tests = [t for t in record.lab.tests if t.step == step.id]
        problems = [t for t in tests if t.status.is_problem]
        not_run = [t for t in tests if t.status is Status.NOT_RUN]
        if not tests:
            states.append(StepState(step, State.NOT_GRADED, "no test of this step ran"))
        elif problems:
            detail = f"{len(problems)} of {len(tests)} tests failing"
            if not_run:
                detail += f", {len(not_run)} not run: {_reason(not_run)}"
            states.append(StepState(step, State.FAILING, detail))
        elif not_run:
            no_device = all(t.lacked_device(record.gpu_available) for t in not_run)
            passed = len(tests) - len(not_run)
            detail = f"not run: {_reason(not_run)}" + (f" ({passed} of {len(tests)} tests passed)"
                                                       if passed else "")
            states.append(StepState(step, State.NOT_RUN, detail, lacks_device=no_device))
        else:
            states.append(StepState(step, State.DONE))
    return states


def _reason(not_run: list[TestResult]) -> str:
    return next((t.reason for t in not_run if t.reason), "skipped")


def student_files_changed(root: Path, lab: Lab, record: Record) -> bool:
    """Whether a student file was saved after the grade started. The recorded time is in whole
    seconds, so a save within the second the grade started counts as graded."""
    graded = record.graded_at.timestamp() + 1
    for name in lab.student_files:
        try:
            if os.stat(root / "labs" / lab.id / name).st_mtime > graded:
                return True
        except OSError:
            return True  # deleted or renamed since: not what was graded
    return False


def load(root: Path, build_dir: Path, manifest: Manifest) -> list[LabProgress]:
    result = []
    for lab in manifest.labs:
        record = load_record(build_dir, lab)
        changed = record is not None and student_files_changed(root, lab, record)
        result.append(LabProgress(lab, record, step_states(lab, record), changed))
    return result


def next_step(labs: Sequence[LabProgress]) -> tuple[Lab, StepState] | None:
    """The first step, in lab order then step order, that is not done and that this machine
    can check (a step not run only for lack of a GPU comes last: nothing here can finish it)."""
    waiting_for_gpu = None
    for progress in labs:
        for state in progress.steps:
            if state.state is State.DONE:
                continue
            if not state.lacks_device:
                return progress.lab, state
            waiting_for_gpu = waiting_for_gpu or (progress.lab, state)
    return waiting_for_gpu


def bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """`[#######.......] 12/33 steps`"""
    filled = round(width * done / total) if total else 0
    if done < total:
        filled = min(filled, width - 1)  # full only when everything is done
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} steps"


# ---------------------------------------------------------------- rendering

Segment = tuple[str, str]
"""A piece of a line and its style ("" for none); rich draws the styles, plain text drops them."""

_STYLES = {State.DONE: "green", State.FAILING: "red", State.NOT_RUN: "yellow",
           State.NOT_GRADED: "dim"}


def render(labs: Sequence[LabProgress], width: int = TERMINAL_WIDTH) -> list[list[Segment]]:
    """The whole page; a step's detail goes on a line of its own when it would pass `width`."""
    done = sum(p.done for p in labs)
    total = sum(len(p.steps) for p in labs)
    lines: list[list[Segment]] = [[("Progress ", "bold"), (bar(done, total), "bold")], []]
    for progress in labs:
        lines.extend(_render_lab(progress, width))
        lines.append([])
    lines.extend(_render_next(labs, width))
    return lines


TITLE_COLUMN = 24
"""Where a step's title and its detail start: after the state (16) and the step (5)."""


def _render_lab(progress: LabProgress, width: int) -> list[list[Segment]]:
    lab, record = progress.lab, progress.record
    name = f"{lab.id} · {lab.title}"
    if record is None:
        about = (" — not graded yet", "dim")
    elif record.lab.error is not None:
        about = (f" — could not be graded last time: {record.lab.error}", "red")
    else:
        when = record.graded_at.astimezone().strftime("%Y-%m-%d %H:%M")
        gpu = "" if record.gpu_available else ", no GPU"
        about = (f" — {reports.fraction(record.lab.score, record.lab.max_score)} points, "
                 f"graded {when}{gpu}", "")
    lines = [[(name, "bold"), about]]
    if len(name) + len(about[0]) > width:  # what is said of the lab goes under its name
        lines = [[(name, "bold")]] + [[(line, about[1])] for line in reports.wrap_lines(
            about[0].removeprefix(" — "), width, 2, 2)]
    if progress.changed:
        lines.append([("  changed since last grade: ", "yellow bold"),
                      (f"{KIT} grade {lab.number}", "")])
    for state in progress.steps:
        style = _STYLES[state.state]
        title = reports.wrap_lines(f"{state.step.suffix:<5} {state.step.title}",
                                   width - TITLE_COLUMN + 6, hang=6)
        lines.append([(f"  {state.state.value:<16}", style), (title[0], "")])
        lines += [[(" " * (TITLE_COLUMN - 6) + rest, "")] for rest in title[1:]]
        if state.detail:
            detail = f" — {state.detail}"
            if len(plain(lines[-1:]).rstrip("\n")) + len(detail) <= width:
                lines[-1].append((detail, style))
            else:
                lines += [[(" " * TITLE_COLUMN + rest, style)]
                          for rest in reports.wrap_lines(state.detail, width - TITLE_COLUMN)]
    return lines


def _render_next(labs: Sequence[LabProgress], width: int) -> list[list[Segment]]:
    found = next_step(labs)
    if found is None:
        return [[("Every step of every lab is done.", "green bold")]]
    lab, state = found
    lines: list[list[Segment]] = []
    if state.lacks_device:
        lines += [[(line, "yellow")] for line in reports.wrap_lines(
            "Every step this machine can check is done; the rest need a CUDA device. On a "
            "machine with a GPU, start with:", width)]
    step = reports.wrap_lines(f"Next: lab {lab.id}, step {state.step.suffix}: {state.step.title}",
                              width, hang=6)
    lines.append([("Next: ", "bold"), (step[0].removeprefix("Next: "), "")])
    lines += [[(rest, "")] for rest in step[1:]]
    commands = [(f"{KIT} hint {lab.number} {state.step.suffix}", "a hint for this step"),
                (f"{KIT} watch {lab.number}", "regrade on every save")]
    column = max(len(command) for command, _ in commands) + 3
    lines.extend([(f"  {command:<{column}}", "bold"), (what, "dim")] for command, what in commands)
    return lines


def plain(lines: Sequence[Sequence[Segment]]) -> str:
    return "".join("".join(text for text, _ in line) + "\n" for line in lines)


def write(lines: Sequence[Sequence[Segment]], stream: TextIO) -> None:
    """With rich installed and a colour terminal, in colour; otherwise plain text."""
    if reports.use_colour(stream):
        try:
            from rich.console import Console
            from rich.text import Text
        except ImportError:
            pass
        else:
            console = Console(file=stream, highlight=False, soft_wrap=True)
            for line in lines:
                console.print(Text.assemble(*[(text, style) for text, style in line]))
            return
    stream.write(plain(lines))


# ---------------------------------------------------------------- the command

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "progress", help="your state in every lab and step, and what to do next",
        description=__doc__)
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.set_defaults(handler=_cmd_progress)


def _cmd_progress(args: argparse.Namespace, ctx: Any) -> int:
    build_dir = default_build_dir(ctx, args.build_dir)
    width = shutil.get_terminal_size((80, 24)).columns if reports.use_colour(ctx.stdout) else TERMINAL_WIDTH
    write(render(load(ctx.root, build_dir, ctx.manifest()), width), ctx.stdout)
    return 0
