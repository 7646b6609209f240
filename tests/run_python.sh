#!/bin/sh
# Runs the Python package's pytest suite (python/tests) against build/ (part of `ninja test`).
# It uses Debian's /usr/bin/python3 when there is one (numpy and pytest from apt:
# python3-numpy, python3-pytest; scripts/install-deps.sh installs them), else python3.
# PYTHON=... overrides the interpreter.
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
fi
if ! "$py" -c 'import numpy, pytest' 2>/dev/null; then
  echo "tests/run_python.sh: $py lacks numpy or pytest: run 'sh scripts/install-deps.sh' (python3-numpy python3-pytest)" >&2
  exit 1
fi
root=$(pwd)
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export GRAPHPASS_LIBRARY="$root/build/lib/libgraphpass.so"
export GRAPHPASS_PLUGIN_PATH="$root/build/plugins"
export PYTHONDONTWRITEBYTECODE=1
"$py" -m pytest -q -p no:cacheprovider python/tests
