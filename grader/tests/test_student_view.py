"""The student's one-screen view of a grade (kitgrade.student_view) and the progress shown
while grading (kitgrade.console), from hand-built results and fake streams.

Run all grader tests from grader/:
    python3 -m unittest discover -s tests -t .
Run them as if rich were not installed: KIT_PLAIN=1 python3 -m unittest discover -s tests -t .
"""

from __future__ import annotations

import io
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import console, counters, student_view
from kitgrade.cli import main
from kitgrade.manifest import Manifest, parse_manifest
from kitgrade.model import NO_DEVICE_REASON, LabResult, RunResult, Status, TestResult
from kitgrade.runner import PERF_GATE_REASON, LabTarget

from .support import fake_env, lab_entry, make_fake_binary, make_lab, make_repo

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SEED = 4242
H100 = {"available": True, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}
NO_GPU = {"available": False, "reason": NO_DEVICE_REASON}
COMMAND = re.compile(r"^ *(KIT_SEED=\d+ )?python3 grader/kit\.py ")

STEPS = {
    "indexing.1": "1D global index and grid size",
    "indexing.2": "2D row/column mapping and row-major flattening",
    "indexing.3": "3D indexing",
    "indexing.4": "How blocks split into warps: warp and lane of a thread in its block",
    "indexing.perf": "Performance: saxpy_fast near copy bandwidth",
}

EQUALITY = """/work/main/grader/01_indexing/test_indexing.cu:38
Expected equality of these values:
  lab01::grid_size_1d(1000, 256)
    Which is: 0
  4u
    Which is: 4
1000 elements, blocks of 256

/work/main/grader/01_indexing/test_indexing.cu:40
Expected equality of these values:
  lab01::grid_size_1d(n, block)
    Which is: 0
  want
    Which is: 2471586
grid_size_1d(578351065, 234)
seed 4242 (rerun with KIT_SEED=4242)"""

MISMATCH = ("/work/main/grader/01_indexing/test_indexing.cu:80\nFailed\n"
            "saxpy n=1048583: 1048583 of 1048583 elements wrong (1048583 never written); "
            "launch grid (4097,1,1) block (256,1,1)\n"
            + "".join(f"  element {i}: expected {i}.5, got nothing (never written); owner block "
                      f"({i // 256},0,0) thread ({i % 256},0,0)\n" for i in range(8))
            + "  ... and 1048575 more\n  max abs error 3.5, max rel error 1 over written elements\n"
              "  tolerance: abs 0 + rel 1e-06 (one fused multiply-add per element)\n"
              "seed 4242 (rerun with KIT_SEED=4242)")


def result(step: str, test_id: str, kind: str, status: Status, reason: str = "", output: str = "",
           points: float = 1, title: str = "") -> TestResult:
    return TestResult("01_indexing", step, test_id, title or f"{test_id} checks something", kind,
                      points, status, reason, output)


def lab01(step_status: dict[str, str], gpu: bool) -> LabResult:
    """A lab shaped like 01_indexing: per step two host tests and six gpu tests (perf: one perf
    test and six gpu tests). step_status: step -> "pass" or "fail" (what the code does)."""
    lab = LabResult("01_indexing", "Thread indexing", "student", dict(STEPS))
    all_correct = True
    for step in STEPS:
        if step == "indexing.perf":
            continue
        ok = step_status.get(step) == "pass"
        all_correct &= ok
        n = step.split(".")[1]
        for i in range(2):
            lab.tests.append(result(step, f"Host{n}.Check{i}", "host",
                                    Status.PASSED if ok else Status.FAILED,
                                    output="" if ok else EQUALITY, points=2,
                                    title=f"host check {i} of step {n}: a rather long title that "
                                          f"goes on and on past the edge of the terminal"))
        for size in (1, 31, 32, 33, 1000, 1048583):
            lab.tests.append(_gpu(step, f"Sizes/Gpu{n}.Writes/n_{size}", ok, gpu,
                                  title=f"kernel {n} writes every element [n_{size}]"))
    perf_ok = step_status.get("indexing.perf") == "pass"
    for size in (1, 33, 1000, 4097, 1048583, 3145733):
        lab.tests.append(_gpu("indexing.perf", f"Sizes/Fast.Writes/n_{size}", perf_ok, gpu))
    if not gpu:
        only_device = all_correct
        perf = result("indexing.perf", "Perf.SaxpyFast", "perf", Status.NOT_RUN,
                      NO_DEVICE_REASON if only_device else PERF_GATE_REASON, points=10)
    elif all_correct and perf_ok:
        perf = result("indexing.perf", "Perf.SaxpyFast", "perf", Status.PASSED, points=10)
    else:
        perf = result("indexing.perf", "Perf.SaxpyFast", "perf", Status.NOT_RUN, PERF_GATE_REASON,
                      points=10)
    lab.tests.append(perf)
    return lab


