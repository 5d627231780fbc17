"""Counter tests (kind counter): ncu's CSV read as the kit reads it, the verdicts a test gets from
the judge's verdict, ncu's exit status and its log, and the runner grading such tests through a
fake ncu (fake_ncu.py), a forgery on the shared output included.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import counters, handout, ncu, protocol, reports, runner
from kitgrade.model import NO_COUNTERS_REASON, NO_DEVICE_REASON, LabResult, Status, TestResult

from .support import fake_env, make_fake_binary, make_lab

GLOBAL, GLOBAL_IDEAL = ncu.GLOBAL_VS_IDEAL.raw
SHARED, SHARED_IDEAL = ncu.SHARED_VS_IDEAL.raw
KEY = "coalescing.global_sectors_vs_ideal"
SHARED_KEY = "tiling.shared_wavefronts_vs_ideal"
AOS = "_ZN5lab0317aos_to_soa_kernelEjPKfNS_12ParticlesSoAE"
OWN = {AOS, "_ZN5lab0322transpose_naive_kernelEjjPKfPf"}


def row(launch: int, kernel: str, metric: str, value: str, pid: int = 4242) -> str:
    return (f'"{launch}","{pid}","worker_03_coalescing","127.0.0.1","{kernel}","1","7",'
            f'"(256, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics",'
            f'"{metric}","sector","{value}"')


def log(*rows: str) -> str:
    """ncu's --csv log: its own lines first, then the table, then its last line."""
    return "\n".join(
        ["==PROF== Connected to process 4242 (/build/bin/worker_03_coalescing)",
         '==PROF== Profiling "aos_to_soa_kernel" - 0: 0%....50%....100% - 1 pass',
         '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
         '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
         '"Metric Value"', *rows,
         "==PROF== Disconnected from process 4242"]) + "\n"


# aos_to_soa_kernel, coalesced: 32,768 sectors of 32,768 ideal (2^16 particles, loads and stores).
CLEAN = log(row(0, AOS, GLOBAL, "32,768"), row(0, AOS, GLOBAL_IDEAL, "32,768"))
# The same kernel with a 16-byte stride on its loads: 16 sectors a request where 4 would do.
STRIDED = log(row(0, AOS, GLOBAL, "81,920"), row(0, AOS, GLOBAL_IDEAL, "32,768"))


def passed(*keys: str, bar: str = "1.250") -> protocol.Outcome:
    """A judge's passing verdict that names `keys` (each with `bar`), as kit::CounterTest writes."""
    measurements = {"seed": "1"}
    for key in keys:
        measurements[counters.BAR_PREFIX + key] = bar
        measurements[counters.SECTION_PREFIX + key] = "default"
    return protocol.Outcome(Status.PASSED, measurements=measurements)


def verdict(outcome: protocol.Outcome, text: str, returncode: int | None = 0,
            own: set[str] = OWN) -> protocol.Outcome:
    return counters.verdict(outcome, returncode, text, own, "03")


class ReadingTheLog(unittest.TestCase):
    def test_launches_apart_by_process_and_id_with_separators_and_no_value(self) -> None:
        text = log(row(0, AOS, GLOBAL, "1,024"), row(0, AOS, GLOBAL_IDEAL, "n/a"),
                   row(0, AOS, GLOBAL, "7", pid=5151), row(1, "k", SHARED, "3"))
        launches = ncu.parse_launches(text)
        self.assertEqual([launch.name for launch in launches], [AOS, AOS, "k"])
        self.assertEqual(launches[0].raw, {GLOBAL: 1024.0, GLOBAL_IDEAL: None})
        self.assertEqual(launches[1].raw, {GLOBAL: 7.0})
        self.assertIsNone(ncu.GLOBAL_VS_IDEAL.value(launches[0].raw))  # no ideal: no reading

    def test_extra_columns_of_newer_versions_are_ignored(self) -> None:
        text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
                '"Block Size","Grid Size","Device","CC","Section Name","Metric Name",'
                '"Metric Unit","Metric Value","Rule Name","Estimated Speedup"\n'
                f'"0","1","w","h","{AOS}","1","7","(1,1,1)","(1,1,1)","0","9.0","s","{GLOBAL}",'
                '"sector","12","",""\n')
        (launch,) = ncu.parse_launches(text)
        self.assertEqual(launch.raw, {GLOBAL: 12.0})

    def test_a_log_without_a_table_has_no_launch(self) -> None:
        self.assertEqual(ncu.parse_launches("==WARNING== No kernels were profiled.\n"), [])

    def test_ratio_without_accesses_reads_nothing(self) -> None:
        self.assertIsNone(ncu.GLOBAL_VS_IDEAL.value({GLOBAL: 0.0, GLOBAL_IDEAL: 0.0}))
        self.assertEqual(ncu.GLOBAL_VS_IDEAL.value({GLOBAL: 8.0, GLOBAL_IDEAL: 4.0}), 2.0)


