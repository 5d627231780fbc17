"""Sanitizer tests (kinds memcheck, racecheck, ...): compute-sanitizer's log read as the kit reads it,
the verdicts a test gets from the judge's verdict, the tool's exit status and its log, and the
runner grading such tests through a fake compute-sanitizer (fake_sanitizer.py), forgeries
included.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import protocol, runner, sanitizer
from kitgrade.model import NO_DEVICE_REASON, LabResult, Status, TestResult

from .support import fake_env, make_fake_binary, make_lab

MEMCHECK_LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at lab02::scale_shift_kernel(unsigned int, float, float, const float *, float *)+0xb0 in bounds.cu:26
=========     by thread (232,0,0) in block (3,0,0)
=========     Access to 0x7f934c800fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f934c800000 of size 4,000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2d4a5b] in libcuda.so.1
=========
========= Invalid __global__ read of size 4 bytes
=========     at lab02::scale_shift_kernel(unsigned int, float, float, const float *, float *)+0xb0 in bounds.cu:26
=========     by thread (233,0,0) in block (3,0,0)
=========
========= ERROR SUMMARY: 24 errors
"""

RACECHECK_HAZARD_LOG = """========= COMPUTE-SANITIZER
[ RUN      ] TilingRaces.NoSharedMemoryHazard
========= Warning: Potential RAW hazard detected at __shared__ 0x84 in block (1,0,0) :
=========     Write Thread (1,3,0) at lab04::matmul_tiled_kernel(unsigned int, unsigned int, unsigned int, const float *, const float *, float *)+0x2f0 in tiling.cu:37
=========     Read Thread (0,3,0) at lab04::matmul_tiled_kernel(unsigned int, unsigned int, unsigned int, const float *, const float *, float *)+0x310 in tiling.cu:39
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
"""

RACECHECK_ANALYSIS_LOG = """========= WARNING: Race reported between Write access at RAW()+0xf0 in raceGroupBasic.cu:40
=========     and Read access at RAW()+0x280 in raceGroupBasic.cu:46 [4 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
"""

