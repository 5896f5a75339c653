#!/usr/bin/env bash
# Interleaved wall-clock runs of examples/esp_batch: a batch of ESP COUNT frames through
# Node::handle_packet one call each against Node::handle_packets (which warms the batch's
# ESS lookups first), at 2^20 bindings 50 % full. Every round runs both, so the machine's
# drift (it is shared) hits them alike; prints, per workload, the median over rounds of
# single time / batch time (above 1: batching is faster).
#   cargo build --release -p waist-node --example esp_batch && bash crates/node/benches/esp_batch.sh
# ROUNDS (default 7), N frames per run (default 3·10^6), LOC (central or all), BATCH (32).
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${CARGO_TARGET_DIR:-target}/release/examples/esp_batch
OUT=${CARGO_TARGET_DIR:-target}/esp_batch.out
N=${N:-3000000}
for r in $(seq 1 ${ROUNDS:-7}); do
  for w in churn hit; do
    for m in single batch; do
      $B $m $w $N 20 50 ${LOC:-central} ${BATCH:-32}
    done
  done
done > "$OUT"
python3 - "$OUT" <<'PY'
import re, statistics, collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) .*?([0-9.]+) ns/frame', line)
    if m:
        runs[(m.group(2), m.group(1))].append(float(m.group(3)))
print('median ns/frame over rounds')
for (work, mode), v in sorted(runs.items()):
    print('  %-6s %-7s %7.1f' % (work, mode, statistics.median(v)))
print('median over rounds of single / batch (above 1: batching is faster)')
for work in ('churn', 'hit'):
    r = [s / b for s, b in zip(runs[(work, 'single')], runs[(work, 'batch')])]
    print('  %-6s %5.2f   (%s)' % (work, statistics.median(r), ' '.join('%.2f' % x for x in r)))
PY
