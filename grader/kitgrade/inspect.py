"""Inspects the student's compiled objects before anything runs: a link-time allowlist.

The student's code runs in a worker process that decides no verdict (kit/remote.h), so what it
can do there matters less than before; but it still runs with the grader's user on the grading
machine. So before a lab is graded, every object compiled from a student file (lab.json
``student_files``, taken from the student's static library) is read, without running it:

* **what it calls**: every symbol it needs from elsewhere (``nm -u``) must match the allowlist
  below: the CUDA runtime (less the calls that load code or reach other processes), the C++
  runtime and standard library, C's memory, string, math and printing functions, the kit's own
  helpers and the lab's own functions. Anything else — ``dlopen``/``dlsym`` (a library the lab
  bans, loaded by name), files (``fopen``, streams, ``open``), processes (``fork``, ``kill``,
  ``exit``), the environment, threads, memory protection — is refused;
* **what runs before main()**: an object's constructors (``.init_array``, ``.ctors``,
  ``.preinit_array``) may only be the CUDA registration that nvcc writes
  (``__sti____cudaRegisterAll``) and the set-up of the standard streams that ``#include
  <iostream>`` adds (GCC before 13: it touches nothing but std::ios_base::Init and the object's
  own data); a global object whose constructor calls anything, or a function marked
  ``__attribute__((constructor))``, is refused;
* **raw system calls**: an object may not hold a ``syscall``, ``sysenter`` or ``int $0x80``
  instruction (a system call that no allowlisted function makes).

* **what it includes** (a sealed submission): every file the preprocessor really opened for a
  student object (the build's dependency list: ``ninja -t deps``, or the object's ``.d`` file)
  must be one of the lab's own files (where the student's files were taken from, and the lab's
  given headers in labs/NN_name/), a kit header (common/include/), or a CUDA, C or C++ system
  header. A student file that includes the reference solution, another lab, the grader or any
  other file by path (a macro cannot hide it: this is what was opened) is refused.

A refusal fails every test of the lab without running it, naming the file and what it uses; the
message says what to do instead. What an object calls, runs before main() and holds follows from
its bytes alone, so those findings are kept in the build directory (``kit-inspect-cache/``, one
file per object's SHA-256, this module's own source and the tools' paths): a grade that finds an
object unchanged reads them back instead of running ``nm`` and ``objdump`` again (0.7 s of a
grading's 0.9 s listing phase on an H100), where the kernel has Landlock (files_confined()).
The includes are checked every time: they come from the build's dependency list, not from the
object. Without binutils (``nm``, ``objdump``) the inspection cannot run: that is a note in the
reports and every test fails (nothing is graded uninspected).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .manifest import Lab

TOOL_TIMEOUT_S = 60.0
SHOWN = 6
"""Refusals listed in a message; the rest are counted."""

NVCC_REGISTRATION = "_ZL24__sti____cudaRegisterAllv"
"""The constructor nvcc writes into every .cu object: it registers the object's kernels."""