def _gpu(step: str, test_id: str, ok: bool, gpu: bool, title: str = "") -> TestResult:
    if not gpu:
        return result(step, test_id, "gpu", Status.NOT_RUN, NO_DEVICE_REASON, title=title)
    return result(step, test_id, "gpu", Status.PASSED if ok else Status.FAILED,
                  output="" if ok else MISMATCH, title=title)


def run_of(*labs: LabResult, gpu: bool = False, variant: str = "student") -> RunResult:
    for lab in labs:
        lab.variant = variant
    return RunResult(SEED, variant, H100 if gpu else NO_GPU, "2024-01-01T00:00:00+00:00",
                     list(labs))


def manifest_01_02() -> Manifest:
    return parse_manifest({"labs": [
        {"id": "01_indexing", "title": "Thread indexing", "timeout_s": 60,
         "student_files": ["a.cu"],
         "steps": [{"id": step, "title": title, "hints": ["h"]} for step, title in STEPS.items()]},
        lab_entry("02_bounds"),
    ]})


class ViewCase(unittest.TestCase):
    def render(self, run: RunResult, width: int = 80, colour: bool = False) -> list[str]:
        text = student_view.render(run, width=width, colour=colour, manifest=manifest_01_02())
        self.assertTrue(text.endswith("\n"))
        lines = text.rstrip("\n").split("\n")
        for line in lines:
            self.assertLessEqual(len(ANSI.sub("", line)), width, line)
        if not colour:
            self.assertNotIn("\x1b", text)
        self.assertNotIn(PERF_GATE_REASON, text)
        return lines

    def assert_line_starting(self, lines: list[str], prefix: str) -> None:
        self.assertTrue(any(line.startswith(prefix) for line in lines), "\n".join(lines))

    def assert_one_screen(self, lines: list[str]) -> None:
        self.assertLessEqual(len(lines), 22, "\n".join(lines))

    def assert_next(self, lines: list[str], *commands: str) -> None:
        shown = [line.strip() for line in lines if COMMAND.match(line)]
        for command in commands:
            self.assertIn(command, shown, "\n".join(lines))

    def assert_step_table(self, lines: list[str], states: dict[str, str]) -> None:
        for label, state in states.items():
            row = next((line for line in lines if re.match(rf"^  . {label} ", line)), None)
            self.assertIsNotNone(row, f"no row for {label}:\n" + "\n".join(lines))
            assert row is not None
            self.assertTrue(row.endswith(state), row)


