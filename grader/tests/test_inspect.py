"""The inspection of student objects (kitgrade.inspect) and the plausibility flags (runner)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from kitgrade import inspect, runner
from kitgrade.model import Status, TestResult

from .support import make_lab, temp_dir


def lab_with_files(*files: str):
    """make_lab's lab with other student files."""
    import dataclasses
    return dataclasses.replace(make_lab("01_alpha"), student_files=tuple(files))

CLEAN = """
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
namespace lab01 {
float norm(const std::vector<float>& v) {
  float s = 0;
  for (float x : v) s += x * x;
  std::printf("%zu\\n", v.size());
  return std::sqrt(s) + std::stof(std::to_string(1.0));
}
}
"""

ATTACKS = {
    "constructor": ("__attribute__((noinline)) static int evil() { return 1; }\n"
                    "static int x = evil();\nint use() { return x; }\n", "before main()"),
    "dlsym": ("#include <dlfcn.h>\nvoid* find() { return dlsym(RTLD_DEFAULT, \"f\"); }\n",
              "calls `dlsym`"),
    "files": ("#include <cstdio>\nvoid w() { std::FILE* f = std::fopen(\"x\", \"w\"); "
              "std::fclose(f); }\n", "calls `fopen`"),
    "environment": ("#include <cstdlib>\nconst char* e() { return std::getenv(\"KIT\"); }\n",
                    "calls `getenv`"),
    "exit": ("#include <unistd.h>\nvoid leave() { _exit(0); }\n", "calls `_exit`"),
    "syscall": ("long raw() { long r; asm volatile(\"syscall\" : \"=a\"(r) : \"a\"(39)); "
                "return r; }\n", "raw system call"),
    "attribute_constructor": ("static int counter;\n__attribute__((constructor)) static void "
                              "early() { counter = 42; }\nint get() { return counter; }\n",
                              "before main()"),
}


@unittest.skipUnless(shutil.which("g++") and shutil.which("ar") and shutil.which("objdump"),
                     "needs g++ and binutils")
class InspectObjectsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.lab = lab_with_files("student.cpp")

    def archive(self, source: str) -> Path:
        (self.tmp / "student.cpp").write_text(source)
        subprocess.run(["g++", "-O1", "-c", "student.cpp", "-o", "student.cpp.o"], cwd=self.tmp,
                       check=True)
        archive = self.tmp / "libstudent.a"
        archive.unlink(missing_ok=True)
        subprocess.run(["ar", "rcs", str(archive), "student.cpp.o"], cwd=self.tmp, check=True)
        return archive

    def test_clean_code_passes(self) -> None:
        result = inspect.check(self.lab, self.archive(CLEAN))
        self.assertTrue(result.ran, result.notes)
        self.assertEqual(result.refusals, [])
        self.assertIsNone(result.verdict())

    def test_including_iostream_is_not_a_constructor_of_the_students(self) -> None:
        # GCC before 13 puts a constructor that sets up std::cout into every object that includes
        # <iostream>: debugging output must not get a lab refused.
        source = "#include <iostream>\nint shout(int v) { std::cout << v << std::endl; return v; }\n"
        result = inspect.check(self.lab, self.archive(source))
        self.assertIsNone(result.verdict(), [r.describe() for r in result.refusals])
        with_global = source + "#include <cstdio>\nstatic int seen = std::puts(\"early\");\n"
        verdict = inspect.check(self.lab, self.archive(with_global)).verdict()
        self.assertIsNotNone(verdict)
        self.assertIn("before main()", verdict[0])

    def test_each_attack_is_refused_naming_what_it_uses(self) -> None:
        for name, (source, expected) in ATTACKS.items():
            with self.subTest(name):
                result = inspect.check(self.lab, self.archive(source), {"student.cpp": "labs/x.cpp"})
                verdict = result.verdict()
                self.assertIsNotNone(verdict)
                reason, message = verdict
                self.assertTrue(reason.startswith("refused before running"), reason)
                self.assertIn(expected, reason + message)
                self.assertIn("labs/x.cpp", message)

    def test_objects_of_the_kit_in_the_library_are_not_inspected(self) -> None:
        lab = lab_with_files("other.cpp")
        result = inspect.check(lab, self.archive(ATTACKS["dlsym"][0]))
        self.assertFalse(result.ran)  # nothing of the student's in it: not graded
        self.assertIsNotNone(result.verdict())


