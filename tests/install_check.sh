#!/bin/sh
# tests/install_check.sh [BUILD_DIR] -- out-of-tree use, as a user of an installed graphpass:
#  1. stage an install (scripts/install.sh, what `ninja install` runs) with PREFIX=/opt/gp under a
#     DESTDIR; check the layout, the SONAME, the symlinks, the .pc and the exported symbols;
#  2. build examples/embed.c and examples/plugin/hello_plugin.c with nothing but
#     `pkg-config --cflags --libs graphpass` against the staged tree (PKG_CONFIG_SYSROOT_DIR) and
#     run them: a named plugin, then the default plugins (the installed plugin directory, found
#     from the library, and GRAPHPASS_PLUGIN_PATH); run the installed command;
#  3. the same build against the build tree with its graphpass-uninstalled.pc.
# Prints "install check: ok" or the first failure (exit 1).  Takes a few seconds.
set -u
build=${1:-build}
root=$(pwd)
cc=${CC:-cc}
tmp=$(mktemp -d /tmp/gp_install_check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install check: FAIL: $*" >&2; exit 1; }
run() { "$@" > "$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "$*"; }; }

major=$(sed -n 's/^#define GP_ABI_VERSION_MAJOR \([0-9]*\).*/\1/p' abi/graphpass.h)
minor=$(sed -n 's/^#define GP_ABI_VERSION_MINOR \([0-9]*\).*/\1/p' abi/graphpass.h)
stage=$tmp/stage
pfx=/opt/gp

# ---- 1. the staged install
run sh scripts/install.sh --prefix "$pfx" --destdir "$stage" --build "$build"
top=$stage$pfx
for f in include/graphpass.h lib/libgraphpass.so.$major.$minor lib/graphpass/plugins/libgp_std.so \
         lib/pkgconfig/graphpass.pc bin/graphpass lib/libgraphpass_core.a; do
  [ -f "$top/$f" ] || fail "$top/$f was not installed"
done
[ "$(readlink "$top/lib/libgraphpass.so.$major")" = "libgraphpass.so.$major.$minor" ] || fail "libgraphpass.so.$major is not a symlink to libgraphpass.so.$major.$minor"
[ "$(readlink "$top/lib/libgraphpass.so")" = "libgraphpass.so.$major" ] || fail "libgraphpass.so is not a symlink to libgraphpass.so.$major"
readelf -d "$top/lib/libgraphpass.so.$major.$minor" | grep -q "(SONAME).*\[libgraphpass.so.$major\]" || fail "SONAME is not libgraphpass.so.$major"
grep -qx "prefix=$pfx" "$top/lib/pkgconfig/graphpass.pc" || fail "graphpass.pc: prefix is not $pfx"
grep -rq "$stage" "$top/lib/pkgconfig/graphpass.pc" && fail "graphpass.pc names the DESTDIR"
# exported symbols: the library only graphpass_host_api, every plugin only graphpass_plugin_entry
syms=$(nm -D --defined-only "$top/lib/libgraphpass.so.$major.$minor" | awk '{print $3}' | grep -v '^$' | sort -u)
[ "$syms" = "graphpass_host_api" ] || fail "libgraphpass exports: $syms"
for p in "$top"/lib/graphpass/plugins/*.so; do
  syms=$(nm -D --defined-only "$p" | awk '{print $3}' | grep -v '^$' | sort -u)
  [ "$syms" = "graphpass_plugin_entry" ] || fail "$p exports: $syms"
done
# the command links the host library statically: it needs no libgraphpass at run time
readelf -d "$top/bin/graphpass" | grep -q "NEEDED.*libgraphpass" && fail "bin/graphpass needs libgraphpass.so"
syms=$(nm -D --defined-only "$top/bin/graphpass" | awk '{print $3}' | grep -v '^$')
[ -z "$syms" ] || fail "bin/graphpass exports: $syms"

# `ninja install` runs `sh scripts/install.sh` with PREFIX and DESTDIR from the environment
PREFIX=/opt/gp2 DESTDIR="$tmp/stage2" run sh scripts/install.sh --build "$build"
grep -qx "prefix=/opt/gp2" "$tmp/stage2/opt/gp2/lib/pkgconfig/graphpass.pc" || fail "PREFIX/DESTDIR from the environment"
[ -L "$tmp/stage2/opt/gp2/lib/libgraphpass.so" ] || fail "PREFIX/DESTDIR from the environment: no library"

# ---- 2. building against the staged tree with pkg-config alone
export PKG_CONFIG_PATH="$top/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
unset GRAPHPASS_PLUGIN_PATH
[ "$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=plugindir graphpass)" = "$pfx/lib/graphpass/plugins" ] || fail "plugindir"
flags=$(pkg-config --cflags --libs graphpass) || fail "pkg-config --cflags --libs graphpass"
cflags=$(pkg-config --cflags graphpass)
run $cc -std=c11 -Wall -Wextra -Werror examples/embed.c $flags -o "$tmp/embed"
run $cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden $cflags examples/plugin/hello_plugin.c -o "$tmp/libhello.so"
syms=$(nm -D --defined-only "$tmp/libhello.so" | awk '{print $3}' | grep -v '^$' | sort -u)
[ "$syms" = "graphpass_plugin_entry" ] || fail "hello_plugin exports: $syms"
# the host finds libgraphpass.so.1 in the staged lib (a real install: the linker's path)
export LD_LIBRARY_PATH="$top/lib"
run "$tmp/embed" "$top/lib/graphpass/plugins/libgp_std.so,$tmp/libhello.so" - HelloCountCalls,RemoveUnusedFunctions
grep -q "embed: note: HelloCountCalls: 2 calls in @main" "$tmp/out" || { cat "$tmp/out"; fail "staged: the plugin's note"; }
grep -q "^functions: 1" "$tmp/out" || { cat "$tmp/out"; fail "staged: RemoveUnusedFunctions"; }
# the plugin's rewrite: nn.relu(nn.relu(x)) -> nn.relu(x), so one call is left
printf '#[version = "0.0.5"]\ndef @main(%%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n  nn.relu(nn.relu(%%x))\n}\n' > "$tmp/relu2.relay"
run "$tmp/embed" "$top/lib/graphpass/plugins/libgp_std.so,$tmp/libhello.so" "$tmp/relu2.relay" HelloSquashRelu,HelloCountCalls
grep -q "HelloCountCalls: 1 calls in @main" "$tmp/out" || { cat "$tmp/out"; fail "staged: the plugin's rewrite"; }
# the default plugins: the directory installed beside the library...
cp "$tmp/libhello.so" "$top/lib/graphpass/plugins/"
run "$tmp/embed" - - HelloCountCalls,RemoveUnusedFunctions
nplug=$(ls "$top/lib/graphpass/plugins/"*.so | wc -l)
grep -q "embed: $nplug default plugins" "$tmp/out" || { cat "$tmp/out"; fail "staged: the installed plugin directory ($nplug plugins)"; }
grep -q "HelloCountCalls: 2 calls" "$tmp/out" || { cat "$tmp/out"; fail "staged: default plugin ran"; }
# ...or GRAPHPASS_PLUGIN_PATH instead of it
mkdir "$tmp/p1" "$tmp/p2"
cp "$top/lib/graphpass/plugins/libgp_std.so" "$tmp/p1/" && cp "$tmp/libhello.so" "$tmp/p2/"
rm "$top/lib/graphpass/plugins/libhello.so"
GRAPHPASS_PLUGIN_PATH="$tmp/p1:$tmp/p2" run "$tmp/embed" - - HelloCountCalls
grep -q "HelloCountCalls: 2 calls" "$tmp/out" || { cat "$tmp/out"; fail "GRAPHPASS_PLUGIN_PATH"; }
GRAPHPASS_PLUGIN_PATH="$tmp/nope" "$tmp/embed" - - > "$tmp/out" 2>&1 && fail "a missing GRAPHPASS_PLUGIN_PATH directory is accepted"
grep -q "GRAPHPASS_PLUGIN_PATH: $tmp/nope is not a directory" "$tmp/out" || { cat "$tmp/out"; fail "GRAPHPASS_PLUGIN_PATH error"; }
unset LD_LIBRARY_PATH
# the installed command finds its plugins from where it is
run "$top/bin/graphpass" passes
grep -q "^FuseOps " "$tmp/out" || { cat "$tmp/out"; fail "installed command: no std plugin"; }
run "$top/bin/graphpass" opt examples/resnet_block.relay --opt-level 3 -o /dev/null

# ---- 3. building against the build tree (graphpass-uninstalled.pc)
export PKG_CONFIG_PATH="$root/$build"
unset PKG_CONFIG_SYSROOT_DIR
case "$(pkg-config --cflags graphpass)" in *"$root/abi"*) ;; *) fail "uninstalled .pc: cflags $(pkg-config --cflags graphpass)" ;; esac
flags=$(pkg-config --cflags --libs graphpass) || fail "uninstalled pkg-config"
run $cc -std=c11 -Wall -Wextra -Werror examples/embed.c $flags -o "$tmp/embed_b"
run $cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden $(pkg-config --cflags graphpass) examples/plugin/hello_plugin.c -o "$tmp/libhello_b.so"
run "$tmp/embed_b" "$root/$build/plugins/libgp_std.so,$tmp/libhello_b.so" - HelloCountCalls,RemoveUnusedFunctions
grep -q "HelloCountCalls: 2 calls" "$tmp/out" && grep -q "^functions: 1" "$tmp/out" || { cat "$tmp/out"; fail "build tree"; }
echo "install check: ok (staged $pfx, pkg-config, SONAME libgraphpass.so.$major, exports, plugins by path and by default, uninstalled .pc)"