class OneLabTest(ViewCase):
    def test_untouched_stub_without_a_gpu(self) -> None:
        for width in (80, 60):
            with self.subTest(width=width):
                lines = self.render(run_of(lab01({}, gpu=False)), width)
                text = "\n".join(lines)
                self.assert_one_screen(lines)
                header = "01_indexing · Thread indexing · student · seed 4242 · no GPU"
                self.assertTrue(lines[0].startswith(header[:width - 1]), lines[0])
                self.assert_step_table(lines, {"Step 1   ": "failing", "Step 4   ": "failing",
                                               "Step perf": "not run: no CUDA device"})
                self.assertIn("Score: 0/56", text)
                self.assertEqual(text.count("no CUDA device: GPU steps were not run"
                                            if width == 80 else "no CUDA device: GPU steps"), 1)
                self.assert_line_starting(lines, "Step 1: 2 of 8 tests fail, 6 need a GPU · 1D")
                self.assertIn("2 of 8 tests fail", text)
                self.assertIn("expected 4, got 0: lab01::grid_size_1d(1000, 256)", text)
                self.assertNotIn("test_indexing.cu", text)
                self.assert_next(lines, "python3 grader/kit.py hint 01 1",
                                 "KIT_SEED=4242 python3 grader/kit.py grade 01",
                                 "python3 grader/kit.py grade 01 --verbose")
                self.assertIn('"Step 1" in docs/labs/01_indexing.md', text)

    def test_stub_with_a_gpu_and_long_messages(self) -> None:
        lines = self.render(run_of(lab01({}, gpu=True), gpu=True))
        text = "\n".join(lines)
        self.assert_one_screen(lines)
        self.assertIn("GPU NVIDIA H100"[4:], lines[0])
        self.assert_step_table(lines, {"Step 1   ": "failing", "Step 2   ": "failing",
                                       "Step perf": "failing"})
        self.assertIn("8 of 8 tests fail", text)
        self.assertNotIn("no CUDA device", text)
        self.assertTrue(any(line.endswith("…") for line in lines), text)  # long lines are cut
        self.assert_next(lines, "python3 grader/kit.py hint 01 1")

    def test_step_1_done_step_2_failing(self) -> None:
        lines = self.render(run_of(lab01({"indexing.1": "pass"}, gpu=True), gpu=True))
        text = "\n".join(lines)
        self.assert_one_screen(lines)
        self.assert_step_table(lines, {"Step 1   ": "done", "Step 2   ": "failing"})
        self.assertIn("Score: 10/56", text)
        self.assert_line_starting(lines, "Step 2: 8 of 8 tests fail · 2D row/column")
        self.assert_next(lines, "python3 grader/kit.py hint 01 2",
                         "KIT_SEED=4242 python3 grader/kit.py grade 01")
        self.assertIn('"Step 2" in docs/labs/01_indexing.md', text)

    def test_perf_waiting_for_the_gate_is_to_do(self) -> None:
        lab = lab01({s: "pass" for s in STEPS}, gpu=True)
        lab.tests[-1] = result("indexing.perf", "Perf.SaxpyFast", "perf", Status.NOT_RUN,
                               "needs sm_80", points=10)
        lines = self.render(run_of(lab, gpu=True))
        self.assert_step_table(lines, {"Step perf": "to do"})
        self.assert_next(lines, "python3 grader/kit.py hint 01 perf")
        self.assertIn("  not run: needs sm_80", lines)
        self.assertIn('"Performance step" in docs/labs/01_indexing.md', "\n".join(lines))

    def test_everything_passed_points_at_the_next_lab(self) -> None:
        lines = self.render(run_of(lab01({s: "pass" for s in STEPS}, gpu=True), gpu=True))
        text = "\n".join(lines)
        self.assert_step_table(lines, {f"Step {n}".ljust(9): "done" for n in "1234"})
        self.assertIn("Score: 56/56", text)
        self.assertIn("Well done", text)
        self.assertIn("Next lab: 02_bounds", text)
        self.assert_next(lines, "python3 grader/kit.py grade 02")
        self.assertLessEqual(len(lines), 12)

    def test_the_last_lab_done_points_at_the_benchmark(self) -> None:
        lab = lab01({s: "pass" for s in STEPS}, gpu=True)
        lab.lab = "02_bounds"
        lines = self.render(run_of(lab, gpu=True))
        self.assertIn("  build/bin/bench_02_bounds", lines)

    def test_reference_without_a_gpu(self) -> None:
        lines = self.render(run_of(lab01({s: "pass" for s in STEPS}, gpu=False),
                                   variant="reference"))
        text = "\n".join(lines)
        self.assert_step_table(lines, {"Step 1   ": "not run: no CUDA device",
                                       "Step perf": "not run: no CUDA device"})
        self.assertIn("Score: 16/56 (40 points need a GPU)", text)
        self.assertEqual(text.count("no CUDA device: GPU steps were not run"), 1)
        self.assertNotIn("done", [line.split()[-1] for line in lines[1:6]])  # never as passed
        self.assert_next(lines, "python3 grader/kit.py grade 01 --variant reference --verbose")

    def test_counter_tests_without_counters_are_not_work_for_the_student(self) -> None:
        # A GPU, but no ncu: steps 1 and 2 pass but for a counter test each; step 3 fails.
        lab = lab01({"indexing.1": "pass", "indexing.2": "pass", "indexing.4": "pass",
                     "indexing.perf": "pass"}, gpu=True)
        for n in "12":
            lab.tests.append(result(f"indexing.{n}", f"Counters.Step{n}", "counter",
                                    Status.NOT_RUN, counters.NO_NCU_REASON, points=2))
        lines = self.render(run_of(lab, gpu=True))
        text = "\n".join(lines)
        self.assert_step_table(lines, {"Step 1   ": "not run: no counters",
                                       "Step 3   ": "failing"})
        self.assertIn("(4 points need hardware counters)", text)
        self.assertEqual(text.count(student_view.NO_COUNTERS_NOTICE), 1)
        self.assertNotIn("no CUDA device", text)
        self.assert_next(lines, "python3 grader/kit.py hint 01 3")

    def test_lab_that_could_not_be_graded(self) -> None:
        lab = LabResult("01_indexing", "Thread indexing", "student", dict(STEPS),
                        error=f"binary not built: /very/long/path/{'x' * 80}/grade_01_indexing")
        lines = self.render(run_of(lab))
        self.assertEqual(lines[1], "Not graded: binary not built: grade_01_indexing")
        self.assertEqual(sum("binary not built" in line for line in lines), 1)
        self.assert_next(lines, "python3 grader/kit.py grade 01 --verbose")
        self.assertLessEqual(len(lines), 5)

    def test_crash_and_ban_reasons_are_shown(self) -> None:
        lab = lab01({}, gpu=True)
        lab.tests[0] = result("indexing.1", "Host1.Check0", "host", Status.CRASHED,
                              "crashed: SIGSEGV", "Segmentation fault in grid_size_1d")
        lab.tests[1] = result("indexing.1", "Host1.Check1", "host", Status.FAILED,
                              "uses cuBLAS, banned in this lab (test not run)",
                              "indexing.cu:12 uses cuBLAS (`cublasSgemm`): this lab must not")
        text = "\n".join(self.render(run_of(lab, gpu=True)))
        self.assertIn("      crashed: SIGSEGV\n      Segmentation fault in grid_size_1d", text)
        self.assertIn("failed: uses cuBLAS, banned in this lab", text)

    def test_colour_only_when_asked_and_lines_still_fit(self) -> None:
        run = run_of(lab01({"indexing.1": "pass"}, gpu=True), gpu=True)
        lines = self.render(run, colour=True)
        self.assertTrue(any("\x1b[31m" in line for line in lines))
        plain = [ANSI.sub("", line) for line in lines]
        self.assertEqual(plain, self.render(run, colour=False))

    def test_narrow_terminals_still_fit(self) -> None:
        lab = LabResult("01_indexing", "Thread indexing", "student", dict(STEPS), error="x " * 40)
        done = lab01({s: "pass" for s in STEPS}, gpu=True)
        for run in (run_of(lab), run_of(done, gpu=True), run_of(lab01({}, gpu=False))):
            for width in (40, 50):
                self.render(run, width)

    def test_verbose_is_the_full_table(self) -> None:
        text = student_view.render(run_of(lab01({}, gpu=False)), verbose=True)
        self.assertIn("STEP", text)
        self.assertIn("Details:", text)
        self.assertGreater(len(text.splitlines()), 60)


