"""Grades labs: lists each binary's tests, runs them, and applies the scoring rules.

Rules enforced here rather than in the binaries, so a student's code cannot bend them:
the student's compiled objects are inspected before anything runs (kitgrade.inspect: calls lab
code may not make, code that runs before main(); a refusal fails the whole lab unrun); a lab's
banned libraries are looked for before anything runs, and the tests of the steps a
found one bans fail without running (kitgrade.bans); the other correctness tests (host, gpu)
of a lab may run in parallel; its sanitizer tests (kinds memcheck, racecheck, synccheck,
initcheck) run beside those (after them with fail_fast), each alone in a process under
compute-sanitizer, several labs' side by side (kitgrade.sanitizer gives their verdicts); its timed
ones (correctness judged by durations, which a test beside them would disturb) run afterwards,
one at a time; then its counter tests, each in a process of its own under Nsight Compute, a few
labs' side by side (kitgrade.counters gives their verdicts); its perf tests run last, one at a
time with nothing else running, and only if every correctness test that ran passed (counter
tests are not among them: they neither gate the perf tests nor wait for them). Several gradings
on one GPU take its lock (kitgrade.gpu_lock): shared for the correctness tests, exclusive from the
timed tests to the last perf test, so nothing of one runs beside another's timed tests.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import (bans, coach, counters, gpu_lock, inspect, ncu, protocol, reports, sanitizer,
               thresholds)
from .manifest import Lab
from .model import (NO_DEVICE_REASON, SANITIZER_TOOLS, LabResult, RunResult, Status, TestResult,
                    is_correctness)

VARIANT_PREFIX = {"student": "grade", "reference": "reference"}
"""Binary name prefix per variant: grade_01_indexing is built from labs/, reference_* from solutions/."""

PERF_GATE_REASON = "correctness steps did not all pass"
"""Why perf tests were not run: a correctness test failed (when the only thing missing was a
GPU, they are not run for model.NO_DEVICE_REASON instead)."""
HIDDEN_MARKER = "[hidden]"
"""A test title starting with this is hidden on Gradescope even if its step is visible. (An
instructor-only hidden test, KIT_HIDDEN_TEST, gets its lab's hidden_visibility instead.)"""

ResultCallback = Callable[[TestResult], None]


@dataclass(frozen=True)
class Settle:
    """What the kit's selftest expects of a known-wrong submission: the steps it must lose, and
    `shown(failing)`, whether the failing tests so far show what it must be told. Once a step
    of `steps` has a failing test and `shown` holds, that step's verdict can no longer change:
    its tests left are not run (SETTLED_REASON). A hung or sanitized test costs seconds to
    minutes each, and a known-wrong submission that hangs hangs every test of its step."""

    steps: frozenset[str]
    shown: Callable[[Sequence[TestResult]], bool]


SETTLED_REASON = "its step has already lost its points (kit selftest: not run)"

SETTLE_ENV = "KIT_SETTLE_GOES_ON"
"""Unless set to 0: once a known-wrong submission's step has settled on an ordinary failure, its
process goes on through the tests left instead of being ended and started again without them (a
new process costs two CUDA contexts); the settled step's tests that still run get SETTLED_REASON,
whatever they do, one that runs past SETTLED_GRACE_S ends the process as before, and so does a
verdict after which every test left is of a settled step. With 0, the process is ended and
started again (the behaviour before session 28; an H100 selftest with both this and the
selftest's BUILD_BESIDE_ENV took 299 s against 336 s without: engine_log.md)."""

SETTLED_GRACE_S = 2.0
"""Unless SETTLE_ENV is 0, how long a test of a settled step may run before its process is ended: a
mistake that hangs usually hangs every test of its step."""


@dataclass(frozen=True)
class LabTarget:
    """A lab and the binary that grades it; tests point this at a fake binary.

    `sources` (the student files that were compiled) and `archive` (the student's static
    library) are what the banned-library check scans; see lab_target().
    """

    lab: Lab
    binary: Path
    sources: tuple[bans.SourceFile, ...] = ()
    archive: Path | None = None
    listed_by: Path | None = None
    """The reference build of the same grader, when the build directory has one: its --kit_list
    (the tests, steps and points) is trusted instead of the graded binary's, whose student code
    runs before main() and could answer --kit_list itself (a forged listing that drops failing
    tests or inflates points). None: the graded binary lists its own tests (a student edition,
    which has no reference; the fake lab)."""
    include_roots: tuple[Path, ...] = ()
    """Folders the student's objects may include files from, besides the system's: where the
    student's files were taken from, the lab's given headers, the kit's headers (kitgrade.inspect,
    sealed submissions). Empty: includes are not checked (fake labs)."""
    worker: Path | None = None
    """For a lab graded by a judge (kit/remote.h): the worker built from the student's files;
    `binary` is then the judge, which never runs student code and so lists its own tests."""

    inspect: bool = True
    """Inspect the student's objects before running anything (kitgrade.inspect). Off only in the
    kit's own selftest, which grades a refused attack again this way, beside the others, to show
    what the judge/worker split stops without that layer."""

    timeout_s: float | None = None
    """The time limit of each test of this target (with a `settle`, of the steps it names: the
    steps a known-wrong submission must lose, where it hangs; a test of a step it keeps may take
    long beside the hangs, and keeps RunOptions.timeout_s or the lab's), instead of
    RunOptions.timeout_s or the lab's: only the kit's own selftest sets it, for a known-wrong
    submission that hangs on purpose (wrong.json's "timeout_s")."""

    alone_timeout_s: float | None = None
    """The time limit of each of its timed and perf tests (of the same steps as timeout_s), which
    run with nothing else on the GPU, instead of timeout_s: only the kit's selftest sets it, for
    a known-wrong submission whose timed or perf test hangs on purpose (wrong.json's
    "alone_timeout_s")."""

    settle: Settle | None = field(default=None, compare=False)
    """Only the kit's own selftest sets it, for a known-wrong submission (see Settle)."""

    variant: str | None = None
    """The build this target grades ("student" or "reference"; a known-wrong submission is a
    student's), which the judge is told; None: RunOptions.variant. lab_target() sets it, so one
    run can grade both (the kit's own selftest grades the stubs and the references in one
    run)."""

    env: tuple[tuple[str, str], ...] = ()
    """Variables this target's test processes get besides the runner's own environment (the
    kit's fake lab: KIT_FAKE_LAB=1, which arms its faults), so that no caller sets them in
    os.environ, where every process started meanwhile, of any grading, would get them too (and
    a thread copying os.environ while another changed it could fail). Not given to the runs
    under compute-sanitizer or Nsight Compute: the fake lab has no such tests."""

    first_step: str | None = None
    """With RunOptions.fail_fast: the correctness tests of this step run first, in a process of
    their own, and the rest only if they all pass. kit.py mutate names the step a mutant changed,
    whose tests are the likeliest to kill it, so a kill comes before the other steps' tests."""

    def inspected(self) -> inspect.Inspection:
        """The inspection of the student's objects in `archive` (kitgrade.inspect.check), made
        the one way grading makes it: the selftest's warm-up of the inspection cache must ask
        for the very findings a grading reads back."""
        shown = {source.path.name: source.shown for source in self.sources}
        return inspect.check(self.lab, self.archive, shown, self.include_roots)

    def judge_args(self, variant: str) -> list[str]:
        """The arguments that point a judge at this target's worker ([] for a plain grader)."""
        if self.worker is None:
            return []
        queues = self.lab.worker_queues
        return [f"--kit_worker={self.worker.absolute()}", f"--kit_variant={variant}",
                *([f"--kit_worker_queues={queues}"] if queues is not None else [])]


@dataclass(frozen=True)
class RunOptions:
    variant: str
    seed: int
    jobs: int
    timeout_s: float | None = None
    """Overrides every lab's manifest timeout when set."""
    fail_fast: bool = False
    """Stop a lab at its first test that does not pass: the tests left are not run
    (FAIL_FAST_REASON). For kit.py mutate, where one lost step already decides."""
    kinds: frozenset[str] | None = None
    """Run only tests of these kinds (None: all); the others are not run (NOT_SELECTED_REASON)."""
    leave_out: frozenset[str] = frozenset()
    """Test ids not to run (NOT_SELECTED_REASON): kit.py mutate leaves out the tests the reference
    did not pass, which decide nothing there (with fail_fast, one would stop every mutant)."""
    pinned_judges: dict[Path, str] | None = field(default=None, hash=False, compare=False)
    """Each judge's SHA-256 when the first run with these options began (kit.py batch shares one
    dict over its submissions): a judge that differs at a later run fails its lab (JUDGE_CHANGED)
    even if it changed between runs, where the check around each run cannot see it (a rebuild
    from judge objects that a submission overwrote, on a machine without Landlock)."""


FAIL_FAST_REASON = "an earlier test of this lab did not pass (fail fast)"
NOT_SELECTED_REASON = "not selected in this run"


def binary_path(bin_dir: Path, lab: Lab, variant: str) -> Path:
    return bin_dir / target_name(lab, variant)


def target_name(lab: Lab, variant: str) -> str:
    """The CMake target (and executable name) that grades `lab` in `variant`."""
    return f"{VARIANT_PREFIX[variant]}_{lab.id}"


TARGETS_FILE = "kit-targets.json"
"""Written by CMake at configure time (grader/CMakeLists.txt): for every grader target, its binary,
its student library and the path each student file was taken from."""


def lab_target(root: Path, build_dir: Path, lab: Lab, variant: str, *, wrong: str | None = None,
               sources: tuple[bans.SourceFile, ...] | None = None) -> LabTarget:
    """The binary, student sources and static library of one build of `lab` (the student's, the
    reference, or the known-wrong submission `wrong`), as CMake reports them in the build
    directory's kit-targets.json. Before the build directory is configured there is no such file:
    then the paths are where KitLab.cmake puts them, and the binary is simply not there yet.
    `sources` overrides the files to scan (a submission's own files)."""
    name = f"wrong_{lab.id}_{wrong}" if wrong is not None else target_name(lab, variant)
    entry = read_targets(build_dir).get(name)
    worker = None
    if entry is not None:
        binary, archive = Path(entry["binary"]), Path(entry["archive"])
        worker = Path(entry["worker"]) if entry.get("worker") else None
        files = {file: Path(where) for file, where in entry["files"].items()}
    else:
        library = f"lab_{lab.id}_wrong_{wrong}" if wrong is not None else f"lab_{lab.id}_{variant}"
        binary = build_dir / "bin" / name
        archive = build_dir / "grader" / lab.id / f"lib{library}.a"
        dirs = [root / "solutions" / lab.id] if variant == "reference" and wrong is None else []
        dirs.append(root / "labs" / lab.id)
        files = {file: next((d / file for d in dirs if (d / file).is_file()), dirs[-1] / file)
                 for file in lab.student_files}
    if sources is None:
        sources = tuple(bans.SourceFile(files.get(file, root / "labs" / lab.id / file),
                                        _shown(files.get(file, root / "labs" / lab.id / file), root))
                        for file in lab.student_files)
    reference = read_targets(build_dir).get(target_name(lab, "reference"))
    listed_by = Path(reference["binary"]) if reference and name != target_name(lab, "reference") else None
    if worker is not None:
        listed_by = None  # a judge has no student code in it: its own list is the trusted one
    roots = tuple(sorted({where.parent for where in files.values()} |
                         {root / "labs" / lab.id, root / "common" / "include"}))
    return LabTarget(lab, binary, sources, archive, listed_by, roots, worker, variant=variant)


def read_targets(build_dir: Path) -> dict[str, dict]:
    """kit-targets.json of a configured build directory ({} when there is none)."""
    try:
        data = json.loads((build_dir / TARGETS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def run(targets: Sequence[LabTarget], options: RunOptions,
        on_result: ResultCallback | None = None) -> RunResult:
    """Grades every target. on_result is called (in this thread) as tests finish."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # The judges' contents before any student code runs: a worker runs as this user, so it could
    # replace a judge binary for the tests after its own (docs/grading.md, what a worker can still
    # do). A judge that changed while its lab was graded fails the whole lab.
    judges = {t.binary: _digest(t.binary) for t in targets if t.worker is not None}
    pinned = options.pinned_judges
    changed = {binary for binary, digest in judges.items()  # a missing judge pins nothing
               if pinned is not None and digest is not None
               and pinned.setdefault(binary, digest) != digest}
    result = RunResult(options.seed, options.variant, {}, started)
    # The device query (a lab binary's --kit_device: a process that makes a CUDA context, 0.2 to
    # 0.3 s) runs beside the labs' listing, which needs no GPU; its answer, and the GPU's lock,
    # are taken when the first test is about to run.
    with ThreadPoolExecutor(max_workers=1) as query, contextlib.ExitStack() as held:
        asked = query.submit(_device, targets)

        def device() -> tuple[bool, gpu_lock.GpuLock]:
            result.device = asked.result()
            lock = held.enter_context(gpu_lock.GpuLock(gpu_lock.path_for(result.device)))
            return result.gpu_available, lock

        result.labs = grade_labs(targets, options, on_result or (lambda _: None),
                                 timings=result.timings, device=device)
        if not result.device:
            result.device = asked.result()
    changed |= {binary for binary, digest in judges.items() if _digest(binary) != digest}
    for target, lab in zip(targets, result.labs):
        if target.binary in changed:
            _judge_changed(lab, target.binary)
    for binary in changed:
        _forget_judge(binary)
    return result


JUDGE_CHANGED = "not graded: the judge binary changed while this lab was graded"


def _judge_changed(lab: LabResult, binary: Path) -> None:
    why = (f"{binary} is not the file it was when grading began (in a batch, when its first "
           "submission was graded): something wrote to it (student code runs as this user). "
           "Nothing it reported is believed; the next build links it again.")
    lab.notes.append(f"{JUDGE_CHANGED}: {why}")
    for test in lab.tests:
        test.status, test.reason, test.output = Status.FAILED, JUDGE_CHANGED, why
        test.score = 0.0


def _forget_judge(binary: Path) -> None:
    """Removes a judge that changed, and the file its link names (bin/grade_NN -> judge_NN), so
    the next build links it again instead of keeping a file newer than its objects."""
    try:
        if binary.is_symlink():
            target = binary.parent / os.readlink(binary)
            if target.parent == binary.parent:
                target.unlink(missing_ok=True)
        binary.unlink(missing_ok=True)
        if binary.name.startswith("grade_"):
            (binary.parent / ("judge_" + binary.name[len("grade_"):])).unlink(missing_ok=True)
    except OSError:
        pass  # nothing to remove, or not ours to remove: the lab has failed either way


def _digest(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


SANITIZER_SESSIONS = 4
"""compute-sanitizer runs at once, at most (SANITIZER_SESSIONS_ENV sets another number): each
holds two processes (a judge and its worker) under the tool, and a GPU's memory for the tool's
state."""
SANITIZER_SESSIONS_ENV = "KIT_SANITIZER_SESSIONS"
"""Set to a number, the most compute-sanitizer runs of a grading at once instead. With 8, on an
H200 (session 31: the selftest of labs 02, 04 and 05, once with 4 and once with 8), the
sanitizer tests of lab 02's known-wrong run took 14 s from the first one's start to the last
one's end instead of 23, lab 04's 34 s instead of 37, but those runs' correctness phases were
only 2 s and 1 s shorter and lab 05's 1 s longer: the other tests end them. (The run with 4
also had the known-wrong builds beside it.) So 4 stays the default."""

COUNTER_SESSIONS = 8
"""Nsight Compute runs at once, at most (COUNTER_SESSIONS_ENV sets another number). A counter is
a count of one kernel's events (sectors, bank conflicts), the same whatever runs beside it, and
ncu profiles one kernel at a time across processes (its lock file): side by side, the processes'
starts overlap, not their profiling. A reference grading has four counter tests; the selftest's
known-wrong runs have up to 45 (lab 03): on an H200 their counter phases took 10 s (lab 03) and
5 s (lab 04) with 8 at once, 13 s and 6 s with 4 (session 30, one selftest each)."""
COUNTER_SESSIONS_ENV = "KIT_COUNTER_SESSIONS"
"""Set to a number, the most Nsight Compute runs at once instead (bench-grader --versus)."""


def _env_count(name: str) -> int | None:
    """The positive whole number the environment variable `name` holds, else None."""
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _counter_sessions() -> int:
    return _env_count(COUNTER_SESSIONS_ENV) or COUNTER_SESSIONS


def _sanitizer_sessions() -> int:
    return _env_count(SANITIZER_SESSIONS_ENV) or SANITIZER_SESSIONS


ALONE_KINDS = ("timed", "perf")
"""The kinds of test a process runs with nothing else on the GPU (counter tests run under
Nsight Compute, kitgrade.counters)."""

SHARD_MIN_TESTS = 10
"""A lab's correctness tests are split over several processes only when each gets at least this
many: a process costs a CUDA context (two, for a judge and its worker) besides its tests. At 10,
every lab of a full grading with --jobs 16 gets two (an H100 trace, session 20: the correctness
phase ended with the one process of lab 07, 10.2 s of work; each lab's tests take 3-8 s, and the
contexts that every process waits for about 0.18 s more per process)."""


@dataclass
class _Lab:
    """One lab while it is graded: its tests in the binary's own order, and their results."""

    target: LabTarget
    result: LabResult
    listing: list[protocol.TestSpec]
    timeout: float
    """The run's time limit of a test, or the lab's (limit() gives each test's own)."""
    extra: list[str]
    deliver: Callable[[TestResult], None]
    seed: int = 0
    fail_fast: bool = False
    by_id: dict[str, TestResult] = field(default_factory=dict)
    unrun: set[str] = field(default_factory=set)
    """Tests failed before anything ran (a banned library): they do not close the perf gate."""
    delivered: set[str] = field(default_factory=set)
    """Tests whose first verdict went to `deliver`: one graded again (_regrade_lone_timeouts)
    keeps its new verdict for the reports without being counted twice by a progress bar."""
    seconds: dict[str, float] = field(default_factory=dict)
    """How long each host or gpu test that passed or failed took in this run, where it was not
    its process's first (whose time holds the process's start): TestSeconds keeps them."""

    def finish(self, spec: protocol.TestSpec, outcome: protocol.Outcome) -> None:
        if spec.kind in ("host", "gpu") and not outcome.first and \
                outcome.status in (Status.PASSED, Status.FAILED):
            self.seconds[spec.id] = outcome.duration_s
        self.by_id[spec.id] = _result(self.target.lab, spec, outcome)
        if spec.id not in self.delivered:
            self.delivered.add(spec.id)
            self.deliver(self.by_id[spec.id])

    def limit(self, spec: protocol.TestSpec) -> float:
        """The time limit of `spec`: its target's own (LabTarget.timeout_s, alone_timeout_s for a
        timed or perf test), for a target with a Settle only in the steps it names, else the
        run's or the lab's (`timeout`)."""
        target = self.target
        if target.settle is None or spec.step in target.settle.steps:
            if spec.kind in ALONE_KINDS and target.alone_timeout_s is not None:
                return target.alone_timeout_s
            if target.timeout_s is not None:
                return target.timeout_s
        return self.timeout

    def run_sanitized(self, spec: protocol.TestSpec, tool: str | None, gpu_available: bool) -> None:
        """Runs one sanitizer test under its tool (`tool`: compute-sanitizer's path; None when it
        is missing, and the test is not run, as it is without a GPU)."""
        if self.settled(spec.step):
            outcome = protocol.Outcome(Status.NOT_RUN, SETTLED_REASON)
        elif not gpu_available:
            outcome = protocol.Outcome(Status.NOT_RUN, NO_DEVICE_REASON)
        elif tool is None:
            outcome = protocol.Outcome(Status.NOT_RUN, sanitizer.NOT_FOUND_REASON)
        else:
            outcome = sanitizer.run_test(tool, spec.kind, self.target.binary, spec.id, self.seed,
                                         self.limit(spec), self.extra, self.target.lab.number,
                                         self.target.worker)
        self.finish(spec, outcome)

    def run_sanitized_in_turn(self, specs: Sequence[protocol.TestSpec], tool: str | None,
                              gpu_available: bool) -> None:
        """Runs `specs` one after the other (run_sanitized): one that settles their step leaves
        the rest not run."""
        for spec in specs:
            self.run_sanitized(spec, tool, gpu_available)

    def to_run(self, spec: protocol.TestSpec) -> bool:
        """Whether `spec` is still to run: its lab has not failed fast and its step has not
        settled (the others get their verdict, unrun, at their turn)."""
        return not (self.fail_fast and self.failed()) and not self.settled(spec.step)

    def failed(self) -> bool:
        """Some test of the lab ran and did not pass."""
        return any(t.status.is_problem for t in self.by_id.values())

    def pending(self, kinds: Collection[str]) -> list[protocol.TestSpec]:
        return [s for s in self.listing if s.kind in kinds and s.id not in self.by_id]

    def settled(self, step: str) -> bool:
        """The selftest's known-wrong submission has lost `step` as expected (Settle)."""
        settle = self.target.settle
        if settle is None or step not in settle.steps:
            return False
        failing = [t for t in list(self.by_id.values()) if t.status.is_problem]
        return any(t.step == step for t in failing) and settle.shown(failing)

    def drop_settled(self, specs: Sequence[protocol.TestSpec]) -> list[protocol.TestSpec]:
        """`specs` less the tests of settled steps, which get their verdict (not run)."""
        left = []
        for spec in specs:
            if self.settled(spec.step):
                self.finish(spec, protocol.Outcome(Status.NOT_RUN, SETTLED_REASON))
            else:
                left.append(spec)
        return left

    def run_in_turn(self, first: Sequence[protocol.TestSpec],
                    then: Sequence[protocol.TestSpec]) -> None:
        """With fail_fast: runs `first`, then `then` only if nothing has failed."""
        self.run(first)
        if self.failed():
            self.leave_unrun(then)
        else:
            self.run(then)

    def leave_unrun(self, specs: Sequence[protocol.TestSpec]) -> None:
        """With fail_fast, after a failure: the tests of `specs` not yet run are not run."""
        for spec in specs:
            if spec.id not in self.by_id:
                self.finish(spec, protocol.Outcome(Status.NOT_RUN, FAIL_FAST_REASON))

    def run(self, specs: Sequence[protocol.TestSpec], fanout: int = 1,
            go: protocol.StartSignal | None = None) -> None:
        """Runs `specs` (in the binary's order) in as few processes as they need. With `fanout`
        above 1, a test that times out splits the tests after it over up to `fanout` processes
        side by side: one mistake in a shared function often hangs every test that calls it,
        and their time limits then overlap instead of adding up. `go`: the first process starts
        now and waits for it (protocol.StartSignal); cancelled, nothing runs."""
        specs = self.drop_settled(specs)
        if not specs:
            return
        by_id = {s.id: s for s in specs}
        goes_on = self.target.settle is not None and os.environ.get(SETTLE_ENV, "1") != "0"

        def stop(outcome: protocol.Outcome) -> bool:
            if self.fail_fast and outcome.status.is_problem:
                return True
            if fanout > 1 and outcome.status is Status.TIMED_OUT:
                return True
            left = [s for s in specs if s.id not in self.by_id]
            if goes_on and left and all(self.settled(s.step) for s in left):
                # Nothing left in this process can change a verdict: its tests would each get
                # SETTLED_REASON whatever they did (lab 01's known-wrong run had one whose worker
                # died at every test, 5 s of restarts at the end of its correctness phase).
                return True
            settles = outcome.status.is_problem and any(self.settled(s.step) for s in left)
            # With SETTLE_ENV a process that reported an ordinary failure is sound: it goes on.
            return settles and not (goes_on and outcome.status is Status.FAILED)

        def record(test_id: str, outcome: protocol.Outcome) -> None:
            spec = by_id[test_id]
            if goes_on and spec.id not in self.by_id and self.settled(spec.step):
                outcome = protocol.Outcome(Status.NOT_RUN, SETTLED_REASON)
            self.finish(spec, outcome)

        def abandon(test_id: str, seconds: float) -> bool:
            return seconds > SETTLED_GRACE_S and self.settled(by_id[test_id].step)

        # Each test's own limit; the judge gets the longest, and the runner cuts a test with a
        # shorter one off itself (protocol._run_process).
        limits = {s.id: self.limit(s) for s in specs}
        protocol.run_tests(self.target.binary, [s.id for s in specs], self.seed,
                           max(limits.values()), self.extra, record, stop=stop, go=go,
                           abandon=abandon if goes_on else None, limit_of=limits.__getitem__,
                           env=dict(self.target.env))
        if go is not None and go.cancelled:
            return
        left = [s for s in specs if s.id not in self.by_id]
        if self.fail_fast and self.failed():
            self.leave_unrun(left)
            return
        left = self.drop_settled(left)
        # A timeout spreads the tests left over up to `fanout` processes; not one whose step
        # has settled (a known-wrong submission's, in the selftest): that step's tests are not
        # run, and the tests left, of steps that do not hang, go on in one process instead of
        # costing two CUDA contexts each (lab 02's run spread 30 over 14 processes, whose
        # contexts took 4-7 s beside each other: session 35).
        timed_out = any(self.by_id[s.id].status is Status.TIMED_OUT and not self.settled(s.step)
                        for s in specs if s.id in self.by_id)
        if left and not (fanout > 1 and timed_out):
            self.run(left, fanout)  # stopped where a step settled: one process goes on
            return
        shards = min(fanout, len(left))
        if shards:
            with ThreadPoolExecutor(max_workers=shards) as pool:
                list(pool.map(self.run, [_slice(left, i, shards) for i in range(shards)]))

    def run_counted(self, spec: protocol.TestSpec, ncu_path: str | None,
                    gpu_available: bool, go: protocol.StartSignal | None = None) -> None:
        """Runs one counter test under Nsight Compute (`ncu_path`; None when it is missing, and
        the test is not run, as it is without a GPU). `go`: its process starts now and waits for
        it, cold (protocol.StartSignal); cancelled, nothing is recorded."""
        if self.fail_fast and self.failed():
            outcome = protocol.Outcome(Status.NOT_RUN, FAIL_FAST_REASON)
        elif self.settled(spec.step):
            outcome = protocol.Outcome(Status.NOT_RUN, SETTLED_REASON)
        elif not gpu_available:
            outcome = protocol.Outcome(Status.NOT_RUN, NO_DEVICE_REASON)
        elif ncu_path is None:
            outcome = protocol.Outcome(Status.NOT_RUN, counters.NO_NCU_REASON)
        else:
            worker = self.target.worker
            own = ncu.own_kernels(worker) if worker is not None else set()
            outcome = counters.run_test(ncu_path, self.target.binary, spec.id, self.seed,
                                        self.limit(spec), self.extra, own,
                                        self.target.lab.number, go=go)
            if go is not None and go.cancelled:
                return
        self.finish(spec, outcome)


def grade_labs(targets: Sequence[LabTarget], options: RunOptions, on_result: ResultCallback, *,
               timings: dict[str, float] | None = None,
               device: Callable[[], tuple[bool, gpu_lock.GpuLock]] | None = None
               ) -> list[LabResult]:
    """Grades the targets: first every lab's listing, inspection and ban check; then the
    correctness tests of all labs side by side (each lab's in one process, or a few when it has
    many tests and --jobs allows) and, beside them, the sanitizer tests, each in a process of its
    own under compute-sanitizer, up to SANITIZER_SESSIONS at once (after them with fail_fast);
    then, one lab at a time with nothing else on the GPU, its timed tests (each lab's timed
    process starts during the correctness phase and waits for its turn); then the counter tests
    (each under Nsight Compute, up to COUNTER_SESSIONS at once; the first of those processes
    start cold during the timed tests), while the perf processes start, once the counter
    processes have made their contexts; then, one lab at a time, if every correctness test of the
    lab passed, its perf tests. A timed or perf phase's first turn waits until every process
    started for it is ready (_wait_ready).
    `timings` gets the seconds of each phase (RunResult.timings). `device`, asked once the
    listing is done (run queries the device beside it), says whether there is a GPU and gives its
    lock (gpu_lock), held shared from the correctness tests on and exclusive from the timed tests
    on, so no other grading on the GPU runs beside those; without it, a GPU and no lock."""
    timings = timings if timings is not None else {}
    finished: queue.SimpleQueue[TestResult] = queue.SimpleQueue()
    drain = functools.partial(_drain, finished, on_result)

    clock = time.monotonic()
    # Each lab's listing, inspection and ban check are processes and file reads of its own: the
    # labs are prepared side by side, and keep their order.
    with ThreadPoolExecutor(max_workers=max(1, min(len(targets), options.jobs))) as pool:
        labs: list[_Lab | LabResult] = list(
            pool.map(lambda target: _prepare(target, options, finished.put), targets))
    drain()
    clock = _lap(timings, "list", clock)
    gpu_available, lock = device() if device is not None else (True, gpu_lock.GpuLock(None))
    clock = time.monotonic()  # a wait for the device query is in no phase (bench-grader: "other")

    graded = [lab for lab in labs if isinstance(lab, _Lab)]
    lock.shared()
    # The times of the last grading in this build directory split each lab's tests by time.
    store = TestSeconds(inspect.build_dir_of(graded[0].target.binary) if graded else None)
    work = []
    for lab in graded:
        tests = lab.pending(("host", "gpu"))
        first = [t for t in tests if t.step == lab.target.first_step]
        then = [t for t in tests if t.step != lab.target.first_step]
        if lab.fail_fast and first and then:
            work.append(functools.partial(lab.run_in_turn, first, then))
            continue
        shards = max(1, min(_lab_shards(options.jobs, len(graded)),
                            len(tests) // SHARD_MIN_TESTS))
        parts = _split(tests, shards, store.of(lab.target.lab.id)) if tests else []
        work += [functools.partial(lab.run, part, options.jobs) for part in parts if part]

    def sanitizer_work() -> list[Callable[[], None]]:
        return _sanitizer_tasks(graded, sanitizer.find_sanitizer(), gpu_available)

    sessions = min(options.jobs, _sanitizer_sessions())
    early_timed: dict[int, _Early] = {}

    def start_timed_early() -> None:
        # Once a correctness process has ended, every one has made its CUDA contexts (the driver
        # makes them one at a time): each lab's timed process starts now and makes its own while
        # the other correctness tests run, then waits for its turn.
        early_timed.update(_start_early(graded, "timed", gpu_available))

    if options.fail_fast:
        # kit.py mutate: a mutant's sanitizer tests wait for its correctness tests, which usually
        # stop it first; its timed tests run only if nothing failed, so none starts early.
        _side_by_side(work, options.jobs, finished, on_result)
        _regrade_lone_timeouts(graded)
        drain()
        clock = _lap(timings, "correctness", clock)
        _side_by_side(sanitizer_work(), sessions, finished, on_result)
        clock = _lap(timings, "sanitizer", clock)
    else:
        # Sanitizer tests are correctness tests too, with nothing timed: they run beside the
        # others, and the sanitizer phase's seconds are those it ran on after them.
        ends = _side_by_side_groups([(work, options.jobs), (sanitizer_work(), sessions)],
                                    finished, on_result, first_done=start_timed_early)
        _regrade_lone_timeouts(graded)
        drain()
        done = time.monotonic()
        timings["correctness"] = timings.get("correctness", 0.0) + (ends[0] - clock) + (
            done - max(ends))
        timings["sanitizer"] = timings.get("sanitizer", 0.0) + max(0.0, ends[1] - ends[0])
        clock = done

    lock.exclusive()
    # The counter tests' Nsight Compute processes start now, cold: ncu's own start-up (about 0.5
    # s) overlaps the timed tests, and nothing touches the GPU before their turn.
    ncu_path = ncu.find_ncu()
    counter_sessions = min(options.jobs, _counter_sessions())
    early_counted = _start_counted_early(graded, ncu_path, gpu_available, counter_sessions)
    _wait_ready(early_timed.values())
    for lab in graded:
        _timed(lab, early_timed.get(id(lab)))
        drain()
    clock = _lap(timings, "timed", clock)

    # Each lab's perf process starts ahead of its turn (protocol.StartSignal): its CUDA contexts
    # are made while the counter tests run, which count events and time nothing, and its first
    # test waits for the runner's signal, given when every other test has ended. It starts once
    # the counter tests' processes, given their turn now, have made their contexts (the driver
    # makes contexts one at a time: theirs first, so that the counter tests end sooner).
    early_perf: dict[int, _Early] = {}

    def start_perf() -> None:
        _wait_ready(early for _, _, early in early_counted)
        early_perf.update(_start_early(graded, "perf", gpu_available))
    perf_starter = threading.Thread(target=start_perf, name="perf start", daemon=True)

    # Counter tests, each under Nsight Compute, up to COUNTER_SESSIONS at once, after the timed
    # tests and before the perf tests: nothing timed runs beside them. (Beside the correctness
    # tests they made that phase 5.2 s longer on an H100, 1.2 s more in all; their processes
    # started under ncu ahead of their turn, during the correctness tests, saved 0.68 s of this
    # phase but cost 0.21 s in all (0.47 s in session 24), with a test not passed in two of three
    # such gradings: docs/engine_log.md.)
    started = {(id(lab), spec.id) for lab, spec, _ in early_counted}

    def counted_early(lab: _Lab, spec: protocol.TestSpec, early: _Early) -> None:
        if not _take_turn(early, lab.to_run(spec)):
            lab.run_counted(spec, ncu_path, gpu_available)  # its verdict now, or it runs anew

    # The early ones first: the side-by-side runs take the work in order.
    perf_starter.start()
    _side_by_side([functools.partial(counted_early, lab, spec, early)
                   for lab, spec, early in early_counted] +
                  [functools.partial(lab.run_counted, spec, ncu_path, gpu_available)
                   for lab in graded for spec in lab.pending((counters.KIND,))
                   if (id(lab), spec.id) not in started],
                  counter_sessions, finished, on_result)
    clock = _lap(timings, "counters", clock)

    perf_starter.join()
    _wait_ready(early_perf.values())
    for lab in graded:
        _perf(lab, gpu_available, early_perf.get(id(lab)))
        drain()
    _lap(timings, "perf", clock)

    store.save(graded)
    results = []
    for lab in labs:
        if isinstance(lab, _Lab):
            lab.result.tests = [lab.by_id[s.id] for s in _step_order(lab.target.lab, lab.listing)]
            lab.result.notes += review_flags(lab.result.tests)
            if lab.result.variant == "student":
                graded_speed(lab.result.tests)
            lab = lab.result
        results.append(lab)
    return results


REGRADED_KEY = "graded_alone"
"""The measurement a test graded again alone carries: what happened beside others, and alone."""


def _regrade_lone_timeouts(labs: Sequence[_Lab]) -> None:
    """Grades again, with nothing beside it, a correctness test that timed out alone in its step
    while other tests of the run timed out too; the verdict alone stands.

    A kernel that never ends shares the GPU with every process beside it, and a test that
    launches many kernels waits for its share at each launch: beside a few such hangs, a right
    test can run out of time (lab 02's selftest saw it at 20 s). A mistake that hangs usually
    hangs every test of its step that calls the code, so a timeout with others in its step
    stands as it is; a lone one, with hangs elsewhere in the run, may be the neighbours' doing
    and costs one more time limit to settle; once one of a lab's timeouts has repeated alone, its
    code hangs, and its other lone ones stand too (at most one time limit more per lab). A run
    with a single timeout had no hang beside it. Not when failing fast (kit.py mutate): there
    every mutant that hangs stops at its first timeout, so each would look lone and cost a time
    limit more, one after the other."""
    def timed_out(lab: _Lab, spec: protocol.TestSpec) -> bool:
        result = lab.by_id.get(spec.id)
        return (spec.kind in ("host", "gpu") and result is not None
                and result.status is Status.TIMED_OUT)

    timeouts = [(lab, spec) for lab in labs for spec in lab.listing if timed_out(lab, spec)]
    if len(timeouts) < 2:
        return
    hung: set[int] = set()  # id() of each graded lab (a submission's) that hung again alone
    for lab, spec in timeouts:
        if lab.fail_fast or id(lab) in hung or lab.settled(spec.step) or \
                sum(other is lab and s.step == spec.step for other, s in timeouts) > 1:
            continue
        del lab.by_id[spec.id]
        lab.run([spec])
        result = lab.by_id[spec.id]
        if result.status is Status.TIMED_OUT:
            hung.add(id(lab))
        result.measurements[REGRADED_KEY] = (
            f"timed out beside {len(timeouts) - 1} other timed-out test(s); graded again alone: "
            f"{reports.describe(result)}")


def _side_by_side(work: Sequence[Callable[[], None]], workers: int,
                  finished: queue.SimpleQueue[TestResult], on_result: ResultCallback) -> None:
    """Runs `work` on up to `workers` threads, passing each result in `finished` to `on_result`
    (in this thread) as it comes."""
    _side_by_side_groups([(work, workers)], finished, on_result)


def _side_by_side_groups(groups: Sequence[tuple[Sequence[Callable[[], None]], int]],
                         finished: queue.SimpleQueue[TestResult], on_result: ResultCallback,
                         first_done: Callable[[], None] | None = None) -> list[float]:
    """Runs each group's work on its own pool of up to its number of threads, all groups at once,
    passing results to `on_result` (in this thread) as they come; returns when every group is
    done, with the time.monotonic() at which each one finished. `first_done` is called (in this
    thread) once the first task of the first group has ended. On any exception (e.g. Ctrl-C) it
    stops the tests running, which run in sessions of their own (nothing else would stop them),
    and cancels the rest."""
    pools = [ThreadPoolExecutor(max_workers=max(1, workers)) for _, workers in groups]
    ends = [0.0] * len(groups)
    try:
        futures = [[pool.submit(task) for task in work] for pool, (work, _) in zip(pools, groups)]
        while True:
            for i, group in enumerate(futures):
                if not ends[i] and all(f.done() for f in group):
                    ends[i] = time.monotonic()
            if first_done is not None and (not futures[0] or any(f.done() for f in futures[0])):
                first_done()
                first_done = None
            if all(ends):
                break
            try:
                on_result(finished.get(timeout=0.05))
            except queue.Empty:
                pass
        _drain(finished, on_result)
        for group in futures:
            for future in group:
                future.result()
    except BaseException:
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        protocol.kill_running()
        raise
    for pool in pools:
        pool.shutdown()
    return ends


def _drain(finished: queue.SimpleQueue[TestResult], on_result: ResultCallback) -> None:
    """Passes every result waiting in `finished` to `on_result`."""
    while True:
        try:
            on_result(finished.get_nowait())
        except queue.Empty:
            return


SECONDS_FILE = "kit-test-seconds.json"
"""In a build directory: how long each correctness test took when it was last graded there."""
BALANCE_ENV = "KIT_SHARD_BALANCE"
"""Unless set to 0, a lab's correctness tests are split over its processes by the times of the
last grading (TestSeconds) where most are known; otherwise interleaved. On an H200 (session 30,
`bench-grader --versus KIT_SHARD_BALANCE=1`, three interleaved rounds) the correctness phase took
6.70 s (6.69-6.92) with it, 7.10 s (6.89-7.37) without: lab 07's two processes had 4.3 and 2.5 s
of tests interleaved, and its last ended 0.6 s after every other lab's. (On an H100 of
2026-11-27, with the kit of then, it was 0.45 s slower, and off by default until session 30.)"""


class TestSeconds:
    """How long each host and gpu test took when its lab was last graded in this build directory
    (SECONDS_FILE), so that a lab's tests can be split over its processes by time rather than by
    count. Only the split depends on it: a file that is missing, unreadable or written by anyone
    else changes how long a grading takes, never a verdict."""

    __test__ = False

    def __init__(self, build_dir: Path | None) -> None:
        self.path = build_dir / SECONDS_FILE if build_dir is not None else None
        self.known: dict[str, dict[str, float]] = {}
        try:
            data = json.loads(self.path.read_text()) if self.path is not None else {}
        except (OSError, ValueError):
            data = {}
        if isinstance(data, dict):
            for lab, tests in data.items():
                if isinstance(tests, dict):
                    self.known[str(lab)] = {str(t): float(v) for t, v in tests.items()
                                            if isinstance(v, (int, float)) and 0 <= v < 1e4}

    def of(self, lab: str) -> dict[str, float]:
        return self.known.get(lab, {})

    def save(self, labs: Sequence[_Lab]) -> None:
        """Adds this run's times (a test's newest time replaces its older one)."""
        if self.path is None or not any(lab.seconds for lab in labs):
            return
        for lab in labs:
            self.known.setdefault(lab.target.lab.id, {}).update(
                {t: round(v, 4) for t, v in lab.seconds.items()})
        try:
            partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps(self.known, indent=1, sort_keys=True))
            os.replace(partial, self.path)
        except OSError:
            pass


SHARDS_ENV = "KIT_LAB_SHARDS"
"""The most processes a lab's correctness tests are split over, when set (bench-grader --versus):
by default --jobs divided by the labs graded (2 for 7 labs at --jobs 16)."""


def _lab_shards(jobs: int, labs: int) -> int:
    """The most processes each lab's correctness tests may take (SHARDS_ENV)."""
    return _env_count(SHARDS_ENV) or jobs // max(1, labs)


SANITIZER_COST = {"synccheck": 0, "initcheck": 1, "memcheck": 2, "racecheck": 3}
"""The sanitizer tools from the quickest to the slowest on the kit's tests (lab 04 on an H100,
session 26: synccheck 0.4-5 s a test, racecheck 2-6 s, and 19-62 s where it reports hazards)."""


def _sanitizer_cost(spec: protocol.TestSpec) -> int:
    return SANITIZER_COST.get(spec.kind, len(SANITIZER_COST))


def _sanitizer_tasks(labs: Sequence[_Lab], tool: str | None,
                     gpu_available: bool) -> list[Callable[[], None]]:
    """The sanitizer tests of `labs` as tasks, the longest first, since a few sessions run them
    (SANITIZER_SESSIONS) and the last one to start ends the phase. A step a known-wrong
    submission must lose (Settle) has its sanitizer tests one after the other, the quickest tool
    first: once one has lost the step, the others are not run. These turns come first (a tool
    that reports errors is the slowest: lab 04's synccheck tests that found a divided barrier
    took 10-11 s each on an H200, session 36, and started last, 9 s after every other test of
    the run had ended); then every other sanitizer test, a task of its own, the slowest tool
    first (SANITIZER_COST). A lab that failed fast leaves its sanitizer tests not run."""
    turns, alone = [], []
    for lab in labs:
        if lab.fail_fast and lab.failed():
            lab.leave_unrun(lab.pending(SANITIZER_TOOLS))
            continue
        in_turn: dict[str, list[protocol.TestSpec]] = {}
        for spec in lab.pending(SANITIZER_TOOLS):
            if lab.target.settle is not None and spec.step in lab.target.settle.steps:
                in_turn.setdefault(spec.step, []).append(spec)
            else:
                alone.append((lab, spec))
        turns += [functools.partial(lab.run_sanitized_in_turn, sorted(specs, key=_sanitizer_cost),
                                    tool, gpu_available) for specs in in_turn.values()]
    alone.sort(key=lambda pair: -_sanitizer_cost(pair[1]))  # stable: the listing's order
    return turns + [functools.partial(lab.run_sanitized, spec, tool, gpu_available)
                    for lab, spec in alone]


def _split(tests: list[protocol.TestSpec], shards: int,
           seconds: dict[str, float]) -> list[list[protocol.TestSpec]]:
    """`tests` over `shards` processes. With the times of most of them known (TestSeconds), and
    unless KIT_SHARD_BALANCE=0, longest first, each to the process with the least so far (a test
    without a time counts as the median of those with one); each process then runs its tests in
    the listing's order. Otherwise interleaved (_slice)."""
    timed = [seconds[s.id] for s in tests if s.id in seconds]
    if shards <= 1 or len(timed) * 2 < len(tests) or os.environ.get(BALANCE_ENV) == "0":
        return [_slice(tests, i, shards) for i in range(shards)]
    typical = sorted(timed)[len(timed) // 2]
    cost = {s.id: seconds.get(s.id, typical) for s in tests}
    order = {s.id: i for i, s in enumerate(tests)}
    parts: list[list[protocol.TestSpec]] = [[] for _ in range(shards)]
    load = [0.0] * shards
    for spec in sorted(tests, key=lambda s: (-cost[s.id], order[s.id])):
        i = load.index(min(load))
        parts[i].append(spec)
        load[i] += cost[spec.id]
    return [sorted(part, key=lambda s: order[s.id]) for part in parts]


def _slice(tests: list[protocol.TestSpec], i: int, shards: int) -> list[protocol.TestSpec]:
    """The i-th of `shards` interleaved parts of `tests`: every shards-th test from the i-th.
    Neighbours in a listing are often one test at growing sizes, or the slow tests of one
    suite (lab 07's round trips, each holding a stream): interleaved, they spread over the
    processes instead of making one of them the last to finish."""
    return tests[i::shards]


def _lap(timings: dict[str, float], phase: str, since: float) -> float:
    now = time.monotonic()
    timings[phase] = round(timings.get(phase, 0.0) + now - since, 3)
    return now


def _step_order(lab: Lab, specs: Sequence[protocol.TestSpec]) -> list[protocol.TestSpec]:
    order = {step.id: i for i, step in enumerate(lab.steps)}
    return sorted(specs, key=lambda s: order[s.step])  # stable: the binary's order in a step


def _prepare(target: LabTarget, options: RunOptions,
             deliver: Callable[[TestResult], None]) -> _Lab | LabResult:
    """Lists a lab's tests and applies the checks made before anything runs: the inspection of
    the student's objects (a refusal fails every test unrun) and the banned libraries (the tests
    of a step a found one bans fail unrun). A LabResult when the lab cannot be graded."""
    lab = target.lab
    variant = target.variant or options.variant
    result = LabResult(lab.id, lab.title, variant, {s.id: s.title for s in lab.steps})
    if not target.binary.is_file():
        result.error = f"binary not built: {target.binary}"
        return result
    try:
        if target.listed_by is not None and target.listed_by.is_file():
            listing = protocol.list_tests(target.listed_by, lab.id, "reference", result.steps)
        else:
            listing = protocol.list_tests(target.binary, lab.id, variant, result.steps,
                                          target.judge_args(variant))
    except protocol.ProtocolError as err:
        result.error = f"could not list tests of {target.binary}: {err}"
        return result
    graded = _Lab(target, result, listing, options.timeout_s or lab.timeout_s,
                  target.judge_args(variant), deliver, seed=options.seed,
                  fail_fast=options.fail_fast)

    if target.archive is not None and target.archive.is_file() and target.inspect:
        # The student's objects are read before anything runs (kitgrade.inspect): a call that lab
        # code may not make, or code that runs before main(), fails the whole lab unrun.
        inspection = target.inspected()
        result.notes += inspection.notes
        refused = inspection.verdict()
        if refused is not None:
            for spec in _step_order(lab, listing):
                graded.finish(spec, protocol.Outcome(Status.FAILED, *refused))
            return graded

    if lab.banned_libraries:
        found = bans.check(lab, target.sources, target.archive)
        result.notes += found.notes
        for spec in _step_order(lab, listing):
            verdict = found.verdict_for(spec.step)
            if verdict is not None:
                graded.finish(spec, protocol.Outcome(Status.FAILED, *verdict))
                graded.unrun.add(spec.id)
    if options.kinds is not None or options.leave_out:
        for spec in listing:
            chosen = options.kinds is None or spec.kind in options.kinds
            if (not chosen or spec.id in options.leave_out) and spec.id not in graded.by_id:
                graded.finish(spec, protocol.Outcome(Status.NOT_RUN, NOT_SELECTED_REASON))
    return graded


def _correctness_results(lab: _Lab) -> list[TestResult]:
    """The results of the lab's correctness tests that ran (tests failed by a ban never ran)."""
    return [lab.by_id[s.id] for s in lab.listing
            if is_correctness(s.kind) and s.id in lab.by_id and s.id not in lab.unrun]


def _gate_open(correctness: Sequence[TestResult]) -> bool:
    """Whether the perf tests may run: every correctness test that ran passed."""
    return all(t.status is Status.PASSED for t in correctness)


EARLY_ENV = {"timed": "KIT_TIMED_EARLY", "perf": "KIT_PERF_EARLY"}
"""Set to 0, the timed (perf) processes start at their turn instead of ahead of it."""
_Early = tuple[protocol.StartSignal, threading.Thread]
"""A process started ahead of its turn: its signal and the thread that waits for its tests."""


def _start_early(labs: Sequence[_Lab], kind: str, gpu_available: bool) -> dict[int, _Early]:
    """Starts, for each lab with `kind` tests to run ("timed" or "perf"; for perf, only if every
    correctness test has passed so far), the process of those tests, waiting for its turn
    (protocol.StartSignal): {id(lab): (signal, thread)}."""
    if not gpu_available or os.environ.get(EARLY_ENV[kind], "1") == "0":
        return {}
    early = {}
    for lab in labs:
        specs = [spec for spec in lab.pending((kind,)) if lab.to_run(spec)]
        if not specs or (
                kind == "perf" and (lab.failed() or not _gate_open(_correctness_results(lab)))):
            continue
        early[id(lab)] = _ahead(f"{kind} {lab.target.lab.id}", protocol.StartSignal(),
                                lambda go, lab=lab, specs=specs: lab.run(specs, go=go))
    return early


def _ahead(name: str, signal: protocol.StartSignal,
           work: Callable[[protocol.StartSignal], None]) -> _Early:
    """Runs work(signal) in a thread of its own (a test process started ahead of its turn). An
    exception cancels the signal: the tests run anew at their turn, where it raises as always.
    Work that ends, whether or not it started a process (every test it had may have settled
    meanwhile), leaves nothing to wait for: the signal is marked ready, so the phase's first
    turn does not wait READY_WAIT_S for it (lab 02's known-wrong run did, 10 s, in session 35)."""
    def body() -> None:
        try:
            work(signal)
        except Exception:  # noqa: BLE001 - raised again at its turn
            signal.cancel()
        finally:
            signal.mark_ready()
    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    return signal, thread


COUNTERS_EARLY_ENV = "KIT_COUNTERS_EARLY"
"""Set to 0, the counter tests' processes start at their turn instead of during the timed tests."""


def _start_counted_early(labs: Sequence[_Lab], ncu_path: str | None, gpu_available: bool,
                         sessions: int) -> list[tuple[_Lab, protocol.TestSpec, _Early]]:
    """Starts the first `sessions` counter tests' processes under Nsight Compute, cold: each
    waits for its turn before it touches the GPU (protocol.StartSignal). Those whose lab has
    failed fast, or whose step has settled, are left for their turn, which gives them their
    verdict."""
    if not gpu_available or ncu_path is None or os.environ.get(COUNTERS_EARLY_ENV, "1") == "0":
        return []
    specs = [(lab, spec) for lab in labs for spec in lab.pending((counters.KIND,))
             if lab.to_run(spec)]
    return [(lab, spec, _ahead(f"counter {spec.id}", protocol.StartSignal(cold=True),
                               lambda go, lab=lab, spec=spec:
                               lab.run_counted(spec, ncu_path, gpu_available, go=go)))
            for lab, spec in specs[:sessions]]


READY_WAIT_S = 10.0
"""The longest the runner waits for the processes started ahead of a phase to be ready (their
contexts made, their setup done) before it gives the phase's first turn: a context made, or
memory pinned, beside a timed or perf test would slow what it times."""


def _wait_ready(early: Iterable[_Early]) -> None:
    """Waits, up to READY_WAIT_S in all, until every process of `early` is ready or has ended."""
    until = time.monotonic() + READY_WAIT_S
    for signal, _ in early:
        signal.wait_ready(max(0.0, until - time.monotonic()))


def _take_turn(early: _Early | None, go: bool) -> bool:
    """Gives an early process its turn (`go`) or cancels it; True when its tests ran (False: none
    was started, or it was cancelled, ended before its turn or raised, and they run anew)."""
    if early is None:
        return False
    signal, thread = early
    if go:
        signal.give()
    else:
        signal.cancel()
    thread.join()
    return not signal.cancelled


def _timed(lab: _Lab, early: _Early | None) -> None:
    """Runs the lab's timed tests, with nothing else on the GPU (in its early process, if it has
    one); with fail_fast, after a failure, each is not run."""
    stopped = lab.fail_fast and lab.failed()
    if early is not None and not stopped and any(
            lab.settled(spec.step) for spec in lab.pending(("timed",))):
        # A step settled (the kit's selftest) since the early process started with its tests:
        # it is cancelled, and the tests left run anew without those of settled steps.
        _take_turn(early, False)
        early = None
    if _take_turn(early, not stopped):
        return
    if stopped:
        lab.leave_unrun(lab.pending(("timed",)))
    else:
        lab.run(lab.pending(("timed",)))


def _perf(lab: _Lab, gpu_available: bool, early: _Early | None = None) -> None:
    """Runs the lab's perf tests if every correctness test that ran passed (tests failed by a
    ban never ran, so they do not close the gate); else each is not run, saying why. `early`:
    the lab's perf process, started ahead of its turn (_start_early): signalled to go when the
    gate is open, cancelled when it is not (or ended before its turn, or raised: then they run
    anew, here)."""
    correctness = _correctness_results(lab)
    gate_open = _gate_open(correctness)
    if _take_turn(early, gate_open):
        return
    closing = [t for t in correctness
               if t.status is not Status.PASSED and not t.lacked_device(gpu_available)]
    # Closed only because a GPU was missing: say so, not that a correctness step failed; closed
    # by tests that could not run (no compute-sanitizer): say why they did not.
    if not closing:
        gate_reason = NO_DEVICE_REASON
    elif all(t.status is Status.NOT_RUN for t in closing):
        gate_reason = f"correctness tests were not run ({closing[0].reason})"
    else:
        gate_reason = PERF_GATE_REASON
    perf = lab.pending(("perf",))
    if gate_open:
        lab.run(perf)
    else:
        for spec in perf:
            lab.finish(spec, protocol.Outcome(Status.NOT_RUN, gate_reason))


PLAUSIBLE_PATH = Path(__file__).resolve().parents[1] / thresholds.PLAUSIBLE_FILE


def review_flags(tests: Sequence[TestResult], path: Path = PLAUSIBLE_PATH) -> list[str]:
    """Notes for an instructor: each performance result above the most its lab's technique can
    plausibly reach (grader/plausible.conf), with the numbers. Flagged, never failed: the tests
    decide the score; this says which scores to look at by hand."""
    try:
        plausible = thresholds.load_plausible(path)
    except thresholds.ThresholdsError as err:
        return [f"plausibility not checked: {err}"]
    notes = []
    for test in tests:
        key = test.measurements.get("threshold_key")
        try:
            ratio = float(test.measurements.get("ratio", ""))
        except ValueError:
            continue
        if key in plausible and ratio > plausible[key]:
            note = (f"review by hand: {test.id} reached ratio {ratio:g} ('{key}'), above the "
                    f"{plausible[key]:g} this lab's technique can plausibly reach "
                    f"(grader/plausible.conf): skipped or cached work, or a library in disguise?")
            test.measurements["review"] = note
            notes.append(note)
    return notes


THRESHOLDS_ROOT = Path(__file__).resolve().parents[2]


def graded_speed(tests: Sequence[TestResult], path: Path | None = None) -> None:
    """Perf tests of keys graded on a scale (a floor in grader/thresholds.conf) that missed the
    student bar earn points in proportion to how far their ratio got from the floor to the bar:
    points * (ratio - floor) / (bar - floor), none at or below the floor. The test stays failed;
    its measurements `graded_score` and `graded` and its reason say what it earned. The ratio,
    bar and section are the judge's measurements."""
    try:
        by_section = thresholds.floors(path or thresholds.thresholds_path(THRESHOLDS_ROOT))
    except thresholds.ThresholdsError:
        return  # grading stopped on a bad file before any test ran (cli.check_thresholds)
    for test in tests:
        m = test.measurements
        if test.kind != "perf" or test.status is not Status.FAILED:
            continue
        section = "" if m.get("threshold_section", "default") == "default" else m["threshold_section"]
        floor = by_section.get(section, {}).get(m.get("threshold_key", ""))
        if floor is None and section:
            floor = by_section.get("", {}).get(m.get("threshold_key", ""))
        try:
            ratio, bar = float(m["ratio"]), float(m["threshold"])
        except (KeyError, ValueError):
            continue
        if floor is None or bar <= floor:
            continue
        earned = round(test.points * min(1.0, max(0.0, (ratio - floor) / (bar - floor))), 2)
        m["graded_score"] = f"{earned:g}"
        m["graded"] = (f"graded speed: {earned:g} of {test.points:g} points (ratio {ratio:g} "
                       f"between the floor {floor:g}, no points, and the bar {bar:g}, all)")
        test.reason = f"{test.reason}; {m['graded']}" if test.reason else m["graded"]
        test.score = earned


def _result(lab: Lab, spec: protocol.TestSpec, outcome: protocol.Outcome) -> TestResult:
    step = lab.find_step(spec.step)
    assert step is not None  # protocol.list_tests only accepts the lab's steps
    title = spec.title
    visibility = lab.hidden_visibility if spec.hidden else step.visibility
    if title.lower().startswith(HIDDEN_MARKER):
        title, visibility = title[len(HIDDEN_MARKER):].strip(), "hidden"
    # A crash, a hang or a CUDA error: why it likely happened, first (kitgrade.coach).
    output = outcome.output
    hint = coach.advice(lab.number, outcome.status, outcome.reason, output)
    if hint is not None:
        output = f"{hint}\n{output}" if output else hint
    return TestResult(
        lab=lab.id, step=spec.step, id=spec.id, title=title, kind=spec.kind,
        points=spec.points, status=outcome.status, reason=outcome.reason,
        output=output, duration_s=round(outcome.duration_s, 3),
        measurements=outcome.measurements, visibility=visibility, hidden=spec.hidden,
    )


def _device(targets: Sequence[LabTarget]) -> dict[str, object]:
    """The GPU as seen by the first lab binary that exists (they all link the same code)."""
    for target in targets:
        if target.binary.is_file():
            return protocol.query_device(target.binary)
    return {"available": False, "reason": "no lab binary to query the device with"}
