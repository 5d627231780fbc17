"""Grading a submission directory (grade --submission) and many of them (batch), and the build
directory they use, with fake binaries and a fake cmake.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from kitgrade import build, submission
from kitgrade.cli import KIT_ROOT, ExitCode, main
from kitgrade.manifest import load_manifest
from kitgrade.submission import SubmissionError

from .support import fake_env, make_fake_binary, make_repo

FAKE_CMAKE = """#!/bin/sh
echo "$@" >> "{log}"
if [ "$1" = "--build" ] && grep -rqs BROKEN "$2/submission"; then
  echo "error: BROKEN does not compile"
  exit 1
fi
exit 0
"""

VARIANTS = (KIT_ROOT / "solutions").is_dir()  # a student edition's grade has no --variant


class SubmissionCase(unittest.TestCase):
    """A kit with labs 01_alpha (files a.cu, b.cuh) and 02_beta (a.cu), and a fake cmake."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"], built=[])
        manifest = self.root / "grader" / "labs.json"
        data = json.loads(manifest.read_text())
        data["labs"][0]["student_files"] = ["a.cu", "b.cuh"]
        manifest.write_text(json.dumps(data))
        (self.root / "labs" / "01_alpha" / "b.cuh").write_text("// stub b\n")
        self.build = self.root / "build-submission"
        for lab in ("01_alpha", "02_beta"):
            make_fake_binary(self.build / "bin", lab)
        tools = self.tmp / "tools"
        tools.mkdir()
        self.cmake_log = self.tmp / "cmake.log"
        (tools / "cmake").write_text(FAKE_CMAKE.format(log=self.cmake_log))
        (tools / "cmake").chmod(0o755)
        self.path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"
        self.labs = load_manifest(manifest).labs

    def files(self, folder: Path, files: dict[str, str]) -> Path:
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        return folder

    def kit(self, *argv: str, **env: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with fake_env(PATH=self.path, FAKE_TESTS="pass", **env):
            code = main(list(argv), root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()


class LocateTest(SubmissionCase):
    def test_three_layouts(self) -> None:
        layouts = {
            "kit": {"labs/01_alpha/a.cu": "x", "labs/01_alpha/b.cuh": "y"},
            "lab": {"01_alpha/a.cu": "x", "01_alpha/b.cuh": "y"},
            "flat": {"a.cu": "x", "b.cuh": "y"},
        }
        for name, files in layouts.items():
            with self.subTest(name):
                folder = self.files(self.tmp / name, files)
                sub = submission.locate(folder, self.labs[:1], explicit=True)
                self.assertEqual(sorted(p.relative_to(folder).as_posix()
                                        for p in sub.files["01_alpha"].values()), sorted(files))
                self.assertEqual([s.shown for s in sub.sources(self.labs[0])], list(files))

    def test_without_labs_named_the_labs_with_files_are_graded(self) -> None:
        folder = self.files(self.tmp / "s", {"02_beta/a.cu": "x"})
        self.assertEqual([lab.id for lab in submission.locate(folder, self.labs, False).labs], ["02_beta"])
        flat = self.files(self.tmp / "flat", {"b.cuh": "x", "a.cu": "y"})
        with self.assertRaisesRegex(SubmissionError, "belong to several labs .01_alpha, 02_beta.; name the lab"):
            submission.locate(flat, self.labs, False)
        (flat / "a.cu").unlink()
        with self.assertRaisesRegex(SubmissionError, "lacks 01_alpha's a.cu"):
            submission.locate(flat, self.labs, False)  # b.cuh is only 01_alpha's, and a.cu is gone

    def test_errors(self) -> None:
        file = self.tmp / "file"
        file.write_text("x")
        partial = self.files(self.tmp / "partial", {"labs/01_alpha/a.cu": "x"})
        empty = self.files(self.tmp / "empty", {"notes.txt": "x"})
        cases = [
            (self.tmp / "missing", True, f"submission directory does not exist: {self.tmp / 'missing'}"),
            (file, True, f"submission is not a directory: {file}"),
            (partial, True, f"submission lacks 01_alpha's b.cuh (looked in {partial}/labs/01_alpha, "
                            f"{partial}/01_alpha, {partial})"),
            (empty, True, f"{empty} holds no student file of 01_alpha"),
            (empty, False, f"{empty} holds no student file of 01_alpha, 02_beta"),
        ]
        for folder, explicit, message in cases:
            with self.subTest(message), self.assertRaises(SubmissionError) as caught:
                submission.locate(folder, self.labs[:1] if explicit else self.labs, explicit)
            self.assertIn(message, str(caught.exception))

    def test_symbolic_links_are_refused(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x"})
        (folder / "b.cuh").symlink_to(self.root / "labs" / "01_alpha" / "b.cuh")
        with self.assertRaisesRegex(SubmissionError, "b.cuh is a symbolic link"):
            submission.locate(folder, self.labs[:1], True)


class StageTest(SubmissionCase):
    def test_stages_every_lab_and_rewrites_only_what_changed(self) -> None:
        folder = self.files(self.tmp / "s", {"01_alpha/a.cu": "mine", "01_alpha/b.cuh": "header"})
        sub = submission.locate(folder, self.labs, False)
        staging = submission.stage(sub, self.labs, self.root, self.build)
        self.assertEqual(staging, self.build / "submission")
        self.assertEqual((staging / "01_alpha" / "a.cu").read_text(), "mine")
        self.assertEqual((staging / "02_beta" / "a.cu").read_text(), "// stub of 02_beta\n")
        before = (staging / "01_alpha" / "b.cuh").stat().st_mtime_ns
        time.sleep(0.01)
        (folder / "01_alpha" / "a.cu").write_text("mine, better")
        os.utime(folder / "01_alpha" / "a.cu", (0, 0))  # an old file must still be rebuilt
        submission.stage(sub, self.labs, self.root, self.build)
        self.assertEqual((staging / "01_alpha" / "b.cuh").stat().st_mtime_ns, before)
        self.assertEqual((staging / "01_alpha" / "a.cu").read_text(), "mine, better")
        self.assertGreater((staging / "01_alpha" / "a.cu").stat().st_mtime, 1e9)


class BuildDirectoryTest(SubmissionCase):
    def calls(self) -> list[str]:
        return self.cmake_log.read_text().splitlines() if self.cmake_log.exists() else []

    def ensure(self, submission_dir: Path | None) -> list[str]:
        self.cmake_log.unlink(missing_ok=True)
        with fake_env(PATH=self.path):
            build.ensure_built(self.root, self.build, ["grade_01_alpha"], out=io.StringIO(),
                               quiet=True, submission_dir=submission_dir)
        return self.calls()

    def test_configured_with_the_staging_folder_and_reconfigured_when_it_changes(self) -> None:
        staging = self.build / "submission"
        calls = self.ensure(staging)
        self.assertIn(f"-DKIT_SUBMISSION_DIR={staging}", calls[0])
        self.assertEqual(calls[1], f"--build {self.build} --target grade_01_alpha -j {os.cpu_count()}")
        cache = self.build / "CMakeCache.txt"
        cache.write_text(f"FOO:BOOL=ON\nKIT_SUBMISSION_DIR:PATH={staging}\n")
        self.assertEqual(len(self.ensure(staging)), 1)  # same value: build only
        cache.write_text("KIT_SUBMISSION_DIR:PATH=/elsewhere/submission\n")
        self.assertEqual(self.ensure(staging)[0], f"-S {self.root} -B {self.build} -DKIT_SUBMISSION_DIR={staging}")
        self.assertEqual(self.ensure(None)[0], f"-S {self.root} -B {self.build} -DKIT_SUBMISSION_DIR=")
        cache.write_text("OTHER:STRING=x\n")
        self.assertEqual(len(self.ensure(None)), 1)  # a plain build directory stays as it is


class GradeSubmissionTest(SubmissionCase):
    def test_grades_the_submission_in_its_own_build_directory(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "// mine\n", "b.cuh": "// mine too\n"})
        code, out, err = self.kit("grade", "01", "--submission", str(folder), "--quiet")
        self.assertEqual(code, ExitCode.OK, err)
        self.assertIn(f"Grading 01_alpha (student, submission {folder})", out)
        self.assertIn("Score: 2/2", out)
        calls = self.cmake_log.read_text().splitlines()
        self.assertIn(f"-B {self.build} ", calls[0])
        self.assertIn(f"-DKIT_SUBMISSION_DIR={self.build / 'submission'}", calls[0])
        self.assertTrue(calls[1].startswith(f"--build {self.build} --target grade_01_alpha "))
        data = json.loads((self.build / "reports" / "student" / "kit-results.json").read_text())
        self.assertEqual(data["submission"], str(folder))
        self.assertEqual((self.build / "submission" / "01_alpha" / "a.cu").read_text(), "// mine\n")
        self.assertFalse((self.root / "build" / "reports").exists())  # the normal build is untouched

    def test_errors_exit_2_and_write_no_report(self) -> None:
        partial = self.files(self.tmp / "partial", {"01_alpha/a.cu": "x"})
        empty = self.files(self.tmp / "empty", {"readme.md": "x"})
        good = self.files(self.tmp / "good", {"a.cu": "x", "b.cuh": "y"})
        reports = self.tmp / "reports"
        cases = [
            (("01", "--submission", str(self.tmp / "nope")), "submission directory does not exist"),
            (("01", "--submission", str(good / "a.cu")), "submission is not a directory"),
            (("01", "--submission", str(partial)), "submission lacks 01_alpha's b.cuh (looked in"),
            (("--submission", str(partial)), "submission lacks 01_alpha's b.cuh"),
            (("01", "02", "--submission", str(partial)), "submission lacks 01_alpha's b.cuh"),
            (("--submission", str(empty)), "holds no student file of 01_alpha, 02_beta"),
            (("02", "--submission", str(empty)), "holds no student file of 02_beta"),
            (("01", "--submission", str(good), "--variant", "reference"),
             "cannot be combined with --variant" if VARIANTS else "unrecognized arguments"),
            (("01", "--submission", str(good), "--no-build"), "cannot be combined with --no-build"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, out, err = self.kit("grade", *argv, "--report-dir", str(reports))
                self.assertEqual(code, ExitCode.USAGE)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertTrue(err.startswith("error: ") and message in err, err)
                self.assertFalse(reports.exists())
                self.assertFalse((self.build / "reports").exists())
                self.assertFalse(self.cmake_log.exists())  # nothing was built either

    def test_a_banned_library_is_reported_with_the_submissions_own_path(self) -> None:
        manifest = self.root / "grader" / "labs.json"
        data = json.loads(manifest.read_text())
        data["labs"][0]["banned_libraries"] = [
            {"name": "CUB", "patterns": ["cub::"], "why": "the reduction is yours to write"}]
        manifest.write_text(json.dumps(data))
        folder = self.files(self.tmp / "s", {"labs/01_alpha/a.cu": "int x;\nauto y = cub::Sum();\n",
                                             "labs/01_alpha/b.cuh": ""})
        code, out, _ = self.kit("grade", "--submission", str(folder), "--quiet")
        self.assertEqual(code, ExitCode.TESTS_FAILED)
        self.assertIn("labs/01_alpha/a.cu:2 uses CUB (`cub::Sum`): this lab must not call CUB", out)


    def test_no_build_refuses_a_build_directory_made_for_a_submission(self) -> None:
        (self.build / "CMakeCache.txt").write_text(f"KIT_SUBMISSION_DIR:PATH={self.build / 'submission'}\n")
        code, _, err = self.kit("grade", "01", "--no-build", "--build-dir", str(self.build))
        self.assertEqual(code, ExitCode.USAGE)
        self.assertIn("was last built for the submission staged in", err)
        self.assertFalse((self.build / "reports").exists())


if __name__ == "__main__":
    unittest.main()
