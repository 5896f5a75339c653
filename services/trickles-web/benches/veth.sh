#!/usr/bin/env bash
# Bulk transfer at equal MTU: trickles-web against nginx and the kernel's TCP, over a veth
# pair between two network namespaces (run as root).
#
#   sudo bash services/trickles-web/benches/veth.sh          (from anywhere; ~1 minute after the build)
#   sudo ROUNDS=1 SIZE_MB=20 ONLY="nginx get" bash services/trickles-web/benches/veth.sh
#   sudo BIN=/tmp/other-target/release bash services/trickles-web/benches/veth.sh
#
# What it measures: one SIZE_MB file fetched whole, one transfer at a time, as MB/s
# (10^6 bytes per second of the client process's wall time), the server's CPU seconds
# and the client's CPU seconds per 100 MB. Rows (the names ONLY takes):
#   veth, MTU 1500 on both ends, server namespace 10.77.0.1, client namespace 10.77.0.2:
#     nginx      nginx (one worker, sendfile, tcp_nopush), fetched by curl
#     get        trickles-web, fetched by trickles-get (Trickles over IP-in-UDP)
#     parallel   the same with trickles-get --parallel 4 (four connections, byte ranges)
#     proxy      trickles-web, fetched by curl through trickles-proxy in the client
#                namespace (client CPU = curl's + the proxy's)
#     iperf3     the kernel's TCP alone: iperf3 -R (the server sends, as in the other
#                rows); its MB/s is the receiver's bits_per_second, not the wall time
#   loopback, inside the server namespace (lo's MTU, 65536, printed in the table):
#     lo-nginx, lo-get, lo-iperf3   the same on 127.0.0.1. TCP's MSS follows lo's MTU
#                here while trickles-web keeps its 1500-byte packets: these rows show
#                what loopback-only benchmarks (web.sh, get.sh) are worth, not a fair race.
# Ratios compare each row's median MB/s with nginx's of the same path.
#
# Why the veth rows are fair: every byte crosses the same 1500-byte-MTU link, the
# servers run on CPU 0 and the clients on CPU 1 (when there are two), all at the same
# NICE. The veth keeps its default offloads, as a real NIC driver would: the kernel's
# TCP (nginx's sendfile, iperf3) still hands the veth 64 KB TSO/GSO super-packets and the
# receiver gets them whole, and trickles-web's UDP GSO runs travel the same way
# (segmented at the receiving socket unless it asked for UDP GRO). So neither side gets
# a bigger MTU than the other; both get the batching the kernel offers on this link.
# Receive-side softirq work of a veth (or lo) runs on the sending CPU and is charged to
# the sender's process — the same for every row. CPU seconds come from /proc/PID/stat
# (utime + stime, resolution 1/CLK_TCK) for the servers and the proxy, from the shell's
# `time` for the clients.
#
# Set up, and torn down on exit (failure and Ctrl-C included): namespaces wv-srv-PID and
# wv-cli-PID, the veth pair wvsPID/wvcPID, nginx, trickles-web, iperf3 and
# trickles-proxy in them, a temporary directory. Every client runs under `timeout`, so a
# hang is reported as a failed transfer. Each fetch row is first checked once (not
# timed) by comparing the body with the file (cmp); timed transfers go to /dev/null and
# check the byte count. Installs nginx-light, curl and iperf3 when missing (apt-get).
#
# Environment: ROUNDS (5; the rows interleave: r1 r2 … r1 r2 …), SIZE_MB (100),
# BIN (a directory holding trickles-web, trickles-get and trickles-proxy; default: build
# them with cargo into CARGO_TARGET_DIR, default target/), ONLY (space-separated row
# names), NICE (0; e.g. -15 to stand out from other load), TIMEOUT (120 s per client),
# KEEP (1: keep the temporary directory with the servers' logs; RUST_LOG reaches the
# binaries). Output: one `#` line per transfer on stderr, a markdown table on stdout.
# Each `#` line also gives the skbs the server-side device sent (a GSO super-packet
# counts once, so bytes per skb shows how batched the transfer was) and the UDP
# datagrams dropped for want of socket buffer during it; the binaries run from copies,
# so a build finishing elsewhere mid-run changes nothing.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SIZE_MB=${SIZE_MB:-100}
NICE=${NICE:-0}
ONLY=${ONLY:-}
TIMEOUT=${TIMEOUT:-120}
KEEP=${KEEP:-0}
ALL_ROWS=(nginx get parallel proxy iperf3 lo-nginx lo-get lo-iperf3)

