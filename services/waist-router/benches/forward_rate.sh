#!/usr/bin/env bash
# Forwarding rate and CPU cost per packet of one device on loopback UDP: the relay (no
# decision at all; the ceiling does recvmmsg + GRO in and GSO out, as a good router does; the
# plain relay one datagram a system call) against waist-router (plain IP; with ESP and SNAP
# on: plain IP, ESP COUNT on every packet, a SNAP ping on every packet), at 64 and 1400
# bytes. All rows in one run on one machine: compare within a run.
#
#   bash services/waist-router/benches/forward_rate.sh [SECONDS]    (default 3 s a row)
#   PPS=0 bash …        the generator flat out
#   PPS=500000 bash …   this rate at both sizes
#   BURST=8 bash …      8 datagrams a GSO sendmsg from the generator (default: 64, and
#                       46 at 1400 B, as many as fit 64 KB)
#   RT=0 bash …         no real-time priorities (see Placement)
#   ROUNDS=5 bash …     every row 5 times, alternated (all rows of a size, then again), and
#                       a closing table of medians: Mpps/core and the per-round ratios
#
# Placement: the device under test alone on CPU 1 (taskset -c 1), the generator and the sink
# on CPU 0. The generator is paced (it sleeps between GSO runs on a fixed schedule; after a
# stall of its own it restarts the schedule rather than send more than 1 ms of traffic at
# once) so it cannot starve the sink on its core nor bury the device. The relay asks for
# the router's socket buffers (netio::link::SOCKET_BUFFER, 4 MiB). Default PPS: 1,500,000 at 64 B and
# 800,000 at 1400 B (the relay needs about half of CPU 1 for that; generator and sink keep up
# on CPU 0). Other work on the machine (a build on both cores) preempts the device for
# milliseconds and its socket overflows, so, as root, the device runs SCHED_FIFO 10, the sink
# 20 and the generator 10 (chrt; RT=0 turns it off): the device has its core whenever it has
# work, and the sink preempts the generator. Real-time throttling (95%) keeps the machine
# usable even flat out.
#
# Method, per row:
#   * start the device, then the sink; read the device's CPU time; run the generator for
#     SECONDS; wait for the sink, which counts every datagram from the first until none came
#     for 0.5 s; read the device's CPU time again. The device is idle (blocked in epoll)
#     before the first packet and after the last, so the window holds the device's work on
#     exactly the packets the sink counted (and on those it dropped itself).
#   * device CPU time = the first field of /proc/PID/task/*/schedstat (ns on a CPU, summed
#     over its threads) plus that of ksoftirqd/1: the loopback delivery of what the device
#     sends runs as softirq on CPU 1, inside the device's sendmsg (charged to the device:
#     this kernel has no IRQ_TIME_ACCOUNTING) or, when deferred, in ksoftirqd/1. Delivery
#     into the device's socket runs on the generator's CPU and is not counted.
#   * columns: sent pps (generator), recv pps (sink: its total over first-to-last datagram),
#     lost (sent, not received), drops in/sk (the kernel's queue-full drops at the device's
#     input socket / at the sink's, from /proc/net/udp; a diagnostic counted in skbs, so on a
#     GRO socket one drop is a whole run of up to 64 datagrams), µs/pkt (device CPU time per
#     received packet), Mpps/core (received packets per second of device CPU time), and
#     ratio: Mpps/core against the relay (GRO+GSO) at the same size for the plain IP rows,
#     against plain IP through the same ESP+SNAP router for the ESP COUNT and SNAP rows.
# Goals (issue 30): >= 1 Mpps per core at 64 and 1400 B; >= 0.9x the relay; ESP COUNT on
# every packet >= 0.9x plain forwarding.
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

DUT=(taskset -c 1); SINK=(taskset -c 0); GEN=(taskset -c 0)
if [[ ${RT:-1} != 0 ]]; then
    if chrt -f 10 true 2>/dev/null; then
        DUT+=(chrt -f 10); SINK+=(chrt -f 20); GEN+=(chrt -f 10)
    else
        echo "(no real-time priorities: chrt -f needs root; RT=0 to silence this)" >&2
    fi
fi

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
    awk -v p="$(printf ':%04X' "$1")" 'substr($2, length($2) - 4) == p { d = $NF }
        END { print d + 0 }' /proc/net/udp
}