class InspectionCacheTest(InspectObjectsTest):
    """What an object calls and runs before main() is kept per object's bytes in the build
    directory, and read back only for the same bytes, name, module and tools."""

    def setUp(self) -> None:
        super().setUp()
        (self.tmp / "CMakeCache.txt").write_text("")  # the archive's folder is a build directory
        self.cache = self.tmp / inspect.CACHE_DIR
        self.calls = 0
        real = inspect.inspect_object

        def counted(*args):
            self.calls += 1
            return real(*args)
        for name, value in (("inspect_object", counted), ("files_confined", lambda: True)):
            patcher = unittest.mock.patch.object(inspect, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_the_same_object_is_read_back_and_a_refusal_stays_a_refusal(self) -> None:
        source, expected = ATTACKS["dlsym"]
        archive = self.archive(source)
        first = inspect.check(self.lab, archive).verdict()
        second = inspect.check(self.lab, archive).verdict()
        self.assertEqual(self.calls, 1)
        self.assertEqual(first, second)
        self.assertIn(expected, second[0] + second[1])
        self.assertEqual(len(list(self.cache.glob("*.json"))), 1)

    def test_other_bytes_or_another_name_are_inspected_again(self) -> None:
        inspect.check(self.lab, self.archive(CLEAN))
        self.assertIsNotNone(inspect.check(self.lab, self.archive(ATTACKS["dlsym"][0])).verdict())
        inspect.check(self.lab, self.archive(ATTACKS["dlsym"][0]), {"student.cpp": "labs/y.cpp"})
        self.assertEqual(self.calls, 3)

    def test_where_files_are_not_confined_nothing_is_kept(self) -> None:
        # Without Landlock a worker could write a finding of "no refusal" for another object.
        archive = self.archive(ATTACKS["dlsym"][0])
        with unittest.mock.patch.object(inspect, "files_confined", lambda: False):
            for _ in range(2):
                self.assertIsNotNone(inspect.check(self.lab, archive).verdict())
        self.assertEqual(self.calls, 2)
        self.assertFalse(self.cache.exists())

    def test_a_damaged_cache_file_is_ignored_and_written_again(self) -> None:
        archive = self.archive(ATTACKS["dlsym"][0])
        inspect.check(self.lab, archive)
        (entry,) = self.cache.glob("*.json")
        damaged = ("[{\"where\": 1}]", "not json", "{}", "null", "[1]",
                   "[{\"where\": \"a\", \"what\": \"b\"}]")
        for damage in damaged:
            entry.write_text(damage)
            verdict = inspect.check(self.lab, archive).verdict()
            self.assertIsNotNone(verdict, damage)
        self.assertEqual(self.calls, 1 + len(damaged))


@unittest.skipUnless(shutil.which("g++") and shutil.which("ar") and shutil.which("objdump"),
                     "needs g++ and binutils")
class SealedIncludesTest(unittest.TestCase):
    """What the compiler opened for a student object, from the build's dependency file."""

    def check_both(self, relative: bool) -> None:
        """A lab file that includes the lab's own header passes; one that includes the solution's
        is refused, naming it. Compiled with absolute paths (as ninja's deps list them), or, with
        `relative`, in the target's folder with paths relative to it (the Makefile generator)."""
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        lab_dir, elsewhere = tmp / "labs" / "01_alpha", tmp / "solutions" / "01_alpha"
        lab_dir.mkdir(parents=True)
        elsewhere.mkdir(parents=True)
        (elsewhere / "answer.h").write_text("inline int answer() { return 42; }\n")
        (lab_dir / "given.h").write_text("inline int given() { return 1; }\n")
        build = tmp / "build"
        target_dir = build / "grader" / "01_alpha"
        objects = target_dir / "CMakeFiles" / "lab_01_alpha_student.dir"
        objects.mkdir(parents=True)
        (build / "CMakeCache.txt").write_text("")
        source_dir = "../../../labs/01_alpha" if relative else str(lab_dir)
        obj = "CMakeFiles/lab_01_alpha_student.dir/student.cpp.o" if relative else str(
            objects / "student.cpp.o")
        for name, include in (("clean", "given.h"), ("open", "../../solutions/01_alpha/answer.h")):
            with self.subTest(name):
                (lab_dir / "student.cpp").write_text(
                    f"#include <{include}>\nint f() {{ return 0; }}\n")
                subprocess.run(["g++", "-c", "-MD", "-MF", f"{obj}.d", "-I", source_dir,
                                f"{source_dir}/student.cpp", "-o", obj], check=True, cwd=target_dir)
                self.assertEqual("../../../labs/01_alpha/" in (target_dir / f"{obj}.d").read_text(),
                                 relative)
                archive = target_dir / "liblab_01_alpha_student.a"
                archive.unlink(missing_ok=True)
                subprocess.run(["ar", "rcs", str(archive), str(target_dir / obj)], check=True)
                result = inspect.check(lab_with_files("student.cpp"), archive,
                                       include_roots=(lab_dir,))
                if name == "clean":
                    self.assertIsNone(result.verdict(), result.refusals)
                else:
                    reason, _ = result.verdict()
                    self.assertIn("includes", reason)
                    self.assertIn("solutions/01_alpha/answer.h", reason)

    def test_an_include_from_outside_the_lab_is_refused(self) -> None:
        self.check_both(relative=False)

    def test_relative_paths_of_a_makefile_build_start_in_the_targets_folder(self) -> None:
        # The Makefile generator runs the compiler in the target's folder (build/grader/01_alpha)
        # with paths relative to it, and the .d file keeps them so: read from the build
        # directory instead, a correct submission's own header looked like /labs/... (refused).
        self.check_both(relative=True)


class CompilerRootsTest(unittest.TestCase):
    def test_a_compiler_outside_usr_keeps_its_headers_allowed(self) -> None:
        # A g++ installed in /opt/gcc includes its own limits.h and stddef.h from there: those
        # folders come from what CMake found when it configured the build, not a fixed list.
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        info = tmp / "CMakeFiles" / "4.1.0"
        info.mkdir(parents=True)
        (info / "CMakeCXXCompiler.cmake").write_text(
            'set(CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES '
            '"/opt/gcc/lib/gcc/x86_64-linux-gnu/13/include;/usr/include")\n')
        (info / "CMakeCUDACompiler.cmake").write_text(
            'set(CMAKE_CUDA_HOST_IMPLICIT_LINK_DIRECTORIES "/opt/elsewhere")\n'
            'set(CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES "/opt/cuda/include/cccl")\n')
        roots = inspect.compiler_roots(tmp)
        self.assertIn(Path("/opt/gcc/lib/gcc/x86_64-linux-gnu/13/include"), roots)
        self.assertIn(Path("/opt/cuda/include/cccl"), roots)
        self.assertNotIn(Path("/opt/elsewhere"), roots)  # a link folder is not a header folder
        self.assertEqual(inspect.compiler_roots(tmp / "missing"), ())


class AllowlistTest(unittest.TestCase):
    def test_what_lab_code_may_and_may_not_call(self) -> None:
        for name in ("cudaMalloc", "cudaStreamCreateWithFlags", "__cudaRegisterFatBinary",
                     "memcpy", "printf", "sqrtf", "operator new(unsigned long)",
                     "std::ostream& std::ostream::_M_insert<unsigned long>(unsigned long)",
                     "kit::throw_launch_error(cudaError, char const*, char const*, int)",
                     "lab04::tile_sizes()", "atexit", "__cxa_guard_acquire"):
            self.assertTrue(inspect.allowed(name), name)
        for name in ("dlopen", "dlsym", "fopen", "open", "getenv", "exit", "_exit", "kill",
                     "fork", "execve", "mprotect", "syscall", "pthread_create", "readlink",
                     "cudaGetDriverEntryPoint", "cudaIpcOpenMemHandle", "cublasSgemm_v2",
                     "std::basic_ifstream<char, std::char_traits<char> >::basic_ifstream()"):
            self.assertFalse(inspect.allowed(name), name)


class JudgeChangedTest(unittest.TestCase):
    def test_a_judge_written_to_during_its_lab_fails_the_lab(self) -> None:
        from unittest import mock

        from kitgrade.model import LabResult
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        judge = tmp / "grade_01_alpha"
        judge.write_bytes(b"the judge")
        lab = make_lab("01_alpha")

        def grade(targets, options, on_result, timings=None, device=None):
            result = LabResult(lab.id, lab.title, "student", {s.id: s.title for s in lab.steps})
            result.tests = [TestResult(lab=lab.id, step=lab.steps[0].id, id="Host.Passes",
                                       title="t", kind="host", points=2, status=Status.PASSED)]
            if tamper:
                judge.write_bytes(b"a judge that passes everything")
            return [result]

        target = runner.LabTarget(lab, judge, worker=tmp / "worker_01_alpha")
        options = runner.RunOptions("student", 1, 1)
        for tamper in (False, True):
            with self.subTest(tamper=tamper), \
                    mock.patch.object(runner, "grade_labs", grade), \
                    mock.patch.object(runner, "_device", lambda _: {"available": False}):
                result = runner.run([target], options).labs[0]
            if tamper:
                self.assertEqual(result.score, 0)
                self.assertEqual(result.tests[0].reason, runner.JUDGE_CHANGED)
                self.assertIn("judge binary changed", result.notes[-1])
                self.assertFalse(judge.exists())  # removed: the next build links it again
            else:
                self.assertEqual(result.score, 2)

    def test_a_judge_linked_again_from_changed_objects_fails_the_rest_of_a_batch(self) -> None:
        # A judge rebuilt between two gradings of a batch (from objects a submission overwrote)
        # differs from the one the batch began with: the check around each run cannot see it.
        from unittest import mock

        from kitgrade.model import LabResult
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / "judge_01_alpha").write_bytes(b"the judge")
        link = tmp / "grade_01_alpha"
        link.symlink_to("judge_01_alpha")
        lab = make_lab("01_alpha")

        def grade(targets, options, on_result, timings=None, device=None):
            result = LabResult(lab.id, lab.title, "student", {s.id: s.title for s in lab.steps})
            result.tests = [TestResult(lab=lab.id, step=lab.steps[0].id, id="Host.Passes",
                                       title="t", kind="host", points=2, status=Status.PASSED)]
            return [result]

        target = runner.LabTarget(lab, link, worker=tmp / "worker_01_alpha")
        options = runner.RunOptions("student", 1, 1, pinned_judges={})
        scores = []
        with mock.patch.object(runner, "grade_labs", grade), \
                mock.patch.object(runner, "_device", lambda _: {"available": False}):
            missing = runner.LabTarget(lab, tmp / "grade_02_not_built", worker=tmp / "w")
            runner.run([missing], options)  # a judge not built yet pins nothing
            self.assertEqual(options.pinned_judges, {})
            scores.append(runner.run([target], options).labs[0].score)
            scores.append(runner.run([target], options).labs[0].score)
            (tmp / "judge_01_alpha").write_bytes(b"a judge that passes everything")
            third = runner.run([target], options).labs[0]
        self.assertEqual(scores, [2, 2])
        self.assertEqual((third.score, third.tests[0].reason), (0, runner.JUDGE_CHANGED))
        self.assertFalse(link.is_symlink() or (tmp / "judge_01_alpha").exists())