class Keys(unittest.TestCase):
    def test_a_key_names_its_counter_by_its_end(self) -> None:
        self.assertIs(counters.counter_of(KEY), ncu.GLOBAL_VS_IDEAL)
        self.assertIs(counters.counter_of(SHARED_KEY), ncu.SHARED_VS_IDEAL)
        self.assertFalse(counters.is_counter_key("coalescing.transpose_vs_naive"))
        self.assertEqual(set(counters.ACCESSES), set(counters.COUNTERS))

    def test_the_command_follows_the_judge_and_writes_its_own_log(self) -> None:
        argv = counters.command_prefix("/opt/ncu", Path("/tmp/x/ncu.csv"))
        self.assertEqual(argv[0], "/opt/ncu")
        self.assertEqual(argv[argv.index("--target-processes") + 1], "all")
        self.assertEqual(argv[argv.index("--log-file") + 1], "/tmp/x/ncu.csv")
        self.assertEqual(argv[argv.index("--print-units") + 1], "base")
        self.assertEqual(argv[argv.index("--launch-count") + 1], str(counters.LAUNCH_LIMIT + 1))
        self.assertEqual(set(argv[argv.index("--metrics") + 1].split(",")),
                         {GLOBAL, GLOBAL_IDEAL, SHARED, SHARED_IDEAL})
        self.assertIn("--csv", argv)

    def test_the_handouts_say_which_bars_are_a_most(self) -> None:
        self.assertEqual(handout.bar_kind(KEY), "the most a counter reads")
        self.assertEqual(handout.bar_kind("coalescing.transpose_vs_naive"), "the least ratio")


