#!/usr/bin/env bash
# trickles-web against nginx on loopback, measured by one tool (trickles-load) in one run.
#
#   bash services/trickles-web/benches/web.sh        (from the repository root; ~3 minutes)
#
# Servers pinned to CPU 0 (nginx: one worker; trickles-web), the generator to CPU 1.
# Rounds interleave the servers; each figure is the median of ROUNDS runs.
#   (a) 1 KiB objects, requests/s: Trickles (a new connection per request, the GET in the
#       SYN) vs nginx with a new TCP connection per request; nginx keep-alive and
#       trickles-web's TCP fallback for reference.
#   (b) one 100 MB object at a time, MB/s: Trickles vs nginx over TCP.
#   (c) server VmRSS / VmHWM with 1, 10, 100, 1000 concurrent clients fetching a 200 KB
#       object: trickles-web over Trickles, nginx and trickles-web's TCP fallback over
#       keep-alive connections (all N stay open while measured).
# Environment: ROUNDS (3), SECS (3, per small-object run), CONC (100, small objects).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
CONC=${CONC:-100}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}

root_dir=$(git rev-parse --show-toplevel)
cd "$root_dir"
tmp=$(mktemp -d /tmp/web-bench.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ "$(nproc)" -ge 2 ]; then
    server_cpu=0 load_cpu=1
else
    server_cpu=0 load_cpu=0
fi

echo "== building (release)" >&2
cargo build --release -q -p trickles-web --bin trickles-web --bin trickles-load
bin="$CARGO_TARGET_DIR/release"

if ! command -v nginx >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "nginx is missing and installing it needs root" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nginx-light >/dev/null ||
        apt-get install -y -qq --no-install-recommends nginx >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

mkdir -p "$tmp/www" "$tmp/nginx"
# nginx's worker drops root for an unprivileged user, who must read the files.
chmod 755 "$tmp" "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k"
head -c 200000 /dev/urandom >"$tmp/www/200k"
head -c 100000000 /dev/urandom >"$tmp/www/100m"

# A free TCP port for nginx (which cannot report a port 0 it was given): a random high
# port nobody accepts connections on.
pick_port() {
    local p
    for _ in $(seq 50); do
        p=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    echo "no free port" >&2
    exit 1
}
nginx_port=$(pick_port)
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 8192; }
worker_rlimit_nofile 20000;
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000000;
    client_body_temp_path $tmp/nginx/client;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    types { application/octet-stream bin; }
    server { listen 127.0.0.1:$nginx_port; root $tmp/www; }
}
EOF
taskset -c "$server_cpu" "$NGINX" -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
nginx_master=$!
pids+=("$nginx_master")

# start_web NAME: a trickles-web on CPU $server_cpu, Trickles and TCP on ports the kernel
# picks; sets web_pid, udp and tcp from its `ready` line ($tmp/NAME.out, .err).
start_web() {
    taskset -c "$server_cpu" "$bin/trickles-web" --root "$tmp/www" --keys "$tmp/keys" \
        --listen udp:127.0.0.1:0 --tcp 127.0.0.1:0 >"$tmp/$1.out" 2>"$tmp/$1.err" &
    web_pid=$!
    pids+=("$web_pid")
    for _ in $(seq 100); do
        [ -s "$tmp/$1.out" ] && break
        sleep 0.05
    done
    udp=$(sed -n 's/.*udp=\([^ ]*\).*/\1/p' "$tmp/$1.out")
    tcp=$(sed -n 's/.*tcp=\([^ ]*\).*/\1/p' "$tmp/$1.out")
}
start_web web
nginx_addr="127.0.0.1:$nginx_port"
for _ in $(seq 100); do
    nginx_worker=$(pgrep -P "$nginx_master" || true)
    [ -n "$nginx_worker" ] && break
    sleep 0.05