# Demangled names a student object may need. Each entry is a regular expression matched against
# the whole name (nm -C). Grouped by what they are, so an instructor can see what is allowed.
ALLOWED = {
    "CUDA runtime": [
        r"cuda(?!GetDriverEntryPoint|GetExportTable|Ipc|LibraryLoad|LibraryGet|"
        r"GetFuncBySymbol|ProfilerStart|ProfilerStop|SetValidDevices)[A-Z]\w*",
        r"__cuda\w+", r"__nv\w+", r"__fatbinwrap\w*", r"__device_stub__\w+",
    ],
    "C++ runtime": [
        r"__cxa_(?!atexit\b)\w+", r"__gxx_personality_v0", r"_Unwind_Resume", r"__dso_handle",
        r"__stack_chk_fail", r"_GLOBAL_OFFSET_TABLE_", r"operator (new|delete)(\[\])?\(.*\)",
        r"(typeinfo|typeinfo name|vtable|VTT) for .*", r"__cxa_atexit",
        r"std::terminate\(\)", r"std::_Hash_bytes\(.*\)", r"std::__detail::.*",
        r"atexit",  # nvcc's registration unregisters the object's kernels at exit
    ],
    "C++ standard library": [
        r"std::__throw_\w+\(.*\)",
        r"std::(__cxx11::)?basic_(string|ostringstream|istringstream|stringstream|stringbuf|ostream|"
        r"ios|streambuf)<.*",
        r"std::(__cxx11::)?(to_string|stoi|stol|stoul|stoull|stof|stod)\(.*\)",
        r"std::(invalid_argument|out_of_range|length_error|domain_error|logic_error|range_error|"
        r"overflow_error|underflow_error|runtime_error|exception|bad_alloc|bad_array_new_length|"
        r"bad_function_call|bad_cast)::.*",
        # GCC 13 and later: <iostream> refers to this instead of a constructor of its own.
        r"std::ios_base::.*", r"std::ios_base_library_init\(\)",
        r"std::(cout|cerr|clog|endl)\b.*", r"std::__ostream_insert<.*",
        r"std::ostream::.*", r"std::basic_ostream<.*", r"std::_Rb_tree_\w+\(.*\)",
        r"std::chrono::_V2::(steady|system|high_resolution)_clock::now\(\)",
        r"std::locale::.*", r"std::ctype<char>::.*", r"std::__basic_file<char>::~?__basic_file\(\)",
    ],
    "C library": [
        r"mem(cpy|move|set|cmp|chr)", r"str(len|cmp|ncmp|chr|rchr|str|cpy|ncpy|cat|ncat|toul|tol|"
        r"toll|toull|tod|tof)", r"ato[ifl]", r"(v?s?n?printf|puts|putchar|fputs|fputc|fwrite|fflush)",
        r"std(out|err)", r"(l|ll)?abs", r"(malloc|calloc|realloc|free|aligned_alloc|posix_memalign)",
        r"(qsort|bsearch)", r"__assert_fail", r"abort", r"__errno_location", r"__printf_chk",
        r"__sprintf_chk", r"__snprintf_chk", r"__vsnprintf_chk", r"__fprintf_chk", r"__memcpy_chk",
        r"__memset_chk", r"__memmove_chk", r"__strcpy_chk", r"__strcat_chk", r"__isoc99_sscanf",
        r"(sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|fabs|floor|ceil|trunc|round|lround|"
        r"llround|rint|lrint|nearbyint|fmod|remainder|fma|fmin|fmax|fdim|hypot|sin|cos|tan|asin|"
        r"acos|atan|atan2|sinh|cosh|tanh|erf|erfc|tgamma|lgamma|frexp|ldexp|modf|nan|copysign|"
        r"nextafter|ilogb|logb|scalbn|isnan|isinf|finite)[fl]?",
    ],
    "the kit and the lab": [r"kit::.*", r"lab\d\d(_\w+)?::.*"],
}

_ALLOWED = [re.compile(p) for group in ALLOWED.values() for p in group]

# What a refused name is for, to say what to do instead.
_ADVICE = [
    (re.compile(r"dl(open|sym|vsym|mopen|info|addr|_iterate_phdr|error)\b"),
     "loads code by name at run time (a banned library, say): lab code may not"),
    (re.compile(r"\b(exit|_exit|_Exit|quick_exit|kill|raise|fork|vfork|exec\w*|system|popen|"
                r"getppid|getpid|ptrace|prctl|signal|sigaction)\b"),
     "controls processes: throw an exception to report a problem instead"),
    (re.compile(r"(f?open|open64|openat|creat|fopen64|fdopen|freopen|read|write|pread|pwrite|"
                r"unlink|remove|rename|mkdir|readlink|stat|lstat|access|opendir)\b|"
                r"fstream|filesystem"),
     "uses files: lab code works on the buffers it is given"),
    (re.compile(r"(getenv|secure_getenv|setenv|putenv|unsetenv|environ)\b"),
     "reads the environment: lab code gets everything as arguments"),
    (re.compile(r"(mmap|munmap|mprotect|brk|sbrk|syscall)\b"),
     "changes memory mappings or makes raw system calls"),
    (re.compile(r"pthread|std::thread|socket|connect"), "starts threads or talks to other processes"),
    (re.compile(r"cuda(GetDriverEntryPoint|Ipc|Library|GetExportTable|GetFuncBySymbol)"),
     "reaches CUDA code or memory that is not the lab's own"),
]


