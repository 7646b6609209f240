#!/bin/sh
# Runs the test suite of one build variant: plain (build/) or san (build/san/).
# Criterion prints its synthesis line; under the sanitizers any report (a leak found at a
# forked test's exit, a UBSan runtime error) fails the run even if Criterion counted it passed.
variant=${1:-plain}
case "$variant" in
  plain) dir=build ;;
  san) dir=build/san
       export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
       export LSAN_OPTIONS=suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0
       export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
  *) echo "tests/run.sh: unknown variant $variant" >&2; exit 2 ;;
esac
export GP_TEST_BUILD_DIR=$dir
log=$dir/tests/last-run.log
"$dir/tests/gp_tests" --jobs=2 --short-filename 2>&1 | tee "$log"
status=$(grep "Synthesis:" "$log" | tail -n 1 | grep -c "Failing: 0 | Crashing: 0")
if grep -qE "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:|crashed during its setup or teardown" "$log"; then
  echo "tests/run.sh: sanitizer or teardown failure reported above" >&2
  exit 1
fi
[ "$status" = 1 ] || exit 1
