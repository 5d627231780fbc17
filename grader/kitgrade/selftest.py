"""The kit's own tests: ``python3 grader/kit.py selftest``.

What it proves, in order:

1. the whole tree builds (every lab against labs/ and solutions/, benchmarks, the fake lab);
2. ``kit.py check`` finds no problem: TODO ids, tests per step, threshold keys, sanitizer and
   racecheck filters, known-wrong edits, labs.json against the folders and pages, and the
   handouts' generated tables agree (kitgrade.check);
3. the unit tests of common/ (C++) and of this grader (Python) pass, the stub/solution region
   check included (the Python ones start before the build and run beside it, the C++ ones as
   soon as the build has linked them);
4. every kind of fault gets its own verdict and leaves the other tests graded: the fake lab's
   tests pass, fail, abort, segfault, hang, exit(0) and forge a passing result file on purpose,
   and a grader binary refuses to write a verdict without the runner's key (the fake lab runs
   beside the build too, once linked: _Beside);
5. the stubs and the references are graded in one run, then each lab's known-wrong submissions
   in one, as a batch of submissions would be: a run's correctness tests side by side, each
   one's timed, counter and perf tests alone;
6. every stub fails its lab's correctness steps (an untouched lab scores 0 there);
7. every reference solution passes every step, performance included, at the stricter
   reference thresholds of grader/thresholds.conf;
8. every known-wrong submission (grader/<lab>/wrong.json) loses the points of the steps it
   breaks, keeps the others, and gets a message that points at the mistake (those whose outputs
   are right lose only a step graded under compute-sanitizer, with the tool's report), and every
   known-right alternative (an entry named right_*, which loses nothing) gets full marks;
9. compute-sanitizer's racecheck reports a hazard in every known-wrong submission that names a
   "racecheck" test filter (the missing barriers), and none in the reference on the same tests
   (each lab's runs start beside step 5's grading of its known-wrong submissions, holding the
   GPU's lock shared), and the reference's tests pass under it;
10. the documentation site builds without a warning, every figure its pages show is in it, no
    page shows Markdown that Doxygen did not read (kitgrade.site_check), and, where Chromium is
    installed, docs/screenshots.py draws its pages;
11. a fresh student edition (kit.py release) holds no line of a solution, its built documentation
    included, and passes its own test command (this command, run inside it). The release is
    written right after the build, and its test command runs beside steps 2 to 10 (the GPU's
    lock, kitgrade.gpu_lock, keeps the two gradings' timed and perf tests apart); its verdict is
    read at the end.

In a student edition there is nothing to prove for 4, 7-9 and 11 (no fake lab, solutions,
known-wrong submissions or release command): it runs 1-3, 5-6 (every stub compiles and fails,
and every grader lists its tests) and the documentation check.

On a machine without a GPU the GPU checks are reported "not run: no CUDA device", counted as
skipped and never as passed; --require-gpu turns them into failures. So are the counter tests
(kind counter) where Nsight Compute is missing or this user may not read the GPU's counters
("not run: no hardware counters: ..."). The last line reads
``selftest: N passed, M failed, K skipped``.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
import tempfile
import textwrap
import threading
import unittest
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from . import check, gpu_lock, inspect, reports, runner, sanitizer, site_check, wrong
from .build import BuildError, configure, ensure_built, grading_targets, niced
from .manifest import Lab, Step
from .model import LabResult, RunResult, Status, TestResult, is_correctness
from .context import default_build_dir, find_lab

FAKE_TIMEOUT_S = 5.0
"""The fake lab's hanging test must be cut off quickly; nothing else in it takes a second."""

FAKE_LAB = Lab(
    id="fake", title="Fake lab (faults on purpose)", timeout_s=FAKE_TIMEOUT_S, student_files=(),
    steps=tuple(Step(f"fake.{n}", f"fake step {n}", ("-",)) for n in (1, 2, 3, 4)))
"""Steps 1-3: tests that pass, host faults, GPU faults; 4: the tests that never end (a host
hang, a kernel deadlocked at a barrier, a kernel that spins). The hangs have a step of their own
because a kernel that never ends slows the GPU for the processes beside it: on four H200s (session
20) IllegalAddress, run beside the two spinning kernels, ran out of its 5 s before the fault
surfaced. A timeout alone in its step, with hangs elsewhere in the run, is graded again alone
(runner._regrade_lone_timeouts), so that neighbour's timeout is settled as it would be for a
student's lab."""


@dataclass
class Tally:
    """Counts of checks, and the failures worth repeating at the end."""

    passed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.skips)

    def add(self, ok: bool | None, what: str, out: TextIO) -> None:
        """ok None means not run (no GPU, no Doxygen, no Chromium): a skip, never a pass."""
        if ok is None:
            self.skips.append(what)  # listed in the grade tables; one summary line at the end
        elif ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(what)
            out.write(f"  FAILED   {what}\n")

    def extend(self, other: Tally) -> None:
        """Counts `other`'s checks here too (its failure lines were written where it ran)."""
        self.passed += other.passed
        self.failed += other.failed
        self.failures += other.failures
        self.skips += other.skips


def register(subparsers: argparse._SubParsersAction) -> Callable[..., int]:
    """Adds the `selftest` subcommand (see cli.SUBCOMMANDS)."""
    parser = subparsers.add_parser(
        "selftest", help="build and run the kit's own tests",
        description=__doc__)
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--require-gpu", action="store_true",
                        help="GPU checks that cannot run are failures, not skips")
    parser.add_argument("--require-docs", action="store_true",
                        help="fail when Doxygen is missing instead of skipping the docs check")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                        help="tests graded in parallel (default: %(default)s)")
    parser.add_argument("--seed", type=int, help="seed for every graded test (default: random)")
    parser.add_argument("--labs", nargs="+", metavar="LAB",
                        help="grade only these labs in steps 5-9 (default: all); to split a long "
                             "run, e.g. on a machine that limits how long one command may take")
    parser.add_argument("--skip-edition", action="store_true",
                        help="leave out step 11 (the student edition and its own test command, "
                             "the longest step): counted as skipped, never as passed; for the "
                             "second and later parts of a split run")
    parser.add_argument("--skip-shared", action="store_true",
                        help="leave out steps 3 and 4 (the unit tests and the fake lab, the same "
                             "whatever the labs): counted as skipped, never as passed; for the "
                             "second and later parts of a split run")
    parser.add_argument("--wrong", nargs="+", metavar="NAME",
                        help="grade only these known-wrong submissions in steps 8-9 (default: "
                             "every one of the labs graded); the others are counted as skipped, "
                             "never as passed")
    parser.add_argument("--plan", type=int, metavar="GPUS",
                        help="print, one per line, groups of labs and known-wrong submissions "
                             "that split a whole run evenly over GPUS parts (ci/selftest-gpus "
                             "--auto runs them), and exit")
    parser.set_defaults(handler=_cmd_selftest)
    return _cmd_selftest


PLAN_SECONDS = {
    # lab: (its stubs, references and racecheck; each known-wrong submission), in seconds, from
    # the selftest on four H200s (2026-11-27, session 20, 16 cores a part): what one part pays
    # for the lab. Each part's sections 5, 6 and 8 split over its labs by their share of tests;
    # section 7 per lab as it reported itself (lab 02: the mean of its two parts, 6.9 and 11.1 s
    # a submission). Session 19's plan from the earlier figures gave parts of 389, 351, 263 and
    # 319 s.
    "01": (15, 5.7), "02": (25, 9.0), "03": (120, 10.0), "04": (45, 11.3), "05": (30, 2.3),
    "06": (8, 1.4), "07": (16, 8.4)}
PLAN_SHARED_SECONDS = 150
"""The first part's own steps: the unit tests, the fake lab and the student edition. On four
H200s (session 20) the fake lab took 18 s and the edition 95 s with three other parts running,
and the unit tests about 40 s (session 19: 41 s; in session 20 they ran inside the build)."""
PLAN_OTHER_LAB = (20, 8.0)
"""A lab the table does not know (a new one)."""


