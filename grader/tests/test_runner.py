"""Verdicts, isolation, timeouts and perf gating, against fake_binary.py.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock
from typing import Any

from kitgrade import protocol, runner
from kitgrade.model import (NO_DEVICE_REASON, NO_MEMORY_REASON, LabResult, RunResult, Status,
                            TestResult)
from kitgrade.protocol import ProtocolError, judge, parse_listing

from .support import fake_env, make_fake_binary, make_lab

SEED = 424242


def grade(labs: list[str], tmp: Path, jobs: int = 4, timeout_s: float | None = None,
          variant: str = "student") -> list[LabResult]:
    targets = [runner.LabTarget(make_lab(lab), make_fake_binary(tmp / "bin", lab, variant))
               for lab in labs]
    options = runner.RunOptions(variant, SEED, jobs, timeout_s)
    return runner.run(targets, options).labs


class LabShardsTest(unittest.TestCase):
    def test_jobs_over_labs_unless_the_setting_says(self) -> None:
        with fake_env():
            self.assertEqual((runner._lab_shards(16, 7), runner._lab_shards(2, 7)), (2, 0))
        with fake_env(KIT_LAB_SHARDS="3"):
            self.assertEqual(runner._lab_shards(16, 7), 3)
        for ignored in ("0", "two", "-1"):
            with fake_env(KIT_LAB_SHARDS=ignored):
                self.assertEqual(runner._lab_shards(16, 7), 2)

    def test_tool_sessions_unless_the_settings_say(self) -> None:
        with fake_env():
            self.assertEqual((runner._sanitizer_sessions(), runner._counter_sessions()),
                             (runner.SANITIZER_SESSIONS, runner.COUNTER_SESSIONS))
        with fake_env(KIT_SANITIZER_SESSIONS="8", KIT_COUNTER_SESSIONS="2"):
            self.assertEqual((runner._sanitizer_sessions(), runner._counter_sessions()), (8, 2))
        with fake_env(KIT_SANITIZER_SESSIONS="0"):
            self.assertEqual(runner._sanitizer_sessions(), runner.SANITIZER_SESSIONS)


class SliceTest(unittest.TestCase):
    """A lab's tests split over processes: each exactly once, neighbours apart."""

    def test_interleaves_and_covers_every_test_once(self) -> None:
        specs = [protocol.TestSpec(f"S.t{i}", "lab.1", "gpu", 1, "", False) for i in range(7)]
        parts = [runner._slice(specs, i, 3) for i in range(3)]
        self.assertEqual([[s.id for s in p] for p in parts],
                         [["S.t0", "S.t3", "S.t6"], ["S.t1", "S.t4"], ["S.t2", "S.t5"]])
        self.assertEqual(sorted(s.id for p in parts for s in p), sorted(s.id for s in specs))

    def test_more_shards_than_tests_leaves_parts_empty(self) -> None:
        specs = [protocol.TestSpec("S.t0", "lab.1", "gpu", 1, "", False)]
        self.assertEqual([len(runner._slice(specs, i, 2)) for i in range(2)], [1, 0])


class HugePagesTest(unittest.TestCase):
    """Test processes get glibc's huge-page tunable, without losing the caller's tunables."""

    def test_the_tunable_is_added_or_left_as_the_caller_set_it(self) -> None:
        self.assertEqual(protocol.with_huge_pages(""), "glibc.malloc.hugetlb=1")
        self.assertEqual(protocol.with_huge_pages("glibc.malloc.arena_max=2"),
                         "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1")
        self.assertEqual(protocol.with_huge_pages("glibc.malloc.hugetlb=0"),
                         "glibc.malloc.hugetlb=0")

    def test_a_test_process_starts_with_it(self) -> None:
        seen = []
        real = subprocess.Popen

        def popen(argv, **kwargs):
            if any(str(a).startswith("--kit_verdicts=") for a in argv):  # a test process
                seen.append(kwargs["env"].get(protocol.TUNABLES_ENV))
            return real(argv, **kwargs)

        with tempfile.TemporaryDirectory() as tmp:
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"))
            with fake_env(FAKE_TESTS="pass"), mock.patch.object(subprocess, "Popen", popen):
                runner.run([target], runner.RunOptions("student", 7, 2))
        self.assertTrue(seen)
        self.assertTrue(all(v and "glibc.malloc.hugetlb=1" in v for v in seen), seen)


class TargetEnvTest(unittest.TestCase):
    """A target's own variables (LabTarget.env: the fake lab's KIT_FAKE_LAB) reach its test
    processes and no one else's, and the runner's environment is left as it was."""

    def test_only_its_processes_get_them(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_TESTS="pass"):
            bin_dir = Path(tmp) / "bin"
            mine = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(bin_dir, "01_alpha"),
                                    env=(("FAKE_PROPS", '{"told": "yes"}'),))
            other = runner.LabTarget(make_lab("02_beta"), make_fake_binary(bin_dir, "02_beta"))
            run = runner.run([mine, other], runner.RunOptions("student", 7, 2))
            self.assertNotIn("FAKE_PROPS", os.environ)
        (alpha,), (beta,) = run.labs[0].tests, run.labs[1].tests
        self.assertIs(alpha.status, Status.PASSED, alpha)
        self.assertEqual(alpha.measurements.get("told"), "yes")
        self.assertNotIn("told", beta.measurements)


