"""Why a test that crashed, hung or broke the GPU most likely did, and what to do next.

The runner gives these verdicts itself (the process ended early, ran out of time, or left a
CUDA error behind), so no test's own message explains them: without this a student reads
"crashed: SIGSEGV" and nothing about where to look. Each rule matches the verdict's words and
names the usual causes in this kit's labs, in one "likely:" paragraph like the ones the output
checks print for wrong elements (kit/diagnose.h), put first in the test's output
(runner._result). The first rule that matches gives the advice; none matches a plain failure.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from .model import Status

WIDTH = 70
"""The paragraph's width: the full report indents a test's output by 8, the student's view by 6,
and both fit 80 columns."""
LINES = 3
"""The most lines a paragraph takes: the student's one-screen view (kitgrade.student_view) shows
a failing test's verdict line and its first three message lines."""


@dataclass(frozen=True)
class Rule:
    statuses: frozenset[Status]
    words: Sequence[str]
    """The rule applies when the verdict's reason or output holds any of these."""
    advice: str
    """After "likely: "."""
    command: str | None = None
    """A command that shows more, on a line of its own ("next: ..."), pasted from the
    repository root; `{lab}` is the lab's number."""


_NOT_PASSED = frozenset({Status.FAILED, Status.CRASHED, Status.TIMED_OUT})
_CRASHED = frozenset({Status.CRASHED})
_SANITIZE = "python3 grader/kit.py sanitize {lab}  (names the line and thread)"

RULES: tuple[Rule, ...] = (
    Rule(frozenset({Status.TIMED_OUT}), ("timed out after",),
         "the test never finished: a loop that never ends (a grid-stride step of 0, a condition "
         "nothing changes) or a __syncthreads() inside an if that some threads skip."),
    Rule(_NOT_PASSED, ("illegal memory access", "cudaErrorIllegalAddress"),
         "a kernel read or wrote outside its arrays: a missing or off-by-one bounds check, or a "
         "wrong row stride.", _SANITIZE),
    Rule(_NOT_PASSED, ("misaligned address", "cudaErrorMisalignedAddress"),
         "a float2 or float4 access at an address that is not a multiple of its size: vectorise "
         "only aligned indices, and do the rest one element at a time."),
    Rule(_NOT_PASSED, ("too many resources requested", "cudaErrorLaunchOutOfResources"),
         "a block larger than the kernel's registers or shared memory allow: launch smaller "
         "blocks."),
    Rule(_NOT_PASSED, ("invalid configuration argument", "cudaErrorInvalidConfiguration"),
         "a grid or block of 0, or a block over the limits (1024 threads, 64 in z): check the "
         "sizes you compute, for tiny and odd inputs too."),
    Rule(_NOT_PASSED, ("unspecified launch failure", "cudaErrorLaunchFailure"),
         "a kernel faulted, most often by an access outside its arrays.", _SANITIZE),
    Rule(_NOT_PASSED, ("cudaErrorMemoryAllocation", "out of memory"),
         "an allocation larger than the GPU has: check the byte count (elements times sizeof), "
         "and free what you allocate in a loop."),
    Rule(_CRASHED, ("SIGSEGV", "SIGBUS"),
         "host code used memory it does not own: a device pointer used on the host (copy with "
         "cudaMemcpy), an index past a host array's end, or freed memory."),
    Rule(_CRASHED, ("SIGFPE",),
         "an integer division or remainder by zero in host code: a block or tile count of 0 "
         "for a small input?"),
    Rule(_CRASHED, ("SIGABRT",),
         "the program aborted: a failed assert, or an exception your code did not catch (see "
         "the output below)."),
    Rule(_CRASHED, ("SIGKILL",),
         "the process was killed from outside, most often for using too much host memory."),
    Rule(_CRASHED, ("no authentic result",),
         "something in the process wrote, changed or removed the grader's result files; only "
         "the kit may write them."),
    Rule(_CRASHED, ("exited with code",),
         "your code ended the program (exit, _exit, quick_exit): a lab function returns, or "
         "throws where its comment says so."),
)


def advice(lab_number: str, status: Status, reason: str, output: str) -> str | None:
    """The "likely:" paragraph for a verdict (None: no rule applies, or the output already
    carries a diagnosis of its own), wrapped to WIDTH columns."""
    text = f"{reason}\n{output}"
    if "likely:" in output:
        return None
    for rule in RULES:
        if status in rule.statuses and any(word in text for word in rule.words):
            lines = textwrap.wrap("likely: " + rule.advice, WIDTH, subsequent_indent="  ",
                                  break_on_hyphens=False)
            if rule.command is not None:
                lines.append("next: " + rule.command.format(lab=lab_number))
            return "\n".join(lines)
    return None