def plan(labs: Sequence[Lab], subs: dict[str, list[str]], gpus: int) -> list[str]:
    """Groups (the words after --labs) that split a whole selftest over `gpus` parts of about
    equal length. A lab's known-wrong submissions may be split over up to three parts, each
    grading the lab's stubs and references too; parts are filled longest piece first (the first
    part also runs the shared steps). Of every way to split the labs, the one whose longest part
    is shortest is kept (then the one with fewest pieces). `subs`: each lab's known-wrong
    submissions. One GPU: every lab in one group."""
    if gpus <= 1:
        return [" ".join(lab.number for lab in labs)]
    cost = {lab.id: PLAN_SECONDS.get(lab.number, PLAN_OTHER_LAB) for lab in labs}

    def pieces_for(splits: Sequence[int]) -> list[tuple[float, Lab, list[str]]]:
        pieces = []
        for lab, k in zip(labs, splits):
            fixed, each = cost[lab.id]
            for j in range(k):
                chunk = subs[lab.id][j::k]
                pieces.append((fixed + each * len(chunk), lab, chunk))
        return sorted(pieces, key=lambda p: -p[0])

    def fill(pieces: Sequence[tuple[float, Lab, list[str]]]):
        parts: list[list[tuple[Lab, list[str]]]] = [[] for _ in range(gpus)]
        load = [float(PLAN_SHARED_SECONDS)] + [0.0] * (gpus - 1)
        for seconds, lab, chunk in pieces:
            i = load.index(min(load))
            parts[i].append((lab, chunk))
            load[i] += seconds
        return max(load), parts

    choices = [range(1, min(3, max(1, len(subs[lab.id]))) + 1) for lab in labs]
    best = min(itertools.product(*choices),
               key=lambda splits: (fill(pieces_for(splits))[0], sum(splits)))
    _, parts = fill(pieces_for(best))
    groups = []
    for part in parts:
        if part:
            numbers = " ".join(dict.fromkeys(lab.number for lab, _ in part))
            names = " ".join(name for _, chunk in part for name in chunk)
            groups.append(numbers + (f" --wrong {names}" if names else ""))
    return groups


def _cmd_selftest(args: argparse.Namespace, ctx) -> int:
    out = ctx.stdout
    root: Path = ctx.root
    if args.plan is not None:
        labs = list(ctx.manifest().labs)
        subs = {lab.id: [sub.name for sub in wrong.load(root, lab)] for lab in labs}
        out.write("".join(group + "\n" for group in plan(labs, subs, args.plan)))
        return 0
    _section.times = []  # type: ignore[attr-defined]
    build_dir = default_build_dir(ctx, args.build_dir)
    tally = Tally()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    manifest = ctx.manifest()
    every_lab = list(manifest.labs)
    labs = [find_lab(manifest, name) for name in args.labs] if args.labs else every_lab

    unit_report = build_dir / f"selftest-python-unit-tests-{os.getpid()}.json"  # one per run
    unit_tests = (_UnitTests([]) if args.skip_shared
                  else _start_python_unit_tests(root, unit_report, args.jobs))
    _section(out, "Build")
    instructor = (root / "solutions").is_dir()  # a student edition (kit.py release) has none
    beside = os.environ.get(BUILD_BESIDE_ENV, "1") != "0"
    checks = _Beside(build_dir, seed, args.jobs, args.require_gpu,
                     () if args.skip_shared else ("kit_unit_tests", "kit_fake_lab"))
    try:
        configure(root, build_dir, "-DKIT_BUILD_DOCS=ON", "-DKIT_DOCS_WERROR=ON", out=out,
                  quiet=True, nice=_own_nice())
        # Step 2's check lists every lab's tests, so every lab's graders come first, also with
        # --labs (on a fresh build directory it found the others missing).
        ensure_built(root, build_dir,
                     _first_targets(root, every_lab, instructor) if beside else ["all"],
                     out=out, quiet=True, nice=_own_nice())
    except BuildError as err:
        out.write(f"build failed: {err}\n")
        tally.add(False, "the kit builds", out)
        unit_tests.kill()
        checks.built(failed=True)  # what started runs to its end; nothing more starts
        return _finish(tally, out)
    checks.built()
    tally.add(True, "the stubs' and solutions' graders build (the rest beside steps 2 to 5)"
              if beside else "the kit builds", out)
    ahead = _InspectAhead(root, build_dir, labs)
    rest = (_RestOfBuild(root, build_dir, _wrong_parts(root, labs, instructor),
                         on_built=ahead.part_built) if beside else None)
    # The student edition builds and tests itself beside the steps below, its CPU work niced
    # (EDITION_NICE): that overlaps theirs, which is mostly the GPU's, and the GPU's lock
    # (kitgrade.gpu_lock) keeps its tests away from the timed and perf tests here, and these
    # away from its.
    edition = (None if not instructor or args.skip_edition
               else _Edition.start(root, build_dir, args, seed))
    try:
        return _after_build(root, build_dir, labs, args, seed, instructor, edition, unit_tests,
                            rest, checks, tally, out)
    finally:
        ahead.close()
        unit_tests.kill()
        if edition is not None:
            edition.kill()


def _after_build(root: Path, build_dir: Path, labs: list[Lab], args: argparse.Namespace,
                 seed: int, instructor: bool, edition: _Edition | None, unit_tests: _UnitTests,
                 rest: _RestOfBuild | None, checks: _Beside, tally: Tally, out: TextIO) -> int:
    """Steps 2 to 11 (the module's docstring), after the build (or, with BUILD_BESIDE_ENV, its
    first part: `rest` is the rest, waited for before the known-wrong submissions)."""
    def rest_built() -> bool:
        return rest is None or rest.finish(tally, out)

    def lab_built(lab: Lab) -> bool:
        """Before a lab's known-wrong run: its part of the build; a failed part is a failed
        check (counted once, with the whole build) and leaves the run out."""
        return rest is None or rest.lab_built(lab.id) or rest_built()

    bin_dir = build_dir / "bin"
    gpu_needed = args.require_gpu
    _section(out, "Consistency (kit.py check)")
    _consistency(root, build_dir, tally, out)

    _section(out, "Unit tests (the Python ones ran during the build)")
    if args.skip_shared:
        _skipped(tally, "the unit tests", out)
    else:
        checks.report("kit_unit_tests", tally, out)
        _python_unit_tests(unit_tests, tally, out)

    if (bin_dir / "kit_fake_lab").is_file():
        _section(out, "Faults get verdicts (fake lab)")
        if args.skip_shared:
            _skipped(tally, "the fake lab's verdicts", out)
        else:
            checks.report("kit_fake_lab", tally, out)

    _section(out, "Grading the stubs, the solutions and the known-wrong submissions")
    only = set(args.wrong) if args.wrong else None
    races: list[_Racecheck] = []  # step 9's runs, started beside the known-wrong gradings
    graded = _grade_together(root, labs, build_dir, seed, args.jobs, instructor, only, out,
                             lambda first, lab, subs: races.append(_Racecheck.start(
                                 root, build_dir, first, [(lab, sub) for sub in subs])),
                             lab_built)

    _section(out, "Every stub fails its correctness steps")
    stubs = graded.stubs
    out.write(reports.render_terminal(stubs))
    reports.write_reports(stubs, build_dir / "reports" / "selftest-student")
    _expect_all(stubs, "stub fails", lambda t: t.status.is_problem, lambda t: t.kind != "perf",
                gpu_needed, tally, out)
    for lab in stubs.labs:
        steps = {t.step for t in lab.tests}
        tally.add(lab.error is None and steps >= {s.id for s in _lab(labs, lab.lab).steps},
                  f"the grader of {lab.lab} lists its tests ({len(lab.tests)} tests, every step)",
                  out)

    if not instructor:
        _section(out, "Documentation site")
        rest_built()
        _docs(root, build_dir, args.require_docs, tally, out)
        return _finish(tally, out)

    _section(out, "Every solution passes every step")
    refs = graded.refs
    out.write(reports.render_terminal(refs))
    reports.write_reports(refs, build_dir / "reports" / "selftest-reference")
    _expect_all(refs, "solution passes", lambda t: t.status is Status.PASSED, lambda t: True,
                gpu_needed, tally, out)
    for lab in refs.labs:
        if any((root / "grader" / lab.lab / "hidden").glob("*.c*")):
            hidden = [t for t in lab.tests if t.hidden]
            tally.add(bool(hidden) and all(t.visibility != "visible" for t in hidden),
                      f"the instructor's grade of {lab.lab} includes its {len(hidden)} hidden "
                      f"tests, not visible to students", out)

    _section(out, "Wrong submissions lose the right points")
    _only_wrong(root, labs, args.wrong, tally, out)
    for lab, graded_lab in graded.wrongs:
        _judge_wrongs_of(lab, graded_lab, graded.run, gpu_needed, tally, out)

    _section(out, "Racecheck reports the missing barriers")
    for race in races:
        race.finish(gpu_needed, tally, out)

    _section(out, "Documentation site")
    rest_built()
    _docs(root, build_dir, args.require_docs, tally, out)

    _section(out, "Student edition: no answers inside, and its own tests pass")
    if edition is None:
        tally.add(None, "the student edition (not run: --skip-edition)", out)
        out.write("  not run: --skip-edition\n")
    else:
        edition.finish(root, tally, out)
    return _finish(tally, out)


