"""The protocol between the runner and a lab's GoogleTest binary.

* ``BIN --kit_list``   -> one JSON object describing every test (id, step, kind, points, title,
  and ``hidden``: true for an instructor-only test, KIT_HIDDEN_TEST; absent means false)
* ``BIN --kit_device`` -> one JSON object describing the GPU, or why there is none
* ``BIN --gtest_filter=<id>:<id>... --kit_verdicts=<dir>`` with KIT_SEED and KIT_NONCE_FD set
  -> runs those tests, writing each one's verdict to <dir>/NNNNNN.json as it ends

One process runs many tests (run_tests). The runner reads each verdict as it appears. When the
process crashes, hangs (no verdict within the per-test limit), exits early or writes something
that is not an authentic verdict, the test in flight (the first one left, in the binary's own
order, which --kit_list gives) gets its verdict from that, exactly as if it had run alone, and
the binary starts again on the tests after it. A test that left the CUDA context broken reports
so in its verdict ("kit_context_lost") and its process ends; the tests left start afresh without
blame. Each process runs in its own process group, with its working directory in a scratch
folder, so a timeout kills everything it started and files it leaves behind are thrown away.
A verdict comes only from the verdict files and the exit status: the output is under the
student's control (a kernel can print "[  PASSED  ]") and is only shown, never parsed.

Verdicts are authenticated. In a grader that is not a judge, the student's code runs in the test
process and can read its argv, so it could write a passing verdict and exit(0). The runner
therefore sends a fresh random key (the nonce) per process through a pipe whose descriptor
number is in KIT_NONCE_FD; the kit's main() (common/src/test_main.cpp) reads and closes it before
any test runs, builds each verdict from GoogleTest's in-memory results, and appends the line
``kit-hmac-sha256 <HMAC-SHA-256 of the rest under the key>``. A verdict file without that line,
or with a wrong one, ends the process and makes the test in flight "crashed: no authentic
result (...)". See docs/grading.md for what this does and does not protect against.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .model import KINDS, Status

PROBE_TIMEOUT_S = 60.0
"""Limit for --kit_list and --kit_device; CUDA initialisation can take a few seconds."""

OUTPUT_TAIL_LINES = 40
OUTPUT_MAX_CHARS = 8000

GTEST_KEYS = frozenset({
    "name", "classname", "file", "line", "status", "result", "timestamp", "time",
    "failures", "skipped", "value_param", "type_param",
})
"""Keys GoogleTest writes for every test; anything else is a property the test recorded."""

_TEST_ID = re.compile(r"^[A-Za-z0-9_/]+\.[A-Za-z0-9_/]+$")

NONCE_FD_ENV = "KIT_NONCE_FD"
SIGNATURE_PREFIX = b"kit-hmac-sha256 "
_SIGNATURE_LINE = re.compile(rb"^kit-hmac-sha256 ([0-9a-f]{64})$")
"""A full GoogleTest name with no character that --gtest_filter would treat as a pattern."""

_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


class ProtocolError(Exception):
    """A binary did not answer --kit_list (or answered something malformed)."""


@dataclass(frozen=True)
class TestSpec:
    id: str
    step: str
    kind: str
    points: float
    title: str
    hidden: bool = False
    """An instructor-only test (grader/NN_name/hidden/): graded with the lab's hidden_visibility."""

    __test__ = False


@dataclass
class Outcome:
    """What running one test produced, before it is attached to its spec."""

    status: Status
    reason: str = ""
    output: str = ""
    measurements: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    first: bool = False
    """The first test its process judged: its duration holds the process's start (its CUDA
    contexts) besides the test."""


def list_tests(binary: Path, lab: str, variant: str, steps: Collection[str],
               extra: Sequence[str] = ()) -> list[TestSpec]:
    """Runs ``BIN --kit_list`` and validates it against the expected lab, variant and steps.
    `extra`: more arguments (a judge's worker and variant, see runner.LabTarget.judge_args)."""
    returncode, stdout, stderr = _probe(binary, "--kit_list", *extra)
    if returncode is None:
        raise ProtocolError(f"--kit_list did not finish within {PROBE_TIMEOUT_S:g} s")
    if returncode != 0:
        detail = _last_line(stderr) or _last_line(stdout)
        raise ProtocolError(f"--kit_list {exit_text(returncode)}" + (f": {detail}" if detail else ""))
    return parse_listing(stdout, lab, variant, steps)


