#!/usr/bin/env python3
"""A stand-in for Nsight Compute's command line (ncu), for the runner's tests of counter tests: it
runs the program after its options (inheriting every descriptor, as the real tool's launcher
does), then writes what the real tool writes to --log-file with --csv: its own log lines and one
row per profiled launch and metric, from FAKE_NCU_LAUNCHES (a JSON list of [kernel name,
{metric: value}], values as ncu prints them). It exits with the program's status, except:

    FAKE_NCU=permission   the counters refused (ERR_NVGPUCTRPERM), no row
    FAKE_NCU=error        an error line and no row; exit status 1

Each command line is appended to $FAKE_NCU_ARGS when set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

VALUED = {"--target-processes", "--metrics", "--page", "--print-units", "--print-metric-name",
          "--print-metric-instances", "--print-kernel-base", "--launch-count", "--clock-control",
          "--log-file"}
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_NCU_ARGS"):
        with open(os.environ["FAKE_NCU_ARGS"], "a") as f:
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
    code = subprocess.run(argv[i:], close_fds=False).returncode
    mode = os.environ.get("FAKE_NCU", "")
    pid = 4242
    lines = [f"==PROF== Connected to process {pid} (worker_01_alpha)"]
    if mode == "permission":
        lines.append("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                     "NVIDIA GPU Performance Counters on the target device 0.")
    elif mode == "error":
        lines.append("==ERROR== Failed to profile \"kernel\" in process 4242")
        code = 1
    else:
        launches = json.loads(os.environ.get("FAKE_NCU_LAUNCHES", "[]"))
        lines.append(HEADER)
        for n, (kernel, values) in enumerate(launches):
            for metric, value in values.items():
                lines.append(f'"{n}","{pid}","worker_01_alpha","127.0.0.1","{kernel}","1","7",'
                             f'"(256, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler '
                             f'metrics","{metric}","","{value}"')
    lines.append(f"==PROF== Disconnected from process {pid}")
    with open(options["--log-file"], "w") as f:
        f.write("\n".join(lines) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