class ManyLabsTest(ViewCase):
    def labs(self) -> list[LabResult]:
        done = lab01({s: "pass" for s in STEPS}, gpu=True)
        failing = lab01({"indexing.1": "pass"}, gpu=True)
        failing.lab, failing.title = "02_bounds", "Bounds checks"
        for t in failing.tests:
            t.lab = "02_bounds"
        broken = LabResult("03_coalescing", "Memory coalescing", "student", {"coalescing.1": "x"},
                           error=f"could not list tests of build/bin/grade_03: {'y' * 90}")
        more = [lab01({}, gpu=True) for _ in range(4)]
        for i, lab in enumerate(more, start=4):
            lab.lab = f"0{i}_more"
        return [done, failing, broken, *more]

    def test_a_line_per_lab_then_the_first_unfinished_lab(self) -> None:
        lines = self.render(run_of(*self.labs(), gpu=True))
        text = "\n".join(lines)
        self.assertTrue(lines[0].startswith("kit grade · student · seed 4242 · NVIDIA H100"))
        self.assertRegex(lines[1], r"^  ✓ 01_indexing +Thread indexing +56/56  done$")
        self.assertRegex(lines[2], r"^  ✗ 02_bounds +Bounds checks +10/56  Step 2 failing$")
        self.assertTrue(lines[3].startswith("  ✗ 03_coalescing  not graded: could not"))
        self.assertTrue(lines[3].endswith("yyy"))  # the end of an error is kept
        self.assertIn("Total: 66/336 over 7 labs, not graded: 03_coalescing", text)
        self.assert_line_starting(lines, "02_bounds · Step 2: 8 of 8 tests fail · 2D")
        self.assert_next(lines, "python3 grader/kit.py hint 02 2",
                         "KIT_SEED=4242 python3 grader/kit.py grade 02",
                         "python3 grader/kit.py grade 02 --verbose")
        self.assertLessEqual(len(lines), 22)
        self.assertEqual(len(self.render(run_of(*self.labs(), gpu=True), width=60)), len(lines))

    def test_several_labs_without_a_gpu(self) -> None:
        first = lab01({s: "pass" for s in STEPS}, gpu=False)
        second = lab01({}, gpu=False)
        second.lab = "02_bounds"
        lines = self.render(run_of(first, second))
        text = "\n".join(lines)
        self.assertRegex(lines[1], r"01_indexing .*GPU steps not run$")
        self.assertRegex(lines[2], r"02_bounds .*Step 1 failing$")
        self.assertEqual(text.count("no CUDA device: GPU steps were not run"), 1)
        self.assert_next(lines, "python3 grader/kit.py hint 02 1")

    def test_all_labs_done(self) -> None:
        first = lab01({s: "pass" for s in STEPS}, gpu=True)
        second = lab01({s: "pass" for s in STEPS}, gpu=True)
        second.lab = "02_bounds"
        text = "\n".join(self.render(run_of(first, second, gpu=True)))
        self.assertIn("All steps of 01_indexing, 02_bounds done", text)
        self.assertIn("build/bin/bench_02_bounds", text)


