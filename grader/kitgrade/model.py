"""The result model every report is generated from.

A run produces one RunResult; the terminal table, JUnit XML, Gradescope JSON, Markdown
summary and kit-results.json are all views of it, so they can never disagree. A test's
score is derived from its status (points if passed, else 0) rather than stored
independently, so no code path can award points to a test that did not pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
"""compute-sanitizer's tools: what `kit.py sanitize --tool` runs, and the kinds of the tests the
runner grades under one (each the name of its tool)."""

KINDS = ("host", "gpu", "timed", "perf") + SANITIZER_TOOLS + ("counter",)
"""host: runs anywhere; gpu: correctness on a GPU; timed: correctness on a GPU judged by durations
(run one at a time); perf: measured against a ceiling (one at a time, gated on correctness);
memcheck, racecheck, synccheck, initcheck: correctness on a GPU under that compute-sanitizer tool
(each test in a process of its own; it passes only when the tool reports nothing); counter: a
GPU's hardware counters held to bars, under Nsight Compute (one at a time)."""

def step_suffix(step_id: str) -> str:
    """The part of a step id after the lab's name: "1" for "indexing.1", "perf" for
    "indexing.perf"."""
    return step_id.split(".", 1)[-1]


NO_DEVICE_REASON = "no CUDA device"
"""The not_run reason a GPU test reports when the machine has no usable GPU."""

NO_MEMORY_REASON = "too little GPU memory"
"""The start of the not_run reason of a GPU test that needs more device memory than the GPU has free
(kit/device_info.h, kNoMemoryReason): excused like a missing GPU, and perf is not held back by it."""

NO_COUNTERS_REASON = "no hardware counters"
"""How the not_run reason of a counter test starts when the machine lacks what reads them: Nsight
Compute (ncu), or this user's permission to read the GPU's counters (kitgrade.counters)."""

UNGATED_KINDS = ("perf", "counter")
"""Kinds that measure how well the code uses the hardware rather than whether it is right: a perf
test scores only when every test of the other kinds of its lab passed, and a counter test (the
hardware's own counters, read by Nsight Compute; not run where they cannot be read) neither waits
for that nor closes that gate."""


def is_correctness(kind: str) -> bool:
    """Whether a test of `kind` checks correctness (it gates the lab's perf tests)."""
    return kind not in UNGATED_KINDS


class Status(Enum):
    PASSED = "passed"
    FAILED = "failed"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    NOT_RUN = "not run"

    @property
    def is_problem(self) -> bool:
        """The test ran and did not pass (not-run tests are neither passed nor problems)."""
        return self in (Status.FAILED, Status.CRASHED, Status.TIMED_OUT)


@dataclass
class TestResult:
    lab: str
    step: str
    id: str
    title: str
    kind: str
    points: float
    status: Status
    reason: str = ""
    """One line explaining a non-passing status, e.g. "crashed: SIGSEGV"."""
    output: str = ""
    """Details for the student: failure messages or the tail of a crashed test's output."""
    duration_s: float = 0.0
    measurements: dict[str, str] = field(default_factory=dict)
    """Every property the test recorded beyond GoogleTest's own keys (ratio, threshold, seed...)."""
    visibility: str = "visible"
    hidden: bool = False
    """An instructor-only test (KIT_HIDDEN_TEST, grader/NN_name/hidden/), never in a student edition."""
    score: float = field(init=False)

    __test__ = False  # not a unittest/pytest test class despite the name

    def __post_init__(self) -> None:
        self.score = self.points if self.status is Status.PASSED else 0
        if self.status is Status.FAILED and "graded_score" in self.measurements:
            # A perf test graded on a scale (runner.graded_speed): part of its points.
            self.score = min(self.points, max(0.0, float(self.measurements["graded_score"])))

    def lacked_device(self, gpu_available: bool) -> bool:
        """Not run only because the machine has no GPU, or (a counter test) no hardware counters
        it can read, or (a test of huge sizes) too little GPU memory: excused unless
        --require-gpu.

        A host test is never excused, and on a machine with a GPU only a test that itself
        reported "no CUDA device", or a counter test that could not read counters here, is (perf
        tests gated by a real failure are not).
        """
        if self.status is not Status.NOT_RUN or self.kind == "host":
            return False
        return (not gpu_available or self.reason == NO_DEVICE_REASON or self.lacked_counters()
                or self.reason.startswith(NO_MEMORY_REASON))

    def lacked_counters(self) -> bool:
        """Not run only because nothing here could read the GPU's counters (a counter test
        without Nsight Compute, or without permission to read them)."""
        return self.status is Status.NOT_RUN and self.reason.startswith(NO_COUNTERS_REASON)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab, "step": self.step, "id": self.id, "title": self.title,
            "kind": self.kind, "points": self.points, "score": self.score,
            "status": self.status.value, "reason": self.reason, "output": self.output,
            "duration_s": self.duration_s, "measurements": dict(self.measurements),
            "visibility": self.visibility, "hidden": self.hidden,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestResult:
        """Inverse of to_dict; the score is recomputed from the status. A result written before
        hidden tests existed has no "hidden" key: it was not one."""
        return cls(
            lab=data["lab"], step=data["step"], id=data["id"], title=data["title"],
            kind=data["kind"], points=data["points"], status=Status(data["status"]),
            reason=data["reason"], output=data["output"], duration_s=data["duration_s"],
            measurements=dict(data["measurements"]), visibility=data["visibility"],
            hidden=bool(data.get("hidden", False)),
        )