def parse_listing(text: str, lab: str, variant: str, steps: Collection[str]) -> list[TestSpec]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ProtocolError(f"--kit_list did not print JSON ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        raise ProtocolError("--kit_list printed JSON without a 'tests' list")
    if data.get("lab") != lab:
        raise ProtocolError(f"it reports lab {data.get('lab')!r}, expected {lab!r}")
    if data.get("variant") != variant:
        raise ProtocolError(f"it reports variant {data.get('variant')!r}, expected {variant!r}")
    specs = [_parse_spec(item, f"tests[{i}]", steps) for i, item in enumerate(data["tests"])]
    if not specs:
        raise ProtocolError("it lists no tests")
    seen: set[str] = set()
    for spec in specs:
        if spec.id in seen:
            raise ProtocolError(f"test {spec.id!r} is listed twice")
        seen.add(spec.id)
    return specs


def _parse_spec(item: Any, where: str, steps: Collection[str]) -> TestSpec:
    if not isinstance(item, dict):
        raise ProtocolError(f"{where}: expected an object")
    for key in ("id", "step", "kind", "title"):
        if not isinstance(item.get(key), str) or not item[key]:
            raise ProtocolError(f"{where}.{key}: expected a non-empty string")
    points = item.get("points")
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
        raise ProtocolError(f"{where}.points: expected a number >= 0")
    if not _TEST_ID.match(item["id"]):
        raise ProtocolError(f"{where}.id: {item['id']!r} is not a plain GoogleTest name")
    if item["kind"] not in KINDS:
        raise ProtocolError(f"{where}.kind: {item['kind']!r} is not one of {', '.join(KINDS)}")
    if item["step"] not in steps:
        raise ProtocolError(
            f"{where}.step: {item['step']!r} is not a step of this lab in grader/labs.json"
        )
    hidden = item.get("hidden", False)
    if not isinstance(hidden, bool):
        raise ProtocolError(f"{where}.hidden: expected true or false, got {hidden!r}")
    return TestSpec(item["id"], item["step"], item["kind"], points, item["title"], hidden)


def query_device(binary: Path) -> dict[str, Any]:
    """Runs ``BIN --kit_device``; a failure becomes ``{"available": false, "reason": ...}``."""
    try:
        returncode, stdout, _ = _probe(binary, "--kit_device")
    except ProtocolError as err:
        return {"available": False, "reason": f"could not query the device: {err}"}
    if returncode != 0:
        why = (f"did not finish within {PROBE_TIMEOUT_S:g} s" if returncode is None
               else exit_text(returncode))
        return {"available": False, "reason": f"could not query the device: --kit_device {why}"}
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("available"), bool):
        return {"available": False, "reason": "could not query the device: unexpected output"}
    return data


JUDGE_GRACE_S = 30.0
"""A judge (kit/remote.h) enforces the test's time limit on the student's code itself and reports
it as the test's verdict; the runner's own limit on the judge is this much longer."""

POLL_S = 0.02
"""How often a running test process's verdict folder is looked at."""


WAIT_FD_FLAG = "--kit_wait_fd"
"""The argument that starts a test process ahead of its turn (test_main.cpp): it makes its CUDA
contexts, then waits for one byte on that descriptor before its first test."""
WAIT_COLD_FLAG = "--kit_wait_cold=1"
"""With WAIT_FD_FLAG: the process waits before it touches the GPU (no context, no worker)."""
READY_FILE = "ready"
"""The empty file a process started ahead of its turn writes into its verdict folder once it is
ready (its contexts made, its setup done) and waits (test_main.cpp)."""


