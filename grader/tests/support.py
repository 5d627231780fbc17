"""Shared fixtures: fake lab binaries, throwaway manifests and repos, a clean environment."""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from kitgrade.manifest import Lab, parse_manifest

FAKE_BINARY = Path(__file__).resolve().parent / "fake_binary.py"
_LOCK_DIR = tempfile.mkdtemp(prefix="kit-test-gpu-lock-")
atexit.register(shutil.rmtree, _LOCK_DIR, True)


def temp_dir(case) -> Path:
    """A fresh directory removed when `case` (a TestCase, or its class for a class fixture)
    is done with it: the unit tests leave nothing behind in the system's temporary folder."""
    path = Path(tempfile.mkdtemp())
    if isinstance(case, type):
        case.addClassCleanup(shutil.rmtree, path, True)
    else:
        case.addCleanup(shutil.rmtree, path, True)
    return path


def lab_entry(lab_id: str, timeout_s: float = 2.0) -> dict:
    """A manifest entry matching the steps fake_binary.py uses (<name>.1/.2/.3/.perf)."""
    name = lab_id.split("_", 1)[1]
    return {
        "id": lab_id, "title": f"Lab {name}", "timeout_s": timeout_s, "student_files": ["a.cu"],
        "steps": [{"id": f"{name}.{s}", "title": f"step {s} of {name}",
                   "hints": [f"{name} {s} nudge", f"{name} {s} more", f"{name} {s} almost"]}
                  for s in ("1", "2", "3", "perf")],
    }


def make_lab(lab_id: str, timeout_s: float = 2.0) -> Lab:
    return parse_manifest({"labs": [lab_entry(lab_id, timeout_s)]}).labs[0]


def make_fake_binary(bin_dir: Path, lab_id: str, variant: str = "student") -> Path:
    """A wrapper named like a real grader binary that execs fake_binary.py (same pid)."""
    name = f"{'grade' if variant == 'student' else 'reference'}_{lab_id}"
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\nFAKE_PROGRAM={name} exec {shlex.quote(sys.executable)} "
                    f"{shlex.quote(str(FAKE_BINARY))} \"$@\"\n")
    path.chmod(0o755)
    return path


def make_repo(root: Path, lab_ids: list[str], built: list[str] | None = None,
              variant: str = "student") -> Path:
    """A repo with grader/labs.json for lab_ids, a stub labs/<lab>/a.cu for each, and fake
    binaries in build/bin for `built`."""
    (root / "grader").mkdir(parents=True)
    for lab in lab_ids:
        (root / "labs" / lab).mkdir(parents=True)
        (root / "labs" / lab / "a.cu").write_text(f"// stub of {lab}\n")
    (root / "grader" / "thresholds.conf").write_text("fake.ratio 0.5 0.8\n")
    (root / "grader" / "labs.json").write_text(
        json.dumps({"labs": [lab_entry(lab) for lab in lab_ids]}))
    for lab in lab_ids if built is None else built:
        make_fake_binary(root / "build" / "bin", lab, variant)
    return root


@contextmanager
def fake_env(**values: str) -> Iterator[None]:
    """os.environ without any FAKE_*/KIT_*/NO_COLOR leftovers, plus `values`. The GPU lock
    (kitgrade.gpu_lock) of a fake GPU is this test process's own, so test processes run side by
    side do not wait for each other."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("FAKE_", "KIT_")) and k != "NO_COLOR"}
    clean["KIT_GPU_LOCK_DIR"] = _LOCK_DIR
    with mock.patch.dict(os.environ, {**clean, **values}, clear=True):
        yield
