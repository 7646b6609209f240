#!/bin/sh
# Installs the Debian 12 packages graphpass builds and tests with (idempotent; needs root).
set -e
PKGS="gcc clang ninja-build pkg-config libffi-dev libdlpack-dev libcriterion-dev valgrind binutils libopenblas-dev protobuf-c-compiler libprotobuf-c-dev python3-numpy python3-sklearn"
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