done
[ -n "$udp" ] && [ -n "$tcp" ] && [ -n "$nginx_worker" ] || {
    echo "servers did not start" >&2
    cat "$tmp/web.err" "$tmp/nginx/error.log" >&2 || true
    exit 1
}
echo "== trickles-web udp=$udp tcp=$tcp (pid $web_pid); nginx $nginx_addr (worker $nginx_worker)" >&2

# load ARGS…: one trickles-load run on the generator's CPU; prints its report line.
load() {
    taskset -c "$load_cpu" "$bin/trickles-load" "$@"
}
# field NAME LINE: a value of a report line.
field() {
    awk -v k="$1=" '{ for (i = 1; i <= NF; i++) if (index($i, k) == 1) { print substr($i, length(k) + 1); exit } }' <<<"$2"
}
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'
}
# CPU seconds process PID has used (utime + stime; the name before ") " may hold spaces).
cpu_s() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ printf "%.2f", ($12 + $13) / 100 }'
}
# measure KEY FIELD MIN-LEN PID LOAD-ARGS…: one trickles-load run; keeps its FIELD and
# the server's (PID's) CPU share over the run. The tool parses no HTTP; an error page
# instead of the object (a 403, a 404) shows as a response shorter than the object and
# stops the benchmark. A run whose report shows errors is kept, its line printed.
measure() {
    local key=$1 what=$2 min=$3 pid=$4
    shift 4
    local c0 t0 line c1 t1 len share
    c0=$(cpu_s "$pid")
    t0=$(date +%s.%N)
    line=$(load "$@")
    c1=$(cpu_s "$pid")
    t1=$(date +%s.%N)
    len=$(field response_len "$line")
    if [ -z "$len" ] || [ "$len" -lt "$min" ]; then
        echo "$key: responses of ${len:-?} bytes, the object has $min: $line" >&2
        exit 1
    fi
    share=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.2f", (b - a) / (e - s) }')
    field "$what" "$line" >>"$tmp/$key"
    echo "$share" >>"$tmp/$key.server_cpu"
    field cpu "$line" >>"$tmp/$key.load_cpu"
    echo "   $key: $line server_cpu=$share" >&2
}

for r in $(seq "$ROUNDS"); do
    echo "== round $r of $ROUNDS" >&2
    # (a) small objects, interleaved.
    measure small_trickles requests/s 1024 "$web_pid" --trickles "$udp" --path /1k --concurrency "$CONC" --duration-s "$SECS"
    measure small_nginx requests/s 1024 "$nginx_worker" --tcp "$nginx_addr" --path /1k --concurrency "$CONC" --duration-s "$SECS"
    measure small_nginx_ka requests/s 1024 "$nginx_worker" --tcp "$nginx_addr" --path /1k --concurrency "$CONC" --duration-s "$SECS" --keepalive
    measure small_tw_tcp requests/s 1024 "$web_pid" --tcp "$tcp" --path /1k --concurrency "$CONC" --duration-s "$SECS"
    # (b) large objects.
    measure large_trickles MB/s 100000000 "$web_pid" --trickles "$udp" --path /100m --requests 3 --duration-s 20
    measure large_nginx MB/s 100000000 "$nginx_worker" --tcp "$nginx_addr" --path /100m --requests 10 --duration-s 20
done

