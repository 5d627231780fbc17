"""Banned libraries: the source scan (comments and strings ignored), the symbol scan, the
verdicts they give, and how the runner and every report show them.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import bans, reports, runner
from kitgrade.manifest import BannedLibrary, load_manifest, parse_manifest
from kitgrade.model import Status

from .support import fake_env, lab_entry, make_fake_binary

ROOT = Path(__file__).resolve().parents[2]

CUBLAS = BannedLibrary(
    name="cuBLAS", patterns=(r"#\s*include\s*[<\"]cublas", r"\bcublas[A-Z]\w*"),
    symbols=(r"^cublas",), steps=(), why="the GEMM is yours to write")
CUB = BannedLibrary(
    name="CUB", patterns=(r"#\s*include\s*[<\"]cub/", r"(?<![\w:])cub::"),
    symbols=(r"(?<![\w:])cub::",), steps=("alpha.2",), why="the reduction is yours to write")


def ban_entry(library: BannedLibrary) -> dict:
    entry = {"name": library.name, "patterns": list(library.patterns),
             "symbols": list(library.symbols), "why": library.why}
    if library.steps:
        entry["steps"] = list(library.steps)
    return entry


class BlankingTest(unittest.TestCase):
    def blank(self, text: str) -> str:
        result = bans.blank_comments_and_strings(text)
        self.assertEqual(len(result), len(text))  # columns kept
        self.assertEqual(result.count("\n"), text.count("\n"))  # lines kept
        return result

    def test_comments_are_blanked(self) -> None:
        self.assertEqual(self.blank("int a; // cub::DeviceReduce\nint b;"), "int a;" + " " * 21 + "\nint b;")
        self.assertEqual(self.blank("/* thrust::sort */ int x;").strip(), "int x;")
        self.assertNotIn("cub", self.blank("/* a\n cub::X\n */ y"))
        self.assertNotIn("cub", self.blank("// a comment that goes on \\\n cub::X"))
        self.assertEqual(self.blank("x = a / b; cub::y"), "x = a / b; cub::y")

    def test_strings_and_characters_are_blanked(self) -> None:
        self.assertNotIn("cub", self.blank('puts("cub::DeviceReduce");'))
        self.assertNotIn("cub", self.blank('puts("a \\" cub:: b");'))
        self.assertNotIn("cub", self.blank('auto s = R"x(cub:: )" still )x"; int y;'))
        self.assertIn("int y;", self.blank('auto s = R"x(cub:: )" still )x"; int y;'))
        self.assertEqual(self.blank("char c = 'c'; cub::x"), "char c = ' '; cub::x")

    def test_include_paths_and_digit_separators_are_code(self) -> None:
        self.assertEqual(self.blank('#include "cub/cub.cuh"'), '#include "cub/cub.cuh"')
        self.assertEqual(self.blank("  # include <thrust/sort.h>"), "  # include <thrust/sort.h>")
        self.assertIn("cub::Sum", self.blank("int n = 1'000'000; cub::Sum(n);"))


class SourceScanTest(unittest.TestCase):
    SOURCE = "\n".join([
        "#include <cublas_v2.h>",                           # 1: an offence
        "// cublasSgemm would be too easy",                 # 2: a comment
        'const char* note = "do not call cublasSgemm";',    # 3: a string
        "void gemm() {",                                    # 4
        "  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N);",  # 5: an offence
        "}",
    ])

    def test_finds_file_line_and_text_but_not_comments_or_strings(self) -> None:
        found = bans.scan_source(self.SOURCE, "labs/04_tiling/tiling.cu", CUBLAS)
        self.assertEqual([(v.where, v.text) for v in found],
                         [("labs/04_tiling/tiling.cu:1", "#include <cublas_v2.h>"),
                          ("labs/04_tiling/tiling.cu:5", "cublasSgemm")])

    def test_qualified_names_are_shown_whole_and_nested_namespaces_are_not_cub(self) -> None:
        text = "auto s = cub::DeviceReduce::Sum(a);\nauto t = lab05::cub::mine(a);\nmycub::x();"
        found = bans.scan_source(text, "d.cu", CUB)
        self.assertEqual([(v.where, v.text) for v in found], [("d.cu:1", "cub::DeviceReduce::Sum")])

    def test_the_real_lab_05_files_use_no_banned_library(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("05")
        assert lab is not None
        self.assertEqual([b.name for b in lab.banned_libraries], ["CUB", "Thrust"])
        for folder in ("labs", "solutions"):
            sources = [bans.SourceFile(path, str(path)) for name in lab.student_files
                       for path in [ROOT / folder / lab.id / name] if path.is_file()]
            with mock.patch("kitgrade.bans.shutil.which", return_value=None):
                found = bans.check(lab, sources, None)
            self.assertEqual(found.violations, [], folder)  # their comments do mention cub::


NM_OUTPUT = """
tiling.cu.o:
0000000000000000 T lab04::matmul_tiled(float const*, float const*, float*, int)
                 U cublasSgemm_v2
                 U cublasCreate_v2
