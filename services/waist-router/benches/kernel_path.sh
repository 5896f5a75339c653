#!/usr/bin/env bash
# The kernel's view of one waist-router hop against one plain kernel-forwarding hop: two
# host namespaces A (10.1.0.1) and B (10.2.0.1) joined through a router namespace, built
# twice, measured in one run (root; namespaces named after this script's pid, deleted at exit).
#
#   waist:   A ──wtA (TUN)── waist-router ──wtB (TUN)── B
#            (the router runs in namespace R and creates both TUN devices there; each is
#            then moved into its host's namespace, the router's file descriptors still
#            attached, so R's kernel never forwards: every packet crosses user space)
#   kernel:  A ──veth── R (net.ipv4.ip_forward=1) ──veth── B
#
# Reports ping RTT (ping -c 50 -i 0.01, the median of 5 runs: avg and mdev) and TCP
# throughput A → B (iperf3 for SECONDS if installed, else curl of a 100 MB file from
# python3 -m http.server, MB/s), and waist's ratio to the kernel's.
#
# The router's TUN links run with offload (netio's default: virtio-net header, TSO/USO; B's
# kernel hands the router 64 KiB super-packets, the router writes coalesced ones to A);
# OFFLOAD=0 writes `offload = false` to both links, one packet per read and per write. The
# script checks the devices say so (`ip -d link`: vnet_hdr on/off) and prints what the TCP
# run looked like from the router (packets per read of link b, from its metrics) and from
# A (bytes per skb its IP layer received: far above the MTU when the writes coalesced).
#
#   bash services/waist-router/benches/kernel_path.sh [SECONDS]
#   OFFLOAD=0 bash services/waist-router/benches/kernel_path.sh [SECONDS]   # offload off
#   NO_IPERF=1 bash services/waist-router/benches/kernel_path.sh    # the curl measurement
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
SECS="${1:-5}"
OFFLOAD="${OFFLOAD:-1}"
if [[ "$OFFLOAD" == 0 ]]; then OFFLOAD_LINE="offload = false"; else OFFLOAD_LINE=""; fi
IPERF=$([[ "${NO_IPERF:-}" != 1 ]] && command -v iperf3 || true)
if [[ $(id -u) -ne 0 ]]; then
    echo "kernel_path.sh: needs root (namespaces, TUN)" >&2
    exit 1
fi
cargo build --release -q -p waist-router --bin waist-router
ROUTER="${CARGO_TARGET_DIR:-target}/release/waist-router"
TMP=$(mktemp -d)
A="kpA-$$"; B="kpB-$$"; R="kpR-$$"
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    for ns in "$A" "$B" "$R"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

fresh() {
    for ns in "$A" "$B" "$R"; do
        ip netns del "$ns" 2>/dev/null || true
        ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
}

# Addresses and routes of the hosts, given the device each reaches the router by and, on
# an Ethernet-like device, the router's address there.
hosts() { # devA devB [gwA gwB]
    local viaA=() viaB=()
    [[ $# -eq 4 ]] && viaA=(via "$3") && viaB=(via "$4")
    ip -n "$A" addr add 10.1.0.1/24 dev "$1"
    ip -n "$A" link set "$1" up
    ip -n "$A" route add 10.2.0.0/16 "${viaA[@]}" dev "$1"
    ip -n "$B" addr add 10.2.0.1/24 dev "$2"
    ip -n "$B" link set "$2" up
    ip -n "$B" route add 10.1.0.0/16 "${viaB[@]}" dev "$2"
}

# Prints "avg mdev" of the ping from A to B.
# Five runs of 50 pings, the median run by its avg: one run is at the mercy of whatever
# else the machine's two cores are doing (each waist round trip wakes the router and ping).
rtt() {
    for _ in 1 2 3 4 5; do
        ip netns exec "$A" ping -n -q -c 50 -i 0.01 -W 2 10.2.0.1 |
            awk -F'[/ ]' '/^rtt/ {print $8, $10}'
    done | sort -n | sed -n 3p
}

# Prints MB/s of one TCP transfer from B to A (A's client pulls from B's server).
throughput() {
    if [[ -n "$IPERF" ]]; then
        ip netns exec "$B" iperf3 -s -1 -B 10.2.0.1 >/dev/null 2>&1 &
        local srv=$!
        for _ in $(seq 50); do
            ip netns exec "$B" ss -ltn 2>/dev/null | grep -q ':5201' && break
            sleep 0.1
        done
        # -R: B sends, A receives (the same direction as the curl fallback).
        ip netns exec "$A" iperf3 -c 10.2.0.1 -t "$SECS" -R -f M |
            awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i+1) == "MBytes/sec") print $i }'
        wait "$srv" 2>/dev/null || true
    else
        [[ -f "$TMP/www/big" ]] || { mkdir -p "$TMP/www"; head -c 100000000 /dev/urandom > "$TMP/www/big"; }
        (cd "$TMP/www" && exec ip netns exec "$B" python3 -m http.server 8000 --bind 10.2.0.1) >/dev/null 2>&1 &
        local srv=$!
        for _ in $(seq 50); do
            ip netns exec "$A" curl -s -o /dev/null --max-time 1 http://10.2.0.1:8000/ && break
            sleep 0.1
        done
        ip netns exec "$A" curl -s -o /dev/null --max-time 120 -w '%{speed_download}\n' http://10.2.0.1:8000/big |
            awk '{printf "%.1f\n", $1/1e6}'
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
    fi
}

