#!/bin/sh
# Runs the Python package's pytest suite (python/tests) against build/ (part of `ninja test`).
# It uses Debian's /usr/bin/python3 when there is one (numpy and pytest from apt:
# python3-numpy, python3-pytest; scripts/install-deps.sh installs them), else python3.
# PYTHON=... overrides the interpreter.  `sh tests/run_python.sh san` runs it against build/san.
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
fi
if ! "$py" -c 'import numpy, pytest' 2>/dev/null; then
  echo "tests/run_python.sh: $py lacks numpy or pytest: run 'sh scripts/install-deps.sh' (python3-numpy python3-pytest)" >&2
  exit 1
fi
root=$(pwd)
dir=build
if [ "${1:-plain}" = san ]; then
  # By hand (not part of ninja test-san): the suite against build/san's library with ASan and
  # UBSan preloaded into the interpreter.  Leaks are not checked here (the interpreter's own
  # allocations at exit would drown them); ASan's quarantine makes the RSS bound meaningless.
  dir=build/san
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export GRAPHPASS_TEST_SANITIZED=1
  set -- --deselect python/tests/test_install.py
else
  set --
fi
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export GRAPHPASS_LIBRARY="$root/$dir/lib/libgraphpass.so"
export GRAPHPASS_PLUGIN_PATH="$root/$dir/plugins"
export PYTHONDONTWRITEBYTECODE=1
"$py" -m pytest -q -p no:cacheprovider python/tests "$@"
