"""Several gradings on one GPU (kitgrade.gpu_lock): correctness tests side by side, a grading's
timed and perf tests with nothing of another's beside them."""

from __future__ import annotations

import io
import threading
import time
import unittest
from pathlib import Path

from kitgrade import gpu_lock, runner
from kitgrade.model import Status

from .support import fake_env, make_fake_binary, make_lab, temp_dir

FAKE_DEVICE = {"available": True, "pci_bus_id": "00000000:19:00.0"}  # as fake_binary.py says


class PathTest(unittest.TestCase):
    def test_one_file_per_gpu_none_without_one(self) -> None:
        with fake_env(KIT_GPU_LOCK_DIR="/locks"):
            self.assertEqual(gpu_lock.path_for(FAKE_DEVICE),
                             Path("/locks/kit-gpu-00000000-19-00-0.lock"))
            self.assertEqual(gpu_lock.path_for({"available": True}),
                             Path("/locks/kit-gpu-any.lock"))
            self.assertIsNone(gpu_lock.path_for({"available": False, "reason": "no CUDA device"}))


class LockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self)
        self.path = self.tmp / "kit-gpu-x.lock"

    def hold_then_release(self, lock: gpu_lock.GpuLock, seconds: float) -> threading.Thread:
        thread = threading.Timer(seconds, lock.release)
        thread.start()
        return thread

    def test_shared_holders_do_not_wait_for_each_other(self) -> None:
        note = io.StringIO()
        with gpu_lock.GpuLock(self.path) as first, gpu_lock.GpuLock(self.path, note) as second:
            first.shared()
            second.shared()
            self.assertEqual((second.waited_s, note.getvalue()), (0.0, ""))

    def test_exclusive_waits_for_shared_and_says_so_once(self) -> None:
        note = io.StringIO()
        other = gpu_lock.GpuLock(self.path)
        other.shared()
        timer = self.hold_then_release(other, 0.4)
        with gpu_lock.GpuLock(self.path, note) as lock:
            lock.shared()  # beside the other's correctness tests: no wait
            lock.exclusive()
            self.assertGreater(lock.waited_s, 0.3)
        timer.join()
        self.assertIn("another grading on this GPU", note.getvalue())
        self.assertTrue(all(len(line) <= 80 for line in note.getvalue().splitlines()))

    def test_shared_waits_for_exclusive(self) -> None:
        other = gpu_lock.GpuLock(self.path)
        other.exclusive()
        timer = self.hold_then_release(other, 0.4)
        with gpu_lock.GpuLock(self.path, io.StringIO()) as lock:
            lock.shared()
            self.assertGreater(lock.waited_s, 0.3)
        timer.join()

    def test_the_file_is_made_once_and_then_opened_as_it_is(self) -> None:
        with gpu_lock.GpuLock(self.path) as lock:
            lock.shared()
        self.assertTrue(self.path.is_file())
        self.path.chmod(0o444)  # another user's file: read-only is enough for flock
        with gpu_lock.GpuLock(self.path, io.StringIO()) as lock:
            lock.exclusive()
            self.assertEqual(lock.path, self.path)

    def test_a_lock_held_too_long_is_gone_without(self) -> None:
        note = io.StringIO()
        with gpu_lock.GpuLock(self.path) as other, \
                gpu_lock.GpuLock(self.path, note, wait_limit_s=0.3) as lock:
            other.exclusive()
            lock.shared()
            self.assertIsNone(lock.path)
            lock.exclusive()  # no lock: nothing to wait for
        self.assertIn("going on without it", " ".join(note.getvalue().split()))
        self.assertTrue(all(len(line) <= 80 for line in note.getvalue().splitlines()))

    def test_a_lock_that_cannot_be_opened_is_no_lock(self) -> None:
        note = io.StringIO()
        lock = gpu_lock.GpuLock(self.tmp / "no such folder" / "x.lock", note)
        lock.exclusive()
        self.assertIsNone(lock.path)
        self.assertIn("not used", note.getvalue())

    def test_no_gpu_no_lock(self) -> None:
        lock = gpu_lock.GpuLock(None)
        lock.shared()
        lock.exclusive()
        lock.release()


class RunnerHoldsTheLockTest(unittest.TestCase):
    """A grading started while another holds the GPU: beside another's correctness tests (a
    shared hold) its own correctness tests run and its perf test waits; beside another's timed
    or perf tests (an exclusive hold) nothing of it runs."""

    def grade_beside(self, hold: str) -> tuple[list[list[str]], float, runner.LabResult]:
        tmp = temp_dir(self)
        log = tmp / "events.log"
        with fake_env(FAKE_GPU="1", FAKE_TESTS="pass,gpu,perf", FAKE_LOG=str(log)):
            other = gpu_lock.GpuLock(gpu_lock.path_for(FAKE_DEVICE))
            getattr(other, hold)()
            target = runner.LabTarget(make_lab("01_alpha"),
                                      make_fake_binary(tmp / "bin", "01_alpha"))
            done: list[runner.LabResult] = []
            thread = threading.Thread(target=lambda: done.extend(
                runner.run([target], runner.RunOptions("student", 7, 2)).labs))
            thread.start()
            time.sleep(1.5)
            released = time.monotonic()
            other.release()
            thread.join(30)
        events = [line.split() for line in log.read_text().splitlines()]
        return events, released, done[0]

    def test_beside_anothers_correctness_tests_only_the_perf_test_waits(self) -> None:
        events, released, lab = self.grade_beside("shared")
        self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
        starts = {name: float(t) for kind, name, t in events if kind == "start"}
        self.assertLess(starts["Host.Passes"], released)
        self.assertGreater(starts["Perf.Saxpy"], released)

    def test_beside_anothers_perf_tests_nothing_runs(self) -> None:
        events, released, lab = self.grade_beside("exclusive")
        self.assertTrue(all(t.status is Status.PASSED for t in lab.tests), lab.tests)
        self.assertGreater(min(float(t) for kind, _, t in events if kind == "start"), released)


if __name__ == "__main__":
    unittest.main()
