#!/usr/bin/env bash
# Runs every fuzz target built by build.sh for FUZZ_SECONDS (default 60) each, from its seed
# corpus (Tests/fuzz/seeds/NAME, grown in .build/fuzz/corpus/NAME), with the HTTP dictionary for
# the HTTP targets. Any crash, leak, timeout or out-of-memory fails the run; its input is kept in
# .build/fuzz/artifacts/NAME/ (add it to the seeds as a regression case once fixed).
set -uo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
FUZZ=.build/fuzz
failed=0
printf '%-14s %12s %10s %8s %s\n' target executions exec/s cov result
for binary in "$FUZZ"/bin/*; do
  name=$(basename "$binary")
  corpus=$FUZZ/corpus/$name
  artifacts=$FUZZ/artifacts/$name/
  mkdir -p "$corpus" "$artifacts"
  [ -d "Tests/fuzz/seeds/$name" ] && cp -n Tests/fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null
  dict=()
  case $name in http_*|chunked_*) dict=(-dict=Tests/fuzz/http.dict) ;; esac
  log=$FUZZ/$name.log
  ASAN_OPTIONS=detect_leaks=1 "$binary" "$corpus" "${dict[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  result=ok
  if [ $rc -ne 0 ]; then result="FAILED (rc $rc, see $log)"; failed=1; fi
  printf '%-14s %12s %10s %8s %s\n' "$name" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$result"
done
exit $failed