class MessageTest(unittest.TestCase):
    def test_gtest_equality_becomes_one_line(self) -> None:
        test = result("indexing.1", "A.B", "host", Status.FAILED, output=EQUALITY)
        self.assertEqual(student_view.message_lines(test), [
            "expected 4, got 0: lab01::grid_size_1d(1000, 256)", "1000 elements, blocks of 256",
            "0 ≠ 2471586: lab01::grid_size_1d(n, block) vs want", "grid_size_1d(578351065, 234)"])
        plain_literal = "f.cu:1\nExpected equality of these values:\n  x\n    Which is: 3\n  4\n"
        self.assertEqual(student_view.message_lines(result("s.1", "A.B", "host", Status.FAILED,
                                                           output=plain_literal)),
                         ["expected 4, got 3: x"])

    def test_boolean_and_other_messages(self) -> None:
        test = result("indexing.1", "A.B", "host", Status.FAILED,
                      output="f.cu:3\nValue of: ok\n  Actual: false\nExpected: true\n"
                             "why it matters")
        self.assertEqual(student_view.message_lines(test),
                         ["expected true, got false: ok", "why it matters"])
        self.assertEqual(student_view.message_lines(result("s.1", "A.B", "host", Status.FAILED)),
                         ["failed"])

    def test_cut(self) -> None:
        self.assertEqual(student_view.cut("x" * 10, 10), "x" * 10)
        self.assertEqual(student_view.cut("x" * 11, 10), "x" * 9 + "…")


# ---------------------------------------------------------------- progress consoles

class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


NINJA = """$ cmake --build /b --target grade_01_indexing -j 8
[1/3] Building CUDA object grader/01_indexing/CMakeFiles/lab.dir/indexing.cu.o
[2/3] Linking CUDA static library grader/01_indexing/liblab_01_indexing_student.a
[3/3] Linking CXX executable bin/grade_01_indexing
"""

