"""kit.py bench-grader: the phases it times, its build directories and its table, with fake lab
binaries (fake_binary.py) and a fake cmake that "builds" them (instructor-only: a student edition
leaves this file out)."""

from __future__ import annotations

import io
import os
import shutil
import statistics
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from kitgrade import bench_grader
from kitgrade.cli import ExitCode, main
from kitgrade.model import LabResult, RunResult, Status, TestResult

from .support import fake_env, make_repo

GRADER_DIR = Path(__file__).resolve().parents[1]

# Logs each call; configure (-S/-B) writes a CMakeCache.txt with KIT_SUBMISSION_DIR; --build
# writes a fake binary (support.make_fake_binary) for every target, or fails when FAKE_CMAKE_FAIL
# is set.
FAKE_CMAKE = f"""#!{sys.executable}
import os, sys
from pathlib import Path
sys.path.insert(0, {str(GRADER_DIR)!r})
from tests.support import make_fake_binary
args = sys.argv[1:]
with open(os.environ["FAKE_CMAKE_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[0] == "--build":
    if os.environ.get("FAKE_CMAKE_FAIL"):
        print("error: BROKEN does not compile")
        sys.exit(1)
    names = args[args.index("--target") + 1:args.index("-j")]
    for name in names:
        variant, lab = name.split("_", 1)
        make_fake_binary(Path(args[1]) / "bin", lab, "student" if variant == "grade" else variant)
else:
    build = Path(args[args.index("-B") + 1])
    build.mkdir(parents=True, exist_ok=True)
    sub = next((a.split("=", 1)[1] for a in args if a.startswith("-DKIT_SUBMISSION_DIR=")), "")
    (build / "CMakeCache.txt").write_text(f"KIT_SUBMISSION_DIR:PATH={{sub}}\\n")
"""