class ReviewFlagsTest(unittest.TestCase):
    def test_a_ratio_above_the_plausible_one_is_flagged_not_failed(self) -> None:
        plausible = temp_dir(self) / "plausible.conf"
        plausible.write_text("# key ratio\nalpha.perf 1.2\n")
        test = TestResult(lab="01_alpha", step="alpha.perf", id="Perf.Fast", title="t",
                          kind="perf", points=4, status=Status.PASSED,
                          measurements={"ratio": "3.500", "threshold_key": "alpha.perf"})
        fine = TestResult(lab="01_alpha", step="alpha.perf", id="Perf.Ok", title="t",
                          kind="perf", points=4, status=Status.PASSED,
                          measurements={"ratio": "1.100", "threshold_key": "alpha.perf"})
        notes = runner.review_flags([test, fine], plausible)
        self.assertEqual(len(notes), 1)
        self.assertIn("Perf.Fast reached ratio 3.5", notes[0])
        self.assertIn("review", test.measurements)
        self.assertIs(test.status, Status.PASSED)

    def test_the_kits_file_names_every_threshold_key(self) -> None:
        from kitgrade import counters, thresholds
        root = Path(__file__).resolve().parents[2]
        plausible = thresholds.load_plausible(root / "grader" / "plausible.conf")
        bars = {key: bar for key, bar in thresholds.load(root / "grader" / "thresholds.conf").items()
                if not counters.is_counter_key(key)}  # a counter bar is a most: no plausible line
        self.assertEqual(set(plausible), set(bars))
        for key, value in plausible.items():
            self.assertGreater(value, max(bars[key]), key)


if __name__ == "__main__":
    unittest.main()
