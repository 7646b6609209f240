#!/bin/sh
# ThreadSanitizer check of the registry (run by hand from the repository root):
#   sh tests/tsan/run_registry_tsan.sh [test-filter]      (default filter: two_threads)
# Builds the IR core, registry/ and tests/test_registry.c with -fsanitize=thread into
# build/tsan/ (Criterion replaced by tests/tsan/criterion_shim.h) and runs the filtered tests.
set -e
out=build/tsan
mkdir -p $out/obj
flags="-std=c11 -g -O1 -D_GNU_SOURCE -pthread -fsanitize=thread -Iabi -I."
objs=""
for f in ir/*.c ir/ops/*.c registry/*.c; do
  o=$out/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
  gcc $flags -c "$f" -o "$o"
  objs="$objs $o"
done
rm -f $out/libcore.a
ar crs $out/libcore.a $objs
gcc $flags -include tests/tsan/criterion_shim.h -c tests/test_registry.c -o $out/obj/test_registry.o
gcc -fsanitize=thread -pthread -o $out/test_registry $out/obj/test_registry.o $out/libcore.a -lffi -ldl -lm
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" setarch "$(uname -m)" -R $out/test_registry "${1:-two_threads}"