@dataclass(frozen=True)
class Refusal:
    where: str
    """The student file the object was compiled from, e.g. labs/01_indexing/indexing.cu."""
    what: str
    """Why, in a few words: "calls `dlsym`", "runs `_GLOBAL__sub_I_x` before main()"."""
    advice: str = ""

    def describe(self) -> str:
        return f"{self.where} {self.what}" + (f" ({self.advice})" if self.advice else "")


@dataclass
class Inspection:
    refusals: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran: bool = False

    def verdict(self) -> tuple[str, str] | None:
        """(reason, message) failing every test of the lab, or None when the objects are fine."""
        if self.ran and not self.refusals:
            return None
        if not self.ran:
            return ("not graded: the student's compiled code could not be inspected",
                    "\n".join(self.notes) or "the inspection did not run")
        lines = [r.describe() for r in self.refusals[:SHOWN]]
        if len(self.refusals) > SHOWN:
            lines.append(f"... and {len(self.refusals) - SHOWN} more")
        lines.append("Lab code may use the CUDA runtime, the C++ standard library, printf and "
                     "the math functions; docs/students.md, 'What lab code may call', says more.")
        first = self.refusals[0]
        return (f"refused before running: {first.where.rsplit('/', 1)[-1]} {first.what}",
                "\n".join(lines))


_RETURN_TYPE = re.compile(r"^[\w:]+(?:<.*?>)?[&*]? (.+\(.*\).*)$")
"""A function template's demangled name starts with its return type: "std::ostream& std::..."."""


def allowed(name: str) -> bool:
    """Whether a student object may need the (demangled) symbol `name`."""
    candidates = [name]
    match = _RETURN_TYPE.match(name)
    if match:
        candidates.append(match.group(1))
    return any(p.fullmatch(c) for p in _ALLOWED for c in candidates)


def advice_for(name: str) -> str:
    for pattern, why in _ADVICE:
        if pattern.search(name):
            return why
    return "not on the list of what lab code may call"


def check(lab: Lab, archive: Path | None, shown: dict[str, str] | None = None,
          include_roots: tuple[Path, ...] = ()) -> Inspection:
    """Inspects the objects of `archive` compiled from the lab's student files.

    `shown` maps a student file name to how to name it in messages (default: the name).
    `include_roots`: the folders a student object may include files from besides the system's
    (see included_outside); none given, the includes are not checked."""
    result = Inspection()
    shown = shown or {}
    if archive is None or not archive.is_file():
        result.notes.append(f"no compiled student library at {archive}")
        return result
    tools = {name: shutil.which(name) for name in ("ar", "nm", "objdump")}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        result.notes.append(f"{', '.join(missing)} not found (binutils): cannot inspect the "
                            "student's code, so it is not graded")
        return result
    students = set(lab.student_files)
    with tempfile.TemporaryDirectory(prefix="kit-inspect-") as tmp:
        try:
            subprocess.run([tools["ar"], "x", str(archive.absolute())], cwd=tmp, check=True,
                           capture_output=True, timeout=TOOL_TIMEOUT_S)
        except (subprocess.SubprocessError, OSError) as err:
            result.notes.append(f"cannot unpack {archive.name}: {err}")
            return result
        objects = sorted(Path(tmp).glob("*.o"))
        build = build_dir_of(archive)
        cache = build / CACHE_DIR if build is not None and files_confined() else None
        inspected = 0
        for obj in objects:
            source = obj.name[:-2]  # "indexing.cu.o" -> "indexing.cu"
            if source not in students:
                continue  # the kit's own code compiled into the lab's library (e.g. device_spec.cpp)
            inspected += 1
            where = shown.get(source, source)
            try:
                result.refusals += inspect_object_cached(obj, where, tools, cache)
                if include_roots:
                    outside = included_outside(archive, obj.name, include_roots)
                    if outside is None:
                        result.notes.append(f"includes of {where} not checked: the build kept no "
                                            "list of the files the compiler opened")
                    for path in outside or []:
                        result.refusals.append(Refusal(
                            where, f"includes {path}",
                            "outside the lab's own files: a lab file may include the lab's "
                            "files, the kit's headers, CUDA and the C++ library"))
            except (subprocess.SubprocessError, OSError) as err:
                result.notes.append(f"cannot inspect {where}: {err}")
                return result
    if inspected == 0 and any(not f.endswith((".h", ".cuh", ".hpp")) for f in students):
        result.notes.append(f"{archive.name} holds no object of the lab's student files")
        return result
    result.ran = True
    return result


