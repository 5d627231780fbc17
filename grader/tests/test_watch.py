"""kit.py watch: the loop with a fake build and grade (a save seen within one poll, a compile
error shown filtered and explained, Ctrl-C), and the command itself with a fake cmake.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import threading
import time
import unittest
from pathlib import Path

from kitgrade import watch
from kitgrade.cli import main
from kitgrade.model import LabResult, RunResult
from kitgrade.watch import Attempt, Watcher

from .support import fake_env, make_repo
from .test_diagnose_build import NINJA_TODO


def a_run() -> RunResult:
    return RunResult(5, "student", {"available": False}, "2024-05-01T10:00:00+00:00",
                     [LabResult("01_alpha", "Lab alpha", "student", {})])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class LoopTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.files = [self.tmp / "index_math.cuh", self.tmp / "indexing.cu"]
        for path in self.files:
            path.write_text("// stub\n")
        self.out = io.StringIO()
        self.grades: list[float] = []
        self.sleeps: list[float] = []

    def watcher(self, grade, sleep=None, **kw) -> Watcher:
        def fake_grade() -> Attempt:
            self.grades.append(time.time())
            return grade()

        return Watcher(self.files, "labs/01_alpha/{index_math.cuh, indexing.cu}", fake_grade,
                       out=self.out, sleep=sleep or self.sleeps.append,
                       size=lambda: os.terminal_size((80, 24)),
                       render=lambda run, width, colour: f"STUDENT VIEW seed {run.seed} width {width}\n",
                       **kw)

    def test_grades_once_then_again_after_a_save(self) -> None:
        def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)
            if len(self.sleeps) == 3:  # the student saves while watch waits
                self.files[1].write_text("// my kernel\n")

        code = self.watcher(lambda: Attempt(run=a_run()), sleep=sleep, max_cycles=2).run()
        self.assertEqual(code, 0)
        self.assertEqual(len(self.grades), 2)
        # Seen at the first look after the save, then at most three short settling pauses.
        after_save = self.sleeps[3:]
        self.assertTrue(all(s == watch.SETTLE_S for s in after_save), self.sleeps)
        self.assertLessEqual(watch.POLL_S + sum(after_save), 0.5)
        text = self.out.getvalue()
        self.assertIn("first grade started ", text)
        self.assertIn("change seen ", text)
        self.assertIn(" in indexing.cu: rebuilding and grading...", text)
        self.assertRegex(text, r"change seen \d\d:\d\d:\d\d\.\d{3} \(0\.\d\d s after the save\), "
                               r"graded \d\d:\d\d:\d\d\.\d{3}\n")
        self.assertEqual(text.count("STUDENT VIEW seed 5 width 80"), 2)
        self.assertTrue(text.endswith("watching labs/01_alpha/{index_math.cuh, indexing.cu} "
                                      "(Ctrl-C to stop)\n"))
        self.assertNotIn("\033[", text)  # not a terminal: no clearing

    def test_a_real_save_starts_the_regrade_within_half_a_second(self) -> None:
        saved: list[float] = []

        def save_later() -> None:
            time.sleep(0.4)
            self.files[0].write_text("// saved\n")
            saved.append(time.time())

        writer = threading.Thread(target=save_later)
        watcher = self.watcher(lambda: Attempt(run=a_run()), sleep=time.sleep, max_cycles=2)
        writer.start()
        watcher.run()
        writer.join()
        self.assertEqual(len(self.grades), 2)
        self.assertLess(self.grades[1] - saved[0], 0.5)

    def test_a_save_during_the_grade_starts_another_at_once(self) -> None:
        def grade() -> Attempt:
            if len(self.grades) == 1:
                self.files[0].write_text("// saved while the first grade ran\n")
            return Attempt(run=a_run())

        self.watcher(grade, max_cycles=2).run()
        self.assertEqual(len(self.grades), 2)
        self.assertNotIn(watch.POLL_S, self.sleeps)  # no waiting for a poll

    def test_compile_error_shows_the_compiler_message_and_why(self) -> None:
        attempt = Attempt(build_error="`cmake --build build` exited with code 1",
                          build_output=NINJA_TODO)
        self.watcher(lambda: attempt, max_cycles=1).run()
        text = self.out.getvalue()
        self.assertIn("Build failed: the compiler says:", text)
        self.assertIn('index_math.cuh(21): error: identifier "TODO" is undefined\n    return TODO;\n'
                      "           ^\n", text)
        for noise in ("FAILED:", "[1/4]", "ninja:", "/usr/local/cuda/bin/nvcc", "ccache"):
            self.assertNotIn(noise, text)
        self.assertIn("why: TODO is not code", text)
        self.assertIn("why: A kernel is launched, not called", text)
        self.assertLess(text.index("must be configured"), text.index("why: TODO"))  # under it
        self.assertIn("Fix the first error and save: watch rebuilds then.", text)
        self.assertIn("kernel<<<grid, block>>>(arguments)", text)  # not cut in two
        self.assertIn(", build failed ", text)
        self.assertTrue(all(len(line) <= 80 for line in text.splitlines()
                            if line.startswith(("why:", "     "))))

    def test_terminal_screen_is_cleared_and_long_errors_cut(self) -> None:
        self.out = Terminal()
        long_output = "\n".join(f"x.cu({i}): error: something {i}" for i in range(100))
        self.watcher(lambda: Attempt(build_error="failed", build_output=long_output),
                     max_cycles=1).run()
        text = self.out.getvalue()
        self.assertTrue(text.startswith(watch.CLEAR))
        self.assertIn("x.cu(0): error: something 0", text)
        self.assertNotIn("something 99", text)
        self.assertIn("more lines; fix the first error first", text)
        self.assertLessEqual(len(text[len(watch.CLEAR):].splitlines()), 24)

    def test_long_lines_count_as_the_rows_they_wrap_to(self) -> None:
        self.out = Terminal()
        long_output = "\n".join(f"/usr/bin/ld: {'x' * 150}: undefined reference to `s{i}'"
                                 for i in range(30))
        self.watcher(lambda: Attempt(build_error="failed", build_output=long_output),
                     max_cycles=1).run()
        rows = sum(-(-max(len(line), 1) // 80)
                   for line in self.out.getvalue()[len(watch.CLEAR):].splitlines())
        self.assertLessEqual(rows, 24)
        self.assertIn("undefined reference to `s0'", self.out.getvalue())

    def test_ctrl_c_while_grading_stops_cleanly(self) -> None:
        def interrupted() -> Attempt:
            raise KeyboardInterrupt

        self.assertEqual(self.watcher(interrupted).run(), 0)
        self.assertTrue(self.out.getvalue().endswith("watch: stopped\n"))

    def test_ctrl_c_while_waiting_stops_cleanly(self) -> None:
        def sleep(_: float) -> None:
            raise KeyboardInterrupt

        self.assertEqual(self.watcher(lambda: Attempt(run=a_run()), sleep=sleep).run(), 0)
        self.assertEqual(len(self.grades), 1)
        self.assertTrue(self.out.getvalue().endswith("watch: stopped\n"))

    def test_shown_files(self) -> None:
        from .support import make_lab
        self.assertEqual(watch.shown_files(make_lab("01_alpha")), "labs/01_alpha/a.cu")


class CommandTest(unittest.TestCase):
    """kit.py watch LAB --once, with a fake cmake first on PATH and the fake lab binaries."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha"])
        self.tools = self.tmp / "tools"
        self.tools.mkdir()

    def watch(self, cmake_exit: int, output: str = "", *argv: str) -> tuple[int, str, str]:
        (self.tmp / "cmake-output.txt").write_text(output)
        cmake = self.tools / "cmake"
        cmake.write_text(f'#!/bin/sh\ncase "$1" in --build) cat "{self.tmp / "cmake-output.txt"}"; '
                         f"exit {cmake_exit};; esac\n")
        cmake.chmod(0o755)
        out, err = io.StringIO(), io.StringIO()
        with fake_env(PATH=f"{self.tools}{os.pathsep}{os.environ.get('PATH', '')}",
                      FAKE_TESTS="pass,fail"):
            code = main(["watch", "01", *argv], root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def test_once_grades_shows_and_records_progress(self) -> None:
        code, out, err = self.watch(0, "", "--once", "--seed", "11")
        self.assertEqual((code, err), (0, ""))
        self.assertIn("01_alpha", out)
        self.assertIn("first grade started ", out)
        self.assertTrue(out.endswith("watching labs/01_alpha/a.cu (Ctrl-C to stop)\n"))
        self.assertTrue((self.root / "build" / "progress" / "01_alpha.json").is_file())

    def test_build_failure_is_shown_and_watch_goes_on(self) -> None:
        code, out, _ = self.watch(1, NINJA_TODO, "--max-cycles", "1")
        self.assertEqual(code, 0)
        self.assertIn('error: identifier "TODO" is undefined', out)
        self.assertIn("why: TODO is not code", out)
        self.assertNotIn("FAILED:", out)
        self.assertFalse((self.root / "build" / "progress").exists())

    def test_usage_errors(self) -> None:
        self.assertEqual(self.watch(0, "", "--once", "--max-cycles", "2")[0], 2)
        self.assertEqual(self.watch(0, "", "--interval", "0")[0], 2)
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(main(["watch", "nolab"], root=self.root, stdout=out, stderr=err), 2)


if __name__ == "__main__":
    unittest.main()
