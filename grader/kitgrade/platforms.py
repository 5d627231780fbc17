"""What a grading platform receives when the kit could not grade a submission in full.

The platform scripts (ci/gradescope/run_autograder, ci/prairielearn/run) run `kit.py grade` and
hand the platform its report (results.json, prairielearn.json). When the kit exits with a code
other than 0 or 1 (a file missing, a build failure, no GPU, no authentic result), they call

    PYTHONPATH=grader python3 -m kitgrade.platforms not-graded PLATFORM STATUS LOG OUT

which writes OUT for PLATFORM: never the partial score of the tests that happened to run (without
a GPU only the host tests run, and a student must not get their points for code that never ran).
Gradescope gets a score of 0 with the reason; PrairieLearn gets a submission that is not gradable
(no score, no attempt used) with the reason in format_errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Why a submission was not graded, by the kit's exit code (kitgrade.cli.ExitCode).
WHY = {
    2: "the submission could not be graded as it is",
    3: "the submission did not build, or a grader could not run",
    4: "the grading machine has no usable NVIDIA GPU, so the GPU tests could not run "
       "(your instructor has been told: this is not about your code)",
}
LOG_TAIL_CHARS = 4000


def reason(status: int) -> str:
    return WHY.get(status, "the grader could not run")


def not_graded(platform: str, status: int, log: str) -> dict:
    """The platform's result document for a submission the kit could not grade in full."""
    detail = log.strip()[-LOG_TAIL_CHARS:]
    text = f"Not graded: {reason(status)} (exit code {status})." + (
        f"\n\n{detail}" if detail else "")
    if platform == "gradescope":
        return {"score": 0, "output": text, "visibility": "visible"}
    if platform == "prairielearn":
        return {"gradable": False, "message": f"Not graded: {reason(status)}.",
                "format_errors": [text], "output": detail, "tests": []}
    raise ValueError(f"unknown platform {platform!r} (gradescope or prairielearn)")


def main(argv: list[str]) -> int:
    if len(argv) != 5 or argv[0] != "not-graded":
        print("usage: python3 -m kitgrade.platforms not-graded PLATFORM STATUS LOG OUT",
              file=sys.stderr)
        return 2
    _, platform, status, log_file, out_file = argv
    try:
        log = Path(log_file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        log = ""
    code = int(status) if status.lstrip("-").isdigit() else -1
    Path(out_file).write_text(json.dumps(not_graded(platform, code, log)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