class EveryVerdictTest(unittest.TestCase):
    """One lab offering every fake test, with a GPU, graded once (the hang costs ~2 s)."""

    lab: LabResult
    elapsed: float
    by_id: dict[str, TestResult]

    @classmethod
    def setUpClass(cls) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_GPU="1"):
            start = time.monotonic()
            (cls.lab,) = grade(["01_alpha"], Path(tmp))
            cls.elapsed = time.monotonic() - start
        cls.by_id = {t.id: t for t in cls.lab.tests}

    def check(self, test_id: str, status: Status, reason: str = "", output: str = "") -> None:
        test = self.by_id[test_id]
        self.assertIs(test.status, status, test)
        self.assertEqual(test.reason, reason)
        self.assertIn(output, test.output)
        self.assertEqual(test.score, test.points if status is Status.PASSED else 0)

    def test_passing_tests(self) -> None:
        self.check("Host.Passes", Status.PASSED)
        self.check("Gpu.Works", Status.PASSED)
        self.check("Sizes/SaxpyTest.WritesEveryElement/n_1000", Status.PASSED)

    def test_failure_message_becomes_output(self) -> None:
        self.check("Host.Fails", Status.FAILED, output="fake_test.cu:42\nExpected equality")

    def test_signals_are_crashes_with_the_output_tail(self) -> None:
        self.check("Crash.Aborts", Status.CRASHED, "crashed: SIGABRT", "about to abort")
        self.check("Crash.Segfaults", Status.CRASHED, "crashed: SIGSEGV", "about to segfault")

    def test_exit_without_report_is_a_crash(self) -> None:
        self.check("Exit.Early", Status.CRASHED,
                   "crashed: exited with code 0 before reporting a result", "leaving early")
        self.check("Exit.Three", Status.CRASHED,
                   "crashed: exited with code 3 before reporting a result")

    def test_stdout_never_decides(self) -> None:
        self.check("Liar.ClaimsToPass", Status.FAILED, output="value is wrong")
        self.assertNotIn("PASSED", self.by_id["Liar.ClaimsToPass"].output)

    def test_hang_times_out_quickly_and_others_are_still_graded(self) -> None:
        self.check("Hang.Sleeps", Status.TIMED_OUT, "timed out after 2 s")
        self.check("Hang.SleepsToo", Status.TIMED_OUT, "timed out after 2 s")
        # The second hang runs beside the tests after the first: 2 s + 2 s, not more.
        self.assertLess(self.elapsed, 8.0)
        self.assertEqual(len(self.lab.tests), 20)

    def test_a_forged_verdict_is_not_believed(self) -> None:
        self.check("Forger.WritesAPass", Status.CRASHED,
                   "crashed: no authentic result (the result file is not signed by the kit's "
                   "main())")

    def test_a_verdict_signed_with_a_wrong_key_is_not_believed(self) -> None:
        self.check("Forger.SignsWithAGuess", Status.CRASHED,
                   "crashed: no authentic result (the result file's signature does not match "
                   "this run's key)")

    def test_a_signed_verdict_edited_afterwards_is_not_believed(self) -> None:
        self.check("Forger.EditsTheVerdict", Status.CRASHED,
                   "crashed: no authentic result (the result file's signature does not match "
                   "this run's key)")

    def test_tests_run_in_a_scratch_directory(self) -> None:
        litter = self.by_id["Litter.WritesReports"]
        self.check("Litter.WritesReports", Status.PASSED)
        cwd = Path(litter.measurements["cwd"])
        self.assertTrue(cwd.name == "work" and cwd.parent.name.startswith("kit-test-"), cwd)
        self.assertFalse(cwd.exists())  # removed with everything the test wrote there

    def test_perf_gated_by_failing_correctness(self) -> None:
        self.check("Perf.Saxpy", Status.NOT_RUN, runner.PERF_GATE_REASON)

    def test_seed_reaches_the_test(self) -> None:
        self.assertEqual(self.by_id["Host.Passes"].measurements["seed"], str(SEED))

    def test_hidden_title_marker(self) -> None:
        hidden = self.by_id["Host.Hidden"]
        self.assertEqual((hidden.title, hidden.visibility), ("edge cases pass", "hidden"))
        self.assertEqual(self.by_id["Host.Passes"].visibility, "visible")

    def test_tests_ordered_by_step_and_subtotals(self) -> None:
        steps = [t.step for t in self.lab.tests]
        self.assertEqual(steps, sorted(steps, key=["alpha.1", "alpha.2", "alpha.3", "alpha.perf"].index))
        subtotals = {s.step: (s.score, s.max_score) for s in self.lab.subtotals()}
        self.assertEqual(subtotals, {"alpha.1": (3, 6), "alpha.2": (3, 3), "alpha.3": (3, 15),
                                     "alpha.perf": (0, 4)})
        self.assertEqual((self.lab.score, self.lab.max_score), (9, 28))

    def test_one_process_runs_tests_until_a_fault_then_a_fresh_one_the_rest(self) -> None:
        pid = {t.id: t.measurements.get("pid") for t in self.lab.tests}
        self.assertEqual(pid["Host.Passes"], pid["Host.Fails"])
        self.assertEqual(pid["Gpu.Works"], pid["Host.Passes"])
        # Crash.Aborts ends its process: the tests after it run in another.
        self.assertNotEqual(pid["Liar.ClaimsToPass"], pid["Host.Passes"])
        self.assertLess(len(set(pid.values()) - {None}), len(self.lab.tests) // 2)

    def test_a_broken_context_fails_its_test_and_the_next_gets_a_fresh_process(self) -> None:
        self.check("Gpu.BreaksTheContext", Status.FAILED,
                   "left the GPU in an error state: an illegal memory access was encountered")
        self.assertNotIn("kit_context_lost", self.by_id["Gpu.BreaksTheContext"].measurements)


class ErasedVerdictsTest(unittest.TestCase):
    """Code that runs beside the verdicts (pre-main code in a worker, or a plain grader) deletes
    the ones already written and replays a passing one: nothing it does turns into a pass."""

    def test_deleted_and_replayed_verdicts_never_pass_a_test(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_TESTS="pass,fail,eraser"):
            target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(Path(tmp) / "bin",
                                                                             "01_alpha"))
            tests = {t.id: t for t in runner.run([target], runner.RunOptions(
                "student", SEED, 1)).labs[0].tests}
        # Host.Passes may lose its own verdict (deleted before the runner read it): the attack
        # can only cost the attacker points, never make a failing test pass.
        self.assertIsNot(tests["Host.Fails"].status, Status.PASSED)
        self.assertIsNot(tests["Forger.ErasesAndReplays"].status, Status.PASSED)


class FailFastAndKindsTest(unittest.TestCase):
    """kit.py mutate's options: stop a lab at its first failure; run only some kinds."""

    def run_lab(self, options: runner.RunOptions, first_step: str | None = None,
                **env: str) -> dict[str, TestResult]:
        with tempfile.TemporaryDirectory() as tmp, fake_env(**env):
            target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(Path(tmp) / "bin",
                                                                             "01_alpha"),
                                      first_step=first_step)
            return {t.id: t for t in runner.run([target], options).labs[0].tests}

    def test_fail_fast_leaves_the_tests_after_a_failure_unrun(self) -> None:
        tests = self.run_lab(runner.RunOptions("student", SEED, 1, fail_fast=True),
                             FAKE_GPU="1", FAKE_TESTS="pass,fail,gpu,timed,perf")
        self.assertIs(tests["Host.Passes"].status, Status.PASSED)
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        for later in ("Gpu.Works", "Timeline.StagesLastAsLongAsTheirWork"):
            self.assertEqual((tests[later].status, tests[later].reason),
                             (Status.NOT_RUN, runner.FAIL_FAST_REASON))
        self.assertEqual(tests["Perf.Saxpy"].reason, runner.PERF_GATE_REASON)

    def test_first_step_runs_its_tests_before_the_others(self) -> None:
        # kit.py mutate: the mutated step first. Host.Fails (step 1) would stop Gpu.Works
        # (step 2) with fail fast; with step 2 first, Gpu.Works runs, and in its own process.
        tests = self.run_lab(runner.RunOptions("student", SEED, 1, fail_fast=True), "alpha.2",
                             FAKE_GPU="1", FAKE_TESTS="pass,fail,gpu")
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        self.assertNotEqual(tests["Gpu.Works"].measurements.get("pid"),
                            tests["Host.Passes"].measurements.get("pid"))

    def test_a_failure_in_the_first_step_leaves_the_others_unrun(self) -> None:
        tests = self.run_lab(runner.RunOptions("student", SEED, 1, fail_fast=True), "alpha.1",
                             FAKE_GPU="1", FAKE_TESTS="pass,fail,gpu")
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        self.assertEqual((tests["Gpu.Works"].status, tests["Gpu.Works"].reason),
                         (Status.NOT_RUN, runner.FAIL_FAST_REASON))

    def test_only_the_kinds_asked_for_run(self) -> None:
        tests = self.run_lab(runner.RunOptions("student", SEED, 2, kinds=frozenset({"host"})),
                             FAKE_GPU="1", FAKE_TESTS="pass,gpu,perf")
        self.assertIs(tests["Host.Passes"].status, Status.PASSED)
        for other in ("Gpu.Works", "Perf.Saxpy"):
            self.assertEqual((tests[other].status, tests[other].reason),
                             (Status.NOT_RUN, runner.NOT_SELECTED_REASON))

    def test_a_test_left_out_is_not_run_and_stops_nothing(self) -> None:
        # kit.py mutate leaves out the tests the reference fails: with fail fast, the failing
        # test left out must not stop the tests after it.
        tests = self.run_lab(runner.RunOptions("student", SEED, 1, fail_fast=True,
                                               leave_out=frozenset({"Host.Fails"})),
                             FAKE_GPU="1", FAKE_TESTS="pass,fail,gpu")
        self.assertEqual((tests["Host.Fails"].status, tests["Host.Fails"].reason),
                         (Status.NOT_RUN, runner.NOT_SELECTED_REASON))
        self.assertIs(tests["Host.Passes"].status, Status.PASSED)
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)


