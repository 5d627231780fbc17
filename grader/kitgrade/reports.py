"""Every report is rendered from one RunResult: terminal table, JUnit XML, Gradescope
results.json, Markdown job summary and kit-results.json (the RunResult itself).

The wording of statuses, scores and measurements lives in the shared helpers at the top,
so the formats cannot drift apart. Files are written atomically (temp file + os.replace)
because CI systems and Gradescope may read them while or right after the run ends.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TextIO

from . import counters, wrong_maps
from .context import TERMINAL_WIDTH
from .model import (NO_DEVICE_REASON, step_suffix, LabResult, RunResult, Status, TestResult,
                    is_correctness)

# ---------------------------------------------------------------- shared wording

def fmt_points(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def fraction(score: float, max_score: float) -> str:
    return f"{fmt_points(score)}/{fmt_points(max_score)}"


def describe(test: TestResult) -> str:
    """One line: "passed", "failed", "crashed: SIGSEGV", "not run: no CUDA device"..."""
    if test.status in (Status.CRASHED, Status.TIMED_OUT) and test.reason:
        return test.reason  # already starts with the status ("crashed: ...", "timed out after ...")
    return f"{test.status.value}: {test.reason}" if test.reason else test.status.value


def measurement_text(test: TestResult) -> str:
    """Perf numbers worth a glance: "ratio 0.91 (threshold 0.60), 2710 GB/s vs ceiling 2980 GB/s".

    Rates come as student_rate/ceiling_rate with their unit ("4275.5 GB/s"), or as bare
    student_gbps/ceiling_gbps numbers.
    """
    m = test.measurements
    parts = []
    if "ratio" in m:
        section = m.get("threshold_section", "default")
        bar = f"threshold {m['threshold']}" + ("" if section == "default" else f", [{section}]")
        parts.append(f"ratio {m['ratio']}" + (f" ({bar})" if "threshold" in m else ""))
    rates = [m.get(f"{who}_rate") or (f"{m[f'{who}_gbps']} GB/s" if f"{who}_gbps" in m else None)
             for who in ("student", "ceiling")]
    if rates[0]:
        parts.append(rates[0] + (f" vs ceiling {rates[1]}" if rates[1] else ""))
    # A counter test's readings (kitgrade.counters): the worst launch's, and the bar.
    for name, value in m.items():
        if name.startswith(counters.READING_PREFIX):
            key = name[len(counters.READING_PREFIX):]
            counter = counters.counter_of(key)
            words = counter.words if counter else key
            bar = m.get(counters.BAR_PREFIX + key)
            parts.append(f"{value} {words}" + (f" (at most {bar})" if bar else ""))
    return ", ".join(parts)


def step_label(step_id: str) -> str:
    """ "indexing.1" -> "Step 1", "indexing.perf" -> "Step perf"."""
    return f"Step {step_suffix(step_id)}"


def lab_score_line(lab: LabResult) -> str:
    if lab.error is not None:
        return f"Score: not graded ({lab.error})"
    return f"Score: {fraction(lab.score, lab.max_score)}"


def total_line(run: RunResult) -> str:
    line = f"Total: {fraction(run.score, run.max_score)} over {len(run.labs)} lab(s)"
    if run.errors:
        line += f" — INCOMPLETE, not graded: {', '.join(lab.lab for lab in run.errors)}"
    return line


def device_text(run: RunResult) -> str:
    d = run.device
    if d.get("available"):
        return f"GPU {d.get('name', '?')} (cc {d.get('cc', '?')})"
    reason = str(d.get("reason", "unknown reason"))
    if reason.startswith(NO_DEVICE_REASON):  # "no CUDA device (no NVIDIA driver found)"
        reason = reason[len(NO_DEVICE_REASON):].strip(" ()")
    return f"no GPU ({reason})" if reason else "no GPU"


def seed_text(seed: int) -> str:
    return f"seed {seed} — reproduce with --seed {seed}"


def run_header(run: RunResult) -> str:
    source = f" · submission {run.submission}" if run.submission else ""
    return f"kit grade · {run.variant}{source} · {seed_text(run.seed)} · {device_text(run)}"


def needs_details(test: TestResult) -> bool:
    """Tests whose reason/output/measurements deserve space below the table."""
    return test.status is not Status.PASSED or bool(measurement_text(test))


def detail_text(test: TestResult) -> str:
    """Status line plus measurements and output, as shown to the student."""
    head = describe(test)
    if measurement_text(test):
        head += f" · {measurement_text(test)}"
    return f"{head}\n{test.output}" if test.output else head


# ---------------------------------------------------------------- terminal

_COLOURS = {
    Status.PASSED: "32", Status.FAILED: "31", Status.CRASHED: "31",
    Status.TIMED_OUT: "31", Status.NOT_RUN: "33",
}


def use_colour(stream: TextIO) -> bool:
    """Colour only for a real terminal, and never when NO_COLOR is set (no-color.org)."""
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


_MIN_TITLE_WIDTH = 20


def render_terminal(run: RunResult, colour: bool = False, width: int = TERMINAL_WIDTH) -> str:
    """The full report for a terminal or a log: each lab's table of tests (a step by its number,
    the lab being named above it), its steps' points, and every test's details, at most `width`
    columns wide (titles shortened, messages wrapped)."""
    def paint(text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if colour else text

    def wrapped(text: str, indent: int, hang: int, code: str = "") -> list[str]:
        return [paint(line, code) if code else line
                for line in wrap_lines(text, width, indent, hang)]

    lines = wrapped(run_header(run), 0, 2) + [""]
    for lab in run.labs:
        lines += wrapped(f"{lab.lab} · {lab.title} · {lab.variant}", 0, 2, "1")
        for note in lab.notes:
            lines += wrapped(f"Note: {note}", 2, 4)
        if lab.error is None:
            step_w = max([len("STEP")] + [len(step_suffix(t.step)) for t in lab.tests])
            kind_w = max([5] + [len(t.kind) for t in lab.tests])  # "timed"; "counter" is wider
            subtotals = lab.subtotals()
            points_w = max([len("POINTS")] + [len(fraction(t.score, t.points)) for t in lab.tests]
                           + [len(fraction(s.score, s.max_score)) for s in subtotals])
            title_w = max(_MIN_TITLE_WIDTH,
                          width - (2 + step_w + 2 + 2 + kind_w + 2 + 9 + 2 + points_w))
            lines.append(f"  {'STEP':<{step_w}}  {'TEST':<{title_w}}  {'KIND':<{kind_w}}  "
                         f"{'STATUS':<9}  {'POINTS':>{points_w}}")
            for t in lab.tests:
                status = paint(f"{t.status.value:<9}", _COLOURS[t.status])
                lines.append(f"  {step_suffix(t.step):<{step_w}}  "
                             f"{_truncate(t.title, title_w):<{title_w}}  {t.kind:<{kind_w}}  "
                             f"{status}  {fraction(t.score, t.points):>{points_w}}")
            lines.append("  Steps:")
            steps_w = title_w + 2 + kind_w + 2 + 9 - 2
            for sub in subtotals:
                lines.append(f"    {step_suffix(sub.step):<{step_w}}  "
                             f"{_truncate(sub.title, steps_w):<{steps_w}}  "
                             f"{fraction(sub.score, sub.max_score):>{points_w}}")
        lines += wrapped(lab_score_line(lab), 2, 4, "1")
        details = [t for t in lab.tests if needs_details(t)]
        if details:
            lines.append("  Details:")
        # Tests with the very same details are shown once: without a GPU dozens are "not run",
        # and a banned library fails every test of a step with one message.
        groups: dict[str, list[TestResult]] = {}
        for t in details:
            groups.setdefault(detail_text(t) if not measurement_text(t) else t.id, []).append(t)
        for tests in groups.values():
            text = detail_text(tests[0]).splitlines()
            who = tests[0].id if len(tests) == 1 else f"{len(tests)} tests"
            code, head = _COLOURS[tests[0].status], 4 + len(who) + 2
            first = wrap_lines(f"{who}: {text[0]}", width, 4, 8)
            lines.append(first[0][:head] + paint(first[0][head:], code))
            lines += [paint(line, code) for line in first[1:]]
            for line in text[1:]:
                own = len(line) - len(line.lstrip())
                lines += wrap_lines(line.strip(), width, 8 + own, 8 + own + 2) if line.strip() else [""]
        lines.append("")
    lines += wrapped(total_line(run), 0, 2, "1")
    return "\n".join(lines) + "\n"


def wrap_lines(text: str, width: int, indent: int = 0, hang: int = 0) -> list[str]:
    """`text` in lines of at most `width` columns, the first indented by `indent`, the others
    by `hang`; a word longer than a line is broken (a path, a long expression)."""
    return textwrap.wrap(text, width, initial_indent=" " * indent, subsequent_indent=" " * hang,
                         break_on_hyphens=False, drop_whitespace=True) or [" " * indent]


def _truncate(text: str, width: int) -> str:
    """Shortens to width, keeping a trailing "[param]" that tells parameterized tests apart."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    body, bracket, param = text.rpartition(" [")
    if bracket and param.endswith("]") and len(param) + 2 <= width // 2:
        return body[: width - len(param) - 3] + "…" + bracket + param
    return text[: width - 1] + "…"


# ---------------------------------------------------------------- JUnit XML

_XML_INVALID = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """Drops characters XML 1.0 cannot hold (test output may contain NULs or ANSI escapes)."""
    return _XML_INVALID.sub("", text)


_JUNIT_TAGS = {Status.FAILED: "failure", Status.CRASHED: "error", Status.TIMED_OUT: "error",
               Status.NOT_RUN: "skipped"}
_JUNIT_COUNTERS = {"failure": "failures", "error": "errors", "skipped": "skipped"}


def render_junit(run: RunResult) -> str:
    root = ET.Element("testsuites", name="cuda-lab-kit")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for lab in run.labs:
        suite = ET.SubElement(root, "testsuite", name=lab.lab, timestamp=run.started_at)
        _properties(suite, {"title": lab.title, "variant": run.variant, "seed": str(run.seed),
                            "score": fmt_points(lab.score), "max_score": fmt_points(lab.max_score),
                            **({"submission": run.submission} if run.submission else {}),
                            **{f"note.{i}": note for i, note in enumerate(lab.notes, 1)}})
        suite_counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if lab.error is not None:
            case = ET.SubElement(suite, "testcase", classname=lab.lab, name="lab could not be graded")
            ET.SubElement(case, "error", message=xml_safe(lab.error), type="lab error")
            suite_counts["tests"] += 1
            suite_counts["errors"] += 1
        for t in lab.tests:
            suite_counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=lab.lab, name=t.id,
                                 time=f"{t.duration_s:.3f}")
            _properties(case, {"step": t.step, "title": t.title, "kind": t.kind,
                               "points": fmt_points(t.points), "score": fmt_points(t.score),
                               **t.measurements})
            tag = _JUNIT_TAGS.get(t.status)
            if tag == "skipped":
                ET.SubElement(case, tag, message=xml_safe(t.reason))
            elif tag is not None:
                element = ET.SubElement(case, tag, message=xml_safe(describe(t)), type=t.status.value)
                element.text = xml_safe(t.output)
            if tag is not None:
                suite_counts[_JUNIT_COUNTERS[tag]] += 1
        time_s = sum(t.duration_s for t in lab.tests)
        for key, value in suite_counts.items():
            suite.set(key, str(value))
            counts[key] += value
        suite.set("time", f"{time_s:.3f}")
    for key, value in counts.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _properties(parent: ET.Element, values: dict[str, str]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(props, "property", name=xml_safe(name), value=xml_safe(value))


# ---------------------------------------------------------------- Gradescope

def render_gradescope(run: RunResult) -> str:
    """results.json per https://gradescope-autograders.readthedocs.io/en/latest/specs/ ."""
    tests = []
    for lab in run.labs:
        if lab.error is not None:
            tests.append({"name": f"{lab.lab} · could not be graded", "score": 0, "max_score": 0,
                          "status": "failed", "output": lab.error, "visibility": "visible"})
        for t in lab.tests:
            tests.append({
                "name": f"{lab.lab} · {step_label(t.step)} · {t.title}",
                "score": t.score, "max_score": t.points,
                "status": "passed" if t.status is Status.PASSED else "failed",
                "output": detail_text(t), "visibility": t.visibility,
            })
    notes = [f"{lab.lab}: {note}" for lab in run.labs for note in lab.notes]
    summary = "\n".join([run_header(run), *notes, total_line(run)])
    document = {"score": run.score, "max_score": run.max_score, "output": summary,
                "visibility": "visible", "tests": tests}
    board = leaderboard_entries(run)
    if board:
        document["leaderboard"] = board
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def leaderboard_entries(run: RunResult) -> list[dict]:
    """Gradescope's leaderboard field: each perf ratio, higher is better, of a lab whose
    correctness tests all passed (a fast wrong answer does not rank)."""
    board = []
    for lab in run.labs:
        tests = lab.tests
        if lab.error is not None or any(is_correctness(t.kind) and t.status is not Status.PASSED
                                        for t in tests):
            continue
        for t in tests:
            key, ratio = t.measurements.get("threshold_key"), t.measurements.get("ratio")
            if t.kind == "perf" and key and ratio:
                try:
                    board.append({"name": key, "value": round(float(ratio), 3), "order": "desc"})
                except ValueError:
                    continue
    return board


# ---------------------------------------------------------------- PrairieLearn

def render_prairielearn(run: RunResult) -> str:
    """results.json of a PrairieLearn external grader (PrairieLearn's docs/externalGrading.md,
    "Grading results"): `score` in [0, 1], `message`, `output`, and `tests` with name,
    description, points, max_points, message and output. PrairieLearn has no per-test visibility:
    a test whose Gradescope visibility is not "visible" (a hidden test) shows its points under a
    neutral name, without its title or output. A lab that could not be graded (a file missing, a
    build failure) makes the submission not gradable: no score, no attempt used, the reasons in
    `format_errors`."""
    tests = []
    for lab in run.labs:
        for index, t in enumerate(lab.tests, start=1):
            visible = t.visibility == "visible"
            tests.append({
                "name": f"{lab.lab} {t.step}" + ("" if visible else f" hidden test {index}"),
                "description": t.title if visible else "a hidden test",
                "points": t.score, "max_points": t.points,
                "message": describe(t) if visible else
                ("passed" if t.status is Status.PASSED else "failed"),
                "output": detail_text(t) if visible else "",
            })
    errors = [f"{lab.lab}: {lab.error}" for lab in run.labs if lab.error is not None]
    notes = [f"{lab.lab}: {note}" for lab in run.labs for note in lab.notes]
    document: dict = {"gradable": not errors, "message": total_line(run),
                      "output": "\n".join([run_header(run), *notes, total_line(run)]),
                      "tests": tests}
    if errors:
        document["format_errors"] = errors
    else:
        document["score"] = run.score / run.max_score if run.max_score > 0 else 0.0
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- Markdown

_ICONS = {Status.PASSED: "✅", Status.FAILED: "❌", Status.CRASHED: "💥",
          Status.TIMED_OUT: "⏱️", Status.NOT_RUN: "⏭️"}


def render_markdown(run: RunResult) -> str:
    """A GitHub Actions job summary: one table per lab, Score lines, collapsible details."""
    out = ["# CUDA lab kit results", "", _md_cell(run_header(run)), ""]
    for lab in run.labs:
        out += [f"## {_md_cell(f'{lab.lab} · {lab.title}')} ({lab.variant})", ""]
        if lab.notes:
            out += [f"> {_md_cell(note)}" for note in lab.notes] + [""]
        if lab.error is None:
            out += ["| Step | Test | Kind | Status | Points |", "| --- | --- | --- | --- | ---: |"]
            for t in lab.tests:
                status = f"{_ICONS[t.status]} {describe(t)}"
                if measurement_text(t):
                    status += f" · {measurement_text(t)}"
                out.append(f"| {t.step} | {_md_cell(t.title)} | {t.kind} | {_md_cell(status)} "
                           f"| {fraction(t.score, t.points)} |")
            out.append("")
        out += [f"**{_md_cell(lab_score_line(lab))}**", ""]
        problems = [t for t in lab.tests if t.status.is_problem and t.output]
        if problems:
            out += ["<details><summary>Failure details</summary>", ""]
            for t in problems:
                out += [f"**{_md_cell(t.id)}**: {_md_cell(describe(t))}", "", _md_code(t.output), ""]
            out += ["</details>", ""]
    out.append(f"**{_md_cell(total_line(run))}**")
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    """Text safe inside a table cell or a line: no newlines, pipes or raw HTML."""
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _md_code(text: str) -> str:
    """A fenced block longer than any backtick run in text, so output cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


# ---------------------------------------------------------------- files

def render_all(run: RunResult) -> dict[str, str]:
    """File name -> content for every report file."""
    return {
        "kit-results.json": json.dumps(run.to_dict(), indent=2, ensure_ascii=False) + "\n",
        "junit.xml": render_junit(run),
        "results.json": render_gradescope(run),
        "prairielearn.json": render_prairielearn(run),
        "summary.md": render_markdown(run),
    }


def write_reports(run: RunResult, report_dir: Path) -> list[Path]:
    """Renders everything first, then writes each file atomically; returns the paths."""
    contents: dict[str, str | bytes] = dict(render_all(run))
    contents.update(wrong_maps.render(t for lab in run.labs for t in lab.tests))
    report_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(report_dir / "maps", ignore_errors=True)  # no map of an earlier run stays
    paths = []
    for name, text in contents.items():
        (report_dir / name).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(report_dir / name, text)
        paths.append(report_dir / name)
    return paths


def write_atomic(path: Path, text: str | bytes) -> None:
    """Readers see the old file or the new one, never a half-written one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
