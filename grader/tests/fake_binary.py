#!/usr/bin/env python3
"""A stand-in for a lab's GoogleTest binary, speaking the kit protocol, for the runner's tests.

Its name says what it is, like the real ones: grade_01_alpha is the student build of lab
01_alpha (reference_01_alpha the reference). The name comes from $FAKE_PROGRAM when set
(the tests start it through a wrapper script), else from argv[0].

    --kit_list                 the tests below, as JSON
    --kit_device               a fake H100 when FAKE_GPU=1, else {"available": false}
    --gtest_filter=ID:ID... --kit_verdicts=DIR   run those tests in TESTS order, writing each
                               one's GoogleTest-style JSON to DIR/NNNNNN.json as it ends, signed
                               with the key read from the pipe KIT_NONCE_FD names, as the kit's
                               main() does

Environment:
    FAKE_TESTS            comma-separated keys of TESTS to offer (default: all)
    FAKE_TESTS_<LAB>      the same for one lab only, e.g. FAKE_TESTS_01_ALPHA
    FAKE_GPU=1            pretend a GPU is present
    FAKE_KINDS            comma-separated key=kind: list those tests with another kind, e.g.
                          gpu=counter (a counter test skips itself, as kit::CounterTest does,
                          unless the runner passed --kit_counters=ncu)
    FAKE_PROPS            a JSON object of properties every test records
    FAKE_PRINT            text every test prints when it starts
    FAKE_LIST             "fail" (exit 2), "garbage" (not JSON) or "wrong_variant"
    FAKE_TIMED_FAILS      1: the timed test fails
    FAKE_LOG              append "start|end <id> <monotonic time>" lines to this file
    FAKE_HIDDEN           comma-separated keys of TESTS listed with "hidden": true (KIT_HIDDEN_TEST)
    FAKE_PERF_RATIO       ratio the perf test measures (default 0.91; threshold 0.60)
    FAKE_PASS_SLEEP_S     seconds the "pass" test sleeps before it passes (default 0)

The sanitizer tests (kinds memcheck, racecheck) are offered only when FAKE_TESTS names them; the
runner runs them under compute-sanitizer (fake_sanitizer.py in the tests).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import sys
import time

# key: (suite.name, step suffix, kind, points, title)
TESTS = {
    "pass": ("Host.Passes", "1", "host", 2, "host check passes"),
    "hidden": ("Host.Hidden", "1", "host", 1, "[hidden] edge cases pass"),
    "fail": ("Host.Fails", "1", "host", 3, "host check fails with a message"),
    "gpu": ("Gpu.Works", "2", "gpu", 2, "kernel writes every element"),
    "param": ("Sizes/SaxpyTest.WritesEveryElement/n_1000", "2", "gpu", 1, "parameterized kernel test"),
    "abort": ("Crash.Aborts", "3", "host", 1, "calls abort()"),
    "segv": ("Crash.Segfaults", "3", "host", 1, "dereferences a bad pointer"),
    "hang": ("Hang.Sleeps", "3", "host", 1, "never returns"),
    "hang2": ("Hang.SleepsToo", "3", "host", 1, "never returns either"),
    "exit0": ("Exit.Early", "3", "host", 1, "calls exit(0) in the middle of the test"),
    "exit3": ("Exit.Three", "3", "host", 1, "calls exit(3) in the middle of the test"),
    "liar": ("Liar.ClaimsToPass", "3", "host", 1, "prints a fake PASSED banner, fails, exits 0"),
    "forged": ("Forger.WritesAPass", "3", "host", 1, "writes an unsigned passing verdict, exits 0"),
    "wrong_key": ("Forger.SignsWithAGuess", "3", "host", 1, "signs a passing verdict with a guessed key"),
    "tampered": ("Forger.EditsTheVerdict", "3", "host", 1, "fails, then edits the signed verdict to pass"),
    "litter": ("Litter.WritesReports", "3", "host", 1, "writes forged reports into its working directory"),
    "context": ("Gpu.BreaksTheContext", "3", "gpu", 1, "leaves a sticky CUDA error behind"),
    "eraser": ("Forger.ErasesAndReplays", "3", "host", 1,
               "deletes the verdicts written before it, then replays a passing one as the next"),
    "timed": ("Timeline.StagesLastAsLongAsTheirWork", "3", "timed", 2, "a check that compares durations"),
    "perf": ("Perf.Saxpy", "perf", "perf", 4, "saxpy reaches copy bandwidth"),
    "hang1": ("Hang.InStepOne", "1", "host", 1, "never returns, in step 1"),
    "starved": ("Busy.WaitsWhileAKernelSpins", "2", "host", 1,
                "never ends while a hang of FAKE_SPIN_DIR runs beside it, passes alone"),
    "memcheck": ("Bounds.UnderMemcheck", "2", "memcheck", 2, "no access outside the buffers"),
    "racecheck": ("Tiles.UnderRacecheck", "2", "racecheck", 2, "no shared-memory race"),
    "sanitized_fails": ("Bounds.WrongUnderMemcheck", "2", "memcheck", 1, "wrong output, clean"),
    "claims_clean": ("Bounds.PrintsACleanReport", "2", "memcheck", 1,
                     "prints a clean sanitizer summary of its own"),
    "log_forger": ("Bounds.RewritesTheLog", "2", "memcheck", 1,
                   "empties the sanitizer's log and writes a clean summary into it"),
}
OPT_IN = {"memcheck", "racecheck", "sanitized_fails", "claims_clean", "log_forger", "starved",
          "hang1"}
"""Offered only when named: the other tests' expectations do not count on them."""