class SettleTest(unittest.TestCase):
    """The selftest's known-wrong submissions: once a step they must lose has failed with the
    words they must be told, that step's tests left are not run; other steps' still are."""

    def run_lab(self, settle: runner.Settle, jobs: int = 4, **env: str) -> dict[str, TestResult]:
        with tempfile.TemporaryDirectory() as tmp, fake_env(**env):
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"),
                                      timeout_s=2, settle=settle)
            return {t.id: t for t in runner.run([target], runner.RunOptions(
                "student", SEED, jobs)).labs[0].tests}

    def test_a_second_hang_of_a_lost_step_is_not_waited_for(self) -> None:
        timed_out = lambda failing: any("timed out" in t.reason for t in failing)  # noqa: E731
        start = time.monotonic()
        tests = self.run_lab(runner.Settle(frozenset({"alpha.3"}), timed_out), jobs=1,
                             FAKE_GPU="1", FAKE_TESTS="pass,gpu,hang,hang2,exit0,memcheck")
        elapsed = time.monotonic() - start
        self.assertIs(tests["Hang.Sleeps"].status, Status.TIMED_OUT)
        for settled in ("Hang.SleepsToo", "Exit.Early"):
            self.assertEqual((tests[settled].status, tests[settled].reason),
                             (Status.NOT_RUN, runner.SETTLED_REASON))
        self.assertIs(tests["Host.Passes"].status, Status.PASSED)  # other steps run
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertLess(elapsed, 3.9)  # one 2 s limit, not two

    def test_the_tests_after_a_settled_hang_go_on_in_one_process(self) -> None:
        # The hang's step is lost and its tests are not run: the tests left, of other steps,
        # are not spread over processes as an unsettled timeout's are (two contexts each).
        timed_out = lambda failing: any("timed out" in t.reason for t in failing)  # noqa: E731
        tests = self.run_lab(runner.Settle(frozenset({"alpha.3"}), timed_out), jobs=4,
                             FAKE_GPU="1", FAKE_TESTS="hang,hang2,pass,gpu,param")
        self.assertIs(tests["Hang.Sleeps"].status, Status.TIMED_OUT)
        self.assertEqual(tests["Hang.SleepsToo"].reason, runner.SETTLED_REASON)
        after = [tests[name] for name in ("Host.Passes", "Gpu.Works",
                                          "Sizes/SaxpyTest.WritesEveryElement/n_1000")]
        self.assertTrue(all(t.status is Status.PASSED for t in after), after)
        self.assertEqual(len({t.measurements.get("pid") for t in after}), 1, after)

    def test_a_step_not_settled_until_the_words_are_shown(self) -> None:
        never = lambda failing: False  # noqa: E731
        tests = self.run_lab(runner.Settle(frozenset({"alpha.1"}), never),
                             FAKE_TESTS="pass,fail,hidden")
        self.assertIs(tests["Host.Hidden"].status, Status.PASSED)

    def test_only_the_steps_it_must_lose_settle(self) -> None:
        always = lambda failing: True  # noqa: E731
        tests = self.run_lab(runner.Settle(frozenset({"alpha.2"}), always), jobs=1,
                             FAKE_TESTS="fail,hidden,abort,exit0")
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        self.assertIs(tests["Host.Hidden"].status, Status.PASSED)  # alpha.1 is not in `steps`
        self.assertIs(tests["Exit.Early"].status, Status.CRASHED)


class SettleGoesOnTest(unittest.TestCase):
    """By default (KIT_SETTLE_GOES_ON unset): a process whose failure settled a step goes on with
    the tests left (one process, not two); a test of the settled step that runs on is cut at the
    grace. KIT_SETTLE_GOES_ON=0 ends the process there and starts another."""

    def run_lab(self, tests: str, timeout_s: float = 2, goes_on: str | None = None
                ) -> dict[str, TestResult]:
        always = lambda failing: True  # noqa: E731
        env = {} if goes_on is None else {"KIT_SETTLE_GOES_ON": goes_on}
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(os.environ, {}), fake_env(FAKE_GPU="1", FAKE_TESTS=tests, **env):
            if goes_on is None:
                os.environ.pop("KIT_SETTLE_GOES_ON", None)  # the default, whatever the shell set
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"),
                                      timeout_s=timeout_s,
                                      settle=runner.Settle(frozenset({"alpha.1"}), always))
            return {t.id: t for t in runner.run([target], runner.RunOptions(
                "student", SEED, 1)).labs[0].tests}

    def test_the_process_goes_on_after_the_failure_that_settles(self) -> None:
        tests = self.run_lab("fail,hidden,pass,gpu")
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        for settled in ("Host.Hidden", "Host.Passes"):
            self.assertEqual((tests[settled].status, tests[settled].reason),
                             (Status.NOT_RUN, runner.SETTLED_REASON))
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertEqual(tests["Gpu.Works"].measurements.get("pid"),
                         tests["Host.Fails"].measurements.get("pid"))  # one process

    def test_set_to_0_the_process_ends_and_another_starts(self) -> None:
        tests = self.run_lab("fail,hidden,pass,gpu", goes_on="0")
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertNotEqual(tests["Gpu.Works"].measurements.get("pid"),
                            tests["Host.Fails"].measurements.get("pid"))

    def test_a_settled_test_that_runs_on_ends_its_process_at_the_grace(self) -> None:
        with mock.patch.object(runner, "SETTLED_GRACE_S", 0.5):
            start = time.monotonic()
            tests = self.run_lab("fail,hang1,pass,gpu", timeout_s=20)
            elapsed = time.monotonic() - start
        for settled in ("Hang.InStepOne", "Host.Passes"):
            self.assertEqual((tests[settled].status, tests[settled].reason),
                             (Status.NOT_RUN, runner.SETTLED_REASON))
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertLess(elapsed, 10)  # not the hang's 20 s


    def test_a_process_with_only_settled_tests_left_ends_at_once(self) -> None:
        # Every test after the failure is of the settled step: none can change a verdict, so
        # the process ends there instead of running into the hang until the grace cuts it.
        with mock.patch.object(runner, "SETTLED_GRACE_S", 5.0):
            start = time.monotonic()
            tests = self.run_lab("fail,hang1,pass", timeout_s=20)
            elapsed = time.monotonic() - start
        self.assertIs(tests["Host.Fails"].status, Status.FAILED)
        for settled in ("Hang.InStepOne", "Host.Passes"):
            self.assertEqual((tests[settled].status, tests[settled].reason),
                             (Status.NOT_RUN, runner.SETTLED_REASON))
        self.assertLess(elapsed, 4.0)  # not the grace's 5 s


