#!/usr/bin/env bash
# Forwarding rate, packets per second through one device on one core, loopback UDP:
# the plain tokio relay (the I/O path's ceiling) against waist-router, each with and without
# batched receive, for 64- and 1400-byte packets. Same run, same machine.
#
#   bash services/waist-router/benches/forward_rate.sh [SECONDS]
#
# The device under test runs pinned to CPU 1; the generator and the sink share CPU 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
SECS="${1:-3}"
cargo build --release -q -p waist-router --bin waist-router --example forward_rate
BIN=target/release/examples/forward_rate
ROUTER=target/release/waist-router
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
G=127.0.0.1:47001; IN=127.0.0.1:47002; OUT=127.0.0.1:47003; S=127.0.0.1:47004

router_config() { # batch [extra sections]
    cat > "$TMP/r.toml" <<TOML
[node]
name = "dut"
addresses = ["10.0.0.1"]
${2:-}
[[link]]
name = "in"
kind = "udp"
local = "$IN"
peer = "$G"
batch = $1
[[link]]
name = "out"
kind = "udp"
local = "$OUT"
peer = "$S"
batch = $1
[[route]]
prefix = "10.2.0.0/16"
link = "out"
TOML
}

measure() { # label, command...  (KIND: udp, esp or snap)
    local label=$1; shift
    taskset -c 1 "$@" >/dev/null 2>&1 &
    local dut=$!
    sleep 0.5
    taskset -c 0 $BIN sink $S "$SECS" > "$TMP/sink" &
    local sink=$!
    sleep 0.2
    taskset -c 0 $BIN gen $IN $G "$SIZE" "$((SECS + 1))" "${KIND:-udp}" > /dev/null
    wait $sink
    kill $dut 2>/dev/null; wait $dut 2>/dev/null || true
    printf '%-24s %5s B  %s\n' "$label" "$SIZE" "$(cat "$TMP/sink")"
}

for SIZE in 64 1400; do
    KIND=udp
    measure "relay" $BIN relay $IN $G $OUT $S
    measure "relay (batched)" $BIN relay $IN $G $OUT $S --batch
    router_config false; measure "waist-router" $ROUTER --config "$TMP/r.toml"
    router_config true; measure "waist-router (batched)" $ROUTER --config "$TMP/r.toml"
    # Every packet carrying ESP COUNT / a SNAP ping, through a router with them on.
    router_config true "$(printf '[esp]\nrate = 10000\nkey_seed = 1\n[snap]\n')"
    KIND=udp; measure "  same, ESP+SNAP on: IP" $ROUTER --config "$TMP/r.toml"
    KIND=esp; measure "  ESP COUNT" $ROUTER --config "$TMP/r.toml"
    KIND=snap; measure "  SNAP ping" $ROUTER --config "$TMP/r.toml"
done