CACHE_DIR = "kit-inspect-cache"
"""The folder of the build directory where inspect_object_cached keeps its findings."""

_SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
"""This module's own source: a change to the allowlist or to any check starts a new cache."""


def build_dir_of(path: Path) -> Path | None:
    """The CMake build directory `path` lies in (None outside one)."""
    return next((p for p in path.absolute().parents if (p / "CMakeCache.txt").is_file()), None)


LANDLOCK_CREATE_RULESET = {"x86_64": 444, "aarch64": 444}
"""landlock_create_ruleset's system call number (the same in the generic table and on x86_64)."""


@functools.lru_cache(maxsize=None)
def files_confined() -> bool:
    """Whether this kernel has Landlock (ABI 1 or later), with which the worker's sandbox allows
    it no file writes outside /dev (remote_worker.cu, apply_landlock). Only then is the cache
    trusted: without Landlock, code that passed the inspection in one lab and found a way to
    write files could plant a finding of "no refusal" for another object."""
    number = LANDLOCK_CREATE_RULESET.get(platform.machine())
    if number is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(ctypes.c_long(number), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return False
    return abi >= 1


def inspect_object_cached(obj: Path, where: str, tools: dict[str, str | None],
                          cache: Path | None) -> list[Refusal]:
    """inspect_object, read back from `cache` when an object of the same bytes was inspected
    under the same name, by this same module and tools. A cache file that cannot be read, or
    does not hold a list of refusals, is ignored and written again."""
    if cache is None:
        return inspect_object(obj, where, tools)
    key = hashlib.sha256()
    for part in (_SOURCE_DIGEST, where, json.dumps(sorted(tools.items()))):
        key.update(part.encode() + b"\0")
    key.update(obj.read_bytes())
    path = cache / f"{key.hexdigest()}.json"
    try:
        found = json.loads(path.read_text())
        fields = ("where", "what", "advice")
        if isinstance(found, list) and all(
                isinstance(r, dict) and sorted(r) == sorted(fields) and
                all(isinstance(r[f], str) for f in fields) for r in found):
            return [Refusal(r["where"], r["what"], r["advice"]) for r in found]
    except (OSError, ValueError):
        pass
    refusals = inspect_object(obj, where, tools)
    try:
        cache.mkdir(exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
        partial.write_text(json.dumps([vars(r) for r in refusals]))
        os.replace(partial, path)
    except OSError:
        pass  # no cache: the next grade inspects the object again
    return refusals


def inspect_object(obj: Path, where: str, tools: dict[str, str | None]) -> list[Refusal]:
    refusals: list[Refusal] = []
    for name in constructors(obj, tools["objdump"]):
        if name != NVCC_REGISTRATION and not stream_setup_only(obj, name, tools["objdump"]):
            refusals.append(Refusal(where, f"runs `{demangle(name)}` before main()",
                                    "a global object with a constructor, or a constructor "
                                    "function: compute values inside your functions instead"))
    count = raw_syscalls(obj, tools["objdump"])
    if count:
        refusals.append(Refusal(where, f"contains {count} raw system call instruction(s)",
                                "lab code calls functions, never the kernel directly"))
    for name in undefined_symbols(obj, tools["nm"]):
        if not allowed(name):
            refusals.append(Refusal(where, f"calls `{name}`", advice_for(name)))
    return refusals


SYSTEM_ROOTS = (Path("/usr/include"), Path("/usr/lib/gcc"), Path("/usr/local/cuda"),
                Path("/opt/cuda"))
"""Where system, compiler and CUDA headers live; the CUDA toolkit of the nvcc in use is added."""


def system_roots() -> tuple[Path, ...]:
    roots = list(SYSTEM_ROOTS)
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parents[1])
    for root in list(roots):
        if root.exists():
            roots.append(root.resolve())
    return tuple(roots)


def compiler_roots(build: Path) -> tuple[Path, ...]:
    """The compilers' own header folders, as CMake found them when it configured `build` (a
    compiler installed outside /usr, such as /opt/gcc, keeps its headers beside it)."""
    roots = []
    for info in sorted((build / "CMakeFiles").glob("*/CMake*Compiler.cmake")):
        text = info.read_text(errors="replace")
        for found in re.finditer(r'set\(CMAKE_\w*IMPLICIT_INCLUDE_DIRECTORIES "([^"]*)"\)', text):
            roots += [Path(d).resolve() for d in found.group(1).split(";") if d]
    return tuple(dict.fromkeys(roots))


def included_outside(archive: Path, member: str, roots: tuple[Path, ...]) -> list[str] | None:
    """The files the compiler opened for the archive's object `member` that lie outside `roots`
    and outside the system's header folders; None when the build kept no dependency list."""
    build = build_dir_of(archive)
    library = archive.name[len("lib"):-len(".a")] if archive.name.startswith("lib") else archive.stem
    objects = sorted((archive.parent / "CMakeFiles" / f"{library}.dir").rglob(member))
    if build is None or not objects:
        return None
    deps, base = _dependencies(build, objects[0], archive.absolute().parent)
    if not deps:
        return None
    # As strings: an object has hundreds of dependencies (the CUDA headers), and pathlib's
    # parents take about 0.2 s for one object where a prefix test takes a millisecond.
    allowed = [str(r.resolve()) for r in roots + system_roots() + compiler_roots(build)]
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in allowed)
    skipped = str((build / "CMakeFiles").resolve())
    outside = []
    for dep in deps:
        path = os.path.realpath(os.path.join(base, dep))
        if path == skipped or path.endswith((".o", ".a")):
            continue
        if path not in allowed and not path.startswith(prefixes):
            outside.append(path)
    return sorted(set(outside))