class SettledTimedTest(unittest.TestCase):
    """A timed test of a step already lost is not run; its early process, if it has one, runs
    nothing and holds no turn (lab 02's known-wrong run waited READY_WAIT_S, 10 s, for one,
    session 35)."""

    def grade(self, alpha_tests: str, beta_tests: str, timeout_s: float) -> RunResult:
        always = lambda failing: True  # noqa: E731
        with tempfile.TemporaryDirectory() as tmp, fake_env(
                FAKE_GPU="1", FAKE_TESTS_01_ALPHA=alpha_tests, FAKE_TESTS_02_BETA=beta_tests), \
                mock.patch.object(runner, "READY_WAIT_S", 30.0):
            alpha = runner.LabTarget(make_lab("01_alpha"),
                                     make_fake_binary(Path(tmp) / "bin", "01_alpha"),
                                     timeout_s=timeout_s,
                                     settle=runner.Settle(frozenset({"alpha.3"}), always))
            beta = runner.LabTarget(make_lab("02_beta"), make_fake_binary(Path(tmp) / "bin",
                                                                          "02_beta"))
            run = runner.run([alpha, beta], runner.RunOptions("student", SEED, 4))
        timed = next(t for t in run.labs[0].tests if t.id == "Timeline.StagesLastAsLongAsTheirWork")
        self.assertEqual((timed.status, timed.reason), (Status.NOT_RUN, runner.SETTLED_REASON))
        self.assertTrue(all(t.status is Status.PASSED for t in run.labs[1].tests))
        return run

    def test_a_timed_test_of_a_step_settled_after_its_process_started_is_not_run(self) -> None:
        # Beta's quick test ends first, so alpha's timed process starts early, while alpha's
        # step 3 still hangs; the hang then settles the step, and the timed test never runs.
        run = self.grade("pass,hang,timed", "pass", timeout_s=2)
        tests = {t.id: t for t in run.labs[0].tests}
        self.assertIs(tests["Hang.Sleeps"].status, Status.TIMED_OUT)

    def test_a_timed_test_of_a_step_settled_before_the_early_start_holds_no_turn(self) -> None:
        # Alpha's process ends first, its step 3 settled by the crash: its timed test is not
        # started early, and the timed phase begins at once.
        run = self.grade("pass,abort,timed", "pass,gpu", timeout_s=5)
        tests = {t.id: t for t in run.labs[0].tests}
        self.assertIs(tests["Crash.Aborts"].status, Status.CRASHED)
        self.assertLess(run.timings["timed"], 15.0)

    def test_early_work_that_ends_without_a_process_holds_no_turn(self) -> None:
        def raises(go: protocol.StartSignal) -> None:
            raise RuntimeError("no process")
        for work in (lambda go: None, raises):
            early = runner._ahead("timed 01_alpha", protocol.StartSignal(), work)
            early[1].join(10)
            began = time.monotonic()
            with mock.patch.object(runner, "READY_WAIT_S", 30.0):
                runner._wait_ready([early])
            self.assertLess(time.monotonic() - began, 5.0)


class AloneTimeoutTest(unittest.TestCase):
    def test_a_hang_in_a_timed_test_is_cut_at_the_alone_limit(self) -> None:
        # The selftest's known-wrong submission whose timed test hangs: its timed tests get the
        # tighter limit (wrong.json's alone_timeout_s), its correctness tests keep timeout_s.
        with tempfile.TemporaryDirectory() as tmp, fake_env(
                FAKE_GPU="1", FAKE_TESTS="pass,gpu,timed", FAKE_TIMED_HANGS="1"):
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"),
                                      timeout_s=4, alone_timeout_s=1)
            start = time.monotonic()
            run = runner.run([target], runner.RunOptions("student", SEED, 2))
            elapsed = time.monotonic() - start
        tests = {t.id: t for t in run.labs[0].tests}
        timed = tests["Timeline.StagesLastAsLongAsTheirWork"]
        self.assertEqual((timed.status, timed.reason), (Status.TIMED_OUT, "timed out after 1 s"))
        self.assertIs(tests["Gpu.Works"].status, Status.PASSED)
        self.assertLess(elapsed, 3.5)