class BenchGraderCase(unittest.TestCase):
    """A kit with labs 01_alpha and 02_beta, nothing built, and the fake cmake on PATH."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"], built=[])
        tools = self.tmp / "tools"
        tools.mkdir()
        (tools / "cmake").write_text(FAKE_CMAKE)
        (tools / "cmake").chmod(0o755)
        self.cmake_log = self.tmp / "cmake.log"
        self.path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"

    def kit(self, *argv: str, **env: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        values = {"PATH": self.path, "FAKE_TESTS": "pass,gpu,perf",
                  "FAKE_CMAKE_LOG": str(self.cmake_log), "TMPDIR": str(self.tmp), **env}
        with fake_env(**values):
            tempfile.tempdir = None  # TMPDIR is read again: fresh build dirs go below self.tmp
            try:
                code = main(["bench-grader", *argv], root=self.root, stdout=out, stderr=err)
            finally:
                tempfile.tempdir = None
        return code, out.getvalue(), err.getvalue()

    def cmake_calls(self) -> list[str]:
        return self.cmake_log.read_text().splitlines() if self.cmake_log.exists() else []


class CommandTest(BenchGraderCase):
    def test_times_each_phase_and_reuses_the_build_directory(self) -> None:
        code, out, err = self.kit("01", "--repeat", "2", "--jobs", "2")
        self.assertEqual(code, ExitCode.OK, err)
        calls = self.cmake_calls()
        self.assertEqual(len([c for c in calls if c.startswith("-S")]), 1)  # configured once
        builds = [c for c in calls if c.startswith("--build")]
        self.assertEqual(len(builds), 2)
        self.assertIn(f"--build {self.root / 'build'} --target grade_01_alpha -j", builds[0])
        self.assertIn("bench-grader: 01_alpha (student), 2 runs, seed ", out)
        self.assertIn("run 1/2: ", out)
        self.assertIn("run 2/2: ", out)
        table = out[out.index("phase "):]
        header = table.splitlines()[0].split()
        self.assertEqual(header, ["phase", "median", "s", "min", "s", "max", "s", "share"])
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:]
                if line and not line.startswith(("-", " ")) and ":" not in line}
        for phase in ("configure", "build", "reports", "total"):
            self.assertIn(phase, rows)
        self.assertTrue("tests" in rows or {"list", "correctness", "perf"} <= rows.keys(), rows)
        self.assertEqual(rows["total"][-1], "100%")
        self.assertIn("configure: 0 s where the build directory was already configured", out)
        self.assertIn("no GPU: the GPU tests were not run", out)
        self.assertTrue(all(len(line) <= 80 for line in table.splitlines()), table)
        self.assertFalse((self.root / "build" / "reports").exists())  # reports went to a temp dir

    def test_with_a_gpu_there_is_no_gpu_note_and_one_run_has_one_column(self) -> None:
        code, out, err = self.kit("01", "02", FAKE_GPU="1")
        self.assertEqual(code, ExitCode.OK, err)
        self.assertNotIn("no GPU", out)
        self.assertEqual(out[out.index("phase "):].splitlines()[0].split(),
                         ["phase", "seconds", "share"])
        self.assertIn("--target grade_01_alpha grade_02_beta -j", self.cmake_calls()[-1])

    def test_each_run_says_how_many_tests_passed_and_a_failure_is_noted(self) -> None:
        code, out, err = self.kit("01", FAKE_GPU="1")
        self.assertEqual(code, ExitCode.OK, err)
        self.assertRegex(out, r"run 1/1: .*; (\d+)/\1 passed\)")
        self.assertNotIn("not every test passed", out)
        code, out, err = self.kit("01", FAKE_GPU="1", FAKE_TESTS="pass,gpu,fail")
        self.assertRegex(out, r"run 1/1: .*; 2/3 passed\)")
        self.assertIn("not every test passed in run(s) 1", out)

    def test_fresh_build_configures_a_new_temporary_directory_each_run(self) -> None:
        code, out, err = self.kit("01", "--fresh-build", "--repeat", "2")
        self.assertEqual(code, ExitCode.OK, err)
        configures = [c.split() for c in self.cmake_calls() if c.startswith("-S")]
        self.assertEqual(len(configures), 2)
        dirs = [Path(c[c.index("-B") + 1]) for c in configures]
        self.assertNotEqual(dirs[0], dirs[1])
        for build_dir in dirs:
            self.assertTrue(build_dir.is_relative_to(self.tmp))
            self.assertFalse(build_dir.exists())  # removed after its run
        self.assertFalse((self.root / "build").exists())
        self.assertIn("a new temporary one for each run (--fresh-build)", " ".join(out.split()))
        self.assertNotIn("configure: 0 s", out)

    def test_fresh_build_removes_the_build_dir_given_first(self) -> None:
        build_dir = self.tmp / "b"
        build_dir.mkdir()
        (build_dir / "CMakeCache.txt").write_text("KIT_SUBMISSION_DIR:PATH=\n")
        (build_dir / "stale.o").write_text("old")
        code, out, err = self.kit("01", "--fresh-build", "--build-dir", str(build_dir))
        self.assertEqual(code, ExitCode.OK, err)
        self.assertFalse((build_dir / "stale.o").exists())
        self.assertTrue((build_dir / "bin" / "grade_01_alpha").is_file())
        self.assertEqual(len([c for c in self.cmake_calls() if c.startswith("-S")]), 1)
        self.assertIn(f"build dir: {build_dir}, removed before each run (--fresh-build)",
                      " ".join(out.split()))  # the line may wrap at 80 columns

    def test_fresh_build_refuses_to_remove_what_is_not_a_build_dir(self) -> None:
        folder = self.tmp / "notes"
        folder.mkdir()
        (folder / "keep.txt").write_text("mine")
        for build_dir, message in [(folder, "not a CMake build directory"),
                                   (self.root, "which holds the kit"),
                                   (self.tmp, "which holds the kit")]:
            with self.subTest(build_dir=build_dir):
                code, out, err = self.kit("01", "--fresh-build", "--build-dir", str(build_dir))
                self.assertEqual(code, ExitCode.USAGE)
                self.assertIn(message, err)
        self.assertTrue((folder / "keep.txt").is_file())
        self.assertEqual(self.cmake_calls(), [])

    def test_a_build_dir_last_built_for_a_submission_is_configured_for_labs_again(self) -> None:
        build_dir = self.tmp / "b"
        build_dir.mkdir()
        (build_dir / "CMakeCache.txt").write_text("KIT_SUBMISSION_DIR:PATH=/somewhere\n")
        code, out, err = self.kit("01", "--build-dir", str(build_dir))
        self.assertEqual(code, ExitCode.OK, err)
        self.assertIn("-DKIT_SUBMISSION_DIR=", self.cmake_calls()[0])
        self.assertNotIn("configure: 0 s", out)

    def test_a_failed_build_exits_3_with_its_output(self) -> None:
        code, out, err = self.kit("01", FAKE_CMAKE_FAIL="1")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)
        self.assertIn("build failed: ", err)
        self.assertIn("BROKEN does not compile", err)
        self.assertNotIn("phase ", out)


class VersusTest(BenchGraderCase):
    """bench-grader --versus NAME=VALUE: rounds of A (as is) then B (with the variables)."""

    def test_rounds_alternate_and_only_b_runs_with_the_variable(self) -> None:
        log = self.tmp / "events.log"
        code, out, err = self.kit("01", "--repeat", "2", "--versus", f"FAKE_LOG={log}",
                                  "--versus", "KIT_JUDGE_POOL=0")
        self.assertEqual(code, ExitCode.OK, err)
        self.assertIn("bench-grader: 01_alpha (student), 4 runs, seed ", out)
        labels = [line.split(":")[0] for line in out.splitlines() if line.startswith("run ")]
        self.assertEqual(labels, ["run 1/4 (A)", "run 2/4 (B)", "run 3/4 (A)", "run 4/4 (B)"])
        # The fake binary logs each test it runs while FAKE_LOG is set: the two B runs only.
        starts = [line for line in log.read_text().splitlines()
                  if line.startswith("start Host.Passes")]
        self.assertEqual(len(starts), 2)
        self.assertNotIn("KIT_JUDGE_POOL", os.environ)
        table = out[out.index("phase "):]
        self.assertEqual(table.splitlines()[0].split(),
                         ["phase", "A", "median", "A", "range", "B", "median", "B", "range",
                          "B", "-", "A"])
        self.assertIn(f"B: FAKE_LOG={log} KIT_JUDGE_POOL=0", out)
        rows = [line.split()[0] for line in table.splitlines()[2:]
                if line and not line.startswith(("-", " ")) and ":" not in line]
        self.assertEqual(rows[-1], "total")
        self.assertTrue(all(len(line) <= 80 for line in table.splitlines()), table)

    def test_a_malformed_setting_is_a_usage_error(self) -> None:
        for bad in ("KIT_JUDGE_POOL", "=0", "1X=2", "A-B=3"):
            with self.subTest(bad):
                code, _, err = self.kit("01", "--versus", bad)
                self.assertEqual(code, ExitCode.USAGE)
                self.assertIn("expected NAME=VALUE", err)
                self.assertEqual(self.cmake_calls(), [])

    def test_the_table_compares_medians(self) -> None:
        def sample(correctness: float) -> bench_grader.Sample:
            return bench_grader.Sample({"correctness": correctness, "perf": 6.0}, True, True)
        text = bench_grader.render_versus([sample(9.0), sample(10.0), sample(8.9)],
                                          [sample(8.3), sample(8.6), sample(8.4)], "X=0")
        rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[2:]
                if line and line[0] not in "- " and ":" not in line}
        self.assertEqual(rows["correctness"], ["9.00", "8.90-10.00", "8.40", "8.30-8.60", "-0.60"])
        self.assertEqual(rows["total"], ["15.00", "14.90-16.00", "14.40", "14.30-14.60", "-0.60"])
        self.assertIn("B: X=0", text)


class PhasesTest(unittest.TestCase):
    def test_the_runner_timings_and_the_rest_of_its_time(self) -> None:
        run = RunResult(1, "student", {}, "now")
        run.timings = {"list": 0.5, "correctness": 2.0, "timed": 0.25, "perf": 1.0}
        phases = bench_grader.runner_phases(run, 4.0)
        self.assertEqual(phases, {"list": 0.5, "correctness": 2.0, "timed": 0.25, "perf": 1.0,
                                  "other": 0.25})

    def test_a_runner_without_timings_is_timed_as_a_whole(self) -> None:
        self.assertEqual(bench_grader.runner_phases(RunResult(1, "student", {}, "now"), 3.0),
                         {"tests": 3.0})
        no_timings = SimpleNamespace()  # a RunResult from before the runner timed its phases
        self.assertEqual(bench_grader.runner_phases(no_timings, 3.0),  # type: ignore[arg-type]
                         {"tests": 3.0})


class NinjaStepsTest(unittest.TestCase):
    def test_the_longest_steps_first_each_once_and_the_table_lists_them(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / ".ninja_log"
            log.write_text("# ninja log v6\n"
                           "0\t1500\t0\tlib.a\taa\n"
                           "1100\t24900\t0\tgrader/03/judge_03.dir/test_coalescing.cu.o\tbb\n"
                           "200\t3000\t0\tone.o\tcc\n200\t3000\t0\ttwo.o\tcc\n"
                           "garbage line\n")
            steps = bench_grader.ninja_steps(log)
            self.assertEqual(bench_grader.ninja_steps(Path(tmp) / "missing"), [])
        self.assertEqual([output for _, _, output in steps],
                         ["grader/03/judge_03.dir/test_coalescing.cu.o", "one.o", "lib.a"])
        self.assertEqual(steps[0][:2], (23.8, 1.1))
        sample = bench_grader.Sample({"configure": 1.0, "build": 25.0}, True, True)
        sample.build_steps, sample.build_cpu = steps, 28.1
        text = bench_grader.render([sample])
        self.assertIn("longest build steps (the last run, 28 s of steps in all", text)
        self.assertIn("   23.8 s  from   1.1 s  grader/03/judge_03.dir/test_coalescing.cu.o", text)
        self.assertEqual(bench_grader._step_name(
            "grader/05/CMakeFiles/lab_05_reference.dir/__/__/solutions/05/a.cu.o"),
            "lab_05_reference.dir/solutions/05/a.cu.o")
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()), text)


class RenderTest(unittest.TestCase):
    def sample(self, build: float, tests: float, configured: bool = True,
               gpu: bool = True) -> bench_grader.Sample:
        return bench_grader.Sample({"configure": 1.0 if configured else 0.0, "build": build,
                                    "tests": tests, "reports": 0.5}, configured, gpu)

    def test_median_min_max_and_the_total_of_the_runs(self) -> None:
        samples = [self.sample(10.0, 4.0), self.sample(20.0, 2.0), self.sample(30.0, 3.0)]
        lines = bench_grader.render(samples).splitlines()
        rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if line[0] not in "- "
                and ":" not in line}
        self.assertEqual(rows["build"], ["20.00", "10.00", "30.00", "85%"])
        self.assertEqual(rows["tests"], ["3.00", "2.00", "4.00", "13%"])
        totals = [s.total for s in samples]
        self.assertEqual(rows["total"], [f"{statistics.median(totals):.2f}", f"{min(totals):.2f}",
                                         f"{max(totals):.2f}", "100%"])
        self.assertEqual(list(rows), ["configure", "build", "tests", "reports", "total"])
        self.assertIn("tests: the runner timed no phase of its own", "\n".join(lines))

    def test_notes_are_wrapped_to_80_columns(self) -> None:
        sample = self.sample(1.0, 1.0, configured=False, gpu=False)
        sample.not_graded = ["01_alpha: " + "the grader binary is missing " * 5]
        text = bench_grader.render([sample], [bench_grader.CCACHE_NOTE])
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()), text)
        for note in ("configure: 0 s", "no GPU:", "not graded: 01_alpha", "CCACHE_DISABLE=1"):
            self.assertIn(note, text)

    def test_the_slowest_tests_longest_first_within_80_columns(self) -> None:
        lab = LabResult("01_alpha", "Alpha", "student", {"alpha.1": "one"})
        lab.tests = [TestResult("01_alpha", "alpha.1", f"Suite.Test{i}" + "x" * 70, "a test",
                                "gpu", 1, Status.PASSED, duration_s=float(i)) for i in range(12)]
        run = RunResult(1, "student", {}, "now", [lab])
        slowest = bench_grader.slowest_tests(run)
        self.assertEqual([seconds for seconds, _ in slowest], [11.0, 10.0, 9.0, 8.0, 7.0, 6.0,
                                                              5.0, 4.0, 3.0, 2.0])
        sample = self.sample(1.0, 1.0)
        sample.slowest = slowest
        text = bench_grader.render([sample])
        self.assertIn("slowest tests", text)
        self.assertIn("  11.00 s  01 Suite.Test11", text)
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()), text)


if __name__ == "__main__":
    unittest.main()


class TraceTest(unittest.TestCase):
    """bench-grader --trace: the KIT_TRACE lines of one run, one line per test process."""

    LINES = "\n".join([
        "100 5000.0 main",                      # a listing: no test, not shown
        "200 5100.0 main",
        "200 5100.5 worker started",
        "200 5101.0 start Lab.First",
        "200 8100.0 end Lab.First",             # waited 3 s for its contexts
        "200 8100.1 start Lab.Second",
        "200 9000.0 end Lab.Second",
        "300 8000.0 worker context",            # a worker's own line
        "400 5200.0 main",
        "400 5200.2 start Other.OnlyOne",       # never ended: killed on timeout
        "not a trace line",
        "",
    ])

    def test_each_test_process_with_its_first_test_and_its_wait(self) -> None:
        processes = bench_grader.trace_processes(self.LINES)
        self.assertEqual([(p.first, p.tests) for p in processes],
                         [("Lab.First", 2), ("Other.OnlyOne", 1)])
        first, hung = processes
        self.assertAlmostEqual(first.start, 0.1)
        self.assertAlmostEqual(first.first_end, 3.1)
        self.assertAlmostEqual(first.end, 4.0)
        self.assertIsNone(hung.first_end)

    def test_the_table_fits_80_columns(self) -> None:
        long = self.LINES.replace("Lab.First", "Suite/" + "VeryLong" * 20 + ".Name/n_1048583")
        text = bench_grader.render_trace(bench_grader.trace_processes(long))
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()), text)
        self.assertIn("  -  ", text.replace("     -", "  -  "))
        self.assertIn("no test process", bench_grader.render_trace([]))