class StartSignal:
    """Lets a test process start ahead of its turn. run_tests() started with one starts the
    process at once; the process makes its CUDA context and its worker's, does its setup
    (kit::run_before_turn), says it is ready, then waits. give() lets its tests begin (their time
    limits count from then); cancel() ends it unrun (run_tests then judges nothing). `cold`: the
    process makes no context before its turn (WAIT_COLD_FLAG), and says it is ready once its
    turn has come and its contexts are made. The runner starts each lab's timed process during
    the correctness phase, the counter tests' Nsight Compute processes (cold) while the timed
    tests run, and each lab's perf process once those have made their contexts, while the counter
    tests run (runner._start_early); it waits for every early process of a phase to be ready (or
    ended) before it gives the phase's first turn."""

    def __init__(self, cold: bool = False) -> None:
        self._set = threading.Event()
        self._ready = threading.Event()
        self.cancelled = False
        self.cold = cold

    def give(self) -> None:
        self._set.set()

    def cancel(self) -> None:
        self.cancelled = True
        self._set.set()
        self._ready.set()

    def given(self) -> bool:
        return self._set.is_set()

    def wait(self, timeout: float) -> bool:
        return self._set.wait(timeout)

    def mark_ready(self) -> None:
        """The process is ready, or has ended, or was never started: nothing to wait for."""
        self._ready.set()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)


OutcomeCallback = Callable[[str, Outcome], None]


def run_tests(binary: Path, test_ids: Sequence[str], seed: int, timeout_s: float,
              extra: Sequence[str] = (), on_outcome: OutcomeCallback | None = None,
              stop: Callable[[Outcome], bool] | None = None,
              go: StartSignal | None = None,
              abandon: Callable[[str, float], bool] | None = None,
              limit_of: Callable[[str], float] | None = None,
              env: Mapping[str, str] | None = None) -> dict[str, Outcome]:
    """Runs `test_ids` (in the binary's own order) in as few processes as the tests allow and
    returns each one's Outcome; `on_outcome(test_id, outcome)` is called as each is known.
    `extra` non-empty means `binary` is a judge: it gets the per-test limit and these arguments.
    Every process ends with a test judged (or with a broken context reported), so at most
    len(test_ids) processes run. `stop`: return as soon as a test's outcome satisfies it, leaving
    the tests after it unrun for the caller (a timeout: the caller runs the rest side by side;
    a failure, when failing fast). `go`: the first process starts at once and waits for it
    (StartSignal); cancelled, nothing is judged. `abandon(test_id, seconds)`, asked while a test
    runs: True ends its process there, as a timeout would (_run_process). `limit_of(test_id)`: a
    test's own time limit where it is below `timeout_s` (_run_process). `env`: variables the
    processes get besides this process's environment (runner.LabTarget.env)."""
    outcomes: dict[str, Outcome] = {}

    def give(test_id: str, outcome: Outcome) -> None:
        if test_id not in outcomes:
            outcomes[test_id] = outcome
            if on_outcome is not None:
                on_outcome(test_id, outcome)

    left = list(test_ids)
    while left:
        blame, _ = _run_process(binary, left, seed, timeout_s, extra, give, stop, go=go,
                                abandon=abandon, limit_of=limit_of, env=env)
        if go is not None and go.cancelled:
            break
        left = [t for t in left if t not in outcomes]
        if left and blame is not None:
            give(left[0], blame)
            left = left[1:]
        if stop is not None and any(stop(o) for o in outcomes.values()):
            break
    return outcomes


WRAPPED_GRACE_S = 60.0
"""A test run through a tool (run_alone's `prefix`: compute-sanitizer) may take this much longer
than its limit: the tool starts, and reports, in seconds."""


CANCELLED_REASON = "not run: cancelled before its turn"


def run_alone(binary: Path, test_id: str, seed: int, timeout_s: float, extra: Sequence[str],
              prefix: Sequence[str], go: StartSignal | None = None) -> tuple[Outcome, int | None]:
    """Runs one test in a process of its own, started through `prefix` (a command that runs the
    binary and exits with its own status, such as compute-sanitizer), and waits for that process
    to end: (the test's outcome, the process's exit status, None when it was killed at the time
    limit). The outcome comes from the authentic verdict, as for run_tests; the status is the
    caller's to weigh. `go`: started now, it waits for its turn (StartSignal); cancelled, the
    outcome is not run (CANCELLED_REASON) and the caller runs the test anew."""
    given: dict[str, Outcome] = {}
    blame, returncode = _run_process(binary, [test_id], seed, timeout_s, extra, given.setdefault,
                                     prefix=prefix, go=go)
    if go is not None and go.cancelled:
        return Outcome(Status.NOT_RUN, CANCELLED_REASON), None
    return given.get(test_id) or blame or Outcome(Status.CRASHED, "crashed: no result"), returncode


