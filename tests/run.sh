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

# Out-of-tree use: a staged install (PREFIX, DESTDIR), a host and a plugin built with pkg-config
# alone against it and against the build tree (graphpass-uninstalled.pc).  The plain build only:
# the sanitizer builds' library needs their runtime to link against.
if [ "$variant" = plain ]; then
  sh tests/install_check.sh "$dir" || exit 1
fi

# The Python package's suite (python/tests; plain build only: the sanitizer runtimes would have to
# be preloaded into the interpreter).
if [ "$variant" = plain ]; then
  sh tests/run_python.sh || { echo "tests/run.sh: the Python suite failed" >&2; exit 1; }
fi

# Whole models against ONNX Runtime (tests/data/models/README.md): models made here, the same
# bytes every time (their hashes are checked), then onnx-test at opt-level 3 and 4 with
# --verify-numerics, each output compared with ONNX Runtime's for the same file.
#   models_check DIR TOLERANCE NAME...: DIR holds NAME.onnx for each NAME; TOLERANCE is
#   onnx-test's --rtol / --atol for all of them (for the passes' numbers too)
models_check() {
  mdir=$1; tol=$2; shift 2
  nmodels=$#
  for m in "$@"; do
    (cd "$mdir" && grep " $m.onnx\$" "$OLDPWD/tests/data/models/SHA256SUMS" | sha256sum --quiet -c -) ||
      { echo "tests/run.sh: $mdir/$m.onnx is not the model tests/data/models/${m}_output_0.pb is for (see its README)" >&2; exit 1; }
    cp "tests/data/models/${m}_output_0.pb" "$mdir/"
  done
  for lvl in 3 4; do
    if "$dir/bin/graphpass" onnx-test "$mdir" --opt-level $lvl --verify-numerics $tol > "$mdir/opt$lvl.log" 2>&1 &&
       tail -n 1 "$mdir/opt$lvl.log" | grep -q "^$nmodels passed, 0 failed" &&
       ! grep -qE "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$mdir/opt$lvl.log"; then
      echo "$* at opt-level $lvl with --verify-numerics ($variant): as ONNX Runtime"
    else
      cat "$mdir/opt$lvl.log" >&2
      echo "tests/run.sh: the whole-model check failed at opt-level $lvl; see $mdir/opt$lvl.log" >&2
      exit 1
    fi
  done
}
# DenseNet-121, a tiny DenseNet, MobileNetV2 and EfficientNet-B0 from bench/gen_model
# (torchvision's architectures, pseudo-random weights; no data needed from outside), also on the
# OPU (plain build only, as the light models below: simulator vs float).  MobileNetV2's outputs
# (up to ~14) move by up to ~7e-5 between runtimes and between a pass's float sums and the
# graph's before it.
gm=$dir/tests/gen_models
mkdir -p "$gm/densenet" "$gm/mobilenet" "$gm/efficientnet"
"$dir/bin/gen_model" densenet "$gm/densenet/densenet121.onnx" > /dev/null &&
  "$dir/bin/gen_model" densenet "$gm/densenet/densenet_tiny.onnx" --blocks 2,3 --growth 4 --init 8 --size 32 --classes 10 > /dev/null &&
  "$dir/bin/gen_model" mobilenet_v2 "$gm/mobilenet/mobilenet_v2.onnx" > /dev/null &&
  "$dir/bin/gen_model" efficientnet_b0 "$gm/efficientnet/efficientnet_b0.onnx" > /dev/null ||
  { echo "tests/run.sh: gen_model failed" >&2; exit 1; }
models_check "$gm/densenet" "--atol 1e-5" densenet121 densenet_tiny
models_check "$gm/mobilenet" "--atol 2e-4" mobilenet_v2
models_check "$gm/efficientnet" "--atol 1e-5" efficientnet_b0
if [ "$variant" = plain ]; then
  for group in "densenet densenet121 densenet_tiny" "mobilenet mobilenet_v2" "efficientnet efficientnet_b0"; do
    set -- $group
    sub=$1; shift
    if ! "$dir/bin/bench_opu" --check --runs 1 "$gm/$sub" "$@" > "$gm/$sub/opu.log" 2>&1; then
      cat "$gm/$sub/opu.log" >&2
      echo "tests/run.sh: the OPU check of $* failed; see $gm/$sub/opu.log" >&2
      exit 1
    fi
  done
  echo "opu densenet121, densenet_tiny, mobilenet_v2 and efficientnet_b0 (simulator vs float): within cosine 0.99 and the same top-1"
fi

