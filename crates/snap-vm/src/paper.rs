//! The paper's programs, and two more in their style, as ready-made SNAP packets: written
//! as assembly so the text is their documentation.
//!
//! | item | reproduces | sends per node | resource bound needed, `h` links away |
//! |---|---|---|---|
//! | [`ping`] | Fig. 1: the hand-written ping, exactly | 1 | `2h + 1`: one arrival per node out and back |
//! | [`plan_ping`] | Fig. 2: PLAN's ping as compiled to SNAP, exactly | 1 | `2h + 1` (2 for `h = 0`: `p` sends its child even to itself) |
//! | [`traceroute`] | no figure: a traceroute written for this crate | 2 at routers, 1 at the ends | `h(h − 1)/2 + 2h + 1` for `h ≥ 1` (see [`traceroute_source`]) |
//! | [`multicast`] | no figure: a source-fanout multicast written for this crate | one per destination at the source | `k·h + 1` for `k` destinations, the farthest `h` links away |
//! | [`examples`] | no figure: the example packets of the `waist snap` tools, built from the above | — | — |
//!
//! Each program has a `*_source` function returning the whole packet as text (header
//! directives, heap objects, initial stack, then the code) and a function returning the
//! assembled [`Program`]. Every program starts at its source: the packet is injected there
//! and runs there first (§III.A), its resource bound decremented on that first arrival like
//! on every other.
//!
//! This module was called `fixtures`; [`crate::fixtures`] still names it.
//!
//! "Sends per node" is what the node's interface count must allow (§IV.A.1: a packet may
//! send as many packets as the node has interfaces).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::net::Ipv4Addr;

use crate::asm::{assemble, bytes_literal};
use crate::program::Program;

fn header(src: [u8; 4], dst: [u8; 4], port: u16, rb: u16) -> String {
    format!(
        ".src {}\n.dst {}\n.port {port}\n.rb {rb}\n",
        Ipv4Addr::from(src),
        Ipv4Addr::from(dst)
    )
}

/// Assembles a fixture's text.
// The texts are fixed code around formatted addresses and numbers that are always in range
// (ports and bounds are u16); the tests assemble every fixture. What can fail is size: a
// payload or destination list too large for a packet, which the `# Panics` sections name.
#[allow(clippy::expect_used)]
fn build(text: &str) -> Program {
    assemble(text).expect("fixture source assembles")
}

/// Fig. 1, exactly: the hand-written ping.
const PING: &str = "\
; Fig. 1: ping. At the destination the packet turns round (0 on top: outbound, 1: return
; trip); back at the source it delivers the payload to the port.
        forw            ; move on if not at dest
        bne 5           ; jump 5 instrs if nonzero on top
        push 1          ; 1 means \"on return trip\"
        getsrc          ; get source field
        forwto          ; send return packet
        pop             ; pop the 1 for local ping
        demux           ; deliver payload
";

/// The text of [`ping`].
pub fn ping_source(src: [u8; 4], dst: [u8; 4], port: u16, payload: &[u8], rb: u16) -> String {
    format!(
        "{}.bytes payload {}\n.stack @payload {port} 0  ; [0 :: port :: payload]\n{PING}",
        header(src, dst, port, rb),
        bytes_literal(payload)
    )
}

/// Fig. 1's ping from `src` to `dst` with initial stack `[0 :: port :: payload]` (0 on top),
/// delivering `payload` to `port` at `src` after one round trip.
///
/// # Panics
///
/// If `payload` does not fit a packet's heap (65535 words, about 256 KiB).
pub fn ping(src: [u8; 4], dst: [u8; 4], port: u16, payload: &[u8], rb: u16) -> Program {
    build(&ping_source(src, dst, port, payload, rb))
}

/// Fig. 2, exactly: PLAN's ping as compiled to SNAP.
const PLAN_PING: &str = "\
; Fig. 2: ping in PLAN, compiled.
;   fun r(w:blob, n:int) = deliverUDP(w, n)
;   fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)
; The packet is OnRemote(|p|(w, n), dst, rb, defaultRoute): entry defaultRoute, stack
; [w :: n :: p] with the index of p on top. `paj -1` at index 1 jumps by s[0] - 1, i.e. to
; instruction s[0]: so `push r` pushes r's index.
        .entry defaultRoute
