"""Several gradings on one GPU: a lock per GPU keeps one grading's timed, counter and perf tests
away from every other grading's tests.

One grading already runs its timed, counter and perf tests with nothing else of its own on the
GPU (kitgrade.runner). Two gradings started side by side on one machine (two terminals, a CI
runner with two jobs, the selftest's student edition beside the selftest) would still run one's
correctness tests beside the other's perf tests, and a perf test timed beside other work can
lose points it earned. So each grading takes the GPU's lock file (an advisory ``flock``):

* shared while its correctness tests run: gradings may run those side by side, as one grading
  runs its labs' side by side;
* exclusive from its first timed test to its last perf test: no other grading runs anything
  then, and it waits for the others' correctness tests to end before it starts.

A grading that waits says so on standard error once. The lock is one file per GPU, named by
its PCI bus id, in KIT_GPU_LOCK_DIR (default: the system's temporary folder); a grading without
a GPU takes none. The lock is advisory: it orders the kit's own gradings, not other programs
that use the GPU, and a student's worker (which may not open files: Landlock) takes no part.
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TextIO

DIR_ENV = "KIT_GPU_LOCK_DIR"
"""The folder of the lock files (default: tempfile.gettempdir())."""
WAIT_LIMIT_S = 1800.0
"""The longest a grading waits for the lock: after that it goes on without it, and says so. A
lock left held for that long (a grading stopped in a debugger, say) must not stop every later
grading on the GPU."""
POLL_S = 0.05


def path_for(device: dict[str, object]) -> Path | None:
    """The lock file of the GPU `device` describes (the grader's --kit_device output); None when
    there is no GPU to share. A grader that does not report its bus id shares one lock with every
    other such grader, which only ever orders more than it must."""
    if not device.get("available"):
        return None
    bus = re.sub(r"[^0-9A-Za-z]+", "-", str(device.get("pci_bus_id") or "any")).strip("-")
    return Path(os.environ.get(DIR_ENV) or tempfile.gettempdir()) / f"kit-gpu-{bus or 'any'}.lock"


class GpuLock:
    """One grading's hold on a GPU's lock file (path None: no lock, every call does nothing).
    shared() and exclusive() block until the lock is had, for up to wait_limit_s (then the
    grading goes on without it, said on `note`); release() lets it go. A lock that cannot be
    opened (a folder this user may not write) is no lock, said once."""

    def __init__(self, path: Path | None, note: TextIO | None = None,
                 wait_limit_s: float = WAIT_LIMIT_S) -> None:
        self.path = path
        self.note = note if note is not None else sys.stderr
        self.wait_limit_s = wait_limit_s
        self.waited_s = 0.0
        self._fd: int | None = None
        self._told_waiting = False  # the waiting message is said once a grading

    def shared(self) -> None:
        """Held while correctness tests run: other gradings' correctness tests may run too."""
        self._take(fcntl.LOCK_SH)

    def exclusive(self) -> None:
        """Held while timed, counter and perf tests run: nothing of another grading runs."""
        self._take(fcntl.LOCK_EX)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file lets the lock go
            self._fd = None

    def __enter__(self) -> GpuLock:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    def _take(self, mode: int) -> None:
        if self.path is None:
            return
        if self._fd is None:
            try:
                self._fd = _open(self.path)
            except OSError as err:
                self._say(f"kit: GPU lock {self.path} not used ({err.strerror}): gradings "
                          f"started side by side on this GPU may disturb each other's timing")
                self.path = None
                return
        if _flocked(self._fd, mode):
            return
        if not self._told_waiting:
            self._told_waiting = True
            self._say("kit: another grading on this GPU is running "
                      + ("tests that must run alone (timed, counters, perf); waiting for them"
                         if mode == fcntl.LOCK_SH else
                         "its tests; this grading's timed and perf tests wait for them to end")
                      + f" (lock {self.path})")
        started = time.monotonic()
        while time.monotonic() - started < self.wait_limit_s:
            time.sleep(POLL_S)
            if _flocked(self._fd, mode):
                break
        else:
            self._say(f"kit: waited {self.wait_limit_s:g} s for the GPU lock {self.path}; going "
                      f"on without it: another grading's tests may run beside this one's")
            self.release()
            self.path = None
        self.waited_s += time.monotonic() - started

    def _say(self, text: str) -> None:
        lines = textwrap.wrap(text, 78, subsequent_indent="  ", break_long_words=False,
                              break_on_hyphens=False)
        self.note.write("\n".join(lines) + "\n")
        self.note.flush()


def _flocked(fd: int, mode: int) -> bool:
    """Whether flock took the lock at once (False: another holds it in a conflicting mode)."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _open(path: Path) -> int:
    """The lock file, opened read-only (enough for flock, so another user's file serves as well),
    made when missing. An existing file is opened without O_CREAT: where the system protects
    files in sticky folders such as /tmp (fs.protected_regular), O_CREAT on another user's file
    is refused even though it exists."""
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
