"""The kit.py command line: list, hint, and grade's exit codes and report handling.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade.cli import KIT_ROOT, ExitCode, build_parser, grade_exit_code, main
from kitgrade.context import TERMINAL_WIDTH, fill_help
from kitgrade.model import LabResult, RunResult, Status, TestResult

from .support import fake_env, make_repo

KIT = Path(__file__).resolve().parents[1] / "kit.py"

VARIANTS = (KIT_ROOT / "solutions").is_dir()
"""A student edition has no reference solution, so its grade has no --variant."""


class CliCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"])
        self.reports = self.root / "build" / "reports" / "student"

    def kit(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()


class ListAndHintTest(CliCase):
    def test_list(self) -> None:
        code, out, _ = self.kit("list")
        self.assertEqual(code, 0)
        self.assertIn("01_alpha  Lab alpha", out)
        self.assertIn("    beta.perf        step perf of beta", out)

    def test_hint_levels_and_names(self) -> None:
        for lab, step in (("01", "1"), ("alpha", "alpha.1"), ("01_alpha", "1")):
            code, out, _ = self.kit("hint", lab, step)
            self.assertEqual(code, 0)
            self.assertIn("Hint 1/3: alpha 1 nudge", out)
            self.assertNotIn("alpha 1 more", out)
            self.assertIn("--level 2", out)
        code, out, _ = self.kit("hint", "01", "1", "--level", "5")
        self.assertIn("Hint 3/3: alpha 1 almost", out)
        self.assertIn("last hint", out)

    def test_hint_errors(self) -> None:
        code, _, err = self.kit("hint", "01", "9")
        self.assertEqual(code, 2)
        self.assertEqual(err, "error: lab 01_alpha has no step '9'; "
                              "steps: alpha.1, alpha.2, alpha.3, alpha.perf\n")
        self.assertEqual(self.kit("hint", "gamma", "1")[0], 2)
        self.assertEqual(self.kit("hint", "01", "1", "--level", "0")[0], 2)

    def test_the_kits_own_list_fits_80_columns(self) -> None:
        out = io.StringIO()
        self.assertEqual(main(["list"], stdout=out, stderr=io.StringIO()), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual([line for line in lines if len(line) > 80], [])
        self.assertIn(" " * 21 + "racecheck and synccheck", lines)  # lab 04's step 4 hangs

    def test_real_manifest_hint(self) -> None:
        out = io.StringIO()
        self.assertEqual(main(["hint", "indexing", "perf"], stdout=out, stderr=io.StringIO()), 0)
        self.assertIn("Hint 1/3", out.getvalue())


class GradeExitCodeTest(CliCase):
    def grade(self, *argv: str, **env: str) -> tuple[int, str, str]:
        with fake_env(**env):
            return self.kit("grade", "--no-build", "--quiet", "--timeout", "2", *argv)

    def test_all_pass_with_gpu_is_0(self) -> None:
        code, out, _ = self.grade("01", FAKE_GPU="1", FAKE_TESTS="pass,gpu,perf")
        self.assertEqual(code, ExitCode.OK)
        self.assertIn("Score: 8/8", out)
        self.assertIn(str(self.reports / "results.json"), out)
        results = json.loads((self.reports / "results.json").read_text())
        self.assertEqual((results["score"], results["max_score"]), (8, 8))

    def test_no_gpu_is_0_unless_required_then_4(self) -> None:
        code, out, _ = self.grade("01", FAKE_TESTS="pass,gpu,perf")
        self.assertEqual(code, ExitCode.OK)
        self.assertIn("Score: 2/8", out)
        self.assertEqual(self.grade("01", "--require-gpu", FAKE_TESTS="pass,gpu,perf")[0],
                         ExitCode.NO_GPU)

    def test_failure_is_1(self) -> None:
        code, out, _ = self.grade("alpha", FAKE_GPU="1", FAKE_TESTS="pass,fail,perf")
        self.assertEqual(code, ExitCode.TESTS_FAILED)
        self.assertIn("Expected equality", out)

    def test_crash_is_1(self) -> None:
        self.assertEqual(self.grade("01", FAKE_TESTS="pass,segv")[0], ExitCode.TESTS_FAILED)

    def test_missing_binary_is_3_and_still_reports(self) -> None:
        (self.root / "build" / "bin" / "grade_02_beta").unlink()
        code, out, _ = self.grade(FAKE_GPU="1", FAKE_TESTS="pass")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)
        self.assertIn("binary not built", out)
        junit = (self.reports / "junit.xml").read_text()
        self.assertIn("lab could not be graded", junit)

    def test_listing_failure_is_3(self) -> None:
        code, out, _ = self.grade("01", FAKE_LIST="garbage")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)
        self.assertIn("could not list tests of", out)

    def test_seed_from_option_or_environment(self) -> None:
        code, out, _ = self.grade("01", "--seed", "99", FAKE_TESTS="pass")
        self.assertIn("seed 99 — reproduce with --seed 99", out)
        self.grade("01", FAKE_TESTS="pass", KIT_SEED="4242")
        data = json.loads((self.reports / "kit-results.json").read_text())
        self.assertEqual((data["seed"], data["labs"][0]["tests"][0]["measurements"]["seed"]),
                         (4242, "4242"))

    def test_report_dir_option(self) -> None:
        target = self.tmp / "out"
        self.assertEqual(self.grade("01", "--report-dir", str(target), FAKE_TESTS="pass")[0], 0)
        self.assertTrue((target / "summary.md").is_file())
        self.assertIn("Score: 2/2", (target / "summary.md").read_text())

    def test_files_a_test_writes_cannot_change_the_reports(self) -> None:
        target = self.tmp / "out"
        target.mkdir()
        (target / "results.json").write_text('{"score": 1000, "max_score": 1}')  # planted earlier
        work = self.tmp / "cwd"
        work.mkdir()
        cwd = os.getcwd()
        os.chdir(work)
        try:
            code, out, _ = self.grade("01", "--report-dir", str(target), FAKE_TESTS="fail,litter")
        finally:
            os.chdir(cwd)
        self.assertEqual(code, ExitCode.TESTS_FAILED)
        self.assertEqual(list(work.iterdir()), [])  # the test wrote into its own scratch folder
        results = json.loads((target / "results.json").read_text())
        self.assertEqual((results["score"], results["max_score"]), (1, 4))

    def test_usage_errors_are_2_and_write_nothing(self) -> None:
        cases = [
            (("xyz",), {}, "unknown lab 'xyz'; labs: 01_alpha, 02_beta"),
            (("--seed", "abc"), {}, "invalid seed 'abc'"),
            (("--seed", "4294967296"), {}, "invalid seed"),
            (("--jobs", "0"), {}, "--jobs: expected a positive integer"),
            (("--timeout", "-1"), {}, "--timeout: expected a positive number"),
            (("--variant", "teacher"), {}, "invalid choice" if VARIANTS else "unrecognized"),
            ((), {"KIT_SEED": "x"}, "KIT_SEED: invalid seed 'x'"),
            (("--report-dir", str(self.tmp / "missing" / "reports")), {},
             "report directory parent does not exist"),
        ]
        for argv, env, message in cases:
            with self.subTest(argv=argv):
                code, _, err = self.grade(*argv, **env)
                self.assertEqual(code, ExitCode.USAGE)
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertFalse((self.root / "build" / "reports").exists())

    def test_bad_manifest_is_2(self) -> None:
        manifest = self.root / "grader" / "labs.json"
        data = json.loads(manifest.read_text())
        data["labs"][0]["steps"][0]["hints"] = "not a list"
        manifest.write_text(json.dumps(data))
        code, _, err = self.grade()
        self.assertEqual(code, ExitCode.USAGE)
        self.assertIn("labs[0].steps[0].hints", err)


class BuildTest(CliCase):
    """grade without --no-build, with a fake cmake first on PATH."""

    def fake_cmake(self, exit_code: int) -> Path:
        tools = self.tmp / "tools"
        tools.mkdir()
        log = self.tmp / "cmake.log"
        cmake = tools / "cmake"
        cmake.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\necho "cmake output line"\nexit {exit_code}\n')
        cmake.chmod(0o755)
        return log

    def unbuild(self, lab_id: str) -> None:
        """The fake build makes no binary: grading the lab then finds none."""
        (self.root / "build" / "bin" / f"grade_{lab_id}").unlink()
        (self.root / "build" / "CMakeCache.txt").unlink(missing_ok=True)

    def grade(self, *argv: str) -> tuple[int, str, str]:
        path = f"{self.tmp / 'tools'}{os.pathsep}{os.environ.get('PATH', '')}"
        with fake_env(PATH=path, FAKE_TESTS="pass"):
            return self.kit("grade", *argv)

    def test_configures_then_builds_only_needed_targets(self) -> None:
        log = self.fake_cmake(0)
        self.unbuild("02_beta")
        code, out, _ = self.grade("02", "--verbose")
        build = self.root / "build"
        calls = log.read_text().splitlines()
        self.assertTrue(calls[0].startswith(f"-S {self.root} -B {build}"), calls[0])
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", calls[0])
        self.assertEqual(calls[1], f"--build {build} --target grade_02_beta -j {os.cpu_count()}")
        self.assertIn("cmake output line", out)  # --verbose streams the build's output
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)  # the fake build made no binary

    def test_a_student_sees_a_line_per_build_phase_not_its_output(self) -> None:
        self.fake_cmake(0)
        self.unbuild("02_beta")
        code, out, _ = self.grade("02")
        self.assertNotIn("cmake output line", out)
        self.assertIn("Configuring the build (first time only) ...\n"
                      "Building grade_02_beta ...\nBuilt grade_02_beta in ", out)
        self.assertIn("Not graded: binary not built", out)
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)

    def test_a_student_sees_the_output_of_a_failed_build(self) -> None:
        self.fake_cmake(1)
        code, out, err = self.grade("01")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)
        self.assertIn("cmake output line", out)
        self.assertIn("build failed:", err)

    def test_build_failure_is_3(self) -> None:
        self.fake_cmake(1)
        code, out, err = self.grade("01", "--quiet")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY)
        self.assertIn("build failed:", err)
        self.assertIn("cmake output line", out)  # held back by --quiet, shown on failure
        self.assertFalse((self.root / "build" / "reports").exists())


class ExitCodeRulesTest(unittest.TestCase):
    def run_with(self, kind: str, reason: str, gpu: bool) -> RunResult:
        lab = LabResult("01_alpha", "Lab", "student", {"alpha.1": "s"})
        lab.tests = [TestResult("01_alpha", "alpha.1", "S.T", "t", kind, 1, Status.NOT_RUN, reason)]
        return RunResult(1, "student", {"available": gpu}, "now", [lab])

    def test_not_run_only_excused_for_missing_gpu(self) -> None:
        self.assertEqual(grade_exit_code(self.run_with("gpu", "no CUDA device", False), False), 0)
        self.assertEqual(grade_exit_code(self.run_with("gpu", "no CUDA device", False), True), 4)
        self.assertEqual(grade_exit_code(self.run_with("gpu", "needs sm_90", True), False), 1)
        self.assertEqual(grade_exit_code(self.run_with("host", "skipped", False), False), 1)
        self.assertEqual(grade_exit_code(self.run_with("perf", "correctness steps did not all pass",
                                                       True), True), 1)


class EntryScriptTest(unittest.TestCase):
    def test_help_documents_exit_codes_and_runs_from_anywhere(self) -> None:
        result = subprocess.run([sys.executable, str(KIT), "grade", "--help"], cwd=tempfile.gettempdir(),
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0)
        self.assertIn("4  --require-gpu was given", result.stdout)
        result = subprocess.run([sys.executable, str(KIT), "grade", "nosuchlab"],
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertTrue(result.stderr.startswith("error: unknown lab 'nosuchlab'; labs: 01_indexing"))


class HelpWidthTest(unittest.TestCase):
    def test_every_commands_help_fits_the_width(self) -> None:
        with mock.patch.dict(os.environ, {"COLUMNS": "200"}):
            parser = build_parser()
            commands = next(a for a in parser._actions if a.choices and a.dest == "command")
            for name, sub in [("kit.py", parser), *commands.choices.items()]:
                wide = [line for line in sub.format_help().splitlines() if len(line) > TERMINAL_WIDTH]
                self.assertEqual(wide, [], name)

    def test_lists_rows_and_commands_keep_their_shape(self) -> None:
        text = ("A paragraph written wider than the width allows, as the sources are, and\n"
                "going on here.\n"
                "\n"
                "1. an entry whose text is long enough to need another line when filled, yes\n"
                "   and more of it.\n"
                "  not run     a definition whose text is also too long for the width of forty\n"
                "    kit.py grade 01\n"
                "    kit.py grade 02\n")
        self.assertEqual(fill_help(text, 40), [
            "A paragraph written wider than the width",
            "allows, as the sources are, and going on",
            "here.",
            "",
            "1. an entry whose text is long enough to",
            "   need another line when filled, yes",
            "   and more of it.",
            "  not run     a definition whose text is",
            "              also too long for the",
            "              width of forty",
            "    kit.py grade 01",
            "    kit.py grade 02"])
        self.assertEqual(fill_help(text, 80), text.splitlines())


if __name__ == "__main__":
    unittest.main()