defaultRoute:
        forw                    ; forward to dest
        paj -1                  ; jump to top stack value - 1
r:      pull 0                  ; get port num
        pull 2                  ; get data
        demux                   ; deliver data & exit
p:      pull 0                  ; pkt stack: port
        pull 2                  ; pkt stack: data
        push r                  ; pkt stack: paj offset
        push defaultRoute       ; entry point
        push 3                  ; how much stack
        getrb                   ; how much rb
        getsrc                  ; return to src
        send                    ; send return packet
        pop                     ; pop send return val
        popi 3                  ; pop extra stack
        exit                    ; done
";

/// The text of [`plan_ping`].
pub fn plan_ping_source(src: [u8; 4], dst: [u8; 4], port: u16, payload: &[u8], rb: u16) -> String {
    format!(
        "{}.bytes w {}\n.stack @w {port} p  ; [w :: n :: p]: p's arguments, then where paj goes\n{PLAN_PING}",
        header(src, dst, port, rb),
        bytes_literal(payload)
    )
}

/// Fig. 2's compiled ping: at `dst`, `defaultRoute`'s `paj` enters `p`, which sends a child
/// running `r` back to `src` with all the resource bound left; there `r` delivers
/// `payload` to `port`.
///
/// Our reading of the figure: the packet is built as PLAN's `OnRemote(|p|(w, n), dst, rb,
/// defaultRoute)` would be, the way `p` itself builds its child — entry `defaultRoute`,
/// stack `[w :: n :: p]` with `p`'s index on top for the `paj`. Pushed labels are
/// instruction indices, and `paj -1` at index 1 lands on index `s[0]`.
///
/// # Panics
///
/// If `payload` does not fit a packet's heap (65535 words, about 256 KiB).
pub fn plan_ping(src: [u8; 4], dst: [u8; 4], port: u16, payload: &[u8], rb: u16) -> Program {
    build(&plan_ping_source(src, dst, port, payload, rb))
}

const TRACEROUTE: &str = "\
; traceroute. Stack [port :: k], k = links travelled so far (0 at the source) on top.
; Every router on the way sends (here, k) home with k resource bound (the k links it came
; over: one arrival per link), then goes on; the destination sends its (here, k) home with
; all the bound left. Reports deliver at the source's port; the one naming the
; destination is the last. Routers send twice (report, forw): they have >= 2 interfaces.
        getdst
        ishere                  ; at the destination?
        bne final
        dup
        bez onward              ; k = 0: the source itself, nothing to report
        here                    ; [port k here]
        pull 1
        mktup 2                 ; [port k (here, k)]
        pull 2                  ; [port k t port]: the report's stack
        push report             ; its entry point
        push 2                  ; it takes two values
        pull 4                  ; k ...
        getrb
        min                     ; ... or what is left, if less
        getsrc                  ; home
        send
        popi 3                  ; [port k]
onward: addi 1                  ; one more link
        forw                    ; on toward the destination (never falls through here)
        exit
final:  here                    ; [port k here]
        pull 1
        mktup 2
        pull 2                  ; [port k t port]
        push report
        push 2
        getrb                   ; all that is left
        getsrc
        send
        exit
report: forw                    ; the report: travel home,
        demux                   ; deliver (here, k) to the port
";

/// The text of [`traceroute`].
///
/// Resource bound: the source uses 1; a router `i` links out uses 1 and gives its report
/// `i`; the destination `h` links out uses 1 and needs at least `h` for its report. So `h`
/// links need `1 + Σ_{i<h} (1 + i) + 1 + h = h(h − 1)/2 + 2h + 1` (10 for three links);
/// with less, the farthest reports are lost.
pub fn traceroute_source(src: [u8; 4], dst: [u8; 4], port: u16, rb: u16) -> String {
    format!(
        "{}.stack {port} 0  ; [port :: k]\n{TRACEROUTE}",
        header(src, dst, port, rb)
    )
}

