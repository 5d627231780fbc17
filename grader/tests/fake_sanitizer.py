#!/usr/bin/env python3
"""A stand-in for compute-sanitizer, for the runner's tests of sanitizer tests: it runs the program
after its options (inheriting every descriptor, as the real tool's launcher does), writes a log in
the real tool's format where --log-file says, and exits as FAKE_SANITIZER asks:

    clean       (default) a summary of 0 errors; the program's exit status
    report      one report of the tool (memcheck's or racecheck's), written before the program
                runs, as the real tool writes them when they happen, a summary of 1, and
                ERROR_EXIT when the program succeeded
    unreadable  ERROR_EXIT and a log the kit cannot read
    no_summary  the banner only; the program's exit status
    killed      killed by SIGKILL once the program ended
    exit3       exit status 3 once the program succeeded
    linger      30 s more after the program

Each command line is appended to $FAKE_SANITIZER_ARGS when set; --help names the options.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

ERROR_EXIT = 99
VALUED = {"--tool", "--target-processes", "--error-exitcode", "--log-file", "--print-limit",
          "--show-backtrace", "--racecheck-report", "--target-processes-filter"}
REPORTS = {
    "memcheck": """========= Invalid __global__ read of size 4 bytes
=========     at lab02::scale_shift_kernel(unsigned int, float, float, const float *, float *)+0xb0 in bounds.cu:26
=========     by thread (232,0,0) in block (3,0,0)
=========     Access to 0x7f934c800fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f934c800000 of size 4,000 bytes
=========
""",
    "racecheck": """========= Error: Potential WAR hazard detected at __shared__ 0x1f80 in block (2,1,0) :
=========     Read Thread (7,31,0) at lab04::matmul_tiled_kernel(unsigned int, unsigned int, unsigned int, const float *, const float *, float *)+0x3e0 in tiling.cu:41
=========     Write Thread (7,3,0) at lab04::matmul_tiled_kernel(unsigned int, unsigned int, unsigned int, const float *, const float *, float *)+0x1a0 in tiling.cu:58
=========     Current Value : 1065353216, Incoming Value : 1073741824
=========
""",
}


def summary(tool: str, count: int) -> str:
    if tool == "racecheck":
        return f"========= RACECHECK SUMMARY: {count} hazards displayed ({count} errors, 0 warnings)\n"
    return f"========= ERROR SUMMARY: {count} errors\n"


def main(argv: list[str]) -> int:
    if argv == ["--help"]:
        print("Usage: compute-sanitizer [options] [your-program] [your-program-options]\n"
              "  --tool arg  --target-processes arg  --error-exitcode arg  --log-file arg\n"
              "  --target-processes-filter arg  Set the expressions of the processes tracked\n"
              "  --kill  Makes the compute-sanitizer kill the target application\n")
        return 0
    if os.environ.get("FAKE_SANITIZER_ARGS"):
        with open(os.environ["FAKE_SANITIZER_ARGS"], "a") as f:
            f.write(" ".join(argv) + "\n")
    options: dict[str, str] = {}
    i = 0
    while argv[i].startswith("--"):
        if argv[i] in VALUED:
            options[argv[i]] = argv[i + 1]
            i += 2
        else:
            options[argv[i]] = ""
            i += 1
    tool, log = options["--tool"], options.get("--log-file")
    mode = os.environ.get("FAKE_SANITIZER", "clean")

    def write(text: str) -> None:
        if log and mode != "no_log":
            with open(log, "a") as f:
                f.write(text)

    write("========= COMPUTE-SANITIZER\n")
    if mode == "report":
        write(REPORTS[tool])
    code = subprocess.run(argv[i:], close_fds=False).returncode
    if mode == "report":
        write(summary(tool, 1))
        return ERROR_EXIT if code == 0 else code
    if mode == "unreadable":
        write("========= something this kit has never seen\n")
        return ERROR_EXIT
    if mode != "no_summary":
        write(summary(tool, 0))
    if mode == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit3" and code == 0:
        return 3
    if mode == "linger":
        time.sleep(30)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
