#!/bin/sh
# `ninja fuzz`: runs every libFuzzer harness (build/fuzz/bin/fuzz_*) for a bounded number of
# executions, starting from its checked-in seed corpus (tests/fuzz/corpus/<name>/), the
# reproducers of past findings (tests/data/repro/<kind>/, tests/fuzz/regress/<name>/: each is
# run first, so a regression fails at once) and the inputs this run finds (a scratch directory
# under build/fuzz/work/, discarded).  Any crash, sanitizer report, leak or timeout fails.
#   GP_FUZZ_RUNS   executions per harness (default: relay, numerics and pipeline 200000, graphs
#                  and opu 2000 (each builds, types, evaluates and optimizes or compiles and
#                  simulates a graph), onnx 300000,
#                  pattern, npy, params and value 500000: with the build, about 4 minutes in all on
#                  the CI machine)
#   GP_FUZZ_ONLY   run just this harness (e.g. relay)
#   GP_FUZZ_SEED   libFuzzer's seed (default 1: a CI run is the same run every time, so it fails
#                  on a change, not on luck; long runs by hand below explore with random seeds)
# A longer run of one harness by hand (what the README's numbers come from):
#   build/fuzz/bin/fuzz_relay -jobs=1 -max_total_time=600 -max_len=4096 build/fuzz/work/relay \
#       tests/fuzz/corpus/relay tests/data/repro/relay tests/fuzz/regress/relay
set -e
cd "$(dirname "$0")/../.."
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for h in relay numerics graphs opu onnx pipeline pattern npy params value; do
  [ -n "$GP_FUZZ_ONLY" ] && [ "$GP_FUZZ_ONLY" != "$h" ] && continue
  bin=build/fuzz/bin/fuzz_$h
  work=build/fuzz/work/$h
  rm -rf "$work" && mkdir -p "$work" tests/fuzz/regress/$h
  dirs="tests/fuzz/corpus/$h tests/fuzz/regress/$h"
  extra=
  case $h in
    relay) dirs="$dirs tests/data/repro/relay"; maxlen=4096 ;;
    numerics) # the passes' golden inputs too: graphs each pass rewrites
      dirs="tests/fuzz/corpus/relay tests/fuzz/regress/$h tests/data/repro/relay"
      for d in simplify_expr fold_scale_axis combine_parallel flatten_atrous_conv convert_layout passes fusion; do
        dirs="$dirs tests/data/$d"
      done
      maxlen=4096 ;;
    onnx) dirs="$dirs tests/data/repro/onnx"; maxlen=8192 ;;
    npy) dirs="$dirs tests/data/repro/npy"; maxlen=512 ;;
    params) maxlen=4096 ;;
    graphs) maxlen=512; extra=-len_control=0 ;; # every byte is a choice: long inputs from the start
    opu) dirs="tests/fuzz/corpus/graphs tests/fuzz/regress/$h"; maxlen=512; extra=-len_control=0 ;; # graph_gen.h's graphs
    *) maxlen=512 ;;
  esac
  case $h in relay|numerics|pipeline) runs=${GP_FUZZ_RUNS:-200000} ;; graphs|opu) runs=${GP_FUZZ_RUNS:-2000} ;; onnx) runs=${GP_FUZZ_RUNS:-300000} ;; *) runs=${GP_FUZZ_RUNS:-500000} ;; esac
  log=build/fuzz/work/$h.log
  start=$(date +%s)
  if "$bin" -runs="$runs" -seed="${GP_FUZZ_SEED:-1}" -max_len=$maxlen $extra -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
       -artifact_prefix=build/fuzz/work/$h- -print_final_stats=1 "$work" $dirs > "$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz $h: ok, $execs executions in $(($(date +%s) - start)) s"
  else
    tail -n 40 "$log"
    echo "fuzz $h: FAILED (log $log; the input is build/fuzz/work/$h-*)" >&2
    status=1
  fi
done
exit $status
