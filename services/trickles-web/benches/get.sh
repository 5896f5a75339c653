#!/usr/bin/env bash
# trickles-get of one 100 MB file on loopback: two builds of trickles-web/trickles-get
# compared in one run, alternating (A, B, A, B, …), each server and its client pinned to
# their own CPU.
#
#   A=/tmp/before-target/release B=target/release bash services/trickles-web/benches/get.sh
#
# (for example A from `git worktree add /tmp/before REV` and
# `CARGO_TARGET_DIR=/tmp/before-target cargo build --release -p trickles-web` there).
# Prints one line per transfer (MB/s, the client's and the server's CPU seconds), then the
# medians. Environment: ROUNDS (7), NICE (0; e.g. -15 to stand out from other load, root).
set -euo pipefail

A=${A:?A=DIR holding one build of trickles-web and trickles-get}
B=${B:?B=DIR holding the other build}
ROUNDS=${ROUNDS:-7}
NICE=${NICE:-0}
tmp=$(mktemp -d /tmp/get-bench.XXXXXX)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ "$(nproc)" -ge 2 ]; then cpus=(0 1); else cpus=(0 0); fi
mkdir -p "$tmp/www"
head -c 100000000 /dev/urandom >"$tmp/www/big"
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }

run() { # NAME DIR
    local bin=$2 c0 c1 line
    nice -n "$NICE" taskset -c "${cpus[0]}" "$bin/trickles-web" --root "$tmp/www" \
        --keys "$tmp/keys" --listen udp:127.0.0.1:0 >"$tmp/ready" 2>"$tmp/web.log" &
    pid=$!
    for _ in $(seq 200); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
    local udp
    udp=$(grep -o 'udp=[^ ]*' "$tmp/ready" | cut -d= -f2)
    c0=$(cpu "$pid")
    line=$( { /usr/bin/time -f "client_cpu=%e %U %S" nice -n "$NICE" \
        taskset -c "${cpus[1]}" "$bin/trickles-get" "trickles://$udp/big" -o /dev/null; } 2>&1 |
        tr '\n' ' ')
    c1=$(cpu "$pid")
    kill "$pid"
    wait "$pid" || true
    pid=
    rm -f "$tmp/ready"
    local mbs client
    mbs=$(echo "$line" | grep -o '[0-9.]* MB/s' | cut -d' ' -f1)
    client=$(echo "$line" | grep -o 'client_cpu=.*' | awk '{printf "%.2f", $2 + $3}')
    echo "$1 $mbs MB/s client_cpu=$client server_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b - a}')"
}

for _ in $(seq "$ROUNDS"); do
    run A "$A"
    run B "$B"
done | tee "$tmp/rows"
for v in A B; do
    grep "^$v " "$tmp/rows" | awk -v v="$v" '
        { mbs[NR] = $2; c[NR] = substr($4, 12); s[NR] = substr($5, 12) }
        function median(x, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
            return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
        }
        END { printf "%s median: %.1f MB/s, client %.2f s CPU, server %.2f s CPU (%d runs)\n", v, median(mbs, NR), median(c, NR), median(s, NR), NR }'
done
