#!/bin/sh
# Installs graphpass:
#   sh scripts/install.sh [--prefix P] [--destdir D] [--build DIR]
# or through ninja, with the same settings from the environment:
#   PREFIX=/opt/gp DESTDIR=/tmp/stage ninja install
# PREFIX defaults to /usr/local; DESTDIR (default empty) is prepended to every installed path but
# not written into any file (staged installs, packaging).  DIR is the build tree (default build).
# Layout under $DESTDIR$PREFIX:
#   include/graphpass.h                   the ABI (it includes <dlpack/dlpack.h>: libdlpack-dev)
#   lib/libgraphpass.so.M.m               SONAME libgraphpass.so.M, with the symlinks
#   lib/libgraphpass.so.M, lib/libgraphpass.so
#   lib/libgraphpass_core.a               the host library, static
#   lib/graphpass/plugins/*.so            the plugins (pkg-config --variable=plugindir graphpass);
#                                         found by the library and the command from where they are
#   lib/pkgconfig/graphpass.pc            prefix=PREFIX
#   bin/graphpass                         the command (links the host library statically)
set -e
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
destdir=${DESTDIR:-}
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --destdir) destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#--destdir=}; shift ;;
    --build) build=$2; shift 2 ;;
    *) echo "scripts/install.sh: unknown argument '$1' (usage: install.sh [--prefix P] [--destdir D] [--build DIR])" >&2; exit 2 ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) echo "scripts/install.sh: the prefix must be an absolute path, not '$prefix'" >&2; exit 2 ;;
esac
major=$(sed -n 's/^#define GP_ABI_VERSION_MAJOR \([0-9]*\).*/\1/p' abi/graphpass.h)
minor=$(sed -n 's/^#define GP_ABI_VERSION_MINOR \([0-9]*\).*/\1/p' abi/graphpass.h)
sofile=libgraphpass.so.$major.$minor
for f in "$build/lib/$sofile" "$build/lib/libgraphpass_core.a" "$build/bin/graphpass" "$build/plugins/libgp_std.so"; do
  [ -f "$f" ] || { echo "scripts/install.sh: $f is missing: run ninja first" >&2; exit 1; }
done
dest="$destdir$prefix"
install -d "$dest/include" "$dest/lib/pkgconfig" "$dest/lib/graphpass/plugins" "$dest/bin"
install -m 644 abi/graphpass.h "$dest/include/graphpass.h"
install -m 755 "$build/lib/$sofile" "$dest/lib/$sofile"
ln -sf "$sofile" "$dest/lib/libgraphpass.so.$major"
ln -sf "libgraphpass.so.$major" "$dest/lib/libgraphpass.so"
install -m 644 "$build/lib/libgraphpass_core.a" "$dest/lib/libgraphpass_core.a"
install -m 755 "$build"/plugins/*.so "$dest/lib/graphpass/plugins/"
# an earlier layout kept the command in lib/graphpass/bin behind a symlink
rm -f "$dest/bin/graphpass" "$dest/lib/graphpass/bin/graphpass"
rmdir "$dest/lib/graphpass/bin" 2>/dev/null || true
install -m 755 "$build/bin/graphpass" "$dest/bin/graphpass"
sh scripts/gen_pc.sh "$prefix" > "$dest/lib/pkgconfig/graphpass.pc"
echo "installed graphpass under $dest (prefix $prefix)"
