//! The send side of a link: frames queued during a batch, sent together at its end.
//!
//! A daemon hands each outgoing frame to [`Links::send`](super::Links::send) (or
//! `send_to` on a link to many peers) while it works through a received batch; the frames
//! wait here, copied into one buffer, until [`Links::flush`](super::Links::flush). There
//! they are cut into **runs** ([`runs`]): consecutive frames to the same peer, all of one
//! length but the last (which may be shorter), at most the socket's GSO segment limit and
//! 64 KiB together.
//!
//! ```text
//!  queue  [a:1400][a:1400][a:1400][a:600][b:1400][a:90][a:1400]
//!  runs    └──── one sendmsg, segment 1400 ───┘  └ single ┘└ single ┘└ single ┘
//!                (UDP GSO: the kernel cuts it)    └──── one sendmmsg ──────────┘
//! ```
//!
//! A run of two or more goes out as one `sendmsg` with a segment size (UDP GSO; quinn-udp,
//! which falls back to one datagram per call where the kernel cannot segment); the single
//! frames between runs go out together in one `sendmmsg`. Order on the wire is the queue's.
//! A frame a router forwards unchanged in length from a GRO run therefore leaves in a run
//! as long as the one it came in.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;

/// Most bytes one GSO run carries (a UDP datagram's payload limit, rounded down).
pub const MAX_RUN_BYTES: usize = 65_000;

/// Most single frames one `sendmmsg` carries.
const MMSG: usize = 64;

/// One queued frame: where it goes and where its bytes are in the queue's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Queued {
    pub(crate) dest: Option<SocketAddr>,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// Frames waiting to be sent on one link. See the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct TxQueue {
    pub(crate) buf: Vec<u8>,
    pub(crate) frames: Vec<Queued>,
}

impl TxQueue {
    /// Queues a copy of `frame` for `dest` (`None`: the link's peer).
    #[inline]
    pub(crate) fn push(&mut self, dest: Option<SocketAddr>, frame: &[u8]) {
        self.push_parts(dest, &[frame]);
    }

    /// Queues the frame made of `parts`, one after the other (gathered, each copied once).
    pub(crate) fn push_parts(&mut self, dest: Option<SocketAddr>, parts: &[&[u8]]) {
        let start = self.buf.len();
        for part in parts {
            self.buf.extend_from_slice(part);
        }
        self.frames.push(Queued {
            dest,
            start,
            len: self.buf.len() - start,
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.frames.clear();
    }

    /// The bytes of queued frame `i`.
    pub(crate) fn frame(&self, i: usize) -> &[u8] {
        self.frames
            .get(i)
            .and_then(|q| self.buf.get(q.start..q.start + q.len))
            .unwrap_or_default()
    }
}

/// A run of queued frames that goes out in one system call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// The frames, by queue position.
    pub frames: Range<usize>,
    /// The length of every frame of the run but the last (which may be shorter).
    pub segment: usize,
}

/// Cuts frames, given as `(destination, length)` in queue order, into the runs
/// [`Links::flush`](super::Links::flush) sends: frames join the run before them while the
/// destination is the same, their length is the run's segment (or shorter, which closes the run), the run
/// has fewer than `max_segments` frames and stays within [`MAX_RUN_BYTES`]. Every frame is
/// in exactly one run, in order. An empty frame is always a run of its own.
pub fn runs<D: PartialEq>(frames: &[(D, usize)], max_segments: usize) -> Vec<Run> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < frames.len() {
        let run = next_run(frames.len(), at, max_segments, |i| {
            frames.get(i).map(|(d, l)| (d, *l))
        });
        at = run.frames.end;
        out.push(run);
    }
    out
}