# ONNX conformance over ../shared/onnx or $GP_ONNX_DATA (node, simple, light) when it is present: any FAIL fails
# the run (SKIP is allowed: what we do not claim to support).  The light models also run with
# --verify-numerics.
# The data is ONNX's own: the onnx repository's onnx/backend/test/data (node/, simple/, light/);
# GP_ONNX_DATA points at another copy of that directory.
shared=${GP_ONNX_DATA:-$(cd .. && pwd)/shared/onnx}
if [ -d "$shared" ]; then
  clog=$dir/tests/conformance.log
  rc=0
  "$dir/bin/graphpass" onnx-test "$shared/node" "$shared/simple" "$shared/light" --opt-level 3 > "$clog" 2>&1 || rc=$?
  "$dir/bin/graphpass" onnx-test "$shared/light" --opt-level 3 --verify-numerics > "$clog.light" 2>&1 || rc=$?
  # opt-level 4 adds CombineParallelConv2D / Dense / BatchMatmul to the default set
  "$dir/bin/graphpass" onnx-test "$shared/light" --opt-level 4 --verify-numerics > "$clog.light4" 2>&1 || rc=$?
  xfail=$(grep -v '^#' tests/onnx_xfail.txt | grep -v '^$' || true)
  # onnx-test's last line is "N passed, N failed, N skipped": failures listed in
  # tests/onnx_xfail.txt are reported as expected failures, not as failed.
  summary() {
    nx=0
    for f in $(sed -n 's/^FAIL \([^:]*\):.*/\1/p' "$1"); do echo "$xfail" | grep -qx "$f" && nx=$((nx + 1)); done
    tail -n 1 "$1" | awk -v nx="$nx" '/ passed, [0-9]+ failed, / {
        $3 = $3 - nx; if (nx) $2 = "passed, " nx " expected failure" (nx == 1 ? "" : "s") " (tests/onnx_xfail.txt),";
        print; next } { print }'
  }
  echo "onnx conformance ($variant): $(summary "$clog")"
  sed -n 's/^skipped: /  skipped: /p' "$clog"
  echo "onnx light models with --verify-numerics ($variant): $(summary "$clog.light")"
  echo "onnx light models at opt-level 4 with --verify-numerics ($variant): $(summary "$clog.light4")"
  bad=0
  for f in $(cat "$clog" "$clog.light" "$clog.light4" | sed -n 's/^FAIL \([^:]*\):.*/\1/p' | sort -u); do
    if echo "$xfail" | grep -qx "$f"; then echo "expected failure: $f (tests/onnx_xfail.txt)"
    else grep "^FAIL $f:" "$clog" "$clog.light" "$clog.light4" | head -n 1; bad=1; fi
  done
  for f in $xfail; do
    if grep -q "^PASS $f\$" "$clog" "$clog.light"; then echo "tests/run.sh: $f passes now: remove it from tests/onnx_xfail.txt" >&2; bad=1; fi
  done
  if ! tail -n 1 "$clog.light4" | grep -q ' passed, '; then echo "tests/run.sh: the opt-level 4 run did not finish (exit $rc); see $clog.light4" >&2; bad=1; fi
  if grep -qE "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$clog" "$clog.light" "$clog.light4"; then
    echo "tests/run.sh: a sanitizer report in the conformance run; see $clog" >&2; bad=1
  fi
  if ! tail -n 1 "$clog" | grep -q ' passed, '; then echo "tests/run.sh: the conformance run did not finish (exit $rc); see $clog" >&2; bad=1; fi
  [ "$bad" = 0 ] || { echo "tests/run.sh: ONNX conformance failed; see $clog" >&2; exit 1; }
  # three light models with pseudo-random weights in place of their ConstantOfShape nodes
  # (bench/gen_real_weights), against ONNX Runtime
  rw=$dir/tests/real_weights
  mkdir -p "$rw"
  for m in resnet50 inception_v1 squeezenet; do
    "$dir/bin/gen_real_weights" "$shared/light/$m.onnx" "$rw/$m.onnx" > /dev/null ||
      { echo "tests/run.sh: gen_real_weights failed on $m" >&2; exit 1; }
  done
  models_check "$rw" "--atol 1e-5" resnet50 inception_v1 squeezenet
  rm -f "$rw"/*.onnx
  # the light models with random weights on the OPU: simulator vs float (cosine >= 0.99, same
  # top-1); plain build only (the simulator's arithmetic is covered under the sanitizers by the
  # unit tests)
  if [ "$variant" = plain ]; then
    olog=$dir/tests/opu_light.log
    if "$dir/bin/bench_opu" --check --runs 1 "$shared/light" > "$olog" 2>&1; then
      echo "opu light models (simulator vs float): all within cosine 0.99 and the same top-1"
    else
      cat "$olog" >&2
      echo "tests/run.sh: the OPU accuracy check failed; see $olog" >&2
      exit 1
    fi
  fi
else
  echo "onnx conformance, and the light models at opt-level 3 and 4 with --verify-numerics: skipped: $shared is absent (it holds ONNX's test data; see README)"
fi