BUILD_BESIDE_ENV = "KIT_SELFTEST_BUILD_BESIDE"
"""Unless set to 0, step 1 builds only what the first grading needs (the stubs' and solutions'
graders, the fake lab, the C++ unit tests), and the rest of the tree (the known-wrong
submissions, about two thirds of the compiler's time, the benchmarks and the documentation)
builds niced beside steps 2 to 5: the build is the CPU's work, the gradings mostly the GPU's.
It builds each lab's known-wrong submissions in turn, in the order step 5 grades them, and each
lab's run waits for its own part only (_RestOfBuild). With 0, step 1 builds everything. On an
H100 (session 28) step 1 took 35 s instead of about 72, and every verdict held; the known-wrong
runs then waited about 10 s for the whole rest of the build, which the parts by lab save (every
selftest since session 29, H100 and H200)."""

BUILD_BESIDE_NICE = 10


def _first_targets(root: Path, labs: Sequence[Lab], instructor: bool) -> list[str]:
    """What steps 2 to 5 need before the known-wrong submissions (BUILD_BESIDE_ENV). The C++
    unit tests and the fake lab come as NAME_early, which builds NAME first in a fresh build
    (CMake's kit_link_stamp): _Beside runs them as soon as they are linked."""
    names = grading_targets(root, labs, "student")
    if instructor:
        names += [n for n in grading_targets(root, labs, "reference") if n not in names]
    names.append("kit_unit_tests_early")
    if (root / "grader" / "selftest" / "fake_lab.cu").is_file():
        names.append("kit_fake_lab_early")
    return names


class _RestOfBuild:
    """The rest of the tree's build (BUILD_BESIDE_ENV), in a thread of its own from now on: each
    lab's known-wrong submissions in turn (`parts`: lab id and targets, in the order they are
    graded), so that a lab's run waits only for its own, then everything else ("all": the
    benchmarks, the documentation)."""

    ALL = ""
    """The key of the last part, the whole tree."""

    def __init__(self, root: Path, build_dir: Path,
                 parts: Sequence[tuple[str, list[str]]] = (),
                 on_built: Callable[[str], None] = lambda _: None) -> None:
        """`on_built(key)` is called in the build's thread as each part has built (_InspectAhead),
        after its waiters are woken."""
        self.parts: dict[str, Future[str | None]] = {
            key: Future() for key in [key for key, _ in parts] + [self.ALL]}
        self.on_built = on_built
        order = [*parts, (self.ALL, ["all"])]
        thread = threading.Thread(target=self._build, args=(root, build_dir, order),
                                  name="rest of the build", daemon=True)
        thread.start()
        self.told: bool | None = None

    def _build(self, root: Path, build_dir: Path,
               order: Sequence[tuple[str, list[str]]]) -> None:
        """Each part's future: None when it built; else what went wrong, with the build's last
        lines. A part that fails leaves the next ones to be tried."""
        for key, targets in order:
            try:
                ensure_built(root, build_dir, targets, out=io.StringIO(), quiet=True,
                             nice=max(BUILD_BESIDE_NICE, _own_nice()))
            except BuildError as err:
                self.parts[key].set_result(f"{err}\n{err.output}")
            except BaseException as err:  # noqa: BLE001 - every waiter must wake up
                self.parts[key].set_result(f"the build raised {err!r}")
            else:
                self.parts[key].set_result(None)
                try:
                    self.on_built(key)
                except Exception:  # noqa: BLE001 - the parts after it must still build
                    pass

    def lab_built(self, lab_id: str) -> bool:
        """Waits for the part of `lab_id`'s known-wrong submissions (the whole tree for a lab
        without a part of its own). True: built."""
        return self.parts.get(lab_id, self.parts[self.ALL]).result() is None

    def finish(self, tally: Tally, out: TextIO) -> bool:
        """Waits for the whole build; the first call counts it and says how it went. True:
        built."""
        if self.told is None:
            problems = [problem for problem in (f.result() for f in self.parts.values())
                        if problem is not None]
            for problem in problems[:1]:
                out.write(f"  build failed: {problem}\n")
            tally.add(not problems, "the whole tree builds (beside steps 2 to 5)", out)
            self.told = not problems
        return self.told


INSPECT_AHEAD_JOBS = 4
"""How many known-wrong submissions _InspectAhead inspects at once."""


class _InspectAhead:
    """Inspects each lab's known-wrong submissions as soon as their part of the build is done
    (_RestOfBuild's on_built), beside the runs before theirs, so that their run's listing phase
    reads the findings back from the inspection cache (kitgrade.inspect, CACHE_DIR) instead of
    running nm and objdump on every object at its start: about 2 s a submission, 16 at a time,
    on an H200 (session 35), 3 s of lab 01's run, whose GPU is idle meanwhile. A few threads,
    niced as the build beside them (the tools they start inherit it). Nothing changes what the
    run finds: its inspection is the same call (runner.LabTarget.inspected) on the same bytes.
    Without Landlock the cache is not used (inspect.files_confined), and nothing is done."""

    def __init__(self, root: Path, build_dir: Path, labs: Sequence[Lab]) -> None:
        self.root, self.build_dir = root, build_dir
        self.labs = {lab.id: lab for lab in labs}
        self.pool = (ThreadPoolExecutor(max_workers=INSPECT_AHEAD_JOBS, initializer=_niced_thread,
                                        initargs=(max(BUILD_BESIDE_NICE, _own_nice()),))
                     if inspect.files_confined() else None)

    def part_built(self, key: str) -> None:
        lab = self.labs.get(key)
        if self.pool is None or lab is None:
            return
        try:
            subs = wrong.load(self.root, lab)
        except wrong.WrongError:
            return  # step 2's check says what is wrong with the file
        for sub in subs:
            self.pool.submit(self._inspect, lab, sub.name)

    def _inspect(self, lab: Lab, name: str) -> None:
        try:
            target = runner.lab_target(self.root, self.build_dir, lab, "student", wrong=name)
            if target.archive is not None and target.archive.is_file():
                target.inspected()
        except Exception:  # noqa: BLE001 - only a warm-up: the run inspects it anyway
            pass

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _niced_thread(nice: int) -> None:
    """Lowers the calling thread's CPU priority to `nice` (on Linux niceness is a thread's own,
    and a process it starts inherits it); where it cannot, nothing changes."""
    try:
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, max(nice, os.getpriority(os.PRIO_PROCESS, me)))
    except (OSError, AttributeError):
        pass


class _Beside:
    """Step 3's C++ unit tests and step 4's fake lab, run beside step 1's build: each starts as soon
    as the build has linked its binary (CMake's kit_link_stamp touches <build dir>/NAME.linked in
    the link's own Ninja step), in a thread of its own, into a tally and text of its own that
    report() hands on at its step. The build is the CPU's work; the fake lab is 11 s of mostly
    waiting for its hangs' time limits (three of 5 s), which the GPU, idle during the build, has
    room for. A binary the build did not link (it was up to date) runs once the build is over."""

    POLL_S = 0.1

    def __init__(self, build_dir: Path, seed: int, jobs: int, gpu_needed: bool,
                 names: Sequence[str]) -> None:
        self.over = threading.Event()
        self.failed = False
        self.results: dict[str, tuple[Tally, io.StringIO]] = {}
        bin_dir = build_dir / "bin"
        work: dict[str, Callable[[Tally, TextIO], None]] = {
            "kit_unit_tests": lambda tally, out: _cpp_unit_tests(bin_dir / "kit_unit_tests",
                                                                 tally, out),
            "kit_fake_lab": lambda tally, out: _fake_lab(bin_dir, seed, jobs, gpu_needed, tally,
                                                         out),
        }
        self.threads = []
        for name in names:
            stamp = build_dir / f"{name}.linked"
            stamp.unlink(missing_ok=True)  # only a link of this build touches it again
            thread = threading.Thread(target=self._run, args=(name, stamp, bin_dir / name,
                                                              work[name]),
                                      name=f"beside the build: {name}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def _run(self, name: str, stamp: Path, binary: Path,
             work: Callable[[Tally, TextIO], None]) -> None:
        while not stamp.is_file() and not self.over.wait(self.POLL_S):
            pass
        if not stamp.is_file() and (self.failed or not binary.is_file()):
            return  # not linked by a build that failed (an old binary), or no such target
        tally, text = Tally(), io.StringIO()
        try:
            work(tally, text)
        except Exception as err:  # noqa: BLE001 - a check that raised is a failed check
            tally.add(False, f"{name} ran (it raised {err!r})", text)
        self.results[name] = (tally, text)

    def built(self, failed: bool = False) -> None:
        """The build is over: a binary whose link did not come now runs if it is there (it was up
        to date), unless the build `failed`. Waits for both: the fake lab's GPU tests have a 5 s
        limit that includes their process's start, which the first grading's processes, started
        beside them, would slow (the driver makes CUDA contexts one at a time)."""
        self.failed = failed
        self.over.set()
        for thread in self.threads:
            thread.join()

    def report(self, name: str, tally: Tally, out: TextIO) -> None:
        """Adds `name`'s checks to `tally` and writes what it said, as if it ran here."""
        if name not in self.results:
            tally.add(False, f"{name} was built and ran", out)
            return
        own, text = self.results[name]
        tally.extend(own)
        out.write(text.getvalue())


