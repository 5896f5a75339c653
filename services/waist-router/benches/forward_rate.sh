#!/usr/bin/env bash
# Forwarding rate and CPU cost of one device on loopback UDP: the relay (the I/O path's
# ceiling: recvmmsg + GRO in, GSO out, no decision; and the plain one-datagram-a-call relay)
# against waist-router (plain IP; ESP and SNAP on: plain IP, ESP COUNT on every packet, a
# SNAP ping on every packet), at 64 and 1400 bytes. Same run, same machine.
#
#   bash services/waist-router/benches/forward_rate.sh [SECONDS]     (default 3)
#   PPS=0 bash …          generator flat out
#   PPS=500000 bash …     this rate at both sizes
#   BURST=8 bash …        8 datagrams a GSO sendmsg from the generator (default: 64, or as
#                         many as fit 64 KB: 46 at 1400 B)
#
# Placement: the device under test alone on CPU 1 (taskset -c 1), the generator and the sink
# on CPU 0. The generator is paced (it sleeps between GSO runs, so it cannot starve the
# sink on its core, nor flood the device past what it can take); default PPS: 1,500,000 at
# 64 B and 800,000 at 1400 B, above what the relay needs a whole core for at neither size
# on this VM, within what generator and sink sustain on one core.
#
# Method, per row:
#   * the device starts, then the sink; the script reads the device's CPU time, runs the
#     generator for SECONDS, waits for the sink (which counts every datagram from the first
#     until none came for 0.5 s), and reads the device's CPU time again. The device is idle
#     (blocked in epoll) before the first and after the last packet, so the CPU window holds
#     all the work of exactly the packets the sink counted.
#   * device CPU time = the first field of /proc/PID/task/*/schedstat (ns on the CPU, every
#     thread), plus that of ksoftirqd/1: the loopback delivery of what the device sends runs
#     as softirq on CPU 1, in the device's system call (charged to it: this kernel has no
#     IRQ_TIME_ACCOUNTING) or, under load, deferred to ksoftirqd/1. (Delivery into the
#     device's socket runs on the generator's CPU and is not counted.)
#   * columns: sent pps (generator), delivered pps (sink: total / first-to-last datagram),
#     lost (sent but not delivered), drops in/sk (the kernel's queue-full drops at the
#     device's input socket and at the sink's, from /proc/net/udp: diagnostics, counted in
#     skbs, so a GRO socket's drop is a whole run of up to 64 datagrams), device CPU µs per delivered packet, Mpps per core
#     (delivered packets / device CPU seconds), and the ratio of Mpps per core to the
#     reference: the relay (GRO+GSO) at the same size for waist-router's plain IP rows, plain
#     IP through the same ESP+SNAP config for the ESP COUNT and SNAP rows.
# Goals (issue 30): >= 1 Mpps per core at 64 and 1400 B; >= 0.9x the relay; ESP COUNT on every
# packet >= 0.9x plain forwarding.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
SECS="${1:-3}"
cargo build --release -q -p waist-router --bin waist-router --example forward_rate
BIN=target/release/examples/forward_rate
ROUTER=target/release/waist-router
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
G=127.0.0.1:47001; IN=127.0.0.1:47002; OUT=127.0.0.1:47003; S=127.0.0.1:47004
KSOFTIRQD=$(pgrep -x ksoftirqd/1 || true)

router_config() { # [extra sections]
    cat > "$TMP/r.toml" <<TOML
[node]
name = "dut"
addresses = ["10.0.0.1"]
${1:-}
[[link]]
name = "in"
kind = "udp"
local = "$IN"
peer = "$G"
[[link]]
name = "out"
kind = "udp"
local = "$OUT"
peer = "$S"
[[route]]
prefix = "10.2.0.0/16"
link = "out"
TOML
}

udp_drops() { # PORT: the kernel's queue-full drops at the IPv4 UDP socket bound to it
    awk -v p="$(printf ':%04X' "$1")" 'substr($2, length($2) - 4) == p { d = $NF } END { print d + 0 }' \
        /proc/net/udp
}