SYNCCHECK_LOG = """========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp
=========     at lab04::matmul_tiled_kernel(unsigned int, unsigned int, unsigned int, const float *, const float *, float *)+0x1b0 in tiling.cu:36
=========     by thread (16,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""

CLEAN_LOG = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
CLEAN_RACECHECK_LOG = ("========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards "
                       "displayed (0 errors, 0 warnings)\n")
RERUN = "python3 grader/kit.py sanitize 02 --tool memcheck --filter 'Bounds.*'"


def passed() -> protocol.Outcome:
    return protocol.Outcome(Status.PASSED, measurements={"seed": "1"})


class ParseTest(unittest.TestCase):
    def test_memcheck_reports_and_summary(self) -> None:
        log = sanitizer.parse(MEMCHECK_LOG)
        self.assertEqual(len(log.reports), 2)
        first = log.reports[0]
        self.assertEqual(first.header, "Invalid __global__ read of size 4 bytes")
        self.assertEqual(first.where, "bounds.cu:26")
        self.assertEqual(log.counts, [24])
        self.assertFalse(log.clean)
        lines = first.lines("memcheck")
        self.assertEqual(lines[:3], ["memcheck: Invalid __global__ read of size 4 bytes",
                                     "  at bounds.cu:26 in lab02::scale_shift_kernel",
                                     "  by thread (232,0,0) in block (3,0,0)"])
        self.assertFalse(any("Host Frame" in line or "backtrace" in line for line in lines))

    def test_racecheck_hazard_names_both_threads_and_the_block(self) -> None:
        log = sanitizer.parse(RACECHECK_HAZARD_LOG)
        [report] = log.reports
        self.assertEqual(report.header,
                         "Potential RAW hazard detected at __shared__ 0x84 in block (1,0,0)")
        self.assertEqual(report.where, "tiling.cu:37")
        self.assertEqual(report.lines("racecheck")[1:],
                         ["  Write by thread (1,3,0) at tiling.cu:37 in lab04::matmul_tiled_kernel",
                          "  Read by thread (0,3,0) at tiling.cu:39 in lab04::matmul_tiled_kernel"])
        self.assertEqual(log.counts, [1])

    def test_a_hazard_with_a_category_in_parentheses_is_read(self) -> None:
        # racecheck 2025.3 on the H100 names a race inside one warp this way.
        text = RACECHECK_HAZARD_LOG.replace(
            "Warning: Potential RAW hazard", "Warning: (Warp Level Programming) Potential RAW hazard")
        [report] = sanitizer.parse(text).reports
        self.assertEqual(report.header,
                         "Potential RAW hazard detected at __shared__ 0x84 in block (1,0,0)")

    def test_racecheck_analysis_and_synccheck(self) -> None:
        [race] = sanitizer.parse(RACECHECK_ANALYSIS_LOG).reports
        self.assertTrue(race.header.startswith("Race reported between Write access"))
        self.assertEqual(race.where, "raceGroupBasic.cu:40")
        [barrier] = sanitizer.parse(SYNCCHECK_LOG).reports
        self.assertEqual(barrier.header, "Barrier error detected. Divergent thread(s) in warp")
        self.assertIn("  by thread (16,0,0) in block (0,0,0)", barrier.lines("synccheck"))

    def test_clean_logs_and_the_programs_own_lines(self) -> None:
        self.assertTrue(sanitizer.parse(CLEAN_LOG).clean)
        self.assertTrue(sanitizer.parse(CLEAN_RACECHECK_LOG).clean)
        self.assertFalse(sanitizer.parse("").clean, "no summary: nothing confirms the run")
        # A line that is not the tool's (no prefix) is never a report, whatever it says.
        log = sanitizer.parse("Invalid __global__ read of size 4 bytes\n" + CLEAN_LOG)
        self.assertTrue(log.clean)


class VerdictTest(unittest.TestCase):
    def verdict(self, outcome: protocol.Outcome, returncode: int | None, text: str,
                tool: str = "memcheck") -> protocol.Outcome:
        return sanitizer.verdict(tool, outcome, returncode, text, RERUN)

    def test_passes_only_when_the_test_passed_the_tool_exited_0_and_its_log_is_clean(self) -> None:
        got = self.verdict(passed(), 0, CLEAN_LOG)
        self.assertIs(got.status, Status.PASSED)
        self.assertEqual(got.measurements["sanitizer"], "memcheck: clean")
        self.assertEqual(got.measurements["seed"], "1")

    def test_a_report_fails_a_passing_test_with_the_first_report_in_80_columns(self) -> None:
        got = self.verdict(passed(), sanitizer.ERROR_EXIT, MEMCHECK_LOG)
        self.assertIs(got.status, Status.FAILED)
        self.assertEqual(got.reason,
                         "memcheck: Invalid __global__ read of size 4 bytes at bounds.cu:26")
        self.assertIn("by thread (232,0,0) in block (3,0,0)", got.output)
        self.assertIn("(24 reports in all; the first is shown)", got.output)
        self.assertIn(RERUN, got.output)
        self.assertNotIn("(233,0,0)", got.output)
        self.assertTrue(all(len(line) <= sanitizer.WIDTH for line in got.output.splitlines()),
                        got.output)

    def test_a_report_comes_first_and_the_tests_own_failure_after_it(self) -> None:
        failed = protocol.Outcome(Status.FAILED, "", "tiling.cu:9\n3 elements wrong")
        got = self.verdict(failed, 1, SYNCCHECK_LOG, "synccheck")
        self.assertIs(got.status, Status.FAILED)
        self.assertTrue(got.reason.startswith("synccheck: Barrier error detected"), got.reason)
        self.assertLess(got.output.index("Barrier error"), got.output.index("3 elements wrong"))
        timed_out = protocol.Outcome(Status.TIMED_OUT, "timed out after 60 s", "")
        got = self.verdict(timed_out, 1, SYNCCHECK_LOG, "synccheck")
        self.assertEqual((got.status, got.reason), (Status.TIMED_OUT, "timed out after 60 s"))
        self.assertIn("Barrier error", got.output)

    def test_evidence_of_errors_without_a_readable_report_still_fails(self) -> None:
        for returncode, text in ((sanitizer.ERROR_EXIT, CLEAN_LOG),
                                 (0, "========= ERROR SUMMARY: 3 errors\n"),
                                 (sanitizer.ERROR_EXIT, "")):
            got = self.verdict(passed(), returncode, text)
            self.assertIs(got.status, Status.FAILED, (returncode, text))
            self.assertEqual(got.reason, "memcheck reported errors")

    def test_a_tool_that_did_not_end_well_never_passes(self) -> None:
        cases = {None: (Status.TIMED_OUT, "did not finish"),
                 -9: (Status.CRASHED, "compute-sanitizer was killed by SIGKILL"),
                 3: (Status.FAILED, "compute-sanitizer exited with code 3")}
        for returncode, (status, reason) in cases.items():
            got = self.verdict(passed(), returncode, CLEAN_LOG)
            self.assertIs(got.status, status, returncode)
            self.assertIn(reason, got.reason)
        got = self.verdict(passed(), 0, "========= COMPUTE-SANITIZER\n")
        self.assertIs(got.status, Status.FAILED)
        self.assertIn("no memcheck summary", got.reason)
        self.assertIn("COMPUTE-SANITIZER", got.output)

    def test_the_tests_own_verdict_stands_when_the_tool_found_nothing(self) -> None:
        for outcome in (protocol.Outcome(Status.FAILED, "", "never written"),
                        protocol.Outcome(Status.NOT_RUN, NO_DEVICE_REASON),
                        protocol.Outcome(Status.CRASHED, "crashed: SIGSEGV")):
            self.assertIs(self.verdict(outcome, 0, CLEAN_LOG), outcome)


SAN_TESTS = "pass,memcheck,racecheck,perf"


class WorkerFilterTest(unittest.TestCase):
    """A graded judge's tool follows its worker alone, where the tool can be told so."""

    def prefix(self, help_text: str, worker: Path | None) -> list[str]:
        with mock.patch.object(sanitizer, "_options", return_value=frozenset(help_text.split())):
            return sanitizer.graded_prefix("cs", "memcheck", Path("/tmp/log"), worker)

    def test_the_filter_names_the_worker_as_far_as_its_process_name_keeps_it(self) -> None:
        worker = Path("/b/bin/worker_01_indexing_reference")
        argv = self.prefix("--kill --target-processes-filter", worker)
        at = argv.index("--target-processes-filter")
        self.assertEqual(argv[at + 1], "regex:worker_01_index")
        self.assertEqual(argv[argv.index("--target-processes") + 1], "all")
        # The judge (grade_01_indexing) does not match; the worker's full name and its process
        # name (15 characters) both do.
        pattern = re.compile(argv[at + 1].removeprefix("regex:"))
        self.assertIsNone(pattern.search("grade_01_indexing"))
        self.assertIsNotNone(pattern.search("worker_01_indexing_reference"))
        self.assertIsNotNone(pattern.search("worker_01_index"))

    def test_no_filter_without_a_worker_or_without_the_option(self) -> None:
        worker = Path("/b/bin/worker_01_indexing")
        self.assertNotIn("--target-processes-filter", self.prefix("--kill", worker))
        self.assertNotIn("--target-processes-filter",
                         self.prefix("--target-processes-filter", None))

    def test_a_judge_is_told_it_is_sanitized_and_a_plain_binary_is_not(self) -> None:
        calls = []

        def run_alone(binary, test_ids, seed, timeout_s, extra, prefix):
            calls.append(list(extra))
            return protocol.Outcome(Status.PASSED), 0

        with mock.patch.object(protocol, "run_alone", side_effect=run_alone), \
                mock.patch.object(sanitizer, "_options", return_value=frozenset()):
            sanitizer.run_test("cs", "memcheck", Path("/b/grade"), "A.B", 1, 5.0,
                               ["--kit_worker=/b/w"], "01", Path("/b/w"))
            sanitizer.run_test("cs", "memcheck", Path("/b/fake"), "A.B", 1, 5.0, [], "01")
        self.assertEqual(calls, [["--kit_worker=/b/w", sanitizer.SANITIZED_FLAG], []])


