#!/bin/sh
# Runs the test suite of one build variant: plain (build/) or san (build/san/).
# Criterion prints its synthesis line last.
variant=${1:-plain}
case "$variant" in
  plain) dir=build ;;
  san) dir=build/san
       export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
       export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
  *) echo "tests/run.sh: unknown variant $variant" >&2; exit 2 ;;
esac
export GP_TEST_BUILD_DIR=$dir
exec "$dir/tests/gp_tests" --jobs=2 --short-filename