FAILED_BUILD = """$ cmake --build /b --target grade_01_indexing -j 8
[1/3] Building CUDA object grader/01_indexing/CMakeFiles/lab.dir/index_math.cu.o
FAILED: grader/01_indexing/CMakeFiles/lab.dir/indexing.cu.o
/usr/local/cuda/bin/nvcc -c indexing.cu
labs/01_indexing/indexing.cu(12): error: identifier "idx" is undefined
1 error detected in the compilation of "indexing.cu".
ninja: build stopped: subcommand failed.
"""


class ChoiceTest(unittest.TestCase):
    def test_plain_unless_a_terminal_with_rich(self) -> None:
        with fake_env(TERM="xterm"):
            self.assertIsInstance(console.for_student(io.StringIO()), console.PlainConsole)
            with mock.patch.dict(sys.modules, {"rich": None, "rich.console": None,
                                               "rich.progress": None}):
                self.assertIsNone(console.load_rich())
                self.assertIsInstance(console.for_student(_Tty()), console.PlainConsole)
        for env in ({"NO_COLOR": "1", "TERM": "xterm"}, {"TERM": "dumb"},
                    {console.PLAIN_ENV: "1", "TERM": "xterm"}):
            with self.subTest(env=env), fake_env(**env):
                self.assertIsInstance(console.for_student(_Tty()), console.PlainConsole)
                self.assertFalse(console.use_colour(_Tty()))

    @unittest.skipIf(console.load_rich() is None, "rich is not installed (or KIT_PLAIN is set)")
    def test_rich_on_a_terminal(self) -> None:
        with fake_env(TERM="xterm"):
            self.assertIsInstance(console.for_student(_Tty()), console.RichConsole)
            self.assertTrue(console.use_colour(_Tty()))


class PlainConsoleTest(unittest.TestCase):
    def setUp(self) -> None:
        self.out = io.StringIO()
        self.console = console.PlainConsole(self.out)
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_build_is_two_lines(self) -> None:
        with self.console.building(["grade_01_indexing"]) as stream:
            stream.write(NINJA[:30])  # arrives in pieces
            stream.write(NINJA[30:])
        lines = self.out.getvalue().splitlines()
        self.assertEqual(lines[0], "Building grade_01_indexing ...")
        self.assertRegex(lines[1], r"^Built grade_01_indexing in \d+ s$")
        self.assertEqual(len(lines), 2)

    def test_up_to_date(self) -> None:
        with self.console.building(["a", "b"]) as stream:
            stream.write("$ cmake --build /b --target a b\nninja: no work to do.\n")
        self.assertEqual(self.out.getvalue(),
                         "Building 2 graders ...\nBuilt 2 graders: up to date\n")

    def test_failed_build_shows_the_compiler_message(self) -> None:
        with self.assertRaises(RuntimeError), self.console.building(["grade_01"]) as stream:
            stream.write(FAILED_BUILD)
            raise RuntimeError("build failed")
        text = self.out.getvalue()
        self.assertIn("FAILED: grader/01_indexing", text)
        self.assertIn('error: identifier "idx" is undefined', text)
        self.assertNotIn("[1/3]", text)

    def test_a_line_per_lab_when_its_tests_are_done(self) -> None:
        targets = [LabTarget(make_lab(lab), make_fake_binary(self.tmp, lab))
                   for lab in ("01_alpha", "02_beta")]
        with fake_env(FAKE_TESTS="pass,fail"):
            with self.console.testing(targets, "student") as show:
                for lab in ("01_alpha", "02_beta"):
                    for step in ("alpha.1", "alpha.1"):
                        show(TestResult(lab, step, "T.t", "t", "host", 1, Status.PASSED))
                    if lab == "01_alpha":
                        self.assertRegex(self.out.getvalue(), r"^Tested 01_alpha: 2 tests in ")
        lines = self.out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[1].startswith("Tested 02_beta: 2 tests in "))

    def test_a_lab_whose_tests_cannot_be_listed_still_gets_its_line(self) -> None:
        target = LabTarget(make_lab("01_alpha"), self.tmp / "missing")
        with self.console.testing([target], "student") as show:
            show(TestResult("01_alpha", "alpha.1", "T.t", "t", "host", 1, Status.PASSED))
        self.assertTrue(self.out.getvalue().startswith("Tested 01_alpha: 1 tests in "))