class LoneTimeoutTest(unittest.TestCase):
    """A right test that times out beside hanging ones is graded again alone; hangs stay hangs."""

    def test_a_test_starved_by_hangs_beside_it_passes_alone(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as spin, \
                fake_env(FAKE_GPU="1", FAKE_SPIN_DIR=spin, FAKE_TESTS_01_ALPHA="hang,hang2",
                         FAKE_TESTS_02_BETA="pass,starved"):
            # The starved test's limit (2 s) ends while the first hang (3 s) still runs; alone,
            # it has 2 s to start a Python process (1 s was too little once, in the student
            # edition's selftest beside the selftest's gradings on an H100 machine).
            targets = [runner.LabTarget(make_lab(lab, timeout), make_fake_binary(Path(tmp) / "bin",
                                                                               lab))
                       for lab, timeout in (("01_alpha", 3.0), ("02_beta", 2.0))]
            run = runner.run(targets, runner.RunOptions("student", SEED, 4))
        tests = {t.id: t for t in run.tests()}
        starved = tests["Busy.WaitsWhileAKernelSpins"]
        self.assertIs(starved.status, Status.PASSED, starved)
        # Beside the two hangs, at least; on a loaded machine (CI builds beside the unit tests)
        # the quick test of 02_beta can miss its 1 s limit too, and is then graded again alone.
        again = re.fullmatch(r"timed out beside (\d+) other timed-out test\(s\); graded again "
                             r"alone: passed", starved.measurements[runner.REGRADED_KEY])
        self.assertIsNotNone(again, starved.measurements[runner.REGRADED_KEY])
        self.assertGreaterEqual(int(again.group(1)), 2)
        for hang in ("Hang.Sleeps", "Hang.SleepsToo"):  # two in one step: a mistake that hangs
            self.assertIs(tests[hang].status, Status.TIMED_OUT)
            self.assertNotIn(runner.REGRADED_KEY, tests[hang].measurements)

    def test_once_a_lab_hangs_again_alone_its_other_lone_timeouts_stand(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_GPU="1", FAKE_TESTS="pass,hang1,hang"):
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"))
            (lab,) = runner.run([target], runner.RunOptions("student", SEED, 4)).labs
        hangs = [t for t in lab.tests if t.id.startswith("Hang.")]
        self.assertEqual([t.status for t in hangs], [Status.TIMED_OUT] * 2)
        again = [t.measurements.get(runner.REGRADED_KEY) for t in hangs]
        self.assertIsNone(again[1])
        # Beside the other hang, at least (a loaded machine can time out the passing test too).
        self.assertRegex(again[0] or "", r"^timed out beside \d+ other timed-out test\(s\); "
                                         r"graded again alone: timed out after 2 s$")

    def test_a_single_timeout_is_not_graded_again(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_TESTS="pass,hang"):
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"))
            (lab,) = runner.run([target], runner.RunOptions("student", SEED, 2)).labs
        hang = next(t for t in lab.tests if t.id == "Hang.Sleeps")
        self.assertIs(hang.status, Status.TIMED_OUT)
        self.assertNotIn(runner.REGRADED_KEY, hang.measurements)


class SelftestSettleTest(unittest.TestCase):
    """The selftest settles a known-wrong submission's step on the same words it judges by."""

    def failing(self, reason: str, output: str = "") -> TestResult:
        return TestResult("01_alpha", "alpha.1", "A.B", "t", "gpu", 1, Status.FAILED, reason,
                          output)

    def test_message_and_diagnosis_both_needed(self) -> None:
        from kitgrade import selftest, wrong
        sub = wrong.WrongSubmission("x", "m", (), ("alpha.1",), "timed out", likely="grid rounded")
        settle = selftest._settle(sub)
        self.assertEqual(settle.steps, frozenset({"alpha.1"}))
        self.assertFalse(settle.shown([self.failing("timed out after 2 s")]))
        self.assertTrue(settle.shown([self.failing("timed out after 2 s"),
                                      self.failing("wrong", "likely: grid\n  rounded down")]))
        right = wrong.WrongSubmission("right_x", "m", (), (), "")
        self.assertIsNone(selftest._settle(right))


class PerfAndDeviceTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_perf_runs_alone_after_correctness_and_records_measurements(self) -> None:
        log = self.tmp / "events.log"
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,param,perf", FAKE_LOG=str(log)):
            (lab,) = grade(["01_alpha"], self.tmp)
        perf = lab.tests[-1]
        self.assertIs(perf.status, Status.PASSED)
        self.assertEqual((perf.measurements["ratio"], perf.measurements["threshold"],
                          perf.measurements["student_rate"]), ("0.91", "0.60", "2710.0 GB/s"))
        self.assertEqual((lab.score, lab.max_score), (9, 9))
        events = [line.split() for line in log.read_text().splitlines()]
        perf_start = next(float(t) for kind, name, t in events if kind == "start" and name == "Perf.Saxpy")
        others_end = max(float(t) for kind, name, t in events if kind == "end" and name != "Perf.Saxpy")
        self.assertGreater(perf_start, others_end)

    def test_the_perf_process_starts_early_and_waits_for_its_turn(self) -> None:
        log = self.tmp / "events.log"
        real_perf = runner._perf

        def perf_later(*args) -> None:  # as if counter tests ran meanwhile
            time.sleep(1.0)
            real_perf(*args)
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,perf", FAKE_LOG=str(log)), \
                mock.patch.object(runner, "_perf", perf_later):
            (lab,) = grade(["01_alpha"], self.tmp)
        self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
        events = [line.split() for line in log.read_text().splitlines()]
        (waiting,) = [float(t) for kind, _, t in events if kind == "waiting"]
        perf_start = next(float(t) for kind, name, t in events
                          if kind == "start" and name == "Perf.Saxpy")
        others_end = max(float(t) for kind, name, t in events
                         if kind == "end" and name != "Perf.Saxpy")
        self.assertLess(waiting, perf_start)
        self.assertGreater(perf_start, others_end)

    def test_no_perf_turn_before_every_early_process_is_ready(self) -> None:
        # A process that never says it is ready holds the first turn for READY_WAIT_S, no longer.
        for never_ready in (False, True):
            with self.subTest(never_ready=never_ready):
                log = self.tmp / "events.log"
                log.unlink(missing_ok=True)
                env = {"FAKE_NEVER_READY": "1"} if never_ready else {}
                with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,perf", FAKE_LOG=str(log),
                              **env), mock.patch.object(runner, "READY_WAIT_S", 1.5):
                    (lab,) = grade(["01_alpha"], self.tmp)
                self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
                events = [line.split() for line in log.read_text().splitlines()]
                at = {(kind, name): float(t) for kind, name, t in events}
                # The turn comes once the other tests have ended; under load the early process
                # may only start waiting after that (its start, not the wait, was late).
                others_end = max(float(t) for kind, name, t in events
                                 if kind == "end" and name != "Perf.Saxpy")
                start = at[("start", "Perf.Saxpy")]
                if never_ready:
                    self.assertGreater(start - others_end, 1.2)
                else:
                    self.assertLess(start - max(others_end, at[("waiting", "Perf.Saxpy")]),
                                    1.2)

    def test_without_early_start_or_with_the_gate_closed_no_process_waits(self) -> None:
        for env in ({"KIT_PERF_EARLY": "0", "FAKE_TESTS": "pass,gpu,perf"},
                    {"FAKE_TESTS": "fail,gpu,perf"}):
            with self.subTest(env):
                log = self.tmp / "events.log"
                log.unlink(missing_ok=True)
                with fake_env(FAKE_GPU="1", FAKE_LOG=str(log), **env):
                    (lab,) = grade(["01_alpha"], self.tmp)
                self.assertNotIn("waiting", log.read_text())
                perf = next(t for t in lab.tests if t.id == "Perf.Saxpy")
                failing = "fail" in env["FAKE_TESTS"]
                self.assertIs(perf.status, Status.NOT_RUN if failing else Status.PASSED)
                if failing:
                    self.assertEqual(perf.reason, runner.PERF_GATE_REASON)

    def test_the_timed_process_starts_during_the_correctness_phase(self) -> None:
        timed = "Timeline.StagesLastAsLongAsTheirWork"
        for early, env in ((True, {"KIT_PERF_EARLY": "0"}), (False, {"KIT_TIMED_EARLY": "0"})):
            with self.subTest(early=early):
                log = self.tmp / "events.log"
                log.unlink(missing_ok=True)
                real_timed = runner._timed

                def timed_later(*args) -> None:  # as if other correctness tests ran meanwhile
                    time.sleep(1.0)
                    real_timed(*args)
                with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,timed,param,perf",
                              FAKE_LOG=str(log), **env), \
                        mock.patch.object(runner, "_timed", timed_later):
                    (lab,) = grade(["01_alpha"], self.tmp)
                self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
                events = [line.split() for line in log.read_text().splitlines()]
                at = {(kind, name): float(t) for kind, name, t in events}
                others_end = max(float(t) for kind, name, t in events
                                 if kind == "end" and name not in (timed, "Perf.Saxpy"))
                self.assertEqual(("waiting", timed) in at, early)
                if early:  # started once a correctness process had ended (here the only one)
                    self.assertLess(at[("waiting", timed)], at[("start", timed)])
                self.assertGreater(at[("start", timed)], others_end)
                self.assertGreater(at[("start", "Perf.Saxpy")], at[("end", timed)])

    def test_timed_tests_run_one_at_a_time_after_the_others_and_before_perf(self) -> None:
        log = self.tmp / "events.log"
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,timed,param,perf", FAKE_LOG=str(log)):
            (lab,) = grade(["01_alpha"], self.tmp)
        self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
        timed = "Timeline.StagesLastAsLongAsTheirWork"
        self.assertEqual(next(t.kind for t in lab.tests if t.id == timed), "timed")
        events = [line.split() for line in log.read_text().splitlines()]
        at = {(kind, name): float(t) for kind, name, t in events}
        parallel_end = max(float(t) for kind, name, t in events
                           if kind == "end" and name not in (timed, "Perf.Saxpy"))
        self.assertGreater(at[("start", timed)], parallel_end)
        self.assertGreater(at[("start", "Perf.Saxpy")], at[("end", timed)])

    def test_a_failing_timed_test_closes_the_perf_gate(self) -> None:
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,timed,perf", FAKE_TIMED_FAILS="1"):
            (lab,) = grade(["01_alpha"], self.tmp)
        self.assertEqual([t.status for t in lab.tests],
                         [Status.PASSED, Status.FAILED, Status.NOT_RUN])
        self.assertEqual(lab.tests[-1].reason, runner.PERF_GATE_REASON)

    def test_slow_perf_fails(self) -> None:
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,perf", FAKE_PERF_RATIO="0.30"):
            (lab,) = grade(["01_alpha"], self.tmp)
        self.assertIs(lab.tests[-1].status, Status.FAILED)
        self.assertIn("ratio 0.30 below 0.60", lab.tests[-1].output)

    def test_no_gpu_means_not_run_never_passed(self) -> None:
        with fake_env(FAKE_TESTS="pass,gpu,perf"):
            (lab,) = grade(["01_alpha"], self.tmp)
        gpu, perf = lab.tests[1], lab.tests[2]
        self.assertEqual((gpu.status, gpu.reason), (Status.NOT_RUN, NO_DEVICE_REASON))
        # Only the GPU was missing, so the perf test says that, not that correctness failed.
        self.assertEqual((perf.status, perf.reason), (Status.NOT_RUN, NO_DEVICE_REASON))
        self.assertEqual((gpu.score, perf.score, lab.score, lab.max_score), (0, 0, 2, 8))
        self.assertTrue(gpu.lacked_device(False) and perf.lacked_device(False))
        self.assertFalse(lab.tests[0].lacked_device(False))

    def test_too_little_gpu_memory_is_excused_like_a_missing_gpu(self) -> None:
        # Lab 02's test on 2^32 - 1 elements needs 33 GiB: on a smaller GPU it is not run, which
        # must neither count against a selftest nor hold back the perf tests (the gate asks
        # lacked_device), while a test that failed still does.
        short = TestResult(lab="01_alpha", step="01_alpha.2", id="Top.Huge", title="t",
                           kind="timed", points=1, status=Status.NOT_RUN,
                           reason=f"{NO_MEMORY_REASON}: needs 33 GiB free, this GPU has 15 GiB free")
        self.assertTrue(short.lacked_device(gpu_available=True))
        skipped = TestResult(lab="01_alpha", step="01_alpha.2", id="Top.Other", title="t",
                             kind="gpu", points=1, status=Status.NOT_RUN, reason="skipped")
        self.assertFalse(skipped.lacked_device(gpu_available=True))

    def test_no_gpu_and_a_failing_host_test_close_the_perf_gate(self) -> None:
        with fake_env(FAKE_TESTS="fail,gpu,perf"):
            (lab,) = grade(["01_alpha"], self.tmp)
        self.assertEqual((lab.tests[-1].status, lab.tests[-1].reason),
                         (Status.NOT_RUN, runner.PERF_GATE_REASON))

    def test_perf_gate_is_per_lab(self) -> None:
        with fake_env(FAKE_GPU="1", FAKE_TESTS_01_ALPHA="pass,perf", FAKE_TESTS_02_BETA="fail,perf"):
            alpha, beta = grade(["01_alpha", "02_beta"], self.tmp)
        self.assertIs(alpha.tests[-1].status, Status.PASSED)
        self.assertIs(beta.tests[-1].status, Status.NOT_RUN)

    def test_reference_variant_uses_reference_binary(self) -> None:
        with fake_env(FAKE_TESTS="pass"):
            (lab,) = grade(["01_alpha"], self.tmp, variant="reference")
        self.assertEqual((lab.variant, lab.tests[0].status), ("reference", Status.PASSED))

    def test_device_query(self) -> None:
        binary = make_fake_binary(self.tmp, "01_alpha")
        with fake_env(FAKE_GPU="1"):
            self.assertEqual(protocol.query_device(binary)["name"], "Fake H100")
        with fake_env():
            self.assertEqual(protocol.query_device(binary),
                             {"available": False, "reason": NO_DEVICE_REASON})

    def test_the_device_query_runs_beside_the_listing(self) -> None:
        # The query waits until a lab's listing has ended: run as before, one after the other,
        # it would give up waiting and report no GPU, and the GPU test would not run.
        listed = threading.Event()
        real_query, real_prepare = runner._device, runner._prepare

        def query(targets):
            return real_query(targets) if listed.wait(timeout=10) else {"available": False}

        def prepare(*args):
            lab = real_prepare(*args)
            listed.set()
            return lab
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu"), \
                mock.patch.object(runner, "_device", query), \
                mock.patch.object(runner, "_prepare", prepare):
            targets = [runner.LabTarget(make_lab("01_alpha"),
                                        make_fake_binary(self.tmp / "bin", "01_alpha"))]
            run = runner.run(targets, runner.RunOptions("student", SEED, 4))
        self.assertEqual(run.device["name"], "Fake H100")
        self.assertEqual([t.status for t in run.labs[0].tests], [Status.PASSED] * 2)


