#!/usr/bin/env bash
# Runs fuzz targets one after another (never in parallel: shared machines), each on a copy
# of its corpus, and prints one line of figures per target from libFuzzer's final stats.
#   tests/fuzz/campaign.sh BUILD_DIR SECONDS RUNS target...
# RUNS caps the executions (0: no cap); SECONDS caps the time. Work files and logs go to
# ${FUZZ_WORK:-/tmp/fuzz-work}/<target>/; crashes are left there as crash-*. Running a target
# again resumes its work corpus there. The fuzzer runs at nice ${FUZZ_NICE:-19}; an input
# that takes longer than ${FUZZ_TIMEOUT:-10} wall-clock seconds is a finding (raise it on a
# machine whose other work can starve a nice-19 process that long).
set -uo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(realpath "$1")"; secs="$2"; runs="$3"; shift 3
work="${FUZZ_WORK:-/tmp/fuzz-work}"
for t in "$@"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus"
  cp -n "$src/corpus/$t"/* "$dir/corpus/" 2>/dev/null
  dict=()
  [ -f "$src/dict/$t.dict" ] && dict=(-dict="$src/dict/$t.dict")
  limit=()
  [ "$runs" != 0 ] && limit=(-runs="$runs")
  # Targets that ignore inputs past a length (README.md "Running a campaign"): libFuzzer
  # would otherwise grow inputs up to 4096 bytes and spend its executions on early returns.
  case "$t" in
    session) limit+=(-max_len=512) ;;
  esac
  start=$(date +%s)
  # With autogroup scheduling (kernel.sched_autogroup_enabled=1, Debian's default) nice
  # ranks processes only within their session, and each session competes at full weight:
  # the fuzzer gets a session of its own whose autogroup takes the same nice, so it yields.
  (cd "$dir" && setsid --wait sh -c '[ -w /proc/self/autogroup ] && echo "$0" > /proc/self/autogroup; exec "$@"' \
      "${FUZZ_NICE:-19}" nice -n "${FUZZ_NICE:-19}" "$build/tests/fuzz/fuzz-$t" -jobs=1 -workers=1 \
      -max_total_time="$secs" "${limit[@]}" -print_final_stats=1 -timeout="${FUZZ_TIMEOUT:-10}" \
      -rss_limit_mb=2048 -artifact_prefix="$dir/" "${dict[@]}" corpus >/dev/null 2>&1)
  took=$(( $(date +%s) - start ))
  log="$dir/fuzz-0.log"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*')
  crashes=$(ls "$dir" | grep -cE '^(crash|leak|timeout|oom)-')
  echo "$t execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} seconds=$took findings=$crashes"
  mv "$log" "$dir/run-$(date +%H%M%S).log"
done