def _wrong_parts(root: Path, labs: Sequence[Lab], instructor: bool) -> list[tuple[str, list[str]]]:
    """Each lab's known-wrong submissions' targets, in the order step 5 grades them. A lab whose
    wrong.json cannot be read has none (its run, if any, waits for the whole tree; step 2's
    check says what is wrong with the file)."""
    parts = []
    for lab in labs if instructor else []:
        try:
            subs = wrong.load(root, lab)
        except wrong.WrongError:
            continue
        if subs:
            parts.append((lab.id, [f"wrong_{lab.id}_{sub.name}" for sub in subs]))
    return parts


def _skipped(tally: Tally, what: str, out: TextIO) -> None:
    tally.add(None, f"{what} (not run: --skip-shared)", out)
    out.write("  not run: --skip-shared\n")


def _lab(labs: list[Lab], lab_id: str) -> Lab:
    return next(lab for lab in labs if lab.id == lab_id)


EDITION_TIMEOUT_S = 1800
EDITION_NICE = 10
"""The niceness of the CPU work of the student edition's test command, which runs beside the
selftest's own steps (NICE_ENV): the processes of the steps it shares the machine with come
first. Its gradings are not niced: they hold the GPU's lock (kitgrade.gpu_lock), shared or
exclusive, and a niced grading held it longer, keeping the selftest's own timed and perf tests
waiting (lab 02's known-wrong run about 5 s on an H200, session 31)."""

NICE_ENV = "KIT_SELFTEST_NICE"
"""The niceness of this selftest's CPU work: its builds, Python unit tests and documentation
build, not its gradings (unset: 0). The instructor's selftest sets it for the student edition's
test command (EDITION_NICE)."""


def _own_nice() -> int:
    """NICE_ENV's value (0 when unset or not a number)."""
    try:
        return max(0, int(os.environ.get(NICE_ENV, "0")))
    except ValueError:
        return 0