/// The run that starts at frame `start` of `n` (see [`runs`]), reading frame `i`'s
/// destination and length through `frame(i)`: what [`runs`] and the flush share, the
/// flush without building a list.
#[inline]
fn next_run<D: PartialEq>(
    n: usize,
    start: usize,
    max_segments: usize,
    frame: impl Fn(usize) -> Option<(D, usize)>,
) -> Run {
    let Some((dest, segment)) = frame(start) else {
        return Run {
            frames: start..n.max(start),
            segment: 0,
        };
    };
    let mut end = start + 1;
    let mut bytes = segment;
    if segment > 0 {
        while end < n && end - start < max_segments {
            let Some((d, len)) = frame(end) else { break };
            if d != dest || len == 0 || len > segment || bytes + len > MAX_RUN_BYTES {
                break;
            }
            end += 1;
            bytes += len;
            if len < segment {
                break;
            }
        }
    }
    Run {
        frames: start..end,
        segment,
    }
}

/// What became of a flushed queue's frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    pub(crate) sent: u64,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
    pub(crate) full: u64,
    pub(crate) refused: u64,
    pub(crate) errors: u64,
}

impl Sent {
    /// Counts `n` frames that met `r`.
    pub(crate) fn record(&mut self, n: usize, bytes: usize, r: &io::Result<()>) {
        let n = n as u64;
        match r {
            Ok(()) => {
                self.sent += n;
                self.bytes += bytes as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.full += n,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => self.refused += n,
            Err(_) => self.errors += n,
        }
    }
}

/// Sends every frame of `q` on UDP socket `sock` (peer `peer` when a frame names none),
/// in runs; `captured` sees each frame that left. Never waits: a full socket
/// drops what does not fit (counted in `full`).
pub(crate) fn flush_udp(
    sock: &tokio::net::UdpSocket,
    state: &quinn_udp::UdpSocketState,
    peer: Option<SocketAddr>,
    q: &TxQueue,
    mut captured: impl FnMut(&[u8]),
) -> Sent {
    let mut sent = Sent::default();
    let max = state.max_gso_segments().max(1);
    let n = q.frames.len();
    let mut singles: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < n {
        let run = next_run(n, at, max, |i| {
            q.frames.get(i).map(|f| (f.dest.or(peer), f.len))
        });
        at = run.frames.end.max(at + 1);
        if run.frames.len() == 1 {
            singles.push(run.frames.start);
            if singles.len() == MMSG {
                send_singles(sock, q, peer, &singles, &mut sent, &mut captured);
                singles.clear();
            }
            continue;
        }
        if !singles.is_empty() {
            send_singles(sock, q, peer, &singles, &mut sent, &mut captured);
            singles.clear();
        }
        let (Some(first), Some(last)) = (
            q.frames.get(run.frames.start),
            q.frames.get(run.frames.end - 1),
        ) else {
            continue;
        };
        let bytes = q
            .buf
            .get(first.start..last.start + last.len)
            .unwrap_or_default();
        let Some(dest) = first.dest.or(peer) else {
            sent.record(
                run.frames.len(),
                0,
                &Err(io::ErrorKind::NotConnected.into()),
            );
            continue;
        };
        let t = quinn_udp::Transmit {
            destination: dest,
            ecn: None,
            contents: bytes,
            segment_size: Some(run.segment),
            src_ip: None,
        };
        let r = state.try_send(sock.into(), &t);
        sent.calls += 1;
        if r.is_ok() {
            for i in run.frames.clone() {
                captured(q.frame(i));
            }
        }
        sent.record(run.frames.len(), bytes.len(), &r);
    }
    if !singles.is_empty() {
        send_singles(sock, q, peer, &singles, &mut sent, &mut captured);
    }
    sent
}

/// Sends the single frames `idx` of `q` with `sendmmsg`, going on after a partial send
/// until the socket refuses.
fn send_singles(
    sock: &tokio::net::UdpSocket,
    q: &TxQueue,
    peer: Option<SocketAddr>,
    idx: &[usize],
    sent: &mut Sent,
    captured: &mut impl FnMut(&[u8]),
) {
    use nix::sys::socket::{MsgFlags, MultiHeaders, SockaddrStorage, sendmmsg};
    use std::os::fd::AsRawFd;
    let mut rest = idx;
    while !rest.is_empty() {
        let iovs: Vec<[io::IoSlice<'_>; 1]> = rest
            .iter()
            .map(|&i| [io::IoSlice::new(q.frame(i))])
            .collect();
        // A connected socket's own peer needs no address (and keeps its cached route).
        let addrs: Vec<Option<SockaddrStorage>> = rest
            .iter()
            .map(|&i| {
                q.frames
                    .get(i)
                    .and_then(|f| f.dest.filter(|d| Some(*d) != peer))
                    .map(SockaddrStorage::from)
            })
            .collect();
        let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(rest.len(), None);
        let r = sendmmsg(
            sock.as_raw_fd(),
            &mut headers,
            &iovs,
            &addrs,
            [],
            MsgFlags::MSG_DONTWAIT,
        )
        .map(Iterator::count);
        sent.calls += 1;
        match r {
            Ok(n) if n > 0 => {
                let n = n.min(rest.len());
                let (done, left) = rest.split_at(n);
                let bytes: usize = done.iter().map(|&i| q.frame(i).len()).sum();
                for &i in done {
                    captured(q.frame(i));
                }
                sent.record(n, bytes, &Ok(()));
                rest = left;
            }
            Ok(_) => {
                sent.record(rest.len(), 0, &Err(io::ErrorKind::WouldBlock.into()));
                return;
            }
            Err(e) => {
                // The first frame was refused: count it and go on with the rest (a refused
                // or oversized frame must not take the ones after it down too).
                let e = io::Error::from(e);
                let last = e.kind() == io::ErrorKind::WouldBlock;
                let n = if last { rest.len() } else { 1 };
                sent.record(n, 0, &Err(e));
                rest = rest.get(n..).unwrap_or_default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lens(r: &[Run]) -> Vec<(Range<usize>, usize)> {
        r.iter().map(|r| (r.frames.clone(), r.segment)).collect()
    }

    #[test]
    fn runs_follow_destination_and_length() {
        let f = [
            ('a', 1400),
            ('a', 1400),
            ('a', 1400),
            ('a', 600),
            ('b', 1400),
            ('a', 90),
            ('a', 1400),
        ];
        assert_eq!(
            lens(&runs(&f, 64)),
            [(0..4, 1400), (4..5, 1400), (5..6, 90), (6..7, 1400)]
        );
        // The segment limit and the byte limit both cut.
        let f = [('a', 100); 5];
        assert_eq!(lens(&runs(&f, 2)), [(0..2, 100), (2..4, 100), (4..5, 100)]);
        let f = [('a', 30_000); 3];
        assert_eq!(lens(&runs(&f, 64)), [(0..2, 30_000), (2..3, 30_000)]);
        // A longer frame starts a new run; an empty one is alone.
        let f = [('a', 100), ('a', 200), ('a', 0), ('a', 0)];
        assert_eq!(
            lens(&runs(&f, 64)),
            [(0..1, 100), (1..2, 200), (2..3, 0), (3..4, 0)]
        );
    }

    proptest! {
        #[test]
        fn every_frame_in_one_valid_run(
            f in proptest::collection::vec((0u8..3, prop_oneof![Just(1400usize), 0usize..2000]), 0..200),
            max in 1usize..70,
        ) {
            let r = runs(&f, max);
            let mut at = 0;
            for run in &r {
                prop_assert_eq!(run.frames.start, at);
                prop_assert!(!run.frames.is_empty() && run.frames.len() <= max);
                let fr = &f[run.frames.clone()];
                prop_assert!(fr.iter().all(|(d, _)| *d == fr[0].0));
                prop_assert_eq!(fr[0].1, run.segment);
                let (last, body) = fr.split_last().unwrap();
                prop_assert!(body.iter().all(|(_, l)| *l == run.segment));
                prop_assert!(last.1 <= run.segment);
                if fr.len() > 1 {
                    prop_assert!(fr.iter().map(|(_, l)| l).sum::<usize>() <= MAX_RUN_BYTES);
                    prop_assert!(run.segment > 0);
                }
                at = run.frames.end;
            }
            prop_assert_eq!(at, f.len());
        }
    }
}
