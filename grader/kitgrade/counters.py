"""Counter tests (kind ``counter``): the hardware's counters of the student's kernels, graded.

A counter test (kit::CounterTest, kit/test.h) is a gpu test that the runner runs alone, after
the timed tests, in a process of its own started through Nsight Compute (``ncu``; run_test). The
test calls the student's functions on small fixed shapes, checks their results as any gpu test
does, and names the keys of grader/thresholds.conf whose counters every launch of the student's
kernels must keep within their bars; its signed verdict carries each key's bar for this build on
this GPU ("counter_bar:<key>"). The judge cannot read the counters itself (ncu reports them once
the process ends), so the runner compares. ncu writes its readings to a log file in the runner's
own temporary folder (``--log-file``), never to the output that the student's code shares, and
the worker that runs the student's code may not write any file (its sandbox). The test passes
only when all of these hold:

* the judge's authentic verdict passed (its result checks: an untouched stub fails them);
* ncu exited with 0 and profiled at least one launch, every one of a kernel compiled into the
  student's code, at most LAUNCH_LIMIT of them;
* for each key, some launch made the accesses its counter reads, and none reads above the bar.

Without a GPU, without ncu, where this user may not read the GPU's counters (ERR_NVGPUCTRPERM)
or where ncu has no reading of a counter, the test is not run, never passed; the reason starts
with model.NO_COUNTERS_REASON, except for a GPU's absence. A failure names the kernel, its reading,
the bar and what the number means, in lines of at most 80 columns.

The counters (COUNTERS) are Nsight Compute's source counters: what each instruction's accesses
took against the fewest their bytes need, summed over the launch. They come from the kernel's own
instructions, so they are deterministic (one run, no repeats, one bar for every GPU); being sums,
they average a bad access with the launch's others, so a kernel padded with well-behaved accesses
reads lower (docs/grading.md, "Counter checks", says what that leaves open). A key
``<lab>.<counter id>`` of thresholds.conf is a counter bar: the most the counter may read.
"""

from __future__ import annotations

import tempfile
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import ncu, protocol
from .model import NO_COUNTERS_REASON, Status

KIND = "counter"

COUNTERS: dict[str, ncu.Counter] = {
    "global_sectors_vs_ideal": ncu.GLOBAL_VS_IDEAL,
    "shared_wavefronts_vs_ideal": ncu.SHARED_VS_IDEAL,
}
"""The counters a lab may grade, by the id its thresholds keys end in (kitgrade.ncu defines
them, and `kit.py profile` shows them too)."""

ACCESSES = {
    "global_sectors_vs_ideal": "global-memory load or store",
    "shared_wavefronts_vs_ideal": "shared-memory access",
}
"""What a launch must do for each counter to read anything."""

FLAG = "--kit_counters=ncu"
"""Tells the judge that it runs under ncu for its counter tests (test_main.cpp)."""

LAUNCH_LIMIT = 32
"""Launches a counter test may make: ncu profiles one more at most, and a test that reaches it
fails (launches past ncu's limit would not be read)."""

BAR_PREFIX = "counter_bar:"
SECTION_PREFIX = "counter_section:"
READING_PREFIX = "counter:"
"""Measurement keys: the bar and section the judge recorded per key, and the reading the runner
adds (the worst launch's)."""

NO_NCU_REASON = f"{NO_COUNTERS_REASON}: ncu not found (Nsight Compute comes with the CUDA toolkit)"
NOT_PERMITTED_REASON = (f"{NO_COUNTERS_REASON}: this user may not read the GPU's performance "
                        f"counters (ERR_NVGPUCTRPERM)")

WIDTH = 80


def counter_of(key: str) -> ncu.Counter | None:
    """The counter a thresholds key names (`coalescing.global_sectors_vs_ideal`), or None."""
    return COUNTERS.get(key.partition(".")[2])


def is_counter_key(key: str) -> bool:
    return counter_of(key) is not None


def metrics() -> list[str]:
    """Every metric ncu is asked for: those of every counter, so one run serves any test."""
    return sorted({part for counter in COUNTERS.values() for part in counter.raw})


