#!/usr/bin/env bash
# Installs what the CUDA lab kit needs on a Debian or Ubuntu machine that has the CUDA toolkit.
#
#   bash setup.sh            CMake, Ninja, a C++ compiler, GoogleTest, Google Benchmark, ccache,
#                            and the Python package rich (nicer terminal output; optional)
#   bash setup.sh --docs     the same plus Doxygen, doxygen-awesome-css, libjs-mathjax and graphviz,
#                            for the documentation site (Chromium for its screenshots: see
#                            docs/instructors.md)
#
# Only what is missing is installed, from the distribution's packages (they work offline once
# installed). Without the rights to install (not root, and sudo asks for a password) it prints
# the command to give an administrator and exits 1 if something required is missing.
# The kit's own CI (.ci/run) runs this script too, so a missing step here fails CI.
set -euo pipefail

docs=0
for arg in "$@"; do
  case "$arg" in
    --docs) docs=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

required=()   # the kit cannot build without these
optional=()   # it builds without these, with less
command -v cmake >/dev/null || required+=(cmake)
command -v g++ >/dev/null || required+=(g++)
command -v python3 >/dev/null || required+=(python3)
[ -f /usr/include/gtest/gtest.h ] || required+=(libgtest-dev)
command -v ninja >/dev/null || optional+=(ninja-build)
[ -f /usr/include/benchmark/benchmark.h ] || optional+=(libbenchmark-dev)
command -v ccache >/dev/null || optional+=(ccache)
if [ "$docs" = 1 ]; then
  # The site's theme, its formulas (MathJax, served from the site: no network when reading) and
  # Graphviz for the figures. Chromium (docs/screenshots.py) is optional and not installed here.
  command -v doxygen >/dev/null || required+=(doxygen)
  [ -f /usr/share/doxygen-awesome-css/doxygen-awesome.css ] || optional+=(doxygen-awesome-css)
  [ -f /usr/share/javascript/mathjax/MathJax.js ] || optional+=(libjs-mathjax)
  command -v dot >/dev/null || optional+=(graphviz)
fi
python3 -c 'import rich' 2>/dev/null || optional+=(python3-rich)

wanted=("${required[@]}" "${optional[@]}")
if [ ${#wanted[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "setup: missing ${wanted[*]}, and this user cannot install packages (not root; sudo" \
         "needs a password or is not installed). Ask an administrator to run:" >&2
    echo "  sudo apt-get install -y ${wanted[*]}" >&2
    if [ ${#required[@]} -gt 0 ]; then exit 1; fi
    echo "setup: the kit still works without them (plainer output, no benchmarks or cache)." >&2
    wanted=()
  fi
fi
if [ ${#wanted[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "setup: no apt-get here; install ${wanted[*]} with this system's package manager" >&2
    exit 1
  fi
  echo "setup: installing ${wanted[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${wanted[@]}" >/dev/null
fi

# The Debian package serves the system's Python; another python3 (pyenv, a venv) needs its own.
if ! python3 -c 'import rich' 2>/dev/null; then
  python3 -m pip install --quiet --user rich 2>/dev/null || python3 -m pip install --quiet rich \
    2>/dev/null || echo "setup: could not install rich for $(command -v python3): the kit's" \
                         "output will be plainer (everything works)"
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "setup: python3 is $(python3 --version 2>&1); the kit needs 3.10 or newer" >&2; exit 1; }
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | head -n1)" != "3.25" ]; then
  echo "setup: CMake $cmake_version is older than 3.25; try: python3 -m pip install --user cmake" >&2
  exit 1
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc not found: install the CUDA toolkit (12 or newer) and put its bin/ on PATH" >&2
  exit 1
fi
echo "setup: ready (cmake $cmake_version, $(python3 --version 2>&1))"