def _dependencies(build: Path, obj: Path, target_dir: Path) -> tuple[list[str], Path]:
    """What the compiler opened for `obj`, and the folder its relative paths start from: ninja's
    log of dependencies (relative to the build directory, where ninja runs the compiler), or the
    .d file, which the Makefile generator's compiler writes in the target's own folder
    (`target_dir`, where the library is), relative to it."""
    depfile = obj.with_name(obj.name + ".d")
    if (build / "build.ninja").is_file() and shutil.which("ninja"):
        text = _run(["ninja", "-C", str(build), "-t", "deps", str(obj.relative_to(build))])
        lines = text.splitlines()[1:]
        return [line.strip() for line in lines if line.strip()], build
    if depfile.is_file():
        text = depfile.read_text(errors="replace").replace("\\\n", " ")
        _, _, files = text.partition(": ")
        return files.split(), target_dir
    return [], build


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, errors="replace",
                          timeout=TOOL_TIMEOUT_S).stdout


def undefined_symbols(obj: Path, nm: str | None) -> list[str]:
    names = []
    for line in _run([nm or "nm", "-u", "-C", str(obj)]).splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            names.append(parts[1].strip())
    return sorted(set(names))


_RELOCATION = re.compile(r"^[0-9a-fA-F]+\s+R_\w+\s+(\S+)")


