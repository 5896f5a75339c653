//! What the microcode tests share: hosts on loopback links, ESP packets carrying installed
//! and inline microcode, what arrives read back, and a metrics page read.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use esp_proto::wire::{ErrCode, Header, HeaderRepr, Loc};

/// Long enough for a loaded machine.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// The shipped COUNT microcode (`[counter, thresh]`).
pub(crate) const COUNT: &str = esp_micro::shipped::COUNT;

/// Where [`COUNT`] is.
pub(crate) fn count_path() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esp-microcode/count.snap"
    )
    .to_string()
}

/// A free loopback UDP address, never the same one twice in this process.
pub(crate) fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

/// One host on one of a router's links: its socket and the router's end.
pub(crate) struct Host {
    pub(crate) sock: UdpSocket,
    pub(crate) router: SocketAddr,
    /// Its address (the source of what it sends).
    pub(crate) addr: [u8; 4],
}

impl Host {
    pub(crate) fn new(addr: [u8; 4]) -> Host {
        let sock = UdpSocket::bind(free()).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Host {
            sock,
            router: free(),
            addr,
        }
    }

    /// Its link at the router, named `name`, with a route to its /16.
    pub(crate) fn link(&self, name: &str) -> String {
        let [a, b, ..] = self.addr;
        format!(
            "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{}\"\npeer = \"{}\"\n\n\
             [[route]]\nprefix = \"{a}.{b}.0.0/16\"\nlink = \"{name}\"\n\n",
            self.router,
            self.sock.local_addr().unwrap()
        )
    }

    pub(crate) fn send(&self, packet: &[u8]) {
        self.sock.send_to(packet, self.router).unwrap();
    }

    /// The next datagram, waiting up to [`WAIT`].
    #[track_caller]
    pub(crate) fn recv(&self) -> Vec<u8> {
        let end = Instant::now() + WAIT;
        let mut buf = [0u8; 2048];
        loop {
            match self.sock.recv(&mut buf) {
                Ok(n) => return buf[..n].to_vec(),
                Err(_) if Instant::now() < end => {}
                Err(e) => panic!("nothing arrived: {e}"),
            }
        }
    }
}

/// Two routers' links to each other: (r1's, r2's) sections, named `r2` and `r1`.
pub(crate) fn router_link() -> (String, String) {
    let (x, y) = (free(), free());
    let l = |name: &str, local: SocketAddr, peer: SocketAddr| {
        format!(
            "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n\n"
        )
    };
    (l("r2", x, y), l("r1", y, x))
}

/// A route to `prefix` over `link`.
pub(crate) fn route(prefix: &str, link: &str) -> String {
    format!("[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n\n")
}

/// A dedicated ESP packet from `src` to `dst`: opcode `opcode` of computation `cid`, run
/// at the central context, with operand field `field`.
pub(crate) fn esp_packet(
    src: [u8; 4],
    dst: [u8; 4],
    opcode: u8,
    cid: u32,
    field: &[u8],
) -> Vec<u8> {
    let repr = HeaderRepr {
        loc: Loc::CENTRAL,
        err: false,
        rb: false,
        opcode,
        cid,
        operand_len: u8::try_from(field.len()).unwrap(),
    };
    let mut esp = vec![0u8; repr.buffer_len()];
    repr.emit(&mut esp).unwrap();
    esp[8..].copy_from_slice(field);
    let mut out = vec![0u8; esp_proto::wire::dedicated_ipv4_len(esp.len(), 0)];
    esp_proto::wire::emit_dedicated_ipv4(src, dst, 64, &esp, &[], &mut out).unwrap();
    out
}

/// 64-bit operands as an installed instruction's field.
pub(crate) fn operands(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// COUNT as inline microcode (opcode 32): its code and `[counter, thresh]`.
pub(crate) fn inline_count(counter: u64, thresh: u64) -> Vec<u8> {
    let program = snap_vm::asm::assemble(COUNT).unwrap();
    esp_micro::body::encode(&program, &[counter, thresh]).unwrap()
}

/// What arrived: the ESP header's opcode, Err code (`None`: no Err) and operand field.
#[track_caller]
pub(crate) fn esp_of(packet: &[u8]) -> (u8, Option<ErrCode>, Vec<u8>) {
    let located = esp_proto::wire::locate(packet)
        .unwrap()
        .expect("an ESP packet");
    let h = Header::new_checked(&packet[located.range]).unwrap();
    let err = h.err().then(|| h.err_code());
    (h.opcode(), err, h.operands().to_vec())
}

/// A UDP packet from `src` to `dst` carrying `n` (a marker: what was sent before it on
/// the same path has been decided once it arrives).
pub(crate) fn marker(src: [u8; 4], dst: [u8; 4], n: u32) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    waist_ip::emit_header(&mut p, src.into(), dst.into(), 17, 64, 12).unwrap();
    p[28..32].copy_from_slice(&n.to_be_bytes());
    p
}

/// The metrics page at `addr`.
pub(crate) fn scrape(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(WAIT)).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    s
}

/// The value of sample `key` (name with labels, as rendered) on `page`.
#[track_caller]
pub(crate) fn metric(page: &str, key: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} on the page:\n{page}"))
}