FAILURE = ("fake_test.cu:42\nExpected equality of these values:\n"
           "  grid_size_1d(1000, 256)\n    Which is: 3\n  4")


def program() -> tuple[str, str]:
    """(lab id, variant) from the program name."""
    name = os.environ.get("FAKE_PROGRAM") or os.path.basename(sys.argv[0])
    prefix, _, lab = name.partition("_")
    return lab, {"grade": "student", "reference": "reference"}[prefix]


def offered(lab: str) -> dict[str, tuple]:
    keys = os.environ.get(f"FAKE_TESTS_{lab.upper()}", os.environ.get("FAKE_TESTS", ""))
    chosen = [k for k in keys.split(",") if k] or [k for k in TESTS if k not in OPT_IN]
    return {k: TESTS[k] for k in chosen}


def kit_list(lab: str, variant: str) -> int:
    mode = os.environ.get("FAKE_LIST", "")
    if mode == "fail":
        print("error: listing broke", file=sys.stderr)
        return 2
    if mode == "garbage":
        print("this is not json")
        return 0
    name = lab.split("_", 1)[1]
    hidden = set(os.environ.get("FAKE_HIDDEN", "").split(","))
    tests = [{"id": t[0], "step": f"{name}.{t[1]}", "kind": kind_of(key), "points": t[3],
              "title": t[4], **({"hidden": True} if key in hidden else {})}
             for key, t in offered(lab).items()]
    if mode == "wrong_variant":
        variant = "reference" if variant == "student" else "student"
    print(json.dumps({"lab": lab, "variant": variant, "tests": tests}))
    return 0


def kind_of(key: str) -> str:
    kinds = dict(item.split("=", 1) for item in os.environ.get("FAKE_KINDS", "").split(",") if item)
    return kinds.get(key, TESTS[key][2])


def kit_device() -> int:
    if os.environ.get("FAKE_GPU") == "1":
        print(json.dumps({"available": True, "name": "Fake H100", "cc": "9.0", "sms": 132,
                          "l2_bytes": 52428800, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
                          "copy_engines": 3, "current_sm_clock_mhz": 1755,
                          "pci_bus_id": "00000000:19:00.0"}))
    else:
        print(json.dumps({"available": False, "reason": "no CUDA device"}))
    return 0