class InterruptTest(unittest.TestCase):
    def test_interrupt_kills_running_tests_at_once(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        log = tmp / "events.log"

        def interrupt(_: TestResult) -> None:
            while "start Hang.Sleeps" not in log.read_text():  # the hang is surely running
                time.sleep(0.01)
            raise KeyboardInterrupt

        target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(tmp, "01_alpha"))
        start = time.monotonic()
        with fake_env(FAKE_TESTS="pass,hang", FAKE_LOG=str(log)), self.assertRaises(KeyboardInterrupt):
            runner.run([target], runner.RunOptions("student", 1, 2, 60.0), interrupt)
        self.assertLess(time.monotonic() - start, 10.0)


class TargetTimeLimitTest(unittest.TestCase):
    def test_a_targets_own_limit_replaces_the_runs_and_the_labs(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(tmp, "01_alpha"),
                                  timeout_s=1.0)
        start = time.monotonic()
        with fake_env(FAKE_TESTS="pass,hang"):
            (lab,) = runner.run([target], runner.RunOptions("student", 1, 2, 30.0)).labs
        hung = [t for t in lab.tests if t.status is Status.TIMED_OUT]
        self.assertTrue(hung, lab.tests)
        self.assertEqual({t.reason for t in hung}, {"timed out after 1 s"})
        self.assertLess(time.monotonic() - start, 10.0)

    def test_only_the_settled_steps_get_the_targets_limit(self) -> None:
        # The selftest's known-wrong submission that hangs: the steps it loses (here alpha.3,
        # the hang's) get its tight limit, cut off by the runner in a process whose judge has
        # the run's; a slow test of a step it keeps (alpha.1, 1.6 s) keeps the run's limit.
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(tmp, "01_alpha"),
                                  timeout_s=1.0, settle=runner.Settle(
                                      frozenset({"alpha.3"}), lambda failing: False))
        start = time.monotonic()
        with fake_env(FAKE_TESTS="pass,hang", FAKE_PASS_SLEEP_S="1.6"):
            (lab,) = runner.run([target], runner.RunOptions("student", 1, 1, 30.0)).labs
        tests = {t.id: t for t in lab.tests}
        self.assertIs(tests["Host.Passes"].status, Status.PASSED, tests["Host.Passes"])
        self.assertEqual((tests["Hang.Sleeps"].status, tests["Hang.Sleeps"].reason),
                         (Status.TIMED_OUT, "timed out after 1 s"))
        self.assertLess(tests["Hang.Sleeps"].duration_s, 3.0)
        self.assertLess(time.monotonic() - start, 10.0)


class LabErrorTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_missing_binary(self) -> None:
        target = runner.LabTarget(make_lab("01_alpha"), self.tmp / "bin" / "grade_01_alpha")
        run = runner.run([target], runner.RunOptions("student", 1, 1))
        self.assertEqual(run.labs[0].error, f"binary not built: {target.binary}")
        self.assertEqual(run.device["available"], False)
        self.assertEqual(run.errors, run.labs)

    def test_listing_failures(self) -> None:
        cases = {
            "fail": "--kit_list exited with code 2: error: listing broke",
            "garbage": "--kit_list did not print JSON",
            "wrong_variant": "it reports variant 'reference', expected 'student'",
        }
        for mode, expected in cases.items():
            with self.subTest(mode=mode), fake_env(FAKE_LIST=mode):
                (lab,) = grade(["01_alpha"], self.tmp)
                assert lab.error is not None
                self.assertTrue(lab.error.startswith("could not list tests of "), lab.error)
                self.assertIn(expected, lab.error)
                self.assertEqual(lab.tests, [])


class ListingValidationTest(unittest.TestCase):
    STEPS = ("alpha.1", "alpha.perf")

    def listing(self, **overrides: Any) -> str:
        test = {"id": "Suite.Name", "step": "alpha.1", "kind": "host", "points": 2, "title": "t"}
        test.update(overrides)
        return json.dumps({"lab": "01_alpha", "variant": "student", "tests": [test]})

    def test_valid(self) -> None:
        (spec,) = parse_listing(self.listing(id="P/S.N/p_1"), "01_alpha", "student", self.STEPS)
        self.assertEqual(spec.id, "P/S.N/p_1")

    def test_rejections(self) -> None:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"kind": "cpu"}, "tests[0].kind: 'cpu' is not one of host, gpu, timed, perf"),
            ({"step": "alpha.9"}, "tests[0].step: 'alpha.9' is not a step"),
            ({"id": "Suite.*"}, "tests[0].id"),
            ({"id": "NoDot"}, "tests[0].id"),
            ({"points": True}, "tests[0].points"),
            ({"points": -1}, "tests[0].points"),
            ({"title": ""}, "tests[0].title"),
        ]
        for override, expected in cases:
            with self.subTest(override=override), self.assertRaises(ProtocolError) as caught:
                parse_listing(self.listing(**override), "01_alpha", "student", self.STEPS)
            self.assertIn(expected, str(caught.exception))
        with self.assertRaisesRegex(ProtocolError, "reports lab '01_alpha', expected '02_beta'"):
            parse_listing(self.listing(), "02_beta", "student", self.STEPS)
        twice = json.dumps({"lab": "01_alpha", "variant": "student",
                            "tests": [json.loads(self.listing())["tests"][0]] * 2})
        with self.assertRaisesRegex(ProtocolError, "listed twice"):
            parse_listing(twice, "01_alpha", "student", self.STEPS)


