#!/bin/sh
# Writes graphpass.pc for a prefix (default /usr/local).
prefix=${1:-/usr/local}
cat <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include
plugindir=\${prefix}/lib/graphpass/plugins

Name: graphpass
Description: graph-level optimization passes for deep-learning compilers (stable C ABI)
Version: 0.1.0
Requires.private: libffi
Libs: -L\${libdir} -lgraphpass
Cflags: -I\${includedir}
PC