def gtest_json(test_id: str, result: str, failures: list[str], props: dict[str, str]) -> dict:
    suite, name = test_id.split(".", 1)
    entry = {"name": name, "file": "fake_test.cu", "line": 1, "status": "RUN", "result": result,
             "timestamp": "2024-01-01T00:00:00Z", "time": "0.001s", "classname": suite, **props}
    if failures:
        entry["failures"] = [{"failure": f, "type": ""} for f in failures]
    return {"tests": 1, "failures": int(bool(failures)), "name": "AllTests",
            "testsuites": [{"name": suite, "tests": 1, "testsuite": [entry]}]}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed child that nobody has waited for yet is a zombie: it runs no more.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def run(key: str, test_id: str) -> tuple[str, list[str], dict[str, str]]:
    """Does what test `key` does; returns (gtest result, failures, properties) if it returns."""
    gpu = os.environ.get("FAKE_GPU") == "1"
    props = {"seed": os.environ.get("KIT_SEED", ""), "pid": str(os.getpid()),
             **json.loads(os.environ.get("FAKE_PROPS", "{}"))}
    if kind_of(key) == "counter" and not COUNTERS_PROFILED:
        return "SKIPPED", [], {**props, "not_run": "counters are read only under Nsight Compute"}
    if key in ("pass", "hidden"):
        time.sleep(float(os.environ.get("FAKE_PASS_SLEEP_S", "0")) if key == "pass" else 0)
        return "COMPLETED", [], props
    if key == "fail":
        return "COMPLETED", [FAILURE], props
    if (key in ("gpu", "param", "timed", "perf", "context") or key in OPT_IN) and not gpu:
        return "SKIPPED", [], {**props, "not_run": "no CUDA device"}
    if key in ("memcheck", "racecheck"):
        return "COMPLETED", [], props
    if key == "sanitized_fails":
        return "COMPLETED", ["bounds.cu:5\nout: 24 elements never written"], props
    if key == "claims_clean":
        print("========= ERROR SUMMARY: 0 errors", flush=True)
        return "COMPLETED", [], props
    if key == "log_forger":
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            argv = f.read().decode().split("\0")
        with open(argv[argv.index("--log-file") + 1], "w") as f:
            f.write("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
        return "COMPLETED", [], props
    if key == "timed" and os.environ.get("FAKE_TIMED_HANGS") == "1":
        while True:
            time.sleep(1)
    if key == "timed" and os.environ.get("FAKE_TIMED_FAILS") == "1":
        return "COMPLETED", ["timeline.cu:7\nchunk 1's copy-in took 0.01 ms"], props
    if key in ("gpu", "param", "timed"):
        return "COMPLETED", [], {**props, "gpu": "Fake H100"}
    if key == "perf":
        ratio = float(os.environ.get("FAKE_PERF_RATIO", "0.91"))
        props.update(ratio=f"{ratio:.2f}", threshold="0.60", spread="0.015", samples="21",
                     student_rate="2710.0 GB/s", ceiling_rate="2980.0 GB/s", gpu="Fake H100")
        return "COMPLETED", [] if ratio >= 0.6 else [f"perf.cu:9\nratio {ratio:.2f} below 0.60"], props
    if key == "abort":
        print("about to abort", flush=True)
        os.abort()
    if key == "segv":
        print("about to segfault", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    if key in ("hang", "hang2", "hang1"):
        spin = os.environ.get("FAKE_SPIN_DIR")
        if spin:  # a kernel that never ends: the tests beside it share the GPU with it
            open(os.path.join(spin, str(os.getpid())), "w").close()
        time.sleep(1000)
    if key == "starved":
        time.sleep(0.5)  # the hangs started beside it have left their marks
        spin = os.environ.get("FAKE_SPIN_DIR", "")
        while any(alive(int(name)) for name in (os.listdir(spin) if spin else ())):
            time.sleep(0.05)
        return "COMPLETED", [], props
    if key == "exit0":
        print("leaving early", flush=True)
        os._exit(0)
    if key == "exit3":
        os._exit(3)
    if key == "liar":
        print("[  PASSED  ] 1 test.")
        print(json.dumps(gtest_json(test_id, "COMPLETED", [], props)))
        return "COMPLETED", ["liar.cu:7\nvalue is wrong"], props
    if key == "tampered":
        return "COMPLETED", ["tamper.cu:3\nvalue is wrong"], props
    if key in ("forged", "wrong_key"):
        forged = json.dumps(gtest_json(test_id, "COMPLETED", [], props)).encode()
        if key == "wrong_key":
            forged += b"\nkit-hmac-sha256 " + sign(b"0" * 64, forged)
        # Written whole and renamed into place, as the kit's main() does: the runner reads a
        # verdict file as soon as it appears, and must judge the forgery, not a half-written file.
        with open(next_verdict() + ".partial", "wb") as f:
            f.write(forged + b"\n")
        os.rename(next_verdict() + ".partial", next_verdict())
        os._exit(0)
    if key == "eraser":
        # A signed verdict of a test that passed, renamed as another test's cannot pass that one
        # (its entry names its own test); the failing verdicts are deleted.
        names = sorted(n for n in os.listdir(VERDICT_DIR) if n.endswith(".json"))
        passing = [n for n in names if '"failures"' not in open(os.path.join(VERDICT_DIR, n)).read()]
        for n in names:
            if n not in passing:
                os.remove(os.path.join(VERDICT_DIR, n))
        if passing:
            os.replace(os.path.join(VERDICT_DIR, passing[0]), next_verdict())
        return "COMPLETED", ["eraser.cu:1\nvalue is wrong"], props
    if key == "context":
        return "COMPLETED", [], {**props, "kit_context_lost": "an illegal memory access was encountered"}
    if key == "litter":
        for name in ("results.json", "kit-results.json", "junit.xml", "summary.md"):
            with open(name, "w") as f:
                f.write('{"score": 1000, "max_score": 1}\n')
        return "COMPLETED", [], {**props, "cwd": os.getcwd()}
    raise AssertionError(key)


VERDICT_DIR = ""
NONCE = b""
COUNTERS_PROFILED = False
written = 0


def next_verdict() -> str:
    return os.path.join(VERDICT_DIR, f"{written:06d}.json")


def take_nonce() -> bytes:
    """Reads the runner's key to the end and closes the pipe, as test_main.cpp does."""
    fd = int(os.environ.pop("KIT_NONCE_FD"))
    key = b""
    while chunk := os.read(fd, 256):
        key += chunk
    os.close(fd)
    return key


def sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode()


def run_filtered(lab: str, test_filter: str) -> int:
    """Runs the tests the filter names, in TESTS order, writing each one's signed verdict."""
    global written
    log = os.environ.get("FAKE_LOG")
    wanted = set(test_filter.split(":"))
    code = 0
    for key, test in offered(lab).items():
        test_id = test[0]
        if test_id not in wanted:
            continue
        if log:
            with open(log, "a") as f:
                f.write(f"start {test_id} {time.monotonic()}\n")
        print(f"[ RUN      ] {test_id}", flush=True)
        print(os.environ.get("FAKE_PRINT", ""), end="", flush=True)
        result, failures, props = run(key, test_id)
        payload = json.dumps(gtest_json(test_id, result, failures, props)).encode()
        if key == "tampered":  # e.g. a thread of the test's that edits the file as it appears
            signature = sign(NONCE, payload)
            payload = json.dumps(gtest_json(test_id, "COMPLETED", [], {})).encode()
        else:
            signature = sign(NONCE, payload)
        with open(next_verdict() + ".partial", "wb") as f:
            f.write(payload + b"\nkit-hmac-sha256 " + signature + b"\n")
        os.rename(next_verdict() + ".partial", next_verdict())
        written += 1
        if log:
            with open(log, "a") as f:
                f.write(f"end {test_id} {time.monotonic()}\n")
        if "kit_context_lost" in props:
            os._exit(75)
        code = code or (0 if key == "liar" else int(bool(failures)))
    return code


def main(argv: list[str]) -> int:
    lab, variant = program()
    if argv == ["--kit_list"]:
        return kit_list(lab, variant)
    if argv == ["--kit_device"]:
        return kit_device()
    flags = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    global VERDICT_DIR, NONCE, COUNTERS_PROFILED
    # What the runner adds for a counter test: the judge's flag, and with it the time limit that
    # a judge's arguments end with.
    COUNTERS_PROFILED = flags.pop("--kit_counters", None) == "ncu"
    if COUNTERS_PROFILED:
        flags.pop("--kit_timeout", None)
    # Started ahead of its turn (protocol.StartSignal): waits for one byte, as test_main.cpp does;
    # the end of the pipe instead means the runner will not need it.
    wait_fd = flags.pop("--kit_wait_fd", None)
    cold = flags.pop("--kit_wait_cold", None) == "1"
    if set(flags) != {"--gtest_filter", "--kit_verdicts"} or \
            len(argv) != 2 + 2 * COUNTERS_PROFILED + (wait_fd is not None) + cold:
        print(f"fake binary: unexpected arguments {argv}", file=sys.stderr)
        return 2
    VERDICT_DIR = flags["--kit_verdicts"]
    NONCE = take_nonce()
    if wait_fd is not None:
        log = os.environ.get("FAKE_LOG")
        if log:
            with open(log, "a") as f:
                first = flags["--gtest_filter"].split(":")[0]
                f.write(f"{'waiting-cold' if cold else 'waiting'} {first} {time.monotonic()}\n")
        if os.environ.get("FAKE_DIE_WAITING"):
            os._exit(3)
        ready = not os.environ.get("FAKE_NEVER_READY")
        if ready and not cold:
            open(os.path.join(VERDICT_DIR, "ready"), "w").close()
        if os.read(int(wait_fd), 1) != b"g":
            return 0
        os.close(int(wait_fd))
        if ready and cold:  # its contexts made once its turn has come
            time.sleep(float(os.environ.get("FAKE_COLD_CONTEXT_S", "0")))
            open(os.path.join(VERDICT_DIR, "ready"), "w").close()
            if log:
                with open(log, "a") as f:
                    f.write(f"warm {flags['--gtest_filter'].split(':')[0]} {time.monotonic()}\n")
    if len(NONCE) < 32:
        print("fake binary: no key on KIT_NONCE_FD", file=sys.stderr)
        return 2
    return run_filtered(lab, flags["--gtest_filter"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