class JudgeTest(unittest.TestCase):
    """Verdict rules that the fake binary does not reach."""

    @staticmethod
    def report(**entry: Any) -> str:
        base = {"name": "Name", "classname": "Suite", "status": "RUN", "result": "COMPLETED"}
        return json.dumps({"testsuites": [{"name": "Suite", "testsuite": [{**base, **entry}]}]})

    def test_rules(self) -> None:
        cases = [
            (0, self.report(), Status.PASSED, ""),
            (1, self.report(), Status.FAILED, "exited with code 1 although GoogleTest recorded no failure"),
            (0, self.report(result="SKIPPED"), Status.NOT_RUN, "skipped"),
            (1, self.report(result="SKIPPED"), Status.FAILED,
             "exited with code 1 although GoogleTest recorded no failure"),
            (0, self.report(result="SKIPPED", not_run="needs sm_90"), Status.NOT_RUN, "needs sm_90"),
            (0, self.report(result="SUPPRESSED"), Status.NOT_RUN, "GoogleTest reported result 'SUPPRESSED'"),
            (0, self.report(failures="recorded as a property"), Status.FAILED, ""),
            (0, self.report(name="Other"), Status.CRASHED,
             "crashed: exited with code 0 without a readable result for this test"),
            (1, "{truncated", Status.CRASHED,
             "crashed: exited with code 1 without a readable result for this test"),
            (2, self.report(), Status.CRASHED, "crashed: exited with code 2 after reporting a result"),
            (-9, None, Status.CRASHED, "crashed: SIGKILL"),
            (None, None, Status.TIMED_OUT, "timed out after 1.5 s"),
        ]
        for returncode, report, status, reason in cases:
            with self.subTest(returncode=returncode, report=report):
                outcome = judge("Suite.Name", returncode, report, "tail", 1.5)
                self.assertEqual((outcome.status, outcome.reason), (status, reason))

    def test_unauthentic_verdict_is_a_crash_whatever_it_says(self) -> None:
        # Whatever became of the process (the runner ends one that wrote a forged verdict).
        for returncode in (0, 1, None, -11):
            outcome = judge("Suite.Name", returncode, None, "tail", 1.5, "it is not signed")
            self.assertEqual((outcome.status, outcome.reason),
                             (Status.CRASHED, "crashed: no authentic result (it is not signed)"))

    def test_measurements_are_the_non_gtest_keys(self) -> None:
        outcome = judge("Suite.Name", 0, self.report(ratio="0.9", spread="0.01", time="1s"), "", 1)
        self.assertEqual(outcome.measurements, {"ratio": "0.9", "spread": "0.01"})