# A second opinion on nginx's new-connection rate: wrk, when installed, in the same place.
wrk_rate=-
if command -v wrk >/dev/null; then
    wrk_rate=$(taskset -c "$load_cpu" wrk -t1 -c"$CONC" -d"${SECS}s" -H 'Connection: close' \
        "http://$nginx_addr/1k" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
fi

# (c) memory against concurrent clients, while the load runs (sampled at its middle).
status() { # status PID FIELD → kB
    awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}
mem_run() { # mem_run KEY PID LOAD-ARGS…
    local key=$1 pid=$2
    shift 2
    load "$@" --duration-s 3 >"$tmp/mem.line" &
    local lp=$!
    sleep 1.5
    local rss hwm
    rss=$(status "$pid" VmRSS)
    hwm=$(status "$pid" VmHWM)
    wait "$lp"
    local len
    len=$(field response_len "$(cat "$tmp/mem.line")")
    if [ -z "$len" ] || [ "$len" -lt 200000 ]; then
        echo "$key: responses of ${len:-?} bytes: $(cat "$tmp/mem.line")" >&2
        exit 1
    fi
    echo "$rss $hwm" >"$tmp/$key"
    echo "   $key: VmRSS $rss kB VmHWM $hwm kB; $(cat "$tmp/mem.line")" >&2
}
echo "== memory" >&2
# A fresh trickles-web for the memory rows: the throughput rounds above (the TCP fallback's
# per-connection buffers above all) leave the first process's heap larger than a server
# that only ever spoke Trickles.
start_web web2
clients=(1 10 100 1000)
# trickles-web's Trickles runs come before its TCP fallback's: VmHWM is the process's peak.
for n in "${clients[@]}"; do
    mem_run "mem_trickles_$n" "$web_pid" --trickles "$udp" --path /200k --concurrency "$n"
done
for n in "${clients[@]}"; do
    mem_run "mem_nginx_$n" "$nginx_worker" --tcp "$nginx_addr" --path /200k --concurrency "$n" --keepalive
done
for n in "${clients[@]}"; do
    mem_run "mem_tw_tcp_$n" "$web_pid" --tcp "$tcp" --path /200k --concurrency "$n" --keepalive
done

m() { median <"$tmp/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }
st=$(m small_trickles) sn=$(m small_nginx) ska=$(m small_nginx_ka) stt=$(m small_tw_tcp)
lt=$(m large_trickles) ln=$(m large_nginx)
echo
echo "trickles-web vs nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), loopback, servers on CPU $server_cpu, trickles-load on CPU $load_cpu; median of $ROUNDS interleaved rounds"
echo
c() { printf "%s / %s" "$(median <"$tmp/$1.server_cpu")" "$(median <"$tmp/$1.load_cpu")"; }
echo "| measure | trickles-web (Trickles) | peer | ratio trickles/peer | CPU share server / generator: trickles ; peer |"
echo "|---|---|---|---|---|"
echo "| 1 KiB requests/s, $CONC concurrent, new connection per request: nginx | $st | $sn | $(ratio "$st" "$sn") | $(c small_trickles) ; $(c small_nginx) |"
echo "| the same, nginx measured by wrk -t1 -c$CONC -H 'Connection: close' | $st | $wrk_rate | $(ratio "$st" "$wrk_rate") | |"
echo "| 1 KiB requests/s, nginx keep-alive (reference) | $st | $ska | $(ratio "$st" "$ska") | $(c small_trickles) ; $(c small_nginx_ka) |"
echo "| 1 KiB requests/s, trickles-web's TCP fallback, new connection (reference) | $st | $stt | $(ratio "$st" "$stt") | $(c small_trickles) ; $(c small_tw_tcp) |"
echo "| 100 MB object, MB/s, one at a time: nginx | $lt | $ln | $(ratio "$lt" "$ln") | $(c large_trickles) ; $(c large_nginx) |"
echo
echo "| concurrent clients (200 KB each) | trickles-web VmRSS / VmHWM kB | nginx worker VmRSS / VmHWM kB | trickles-web TCP fallback VmRSS / VmHWM kB | ratio VmRSS trickles/nginx |"
echo "|---|---|---|---|---|"
for n in "${clients[@]}"; do
    read -r tr th <"$tmp/mem_trickles_$n"
    read -r nr nh <"$tmp/mem_nginx_$n"
    read -r fr fh <"$tmp/mem_tw_tcp_$n"
    echo "| $n | $tr / $th | $nr / $nh | $fr / $fh | $(ratio "$tr" "$nr") |"
done
