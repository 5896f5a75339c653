//! The baseline peer for the server benches: smoltcp's TCP socket on an established
//! connection, clocked by one peer ACK per segment.
//!
//! Shared by `benches/server.rs` and `examples/server_per_request.rs` (each includes it
//! with `#[path]`). [`SmolConn::step`] is one element: `send_slice` of one segment's data,
//! one pre-built peer ACK (IPv4 + TCP, both checksums valid) acking the previous segment,
//! and `Interface::poll`, which verifies both checksums, processes the ACK and dispatches
//! exactly one MSS-sized segment, checksummed, into the device's reused buffer.

use std::hint::black_box;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::wire::{
    HardwareAddress, IpAddress, IpCidr, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpControl,
    TcpPacket, TcpRepr, TcpSeqNumber,
};

/// Payload bytes per segment: the peer's MSS option, equal to Trickles' `DEFAULT_MSS`.
pub(crate) const MSS: usize = 1362;
/// Virtual time per step, as for the Trickles pool.
const STEP_US: i64 = 12;

const PEER: Ipv4Address = Ipv4Address::new(192, 0, 2, 1);
const LOCAL: Ipv4Address = Ipv4Address::new(198, 51, 100, 7);
const PEER_PORT: u16 = 40_000;
const LOCAL_PORT: u16 = 80;
const PEER_ISS: u32 = 0x1000_0000;

/// An in-memory IP-medium device: receives pre-built packets from `rx[next..]` (one per
/// `pending`), writes what the stack sends into one reused buffer and counts it.
pub(crate) struct BenchDevice {
    rx: Vec<Vec<u8>>,
    next: usize,
    pending: usize,
    tx: Vec<u8>,
    tx_len: usize,
    /// Packets the stack has sent.
    pub(crate) sent: usize,
}

/// Receive token: one pre-built packet.
pub(crate) struct Rx<'a>(&'a [u8]);
/// Transmit token: the reused buffer.
pub(crate) struct Tx<'a> {
    buf: &'a mut [u8],
    len: &'a mut usize,
    sent: &'a mut usize,
}

impl phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        *self.len = len;
        *self.sent += 1;
        f(&mut self.buf[..len])
    }
}

impl Device for BenchDevice {
    type RxToken<'a> = Rx<'a>;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: smoltcp::time::Instant) -> Option<(Rx<'_>, Tx<'_>)> {
        if self.pending == 0 {
            return None;
        }
        self.pending -= 1;
        let packet = &self.rx[self.next];
        self.next += 1;
        let tx = Tx {
            buf: &mut self.tx,
            len: &mut self.tx_len,
            sent: &mut self.sent,
        };
        Some((Rx(packet), tx))
    }

    fn transmit(&mut self, _: smoltcp::time::Instant) -> Option<Tx<'_>> {
        Some(Tx {
            buf: &mut self.tx,
            len: &mut self.tx_len,
            sent: &mut self.sent,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = 1500;
        caps
    }
}

/// A peer segment to the socket, as an IPv4 packet with both checksums.
fn peer_packet(control: TcpControl, seq: u32, ack: Option<u32>, mss: Option<u16>) -> Vec<u8> {
    let tcp = TcpRepr {
        src_port: PEER_PORT,
        dst_port: LOCAL_PORT,
        control,
        seq_number: TcpSeqNumber(seq as i32),
        ack_number: ack.map(|a| TcpSeqNumber(a as i32)),
        window_len: 65_535,
        window_scale: None,
        max_seg_size: mss,
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload: &[],
    };
    let ip = Ipv4Repr {
        src_addr: PEER,
        dst_addr: LOCAL,
        next_header: IpProtocol::Tcp,
        payload_len: tcp.buffer_len(),
        hop_limit: 64,
    };
    let mut buf = vec![0u8; ip.buffer_len() + tcp.buffer_len()];
    let caps = DeviceCapabilities::default().checksum;
    let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
    ip.emit(&mut packet, &caps);
    tcp.emit(
        &mut TcpPacket::new_unchecked(packet.payload_mut()),
        &IpAddress::Ipv4(PEER),
        &IpAddress::Ipv4(LOCAL),
        &caps,
    );
    buf
}

/// The socket's last sent segment: (sequence number, payload length).
pub(crate) fn last_sent(dev: &BenchDevice) -> (u32, usize) {
    let ip = Ipv4Packet::new_checked(&dev.tx[..dev.tx_len]).unwrap();
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    (tcp.seq_number().0 as u32, tcp.payload().len())
}