@dataclass(frozen=True)
class StepSubtotal:
    step: str
    title: str
    score: float
    max_score: float


@dataclass
class LabResult:
    lab: str
    title: str
    variant: str
    steps: dict[str, str]
    """Step id -> title, in manifest order; drives the order of subtotals."""
    tests: list[TestResult] = field(default_factory=list)
    error: str | None = None
    """Set when the lab could not be graded at all (binary missing, listing failed)."""
    notes: list[str] = field(default_factory=list)
    """Lab-wide remarks for every report, e.g. what the banned-library check found."""

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)

    def subtotals(self) -> list[StepSubtotal]:
        """Per-step score/max in manifest order, for steps that have tests."""
        result = []
        for step, title in self.steps.items():
            tests = [t for t in self.tests if t.step == step]
            if tests:
                result.append(StepSubtotal(step, title, sum(t.score for t in tests),
                                           sum(t.points for t in tests)))
        return result

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab, "title": self.title, "variant": self.variant,
            "steps": dict(self.steps), "error": self.error, "notes": list(self.notes),
            "score": self.score, "max_score": self.max_score,
            "subtotals": [vars(s) for s in self.subtotals()],
            "tests": [t.to_dict() for t in self.tests],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabResult:
        return cls(lab=data["lab"], title=data["title"], variant=data["variant"],
                   steps=dict(data["steps"]), error=data["error"],
                   notes=list(data.get("notes", [])),
                   tests=[TestResult.from_dict(t) for t in data["tests"]])


@dataclass
class RunResult:
    seed: int
    variant: str
    device: dict[str, Any]
    """What the lab binary's --kit_device reported ({"available": false, ...} without a GPU)."""
    started_at: str
    """ISO 8601 UTC timestamp."""
    labs: list[LabResult] = field(default_factory=list)
    submission: str | None = None
    """The submission directory graded (kit.py grade --submission), or None for labs/."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds each phase of runner.run took: "list" (listing, inspection, bans), "correctness"
    (every lab's host and gpu tests, labs side by side), "sanitizer" (the tests run under
    compute-sanitizer, a few at once), "timed", "counters" and "perf" (one at a time)."""

    @property
    def score(self) -> float:
        return sum(lab.score for lab in self.labs)

    @property
    def max_score(self) -> float:
        """Sum over graded labs; a lab with an error adds nothing, see `errors`."""
        return sum(lab.max_score for lab in self.labs)

    @property
    def errors(self) -> list[LabResult]:
        """Labs that could not be graded; while any exist the totals are incomplete."""
        return [lab for lab in self.labs if lab.error is not None]

    @property
    def gpu_available(self) -> bool:
        return bool(self.device.get("available"))

    def tests(self) -> list[TestResult]:
        return [t for lab in self.labs for t in lab.tests]

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "variant": self.variant, "device": dict(self.device),
            "started_at": self.started_at, "submission": self.submission,
            "score": self.score, "max_score": self.max_score,
            "labs": [lab.to_dict() for lab in self.labs],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        return cls(seed=data["seed"], variant=data["variant"], device=dict(data["device"]),
                   started_at=data["started_at"],
                   labs=[LabResult.from_dict(lab) for lab in data["labs"]],
                   submission=data.get("submission"))