class Verdicts(unittest.TestCase):
    def test_ideal_readings_pass_and_are_recorded(self) -> None:
        outcome = verdict(passed(KEY), CLEAN)
        self.assertIs(outcome.status, Status.PASSED, outcome)
        self.assertEqual(outcome.measurements[counters.READING_PREFIX + KEY], "1.00")

    def test_a_reading_above_the_bar_fails_naming_kernel_reading_and_bar(self) -> None:
        outcome = verdict(passed(KEY), STRIDED)
        self.assertIs(outcome.status, Status.FAILED)
        self.assertEqual(outcome.reason, "aos_to_soa_kernel: 2.50 global sectors per ideal "
                                         "sector, at most 1.25")
        self.assertIn(f"'{KEY}' in the default section of grader/thresholds.conf",
                      " ".join(outcome.output.split()))
        self.assertIn("python3 grader/kit.py profile 03", outcome.output)
        for line in outcome.output.splitlines():
            self.assertLessEqual(len(line), counters.WIDTH, line)

    def test_the_worst_launch_decides(self) -> None:
        text = log(row(0, AOS, GLOBAL, "4"), row(0, AOS, GLOBAL_IDEAL, "4"),
                   row(1, AOS, GLOBAL, "6"), row(1, AOS, GLOBAL_IDEAL, "4"))
        outcome = verdict(passed(KEY), text)
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn("1.50", outcome.reason)
        self.assertIn("launch 2 of 2", outcome.output)

    def test_rows_ncu_did_not_write_fail(self) -> None:
        # Code that wrote good readings into ncu's log ahead of ncu's own (a second row for the
        # same launch and metric, a second table, NUL bytes left by a write at a far offset).
        forged = (row(0, AOS, GLOBAL, "32,768"), row(0, AOS, GLOBAL_IDEAL, "32,768"))
        for text in (log(*forged, row(0, AOS, GLOBAL, "81,920"), row(0, AOS, GLOBAL_IDEAL, "32,768")),
                     STRIDED + CLEAN, STRIDED + "\0" * 8 + "\n".join(forged)):
            outcome = verdict(passed(KEY), text)
            self.assertIs(outcome.status, Status.FAILED, text)
            self.assertEqual(outcome.reason, "ncu's log holds rows that ncu did not write")
        self.assertEqual(ncu.foreign_rows(CLEAN), "")

    def test_the_reference_is_held_to_its_own_bar(self) -> None:
        text = log(row(0, AOS, GLOBAL, "41"), row(0, AOS, GLOBAL_IDEAL, "40"))
        self.assertIs(verdict(passed(KEY), text).status, Status.PASSED)
        self.assertIs(verdict(passed(KEY, bar="1.000"), text).status, Status.FAILED)

    def test_wrong_results_are_failed_whatever_the_counters(self) -> None:
        judged = protocol.Outcome(Status.FAILED, "", "out: 3 elements wrong", {"seed": "1"})
        self.assertIs(verdict(judged, CLEAN), judged)
        crashed = protocol.Outcome(Status.CRASHED, "crashed: SIGSEGV")
        self.assertIs(verdict(crashed, CLEAN), crashed)

    def test_counters_not_permitted_are_not_run_and_excused(self) -> None:
        text = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
                "GPU Performance Counters on the target device 0.\n")
        outcome = verdict(passed(KEY), text)
        self.assertIs(outcome.status, Status.NOT_RUN)
        self.assertTrue(outcome.reason.startswith(NO_COUNTERS_REASON))
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", outcome.output)
        test = TestResult("03_coalescing", "coalescing.1", "C.T", "t", "counter", 2,
                          outcome.status, outcome.reason)
        self.assertTrue(test.lacked_device(gpu_available=True))

    def test_no_reading_of_a_counter_is_not_run(self) -> None:
        text = log(row(0, AOS, GLOBAL, "n/a"), row(0, AOS, GLOBAL_IDEAL, "n/a"))
        outcome = verdict(passed(KEY), text)
        self.assertIs(outcome.status, Status.NOT_RUN)
        self.assertTrue(outcome.reason.startswith(NO_COUNTERS_REASON), outcome.reason)

    def test_no_launch_at_all_fails_quoting_ncu(self) -> None:
        outcome = verdict(passed(KEY), "==PROF== Connected to process 7 (grade_03_coalescing)\n"
                                       "==WARNING== No kernels were profiled.\n")
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn("no kernel of yours", outcome.reason)
        self.assertIn("ncu's log: ==WARNING== No kernels were profiled.", outcome.output)

    def test_ncu_that_could_not_profile_is_not_run_and_not_excused(self) -> None:
        error = '==ERROR== Failed to profile "aos_to_soa_kernel" in process 4242\n'
        for returncode in (0, 1):
            outcome = verdict(passed(KEY), error, returncode)
            self.assertIs(outcome.status, Status.NOT_RUN)
            self.assertFalse(outcome.reason.startswith(NO_COUNTERS_REASON))
            self.assertIn("Failed to profile", outcome.output)
        self.assertIs(verdict(passed(KEY), CLEAN, None).status, Status.TIMED_OUT)

    def test_a_kernel_not_compiled_into_the_students_code_fails(self) -> None:
        text = log(row(0, AOS, GLOBAL, "4"), row(0, AOS, GLOBAL_IDEAL, "4"),
                   row(1, "_Z16borrowed_kernelv", GLOBAL, "4"),
                   row(1, "_Z16borrowed_kernelv", GLOBAL_IDEAL, "4"))
        outcome = verdict(passed(KEY), text)
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn("not in your code ran: borrowed_kernel", outcome.reason)
        # Without the build's list of kernels, every launch counts as the student's.
        self.assertIs(verdict(passed(KEY), text, own=set()).status, Status.PASSED)

    def test_launches_past_the_limit_fail(self) -> None:
        rows = []
        for n in range(counters.LAUNCH_LIMIT + 1):
            rows += [row(n, AOS, GLOBAL, "4"), row(n, AOS, GLOBAL_IDEAL, "4")]
        outcome = verdict(passed(KEY), log(*rows))
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn(f"more than {counters.LAUNCH_LIMIT}", outcome.reason)

    def test_padding_cannot_hide_a_kernel_without_the_access(self) -> None:
        text = log(row(0, AOS, SHARED, "0"), row(0, AOS, SHARED_IDEAL, "0"))
        outcome = verdict(passed(SHARED_KEY), text)
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn("no shared-memory access", outcome.reason)

    def test_a_test_that_names_no_counter_or_an_unknown_one_fails(self) -> None:
        self.assertIs(verdict(protocol.Outcome(Status.PASSED), CLEAN).status, Status.FAILED)
        outcome = verdict(passed("coalescing.transpose_vs_naive"), CLEAN)
        self.assertIs(outcome.status, Status.FAILED)
        self.assertIn("names no counter", outcome.reason)

    def test_reports_show_the_reading_and_the_bar(self) -> None:
        outcome = verdict(passed(KEY), CLEAN)
        test = TestResult("03_coalescing", "coalescing.1", "C.T", "t", "counter", 2,
                          outcome.status, measurements=outcome.measurements)
        self.assertEqual(reports.measurement_text(test),
                         "1.00 global sectors per ideal sector (at most 1.250)")


