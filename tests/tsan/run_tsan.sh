#!/bin/sh
# ThreadSanitizer checks, run by hand from the repository root (after `ninja`, which generates
# the ONNX protobuf code into build/gen):
#   sh tests/tsan/run_tsan.sh [test-file [filter]]
# (defaults: tests/test_registry.c with filter two_threads, all of tests/test_pool.c,
# tests/test_attrs.c, tests/tsan/test_rewrite_threads.c and tests/tsan/test_pipeline_threads.c).
# Builds the host library's code and the standard plugin (build/tsan/plugins/libgp_std.so) with
# -fsanitize=thread into build/tsan/, with Criterion replaced by tests/tsan/criterion_shim.h
# (Criterion aborts under TSan), and runs the filtered tests in-process.  The node pool stays on
# under TSan, so its atomics are checked.
set -e
out=build/tsan
mkdir -p $out/obj $out/plugins
flags="-std=c11 -g -O1 -D_GNU_SOURCE -pthread -fsanitize=thread -fPIC -Iabi -I. -Ibuild/gen"
export out flags
# one object per source, two compilers at a time; prints the object's path
compile() {
  printf '%s\n' "$@" | xargs -P 2 -I{} sh -c 'o=$out/obj/$(echo "{}" | tr / _ | sed "s/\.c$/.o/"); gcc $flags -c "{}" -o "$o" && echo "$o"'
}
core=$(compile common/*.c ir/*.c ir/ops/*.c registry/*.c eval/*.c ffi/*.c plugin/host_api.c plugin/loader.c \
  frontend/onnx/*.c views/*.c build/gen/frontend/onnx/onnx.pb-c.c)
rm -f $out/libcore.a
ar crs $out/libcore.a $core
std=$(compile passes/*.c plugin/std_plugin.c)
gcc -shared -fsanitize=thread -pthread -o $out/plugins/libgp_std.so $std $out/obj/common_scratch.o
libs="-lprotobuf-c -lffi -ldl -lm"
run() { # test-file filter
  name=$(basename "$1" .c)
  gcc $flags -include tests/tsan/criterion_shim.h -c "$1" -o $out/obj/$name.o
  gcc -fsanitize=thread -pthread -o $out/$name $out/obj/$name.o $out/libcore.a $libs
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R $out/$name "$2"
}
if [ $# -gt 0 ]; then
  run "$1" "${2:-}"
else
  run tests/test_registry.c two_threads
  run tests/test_pool.c ""
  run tests/test_attrs.c ""
  run tests/tsan/test_rewrite_threads.c ""
  run tests/tsan/test_pipeline_threads.c ""
fi