cpu_ns() { # PID: ns on a CPU of all its threads, plus ksoftirqd/1's
    local total=0 ns f
    for f in /proc/"$1"/task/*/schedstat ${KSOFTIRQD:+/proc/$KSOFTIRQD/schedstat}; do
        read -r ns _ < "$f" && total=$((total + ns))
    done
    echo "$total"
}

stop() { # PID: SIGTERM, then SIGKILL if it is still there after 5 s
    kill "$1" 2>/dev/null || true
    for _ in {1..50}; do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# measure KEY LABEL REF command...: one row (KIND: udp, esp or snap); REF is the KEY of the
# row at the same size whose Mpps/core this one's is divided by (empty: none).
measure() {
    local key=$1 label=$2 ref=$3; shift 3
    "${DUT[@]}" "$@" > "$TMP/dut.log" 2>&1 &
    local dut=$!
    sleep 0.5
    if ! kill -0 $dut 2>/dev/null; then
        wait $dut || true
        printf '%-30s %5s  the device did not start: %s\n' "$label" "$SIZE" \
            "$(grep -m1 -iE 'error|panicked' "$TMP/dut.log" || tail -1 "$TMP/dut.log")"
        return
    fi
    "${SINK[@]}" $BIN sink $S "$SECS" > "$TMP/sink" &
    local sink=$!
    sleep 0.2
    local c0 c1 indrops
    c0=$(cpu_ns $dut)
    "${GEN[@]}" $BIN gen $IN $G "$SIZE" "$SECS" "${KIND:-udp}" --pps "$RATE" \
        ${BURST:+--burst "$BURST"} > "$TMP/gen"
    wait $sink
    c1=$(cpu_ns $dut)
    indrops=$(udp_drops "${IN##*:}")
    stop $dut
    local sent gpps total spps sinkdrops refv=""
    # gen: sent N secs S pps P burst B; sink: total N secs S pps P drops D
    read -r _ sent _ _ _ gpps _ < "$TMP/gen" || true
    read -r _ total _ _ _ spps _ sinkdrops < "$TMP/sink" || true
    if [[ -n $ref && -f "$TMP/mpc.$ref.$SIZE" ]]; then refv=$(cat "$TMP/mpc.$ref.$SIZE"); fi
    awk -v l="$label" -v sz="$SIZE" -v sent="$sent" -v gpps="$gpps" -v total="$total" \
        -v spps="$spps" -v drops="$indrops/$sinkdrops" -v ns=$((c1 - c0)) -v ref="$ref" \
        -v refv="$refv" -v out="$TMP/mpc.$key.$SIZE" 'BEGIN {
        lost = sent > 0 ? 100 * (sent - total) / sent : 0
        us = total > 0 ? ns / 1e3 / total : 0
        mpc = ns > 0 ? total / (ns / 1e9) / 1e6 : 0
        print mpc > out
        printf "%s %.6f\n", l, mpc >> (out ".all")
        r = refv > 0 ? sprintf("%.2fx %s", mpc / refv, ref) : ""
        printf "%-30s %5d %10.0f %10.0f %5.1f%% %11s %7.3f %9.2f  %s\n",
            l, sz, gpps, spps, lost, drops, us, mpc, r
    }'
}

printf '%-30s %5s %10s %10s %6s %11s %7s %9s  %s\n' device bytes "sent pps" "recv pps" lost \
    "drops in/sk" "µs/pkt" Mpps/core ratio
ESP_SNAP=$(printf '[esp]\nrate = 10000\nkey_seed = 1\n[snap]\n')
for ROUND in $(seq "${ROUNDS:-1}"); do
for SIZE in 64 1400; do
    if [[ -n ${PPS:-} ]]; then RATE=$PPS; elif ((SIZE < 512)); then RATE=1500000; else RATE=800000; fi
    KIND=udp
    measure relay "relay (GRO+GSO)" "" $BIN relay $IN $G $OUT $S
    measure plain "relay (plain)" relay $BIN relay $IN $G $OUT $S --plain
    router_config
    measure router "waist-router" relay $ROUTER --config "$TMP/r.toml"
    # The same router with ESP and SNAP on: plain IP, then every packet ESP COUNT / a SNAP ping.
    router_config "$ESP_SNAP"
    KIND=udp; measure IP "waist-router, ESP+SNAP on: IP" relay $ROUTER --config "$TMP/r.toml"
    KIND=esp; measure esp "  ESP COUNT on every packet" IP $ROUTER --config "$TMP/r.toml"
    KIND=snap; measure snap "  SNAP ping on every packet" IP $ROUTER --config "$TMP/r.toml"
done
done
if [[ ${ROUNDS:-1} -gt 1 ]]; then
    echo
    echo "medians of ${ROUNDS} rounds (ratio: median of the per-round ratios)"
    printf '%-30s %5s %9s %9s  %s\n' device bytes Mpps/core µs/pkt ratio
    for SIZE in 64 1400; do
        for pair in relay: plain:relay router:relay IP:relay esp:IP snap:IP; do
            key=${pair%%:*}; ref=${pair#*:}
            [[ -f "$TMP/mpc.$key.$SIZE.all" ]] || continue
            awk -v sz="$SIZE" -v ref="$ref" -v reff="$TMP/mpc.$ref.$SIZE.all" '
                function median(a, n,   i, j, t) {
                    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                        if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
                }
                BEGIN {
                    if (ref != "") { k = 0; while ((getline line < reff) > 0) {
                        k++; n2 = split(line, f, " "); r[k] = f[n2] } }
                }
                { n++; v[n] = $NF; sub(/ [^ ]*$/, ""); label = $0
                  if (ref != "" && r[n] > 0) { rr[n] = v[n] / r[n] } }
                END {
                    for (i = 1; i <= n; i++) m[i] = v[i]
                    med = median(m, n)
                    s = ""
                    if (ref != "") { for (i = 1; i <= n; i++) x[i] = rr[i]
                        s = sprintf("%.2fx %s (%.2f-%.2f)", median(x, n), ref, lo(rr, n), hi(rr, n)) }
                    printf "%-30s %5d %9.2f %9.3f  %s\n", label, sz, med, (med > 0 ? 1 / med : 0), s
                }
                function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
                function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
            ' "$TMP/mpc.$key.$SIZE.all"
        done
    done
fi