class _Edition:
    """Step 10: a fresh release, written at once; its README's test command, run in it as a
    student would (its own build directory, the same --require-* flags) beside the steps after
    the build (start), judged at the end with a look for solution lines in everything it holds,
    its built documentation site included (finish)."""

    def __init__(self, edition: Path, written: int, proc: subprocess.Popen, log: Path) -> None:
        self.edition, self.written, self.proc, self.log = edition, written, proc, log

    @classmethod
    def start(cls, root: Path, build_dir: Path, args: argparse.Namespace, seed: int) -> _Edition:
        from . import release  # instructor-only, like this step
        from .manifest import load_manifest

        edition = build_dir / "student-edition"
        shutil.rmtree(edition, ignore_errors=True)
        written = release.write_release(root, edition, load_manifest(root / "grader" / "labs.json"))
        argv = [sys.executable, str(edition / "grader" / "kit.py"), "selftest",
                "--build-dir", str(edition / "build"), "--jobs", str(max(1, args.jobs // 4)),
                "--seed", str(seed)]
        argv += [flag for flag, on in (("--require-gpu", args.require_gpu),
                                       ("--require-docs", args.require_docs)) if on]
        log = build_dir / "student-edition.log"
        with open(log, "w") as sink:
            proc = subprocess.Popen(argv, cwd=edition, stdin=subprocess.DEVNULL, stdout=sink,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, NICE_ENV: str(EDITION_NICE)})
        return cls(edition, len(written), proc, log)

    def kill(self) -> None:
        """Ends the test command and everything it started, if it still runs."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def finish(self, root: Path, tally: Tally, out: TextIO) -> None:
        from . import release
        from .manifest import load_manifest

        edition = self.edition
        tally.add(not (edition / "solutions").exists()
                  and not any(edition.glob("grader/*/wrong.json"))
                  and not any(edition.glob("grader/*/hidden")),
                  f"a release holds no solutions/, wrong.json or hidden tests ({self.written} "
                  f"files)", out)
        try:
            code: int | None = self.proc.wait(timeout=EDITION_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        text = self.log.read_text(errors="replace")
        last = next((line for line in reversed(text.splitlines())
                     if line.startswith("selftest:")), "no summary line")
        out.write(f"  release's own test command: {last} (log: {self.log})\n")
        tally.add(code == 0 and "selftest:" in last,
                  f"the release's test command passes in a fresh copy (exit {code}: {last})", out)
        if code != 0:
            out.write("".join(f"    {line}\n" for line in text.splitlines()[-30:]))
        manifest = load_manifest(root / "grader" / "labs.json")
        leaks, scanned = release.find_leaks(release.secrets_of(root, manifest), edition)
        out.write(f"  leak check: {scanned} text files of the release, its built docs included\n")
        out.write("".join(f"    {line}\n" for line in release.describe_leaks(leaks)))
        tally.add(not leaks, f"no line of a solution is in the release ({len(leaks)} found)", out)


def _section(out: TextIO, title: str | None) -> None:
    """Numbered in the order they run: a student edition runs fewer, with no gaps. Each ends
    with the seconds it took (title None ends the last one); _finish lists them all."""
    times: list[tuple[str, float]] = _section.times  # type: ignore[attr-defined]
    now = time.monotonic()
    if times and times[-1][1] < 0:
        name, started = times[-1][0], -times[-1][1]
        times[-1] = (name, now - started)
        out.write(f"  ({now - started:.0f} s)\n")
    if title is None:
        return
    times.append((f"{len(times) + 1}. {title}", -now))
    out.write(f"\n== {len(times)}. {title}\n")
    out.flush()


_section.times = []  # type: ignore[attr-defined]


def _consistency(root: Path, build_dir: Path, tally: Tally, out: TextIO) -> None:
    """`kit.py check` on the fresh build: each problem it finds is a failed check."""
    problems = check.check_tree(root, build_dir, build=False, out=out)
    for problem in problems:
        tally.add(False, f"kit.py check: {problem}", out)
    if not problems:
        tally.add(True, "kit.py check finds no problem", out)
    out.write(f"  check: {len(problems)} problem{'' if len(problems) == 1 else 's'}\n")


def _cpp_unit_tests(binary: Path, tally: Tally, out: TextIO) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "unit.json"
        proc = subprocess.run([str(binary), f"--gtest_output=json:{report}"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            suites = json.loads(report.read_text())["testsuites"]
        except (OSError, ValueError, KeyError):
            out.write(proc.stdout[-4000:])
            tally.add(False, f"{binary.name} ran and reported (exit {proc.returncode})", out)
            return
    count = 0
    for suite in suites:
        for case in suite["testsuite"]:
            count += 1
            tally.add(not case.get("failures"), f"common/ unit test {suite['name']}.{case['name']}", out)
    out.write(f"  {count} C++ unit tests of common/ (exit {proc.returncode})\n")


UNIT_SHARDS = 16
"""The grader's Python unit tests run in up to this many processes (one per core at most). They
take 80-90 s on one core, mostly waiting on the child processes they start: with 8 processes
they ran about 47 s beside the build on an H100 machine's 16 cores, and step 3 waited 12 s for
them after a 35 s build (session 28). Read late instead, beside step 5's gradings, some of
their timed tests failed (session 29)."""

UNIT_SECONDS_FILE = "selftest-unit-seconds.json"
"""In the build directory: how long each unit of the Python unit tests took (_shard_units; by
its first test's id) in the last selftest there, so that the next one starts the longest first."""


@dataclass
class _UnitTests:
    """The grader's Python unit tests, running in processes of their own; each writes its report
    (JSON) to its own file, and `seconds` is where the units' times are kept."""

    children: list[tuple[subprocess.Popen, Path]]
    seconds: Path | None = None
    queue: Path | None = None

    def kill(self) -> None:
        """Ends those still running (a selftest that stops early) and removes their files: the
        reports and the queue (_python_unit_tests calls it when all have ended, for the files)."""
        for child, report in self.children:
            if child.returncode is None:
                child.kill()
                child.communicate()
            report.unlink(missing_ok=True)
        if self.queue is not None:
            self.queue.unlink(missing_ok=True)


def _start_python_unit_tests(root: Path, report: Path, jobs: int = UNIT_SHARDS) -> _UnitTests:
    """Starts the grader's Python unit tests in up to UNIT_SHARDS processes (and no more than
    `jobs`, --jobs: the student edition's selftest, beside the selftest, has a quarter of it),
    to run while the kit builds (they need no build); _python_unit_tests reads what each wrote
    to `report` with its number added. The processes take the units one at a time from a
    shared queue (_take_unit), the longest of the last selftest in this build directory first
    (UNIT_SECONDS_FILE), so that they end together: dealt out in turn instead, one process ran
    11 s of tests and another 2 s (on the kit's build machine, session 36)."""
    report.parent.mkdir(parents=True, exist_ok=True)
    shards = max(1, min(UNIT_SHARDS, os.cpu_count() or 1, jobs))
    queue = report.with_name(f"{report.stem}-queue")
    queue.write_text("0")
    seconds = report.parent / UNIT_SECONDS_FILE
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from kitgrade import selftest; "
            "selftest.run_python_unit_tests(*sys.argv[1:])")
    children = []
    for shard in range(shards):
        path = report.with_name(f"{report.stem}-{shard}{report.suffix}")
        path.unlink(missing_ok=True)
        children.append((subprocess.Popen(
            niced([sys.executable, "-c", code, str(root / "grader"), str(path), str(queue),
                   str(seconds)], _own_nice()),
            cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace"), path))
    return _UnitTests(children, seconds, queue)


def _take_unit(queue: Path) -> int:
    """The next unit's number from the queue file that the unit-test processes share."""
    with open(queue, "r+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # let go when the file closes
        taken = int(file.read() or "0")
        file.seek(0)
        file.write(str(taken + 1))
        file.truncate()
    return taken


def _unit_order(units: list[list[unittest.TestCase]],
                seconds: dict[str, float]) -> list[list[unittest.TestCase]]:
    """`units`, the longest in `seconds` (by first test id) first; the others after them, in the
    order discovery found them."""
    return sorted(units, key=lambda unit: -seconds.get(unit[0].id(), 0.0))


def run_python_unit_tests(grader_dir: str, report: str, queue: str, seconds: str = "") -> None:
    """A child of _start_python_unit_tests: takes units of the tests (_shard_units, in
    _unit_order) from `queue` until none is left, runs each, and writes, as JSON, each test's
    id, outcome (passed, failed, skipped) and failure text, and each unit's seconds."""
    found = _flatten(unittest.defaultTestLoader.discover(str(Path(grader_dir) / "tests"),
                                                         top_level_dir=grader_dir))
    try:
        known = json.loads(Path(seconds).read_text()) if seconds else {}
    except (OSError, ValueError):
        known = {}
    times = ({key: float(value) for key, value in known.items()
              if isinstance(value, (int, float))} if isinstance(known, dict) else {})
    units = _unit_order(_shard_units(found), times)  # a file that says nothing useful: none
    tests, took, problems, skipped, run = [], {}, {}, set(), 0
    while (taken := _take_unit(Path(queue))) < len(units):
        unit = units[taken]
        began = time.monotonic()
        # A result of its own: a result carries the last test's class over into the next run,
        # and would tear that class's fixture down again.
        result = unittest.TestSuite(unit).run(unittest.TextTestResult(io.StringIO(), True, 0))
        took[unit[0].id()] = round(time.monotonic() - began, 3)
        tests += unit
        problems.update({str(test): text for test, text in result.failures + result.errors})
        skipped |= {test.id() for test, _ in result.skipped}
        run += result.testsRun
    # A class or module fixture that failed is reported as an error of its own, not of a test.
    rows = [[test.id(), "failed" if str(test) in problems else
             "skipped" if test.id() in skipped else "passed",
             problems.get(str(test), "")] for test in tests]
    rows += [[name, "failed", text] for name, text in problems.items()
             if not any(str(test) == name for test in tests)]
    Path(report).write_text(json.dumps({"run": run, "tests": rows, "seconds": took}))


def _python_unit_tests(unit_tests: _UnitTests, tally: Tally, out: TextIO) -> None:
    run = 0
    took: dict[str, float] = {}
    for child, report in unit_tests.children:
        output, _ = child.communicate()
        try:
            data = json.loads(report.read_text())
        except (OSError, ValueError):
            tally.add(False, f"the grader's Python unit tests ran ({report.name}: exit "
                             f"{child.returncode})", out)
            out.write("".join(f"    {line}\n" for line in output.splitlines()[-30:]))
            continue
        finally:
            report.unlink(missing_ok=True)
        run += data["run"]
        took.update(data.get("seconds", {}))
        for name, outcome, text in data["tests"]:
            if outcome == "failed":
                tally.add(False, f"grader unit test {name}", out)
                out.write("    " + text.replace("\n", "\n    ") + "\n")
            else:
                tally.add(None if outcome == "skipped" else True, f"grader unit test {name}", out)
    if unit_tests.seconds is not None and took:
        unit_tests.seconds.write_text(json.dumps(took, indent=0, sort_keys=True))
    unit_tests.kill()
    out.write(f"  {run} Python unit tests of the grader ({len(unit_tests.children)} "
              f"processes)\n")


_NO_CLASS_FIXTURE = unittest.TestCase.setUpClass.__func__  # type: ignore[attr-defined]


def _shard_units(tests: Sequence[unittest.TestCase]) -> list[list[unittest.TestCase]]:
    """`tests` in the units a shard takes whole: the tests of a class with a class or module
    fixture (setUpClass, setUpModule) together, so that one shard alone pays for the fixture;
    every other test alone. Split test by test, each of the 16 shards ran the 4.5 s fixture of
    test_runner's EveryVerdictTest, and the 16 shards took 70 s on the kit's build machine (2
    cores) where they take 39-48 s now."""
    units: list[list[unittest.TestCase]] = []
    whole: dict[object, list[unittest.TestCase]] = {}
    for test in tests:
        cls = type(test)
        module = sys.modules.get(cls.__module__)
        key: object = (module if hasattr(module, "setUpModule") else
                       cls if getattr(cls.setUpClass, "__func__", None) is not _NO_CLASS_FIXTURE
                       else None)
        if key is None:
            units.append([test])
            continue
        if key not in whole:
            whole[key] = []
            units.append(whole[key])
        whole[key].append(test)
    return units


def _flatten(suite: unittest.TestSuite) -> list[unittest.TestCase]:
    tests: list[unittest.TestCase] = []
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            tests.extend(_flatten(item))
        else:
            tests.append(item)
    return tests


# The verdict each fake test must get: (status with a GPU, status without, text the output or
# reason must contain).
_FAKE_EXPECTED: dict[str, tuple[Status, Status, str]] = {
    "FakeHost.Passes": (Status.PASSED, Status.PASSED, ""),
    "FakeHost.Fails": (Status.FAILED, Status.FAILED, "expected 1, got 2"),
    "FakeHost.Aborts": (Status.CRASHED, Status.CRASHED, "SIGABRT"),
    "FakeHost.Segfaults": (Status.CRASHED, Status.CRASHED, "SIGSEGV"),
    "FakeHost.Hangs": (Status.TIMED_OUT, Status.TIMED_OUT, "timed out"),
    "FakeHost.ExitsZero": (Status.CRASHED, Status.CRASHED, ""),
    "FakeHost.ForgesAPassingResult": (Status.CRASHED, Status.CRASHED, "no authentic result"),
    "FakeHost.PassesAfterTheFaults": (Status.PASSED, Status.PASSED, ""),
    "FakeGpu.NeedsAGpu": (Status.PASSED, Status.NOT_RUN, ""),
    "FakeGpu.HugeAllocation": (Status.FAILED, Status.NOT_RUN, "cudaMalloc"),
    "FakeGpu.IllegalAddress": (Status.FAILED, Status.NOT_RUN, "illegal memory access"),
    "FakeGpu.PassesAfterTheContextBroke": (Status.PASSED, Status.NOT_RUN, ""),
    "FakeGpu.CountsWrongElementsExactly": (Status.PASSED, Status.NOT_RUN, ""),
    "FakeGpu.KernelDeadlocksOnABarrierInABranch": (Status.TIMED_OUT, Status.NOT_RUN, "timed out"),
    "FakeGpu.KernelLoopsForever": (Status.TIMED_OUT, Status.NOT_RUN, "timed out"),
    "FakeGpu.FarOutOfBoundsWrite": (Status.FAILED, Status.NOT_RUN, "illegal memory access"),
}


def _fake_lab(bin_dir: Path, seed: int, jobs: int, gpu_needed: bool, tally: Tally, out: TextIO) -> None:
    run = runner.run([runner.LabTarget(FAKE_LAB, bin_dir / "kit_fake_lab",
                                       env=(("KIT_FAKE_LAB", "1"),))],
                     runner.RunOptions("student", seed, jobs, FAKE_TIMEOUT_S))
    seen = {t.id: t for t in run.tests()}
    for test_id, (with_gpu, without_gpu, text) in _FAKE_EXPECTED.items():
        test = seen.get(test_id)
        if test is None:
            tally.add(False, f"fake test {test_id} was graded", out)
            continue
        want = with_gpu if run.gpu_available else without_gpu
        ok: bool | None = test.status is want and (
            want is Status.NOT_RUN or text in test.reason + test.output)
        if want is Status.NOT_RUN and ok:
            ok = False if gpu_needed else None  # a GPU check that could not run
        tally.add(ok, f"fake test {test_id}: {want.value} expected, got {test.status.value} "
                      f"({test.reason})", out)
        if ok:
            told = _verdict_line(test, text)
            out.write(f"  {test_id}: {test.status.value}{' — ' + told if told else ''}\n")
    tally.add(set(seen) == set(_FAKE_EXPECTED), "every fake test has an expectation", out)
    _unsigned_verdict_refused(bin_dir / "kit_fake_lab", tally, out)


def _unsigned_verdict_refused(binary: Path, tally: Tally, out: TextIO) -> None:
    """Asked for a verdict without a key on KIT_NONCE_FD, main() must refuse (exit 2, no file)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("KIT_NONCE_FD", "KIT_FAKE_LAB")}
        proc = subprocess.run([str(binary), "--gtest_filter=FakeHost.Passes", f"--kit_verdicts={tmp}"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                              timeout=60)
        ok = proc.returncode == 2 and not any(Path(tmp).iterdir()) and "KIT_NONCE_FD" in proc.stderr
    tally.add(ok, f"a grader asked for a verdict without the runner's key refuses "
                  f"(exit {proc.returncode}: {proc.stderr.strip()[:120]})", out)


def _only_wrong(root: Path, labs: list[Lab], names: list[str] | None, tally: Tally,
                out: TextIO) -> set[str] | None:
    """The known-wrong submissions --wrong names (None: every one). A name that no lab graded
    has is a failed check; each one left out is a skipped check, never a passed one."""
    if not names:
        return None
    known = {sub.name for lab in labs for sub in wrong.load(root, lab)}
    for name in sorted(set(names) - known):
        tally.add(False, f"--wrong {name}: no known-wrong submission of that name in "
                         f"{', '.join(lab.id for lab in labs)}", out)
    left_out = sorted(known - set(names))
    for name in left_out:
        tally.add(None, f"known-wrong submission {name} (not run: --wrong)", out)
    if left_out:
        out.write(f"  not run: {len(left_out)} known-wrong submissions left out by --wrong\n")
    return set(names)


@dataclass
class _Together:
    """The stubs', references' and known-wrong submissions' results, split by what each was."""
    run: RunResult
    stubs: RunResult
    refs: RunResult
    wrongs: list[tuple[Lab, _WrongRun]]


@dataclass
class _WrongRun:
    """A lab's known-wrong submissions: each one's result, and the refused attacks' second
    grading without the inspection (by index in subs)."""
    subs: list[wrong.WrongSubmission]
    results: list[LabResult]
    uninspected: dict[int, LabResult]


PROGRESS_FILE = "selftest-progress.log"
"""In the build directory: a line per graded test of step 5 as it ends (seconds since the step
began, lab, test, verdict, seconds it took), to see where a long or cut-off run spent its time."""


def _grade_together(root: Path, labs: list[Lab], build_dir: Path, seed: int, jobs: int,
                    instructor: bool, only: set[str] | None, out: TextIO,
                    races: Callable[[RunResult, Lab, list[wrong.WrongSubmission]], None] =
                    lambda *_: None,
                    built: Callable[[Lab], bool] = lambda _: True) -> _Together:
    """Grades the stubs and the references of `labs` in one run, then each lab's known-wrong
    submissions (those in `only`, when given) in a run of their own, as a batch of submissions
    would be: the correctness tests of a run side by side, then each one's timed, counter and
    perf tests alone. The refused attacks are graded a second time without the inspection, in
    their lab's run: the judge/worker split alone must hold too. (A student edition has only
    stubs.) Every lab's known-wrong submissions in one run was tried on an H100 and took longer
    (426 s with the stubs and references but without lab 02's two that hang, against 345 s for
    all of them as now): each submission's processes make their CUDA contexts, which the driver
    makes one at a time, and more of them at once only made each test's start slower (host
    tests of 20 s). Two labs' runs at a time (session 28, H100) did no better: labs 01 and 02
    side by side took 72 s against 21 + 53 one after the other, and the selftest ran past
    400 s. `races(first, lab, subs)` is called with the first run's result and the lab's graded
    submissions that name a racecheck filter just before the known-wrong run of each lab that has
    any, once that lab's part of the build is done: step 9's racecheck of that lab starts there,
    beside its own grading, so its shared hold on the GPU's lock mostly ends inside that run's
    correctness phase instead of delaying another run's timed and perf tests, and never starts
    before the binaries it runs are built. (All of it beside lab 02's run, before each lab's part of the build was
    waited for, kept that run's timed tests waiting about 4 s on an H100 in session 29; half of
    it beside lab 01's ran the judges of labs 04 and 05 before their known-wrong workers were
    built, and found no hazard.) `built(lab)` is asked before each lab's known-wrong run (it
    waits for that lab's part of the build): False (its build failed) leaves the run out."""
    started = time.monotonic()
    with open(build_dir / PROGRESS_FILE, "w", buffering=1) as progress:
        def log(test: TestResult) -> None:
            progress.write(f"{time.monotonic() - started:7.1f} {test.lab} {test.id} "
                           f"{test.status.value} {test.duration_s:.1f} {test.reason[:60]!r}\n")

        def grade(targets: list[runner.LabTarget], what: str) -> RunResult:
            began = time.monotonic()
            run = runner.run(targets, runner.RunOptions("student", seed, jobs), log)
            settled = sum(t.reason == runner.SETTLED_REASON for lab in run.labs
                          for t in lab.tests)
            _say_wrapped(f"({what}, in {time.monotonic() - began:.0f} s: "
                         + ", ".join(f"{phase} {seconds:.0f}"
                                     for phase, seconds in run.timings.items())
                         + (f"; {settled} tests of steps already lost not run" if settled else "")
                         + ")", out)
            return run

        stubs = [runner.lab_target(root, build_dir, lab, "student") for lab in labs]
        refs = ([runner.lab_target(root, build_dir, lab, "reference") for lab in labs]
                if instructor else [])
        first = grade(stubs + refs, f"{len(stubs)} stubs and {len(refs)} solutions")
        wrongs: list[tuple[Lab, _WrongRun]] = []
        runs = [(lab, [sub for sub in wrong.load(root, lab) if only is None or sub.name in only])
                for lab in (labs if instructor else [])]
        runs = [(lab, subs) for lab, subs in runs if subs]
        for lab, subs in runs:
            ok = built(lab)
            raced = [sub for sub in subs if sub.racecheck]
            if raced:
                races(first, lab, raced)  # a failed build fails them too, and step 9 says so
            if not ok:
                continue
            targets = [dataclasses.replace(
                           runner.lab_target(root, build_dir, lab, "student", wrong=sub.name),
                           timeout_s=sub.timeout_s, alone_timeout_s=sub.alone_timeout_s,
                           settle=_settle(sub))
                       for sub in subs]
            again = [i for i, sub in enumerate(subs) if sub.refused and not sub.only_refused]
            run = grade(targets + [dataclasses.replace(targets[i], inspect=False) for i in again],
                        f"{lab.id}: {len(subs)} known-wrong submissions"
                        + (f", {len(again)} graded again without the inspection" if again else ""))
            wrongs.append((lab, _WrongRun(subs, run.labs[:len(subs)],
                                          dict(zip(again, run.labs[len(subs):])))))

    def part(variant: str, results: list[LabResult]) -> RunResult:
        return RunResult(first.seed, variant, first.device, first.started_at, results,
                         timings=dict(first.timings))

    return _Together(first, part("student", first.labs[:len(stubs)]),
                     part("reference", first.labs[len(stubs):]), wrongs)


def _say_wrapped(line: str, out: TextIO) -> None:
    """A phase line of step 5, wrapped to 78 columns under its section."""
    out.write("\n".join(textwrap.wrap(line, 78, initial_indent="  ",
                                       subsequent_indent="   ")) + "\n")
    out.flush()


def _judge_wrongs_of(lab: Lab, graded: _WrongRun, run: RunResult, gpu_needed: bool,
                     tally: Tally, out: TextIO) -> None:
    """Judges each of the lab's known-wrong submissions (and the refused attacks' second
    grading), then names the ones whose tests took longest."""
    for i, sub in enumerate(graded.subs):
        if sub.refused:
            _judge_refused(lab, sub, _one_lab(run, graded.results[i]), tally, out)
            if sub.only_refused:
                continue
            _judge_wrong(lab, sub, _one_lab(run, graded.uninspected[i]), gpu_needed, tally, out)
        else:
            _judge_wrong(lab, sub, _one_lab(run, graded.results[i]), gpu_needed, tally, out)
    # The test-seconds of each submission (its tests' durations added up; tests side by side
    # overlap): which ones the time went to.
    names = [sub.name for sub in graded.subs] + [graded.subs[i].name for i in graded.uninspected]
    results = graded.results + list(graded.uninspected.values())
    costs = sorted(((sum(t.duration_s for t in result.tests), name)
                    for name, result in zip(names, results)), reverse=True)[:SLOWEST_WRONG]
    _say_wrapped(f"({lab.id}: {len(graded.subs)} submissions; most test-seconds: "
                 + ", ".join(f"{name} {cost:.0f}" for cost, name in costs) + ")", out)


def _one_lab(run: RunResult, lab: LabResult) -> RunResult:
    """`run` narrowed to one of its labs (each known-wrong submission is judged alone)."""
    return RunResult(run.seed, run.variant, run.device, run.started_at, [lab])


def _judge_refused(lab: Lab, sub: wrong.WrongSubmission, run: RunResult, tally: Tally,
                   out: TextIO) -> None:
    """An attack the inspection must refuse: every test of the lab failed unrun, saying why."""
    result = run.labs[0]
    refused = (result.error is None and bool(result.tests) and all(
        t.status is Status.FAILED and t.reason.startswith("refused before running")
        for t in result.tests))
    tally.add(refused, f"attack {lab.id}/{sub.name} is refused before it runs (scores 0)", out)
    first = result.tests[0].reason if result.tests else result.error
    out.write(f"  {lab.id}/{sub.name}: {result.score:g}/{result.max_score:g} — {first}\n")


SLOWEST_WRONG = 3
"""The known-wrong submissions whose tests took longest, named in each lab's phase line."""

RACECHECK_TIMEOUT_S = 300
SKIPS_LISTED = 10  # the final summary names the skipped checks when there are this few


class _Racecheck:
    """Step 9: racecheck on each wrong submission that names a "racecheck" filter, and on the
    reference with the same filter (once per lab and filter): hazards in the first, none in the
    second. The runs start beside step 5's known-wrong gradings, once its first run has told
    which GPU there is (racecheck costs the CPU, the gradings mostly the GPU), each lab's beside
    the grading of its own known-wrong submissions, and are read at step 9. Like a grading's
    correctness tests, they hold the GPU's lock shared (gpu_lock): a grading's timed, counter
    and perf tests wait for them."""

    def __init__(self, cases: list[tuple[Lab, wrong.WrongSubmission]], why: str | None,
                 runs: list[tuple[str, Path, str, bool, list[str]]],
                 done: Future | None) -> None:
        self.cases, self.why, self.runs, self.done = cases, why, runs, done

    @classmethod
    def start(cls, root: Path, build_dir: Path, refs: RunResult,
              cases: list[tuple[Lab, wrong.WrongSubmission]]) -> _Racecheck:
        """`cases`: the submissions to run, each naming a racecheck filter."""
        tool = sanitizer.find_sanitizer() if cases else None
        if not cases or tool is None or not refs.gpu_available:
            why = "compute-sanitizer not found" if tool is None else "no CUDA device"
            return cls(cases, why, [], None)
        clean: set[tuple[str, str]] = set()  # (lab, filter) the reference was run on
        runs = []  # (what, binary, filter, hazard wanted, argv), graded side by side
        for lab, sub in cases:
            for target, variant, want_hazard in (
                    (runner.lab_target(root, build_dir, lab, "student", wrong=sub.name),
                     "student", True),
                    (runner.lab_target(root, build_dir, lab, "reference"), "reference", False)):
                if not want_hazard:
                    if (lab.id, sub.racecheck) in clean:
                        continue
                    clean.add((lab.id, sub.racecheck))
                what = (f"racecheck reports {lab.id} {sub.name}" if want_hazard
                        else f"racecheck finds the {lab.id} reference clean on {sub.racecheck}")
                runs.append((what, target.binary, sub.racecheck, want_hazard, sanitizer.command(
                    tool, "racecheck", target.binary, sub.racecheck,
                    target.judge_args(variant))))
        background = ThreadPoolExecutor(max_workers=1)
        done = background.submit(_race_all, [argv for *_, argv in runs],
                                 gpu_lock.path_for(refs.device))
        background.shutdown(wait=False)
        return cls(cases, None, runs, done)

    def finish(self, gpu_needed: bool, tally: Tally, out: TextIO) -> None:
        if not self.cases:
            return
        if self.done is None:
            for lab, sub in self.cases:
                tally.add(False if gpu_needed else None,
                          f"racecheck on {lab.id} {sub.name} (not run: {self.why})", out)
            out.write(f"  not run: {self.why} ({len(self.cases)} racecheck cases)\n")
            return
        procs, seconds = self.done.result()
        out.write(f"  ({len(self.runs)} racecheck runs, {runner.SANITIZER_SESSIONS} at a time, "
                  f"in {seconds:.0f} s)\n")
        for (what, binary, test_filter, want_hazard, _), (proc, took) in zip(self.runs, procs):
            if proc is None:
                tally.add(False, f"{what} (timed out after {RACECHECK_TIMEOUT_S} s)", out)
                continue
            summary = next((line.strip("= ").strip() for line in reversed(proc.stdout.splitlines())
                            if "RACECHECK SUMMARY" in line), f"exit {proc.returncode}")
            # A hazard in the wrong one; in the reference none, and its tests pass (a run that
            # could not start its worker reports no hazard either).
            ok = (proc.returncode == sanitizer.ERROR_EXIT if want_hazard
                  else proc.returncode == 0)
            tally.add(ok, what, out)
            out.write(f"  {binary.name} --gtest_filter={test_filter}: {summary}, exit "
                      f"{proc.returncode} ({took:.0f} s)\n")


def _race_all(argvs: list[list[str]], lock_path: Path | None
              ) -> tuple[list[tuple[subprocess.CompletedProcess | None, float]], float]:
    """Runs the racecheck commands, runner.SANITIZER_SESSIONS at a time, holding the GPU's
    lock shared: each one's process (None: it timed out) and seconds, and the seconds from the
    lock had to the last one's end."""
    def race(argv: list[str]) -> tuple[subprocess.CompletedProcess | None, float]:
        began = time.monotonic()
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors="replace",
                                  check=False, timeout=RACECHECK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc = None
        return proc, time.monotonic() - began

    with gpu_lock.GpuLock(lock_path) as lock, \
            ThreadPoolExecutor(max_workers=runner.SANITIZER_SESSIONS) as pool:
        lock.shared()
        began = time.monotonic()
        done = list(pool.map(race, argvs))
        return done, time.monotonic() - began


def _judge_wrong(lab: Lab, sub: wrong.WrongSubmission, run: RunResult, gpu_needed: bool,
                 tally: Tally,                 out: TextIO) -> None:
    """One wrong submission: the steps in sub.loses lose points, the others keep theirs
    (a perf step may only lose its points to the correctness gate), and some failure message
    contains sub.message."""
    what = f"wrong submission {lab.id}/{sub.name}"
    result = run.labs[0]
    if result.error:
        tally.add(False, f"{what} can be graded: {result.error}", out)
        return
    by_step: dict[str, list[TestResult]] = {}
    for test in result.tests:
        by_step.setdefault(test.step, []).append(test)
    excused = lambda t: t.lacked_device(run.gpu_available)  # noqa: E731
    correctness_lost = any(t.status.is_problem for t in result.tests if is_correctness(t.kind))
    for step in lab.steps:
        tests = by_step.get(step.id, [])
        lost = [t for t in tests if t.status.is_problem or
                (t.status is Status.NOT_RUN and t.reason == runner.PERF_GATE_REASON)]
        ok: bool | None
        if step.id in sub.loses:
            ok = bool(lost) or (None if any(excused(t) for t in tests) else False)
            label = f"{what} loses {step.id}"
        else:
            gated = lambda t: (t.kind == "perf" and correctness_lost  # noqa: E731
                               and t.reason == runner.PERF_GATE_REASON)
            kept = all(t.status is Status.PASSED or gated(t) for t in tests)
            ok = kept or (None if any(excused(t) for t in tests) else False)
            label = f"{what} keeps {step.id}"
        if ok is None and gpu_needed:
            ok = False
        tally.add(ok, label, out)
    failing = [t for t in result.tests if t.status.is_problem]
    told = _told(sub, failing)
    if sub.loses or sub.message:  # a correct alternative (loses nothing) is told nothing
        ok = True if told else (None if any(excused(t) for t in result.tests) else False)
        if ok is None and gpu_needed:
            ok = False
        tally.add(ok, f"{what} is told '{sub.message}'", out)
    if sub.likely:
        said = _said(sub, failing)
        ok = True if said else (None if any(excused(t) for t in result.tests) else False)
        if ok is None and gpu_needed:
            ok = False
        tally.add(ok, f"{what} is diagnosed: likely '{sub.likely}'", out)
    shown = told or (failing[0] if failing else None)
    verdict = _verdict_line(shown, sub.message) if shown else "every test that ran passed"
    out.write(f"  {lab.id}/{sub.name}: {result.score:g}/{result.max_score:g} — {verdict}\n")


def _told(sub: wrong.WrongSubmission, failing: Sequence[TestResult]) -> TestResult | None:
    """The first failing test whose message carries the submission's `message`."""
    return next((t for t in failing if sub.message in t.reason + t.output), None)


def _said(sub: wrong.WrongSubmission, failing: Sequence[TestResult]) -> TestResult | None:
    """The first failing test whose diagnosis line carries the submission's `likely`. The line
    may wrap: the report's words are compared joined by single spaces."""
    return next((t for t in failing
                 if sub.likely in " ".join((t.reason + " " + t.output).split())), None)


def _settle(sub: wrong.WrongSubmission) -> runner.Settle | None:
    """When a known-wrong submission's verdict is settled (runner.Settle): a step it must lose
    has failed, and the failures so far show its message and diagnosis. The tests of that step
    left then cannot change what _judge_wrong decides, and are not run."""
    if not sub.loses:
        return None
    return runner.Settle(frozenset(sub.loses), lambda failing: (
        _told(sub, failing) is not None and (not sub.likely or _said(sub, failing) is not None)))


def _verdict_line(test: TestResult, needle: str) -> str:
    """What a test was told, for the log: its reason when that carries `needle` (a timeout, a
    crash), else the line of its output that does."""
    if test.reason and needle in test.reason:  # an empty needle: any reason there is
        return test.reason[:160]
    return _first_line_with(test.output or test.reason, needle)


def _first_line_with(text: str, needle: str) -> str:
    """The line of a failure message that carries `needle` (else its last line): for the log."""
    lines = [line.strip() for line in text.splitlines() if line.strip()
             and not line.startswith(("/", "seed ", "unknown file"))]
    return next((line for line in lines if needle in line), lines[0] if lines else "")[:160]


def _expect_all(run: RunResult, what: str, holds: Callable[[TestResult], bool],
                selected: Callable[[TestResult], bool], gpu_needed: bool, tally: Tally,
                out: TextIO) -> None:
    """One check per selected test that `holds`; a test that lacked a GPU is a skip (or a
    failure with --require-gpu). Every lab must also have been gradable at all."""
    for test in filter(selected, run.tests()):
        ok: bool | None = holds(test)
        if test.lacked_device(run.gpu_available):
            ok = False if gpu_needed else None
        tally.add(ok, f"{what} {test.lab} {test.id} ({test.status.value} {test.reason})", out)
    for lab in run.labs:
        tally.add(lab.error is None, f"{what}: {lab.lab} can be graded {lab.error or ''}", out)


def _docs(root: Path, build_dir: Path, required: bool, tally: Tally, out: TextIO) -> None:
    if shutil.which("doxygen") is None:
        tally.add(False if required else None, "documentation site (doxygen not installed)", out)
        return
    proc = subprocess.run(niced(["cmake", "--build", str(build_dir), "--target", "docs"],
                                 _own_nice()),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    index = build_dir / "docs" / "html" / "index.html"
    ok = proc.returncode == 0 and index.is_file()
    if not ok:
        out.write(proc.stdout[-4000:])
    tally.add(ok, f"documentation site builds without warnings ({index})", out)
    if not ok:
        return
    html = index.parent
    missing = site_check.missing_in_html(html)
    out.write("".join(f"  {m}\n" for m in missing[:20]))
    tally.add(not missing, f"every figure a page of the site shows is in {html} "
                           f"({len(missing)} missing)", out)
    broken = site_check.broken_markup(html)
    out.write("".join(f"  {b}\n" for b in broken[:20]))
    tally.add(not broken, f"no page of {html} shows Markdown that Doxygen did not read "
                          f"({len(broken)} places)", out)
    doxyfile = build_dir / "docs" / "Doxyfile"
    figure_dirs = [Path(d) for d in site_check.doxyfile_list(doxyfile, "IMAGE_PATH")]
    missing = site_check.missing_images(root / "docs", figure_dirs)
    out.write("".join(f"  {m}\n" for m in missing[:20]))
    tally.add(not missing, f"every \\image of docs/**/*.md is in the figures' output "
                           f"({len(missing)} missing)", out)
    _screenshots(root, html, build_dir / "docs" / "screenshots", tally, out)


def _screenshots(root: Path, html: Path, shots: Path, tally: Tally, out: TextIO) -> None:
    """docs/screenshots.py with Chromium: the pages can be drawn; without it, not run."""
    script = root / "docs" / "screenshots.py"
    proc = subprocess.run([sys.executable, str(script), str(html), str(shots)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if "not run" in proc.stdout:
        tally.add(None, "screenshots of the site (not run: no Chromium)", out)
        out.write("  not run: no Chromium (screenshots of the site)\n")
        return
    if proc.returncode != 0:
        out.write(proc.stdout[-2000:])
    tally.add(proc.returncode == 0, f"screenshots of the site in {shots}", out)


def _finish(tally: Tally, out: TextIO) -> int:
    _section(out, None)
    times: list[tuple[str, float]] = _section.times  # type: ignore[attr-defined]
    if times:
        out.write("\nSeconds per section:\n" + "".join(
            f"  {name[:66]:66} {seconds:6.0f}\n" for name, seconds in times)
            + f"  {'total':66} {sum(s for _, s in times):6.0f}\n")
    if tally.failures:
        out.write("\nFailed checks:\n" + "".join(f"  - {f}\n" for f in tally.failures))
    if tally.skipped:
        out.write(f"\n{tally.skipped} checks not run (no CUDA device or counters, no Doxygen or "
                  "Chromium, --skip-edition, --skip-shared, --wrong): skipped, not passed; "
                  "--require-gpu / --require-docs make them failures\n")
        if tally.skipped <= SKIPS_LISTED:
            out.write("".join(f"  - {s}\n" for s in tally.skips))
    out.write(f"\nselftest: {tally.passed} passed, {tally.failed} failed, {tally.skipped} skipped\n")
    out.flush()
    return 0 if tally.failed == 0 else 1