FAKE_NCU = Path(__file__).resolve().parent / "fake_ncu.py"
PROPS = {counters.BAR_PREFIX + "alpha.global_sectors_vs_ideal": "1.250",
         counters.SECTION_PREFIX + "alpha.global_sectors_vs_ideal": "default"}
LAUNCH = "_Z12alpha_kernelPf"


def launches(sectors: int, ideal: int) -> str:
    return json.dumps([[LAUNCH, {GLOBAL: f"{sectors:,}", GLOBAL_IDEAL: f"{ideal:,}"}]])


class GradedUnderTheFakeNcu(unittest.TestCase):
    """fake_binary.py's "gpu" test listed as a counter test, graded by the runner."""

    def grade(self, tests: str = "gpu", ncu_found: bool = True, **env: str) -> LabResult:
        with tempfile.TemporaryDirectory() as tmp:
            wrapper = Path(tmp) / "ncu"
            wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                               f"{shlex.quote(str(FAKE_NCU))} \"$@\"\n")
            wrapper.chmod(0o755)
            args = Path(tmp) / "ncu-args"
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(Path(tmp) / "bin", "01_alpha"))
            values = {"FAKE_GPU": "1", "FAKE_TESTS": tests, "FAKE_KINDS": "gpu=counter",
                      "FAKE_PROPS": json.dumps(PROPS), "FAKE_NCU_ARGS": str(args), **env}
            with fake_env(**values), \
                    mock.patch.object(ncu, "find_ncu", return_value=str(wrapper) if ncu_found
                                      else None):
                (lab,) = runner.run([target], runner.RunOptions("student", 7, 2)).labs
            self.ncu_args = args.read_text() if args.exists() else ""
        return lab

    def test_ideal_readings_pass_under_ncu_with_the_judges_flag(self) -> None:
        (test,) = self.grade(FAKE_NCU_LAUNCHES=launches(64, 64)).tests
        self.assertIs(test.status, Status.PASSED, test)
        self.assertEqual(test.kind, "counter")
        self.assertIn("--target-processes all", self.ncu_args)
        self.assertIn(counters.FLAG, self.ncu_args)

    def test_the_ncu_process_starts_cold_while_the_timed_tests_run(self) -> None:
        timed = "Timeline.StagesLastAsLongAsTheirWork"
        for early in (True, False):
            with self.subTest(early=early), tempfile.TemporaryDirectory() as tmp:
                log = Path(tmp) / "events.log"
                env = {} if early else {runner.COUNTERS_EARLY_ENV: "0"}
                lab = self.grade(tests="gpu,timed", FAKE_NCU_LAUNCHES=launches(64, 64),
                                 FAKE_LOG=str(log), **env)
                self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
                at = {(kind, name): float(t) for kind, name, t in
                      (line.split() for line in log.read_text().splitlines())}
                self.assertEqual(("waiting-cold", "Gpu.Works") in at, early)
                self.assertGreater(at[("start", "Gpu.Works")], at[("end", timed)])

    def test_the_perf_process_starts_once_the_counter_processes_have_their_contexts(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "events.log"
            lab = self.grade(tests="gpu,timed,perf", FAKE_NCU_LAUNCHES=launches(64, 64),
                             FAKE_LOG=str(log), FAKE_COLD_CONTEXT_S="0.5")
            self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
            at = {(kind, name): float(t) for kind, name, t in
                  (line.split() for line in log.read_text().splitlines())}
        self.assertGreater(at[("waiting", "Perf.Saxpy")], at[("warm", "Gpu.Works")])

    def test_excess_sectors_fail(self) -> None:
        (test,) = self.grade(FAKE_NCU_LAUNCHES=launches(160, 64)).tests
        self.assertIs(test.status, Status.FAILED)
        self.assertIn("alpha_kernel: 2.50 global sectors per ideal sector", test.reason)

    def test_counter_tests_of_different_labs_run_side_by_side(self) -> None:
        # Up to COUNTER_SESSIONS at once: the processes' starts overlap (ncu profiles one kernel
        # at a time across processes anyway).
        active, most = [0], [0]
        lock = threading.Lock()

        def run_counted(lab, spec, ncu_path, gpu_available):
            with lock:
                active[0] += 1
                most[0] = max(most[0], active[0])
            time.sleep(0.3)
            with lock:
                active[0] -= 1
            lab.finish(spec, protocol.Outcome(Status.PASSED))

        with tempfile.TemporaryDirectory() as tmp:
            targets = [runner.LabTarget(make_lab(lab), make_fake_binary(Path(tmp) / "bin", lab))
                       for lab in ("01_alpha", "02_beta", "03_gamma")]
            values = {"FAKE_GPU": "1", "FAKE_TESTS": "gpu", "FAKE_KINDS": "gpu=counter"}
            with fake_env(**values), mock.patch.object(runner._Lab, "run_counted", run_counted):
                labs = runner.run(targets, runner.RunOptions("student", 7, 8)).labs
        self.assertEqual([t.status for lab in labs for t in lab.tests], [Status.PASSED] * 3)
        self.assertEqual(most[0], 3)

    def test_a_table_printed_on_the_shared_output_is_never_read(self) -> None:
        forged = log(row(0, LAUNCH, GLOBAL, "64"), row(0, LAUNCH, GLOBAL_IDEAL, "64"))
        (test,) = self.grade(FAKE_PRINT=forged).tests
        self.assertIs(test.status, Status.FAILED)
        self.assertIn("no kernel of yours", test.reason)

    def test_without_ncu_not_run_and_excused(self) -> None:
        (test,) = self.grade(ncu_found=False).tests
        self.assertIs(test.status, Status.NOT_RUN)
        self.assertEqual(test.reason, counters.NO_NCU_REASON)
        self.assertTrue(test.lacked_device(gpu_available=True))
        self.assertEqual(self.ncu_args, "")

    def test_without_a_gpu_not_run(self) -> None:
        (test,) = self.grade(FAKE_GPU="0").tests
        self.assertIs(test.status, Status.NOT_RUN)
        self.assertEqual(test.reason, NO_DEVICE_REASON)

    def test_counters_refused_not_run(self) -> None:
        (test,) = self.grade(FAKE_NCU="permission").tests
        self.assertIs(test.status, Status.NOT_RUN)
        self.assertTrue(test.reason.startswith(NO_COUNTERS_REASON))

    def test_a_failed_counter_test_leaves_the_perf_gate_open(self) -> None:
        lab = self.grade(tests="gpu,perf", FAKE_NCU_LAUNCHES=launches(160, 64))
        by_id = {t.id: t for t in lab.tests}
        self.assertIs(by_id["Gpu.Works"].status, Status.FAILED)
        self.assertIs(by_id["Perf.Saxpy"].status, Status.PASSED)

    def test_a_plain_run_of_the_judge_skips_it(self) -> None:
        # Outside the runner's ncu (no --kit_counters), kit::CounterTest skips itself.
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_GPU="1", FAKE_TESTS="gpu",
                                                            FAKE_KINDS="gpu=counter"):
            binary = make_fake_binary(Path(tmp) / "bin", "01_alpha")
            outcomes = protocol.run_tests(binary, ["Gpu.Works"], 7, 5.0)
        self.assertIs(outcomes["Gpu.Works"].status, Status.NOT_RUN)


if __name__ == "__main__":
    unittest.main()