def command_prefix(ncu_path: str, log: Path) -> list[str]:
    """What a counter test's command line starts with: ncu following the judge into its worker,
    the counters' metrics in base units under their own names, each a launch's total (not one
    value per instruction), kernels by mangled name, its output (the readings as CSV) to `log`,
    and the GPU's clocks left alone (the counters do not depend on them)."""
    return [ncu_path, "--target-processes", "all", "--metrics", ",".join(metrics()), "--csv",
            "--page", "details", "--print-units", "base", "--print-metric-name", "name",
            "--print-metric-instances", "none", "--print-kernel-base", "mangled",
            "--launch-count", str(LAUNCH_LIMIT + 1), "--clock-control", "none",
            "--log-file", str(log)]


def run_test(ncu_path: str, binary: Path, test_id: str, seed: int, timeout_s: float,
             extra: Sequence[str], own: Iterable[str], lab_number: str,
             go: protocol.StartSignal | None = None) -> protocol.Outcome:
    """Runs one counter test under ncu in a process of its own and gives its verdict. `own`:
    the kernels compiled into the student's code (mangled or not; empty when the build listed
    none, and then every kernel profiled counts as the student's). `go`: the process starts now
    and waits for its turn (protocol.run_alone); cancelled, the outcome says so and nothing is
    read."""
    with tempfile.TemporaryDirectory(prefix="kit-counters-", ignore_cleanup_errors=True) as tmp:
        log = Path(tmp) / "ncu.csv"
        outcome, returncode = protocol.run_alone(binary, test_id, seed, timeout_s,
                                                 [*extra, FLAG], command_prefix(ncu_path, log),
                                                 go=go)
        if go is not None and go.cancelled:
            return outcome
        try:
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    return verdict(outcome, returncode, text, own, lab_number)


@dataclass(frozen=True)
class Expectation:
    """A key the test named: its counter (None: the key names none), bar and section."""

    key: str
    counter: ncu.Counter | None
    bar: float
    section: str


def expectations(measurements: dict[str, str]) -> list[Expectation]:
    """The keys the judge's verdict names, in its order (a bar that is not a number: NaN, which
    no reading passes)."""
    found = []
    for name, value in measurements.items():
        if not name.startswith(BAR_PREFIX):
            continue
        key = name[len(BAR_PREFIX):]
        try:
            bar = float(value)
        except ValueError:
            bar = float("nan")
        found.append(Expectation(key, counter_of(key), bar,
                                 measurements.get(SECTION_PREFIX + key, "default")))
    return found