def _run_process(binary: Path, test_ids: Sequence[str], seed: int, timeout_s: float,
                 extra: Sequence[str], give: OutcomeCallback,
                 stop: Callable[[Outcome], bool] | None = None,
                 prefix: Sequence[str] = (), go: StartSignal | None = None,
                 abandon: Callable[[str, float], bool] | None = None,
                 limit_of: Callable[[str], float] | None = None,
                 env: Mapping[str, str] | None = None
                 ) -> tuple[Outcome | None, int | None]:
    """Runs the binary once on `test_ids`, giving each test its verdict as it appears. Returns
    the verdict of the test in flight when the process ended without judging them all (crashed,
    timed out, exited early, forged a verdict), or None when nobody is to blame: every test was
    judged, or the last one broke the CUDA context and the process ended as asked; and the
    process's exit status (None: killed, at the time limit or once every test was judged).

    With a `prefix` the process is that command with the binary's command line after it, and it
    is waited for until it exits (or the limit passes) even once every test is judged: the caller
    needs its exit status.

    With a `go` not yet given, the process is started with WAIT_FD_FLAG and waits for it: its
    time limit counts from then; cancelled (or ended before it), nothing is judged, the process
    is killed and (None, None) returned.

    `abandon(test_id, seconds)` is asked about the test in flight and how long it has run: True
    kills the process there, and that test is the one to blame (as at its time limit).

    `limit_of(test_id)`, where it is below `timeout_s`, is that test's time limit, which the
    runner enforces itself: a judge gets `timeout_s`, the limit of the process's other tests,
    and so no grace is added (the kit's selftest gives the tests of the steps a known-wrong
    submission must lose, which hang, a tighter limit than the others)."""
    nonce = secrets.token_hex(32).encode("ascii")
    with tempfile.TemporaryDirectory(prefix="kit-test-", ignore_cleanup_errors=True) as tmp:
        verdicts = Path(tmp) / "verdicts"
        log = Path(tmp) / "output.log"
        work = Path(tmp) / "work"  # the tests' working directory: whatever they write stays here
        ready = verdicts / READY_FILE
        verdicts.mkdir()
        work.mkdir()
        argv = [*prefix, str(binary.absolute()), f"--gtest_filter={':'.join(test_ids)}",
                f"--kit_verdicts={verdicts}"]
        limit = timeout_s + (WRAPPED_GRACE_S if prefix else 0.0)
        if extra:
            argv += [*extra, f"--kit_timeout={timeout_s:g}"]
            limit += JUDGE_GRACE_S
        wait_read = wait_write = -1
        if go is not None and not go.given():
            wait_read, wait_write = os.pipe()
            argv.append(f"{WAIT_FD_FLAG}={wait_read}")
            if go.cold:
                argv.append(WAIT_COLD_FLAG)
        elif go is not None:
            go.mark_ready()  # its turn has come: nothing to wait for
        wanted = set(test_ids)
        judged: set[str] = set()
        seen: set[str] = set()
        last_broke = False
        halted = False  # an outcome met `stop`: the tests left are the caller's
        since = time.monotonic()

        def in_flight() -> str:
            return next(t for t in test_ids if t not in judged)

        def limit_now() -> tuple[float, float]:
            """The test in flight's limit, and how long it may run before it is cut off."""
            own = (limit_of(in_flight()) if limit_of is not None and judged != wanted
                   else timeout_s)
            return (own, own) if own < timeout_s else (timeout_s, limit)

        def collect() -> str | None:
            """Reads new verdict files; returns why one is not authentic (None: all are)."""
            nonlocal since, last_broke, halted
            for path in sorted(verdicts.glob("*.json")):
                if halted:
                    break  # the tests after the one that met `stop` are the caller's
                if path.name in seen:
                    continue
                seen.add(path.name)
                report, problem = authenticate(_read_bytes(path), nonce)
                if report is None:
                    return problem or "the result file cannot be read"
                test_id, entry = _only_entry(report)
                if test_id not in wanted or test_id in judged:
                    continue
                now = time.monotonic()
                outcome = judge_entry(entry, _tail(log, test_id))
                outcome.duration_s = now - since
                outcome.first = not judged
                last_broke = "kit_context_lost" in entry
                if last_broke:
                    outcome = _context_lost(outcome, str(entry["kit_context_lost"]))
                judged.add(test_id)
                give(test_id, outcome)
                since = now
                halted = halted or (stop is not None and stop(outcome))
            return None

        with log.open("wb") as out:
            try:
                proc, read_end = _start_with_nonce(argv, nonce, seed, out, work,
                                                   () if wait_read < 0 else (wait_read,), env)
            except OSError as err:
                if wait_write >= 0:
                    os.close(wait_write)  # the read end is closed below
                if go is not None:
                    go.mark_ready()
                return Outcome(Status.CRASHED, f"crashed: could not start: {err.strerror}"), None
            finally:
                if wait_read >= 0:
                    os.close(wait_read)  # the process has its copy
        try:
            returncode: int | None = None
            forged: str | None = None
            if wait_write >= 0:
                # Ahead of its turn: the process makes its contexts, says it is ready and waits
                # for `go`.
                while not go.wait(POLL_S) and proc.poll() is None:
                    if ready.exists():
                        go.mark_ready()
                if not go.cold:
                    go.mark_ready()
                if go.cancelled or proc.poll() is not None:
                    go.cancel()  # ended before its turn: the caller grades these tests anew
                    return None, None
                try:
                    os.write(wait_write, b"g")
                except OSError:
                    pass  # it ended just now: the loop below finds out how
                since = time.monotonic()
            cold = go is not None and go.cold and wait_write >= 0
            while True:
                try:
                    returncode = proc.wait(timeout=POLL_S)
                except subprocess.TimeoutExpired:
                    returncode = None
                if cold and ready.exists():
                    go.mark_ready()  # its contexts are made (a cold process says so after `go`)
                    cold = False
                forged = collect()
                if forged is not None or halted or (judged == wanted and not prefix):
                    break
                if returncode is not None:
                    break
                if time.monotonic() - since > limit_now()[1]:
                    break
                if abandon is not None and judged != wanted and \
                        abandon(in_flight(), time.monotonic() - since):
                    break
        finally:
            if go is not None:
                go.mark_ready()
            _kill_group(proc)
            proc.wait()
            os.close(read_end)
            if wait_write >= 0:
                os.close(wait_write)
            with _live_lock:
                _live.discard(proc)
        if forged is None:
            forged = collect()  # what was written just before the end
        if judged == wanted or (halted and forged is None):
            return None, returncode
        if forged is None and last_broke and returncode == CONTEXT_LOST_EXIT:
            return None, returncode
        outcome = judge(in_flight(), returncode, None, _tail(log, in_flight()), limit_now()[0],
                        forged)
        outcome.duration_s = time.monotonic() - since
        return outcome, returncode