/// An established smoltcp connection with one full segment in flight, ACKs for the next
/// segments queued in the device, and the virtual time.
pub(crate) struct SmolConn {
    iface: Interface,
    /// The device.
    pub(crate) dev: BenchDevice,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    now_us: i64,
    /// Sequence number the next segment will carry.
    pub(crate) next_seq: u32,
    /// How many ACKs each refill builds.
    acks: usize,
}

impl SmolConn {
    /// Sets up the connection and builds `acks` ACKs.
    pub(crate) fn new(acks: usize) -> SmolConn {
        let mut dev = BenchDevice {
            rx: Vec::new(),
            next: 0,
            pending: 0,
            tx: vec![0u8; 1500],
            tx_len: 0,
            sent: 0,
        };
        let mut now_us = 1_000_000i64;
        let now = smoltcp::time::Instant::from_micros(now_us);
        let mut iface = Interface::new(Config::new(HardwareAddress::Ip), &mut dev, now);
        iface.update_ip_addrs(|a| a.push(IpCidr::new(IpAddress::Ipv4(LOCAL), 24)).unwrap());
        // Leaked `'static` slices: smoltcp's `alloc` feature stays off, as the crate uses it.
        // The send ring holds a whole number of segments (48 × 1362 = 65,376 bytes): smoltcp
        // sends only the contiguous part of the ring, so a segment that wraps would go out
        // in two pieces.
        let rx: &'static mut [u8] = Box::leak(vec![0u8; 65_536].into_boxed_slice());
        let tx: &'static mut [u8] = Box::leak(vec![0u8; 48 * MSS].into_boxed_slice());
        let mut socket = tcp::Socket::new(tcp::SocketBuffer::new(rx), tcp::SocketBuffer::new(tx));
        socket.listen(LOCAL_PORT).unwrap();
        let storage: &'static mut [SocketStorage<'static>] =
            Box::leak(vec![SocketStorage::EMPTY].into_boxed_slice());
        let mut sockets = SocketSet::new(storage);
        let handle = sockets.add(socket);

        // Handshake: SYN (MSS 1362), SYN-ACK, ACK.
        dev.rx = vec![peer_packet(
            TcpControl::Syn,
            PEER_ISS,
            None,
            Some(MSS as u16),
        )];
        dev.pending = 1;
        iface.poll(now, &mut dev, &mut sockets);
        let (iss, _) = last_sent(&dev);
        dev.rx = vec![peer_packet(
            TcpControl::None,
            PEER_ISS + 1,
            Some(iss + 1),
            None,
        )];
        dev.next = 0;
        dev.pending = 1;
        now_us += 100;
        iface.poll(
            smoltcp::time::Instant::from_micros(now_us),
            &mut dev,
            &mut sockets,
        );
        assert_eq!(
            sockets.get::<tcp::Socket<'_>>(handle).state(),
            tcp::State::Established
        );

        // Prime: one full segment in flight.
        let payload = [0x5au8; MSS];
        sockets
            .get_mut::<tcp::Socket<'_>>(handle)
            .send_slice(&payload)
            .unwrap();
        now_us += 100;
        let sent = dev.sent;
        iface.poll(
            smoltcp::time::Instant::from_micros(now_us),
            &mut dev,
            &mut sockets,
        );
        assert_eq!(dev.sent, sent + 1);
        assert_eq!(last_sent(&dev), (iss + 1, MSS));
        let mut conn = SmolConn {
            iface,
            dev,
            sockets,
            handle,
            now_us,
            next_seq: iss + 1 + MSS as u32,
            acks,
        };
        conn.refill();
        conn
    }

    /// Queues ACKs for the next segments, each acking the one before.
    pub(crate) fn refill(&mut self) {
        let first = self.next_seq;
        self.dev.rx = (0..self.acks as u32)
            .map(|k| {
                let ack = first.wrapping_add(k.wrapping_mul(MSS as u32));
                peer_packet(TcpControl::None, PEER_ISS + 1, Some(ack), None)
            })
            .collect();
        self.dev.next = 0;
    }

    /// ACKs left before [`SmolConn::refill`] is needed.
    pub(crate) fn acks_left(&self) -> usize {
        self.dev.rx.len() - self.dev.next
    }

    /// One element: queue a segment's worth of data, deliver one ACK, poll.
    #[inline(always)]
    pub(crate) fn step(&mut self, payload: &[u8]) {
        self.now_us += STEP_US;
        let socket = self.sockets.get_mut::<tcp::Socket<'_>>(self.handle);
        black_box(socket.send_slice(payload).ok());
        self.dev.pending = 1;
        self.iface.poll(
            smoltcp::time::Instant::from_micros(self.now_us),
            &mut self.dev,
            &mut self.sockets,
        );
        black_box(&mut self.dev.tx);
        self.next_seq = self.next_seq.wrapping_add(MSS as u32);
    }
}