/// A traceroute from `src` to `dst`: each router on the way, and finally the destination,
/// sends a report `(address, links from src)` (a tuple) home, delivered at `port` at `src`.
pub fn traceroute(src: [u8; 4], dst: [u8; 4], port: u16, rb: u16) -> Program {
    build(&traceroute_source(src, dst, port, rb))
}

/// The text of [`multicast`]: one unrolled block per destination (SNAP has no loops).
pub fn multicast_source(
    src: [u8; 4],
    dests: &[[u8; 4]],
    port: u16,
    payload: &[u8],
    rb: u16,
) -> String {
    let mut s = header(src, src, port, rb);
    let _ = writeln!(s, ".bytes payload {}", bytes_literal(payload));
    for (i, d) in dests.iter().enumerate() {
        let _ = writeln!(s, ".addr dest{i} {}", Ipv4Addr::from(*d));
    }
    let _ = write!(
        s,
        "\
.stack @payload {port}  ; [payload :: port]
; multicast: at the source, one child per destination, each with an equal share of the
; resource bound left (the shares never sum past it); a child travels to its destination
; and delivers the payload to the port there. The source sends once per destination: it
; needs that many interfaces.
"
    );
    if !dests.is_empty() {
        let _ = writeln!(
            s,
            "        getrb\n        divi {}                  ; [payload port share]",
            dests.len()
        );
    }
    for i in 0..dests.len() {
        let _ = write!(
            s,
            "        pull 2                  ; destination {i}: the child's stack [payload :: port]
        pull 2
        push deliver            ; its entry point
        push 2                  ; it takes two values
        pull 4                  ; its share
        pushh @dest{i}
        send
        popi 3                  ; [payload port share]
"
        );
    }
    s.push_str(
        "        exit
deliver: forw                   ; a child: travel to the destination,
        demux                   ; deliver the payload to the port
",
    );
    s
}

/// Multicast from `src`: it runs at `src` and sends one child per destination in `dests`,
/// splitting its resource bound (after the arrival decrement) evenly among them; each
/// child forwards to its destination and delivers `payload` to `port` there.
///
/// # Panics
///
/// If `payload` and the destinations' addresses do not fit a packet's heap (65535 words),
/// or the unrolled code its 65535 instructions (about 8000 destinations).
pub fn multicast(src: [u8; 4], dests: &[[u8; 4]], port: u16, payload: &[u8], rb: u16) -> Program {
    build(&multicast_source(src, dests, port, payload, rb))
}

/// The example packets shipped with the `waist snap` tools, as `(file name, source)`: hosts
/// 10.0.0.1 (the source) to 10.0.0.4 in a line, ping and traceroute across three links,
/// multicast to .2 and .3.
pub fn examples() -> Vec<(&'static str, String)> {
    let (a, d) = ([10, 0, 0, 1], [10, 0, 0, 4]);
    alloc::vec![
        ("ping.snap", ping_source(a, d, 7, b"hello", 8)),
        ("plan_ping.snap", plan_ping_source(a, d, 7, b"hello", 8)),
        ("traceroute.snap", traceroute_source(a, d, 9, 10)),
        (
            "multicast.snap",
            multicast_source(a, &[[10, 0, 0, 2], [10, 0, 0, 3]], 5, b"hi all", 9),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::verify;
    use crate::vm::NodeConfig;

    #[test]
    fn every_example_assembles_and_verifies() {
        let node = NodeConfig {
            address: [10, 0, 0, 1],
            ifaces: 2,
            mtu: 1500,
        };
        for (name, text) in examples() {
            let p = assemble(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            verify(&p, &node).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn fig1_is_the_papers_seven_words() {
        let p = ping([10, 0, 0, 1], [10, 0, 0, 2], 7, b"ping", 8);
        let words: Vec<u32> = p.code.iter().map(|w| w.0).collect();
        assert_eq!(
            words,
            [
                0x1000_0000,
                0x0A00_0005,
                0x1800_0001,
                0x2A00_0000,
                0x1200_0000,
                0x1C00_0000,
                0x1600_0000
            ]
        );
        assert_eq!(p.heap, [0x0A00_0004, u32::from_be_bytes(*b"ping")]);
    }
}