class SanitizerRunTest(unittest.TestCase):
    """The runner grades sanitizer tests through a fake compute-sanitizer first on PATH."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        tools = self.tmp / "tools"
        tools.mkdir()
        fake = Path(__file__).resolve().parent / "fake_sanitizer.py"
        self.tool = tools / "compute-sanitizer"
        self.tool.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                             f"{shlex.quote(str(fake))} \"$@\"\n")
        self.tool.chmod(0o755)
        self.args = self.tmp / "args.log"
        sanitizer._options.cache_clear()

    def grade(self, tests: str = SAN_TESTS, mode: str = "clean", gpu: bool = True,
              found: bool = True, **options: object) -> LabResult:
        target = runner.LabTarget(make_lab("01_alpha"), make_fake_binary(self.tmp / "bin", "01_alpha"))
        env = {"FAKE_TESTS": tests, "FAKE_SANITIZER": mode, "FAKE_SANITIZER_ARGS": str(self.args)}
        if gpu:
            env["FAKE_GPU"] = "1"
        with fake_env(**env), mock.patch.object(
                sanitizer, "find_sanitizer", return_value=str(self.tool) if found else None):
            run = runner.run([target], runner.RunOptions("student", 7, 4, **options))
        self.timings = run.timings
        return run.labs[0]

    @staticmethod
    def by_id(lab: LabResult) -> dict[str, TestResult]:
        return {t.id: t for t in lab.tests}

    def calls(self) -> list[str]:
        return self.args.read_text().splitlines() if self.args.exists() else []

    def test_clean_runs_pass_each_alone_under_its_tool(self) -> None:
        tests = self.by_id(self.grade())
        for test_id in ("Bounds.UnderMemcheck", "Tiles.UnderRacecheck", "Perf.Saxpy"):
            self.assertIs(tests[test_id].status, Status.PASSED, tests[test_id])
        self.assertEqual(tests["Bounds.UnderMemcheck"].measurements["sanitizer"], "memcheck: clean")
        calls = sorted(self.calls())
        self.assertEqual(len(calls), 2, calls)  # one process per sanitizer test, none for others
        memcheck, racecheck = sorted(calls, key=lambda c: "racecheck" in c)
        self.assertIn("--tool memcheck --target-processes all --error-exitcode 99 --log-file ",
                      memcheck)
        self.assertIn("--gtest_filter=Bounds.UnderMemcheck --kit_verdicts=", memcheck)
        self.assertIn("--kill", memcheck)  # the fake's --help names it
        self.assertIn("--racecheck-report hazard", racecheck)
        self.assertIn("sanitizer", self.timings)

    def test_a_report_fails_the_test_and_closes_the_perf_gate(self) -> None:
        tests = self.by_id(self.grade(mode="report"))
        memcheck = tests["Bounds.UnderMemcheck"]
        self.assertIs(memcheck.status, Status.FAILED)
        self.assertEqual(memcheck.reason,
                         "memcheck: Invalid __global__ read of size 4 bytes at bounds.cu:26")
        self.assertIn("python3 grader/kit.py sanitize 01 --tool memcheck --filter 'Bounds.*'",
                      memcheck.output)
        race = tests["Tiles.UnderRacecheck"]
        self.assertTrue(race.reason.startswith("racecheck: Potential WAR hazard detected"), race)
        self.assertIn("Read by thread (7,31,0) at tiling.cu:41", race.output)
        self.assertEqual(tests["Perf.Saxpy"].reason, runner.PERF_GATE_REASON)

    def test_what_the_test_prints_or_writes_into_the_log_never_makes_a_pass(self) -> None:
        tests = self.by_id(self.grade("claims_clean,log_forger", mode="report"))
        for test in tests.values():
            self.assertIs(test.status, Status.FAILED, test)
        tests = self.by_id(self.grade("claims_clean", mode="no_summary"))
        self.assertIn("no memcheck summary", tests["Bounds.PrintsACleanReport"].reason)
        # A clean run whose test prints a clean summary of its own passes on the tool's word.
        self.assertIs(self.by_id(self.grade("claims_clean"))["Bounds.PrintsACleanReport"].status,
                      Status.PASSED)

    def test_the_tools_own_ending(self) -> None:
        for mode, status, reason in (("killed", Status.CRASHED, "killed by SIGKILL"),
                                     ("exit3", Status.FAILED, "exited with code 3"),
                                     ("unreadable", Status.FAILED, "memcheck reported errors")):
            test = self.by_id(self.grade("memcheck", mode=mode))["Bounds.UnderMemcheck"]
            self.assertIs(test.status, status, (mode, test))
            self.assertIn(reason, test.reason)

    def test_a_tool_that_lingers_is_cut_off(self) -> None:
        with mock.patch.object(protocol, "WRAPPED_GRACE_S", 0.5):
            test = self.by_id(self.grade("memcheck", mode="linger"))["Bounds.UnderMemcheck"]
        self.assertIs(test.status, Status.TIMED_OUT, test)

    def test_the_tests_own_failure_stands(self) -> None:
        test = self.by_id(self.grade("sanitized_fails"))["Bounds.WrongUnderMemcheck"]
        self.assertIs(test.status, Status.FAILED)
        self.assertIn("24 elements never written", test.output)

    def test_without_a_gpu_or_the_tool_never_passed(self) -> None:
        tests = self.by_id(self.grade(gpu=False))
        self.assertEqual((tests["Bounds.UnderMemcheck"].status,
                          tests["Bounds.UnderMemcheck"].reason), (Status.NOT_RUN, NO_DEVICE_REASON))
        self.assertEqual(self.calls(), [])
        tests = self.by_id(self.grade(found=False))
        memcheck = tests["Bounds.UnderMemcheck"]
        self.assertEqual((memcheck.status, memcheck.reason),
                         (Status.NOT_RUN, sanitizer.NOT_FOUND_REASON))
        self.assertFalse(memcheck.lacked_device(True), "a missing tool is no excuse on a GPU")
        self.assertEqual(tests["Perf.Saxpy"].reason,
                         f"correctness tests were not run ({sanitizer.NOT_FOUND_REASON})")

    def test_a_step_a_known_wrong_submission_must_lose_runs_its_tools_in_turn(self) -> None:
        # memcheck, the quicker tool, runs first and loses step 2 as the submission must: the
        # racecheck test of that step is then not run. Without a Settle both run, side by side.
        always = lambda failing: True  # noqa: E731
        target = runner.LabTarget(make_lab("01_alpha"),
                                  make_fake_binary(self.tmp / "bin", "01_alpha"),
                                  settle=runner.Settle(frozenset({"alpha.2"}), always))
        env = {"FAKE_TESTS": "racecheck,sanitized_fails", "FAKE_SANITIZER": "clean",
               "FAKE_SANITIZER_ARGS": str(self.args), "FAKE_GPU": "1"}
        for settle in (True, False):
            with self.subTest(settle=settle), fake_env(**env), mock.patch.object(
                    sanitizer, "find_sanitizer", return_value=str(self.tool)):
                graded = target if settle else dataclasses.replace(target, settle=None)
                tests = self.by_id(runner.run([graded], runner.RunOptions("student", 7, 4)).labs[0])
            self.assertIs(tests["Bounds.WrongUnderMemcheck"].status, Status.FAILED)
            race = tests["Tiles.UnderRacecheck"]
            self.assertEqual((race.status, race.reason),
                             (Status.NOT_RUN, runner.SETTLED_REASON) if settle
                             else (Status.PASSED, ""))

    def test_the_longest_start_first_turns_then_the_slowest_tools(self) -> None:
        # One session: the tool is called in the tasks' order. The settled lab's turn (its
        # memcheck test, then racecheck) comes before the other lab's two tests, and of those
        # racecheck (the slowest tool) before memcheck, whatever the listing's order.
        settled = runner.LabTarget(make_lab("01_alpha"),
                                   make_fake_binary(self.tmp / "bin", "01_alpha"),
                                   settle=runner.Settle(frozenset({"alpha.2"}), lambda _: False))
        plain = runner.LabTarget(make_lab("02_beta"), make_fake_binary(self.tmp / "bin", "02_beta"))
        env = {"FAKE_TESTS": "memcheck,racecheck,sanitized_fails", "FAKE_SANITIZER": "clean",
               "FAKE_SANITIZER_ARGS": str(self.args), "FAKE_GPU": "1",
               runner.SANITIZER_SESSIONS_ENV: "1"}
        with fake_env(**env), mock.patch.object(sanitizer, "find_sanitizer",
                                                return_value=str(self.tool)):
            runner.run([plain, settled], runner.RunOptions("student", 7, 4))
        order = [("alpha" if "01_alpha" in call else "beta",
                  re.search(r"--gtest_filter=(\S+)", call).group(1))  # type: ignore[union-attr]
                 for call in self.calls()]
        self.assertEqual(order, [("alpha", "Bounds.UnderMemcheck"),
                                 ("alpha", "Bounds.WrongUnderMemcheck"),
                                 ("alpha", "Tiles.UnderRacecheck"),
                                 ("beta", "Tiles.UnderRacecheck"),
                                 ("beta", "Bounds.UnderMemcheck"),
                                 ("beta", "Bounds.WrongUnderMemcheck")])

    def test_fail_fast_and_kinds(self) -> None:
        tests = self.by_id(self.grade("fail,memcheck", fail_fast=True))
        self.assertEqual(tests["Bounds.UnderMemcheck"].reason, runner.FAIL_FAST_REASON)
        tests = self.by_id(self.grade("pass,memcheck", kinds=frozenset({"host"})))
        self.assertEqual(tests["Bounds.UnderMemcheck"].reason, runner.NOT_SELECTED_REASON)
        self.assertEqual(self.calls(), [])


if __name__ == "__main__":
    unittest.main()
