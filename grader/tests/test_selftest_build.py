"""The selftest builds what its first grading needs, then the rest of the tree in a thread beside
the next steps, each lab's known-wrong submissions first, in the order they are graded, and
counts that build once (unless KIT_SELFTEST_BUILD_BESIDE=0)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import unittest
from pathlib import Path
from unittest import mock

import kitgrade
from kitgrade import selftest, wrong
from kitgrade.build import BuildError
from kitgrade.manifest import load_manifest
from kitgrade.model import LabResult, RunResult

from .support import make_lab

ROOT = Path(__file__).resolve().parents[2]


class FirstTargetsTest(unittest.TestCase):
    def test_the_graders_of_stubs_and_solutions_the_unit_tests_and_the_fake_lab(self) -> None:
        labs = [make_lab("01_alpha"), make_lab("02_beta")]
        names = selftest._first_targets(ROOT, labs, instructor=True)
        # Each through its _early target, which has it linked among the first (_Beside).
        self.assertIn("kit_unit_tests_early", names)
        # The fake lab where this tree has it (a student edition has no grader/selftest/).
        self.assertEqual("kit_fake_lab_early" in names,
                         (ROOT / "grader" / "selftest" / "fake_lab.cu").is_file())
        self.assertNotIn("all", names)
        self.assertEqual(len(names), len(set(names)))
        for lab in labs:
            for variant in ("student", "reference"):
                self.assertIn(selftest.runner.target_name(lab, variant), names)

    def test_a_student_edition_builds_no_reference_grader_of_its_own(self) -> None:
        labs = [make_lab("01_alpha")]
        names = selftest._first_targets(ROOT, labs, instructor=False)
        self.assertIn(selftest.runner.target_name(labs[0], "student"), names)


class LabsOptionTest(unittest.TestCase):
    def test_step_1_builds_every_labs_graders_for_the_check_also_with_labs(self) -> None:
        # Step 2's kit.py check lists every lab's tests: with --labs on a fresh build directory,
        # step 1 built only the named labs' graders and the check failed on the others.
        from kitgrade.context import Context
        built = []

        def first_build(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            built.extend(targets)
            raise BuildError("stop here", output="")

        labs = list(load_manifest(ROOT / "grader" / "labs.json").labs)
        build_dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, build_dir, ignore_errors=True)
        args = types.SimpleNamespace(
            plan=None, build_dir=build_dir, labs=[labs[1].id], skip_shared=True,
            jobs=1, seed=1, require_gpu=False, require_docs=False, skip_edition=True, wrong=None)
        out = io.StringIO()
        with mock.patch.object(selftest, "configure"), \
                mock.patch.object(selftest, "ensure_built", first_build):
            self.assertNotEqual(selftest._cmd_selftest(args, Context(ROOT, out, out)), 0)
        for lab in labs:
            self.assertIn(selftest.runner.target_name(lab, "student"), built)


class RestOfBuildTest(unittest.TestCase):
    def test_each_labs_part_then_everything_niced_in_the_background_counted_once(self) -> None:
        release = threading.Event()
        calls = []

        def fake_build(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            calls.append((list(targets), kwargs.get("nice")))
            if targets == ["all"]:
                release.wait(5)

        parts = [("01_alpha", ["wrong_01_alpha_a", "wrong_01_alpha_b"]),
                 ("02_beta", ["wrong_02_beta_a"])]
        with mock.patch.object(selftest, "ensure_built", fake_build):
            rest = selftest._RestOfBuild(ROOT, Path("/nonexistent"), parts)
            # A lab's part is waited for alone, while the rest of the tree still builds.
            self.assertTrue(rest.lab_built("01_alpha"))
            self.assertTrue(rest.lab_built("02_beta"))
            self.assertFalse(rest.parts[rest.ALL].done())
            release.set()
            tally, out = selftest.Tally(), io.StringIO()
            self.assertTrue(rest.finish(tally, out))
            self.assertTrue(rest.finish(tally, out))
            self.assertTrue(rest.lab_built("03_gamma"))  # no part of its own: the whole tree
        nice = selftest.BUILD_BESIDE_NICE
        self.assertEqual(calls, [(parts[0][1], nice), (parts[1][1], nice), (["all"], nice)])
        self.assertEqual((tally.passed, tally.failed), (1, 0))

    def test_a_failed_part_is_one_failed_check_with_its_output(self) -> None:
        def failing(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            if targets != ["wrong_02_beta_a"]:
                raise BuildError("`cmake --build` exited with code 1",
                                 output="bench.cu:3: error\n")

        parts = [("01_alpha", ["wrong_01_alpha_a"]), ("02_beta", ["wrong_02_beta_a"])]
        with mock.patch.object(selftest, "ensure_built", failing):
            rest = selftest._RestOfBuild(ROOT, Path("/nonexistent"), parts)
            self.assertFalse(rest.lab_built("01_alpha"))
            self.assertTrue(rest.lab_built("02_beta"))  # the parts after a failed one are tried
            tally, out = selftest.Tally(), io.StringIO()
            self.assertFalse(rest.finish(tally, out))
            self.assertFalse(rest.finish(tally, out))
        self.assertEqual((tally.passed, tally.failed), (0, 1))
        self.assertEqual(out.getvalue().count("bench.cu:3: error"), 1)

    def test_each_built_part_is_told_once_its_waiters_are_woken(self) -> None:
        told = []
        made, last = threading.Event(), threading.Event()
        held: dict[str, selftest._RestOfBuild] = {}

        def failing(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            if targets == ["wrong_02_beta_a"]:
                raise BuildError("`cmake --build` exited with code 1")

        def on_built(key: str) -> None:
            made.wait(5)
            told.append((key, held["rest"].parts[key].done()))
            if key == selftest._RestOfBuild.ALL:
                last.set()
            raise RuntimeError("a warm-up that breaks must not stop the build")

        parts = [("01_alpha", ["wrong_01_alpha_a"]), ("02_beta", ["wrong_02_beta_a"]),
                 ("03_gamma", ["wrong_03_gamma_a"])]
        with mock.patch.object(selftest, "ensure_built", failing):
            held["rest"] = selftest._RestOfBuild(ROOT, Path("/nonexistent"), parts,
                                                 on_built=on_built)
            made.set()
            self.assertTrue(last.wait(5))
        # Not the part that failed; the parts after the one that raised still built.
        self.assertEqual(told, [("01_alpha", True), ("03_gamma", True), ("", True)])

    def test_the_parts_are_the_labs_known_wrong_submissions_in_order(self) -> None:
        labs = list(load_manifest(ROOT / "grader" / "labs.json").labs)
        parts = selftest._wrong_parts(ROOT, labs, instructor=True)
        with_wrongs = [lab.id for lab in labs if selftest.wrong.load(ROOT, lab)]
        self.assertEqual([key for key, _ in parts], with_wrongs)
        for key, targets in parts:
            self.assertTrue(targets and all(t.startswith(f"wrong_{key}_") for t in targets))
        self.assertEqual(selftest._wrong_parts(ROOT, labs, instructor=False), [])
        with mock.patch.object(selftest.wrong, "load", side_effect=wrong.WrongError("bad")):
            self.assertEqual(selftest._wrong_parts(ROOT, labs, instructor=True), [])



def _fake_target(root, build_dir, lab, variant, wrong=None):  # type: ignore[no-untyped-def]
    return selftest.runner.LabTarget(
        lab, Path("/nonexistent") / (f"wrong {wrong}" if wrong else variant))


def _grade_fakes(labs, calls, built, races=lambda *_: None,  # type: ignore[no-untyped-def]
                 racecheck=lambda lab: None):
    """_grade_together with a fake runner, which appends ("run", the labs of the known-wrong
    submissions it grades) to `calls`, and one known-wrong submission a lab, whose racecheck
    filter is racecheck(lab)."""
    def fake_run(targets, options, on_result=None):  # type: ignore[no-untyped-def]
        calls.append(("run", sorted({t.lab.id for t in targets if "wrong" in t.binary.name})))
        return RunResult(1, "student", {}, "now", [
            LabResult(t.lab.id, t.binary.name, "student", {}) for t in targets])

    def fake_load(root, lab):  # type: ignore[no-untyped-def]
        return [wrong.WrongSubmission(f"{lab.id}_1", "m", (), ("s",), "msg",
                                      racecheck=racecheck(lab))]

    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch.object(selftest.runner, "run", fake_run), \
            mock.patch.object(selftest.runner, "lab_target", _fake_target), \
            mock.patch.object(selftest.wrong, "load", fake_load):
        return selftest._grade_together(ROOT, labs, Path(tmp), 1, 4, True, None, io.StringIO(),
                                        races, built)


class GradeTogetherBuiltTest(unittest.TestCase):
    def test_each_labs_run_waits_for_its_own_build_and_a_failed_one_is_left_out(self) -> None:
        labs = [make_lab(f"0{n}_lab{n}") for n in (1, 2, 3)]
        calls: list = []
        asked, racecheck = [], []

        def built(lab):  # type: ignore[no-untyped-def]
            asked.append(lab.id)
            return lab.id != "02_lab2"

        together = _grade_fakes(labs, calls, built, lambda *part: racecheck.append(part))
        self.assertEqual(asked, ["01_lab1", "02_lab2", "03_lab3"])
        self.assertEqual(calls, [("run", []), ("run", ["01_lab1"]),  # stubs and references first
                                 ("run", ["03_lab3"])])
        self.assertEqual([lab.id for lab, _ in together.wrongs], ["01_lab1", "03_lab3"])
        self.assertEqual(racecheck, [])  # no submission names a racecheck filter


class RacecheckBesideItsLabTest(unittest.TestCase):
    def test_each_labs_racecheck_starts_beside_its_own_run_once_its_build_is_done(self) -> None:
        labs = [make_lab(f"0{n}_lab{n}") for n in (1, 2, 3)]
        calls: list = []

        def built(lab):  # type: ignore[no-untyped-def]
            calls.append(("built", lab.id))
            return lab.id != "03_lab3"

        _grade_fakes(labs, calls, built,
                     lambda first, lab, subs: calls.append(("races", lab.id)),
                     lambda lab: None if lab.id == "02_lab2" else "F")
        self.assertEqual(calls, [
            ("run", []),  # the stubs and references
            ("built", "01_lab1"), ("races", "01_lab1"), ("run", ["01_lab1"]),
            ("built", "02_lab2"), ("run", ["02_lab2"]),  # no racecheck filter
            ("built", "03_lab3"), ("races", "03_lab3")])  # build failed: its racecheck fails

    def test_the_reference_must_pass_its_tests_as_well_as_show_no_hazard(self) -> None:
        lab = make_lab("04_tiling")
        subs = [wrong.WrongSubmission("race", "m", (), ("s",), "msg", racecheck="F")]
        refs = RunResult(1, "reference", {"available": True}, "now", [])

        summary = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"

        def fake_race_all(argvs, lock_path):  # type: ignore[no-untyped-def]
            return [(subprocess.CompletedProcess(argv, code, summary, None), 1.0)
                    for argv, code in zip(argvs, (86, 1))], 1.0

        with mock.patch.object(selftest.wrong, "load", lambda root, lab: subs), \
                mock.patch.object(selftest.sanitizer, "find_sanitizer", lambda: "cs"), \
                mock.patch.object(selftest.sanitizer, "ERROR_EXIT", 86), \
                mock.patch.object(selftest.runner, "lab_target", _fake_target), \
                mock.patch.object(selftest, "_race_all", fake_race_all):
            race = selftest._Racecheck.start(ROOT, Path("/b"), refs, [(lab, sub) for sub in subs])
            out, tally = io.StringIO(), selftest.Tally()
            race.finish(True, tally, out)
        self.assertEqual((tally.passed, tally.failures),
                         (1, ["racecheck finds the 04_tiling reference clean on F"]))
        self.assertIn("0 hazards displayed (0 errors, 0 warnings), exit 1", out.getvalue())


if __name__ == "__main__":
    unittest.main()


class EditionNiceTest(unittest.TestCase):
    """The student edition's test command is niced only in its CPU work (its builds, unit tests
    and docs build, through KIT_SELFTEST_NICE), not in its gradings, which hold the GPU's lock."""

    def test_the_edition_runs_unniced_and_tells_its_cpu_work_the_niceness(self) -> None:
        started = {}

        def popen(argv, **kwargs):  # type: ignore[no-untyped-def]
            started.update(argv=argv, env=kwargs["env"])
            return mock.Mock()

        args = types.SimpleNamespace(jobs=16, require_gpu=True, require_docs=False)
        # kitgrade.release is instructor-only: a student edition, which runs these tests too,
        # has none.
        release = types.SimpleNamespace(write_release=lambda *_: [])
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(sys.modules, {"kitgrade.release": release}), \
                mock.patch.object(kitgrade, "release", release, create=True), \
                mock.patch.object(selftest.subprocess, "Popen", popen):
            selftest._Edition.start(ROOT, Path(tmp), args, 7)
        self.assertEqual(started["argv"][0], sys.executable)  # no `nice` before it
        self.assertEqual(started["env"][selftest.NICE_ENV], str(selftest.EDITION_NICE))

    def test_its_builds_and_unit_tests_take_the_niceness(self) -> None:
        builds, started = [], []

        def fake_build(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            builds.append(kwargs.get("nice"))

        def popen(argv, **kwargs):  # type: ignore[no-untyped-def]
            started.append(argv[:3])
            return mock.Mock()

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(selftest.os.environ, {selftest.NICE_ENV: "15"}), \
                mock.patch("kitgrade.build.shutil.which", return_value="/usr/bin/nice"), \
                mock.patch.object(selftest, "ensure_built", fake_build), \
                mock.patch.object(selftest.subprocess, "Popen", popen):
            self.assertEqual(selftest._own_nice(), 15)
            rest = selftest._RestOfBuild(ROOT, Path("/nonexistent"))
            rest.finish(selftest.Tally(), io.StringIO())
            selftest._start_python_unit_tests(ROOT, Path(tmp) / "report.json", jobs=1)
        self.assertEqual(builds, [15])  # above BUILD_BESIDE_NICE, which it would be otherwise
        self.assertEqual(started, [["nice", "-n", "15"]])
        for value in ("", "x", "-3"):
            with mock.patch.dict(selftest.os.environ, {selftest.NICE_ENV: value}):
                self.assertEqual(selftest._own_nice(), 0)
        self.assertEqual(selftest.niced(["python3"], 0), ["python3"])


class BesideTheBuildTest(unittest.TestCase):
    """Step 3's C++ unit tests and step 4's fake lab run as soon as the build has linked them
    (<build dir>/NAME.linked), and report at their own steps."""

    def test_a_check_starts_when_its_stamp_appears_and_reports_at_its_step(self) -> None:
        ran = threading.Event()

        def unit_tests(binary, tally, out):  # type: ignore[no-untyped-def]
            tally.add(True, "one", out)
            tally.add(False, "two", out)
            ran.set()

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(selftest, "_cpp_unit_tests", unit_tests):
            build = Path(tmp)
            (build / "bin").mkdir()
            (build / "bin" / "kit_unit_tests").touch()
            (build / "kit_unit_tests.linked").touch()  # a stamp of an earlier build
            beside = selftest._Beside(build, 1, 2, False, ["kit_unit_tests"])
            self.assertFalse(ran.wait(0.3))  # the old stamp was removed: not linked yet
            (build / "kit_unit_tests.linked").touch()
            self.assertTrue(ran.wait(5))  # linked: it runs while the build goes on
            beside.built()
            tally, out = selftest.Tally(), io.StringIO()
            beside.report("kit_unit_tests", tally, out)
        self.assertEqual((tally.passed, tally.failed, tally.failures), (1, 1, ["two"]))
        self.assertIn("FAILED   two", out.getvalue())

    def test_an_up_to_date_binary_runs_once_the_build_is_over(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(selftest, "_cpp_unit_tests",
                                  lambda binary, tally, out: tally.add(True, "ran", out)):
            build = Path(tmp)
            (build / "bin").mkdir()
            (build / "bin" / "kit_unit_tests").touch()
            beside = selftest._Beside(build, 1, 2, False, ["kit_unit_tests"])
            beside.built()  # no link came: the build found it up to date
            tally = selftest.Tally()
            beside.report("kit_unit_tests", tally, io.StringIO())
        self.assertEqual(tally.passed, 1)

    def test_after_a_failed_build_an_old_binary_does_not_run(self) -> None:
        ran = []
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(selftest, "_cpp_unit_tests",
                                  lambda binary, tally, out: ran.append(binary)):
            build = Path(tmp)
            (build / "bin").mkdir()
            (build / "bin" / "kit_unit_tests").touch()
            beside = selftest._Beside(build, 1, 2, False, ["kit_unit_tests"])
            beside.built(failed=True)
        self.assertEqual(ran, [])

    def test_a_binary_the_build_did_not_make_is_a_failed_check(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            beside = selftest._Beside(Path(tmp), 1, 2, False, ["kit_fake_lab"])
            beside.built()
            tally = selftest.Tally()
            beside.report("kit_fake_lab", tally, io.StringIO())
        self.assertEqual((tally.passed, tally.failed), (0, 1))

    def test_a_check_that_raises_is_a_failed_check(self) -> None:
        def raises(binary, tally, out):  # type: ignore[no-untyped-def]
            raise OSError("no such file")

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(selftest, "_cpp_unit_tests", raises):
            build = Path(tmp)
            (build / "bin").mkdir()
            (build / "bin" / "kit_unit_tests").touch()
            beside = selftest._Beside(build, 1, 2, False, ["kit_unit_tests"])
            beside.built()
            tally = selftest.Tally()
            beside.report("kit_unit_tests", tally, io.StringIO())
        self.assertEqual(tally.failed, 1)
        self.assertIn("no such file", tally.failures[0])


class ShardUnitsTest(unittest.TestCase):
    def test_a_class_with_a_fixture_is_one_unit_every_other_test_its_own(self) -> None:
        # Made here, not at module level, so that discovery does not run them as tests.
        class Plain(unittest.TestCase):
            def test_a(self) -> None: ...

            def test_b(self) -> None: ...

        class Fixture(unittest.TestCase):
            @classmethod
            def setUpClass(cls) -> None: ...

            def test_a(self) -> None: ...

            def test_b(self) -> None: ...

        class InheritsTheFixture(Fixture):
            pass

        tests = [Plain("test_a"), Fixture("test_a"), Plain("test_b"), Fixture("test_b"),
                 InheritsTheFixture("test_a"), InheritsTheFixture("test_b")]
        units = selftest._shard_units(tests)
        self.assertEqual([[type(t).__name__ + "." + t._testMethodName for t in unit]
                          for unit in units],
                         [["Plain.test_a"], ["Fixture.test_a", "Fixture.test_b"],
                          ["Plain.test_b"],
                          ["InheritsTheFixture.test_a", "InheritsTheFixture.test_b"]])

    def test_the_classes_of_a_module_with_a_fixture_are_one_unit(self) -> None:
        module = types.ModuleType("kit_test_module_with_a_fixture")
        module.setUpModule = lambda: None  # type: ignore[attr-defined]
        self.addCleanup(sys.modules.pop, module.__name__, None)
        sys.modules[module.__name__] = module

        class One(unittest.TestCase):
            def test_a(self) -> None: ...

        class Two(unittest.TestCase):
            def test_a(self) -> None: ...

        One.__module__ = Two.__module__ = module.__name__
        units = selftest._shard_units([One("test_a"), Two("test_a")])
        self.assertEqual([[type(t).__name__ for t in unit] for unit in units], [["One", "Two"]])


class UnitQueueTest(unittest.TestCase):
    """The Python unit tests' processes take their units from one queue, the longest first."""

    TESTS = '''
import unittest, os
from pathlib import Path
LOG = Path(os.environ["KIT_UNIT_QUEUE_LOG"])

def note(what):
    with LOG.open("a") as log:
        log.write(what + "\\n")

class Fixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        note("set up")

    @classmethod
    def tearDownClass(cls):
        note("torn down")

    def test_a(self):
        pass

    def test_b(self):
        self.fail("b fails")

class Plain(unittest.TestCase):
    def test_c(self):
        note("c")

    def test_d(self):
        self.skipTest("d is skipped")
'''

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)
        (self.dir / "grader" / "tests").mkdir(parents=True)
        (self.dir / "grader" / "tests" / "__init__.py").write_text("")
        (self.dir / "grader" / "tests" / "test_queued.py").write_text(self.TESTS)
        self.log = self.dir / "log"
        self.queue = self.dir / "queue"
        self.queue.write_text("0")

    def child(self, n: int, seconds: str = "") -> dict:
        """One of the processes, as _start_python_unit_tests starts them."""
        report = self.dir / f"report-{n}.json"
        code = (f"import sys; sys.path.insert(0, {str(ROOT / 'grader')!r}); "
                "from kitgrade import selftest; selftest.run_python_unit_tests(*sys.argv[1:])")
        subprocess.run([sys.executable, "-c", code, str(self.dir / "grader"), str(report),
                        str(self.queue), seconds], cwd=self.dir, check=True,
                       env={**selftest.os.environ, "KIT_UNIT_QUEUE_LOG": str(self.log)})
        return json.loads(report.read_text())

    def test_each_unit_runs_once_over_the_processes_and_a_fixture_once(self) -> None:
        first, second = self.child(1), self.child(2)  # the first takes every unit
        self.assertEqual(second["tests"], [])
        outcomes = {row[0].rsplit(".", 1)[-1]: row[1] for row in first["tests"]}
        self.assertEqual(outcomes, {"test_a": "passed", "test_b": "failed", "test_c": "passed",
                                    "test_d": "skipped"})
        self.assertEqual(first["run"], 4)
        # The fixture's class is one unit; each of the others is a unit of its own.
        self.assertEqual(sorted(first["seconds"]), ["tests.test_queued.Fixture.test_a",
                                                    "tests.test_queued.Plain.test_c",
                                                    "tests.test_queued.Plain.test_d"])
        self.assertEqual(self.log.read_text().split("\n").count("torn down"), 1)

    def test_the_longest_of_the_last_run_first(self) -> None:
        seconds = self.dir / "seconds.json"
        seconds.write_text(json.dumps({"tests.test_queued.Plain.test_c": 3.0,
                                       "tests.test_queued.Plain.test_d": 1.0}))
        self.child(1, str(seconds))
        self.assertEqual(self.log.read_text().split(), ["c", "set", "up", "torn", "down"])

    def test_a_times_file_that_makes_no_sense_changes_nothing(self) -> None:
        seconds = self.dir / "seconds.json"
        for text in ("[1, 2]", "{not json", '{"tests.test_queued.Plain.test_c": "slow"}'):
            seconds.write_text(text)
            self.queue.write_text("0")
            self.assertEqual(self.child(1, str(seconds))["run"], 4, text)

    def test_the_queue_hands_out_each_number_once(self) -> None:
        self.assertEqual([selftest._take_unit(self.queue) for _ in range(3)], [0, 1, 2])
        self.assertEqual(self.queue.read_text(), "3")


class InspectAheadTest(unittest.TestCase):
    """Each lab's known-wrong submissions are inspected once their part is built, through the
    same call a grading makes (runner.LabTarget.inspected), which fills the inspection cache."""

    def test_every_known_wrong_submission_of_a_built_lab_is_inspected(self) -> None:
        # Submissions of its own: a student edition has no wrong.json to take them from.
        lab, names = make_lab("01_alpha"), ["grid_rounds_down", "no_bounds_check"]
        subs = [types.SimpleNamespace(name=name) for name in names]
        inspected: list[str] = []
        lock = threading.Lock()

        def lab_target(root, build_dir, graded, variant, wrong=None):  # type: ignore[no-untyped-def]
            def note() -> None:
                with lock:
                    inspected.append(wrong)
            archive = mock.Mock(is_file=lambda: True)
            return types.SimpleNamespace(archive=archive, inspected=note)

        with mock.patch.object(selftest.inspect, "files_confined", return_value=True), \
                mock.patch.object(selftest.runner, "lab_target", lab_target), \
                mock.patch.object(selftest.wrong, "load", return_value=subs):
            ahead = selftest._InspectAhead(ROOT, Path("/nonexistent"), [lab])
            ahead.part_built("no_such_lab")  # the whole tree's part, say: nothing to do
            ahead.part_built(lab.id)
            ahead.pool.shutdown(wait=True)
        self.assertEqual(sorted(inspected), names)

    def test_nothing_without_the_cache(self) -> None:
        labs = list(load_manifest(ROOT / "grader" / "labs.json").labs)
        with mock.patch.object(selftest.inspect, "files_confined", return_value=False), \
                mock.patch.object(selftest.runner, "lab_target") as lab_target:
            ahead = selftest._InspectAhead(ROOT, Path("/nonexistent"), labs)
            for lab in labs:
                ahead.part_built(lab.id)
            ahead.close()
        lab_target.assert_not_called()

    def test_the_threads_are_niced(self) -> None:
        seen: list[int] = []
        with mock.patch.object(selftest.inspect, "files_confined", return_value=True):
            ahead = selftest._InspectAhead(ROOT, Path("/nonexistent"), [])
            ahead.pool.submit(lambda: seen.append(
                selftest.os.getpriority(selftest.os.PRIO_PROCESS,
                                        threading.get_native_id()))).result()
            ahead.close()
        self.assertGreaterEqual(seen[0], selftest.BUILD_BESIDE_NICE)