CONTEXT_LOST_EXIT = 75
"""How a grader process ends after a test broke its CUDA context (test_main.cpp)."""


def _context_lost(outcome: Outcome, error: str) -> Outcome:
    """A test after which the CUDA context was broken fails, whatever it checked: the fault
    happened while it ran."""
    why = f"left the GPU in an error state: {error}"
    if outcome.status is Status.PASSED or outcome.status is Status.NOT_RUN:
        return Outcome(Status.FAILED, why, outcome.output, outcome.measurements)
    return outcome


TUNABLES_ENV = "GLIBC_TUNABLES"
HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"
"""A test process's (and its worker's) large host arrays in transparent huge pages: glibc's malloc
asks for them (madvise) for its mmapped blocks. A fresh 256 MiB array is then touched in a
quarter of the time (one fault per 2 MiB instead of per 4 KiB: 160 ms -> 40 ms on the kit's
build machine), and the perf tests and the large correctness tests make several. A glibc
without the tunable (before 2.35) ignores it."""


def with_huge_pages(tunables: str) -> str:
    """`tunables` (GLIBC_TUNABLES' value) with HUGE_PAGES_TUNABLE added, unless it sets
    glibc.malloc.hugetlb itself."""
    if "glibc.malloc.hugetlb=" in tunables:
        return tunables
    return f"{tunables}:{HUGE_PAGES_TUNABLE}" if tunables else HUGE_PAGES_TUNABLE


