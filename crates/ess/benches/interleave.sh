#!/usr/bin/env bash
# Interleaved wall-clock runs of the steady-churn and find-hit workloads at 2^20 / 50 %:
# every round runs every store once, so the machine's drift (it is shared) hits all of them
# alike; prints, per workload, the median over rounds of hashbrown+FIFO time / ESS time.
# `ess_huge` / `ess_h1_huge` are the h = 2 / h = 1 stores with their tables in 2 MiB pages
# (madvised THP); hashbrown and the other ESS columns stay on whatever the allocator gives
# (4 KiB pages unless THP is `always`).
# HB_THP=1 (root only) adds a fairness column, `hashbrown_fifo_huge`: hashbrown+FIFO run with
# THP switched to `always` for that run alone (hashbrown cannot ask for huge pages itself),
# the setting restored after it and on exit.
#   cargo build --release -p waist-ess --example churn && bash crates/ess/benches/interleave.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${CARGO_TARGET_DIR:-target}/release/examples/churn
N=${N:-10000000}
THP=/sys/kernel/mm/transparent_hugepage/enabled
if [ -n "${HB_THP:-}" ]; then
  THP_WAS=$(sed 's/.*\[\(.*\)\].*/\1/' $THP)
  trap 'echo "$THP_WAS" > $THP' EXIT
  trap 'exit 130' INT TERM   # so an interrupted run restores the setting too
fi
for r in $(seq 1 ${ROUNDS:-7}); do
  for w in churn find_hit; do
    for s in ess ess_huge ess_h1 ess_h1_huge ess_h0.5 hashbrown_fifo; do
      $B $s $w $N 20 50
    done
    if [ -n "${HB_THP:-}" ]; then
      echo always > $THP
      $B hashbrown_fifo_huge $w $N 20 50
      echo "$THP_WAS" > $THP
    fi
    $B ess ${w}_batch $N 20 50
    $B ess_h1 ${w}_batch $N 20 50
    $B ess_huge ${w}_batch $N 20 50
  done
done > ${CARGO_TARGET_DIR:-target}/interleave.out
python3 - <<'PY'
import re, statistics, collections
runs = collections.defaultdict(list)
rounds = []
for line in open(__import__('os').environ.get('CARGO_TARGET_DIR', 'target') + '/interleave.out'):
    m = re.match(r'(\S+) (\S+) .*?([0-9.]+) ns/op', line)
    if not m:
        continue
    store, work, ns = m.group(1), m.group(2), float(m.group(3))
    if not rounds or (store, work) in rounds[-1]:
        rounds.append({})
    rounds[-1][(store, work)] = ns
    runs[(work, store)].append(ns)
print('median ns/op over %d rounds' % len(rounds))
for (work, store), v in sorted(runs.items()):
    print('  %-15s %-15s %7.1f' % (work, store, statistics.median(v)))
print('median over rounds of hashbrown_fifo / ESS (above 1: the ESS is faster)')
for work in ('churn', 'find_hit'):
    for store, w in (('ess', work), ('ess_huge', work), ('ess_h1', work), ('ess_h1_huge', work), ('ess_h0.5', work), ('ess', work + '_batch'), ('ess_huge', work + '_batch'), ('ess_h1', work + '_batch')):
        r = [rd[('hashbrown_fifo', work)] / rd[(store, w)] for rd in rounds if (store, w) in rd and ('hashbrown_fifo', work) in rd]
        print('  %-15s %-9s %5.2f   (%s)' % (w, store, statistics.median(r), ' '.join('%.2f' % x for x in r)))
print('median over rounds of ess / ess_huge (above 1: huge pages are faster)')
for w in ('churn', 'find_hit', 'churn_batch', 'find_hit_batch'):
    r = [rd[('ess', w)] / rd[('ess_huge', w)] for rd in rounds if ('ess', w) in rd and ('ess_huge', w) in rd]
    if r:
        print('  %-15s %5.2f   (%s)' % (w, statistics.median(r), ' '.join('%.2f' % x for x in r)))
for base in ('hashbrown_fifo_huge',):
    for work in ('churn', 'find_hit'):
        for store in ('ess', 'ess_huge', 'ess_h1_huge'):
            r = [rd[(base, work)] / rd[(store, work)] for rd in rounds if (base, work) in rd and (store, work) in rd]
            if r:
                print('  %s / %s %-9s %5.2f   (%s)' % (base, store, work, statistics.median(r), ' '.join('%.2f' % x for x in r)))
hb = sorted(set(re.findall(r'(hashbrown_fifo\S*) .*hashbrown table.s mapping in huge pages: (\d+) KiB', open(__import__('os').environ.get('CARGO_TARGET_DIR', 'target') + '/interleave.out').read())))
print('hashbrown table mappings in huge pages (store, KiB): ' + ', '.join('%s %s' % x for x in hb))
huge = sorted(set(re.findall(r'tables in huge pages: .*', open(__import__('os').environ.get('CARGO_TARGET_DIR', 'target') + '/interleave.out').read())))
print('ess_huge: ' + '; '.join(huge))
PY
