"""compute-sanitizer as the kit runs it: where it is, its command line, and the verdict of a test
graded under it (a test whose kind is a tool's name: memcheck, racecheck, synccheck, initcheck).

A sanitizer test is a GPU test that the runner runs alone, in a process of its own started
through compute-sanitizer (run_test). The tool follows the judge into the worker that runs the
student's code (``--target-processes all``; where the tool can be told, the worker alone:
worker_filter), writes its reports to a log file of the runner's
(``--log-file``), not to the output the student's code shares, and exits with ERROR_EXIT when it
found something while the judge succeeded. The test passes only when all of these hold:

* the judge's own authentic verdict passed (its output checks: an untouched stub fails them);
* the runner saw compute-sanitizer itself exit with 0;
* the log holds no report and ends with the tool's summary, every count in it 0.

Anything else fails: a report or a count above 0 gives the first report, condensed to lines of
at most 80 columns (what, where, which thread of which block); an exit other than 0, a kill, a
time-out or a log without its summary says what happened. What the student's code prints never
counts (it goes to the output, not to the log), and what it could do to the log (the worker may
not write files: Landlock) only ever adds reports. docs/grading.md, "Sanitizer steps", says what
this does and does not guarantee.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import protocol
from .model import Status

ERROR_EXIT = 99
"""compute-sanitizer's exit status when the tool found errors (and the program succeeded)."""

NOT_FOUND_REASON = "compute-sanitizer not found (it ships with the CUDA toolkit)"
"""Why a sanitizer test is not run on a machine without the tool."""

PRINT_LIMIT = 20
"""Reports the tool writes out at most (it still counts them all): the first is the one shown."""

WIDTH = 80
"""The columns a condensed report fits in."""


def find_cuda_tool(name: str) -> str | None:
    """A CUDA toolkit program on PATH, else the one in the usual toolkit folder, else None."""
    candidate = Path("/usr/local/cuda/bin") / name
    return shutil.which(name) or (str(candidate) if candidate.is_file() else None)


def find_sanitizer() -> str | None:
    return find_cuda_tool("compute-sanitizer")


def command(sanitizer: str, tool: str, binary: Path, test_filter: str,
            extra: Sequence[str] = ()) -> list[str]:
    """The command line that runs `binary`'s tests matching `test_filter` under `tool`; it exits
    with ERROR_EXIT when the tool reports an error. A judge (kit/remote.h) runs the student's code
    in its worker, a child process: the tool follows every process, and `extra` (the judge's
    arguments) names the worker."""
    return [sanitizer, "--tool", tool, "--target-processes", "all", "--error-exitcode",
            str(ERROR_EXIT), str(binary), f"--gtest_filter={test_filter}", *extra]


def graded_prefix(sanitizer: str, tool: str, log: Path, worker: Path | None = None) -> list[str]:
    """What a graded test's command line starts with: `command`'s options, the tool's reports to
    `log`, at most PRINT_LIMIT of them, without backtraces, racecheck's one hazard at a time (with
    the threads and the block), and, where the tool has the options, the program killed when the
    tool loses contact with it (otherwise it would wait for the program and report nothing) and
    the tool following only `worker`, the process that runs the student's code (worker_filter)."""
    argv = [sanitizer, "--tool", tool, "--target-processes", "all", "--error-exitcode",
            str(ERROR_EXIT), "--log-file", str(log), "--print-limit", str(PRINT_LIMIT),
            "--show-backtrace", "no"]
    if tool == "racecheck":
        argv += ["--racecheck-report", "hazard"]
    options = _options(sanitizer)
    if "--kill" in options:
        argv.append("--kill")
    if worker is not None and "--target-processes-filter" in options:
        argv += ["--target-processes-filter", worker_filter(worker)]
    return argv


PROCESS_NAME_CHARS = 15
"""How much of an executable's name Linux keeps as its process name (comm)."""


def worker_filter(worker: Path) -> str:
    """The --target-processes-filter value that selects `worker` alone: its name as far as the
    process name keeps it, matched anywhere (so whether the tool matches the executable's name or
    the process name, it finds the worker). The judge, whose name starts with grade_, is left
    out: its kernels are the kit's, and tracking it too doubles a test's time (an H100, lab 01's
    memcheck test: 2.7 s against 1.0 s; lab 04's racecheck test: 4.0 s against 1.9 s). The worker
    can start no process of its own (its seccomp filter refuses fork and exec), so every kernel of
    the student's runs in the process the tool follows."""
    return "regex:" + re.escape(worker.name[:PROCESS_NAME_CHARS])