def _start_with_nonce(argv: list[str], nonce: bytes, seed: int, out: IO[bytes], cwd: Path,
                      more_fds: Sequence[int] = (), more_env: Mapping[str, str] | None = None
                      ) -> tuple[subprocess.Popen[bytes], int]:
    """Starts a test process with the nonce waiting in a pipe: written and closed before the
    process starts, so it reads it to the end at once, and nothing else in this process can.
    `more_env`: variables it gets besides this process's environment. Returns the process and
    the pipe's read end (the caller closes it)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, nonce)  # far below a pipe's capacity, so this never blocks
        os.close(write_end)
        env = dict(os.environ, **(more_env or {}), KIT_SEED=str(seed),
                   **{NONCE_FD_ENV: str(read_end)})
        env[TUNABLES_ENV] = with_huge_pages(env.get(TUNABLES_ENV, ""))
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                pass_fds=(read_end, *more_fds), cwd=cwd)
    except BaseException:
        os.close(read_end)
        raise
    with _live_lock:
        _live.add(proc)
    return proc, read_end


def authenticate(data: bytes | None, nonce: bytes) -> tuple[str | None, str | None]:
    """(verdict text, None) for a verdict signed with `nonce`; (None, None) when there is no
    verdict file at all; (None, why) for a verdict that is not authentic."""
    if data is None:
        return None, None
    body, _, last = data.rstrip(b"\n").rpartition(b"\n")
    match = _SIGNATURE_LINE.match(last)
    if not match:
        return None, "the result file is not signed by the kit's main()"
    expected = hmac.new(nonce, body, hashlib.sha256).hexdigest().encode("ascii")
    if not hmac.compare_digest(expected, match.group(1)):
        return None, "the result file's signature does not match this run's key"
    return body.decode("utf-8", errors="replace"), None


def judge(test_id: str, returncode: int | None, report: str | None, output_tail: str,
          timeout_s: float, unauthentic: str | None = None) -> Outcome:
    """The verdict for one test from how its process ended (returncode None means it was
    killed on timeout) and the authenticated verdict text it left, if any.

    `unauthentic` says why a verdict file that exists was rejected (see authenticate()).
    """
    if unauthentic is not None:
        return Outcome(Status.CRASHED, f"crashed: no authentic result ({unauthentic})", output_tail)
    if returncode is None:
        return Outcome(Status.TIMED_OUT, f"timed out after {timeout_s:g} s", output_tail)
    if returncode < 0:
        return Outcome(Status.CRASHED, f"crashed: {_signal_name(-returncode)}", output_tail)
    entry = _find_entry(report, test_id) if report is not None else None
    if returncode not in (0, 1) or entry is None:
        if entry is None and report is None:
            why = "before reporting a result"
        elif entry is None:
            why = "without a readable result for this test"
        else:
            why = "after reporting a result"
        return Outcome(Status.CRASHED, f"crashed: exited with code {returncode} {why}", output_tail)
    outcome = judge_entry(entry, output_tail)
    if returncode == 1 and outcome.status is not Status.FAILED:  # a failure outside any test
        return Outcome(Status.FAILED, "exited with code 1 although GoogleTest recorded no failure",
                       output_tail, outcome.measurements)
    return outcome


def judge_entry(entry: dict[str, Any], output_tail: str) -> Outcome:
    """The verdict one authentic GoogleTest entry gives its test."""
    measurements = {k: str(v) for k, v in entry.items() if k not in GTEST_KEYS}
    measurements.pop("kit_context_lost", None)
    failures = _failure_messages(entry.get("failures"))
    result = entry.get("result")
    # A judge (kit/remote.h) reports what became of the worker that ran the student's code.
    worker_status = measurements.pop("kit_status", None)
    worker_reason = measurements.pop("kit_reason", "")
    if worker_status in ("crashed", "timed_out"):
        status = Status.TIMED_OUT if worker_status == "timed_out" else Status.CRASHED
        return Outcome(status, worker_reason, _cap("\n\n".join(failures)) or output_tail,
                       measurements)
    if failures:
        return Outcome(Status.FAILED, "", _cap("\n\n".join(failures)), measurements)
    if result == "SKIPPED":
        return Outcome(Status.NOT_RUN, measurements.get("not_run") or "skipped", "", measurements)
    if result != "COMPLETED":
        return Outcome(Status.NOT_RUN, f"GoogleTest reported result {result!r}", "", measurements)
    return Outcome(Status.PASSED, "", "", measurements)


def kill_running() -> None:
    """Kills every test process group still running (used when the run is interrupted)."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _kill_group(proc)


