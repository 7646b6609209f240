#!/bin/sh
# ThreadSanitizer checks, run by hand from the repository root:
#   sh tests/tsan/run_tsan.sh [test-file [filter]]
# (defaults: tests/test_registry.c with filter two_threads, and all of tests/test_pool.c,
# tests/test_attrs.c and tests/tsan/test_rewrite_threads.c).  Builds the IR core and registry/ with -fsanitize=thread into build/tsan/, with
# Criterion replaced by tests/tsan/criterion_shim.h (Criterion aborts under TSan), and runs the
# filtered tests in-process.  The node pool stays on under TSan, so its atomics are checked.
set -e
out=build/tsan
mkdir -p $out/obj
flags="-std=c11 -g -O1 -D_GNU_SOURCE -pthread -fsanitize=thread -Iabi -I."
objs=""
for f in common/*.c ir/*.c ir/ops/*.c registry/*.c eval/*.c; do
  o=$out/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
  gcc $flags -c "$f" -o "$o"
  objs="$objs $o"
done
rm -f $out/libcore.a
ar crs $out/libcore.a $objs
run() { # test-file filter
  name=$(basename "$1" .c)
  gcc $flags -include tests/tsan/criterion_shim.h -c "$1" -o $out/obj/$name.o
  gcc -fsanitize=thread -pthread -o $out/$name $out/obj/$name.o $out/libcore.a -lffi -ldl -lm
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R $out/$name "$2"
}
if [ $# -gt 0 ]; then
  run "$1" "${2:-}"
else
  run tests/test_registry.c two_threads
  run tests/test_pool.c ""
  run tests/test_attrs.c ""
  run tests/tsan/test_rewrite_threads.c ""
fi