if [ "$(id -u)" -ne 0 ]; then
    echo "veth.sh: needs root (network namespaces, a veth pair, nginx); try sudo" >&2
    exit 1
fi
for r in $ONLY; do
    case " ${ALL_ROWS[*]} " in
    *" $r "*) ;;
    *)
        echo "veth.sh: ONLY: no row '$r' (rows: ${ALL_ROWS[*]})" >&2
        exit 1
        ;;
    esac
done
selected() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
rows=()
for r in "${ALL_ROWS[@]}"; do
    if selected "$r"; then rows+=("$r"); fi
done

root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
srv=wv-srv-$$
cli=wv-cli-$$
veth_srv=wvs$$
veth_cli=wvc$$
srv_ip=10.77.0.1
cli_ip=10.77.0.2
web_port=7700
nginx_port=8080
iperf_port=5201
tmp=$(mktemp -d /tmp/veth-bench.XXXXXX)
pids=()
client_pid=

# shellcheck disable=SC2317  # (reached through the trap)
cleanup() {
    local rc=$? p ns
    trap - EXIT INT TERM
    set +e
    if [ -n "$client_pid" ]; then kill "$client_pid" 2>/dev/null; fi
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}" $client_pid; do wait "$p" 2>/dev/null; done
    # Anything of ours still inside the namespaces (a client `timeout` left behind).
    for ns in "$srv" "$cli"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    ip netns del "$srv" 2>/dev/null
    ip netns del "$cli" 2>/dev/null
    ip link del "$veth_srv" 2>/dev/null
    if [ "$KEEP" = 1 ]; then
        echo "# kept $tmp" >&2
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(nproc)" -ge 2 ]; then
    server_cpu=0 client_cpu=1
else
    server_cpu=0 client_cpu=0
fi

# --- tools and binaries ------------------------------------------------------------
missing=
for t in nginx curl iperf3; do
    if ! command -v "$t" >/dev/null && ! [ -x "/usr/sbin/$t" ]; then missing=1; fi
done
if [ -n "$missing" ]; then
    echo "# installing nginx-light, curl, iperf3" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nginx-light curl iperf3 >/dev/null ||
        apt-get install -y -qq --no-install-recommends nginx curl iperf3 >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if command -v python3 >/dev/null && python3 -c '' 2>/dev/null; then
    json_sum() { python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum_received"]
print(int(s["bytes"]), s["bits_per_second"])' "$1"; }
elif command -v jq >/dev/null; then
    json_sum() { jq -r '.end.sum_received | "\(.bytes) \(.bits_per_second)"' "$1"; }
else
    echo "veth.sh: needs python3 or jq to read iperf3's JSON" >&2
    exit 1
fi

if [ -n "${BIN:-}" ]; then
    bin=$(cd "$BIN" && pwd)
    built="binaries from $bin"
else
    echo "# building (release)" >&2
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root_dir/target}
    (cd "$root_dir" && cargo build --release -q -p trickles-web \
        --bin trickles-web --bin trickles-get --bin trickles-proxy)
    bin=$CARGO_TARGET_DIR/release
    built="built from $(git -C "$root_dir" describe --always --dirty=+uncommitted 2>/dev/null || echo '?')"
fi
# Copies, so that a build finishing elsewhere during the run changes nothing here.
mkdir -p "$tmp/bin"
for b in trickles-web trickles-get trickles-proxy; do
    [ -x "$bin/$b" ] || {
        echo "veth.sh: no $bin/$b" >&2
        exit 1
    }
    cp "$bin/$b" "$tmp/bin/"
done
bin=$tmp/bin