SANITIZED_FLAG = "--kit_sanitized=1"
"""Tells the judge that the runner started it under compute-sanitizer (kit::under_compute_sanitizer
cannot see the tool's library in a process the tool does not follow)."""


@functools.lru_cache(maxsize=None)
def _options(sanitizer: str) -> frozenset[str]:
    """The options `sanitizer --help` names (none when it cannot say): older releases lack some."""
    try:
        proc = subprocess.run([sanitizer, "--help"], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    text = proc.stdout + proc.stderr
    return frozenset(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


def run_test(sanitizer: str, tool: str, binary: Path, test_id: str, seed: int, timeout_s: float,
             extra: Sequence[str], lab_number: str, worker: Path | None = None) -> protocol.Outcome:
    """Runs one test under `tool` in a process of its own and gives its verdict (see the module's
    docstring). `worker`: the judge's worker, which the tool then follows alone."""
    with tempfile.TemporaryDirectory(prefix="kit-sanitizer-", ignore_cleanup_errors=True) as tmp:
        log = Path(tmp) / "report.log"
        # A judge's arguments (`extra`) say it is sanitized; a binary without a worker runs the
        # tests itself, followed by the tool, whose library it then finds in its own memory.
        judge_extra = [*extra, SANITIZED_FLAG] if extra else []
        outcome, returncode = protocol.run_alone(binary, test_id, seed, timeout_s, judge_extra,
                                                 graded_prefix(sanitizer, tool, log, worker))
        try:
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    suite = test_id.split(".", 1)[0]
    rerun = f"python3 grader/kit.py sanitize {lab_number} --tool {tool} --filter '{suite}.*'"
    return verdict(tool, outcome, returncode, text, rerun)


# ---------------------------------------------------------------- the tool's log

_PREFIX = re.compile(r"^=+ ?")
"""What starts every line the tool writes ("========= " unless --prefix says otherwise)."""

_HEADER = re.compile(
    r"^(?:(?:ERROR|WARNING|Error|Warning)\s*:\s*)?(?:\([^)]*\)\s*)?"
    r"(?P<what>(?:Race reported between|Potential \w+ hazard|Potential invalid |Invalid |"
    r"Barrier error|Uninitialized |Unused |Malloc/Free error|Program hit |Leaked \d+ bytes|"
    r"Warpgroup MMA|Deadlock detected|Warp |Lane |Device |Out-of-range|Misaligned).*)$")
"""The first line of a report, after the prefix, an optional severity word and an optional
category in parentheses ("Warning: (Warp Level Programming) Potential RAW hazard detected at",
racecheck 2025.3 on an H100)."""

_SUMMARY = re.compile(r"^(?:ERROR SUMMARY: (?P<errors>\d+) errors?|"
                      r"RACECHECK SUMMARY: (?P<hazards>\d+) hazards? displayed"
                      r"(?: \((?P<e>\d+) errors?, (?P<w>\d+) warnings?\))?)")
_WHERE = re.compile(r"\bin (?P<file>[^\s:]+):(?P<line>\d+)")
_AT = re.compile(r"^(?:(?P<access>Read|Write)\s+Thread\s+(?P<thread>\([\d, ]+\))\s+)?at\s+"
                 r"(?P<func>.*?)\s+in\s+(?P<file>[^\s:]+):(?P<line>\d+)(?P<rest>.*)$")
_NOISE = ("Saved host backtrace", "Host Frame", "Device Frame", "=========")


@dataclass
class Report:
    """One report of the tool: its first line and the indented lines after it."""

    header: str
    details: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        """file:line of the access (the first one the report names), or ""."""
        for line in [self.header, *self.details]:
            found = _WHERE.search(line)
            if found:
                return f"{found['file']}:{found['line']}"
        return ""

    def lines(self, tool: str) -> list[str]:
        """The report condensed: what, then where and by which thread of which block."""
        out = [f"{tool}: {self.header}"]
        for detail in self.details:
            if detail.startswith(_NOISE):
                continue
            at = _AT.match(detail)
            if at:
                func = _short_function(at["func"])
                where = f"{at['file']}:{at['line']}" + (f" in {func}" if func else "")
                if at["access"]:
                    out.append(f"  {at['access']} by thread {at['thread']} at {where}")
                else:
                    out.append(f"  at {where}{at['rest']}")
            else:
                out.append(f"  {detail}")
        return out


@dataclass
class Log:
    """What a log says: the reports in order and the summary counts (one per process the tool
    summarised)."""

    reports: list[Report]
    counts: list[int]
    text: str

    @property
    def clean(self) -> bool:
        return not self.reports and bool(self.counts) and not any(self.counts)


def parse(text: str) -> Log:
    reports: list[Report] = []
    counts: list[int] = []
    current: Report | None = None
    for raw in text.splitlines():
        if not _PREFIX.match(raw):
            current = None  # not the tool's line: the program's, or nothing
            continue
        line = _PREFIX.sub("", raw, count=1).rstrip()
        indented = line.startswith((" ", "\t"))
        line = line.strip()
        summary = _SUMMARY.match(line)
        if summary:
            if summary["e"] is not None:  # racecheck counts all it found, displays some
                counts.append(int(summary["e"]) + int(summary["w"]))
            else:
                counts.append(int(summary["errors"] or summary["hazards"]))
            current = None
            continue
        header = None if indented else _HEADER.match(line)
        if header:
            current = Report(header["what"].rstrip(" :"))
            reports.append(current)
        elif current is not None and line:
            current.details.append(line)
        elif not line:
            current = None
    return Log(reports, counts, text)


def _short_function(func: str) -> str:
    """`lab02::scale_shift_kernel(unsigned int, float, ...)+0xb0` -> `lab02::scale_shift_kernel`;
    "" for a bare address."""
    name = re.split(r"[(+]|:0x", func.strip(), maxsplit=1)[0].strip()
    return "" if re.fullmatch(r"0x[0-9a-fA-F]+", name) else name


def _fit(lines: Sequence[str]) -> str:
    """Lines wrapped to WIDTH columns, a wrapped line's rest indented under its start."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=True,
                             break_on_hyphens=False) or [""]
    return "\n".join(out)


# ---------------------------------------------------------------- the verdict

def verdict(tool: str, outcome: protocol.Outcome, returncode: int | None, text: str,
            rerun: str) -> protocol.Outcome:
    """The verdict of a sanitizer test from the judge's `outcome`, compute-sanitizer's exit status
    (`returncode`, None when it was killed at the time limit) and its log `text`. `rerun` is the
    command that shows every report."""
    log = parse(text)
    found = bool(log.reports) or any(log.counts) or returncode == ERROR_EXIT
    measurements = dict(outcome.measurements)
    if found:
        first = log.reports[0] if log.reports else None
        total = max([len(log.reports), sum(log.counts)])
        if first is not None:
            told = first.lines(tool)
            if total > 1:
                told.append(f"  ({total} reports in all; the first is shown)")
            reason = f"{tool}: {first.header}" + (f" at {first.where}" if first.where else "")
        else:
            told = [f"{tool} reported errors (exit {returncode}), in a form the kit cannot read; "
                    + ("its log begins:" if text.strip() else "its log is empty"), *_log_head(text)]
            reason = f"{tool} reported errors"
        told += ["To see every report:", f"  {rerun}"]
        measurements["sanitizer"] = reason
        report = _fit(told)
        if outcome.status in (Status.CRASHED, Status.TIMED_OUT):
            return protocol.Outcome(outcome.status, outcome.reason,
                                    _join(report, outcome.output), measurements,
                                    outcome.duration_s)
        return protocol.Outcome(Status.FAILED, reason[:200], _join(report, outcome.output),
                                measurements, outcome.duration_s)
    if outcome.status is not Status.PASSED:
        return outcome
    problem = _tool_problem(tool, returncode, log)
    if problem is not None:
        status, reason = problem
        output = _fit([reason, *(["Its log begins:", *_log_head(text)] if text.strip() else
                                 ["It wrote no log."])])
        return protocol.Outcome(status, reason, output, measurements, outcome.duration_s)
    measurements["sanitizer"] = f"{tool}: clean"
    return protocol.Outcome(Status.PASSED, "", "", measurements, outcome.duration_s)


def _tool_problem(tool: str, returncode: int | None, log: Log) -> tuple[Status, str] | None:
    """Why a run whose test passed and whose log holds no report still cannot pass (None: it
    can)."""
    if returncode is None:
        return (Status.TIMED_OUT, "compute-sanitizer did not finish within the time limit after "
                                  "the test")
    if returncode != 0:
        status = Status.CRASHED if returncode < 0 else Status.FAILED
        crashed = "crashed: " if returncode < 0 else ""
        return status, f"{crashed}compute-sanitizer {protocol.exit_text(returncode)}"
    if not log.clean:
        return (Status.FAILED, f"compute-sanitizer's log has no {tool} summary: the tool's run "
                               f"cannot be confirmed")
    return None


def _log_head(text: str, lines: int = 8) -> list[str]:
    return [f"  {line.rstrip()}" for line in text.strip().splitlines()[:lines]]


def _join(first: str, second: str) -> str:
    return f"{first}\n\n{second}" if second else first