def _read_bytes(path: Path) -> bytes | None:
    """The verdict file's bytes, or None if the test never wrote one (or made it unreadable)."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def _only_entry(report: str) -> tuple[str, dict[str, Any]]:
    """(test id, entry) of a per-test verdict: one suite with one test ("", {}) otherwise."""
    try:
        data = json.loads(report)
        entries = [(f"{e['classname']}.{e['name']}", e) for suite in data["testsuites"]
                   for e in suite["testsuite"] if isinstance(e, dict)]
    except (json.JSONDecodeError, KeyError, TypeError):
        return "", {}
    return entries[0] if len(entries) == 1 else ("", {})


def _find_entry(report: str, test_id: str) -> dict[str, Any] | None:
    try:
        data = json.loads(report)
        for suite in data["testsuites"]:
            for entry in suite["testsuite"]:
                if isinstance(entry, dict) and f"{entry['classname']}.{entry['name']}" == test_id:
                    return entry
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    return None


def _failure_messages(failures: Any) -> list[str]:
    """GoogleTest writes a list of {"failure": text}; anything else present counts as failing."""
    if not failures:
        return []
    if not isinstance(failures, list):
        return [str(failures)]
    return [str(f.get("failure", f)) if isinstance(f, dict) else str(f) for f in failures]


def _probe(binary: Path, flag: str, *extra: str) -> tuple[int | None, str, str]:
    """Runs a metadata query and returns (exit status or None on timeout, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            returncode = _run([str(binary), flag, *extra], env=dict(os.environ), stdout=out, stderr=err,
                              timeout_s=PROBE_TIMEOUT_S)
        except OSError as error:
            raise ProtocolError(f"cannot run it: {error.strerror}") from error
        out.seek(0)
        err.seek(0)
        return (returncode, out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"))


def _run(argv: list[str], *, env: dict[str, str], stdout: IO[bytes], stderr: IO[bytes] | int,
         timeout_s: float, pass_fds: tuple[int, ...] = (), cwd: Path | None = None) -> int | None:
    """Runs argv in a new session; returns its exit status, or None if it hit the timeout.

    Output goes to files rather than pipes so a test that leaves children holding the
    pipe open, or prints gigabytes, cannot block the runner. The whole process group is
    killed afterwards in every case, which also removes anything the test left running.
    """
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            env=env, start_new_session=True, pass_fds=pass_fds, cwd=cwd)
    with _live_lock:
        _live.add(proc)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        _kill_group(proc)
        proc.wait()
        with _live_lock:
            _live.discard(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(path: Path, test_id: str = "") -> str:
    """The last OUTPUT_TAIL_LINES lines of a process's combined output, read from the end, from
    GoogleTest's "[ RUN      ] <test_id>" line on when it is there (one process runs many tests;
    the output is the student's to print, so this only chooses what is shown)."""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 64 * 1024))
        text = f.read().decode("utf-8", "replace")
    start = text.rfind(f"[ RUN      ] {test_id}\n") if test_id else -1
    if start >= 0:
        text = text[start:]
    return _cap("\n".join(text.rstrip("\n").splitlines()[-OUTPUT_TAIL_LINES:]), keep_end=True)


def _cap(text: str, keep_end: bool = False) -> str:
    if len(text) <= OUTPUT_MAX_CHARS:
        return text
    if keep_end:
        return "[... earlier output cut]\n" + text[-OUTPUT_MAX_CHARS:]
    return text[:OUTPUT_MAX_CHARS] + "\n[... cut]"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_text(returncode: int) -> str:
    """How a process ended: "exited with code 3", "was killed by SIGKILL"."""
    if returncode < 0:
        return f"was killed by {_signal_name(-returncode)}"
    return f"exited with code {returncode}"


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:300] if lines else ""