# --- the file ------------------------------------------------------------------------
bytes=$((SIZE_MB * 1000000))
mkdir -p "$tmp/www" "$tmp/nginx" "$tmp/res"
# nginx's worker drops root for an unprivileged user, who must read the file.
chmod 755 "$tmp" "$tmp/www"
head -c "$bytes" /dev/urandom >"$tmp/www/big"
chmod 644 "$tmp/www/big"

# --- the network ---------------------------------------------------------------------
ip netns add "$srv"
ip netns add "$cli"
ip link add "$veth_srv" type veth peer name "$veth_cli"
ip link set "$veth_srv" netns "$srv"
ip link set "$veth_cli" netns "$cli"
ip -n "$srv" link set "$veth_srv" mtu 1500
ip -n "$cli" link set "$veth_cli" mtu 1500
ip -n "$srv" addr add "$srv_ip/24" dev "$veth_srv"
ip -n "$cli" addr add "$cli_ip/24" dev "$veth_cli"
for ns in "$srv" "$cli"; do ip -n "$ns" link set lo up; done
ip -n "$srv" link set "$veth_srv" up
ip -n "$cli" link set "$veth_cli" up
lo_mtu=$(ip -n "$srv" -o link show lo | sed -n 's/.* mtu \([0-9]*\).*/\1/p')
veth_mtu=$(ip -n "$srv" -o link show "$veth_srv" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')
for _ in $(seq 100); do
    ip netns exec "$cli" ping -c1 -W1 -q "$srv_ip" >/dev/null 2>&1 && break
    sleep 0.1
done

# --- helpers -------------------------------------------------------------------------
tck=$(getconf CLK_TCK)
# CPU ticks (utime + stime) process PID has used; the name before ") " may hold spaces.
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
# nsx NS CMD…: CMD in namespace NS.
nsx() {
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}
# wait_tcp NS ADDR PORT: until something accepts connections there (10 s).
wait_tcp() {
    local _
    for _ in $(seq 200); do
        if nsx "$1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    return 1
}
# wait_ready FILE: until FILE holds a line (10 s).
wait_ready() {
    local _
    for _ in $(seq 200); do
        [ -s "$1" ] && return 0
        sleep 0.05
    done
    return 1
}
# udp_drops ROW: UDP datagrams dropped so far for want of socket buffer space in the
# namespaces ROW's transfer crosses.
udp_drops() {
    local ns n=0 v
    for ns in "$srv" "$cli"; do
        if [ "$ns" = "$cli" ] && [ "$(row_ns "$1")" != "$cli" ]; then continue; fi
        v=$(nsx "$ns" nstat -asz UdpRcvbufErrors | awk '$1 == "UdpRcvbufErrors" { print $2 }')
        n=$((n + ${v:-0}))
    done
    echo "$n"
}
# tx_skbs NS DEV: packets (skbs: a GSO super-packet counts once) DEV has sent.
tx_skbs() { nsx "$1" cat "/sys/class/net/$2/statistics/tx_packets"; }
# show_log FILE…: the last lines of the logs, for a failure's report.
show_log() {
    local f
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "#   --- $(basename "$f") (last lines)" >&2
        tail -n 15 "$f" | sed 's/^/#   /' >&2
    done
}
fail() { # fail ROW MESSAGE: a failed transfer, reported and counted.
    echo "# FAILED $1: $2" >&2
    echo x >>"$tmp/res/$1.failed"
}

# --- servers -------------------------------------------------------------------------
# All in the server namespace, on CPU $server_cpu; `ip netns exec`, nice and taskset all
# exec, so $! is the server's own pid.
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path $tmp/nginx/client;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    types { application/octet-stream bin; }
    server { listen $srv_ip:$nginx_port; listen 127.0.0.1:$nginx_port; root $tmp/www; }
}
EOF
nginx_worker=
if selected nginx || selected lo-nginx; then
    ip netns exec "$srv" nice -n "$NICE" taskset -c "$server_cpu" "$NGINX" -c "$tmp/nginx/nginx.conf" \
        -p "$tmp/nginx" 2>"$tmp/nginx/stderr.log" &
    nginx_master=$!
    pids+=("$nginx_master")
    for _ in $(seq 200); do
        nginx_worker=$(pgrep -P "$nginx_master" || true)
        [ -n "$nginx_worker" ] && break
        sleep 0.05
    done
    if [ -z "$nginx_worker" ] || ! wait_tcp "$srv" "$srv_ip" "$nginx_port"; then
        echo "veth.sh: nginx did not start" >&2
        show_log "$tmp/nginx/error.log" "$tmp/nginx/stderr.log"
        exit 1
    fi
