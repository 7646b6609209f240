#!/bin/sh
# Installs headers, libraries, plugins and the command under PREFIX (default /usr/local).
# DESTDIR is honoured for staged installs.
set -e
prefix=${1:-/usr/local}
dest="${DESTDIR:-}$prefix"
install -d "$dest/include" "$dest/lib/pkgconfig" "$dest/lib/graphpass/plugins" "$dest/lib/graphpass/bin" "$dest/bin"
install -m 644 abi/graphpass.h "$dest/include/graphpass.h"
install -m 755 build/lib/libgraphpass.so "$dest/lib/libgraphpass.so"
install -m 644 build/lib/libgraphpass_core.a "$dest/lib/libgraphpass_core.a"
install -m 755 build/plugins/*.so "$dest/lib/graphpass/plugins/"
# the command finds its plugins in <real dir of executable>/../plugins: keep that layout
install -m 755 build/bin/graphpass "$dest/lib/graphpass/bin/graphpass"
ln -sf ../lib/graphpass/bin/graphpass "$dest/bin/graphpass"
sh scripts/gen_pc.sh "$prefix" > "$dest/lib/pkgconfig/graphpass.pc"
echo "installed graphpass under $dest"