def function_symbols(obj: Path, objdump: str) -> dict[str, tuple[str, int, int]]:
    """An object's functions: name -> (section, start, size), from its symbol table."""
    functions = {}
    for line in _run([objdump, "-t", str(obj)]).splitlines():
        parts = line.split()
        # "0000000000000000 l     F .text.startup	00000000000000e8 _ZL24__sti____cudaRegisterAllv"
        if len(parts) >= 6 and "F" in parts[1:-3]:
            try:
                functions[parts[-1]] = (parts[-3], int(parts[0], 16), int(parts[-2], 16))
            except ValueError:
                continue
    return functions


def constructors(obj: Path, objdump: str | None) -> list[str]:
    """The functions an object's .init_array, .ctors and .preinit_array entries point at."""
    tool = objdump or "objdump"
    text = _run([tool, "-r", "-j", ".init_array", "-j", ".ctors", "-j", ".preinit_array",
                 str(obj)]) if _has_sections(obj, tool) else ""
    symbols = {(section, start): name
               for name, (section, start, _) in function_symbols(obj, tool).items()}
    targets = []
    for line in text.splitlines():
        match = _RELOCATION.match(line.strip())
        if not match:
            continue
        value = match.group(1)
        section, _, offset = value.partition("+")
        if section.startswith("."):
            targets.append(symbols.get((section, int(offset or "0", 16)), value))
        else:
            targets.append(section)
    return targets


IOSTREAM_SETUP = frozenset({
    "_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__cxa_atexit", "__dso_handle",
    "_ZStL8__ioinit", ".bss", ".data", ".rodata"})
"""What the constructor that `#include <iostream>` puts into every object (GCC before 13) refers
to: std::ios_base::Init, its registration for exit, and the object's own data."""
_STATIC_INIT = "_Z41__static_initialization_and_destruction_0ii"
_CALL_LOCAL = re.compile(r"\bcall\s+[0-9a-f]+ <([^>+]+)>")
_RELOCATED = re.compile(r"^\s*[0-9a-f]+: R_X86_64_\w+\s+([^\s+-]+)")


def stream_setup_only(obj: Path, name: str, objdump: str | None) -> bool:
    """Whether the constructor `name` of `obj` only sets up the standard streams: it (and the
    static-initialisation function it calls) refers to nothing but IOSTREAM_SETUP. A global object
    of the student's own, or any call it makes, is something else."""
    if not name.startswith("_GLOBAL__sub_I_"):
        return False  # a function marked __attribute__((constructor)), say
    tool = objdump or "objdump"
    functions = function_symbols(obj, tool)
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current not in functions:
            return False
        section, start, size = functions[current]
        text = _run([tool, "-dr", "-j", section, f"--start-address={start}",
                     f"--stop-address={start + size}", str(obj)])
        for line in text.splitlines():
            relocated = _RELOCATED.match(line)
            if relocated and relocated.group(1) not in IOSTREAM_SETUP:
                return False
            called = _CALL_LOCAL.search(line)
            if called and not relocated and called.group(1) not in (current, _STATIC_INIT):
                return False
            if called and called.group(1) == _STATIC_INIT:
                todo.append(_STATIC_INIT)
    return True


def _has_sections(obj: Path, objdump: str) -> bool:
    headers = _run([objdump, "-h", str(obj)])
    return any(name in headers for name in (".init_array", ".ctors", ".preinit_array"))


_SYSCALL = re.compile(r"\t(syscall|sysenter|int\s+\$0x80)\b")


def raw_syscalls(obj: Path, objdump: str | None) -> int:
    return len(_SYSCALL.findall(_run([objdump or "objdump", "-d", "--no-show-raw-insn", str(obj)])))


def demangle(name: str) -> str:
    tool = shutil.which("c++filt")
    if tool is None:
        return name
    try:
        return _run([tool, name]).strip() or name
    except (subprocess.SubprocessError, OSError):
        return name