fi

# start_web NAME ADDR: a trickles-web serving on udp:ADDR:$web_port; sets web_pid.
start_web() {
    ip netns exec "$srv" nice -n "$NICE" taskset -c "$server_cpu" "$bin/trickles-web" --root "$tmp/www" \
        --keys "$tmp/keys" --listen "udp:$2:$web_port" >"$tmp/$1.out" 2>"$tmp/$1.err" &
    web_pid=$!
    pids+=("$web_pid")
    if ! wait_ready "$tmp/$1.out" || ! grep -q "udp=$2:$web_port" "$tmp/$1.out"; then
        echo "veth.sh: trickles-web ($1) did not start" >&2
        show_log "$tmp/$1.out" "$tmp/$1.err"
        exit 1
    fi
    echo "# $1: $(head -n1 "$tmp/$1.out") (pid $web_pid)" >&2
}
web_veth='' web_lo=''
if selected get || selected parallel || selected proxy; then
    start_web web-veth "$srv_ip"
    web_veth=$web_pid
fi
if selected lo-get; then
    start_web web-lo 127.0.0.1
    web_lo=$web_pid
fi

iperf_pid=
if selected iperf3 || selected lo-iperf3; then
    ip netns exec "$srv" nice -n "$NICE" taskset -c "$server_cpu" iperf3 -s -p "$iperf_port" \
        >"$tmp/iperf3-server.log" 2>&1 &
    iperf_pid=$!
    pids+=("$iperf_pid")
    if ! wait_tcp "$srv" "$srv_ip" "$iperf_port"; then
        echo "veth.sh: iperf3 -s did not start" >&2
        show_log "$tmp/iperf3-server.log"
        exit 1
    fi
fi

proxy_pid='' proxy_addr=''
if selected proxy; then
    ip netns exec "$cli" nice -n "$NICE" taskset -c "$client_cpu" "$bin/trickles-proxy" \
        --listen 127.0.0.1:0 --server "$srv_ip:$web_port" >"$tmp/proxy.out" 2>"$tmp/proxy.err" &
    proxy_pid=$!
    pids+=("$proxy_pid")
    if ! wait_ready "$tmp/proxy.out"; then
        echo "veth.sh: trickles-proxy did not start" >&2
        show_log "$tmp/proxy.out" "$tmp/proxy.err"
        exit 1
    fi
    proxy_addr=$(sed -n 's/.*tcp=\([^ ]*\).*/\1/p' "$tmp/proxy.out")
    echo "# trickles-proxy: $(head -n1 "$tmp/proxy.out") (pid $proxy_pid)" >&2
fi

# --- clients -------------------------------------------------------------------------
# run_client NS OUT ERR CMD…: CMD in namespace NS on CPU $client_cpu under timeout, its
# stdout to OUT and stderr to ERR; sets crc (exit status; 124: timed out), wall (seconds)
# and ccpu (user + system CPU seconds). The clock runs inside the namespace, around CMD
# alone. In the background and waited for, so that Ctrl-C is not held up by a client.
run_client() {
    local ns=$1 out=$2 err=$3 u s
    shift 3
    rm -f "$tmp/time"
    # shellcheck disable=SC2016  # (expanded by the inner bash)
    timeout -k 5 "$TIMEOUT" ip netns exec "$ns" nice -n "$NICE" bash -c '
        TIMEFORMAT="%3R %3U %3S"
        o=$1 e=$2 t=$3
        shift 3
        { time "$@" >"$o" 2>"$e"; } 2>"$t"' _ "$out" "$err" "$tmp/time" \
        taskset -c "$client_cpu" "$@" &
    client_pid=$!
    crc=0
    wait "$client_pid" || crc=$?
    client_pid=
    wall='' ccpu=''
    if [ -s "$tmp/time" ]; then
        read -r wall u s <"$tmp/time"
        ccpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
    fi
}
why() { # why ERR: a client's failure in a few words.
    if [ "$crc" = 124 ] || [ "$crc" = 137 ]; then
        echo "timed out after ${TIMEOUT} s"
    else
        echo "exit $crc: $(tail -n 3 "$1" | tr '\n' ' ')"
    fi
}

