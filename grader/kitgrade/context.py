"""What every command of the kit's command line shares: the context a command runs in, the usage
error and exit codes, lab lookup, argument types, seeds and default folders.

A leaf module: it imports no other command module, so every command imports from here and none
from another command (kitgrade.cli, the entry point, imports them all).
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import NoReturn, TextIO

from . import thresholds
from .manifest import Lab, Manifest, load_manifest

SEED_MAX = 2**32 - 1


class ExitCode(IntEnum):
    OK = 0
    TESTS_FAILED = 1
    USAGE = 2
    BUILD_OR_BINARY = 3
    NO_GPU = 4
    INTERRUPTED = 130


class UsageError(Exception):
    """Bad command line or configuration: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Context:
    """What every subcommand gets besides its parsed arguments."""

    root: Path
    stdout: TextIO
    stderr: TextIO

    def manifest(self) -> Manifest:
        return load_manifest(self.root / "grader" / "labs.json")


class Parser(argparse.ArgumentParser):
    """Turns argparse's usage errors into UsageError so they print as one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


KIT_ROOT = Path(__file__).resolve().parents[2]
"""The copy of the kit this command line belongs to (which parts it has decides some options)."""

SUBMISSION_BUILD = "build-submission"
"""Default build directory of --submission and batch, so the build of labs/ is left alone."""


def select_labs(manifest: Manifest, names: Sequence[str]) -> list[Lab]:
    labs = [find_lab(manifest, name) for name in names] if names else list(manifest.labs)
    return list(dict.fromkeys(labs))  # "01 indexing" names one lab once


def check_thresholds(ctx: Context) -> None:
    try:
        thresholds.load(thresholds.thresholds_path(ctx.root))
    except thresholds.ThresholdsError as err:
        raise UsageError(str(err)) from err


def env_seed() -> int:
    text = os.environ.get("KIT_SEED")
    if text is None or text == "":
        return secrets.randbelow(SEED_MAX + 1)
    try:
        return seed_arg(text)
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"KIT_SEED: {err}") from err


# ---------------------------------------------------------------- argument types

def seed_arg(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer 0..{SEED_MAX}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def find_lab(manifest: Manifest, name: str) -> Lab:
    lab = manifest.find_lab(name)
    if lab is None:
        raise UsageError(f"unknown lab {name!r}; labs: {', '.join(manifest.lab_ids())}")
    return lab


def default_build_dir(ctx: Context, explicit: Path | None, default: str = "build") -> Path:
    """The build directory a command uses: --build-dir, else <repo>/build (or `default`)."""
    return (explicit or ctx.root / default).absolute()
