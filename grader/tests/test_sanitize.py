"""kit.py sanitize: the command lines it runs, its verdicts, its summary and exit codes, with a
fake compute-sanitizer first on PATH.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from kitgrade.cli import main
from kitgrade.sanitizer import ERROR_EXIT

from .support import fake_env, make_repo

# memcheck finds nothing, racecheck reports an error, synccheck hangs; every call is logged.
FAKE_SANITIZER = f"""#!/bin/sh
echo "$@" >> "$FAKE_SANITIZER_LOG"
case "$2" in
  memcheck) exit 0 ;;
  racecheck) exit {ERROR_EXIT} ;;
  synccheck) sleep 30 ;;
  initcheck) exit 1 ;;
esac
"""


class SanitizeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"], variant="reference")
        tools = self.tmp / "tools"
        tools.mkdir()
        sanitizer = tools / "compute-sanitizer"
        sanitizer.write_text(FAKE_SANITIZER)
        sanitizer.chmod(0o755)
        self.log = self.tmp / "sanitizer.log"
        self.path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"

    def sanitize(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with fake_env(PATH=self.path, FAKE_TESTS="pass,perf", FAKE_SANITIZER_LOG=str(self.log)):
            code = main(["sanitize", "--no-build", "--variant", "reference", *argv],
                        root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def test_clean_run_is_0_and_leaves_perf_tests_out(self) -> None:
        code, out, _ = self.sanitize("01", "--tool", "memcheck")
        self.assertEqual(code, 0, out)
        self.assertIn("sanitize 01_alpha (reference, memcheck): clean", out)
        [call] = self.calls()
        self.assertTrue(call.startswith(f"--tool memcheck --target-processes all --error-exitcode {ERROR_EXIT} "), call)
        self.assertTrue(call.endswith("reference_01_alpha --gtest_filter=*-Perf.Saxpy"), call)
        self.assertNotIn("sanitize summary", out)  # one run: no table

    def test_every_lab_and_tool_with_a_summary(self) -> None:
        code, out, _ = self.sanitize("--tool", "memcheck", "--tool", "racecheck", "--tool",
                                     "synccheck", "--tool", "initcheck", "--timeout", "1",
                                     "--filter", "Only.This")
        self.assertEqual(code, 1)
        self.assertEqual(len(self.calls()), 8)  # 2 labs x 4 tools, in that order
        self.assertIn("--tool racecheck", self.calls()[1])
        self.assertTrue(all(c.endswith("--gtest_filter=Only.This") for c in self.calls()))
        self.assertIn("sanitize 02_beta (reference, racecheck): racecheck reported errors", out)
        self.assertIn("sanitize 01_alpha (reference, synccheck): timed out after 1 s", out)
        self.assertIn("sanitize 01_alpha (reference, initcheck): tests failed (exit 1)", out)
        self.assertIn("sanitize summary (reference)", out)
        self.assertIn("2 of 8 runs clean", out)

    def test_lab_json_leaves_slow_tests_out_under_one_tool(self) -> None:
        manifest = self.root / "grader" / "labs.json"
        data = json.loads(manifest.read_text())
        data["labs"][0]["sanitize_skip"] = [
            {"tool": "racecheck", "tests": ["Big.*", "Huge.One"], "why": "minutes under racecheck"}]
        manifest.write_text(json.dumps(data))
        self.sanitize("01", "--tool", "memcheck", "--tool", "racecheck")
        memcheck, racecheck = self.calls()
        self.assertTrue(memcheck.endswith("--gtest_filter=*-Perf.Saxpy"), memcheck)
        self.assertTrue(racecheck.endswith("--gtest_filter=*-Perf.Saxpy:Big.*:Huge.One"), racecheck)
        _, out, _ = self.sanitize("01", "--tool", "racecheck", "--filter", "Big.*")
        self.assertTrue(self.calls()[-1].endswith("--gtest_filter=Big.*"))  # asked for: run
        self.assertNotIn("leaves out", out)
        _, out, _ = self.sanitize("01", "--tool", "racecheck")
        self.assertIn("01_alpha under racecheck leaves out Big.*, Huge.One: minutes under racecheck",
                      out)

    def test_usage_errors_are_2(self) -> None:
        for argv, message in ((["nope"], "unknown lab 'nope'"),
                              (["--timeout", "-1"], "--timeout must be 0"),
                              (["--filter", "a\nb"], "--filter must be one line")):
            code, _, err = self.sanitize(*argv)
            self.assertEqual(code, 2, argv)
            self.assertIn(message, err)
        self.assertFalse(self.log.exists())

    def test_missing_sanitizer_is_3(self) -> None:
        self.path = str(self.tmp / "empty")
        if Path("/usr/local/cuda/bin/compute-sanitizer").is_file():
            self.skipTest("a real compute-sanitizer is installed in /usr/local/cuda/bin")
        code, _, err = self.sanitize("01")
        self.assertEqual(code, 3)
        self.assertIn("compute-sanitizer not found", err)


if __name__ == "__main__":
    unittest.main()