0000000000000010 t void cub::CUB_300001_SM_750::DeviceReduceKernel<float>(float const*)

helper.cu.o:
                 U cudaLaunchKernel
0000000000000020 W lab04::cub::not_the_library()
"""


class SymbolScanTest(unittest.TestCase):
    def test_parse_nm(self) -> None:
        symbols = bans.parse_nm(NM_OUTPUT)
        self.assertIn(("tiling.cu.o", "U", "cublasSgemm_v2"), symbols)
        self.assertIn(("helper.cu.o", "U", "cudaLaunchKernel"), symbols)
        self.assertIn(("tiling.cu.o", "T", "lab04::matmul_tiled(float const*, float const*, float*, int)"),
                      symbols)
        self.assertEqual(len(symbols), 6)

    def test_one_violation_per_member_showing_the_most_telling_symbol(self) -> None:
        found = bans.scan_symbols(NM_OUTPUT, "liblab.a", CUBLAS)
        self.assertEqual([(v.where, v.text, v.is_symbol) for v in found],
                         [("liblab.a (tiling.cu.o)", "cublasSgemm_v2", True)])
        self.assertEqual(found[0].describe(), "liblab.a (tiling.cu.o) uses cuBLAS (symbol `cublasSgemm_v2`)")
        cub = bans.scan_symbols(NM_OUTPUT, "liblab.a", CUB)
        self.assertEqual([v.where for v in cub], ["liblab.a (tiling.cu.o)"])
        calls = "\n".join(["x.o:", "0000000000000000 B cub::count",
                           "0000000000000000 t void cub::detail::EmptyKernel<void>()",
                           "0000000000000010 W cudaError cub::DeviceReduce::Sum<float>(float const*)",
                           "                 U cub::Sum(float)"])
        self.assertEqual([v.text for v in bans.scan_symbols(calls, "l.a", CUB)], ["cub::Sum(float)"])
        lines = calls.splitlines()
        self.assertEqual([v.text for v in bans.scan_symbols("\n".join(lines[:-1]), "l.a", CUB)],
                         ["cudaError cub::DeviceReduce::Sum<float>(float const*)"])
        self.assertEqual(bans.scan_symbols("\n".join(lines[:2]), "l.a", CUB), [])  # data only

    @unittest.skipUnless(shutil.which("cc") and shutil.which("ar") and shutil.which("nm"),
                         "needs cc, ar and nm")
    def test_a_call_hidden_by_macros_is_found_in_the_compiled_library(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        source = tmp / "tiling.c"
        source.write_text("#define JOIN(a, b) a##b\n"
                          "void JOIN(cublas, Sgemm_v2)(void);\n"
                          "void gemm(void) { JOIN(cublas, Sgemm_v2)(); }\n")
        subprocess.run(["cc", "-c", str(source), "-o", str(tmp / "tiling.o")], check=True)
        subprocess.run(["ar", "rcs", str(tmp / "liblab.a"), str(tmp / "tiling.o")], check=True)
        lab = parse_manifest({"labs": [{**lab_entry("04_alpha"), "banned_libraries": [ban_entry(CUBLAS)]}]}).labs[0]
        found = bans.check(lab, [bans.SourceFile(source, "tiling.c")], tmp / "liblab.a")
        self.assertEqual([(v.where, v.text) for v in found.violations],
                         [("liblab.a (tiling.o)", "cublasSgemm_v2")])  # the source scan saw nothing
        self.assertIn("cuBLAS found in 1 source file(s) and liblab.a", found.notes[0])

    def test_without_nm_the_source_scan_still_runs(self) -> None:
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / "liblab.a").write_bytes(b"!<arch>\n")
        (tmp / "a.cu").write_text("int x = cublasSgemm();\n")
        lab = parse_manifest({"labs": [{**lab_entry("04_alpha"), "banned_libraries": [ban_entry(CUBLAS)]}]}).labs[0]
        with mock.patch("kitgrade.bans.shutil.which", return_value=None):
            found = bans.check(lab, [bans.SourceFile(tmp / "a.cu", "a.cu")], tmp / "liblab.a")
        self.assertEqual([v.where for v in found.violations], ["a.cu:1"])
        self.assertIn("symbol scan skipped: nm not found on PATH (source scan only)", found.notes)


class VerdictTest(unittest.TestCase):
    def lab(self):  # type: ignore[no-untyped-def]
        cutlass = BannedLibrary("CUTLASS", (r"cutlass::",), (), (), "the tiles are yours to write")
        entry = {**lab_entry("04_alpha"),
                 "banned_libraries": [ban_entry(CUBLAS), ban_entry(cutlass), ban_entry(CUB)]}
        return parse_manifest({"labs": [entry]}).labs[0]

    def test_message_names_file_line_library_and_why(self) -> None:
        lab = self.lab()
        found = bans.BanCheck(lab, [bans.Violation("cuBLAS", "labs/04_alpha/a.cu:12", "cublasSgemm")])
        reason, message = found.verdict_for("alpha.1")  # type: ignore[misc]
        self.assertEqual(reason, "uses cuBLAS, banned in this lab (test not run)")
        self.assertEqual(message, "labs/04_alpha/a.cu:12 uses cuBLAS (`cublasSgemm`): this lab must not "
                                  "call cuBLAS, CUTLASS or CUB — the GEMM is yours to write")

    def test_only_the_steps_a_ban_covers(self) -> None:
        lab = self.lab()
        found = bans.BanCheck(lab, [bans.Violation("CUB", f"a.cu:{i}", "cub::Sum") for i in range(1, 6)])
        self.assertIsNone(found.verdict_for("alpha.1"))
        reason, message = found.verdict_for("alpha.2")  # type: ignore[misc]
        self.assertEqual(reason, "uses CUB, banned in this lab (test not run)")
        self.assertEqual(message.splitlines()[1:], ["a.cu:2 uses CUB (`cub::Sum`)",
                                                    "a.cu:3 uses CUB (`cub::Sum`)",
                                                    "... and 2 more uses of CUB"])


class RunnerBanTest(unittest.TestCase):
    """A banned library fails its steps' tests without running them; other steps are graded."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def grade(self, source: str):  # type: ignore[no-untyped-def]
        (self.tmp / "a.cu").write_text(source)
        cub = BannedLibrary("CUB", CUB.patterns, CUB.symbols, ("alpha.2", "alpha.perf"), CUB.why)
        entry = {**lab_entry("01_alpha"), "banned_libraries": [ban_entry(cub)]}
        lab = parse_manifest({"labs": [entry]}).labs[0]
        target = runner.LabTarget(lab, make_fake_binary(self.tmp / "bin", "01_alpha"),
                                  (bans.SourceFile(self.tmp / "a.cu", "labs/01_alpha/a.cu"),),
                                  self.tmp / "no-archive.a")
        log = self.tmp / "events.log"
        log.touch()
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,param,perf", FAKE_LOG=str(log)):
            run = runner.run([target], runner.RunOptions("student", 1, 2))
        return run, log.read_text()

    def test_banned_steps_fail_unrun_and_the_rest_is_graded(self) -> None:
        run, log = self.grade("// cub::Sum in a comment\n#include <cub/cub.cuh>\n")
        tests = {t.id: t for t in run.tests()}
        self.assertIs(tests["Host.Passes"].status, Status.PASSED)
        for test_id in ("Gpu.Works", "Sizes/SaxpyTest.WritesEveryElement/n_1000", "Perf.Saxpy"):
            test = tests[test_id]
            self.assertIs(test.status, Status.FAILED)
            self.assertEqual(test.reason, "uses CUB, banned in this lab (test not run)")
            self.assertTrue(test.output.startswith(
                "labs/01_alpha/a.cu:2 uses CUB (`#include <cub/cub.cuh>`): this lab must not call CUB — "))
            self.assertNotIn(f"start {test_id}", log)
        self.assertIn("start Host.Passes", log)
        lab = run.labs[0]
        self.assertEqual((lab.score, lab.max_score), (2, 9))
        self.assertIn("banned libraries (CUB): CUB found in 1 source file(s)", lab.notes[0])
        self.assertIn(f"symbol scan skipped: no compiled library at {self.tmp / 'no-archive.a'}",
                      lab.notes[1])

        text = reports.render_all(run)
        message = "labs/01_alpha/a.cu:2 uses CUB (`#include &lt;cub/cub.cuh&gt;`)"
        self.assertIn("3 tests: failed: uses CUB, banned in this lab (test not run)",
                      reports.render_terminal(run))
        self.assertIn("Note: banned libraries (CUB): CUB found", reports.render_terminal(run))
        self.assertIn(message, text["junit.xml"])
        self.assertIn("labs/01_alpha/a.cu:2 uses CUB", json.loads(text["results.json"])["tests"][1]["output"])
        self.assertIn("banned libraries (CUB)", json.loads(text["results.json"])["output"])
        self.assertIn("labs/01_alpha/a.cu:2 uses CUB (`#include <cub/cub.cuh>`)", text["summary.md"])
        self.assertIn("> banned libraries (CUB)", text["summary.md"])
        data = json.loads(text["kit-results.json"])
        self.assertEqual(data["labs"][0]["tests"][1]["status"], "failed")
        self.assertIn("banned libraries (CUB)", data["labs"][0]["notes"][0])

    def test_clean_code_is_graded_as_usual(self) -> None:
        run, _ = self.grade("// cub::DeviceReduce::Sum is what we measure against\nint x;\n")
        self.assertTrue(all(t.status is Status.PASSED for t in run.tests()))
        self.assertEqual(run.labs[0].notes[0], "banned libraries (CUB): none found in 1 source file(s)")


class LabTargetTest(unittest.TestCase):
    def test_paths_follow_the_cmake_layout(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("05")
        assert lab is not None
        build = Path("/b")
        student = runner.lab_target(ROOT, build, lab, "student")
        self.assertEqual(student.binary, build / "bin" / "grade_05_divergence")
        self.assertEqual(student.archive, build / "grader" / "05_divergence" / "liblab_05_divergence_student.a")
        self.assertEqual([s.shown for s in student.sources],
                         ["labs/05_divergence/branch_map.cuh", "labs/05_divergence/divergence.cu",
                          "labs/05_divergence/divergence_model.cpp"])


if __name__ == "__main__":
    unittest.main()