cpu_ns() { # PID: ns on the CPU of all its threads, plus ksoftirqd/1's
    local total=0 ns _ f
    for f in /proc/"$1"/task/*/schedstat ${KSOFTIRQD:+/proc/$KSOFTIRQD/schedstat}; do
        read -r ns _ < "$f" && total=$((total + ns))
    done
    echo "$total"
}

# measure KEY LABEL REF command...: one row (KIND: udp, esp or snap). REF is the KEY of the
# row whose Mpps per core this one is compared with (empty: none).
measure() {
    local key=$1 label=$2 ref=$3; shift 3
    taskset -c 1 "$@" >"$TMP/dut.log" 2>&1 &
    local dut=$!
    sleep 0.5
    if ! kill -0 "$dut" 2>/dev/null; then
        printf '%-32s %5s  device failed: %s\n' "$label" "$SIZE" "$(tail -1 "$TMP/dut.log")"
        wait "$dut" || true
        return
    fi
    taskset -c 0 $BIN sink $S "$SECS" > "$TMP/sink" &
    local sink=$!
    sleep 0.2
    local c0; c0=$(cpu_ns $dut)
    taskset -c 0 $BIN gen $IN $G "$SIZE" "$SECS" "${KIND:-udp}" --pps "$RATE" \
        ${BURST:+--burst "$BURST"} > "$TMP/gen"
    wait $sink
    local c1; c1=$(cpu_ns $dut)
    local indrops; indrops=$(udp_drops "${IN##*:}")
    kill $dut 2>/dev/null; wait $dut 2>/dev/null || true
    local refv=""; [[ -n $ref && -f "$TMP/mpc.$ref.$SIZE" ]] && refv=$(cat "$TMP/mpc.$ref.$SIZE")
    # gen: sent N secs S pps P burst B; sink: total N secs S pps P
    read -r _ sent _ _ _ gpps _ _ < "$TMP/gen"
    read -r _ total _ _ _ spps _ sinkdrops < "$TMP/sink"
    awk -v l="$label" -v sz="$SIZE" -v gpps="$gpps" -v spps="$spps" -v sent="$sent" \
        -v total="$total" -v ns=$((c1 - c0)) -v refv="$refv" -v ref="$ref" -v drops="$indrops/$sinkdrops" \
        -v out="$TMP/mpc.$key.$SIZE" 'BEGIN {
        lost = sent > 0 ? 100 * (sent - total) / sent : 0
        us = total > 0 ? ns / 1000 / total : 0
        mpc = ns > 0 ? total / (ns / 1e9) / 1e6 : 0
        print mpc > out
        r = refv > 0 ? sprintf("%.2fx %s", mpc / refv, ref) : ""
        printf "%-32s %5d %10.0f %10.0f %5.1f%% %11s %8.3f %9.2f  %s\n", l, sz, gpps, spps, lost, drops, us, mpc, r
    }'
}

printf '%-32s %5s %10s %10s %6s %11s %8s %9s  %s\n' device bytes "sent pps" "recv pps" lost \
    "drops in/sk" "µs/pkt" Mpps/core ratio
for SIZE in 64 1400; do
    if [[ -n ${PPS:-} ]]; then RATE=$PPS; elif ((SIZE < 512)); then RATE=1500000; else RATE=800000; fi
    KIND=udp
    measure relay "relay (GRO+GSO)" "" $BIN relay $IN $G $OUT $S
    measure plain "relay (plain)" relay $BIN relay $IN $G $OUT $S --plain
    router_config; measure router "waist-router" relay $ROUTER --config "$TMP/r.toml"
    # The same router with ESP and SNAP on: plain IP, then every packet ESP COUNT / a SNAP ping.
    router_config "$(printf '[esp]\nrate = 10000\nkey_seed = 1\n[snap]\n')"
    KIND=udp; measure IP "waist-router, ESP+SNAP on: IP" relay $ROUTER --config "$TMP/r.toml"
    KIND=esp; measure esp "  ESP COUNT on every packet" IP $ROUTER --config "$TMP/r.toml"
    KIND=snap; measure snap "  SNAP ping on every packet" IP $ROUTER --config "$TMP/r.toml"
done