# Per row: the namespace the client runs in, the server's pid, what to fetch.
row_ns() { case $1 in lo-*) echo "$srv" ;; *) echo "$cli" ;; esac; }
row_dev() { case $1 in lo-*) echo lo ;; *) echo "$veth_srv" ;; esac; }
row_server() {
    case $1 in
    nginx | lo-nginx) echo "$nginx_worker" ;;
    get | parallel | proxy) echo "$web_veth" ;;
    lo-get) echo "$web_lo" ;;
    iperf3 | lo-iperf3) echo "$iperf_pid" ;;
    esac
}
row_host() { case $1 in lo-*) echo 127.0.0.1 ;; *) echo "$srv_ip" ;; esac; }
# fetch ROW OUTFILE: one transfer of row ROW (iperf3 rows aside) into OUTFILE; sets got
# (bytes received, as the client reports them) or calls fail and returns 1.
fetch() {
    local row=$1 o=$2 ns host code
    ns=$(row_ns "$row")
    host=$(row_host "$row")
    got=
    case $row in
    nginx | lo-nginx | proxy)
        local url="http://$host:$nginx_port/big"
        if [ "$row" = proxy ]; then url="http://$proxy_addr/big"; fi
        run_client "$ns" "$tmp/client.out" "$tmp/client.err" \
            curl -sS -o "$o" -w '%{http_code} %{size_download}' "$url"
        if [ "$crc" != 0 ]; then
            fail "$row" "curl $url: $(why "$tmp/client.err")"
            if [ "$row" = proxy ]; then show_log "$tmp/proxy.err" "$tmp/web-veth.err"; fi
            return 1
        fi
        read -r code got <"$tmp/client.out"
        if [ "$code" != 200 ] || [ "$got" != "$bytes" ]; then
            fail "$row" "curl $url: HTTP $code, $got bytes of $bytes"
            return 1
        fi
        ;;
    get | parallel | lo-get)
        local more=()
        if [ "$row" = parallel ]; then more=(--parallel 4); fi
        run_client "$ns" "$tmp/client.out" "$tmp/client.err" \
            "$bin/trickles-get" "trickles://$host:$web_port/big" -o "$o" "${more[@]}"
        if [ "$crc" != 0 ]; then
            fail "$row" "trickles-get trickles://$host:$web_port/big: $(why "$tmp/client.err")"
            show_log "$tmp/client.err"
            if [ "$row" = lo-get ]; then show_log "$tmp/web-lo.err"; else show_log "$tmp/web-veth.err"; fi
            return 1
        fi
        got=$(sed -n 's/^trickles-get: \([0-9]*\) bytes in .*/\1/p' "$tmp/client.err")
        if [ "$got" != "$bytes" ]; then
            fail "$row" "trickles-get: ${got:-?} bytes of $bytes: $(cat "$tmp/client.err")"
            return 1
        fi
        ;;
    esac
}

# verify ROW: one untimed transfer into a file, compared with the original.
verify() {
    local row=$1
    rm -f "$tmp/check"
    if fetch "$row" "$tmp/check"; then
        if cmp -s "$tmp/check" "$tmp/www/big"; then
            echo "# check $row: $got bytes, identical to the file" >&2
        else
            fail "$row" "the body differs from the file (cmp)"
            echo x >>"$tmp/res/$row.bad"
        fi
    else
        echo x >>"$tmp/res/$row.bad"
    fi
    rm -f "$tmp/check"
}

