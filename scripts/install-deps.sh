#!/bin/sh
# Installs the Debian 12 packages graphpass builds and tests with (idempotent; needs root).
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for clang (`ninja fuzz`).
set -e
PKGS="gcc clang libclang-rt-14-dev ninja-build pkg-config libffi-dev libdlpack-dev libcriterion-dev valgrind binutils libopenblas-dev protobuf-c-compiler libprotobuf-c-dev graphviz chromium python3 python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel python3-venv python3-sklearn"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: installing$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