tool=$([[ -n "$IPERF" ]] && echo "iperf3 -R, ${SECS} s" || echo "curl 100 MB")

# --- waist-router between two TUN devices ---
fresh
cat > "$TMP/r.toml" <<TOML
[node]
name = "dut"
addresses = ["10.0.0.1"]
[[link]]
name = "a"
kind = "tun"
device = "wtA"
$OFFLOAD_LINE
[[link]]
name = "b"
kind = "tun"
device = "wtB"
$OFFLOAD_LINE
[[route]]
prefix = "10.1.0.0/16"
link = "a"
[[route]]
prefix = "10.2.0.0/16"
link = "b"
TOML
RUST_LOG=warn ip netns exec "$R" "$ROUTER" --config "$TMP/r.toml" --metrics 127.0.0.1:0 > "$TMP/r.out" 2>"$TMP/r.log" &
for _ in $(seq 50); do grep -q metrics "$TMP/r.out" 2>/dev/null && break; sleep 0.1; done
ip -n "$R" link set wtA netns "$A"
ip -n "$R" link set wtB netns "$B"
hosts wtA wtB
vnet=$(ip -d -n "$A" link show dev wtA | grep -o 'vnet_hdr [a-z]*' || echo "vnet_hdr ?")
want=$([[ "$OFFLOAD" == 0 ]] && echo "vnet_hdr off" || echo "vnet_hdr on")
if [[ "$vnet" != "$want" && "$vnet" != "vnet_hdr ?" ]]; then
    echo "kernel_path.sh: wtA has $vnet, expected $want (OFFLOAD=$OFFLOAD)" >&2
    exit 1
fi
METRICS=$(sed -n 's|^metrics http://\(.*\)$|\1|p' "$TMP/r.out")
# The router's counter NAME (without _total) for LINK.
counter() { # name link
    ip netns exec "$R" curl -s "http://$METRICS" |
        awk -v s="waist_link_$1_total{link=\"$2\"}" '$1 == s { printf "%d\n", $2 }'
}
# A's IP layer: "skbs bytes" received so far.
a_rx() {
    ip netns exec "$A" awk '
        /^Ip:/ { if (!ip) { for (i = 1; i <= NF; i++) if ($i == "InReceives") c = i; ip = 1 } else skbs = $c }
        /^IpExt:/ { if (!ext) { for (i = 1; i <= NF; i++) if ($i == "InOctets") o = i; ext = 1 } else bytes = $o }
        END { print skbs, bytes }' /proc/net/snmp /proc/net/netstat
}
read -r w_avg w_mdev < <(rtt)
f0=$(counter rx_frames b); c0=$(counter rx_calls b); read -r s0 o0 < <(a_rx)
w_tput=$(throughput)
f1=$(counter rx_frames b); c1=$(counter rx_calls b); read -r s1 o1 < <(a_rx)
shape=$(awk -v f=$((f1 - f0)) -v c=$((c1 - c0)) -v s=$((s1 - s0)) -v o=$((o1 - o0)) \
    'BEGIN { printf "router reads %.1f packets a read of link b (%d in %d); A receives skbs of %d bytes on average", f / (c ? c : 1), f, c, o / (s ? s : 1) }')

# --- plain kernel forwarding ---
kill %1 2>/dev/null || true
wait 2>/dev/null || true
fresh
ip link add vA netns "$A" type veth peer name vRA netns "$R"
ip link add vB netns "$B" type veth peer name vRB netns "$R"
ip -n "$R" addr add 10.1.0.2/24 dev vRA
ip -n "$R" addr add 10.2.0.2/24 dev vRB
ip -n "$R" link set vRA up
ip -n "$R" link set vRB up
ip netns exec "$R" sysctl -q -w net.ipv4.ip_forward=1
hosts vA vB 10.1.0.2 10.2.0.2
read -r k_avg k_mdev < <(rtt)
k_tput=$(throughput)

printf '%-28s %14s %14s %10s\n' "A → B through one hop" "waist-router" "kernel" "ratio"
printf '%-28s %14s %14s %10s\n' "ping RTT avg (ms)" "$w_avg" "$k_avg" "$(awk -v a="$w_avg" -v b="$k_avg" 'BEGIN{printf "%.2f×", a/b}')"
printf '%-28s %14s %14s\n' "ping RTT mdev (ms)" "$w_mdev" "$k_mdev"
printf '%-28s %14s %14s %10s\n' "TCP MB/s ($tool)" "$w_tput" "$k_tput" "$(awk -v a="$w_tput" -v b="$k_tput" 'BEGIN{printf "%.2f×", a/b}')"
echo "(ping -c 50 -i 0.01, median of 5 runs; waist: TUN in each host, moved from the router's namespace, $vnet; kernel: veths, ip_forward)"
echo "(TCP through waist: $shape)"
