#!/bin/sh
# Writes a pkg-config file for graphpass to stdout.
#   sh scripts/gen_pc.sh PREFIX                 graphpass.pc of a tree installed under PREFIX
#                                               (scripts/install.sh writes it to <libdir>/pkgconfig)
#   sh scripts/gen_pc.sh --uninstalled BUILDDIR graphpass-uninstalled.pc for building against the
#                                               build tree (run from the repository root):
#                                               PKG_CONFIG_PATH=build pkg-config --cflags --libs graphpass
# Variables: prefix, libdir, includedir, plugindir (where plugins go: the library loads every
# plugin there with GPHostAPI.plugins_load_default), abi_version.
set -e
hdr=$(dirname "$0")/../abi/graphpass.h
major=$(sed -n 's/^#define GP_ABI_VERSION_MAJOR \([0-9]*\).*/\1/p' "$hdr")
minor=$(sed -n 's/^#define GP_ABI_VERSION_MINOR \([0-9]*\).*/\1/p' "$hdr")
if [ "$1" = "--uninstalled" ]; then
  build=${2:-build}
  root=$(pwd)
  cat <<PC
# graphpass in the build tree $root/$build (not installed)
prefix=$root
libdir=\${prefix}/$build/lib
includedir=\${prefix}/abi
plugindir=\${prefix}/$build/plugins
abi_version=$major.$minor

Name: graphpass
Description: graph-level optimization passes for deep-learning compilers (stable C ABI), uninstalled build tree
Version: 0.1.0
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lgraphpass
Cflags: -I\${includedir}
PC
  exit 0
fi
prefix=${1:-/usr/local}
cat <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include
plugindir=\${libdir}/graphpass/plugins
abi_version=$major.$minor

Name: graphpass
Description: graph-level optimization passes for deep-learning compilers (stable C ABI)
Version: 0.1.0
Libs: -L\${libdir} -lgraphpass
Cflags: -I\${includedir}
PC