@unittest.skipIf(console.load_rich() is None, "rich is not installed (or KIT_PLAIN is set)")
class RichConsoleTest(unittest.TestCase):
    def test_bars_run_and_a_failure_still_shows_the_compiler(self) -> None:
        out = io.StringIO()
        rich_console = console.RichConsole(out, console.load_rich())
        with rich_console.building(["grade_01_indexing"]) as stream:
            stream.write(NINJA)
        self.assertIn("Built grade_01_indexing in", out.getvalue())
        with self.assertRaises(RuntimeError), rich_console.building(["x"]) as stream:
            stream.write(FAILED_BUILD)
            raise RuntimeError("build failed")
        self.assertIn('error: identifier "idx" is undefined', out.getvalue())
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        target = LabTarget(make_lab("01_alpha"), make_fake_binary(tmp, "01_alpha"))
        with fake_env(FAKE_TESTS="pass"), rich_console.testing([target], "student") as show:
            show(TestResult("01_alpha", "alpha.1", "T.t", "t", "host", 1, Status.PASSED))


# ---------------------------------------------------------------- kit.py grade and hint

class GradeCommandTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"])

    def kit(self, *argv: str, **env: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with fake_env(**env):
            code = main(list(argv), root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def test_a_student_sees_one_screen(self) -> None:
        code, out, err = self.kit("grade", "01", "--no-build", "--seed", "7",
                                  FAKE_TESTS="pass,fail,gpu,perf")
        self.assertEqual(code, 1)
        lines = out.splitlines()
        self.assertEqual(lines[0], "Grading 01_alpha (student), seed 7")
        self.assertRegex(lines[1], r"^Tested 01_alpha: 4 tests in ")
        self.assertIn("01_alpha · Lab alpha · student · seed 7 · no GPU", out)
        self.assertIn("  python3 grader/kit.py hint 01 1", lines)
        self.assertEqual(lines[-1], "Reports: build/reports/student/")
        self.assertLessEqual(len(lines), 24)
        self.assertTrue(all(len(line) <= 80 for line in lines))
        self.assertNotIn(PERF_GATE_REASON, out)
        self.assertEqual(err, "")
        self.assertTrue((self.root / "build" / "reports" / "student" / "junit.xml").is_file())

    def test_verbose_and_report_dir_print_the_full_table(self) -> None:
        for extra in (["--verbose"], ["--report-dir", str(self.tmp / "out")]):
            with self.subTest(extra=extra):
                code, out, err = self.kit("grade", "01", "--no-build", *extra,
                                          FAKE_TESTS="pass,fail")
                self.assertIn("STEP", out)
                self.assertIn("Expected equality", out)
                self.assertIn("failed    01 Host.Fails", err)  # a line per test
                self.assertIn("junit.xml", out)

    def test_reports_are_the_same_whatever_is_printed(self) -> None:
        texts = []
        for extra in ([], ["--verbose"], ["--quiet"]):
            self.kit("grade", "01", "--no-build", "--seed", "3", *extra, FAKE_TESTS="pass,fail")
            texts.append((self.root / "build/reports/student/summary.md").read_text())
        self.assertEqual(texts[0], texts[1])
        self.assertEqual(texts[0], texts[2])

    def test_hint_footer_is_a_pasteable_command_within_80_columns(self) -> None:
        out = io.StringIO()
        self.assertEqual(main(["hint", "indexing", "indexing.perf"], stdout=out,
                              stderr=io.StringIO()), 0)
        self.assertIn("\n  python3 grader/kit.py hint 01 perf --level 2\n", out.getvalue())
        real = Path(__file__).resolve().parents[2]
        for lab in ("01", "02", "03", "04", "05", "06", "07"):
            for step in ("1", "2", "3"):
                for level in ("1", "3"):
                    out = io.StringIO()
                    main(["hint", lab, step, "--level", level], root=real, stdout=out,
                         stderr=io.StringIO())
                    for line in out.getvalue().splitlines():
                        self.assertLessEqual(len(line), 80, line)


if __name__ == "__main__":
    unittest.main()