def verdict(outcome: protocol.Outcome, returncode: int | None, text: str, own: Iterable[str],
            lab_number: str) -> protocol.Outcome:
    """The verdict of a counter test from the judge's `outcome`, ncu's exit status
    (`returncode`, None when it was killed at the time limit) and its log `text`; `lab_number`
    ("03") names the lab in the command that shows the counters."""
    if outcome.status is not Status.PASSED:
        return outcome  # the results are wrong (or the test crashed): nothing to read

    def not_run(reason: str, detail: str = "") -> protocol.Outcome:
        return protocol.Outcome(Status.NOT_RUN, reason, _fit([detail]) if detail else "",
                                dict(outcome.measurements), outcome.duration_s)

    def failed(reason: str, lines: list[str], status: Status = Status.FAILED) -> protocol.Outcome:
        return protocol.Outcome(status, reason[:200], _fit(lines), dict(outcome.measurements),
                                outcome.duration_s)

    if "ERR_NVGPUCTRPERM" in text:
        return not_run(NOT_PERMITTED_REASON, ncu.refusal_reason(text))
    expected = expectations(outcome.measurements)
    if not expected:
        return failed("the test names no counter to check",
                      ["the test names no counter: a grader bug (kit::CounterTest::"
                       "expect_counters)"])
    unknown = [e.key for e in expected if e.counter is None]
    if unknown:
        return failed(f"'{unknown[0]}' names no counter",
                      [f"'{unknown[0]}' names no counter of grader/kitgrade/counters.py "
                       f"({', '.join(COUNTERS)}): a grader bug"])
    errors = [line.strip() for line in text.splitlines() if line.startswith("==ERROR==")]
    if returncode is None:
        return failed("timed out: ncu did not finish within the time limit",
                      ["ncu did not finish within the time limit after the test"],
                      Status.TIMED_OUT)
    if returncode != 0:
        return not_run(f"ncu could not read the counters (exit {returncode})",
                       errors[0] if errors else _log_head(text))
    tampered = ncu.foreign_rows(text)
    if tampered:
        return failed("ncu's log holds rows that ncu did not write",
                      [f"{tampered}: the counters cannot be trusted, so this test does not pass",
                       "(the kit never writes there; did your code write to a file?)"])
    launches = ncu.parse_launches(text)
    if not launches:
        if errors:
            return not_run("ncu could not read the counters", errors[0])
        return failed("no kernel of yours ran under the profiler",
                      ["ncu profiled no kernel launch in this test: your functions must do "
                       "their work in kernels of your own", f"ncu's log: {_log_head(text)}"])
    names = {ncu.demangled(name) for name in own}
    foreign = [launch.name for launch in launches if names and ncu.demangled(launch.name)
               not in names]
    if foreign:
        shown = ncu.demangled(foreign[0])[:48]
        return failed(f"a kernel that is not in your code ran: {shown}",
                      [f"a kernel that is not in your code ran under the profiler: {shown}",
                       "lab code may launch only its own kernels"])
    if len(launches) > LAUNCH_LIMIT:
        return failed(f"more than {LAUNCH_LIMIT} kernel launches in one test",
                      [f"your code launched more than {LAUNCH_LIMIT} kernels in this test; the "
                       f"counters are read for at most {LAUNCH_LIMIT}"])
    measurements = dict(outcome.measurements)
    problems: list[list[str]] = []
    reasons: list[str] = []
    for e in expected:
        assert e.counter is not None
        if all(_missing(e.counter, launch.raw) for launch in launches):
            return not_run(f"{NO_COUNTERS_REASON}: ncu has no reading of "
                           f"{e.counter.raw[0]} here")
        readings = [(launch, e.counter.value(launch.raw)) for launch in launches]
        measured = [(launch, value) for launch, value in readings if value is not None]
        if not measured:
            what = ACCESSES[e.key.partition(".")[2]]
            reasons.append(f"no {what} in your kernels")
            problems.append([f"none of your kernels made a {what}: {e.counter.words} has "
                             f"nothing to read ('{e.key}')"])
            continue
        worst, value = max(measured, key=lambda pair: pair[1])
        measurements[READING_PREFIX + e.key] = f"{value:.2f}"
        if value <= e.bar * (1 + 1e-9):
            continue
        kernel = ncu.demangled(worst.name)
        where = ("the default section" if e.section == "default"
                 else f"section [{e.section}]")
        launch = (f"launch {launches.index(worst) + 1} of {len(launches)} of your kernels in "
                  f"this test")
        reasons.append(f"{kernel}: {value:.2f} {e.counter.words}, at most {e.bar:g}")
        problems.append([
            f"{kernel}: {value:.2f} {e.counter.words}; at most {e.bar:g} ('{e.key}' in "
            f"{where} of grader/thresholds.conf)",
            f"  {e.counter.meaning}",
            f"  ({launch})"])
    if problems:
        lines = [line for problem in problems for line in problem]
        lines += [f"every counter of your kernels: python3 grader/kit.py profile {lab_number}"]
        return failed(reasons[0], lines)
    return protocol.Outcome(Status.PASSED, "", "", measurements, outcome.duration_s)


def _missing(counter: ncu.Counter, raw: dict[str, float | None]) -> bool:
    """A part of the counter has no value in this launch (ncu printed none, or no row)."""
    return any(raw.get(part) is None for part in counter.raw)


def _log_head(text: str, lines: int = 3) -> str:
    """ncu's warnings and errors (else its first lines), on one line: why it read nothing."""
    all_lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    told = [line for line in all_lines if line.startswith(("==WARNING==", "==ERROR=="))]
    head = (told or all_lines)[:lines]
    return " / ".join(head) if head else "ncu wrote no log"


def _fit(lines: Sequence[str]) -> str:
    """Lines wrapped to WIDTH columns, a wrapped line's rest indented under its start."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=True,
                             break_on_hyphens=False) or [""]
    return "\n".join(out)