# measure ROUND ROW: one timed transfer; appends "MB/s server-CPU client-CPU" (CPU
# seconds per 100 MB) to $tmp/res/ROW.
measure() {
    local round=$1 row=$2 ns server s0 s1 p p0 p1 k0 k1 d0 d1 mbs extra=''
    ns=$(row_ns "$row")
    server=$(row_server "$row")
    for p in "$server" $proxy_pid; do
        if ! kill -0 "$p" 2>/dev/null; then
            echo "veth.sh: a server (pid $p) has died" >&2
            show_log "$tmp"/*.err "$tmp/nginx/error.log" "$tmp/iperf3-server.log"
            exit 1
        fi
    done
    k0=$(tx_skbs "$srv" "$(row_dev "$row")")
    d0=$(udp_drops "$row")
    s0=$(ticks "$server")
    if [ "$row" = proxy ]; then p0=$(ticks "$proxy_pid"); fi
    case $row in
    iperf3 | lo-iperf3)
        local host bps
        host=$(row_host "$row")
        run_client "$ns" "$tmp/client.out" "$tmp/client.err" \
            iperf3 -c "$host" -p "$iperf_port" -R -n "$bytes" -J
        s1=$(ticks "$server")
        if [ "$crc" != 0 ]; then
            fail "$row" "iperf3 -c $host -R: $(why "$tmp/client.err") $(head -c 300 "$tmp/client.out")"
            return 0
        fi
        read -r got bps < <(json_sum "$tmp/client.out")
        if [ "$got" -lt "$bytes" ]; then
            fail "$row" "iperf3 received $got bytes of $bytes"
            return 0
        fi
        mbs=$(awk -v b="$bps" 'BEGIN { printf "%.1f", b / 8e6 }')
        extra=" (wall: $(awk -v b="$got" -v w="$wall" 'BEGIN { printf "%.1f", b / w / 1e6 }') MB/s)"
        ;;
    *)
        if ! fetch "$row" /dev/null; then return 0; fi
        s1=$(ticks "$server")
        mbs=$(awk -v b="$got" -v w="$wall" 'BEGIN { printf "%.1f", b / w / 1e6 }')
        if [ "$row" = get ] || [ "$row" = parallel ] || [ "$row" = lo-get ]; then
            extra=" (its own: $(grep -o '[0-9.]* MB/s' "$tmp/client.err" | head -n1))"
        fi
        ;;
    esac
    k1=$(tx_skbs "$srv" "$(row_dev "$row")")
    d1=$(udp_drops "$row")
    local scpu c
    scpu=$(awk -v a="$s0" -v b="$s1" -v t="$tck" 'BEGIN { printf "%.3f", (b - a) / t }')
    c=$ccpu
    if [ "$row" = proxy ]; then
        p1=$(ticks "$proxy_pid")
        local pcpu
        pcpu=$(awk -v a="$p0" -v b="$p1" -v t="$tck" 'BEGIN { printf "%.3f", (b - a) / t }')
        extra=" (curl $ccpu s + proxy $pcpu s)"
        c=$(awk -v a="$ccpu" -v b="$pcpu" 'BEGIN { printf "%.3f", a + b }')
    fi
    awk -v m="$mbs" -v s="$scpu" -v c="$c" -v g="$got" \
        'BEGIN { printf "%s %.4f %.4f\n", m, s * 1e8 / g, c * 1e8 / g }' >>"$tmp/res/$row"
    echo "# round $round $row: $got B in $wall s, $mbs MB/s$extra; server CPU $scpu s, client CPU $c s;" \
        "$(row_dev "$row") tx skbs $((k1 - k0)) ($(awk -v b="$got" -v k="$((k1 - k0))" \
            'BEGIN { if (k > 0) printf "%.0f", b / k; else print "-" }') B/skb);" \
        "UDP receive-buffer drops $((d1 - d0))" >&2
}

# --- runs ----------------------------------------------------------------------------
echo "# $SIZE_MB MB file; veth MTU $veth_mtu, lo MTU $lo_mtu; servers on CPU $server_cpu," \
    "clients on CPU $client_cpu; rows: ${rows[*]}" >&2
if command -v ethtool >/dev/null; then
    echo "# veth offloads: $(nsx "$srv" ethtool -k "$veth_srv" | grep -E \
        '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|tx-udp-segmentation):' |
        tr -s ' \n' ' ')" >&2
fi
for row in "${rows[@]}"; do
    case $row in iperf3 | lo-iperf3) ;; *) verify "$row" ;; esac
done
for round in $(seq "$ROUNDS"); do
    for row in "${rows[@]}"; do
        [ -e "$tmp/res/$row.bad" ] && continue
        measure "$round" "$row"
    done
done
# Whole-run counters of each namespace (all rows together), for the record: UDP buffer
# overflows, TCP retransmissions (loss probes included), the veth's drops.
for ns in "$srv" "$cli"; do
    dev=$veth_srv
    if [ "$ns" = "$cli" ]; then dev=$veth_cli; fi
    echo "# $ns counters: $(nsx "$ns" nstat -asz 2>/dev/null | grep -E \
        '^(UdpInDatagrams|UdpOutDatagrams|UdpRcvbufErrors|UdpSndbufErrors|TcpRetransSegs|TcpExtTCPLossProbes|TcpExtTCPRcvCoalesce) ' |
        awk '{ printf "%s=%s ", $1, $2 }')$dev rx_dropped=$(nsx "$ns" cat "/sys/class/net/$dev/statistics/rx_dropped")" \
        "tx_dropped=$(nsx "$ns" cat "/sys/class/net/$dev/statistics/tx_dropped")" >&2
done

# --- the table -----------------------------------------------------------------------
# median COLUMN ROW: the median of a column of $tmp/res/ROW (empty: none).
median() {
    [ -s "$tmp/res/$2" ] || return 0
    awk -v c="$1" '{ print $c }' "$tmp/res/$2" | sort -g | awk '
        { v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
label() {
    case $1 in
    nginx | lo-nginx) echo "\`$1\` nginx (sendfile), curl" ;;
    get | lo-get) echo "\`$1\` trickles-web, trickles-get" ;;
    parallel) echo "\`$1\` trickles-web, trickles-get --parallel 4" ;;
    proxy) echo "\`$1\` trickles-web, curl via trickles-proxy" ;;
    iperf3 | lo-iperf3) echo "\`$1\` kernel TCP, iperf3 -R (receiver's rate)" ;;
    esac
}
status=0
echo
echo "$SIZE_MB MB, one transfer at a time; servers on CPU $server_cpu, clients on CPU $client_cpu;" \
    "trickles-web $("$bin/trickles-web" --version | awk '{ print $NF }') ($built), $("$NGINX" -v 2>&1 | sed 's/.*: //')," \
    "$(iperf3 --version | head -n1 | awk '{ print "iperf3", $2 }'); MB = 10^6 bytes"
echo
echo "| path | row | MB/s (median of N) | ratio to nginx | server CPU s / 100 MB | client CPU s / 100 MB |"
echo "|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
    case $row in
    lo-*) path="loopback, MTU $lo_mtu" ref=lo-nginx ;;
    *) path="veth, MTU $veth_mtu" ref=nginx ;;
    esac
    n=0 failed=0
    if [ -s "$tmp/res/$row" ]; then n=$(wc -l <"$tmp/res/$row"); fi
    if [ -s "$tmp/res/$row.failed" ]; then failed=$(wc -l <"$tmp/res/$row.failed"); fi
    if [ "$failed" -gt 0 ]; then status=1; fi
    note=''
    if [ "$failed" -gt 0 ]; then note=" ($failed FAILED)"; fi
    if [ "$n" = 0 ]; then
        echo "| $path | $(label "$row") | FAILED ($failed of $failed) | - | - | - |"
        continue
    fi
    m=$(median 1 "$row")
    r=$(median 1 "$ref")
    ratio=$(awk -v a="$m" -v b="$r" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    printf '| %s | %s | %.1f (of %d)%s | %s | %.3f | %.3f |\n' "$path" "$(label "$row")" "$m" "$n" \
        "$note" "$ratio" "$(median 2 "$row")" "$(median 3 "$row")"
done
exit "$status"
