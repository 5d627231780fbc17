"""Grades labs: lists each binary's tests, runs them, and applies the scoring rules.

Rules enforced here rather than in the binaries, so a student's code cannot bend them:
correctness tests (host, gpu) of a lab may run in parallel; its perf tests run afterwards,
one at a time with nothing else running, and only if every correctness test passed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import protocol
from .manifest import Lab
from .model import LabResult, RunResult, Status, TestResult

VARIANT_PREFIX = {"student": "grade", "reference": "reference"}
"""Binary name prefix per variant: grade_01_indexing is built from labs/, reference_* from solutions/."""

PERF_GATE_REASON = "correctness steps did not all pass"
HIDDEN_MARKER = "[hidden]"
"""A test title starting with this is hidden on Gradescope even if its step is visible."""

ResultCallback = Callable[[TestResult], None]


@dataclass(frozen=True)
class LabTarget:
    """A lab and the binary that grades it; tests point this at a fake binary."""

    lab: Lab
    binary: Path


@dataclass(frozen=True)
class RunOptions:
    variant: str
    seed: int
    jobs: int
    timeout_s: float | None = None
    """Overrides every lab's manifest timeout when set."""


def binary_path(bin_dir: Path, lab: Lab, variant: str) -> Path:
    return bin_dir / target_name(lab, variant)


def target_name(lab: Lab, variant: str) -> str:
    """The CMake target (and executable name) that grades `lab` in `variant`."""
    return f"{VARIANT_PREFIX[variant]}_{lab.id}"


def run(targets: Sequence[LabTarget], options: RunOptions,
        on_result: ResultCallback | None = None) -> RunResult:
    """Grades every target in order. on_result is called (in this thread) as tests finish."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    device = _device(targets)
    result = RunResult(options.seed, options.variant, device, started)
    for target in targets:
        result.labs.append(grade_lab(target, options, on_result or (lambda _: None)))
    return result


def grade_lab(target: LabTarget, options: RunOptions, on_result: ResultCallback) -> LabResult:
    lab = target.lab
    result = LabResult(lab.id, lab.title, options.variant, {s.id: s.title for s in lab.steps})
    if not target.binary.is_file():
        result.error = f"binary not built: {target.binary}"
        return result
    try:
        specs = protocol.list_tests(target.binary, lab.id, options.variant, result.steps)
    except protocol.ProtocolError as err:
        result.error = f"could not list tests of {target.binary}: {err}"
        return result

    order = {step.id: i for i, step in enumerate(lab.steps)}
    specs.sort(key=lambda s: order[s.step])  # stable: keeps the binary's order within a step
    timeout = options.timeout_s or lab.timeout_s
    by_id: dict[str, TestResult] = {}

    def finish(spec: protocol.TestSpec, outcome: protocol.Outcome) -> None:
        by_id[spec.id] = _result(lab, spec, outcome)
        on_result(by_id[spec.id])

    correctness = [s for s in specs if s.kind != "perf"]
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {
            pool.submit(protocol.run_test, target.binary, s.id, options.seed, timeout): s
            for s in correctness
        }
        try:
            for future in as_completed(futures):
                finish(futures[future], future.result())
        except BaseException:
            # e.g. Ctrl-C: tests run in their own sessions, so nothing else would stop them,
            # and leaving this block waits for the workers.
            pool.shutdown(wait=False, cancel_futures=True)
            protocol.kill_running()
            raise

    gate_open = all(by_id[s.id].status is Status.PASSED for s in correctness)
    for spec in (s for s in specs if s.kind == "perf"):
        if gate_open:
            finish(spec, protocol.run_test(target.binary, spec.id, options.seed, timeout))
        else:
            finish(spec, protocol.Outcome(Status.NOT_RUN, PERF_GATE_REASON))

    result.tests = [by_id[s.id] for s in specs]
    return result


def _result(lab: Lab, spec: protocol.TestSpec, outcome: protocol.Outcome) -> TestResult:
    step = lab.find_step(spec.step)
    assert step is not None  # protocol.list_tests only accepts the lab's steps
    title, visibility = spec.title, step.visibility
    if title.lower().startswith(HIDDEN_MARKER):
        title, visibility = title[len(HIDDEN_MARKER):].strip(), "hidden"
    return TestResult(
        lab=lab.id, step=spec.step, id=spec.id, title=title, kind=spec.kind,
        points=spec.points, status=outcome.status, reason=outcome.reason,
        output=outcome.output, duration_s=round(outcome.duration_s, 3),
        measurements=outcome.measurements, visibility=visibility,
    )


def _device(targets: Sequence[LabTarget]) -> dict[str, object]:
    """The GPU as seen by the first lab binary that exists (they all link the same code)."""
    for target in targets:
        if target.binary.is_file():
            return protocol.query_device(target.binary)
    return {"available": False, "reason": "no lab binary to query the device with"}