class AuthenticateTest(unittest.TestCase):
    """The verdict file must carry an HMAC-SHA-256 of its body under this run's nonce."""

    NONCE = b"a" * 64
    BODY = b'{"testsuites": []}'

    def signed(self, key: bytes, body: bytes | None = None) -> bytes:
        body = self.BODY if body is None else body
        return body + b"\nkit-hmac-sha256 " + hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b"\n"

    def test_right_nonce(self) -> None:
        self.assertEqual(protocol.authenticate(self.signed(self.NONCE), self.NONCE),
                         (self.BODY.decode(), None))

    def test_no_file_is_not_an_authenticity_problem(self) -> None:
        self.assertEqual(protocol.authenticate(None, self.NONCE), (None, None))

    def test_forged_absent_or_wrong_nonce(self) -> None:
        unsigned = "the result file is not signed by the kit's main()"
        mismatch = "the result file's signature does not match this run's key"
        cases = {
            "forged, no signature": (self.BODY + b"\n", unsigned),
            "empty file": (b"", unsigned),
            "signature line malformed": (self.BODY + b"\nkit-hmac-sha256 xyz\n", unsigned),
            "signed with another nonce": (self.signed(b"b" * 64), mismatch),
            "signed with no nonce": (self.signed(b""), mismatch),
            "body edited after signing": (self.signed(self.NONCE).replace(b"[]", b"[1]"), mismatch),
            "signature of another body": (b"{}" + self.signed(self.NONCE)[len(self.BODY):], mismatch),
        }
        for name, (data, problem) in cases.items():
            with self.subTest(name):
                self.assertEqual(protocol.authenticate(data, self.NONCE), (None, problem))

    def test_each_test_gets_a_fresh_nonce_on_a_closed_pipe(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        script = tmp / "show_nonce.sh"
        script.write_text('#!/bin/sh\ncat <&"$KIT_NONCE_FD" > "$1"\n')
        script.chmod(0o755)
        seen = []
        for i in range(2):
            with (tmp / f"log{i}").open("wb") as out:
                nonce = f"{i}".encode() * 64
                proc, read_end = protocol._start_with_nonce(
                    [str(script), str(tmp / f"seen{i}")], nonce, 1, out, tmp)
                code = proc.wait(timeout=5.0)
                os.close(read_end)
                protocol._live.discard(proc)
            self.assertEqual(code, 0)
            seen.append((tmp / f"seen{i}").read_bytes())
        self.assertEqual(seen, [b"0" * 64, b"1" * 64])


if __name__ == "__main__":
    unittest.main()


class TrustedListingTest(unittest.TestCase):
    """Student code runs before main(): a binary may answer --kit_list with a forged list."""

    def test_the_reference_build_lists_the_tests_when_there_is_one(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_TESTS="pass,fail"):
            bin_dir = Path(tmp) / "bin"
            honest = make_fake_binary(bin_dir, "01_alpha")
            reference = make_fake_binary(bin_dir, "01_alpha", "reference")
            forged = bin_dir / "forger"
            listing = {"lab": "01_alpha", "variant": "student", "tests": [
                {"id": "Host.Passes", "step": "alpha.1", "kind": "host", "points": 99,
                 "title": "the whole lab"}]}
            forged.write_text(f"#!/bin/sh\nif [ \"$1\" = --kit_list ]; then echo "
                              f"'{json.dumps(listing)}'; exit 0; fi\nexec {honest} \"$@\"\n")
            forged.chmod(0o755)
            options = runner.RunOptions("student", 1, 2)
            lab = make_lab("01_alpha")
            believed = runner.run([runner.LabTarget(lab, forged)], options).labs[0]
            self.assertEqual((believed.score, believed.max_score), (99, 99))  # the attack
            trusted = runner.run([runner.LabTarget(lab, forged, listed_by=reference)],
                                 options).labs[0]
            self.assertEqual(len(trusted.tests), 2)
            self.assertLess(trusted.score, trusted.max_score)
            self.assertTrue(any(t.status is Status.FAILED for t in trusted.tests))


class StartSignalTest(unittest.TestCase):
    """A test process started ahead of its turn (protocol.StartSignal) waits for it."""

    def start(self, signal: protocol.StartSignal, tests: str, **env: str):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        log = tmp / "log.txt"
        binary = make_fake_binary(tmp / "bin", "01_alpha")
        ids = {"pass": ["Host.Passes"], "hang": ["Hang.Sleeps"]}[tests]
        results: dict[str, protocol.Outcome] = {}
        environment = fake_env(FAKE_TESTS=tests, FAKE_LOG=str(log), **env)
        environment.__enter__()  # until the test ends: the thread starts the process later
        self.addCleanup(environment.__exit__, None, None, None)
        thread = threading.Thread(target=lambda: results.update(
            protocol.run_tests(binary, ids, SEED, 2.0, go=signal)), daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(signal.cancel)  # a failed test leaves no process waiting
        return thread, results, log

    def wait_for(self, log: Path, word: str) -> float:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for line in (log.read_text().splitlines() if log.is_file() else []):
                if line.startswith(word):
                    return float(line.split()[-1])
            time.sleep(0.02)
        self.fail(f"no '{word}' in the fake binary's log")

    def test_no_test_runs_before_the_signal(self) -> None:
        signal = protocol.StartSignal()
        thread, results, log = self.start(signal, "pass")
        waiting = self.wait_for(log, "waiting")
        time.sleep(0.3)
        self.assertNotIn("start", log.read_text())
        given = time.monotonic()
        signal.give()
        thread.join(10)
        self.assertGreaterEqual(self.wait_for(log, "start Host.Passes"), given - 0.01)
        self.assertGreater(given, waiting)
        self.assertIs(results["Host.Passes"].status, Status.PASSED)

    def test_the_time_limit_counts_from_the_signal(self) -> None:
        signal = protocol.StartSignal()
        thread, results, log = self.start(signal, "hang")
        self.wait_for(log, "waiting")
        time.sleep(2.5)  # longer than the 2 s limit: the wait does not count
        signal.give()
        thread.join(15)
        outcome = results["Hang.Sleeps"]
        self.assertIs(outcome.status, Status.TIMED_OUT)
        self.assertLess(outcome.duration_s, 4.5)
        self.assertGreater(outcome.duration_s, 1.9)

    def test_cancelled_nothing_is_judged_and_the_process_ends(self) -> None:
        signal = protocol.StartSignal()
        thread, results, log = self.start(signal, "pass")
        self.wait_for(log, "waiting")
        signal.cancel()
        thread.join(10)
        self.assertFalse(thread.is_alive())
        self.assertEqual(results, {})
        self.assertNotIn("start", log.read_text())

    def test_a_process_that_ends_before_its_turn_cancels_the_signal(self) -> None:
        signal = protocol.StartSignal()
        thread, results, _ = self.start(signal, "pass", FAKE_DIE_WAITING="1")
        thread.join(10)
        self.assertTrue(signal.cancelled)
        self.assertEqual(results, {})

    def test_a_process_that_cannot_start_is_a_crash_as_without_a_signal(self) -> None:
        missing = Path(tempfile.mkdtemp()) / "no_such_binary"
        self.addCleanup(shutil.rmtree, missing.parent)
        results = protocol.run_tests(missing, ["Host.Passes"], SEED, 2.0,
                                     go=protocol.StartSignal())
        self.assertIs(results["Host.Passes"].status, Status.CRASHED)
        self.assertIn("could not start", results["Host.Passes"].reason)

    def test_ready_once_the_process_says_so_and_not_before(self) -> None:
        signal = protocol.StartSignal()
        thread, results, log = self.start(signal, "pass", FAKE_NEVER_READY="1")
        self.wait_for(log, "waiting")
        self.assertFalse(signal.wait_ready(0.3))  # waiting, but it wrote no READY_FILE
        signal.give()
        thread.join(10)
        self.assertTrue(signal.wait_ready(0))  # its turn came: nothing is left to wait for
        signal = protocol.StartSignal()
        thread, results, log = self.start(signal, "pass")
        self.assertTrue(signal.wait_ready(10))
        self.assertNotIn("start", log.read_text())
        signal.give()
        thread.join(10)
        self.assertIs(results["Host.Passes"].status, Status.PASSED)

    def test_a_process_that_ends_before_its_turn_is_ready_too(self) -> None:
        signal = protocol.StartSignal()
        thread, _, _ = self.start(signal, "pass", FAKE_DIE_WAITING="1", FAKE_NEVER_READY="1")
        self.assertTrue(signal.wait_ready(10))
        thread.join(10)

    def test_a_cold_start_is_ready_only_once_its_turn_has_come(self) -> None:
        signal = protocol.StartSignal(cold=True)
        thread, results, log = self.start(signal, "pass", FAKE_COLD_CONTEXT_S="0.5")
        self.wait_for(log, "waiting-cold")
        self.assertFalse(signal.wait_ready(0.3))
        given = time.monotonic()
        signal.give()
        self.assertTrue(signal.wait_ready(10))
        self.assertGreaterEqual(self.wait_for(log, "warm"), given)
        thread.join(10)
        self.assertIs(results["Host.Passes"].status, Status.PASSED)

    def test_a_signal_given_before_the_start_changes_nothing(self) -> None:
        signal = protocol.StartSignal()
        signal.give()
        thread, results, log = self.start(signal, "pass")
        thread.join(10)
        self.assertIs(results["Host.Passes"].status, Status.PASSED)
        self.assertNotIn("waiting", log.read_text())


class BalancedSplitTest(unittest.TestCase):
    """A lab's tests split over processes by the times of the last grading (TestSeconds)."""

    SPECS = [protocol.TestSpec(f"S.{n}", "lab.1", "gpu", 1, "", False) for n in "abcdef"]

    def test_longest_first_to_the_least_loaded_process_in_listing_order(self) -> None:
        seconds = {"S.a": 0.1, "S.b": 5.0, "S.c": 0.1, "S.d": 0.1, "S.e": 0.1, "S.f": 0.1}
        for on in ("1", ""):  # the default: on
            with fake_env(KIT_SHARD_BALANCE=on):
                parts = runner._split(self.SPECS, 2, seconds)
            self.assertEqual([[s.id for s in p] for p in parts],
                             [["S.b"], ["S.a", "S.c", "S.d", "S.e", "S.f"]])

    def test_without_most_times_or_when_turned_off_tests_interleave(self) -> None:
        interleaved = [["S.a", "S.c", "S.e"], ["S.b", "S.d", "S.f"]]
        with fake_env(KIT_SHARD_BALANCE="1"):
            few = runner._split(self.SPECS, 2, {"S.b": 5.0, "S.d": 1.0})
        self.assertEqual([[s.id for s in p] for p in few], interleaved)
        all_known = {s.id: float(i) for i, s in enumerate(self.SPECS)}
        with fake_env(KIT_SHARD_BALANCE="0"):
            parts = runner._split(self.SPECS, 2, all_known)
        self.assertEqual([[s.id for s in p] for p in parts], interleaved)

    def test_the_file_keeps_the_newest_times_and_ignores_what_it_cannot_read(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        for damaged in ("not json", "[1, 2]", '{"01_alpha": {"T.x": "slow", "T.y": -1}}'):
            (tmp / runner.SECONDS_FILE).write_text(damaged)
            self.assertEqual(runner.TestSeconds(tmp).of("01_alpha"), {})
        self.assertEqual(runner.TestSeconds(None).of("01_alpha"), {})

    def test_a_grading_records_each_test_but_a_processs_first(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / "CMakeCache.txt").write_text("")  # the binaries' build directory
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,fail,gpu,perf"):
            grade(["01_alpha"], tmp, jobs=1)
            recorded = runner.TestSeconds(tmp).of("01_alpha")
            self.assertEqual(sorted(recorded), ["Gpu.Works", "Host.Fails"])  # not Host.Passes
            grade(["01_alpha"], tmp, jobs=1)
        self.assertEqual(sorted(runner.TestSeconds(tmp).of("01_alpha")),
                         ["Gpu.Works", "Host.Fails"])

    def test_the_first_verdict_of_each_process_is_marked(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        with fake_env(FAKE_TESTS="pass,abort,fail"):
            binary = make_fake_binary(tmp / "bin", "01_alpha")
            outcomes = protocol.run_tests(binary, ["Host.Passes", "Crash.Aborts", "Host.Fails"],
                                          SEED, 5.0)
        self.assertEqual({t: o.first for t, o in outcomes.items()},
                         {"Host.Passes": True, "Crash.Aborts": False, "Host.Fails": True})
