//! The links' tests.

use super::*;
use crate::config::Source;

#[derive(serde::Deserialize)]
struct File {
    link: Vec<LinkConfig>,
}

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    crate::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn links_of(text: &str) -> (Source, Vec<LinkConfig>) {
    let s = Source::new("t.toml", text);
    let f: File = s.parse().unwrap();
    (s, f.link)
}

#[tokio::test]
async fn two_udp_links_exchange_frames_and_count() {
    // Two free ports, then each link bound to one and connected to the other.
    let (pa, pb) = (free(), free());
    let conf = |name: &str, local: SocketAddr, peer: SocketAddr, extra: &str| {
        format!(
            "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{extra}"
        )
    };
    let t0 = Instant::now();
    let (s, c) = links_of(&conf("a", pa, pb, ""));
    let mut a = Links::open(&c, &s, t0).await.unwrap();
    let (s, c) = links_of(&conf("b", pb, pa, "emulation = { delay_ms = 20 }\n"));
    let mut b = Links::open(&c, &s, t0).await.unwrap();
    b.send(0, &[0x45, 1, 2, 3], Instant::now());
    b.flush();
    // Emulated: nothing leaves before 20 ms.
    assert!(b.next_due().is_some());
    let mut batch = Batch::new();
    assert!(a.try_recv_batch(0, &mut batch).is_err());
    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    b.send_due(Instant::now());
    let i = tokio::time::timeout(std::time::Duration::from_secs(2), a.recv(&mut batch))
        .await
        .unwrap();
    let got: Vec<Vec<u8>> = batch.frames().map(|f| f.to_vec()).collect();
    assert_eq!((i, got), (0, vec![vec![0x45, 1, 2, 3]]));
    assert_eq!(a.get(0).unwrap().counters().rx_frames, 1);
    assert_eq!(b.get(0).unwrap().counters().tx_frames, 1);
    assert_eq!(b.get(0).unwrap().emulation().unwrap().delivered, 1);
}

#[tokio::test]
async fn config_errors_are_located() {
    let (s, c) = links_of(
        "[[link]]\nname = \"a\"\nkind = \"udp\"\nlocal = \"127.0.0.1:0\"\npeer = \"nowhere\"\n",
    );
    let e = Links::open(&c, &s, Instant::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.toml:5:8: key `peer`: not a socket address"),
        "{e}"
    );
    let (s, c) = links_of("[[link]]\nname = \"a\"\nkind = \"udp\"\n");
    let e = Links::open(&c, &s, Instant::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("key `kind`: a udp link needs `local`"), "{e}");
    let (s, c) = links_of(
        "[[link]]\nname = \"t\"\nkind = \"tun\"\ndevice = \"x\"\naddresses = [\"10.0.0.1/40\"]\n",
    );
    let e = Links::open(&c, &s, Instant::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("prefix length 40 above 32"), "{e}");
    let (s, c) =
        links_of("[[link]]\nname = \"t\"\nkind = \"tun\"\ndevice = \"x\"\nholddown_ms = 5\n");
    let e = Links::open(&c, &s, Instant::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.toml:5:15: key `holddown_ms`: a tun link is always up"),
        "{e}"
    );
}

#[tokio::test]
async fn a_batched_link_takes_many_datagrams_a_call() {
    let (pa, pb) = (free(), free());
    let (s, c) = links_of(&format!(
        "[[link]]\nname = \"a\"\nkind = \"udp\"\nlocal = \"{pa}\"\npeer = \"{pb}\"\nbatch = true\n"
    ));
    let mut a = Links::open(&c, &s, Instant::now()).await.unwrap();
    let peer = std::net::UdpSocket::bind(pb).unwrap();
    peer.connect(pa).unwrap();
    for i in 0..10u8 {
        peer.send(&[0x45, i, 0, 0]).unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut batch = Batch::new();
    let mut got = Vec::new();
    while let Ok(n) = a.try_recv_batch(0, &mut batch) {
        assert!(n.delivered() > 0);
        got.extend(batch.frames().map(|f| f.to_vec()));
    }
    assert_eq!(got.len(), 10, "{got:?}");
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, f)| f == &[0x45, i as u8, 0, 0])
    );
    assert_eq!(a.get(0).unwrap().counters().rx_frames, 10);
}

#[test]
fn cidr() {
    assert_eq!(parse_cidr("10.1.0.1/24"), Ok(([10, 1, 0, 1].into(), 24)));
    assert!(parse_cidr("10.1.0.1").is_err());
    assert!(parse_cidr("fd00::1/129").is_err());
}

#[tokio::test]
async fn a_refused_link_goes_down_comes_up_when_heard_and_is_retried() {
    use std::time::Duration;
    let (pa, pb) = (free(), free());
    let (s, c) = links_of(&format!(
        "[[link]]\nname = \"a\"\nkind = \"udp\"\nlocal = \"{pa}\"\npeer = \"{pb}\"\nholddown_ms = 200\n"
    ));
    let mut a = Links::open(&c, &s, Instant::now()).await.unwrap();
    let link = |a: &Links| {
        (
            a.get(0).unwrap().is_up(),
            a.get(0).unwrap().counters().refused,
        )
    };
    assert_eq!(link(&a), (true, 0));
    assert_eq!(a.get(0).unwrap().holddown(), Duration::from_millis(200));
    // Nobody at pb: the kernel answers the first send with port unreachable, which the
    // next send reports (a receive would too; the socket is not woken for it).
    tokio::time::sleep(Duration::from_millis(10)).await; // the reactor learns it may send
    let mut batch = Batch::new();
    let send = |a: &mut Links| {
        a.send(0, &[0x45, 0, 0, 0], Instant::now());
        a.flush();
    };
    send(&mut a);
    assert_eq!(link(&a), (true, 0));
    assert_eq!(a.get(0).unwrap().counters().tx_frames, 1);
    send(&mut a);
    assert_eq!(link(&a), (false, 1));
    let down_at = Instant::now();
    assert_eq!(
        a.poll_event(),
        Some(LinkEvent {
            iface: 0,
            up: false,
            cause: Cause::Refused
        })
    );
    assert_eq!(a.poll_event(), None, "one event per change");
    // More refusals while down: counted, not reported again.
    for _ in 0..4 {
        send(&mut a);
    }
    assert_eq!(link(&a).1, 3, "{:?}", a.get(0).unwrap().counters());
    assert!(!link(&a).0 && a.poll_event().is_none());
    // The peer starts on the same port and speaks: up at once.
    let peer = std::net::UdpSocket::bind(pb).unwrap();
    peer.connect(pa).unwrap();
    peer.send(&[0x45, 9, 9, 9]).unwrap();
    tokio::time::timeout(Duration::from_secs(2), a.recv(&mut batch))
        .await
        .unwrap();
    assert_eq!(batch.frames().next().unwrap(), &[0x45, 9, 9, 9]);
    assert!(link(&a).0);
    assert_eq!(
        a.poll_event(),
        Some(LinkEvent {
            iface: 0,
            up: true,
            cause: Cause::Heard
        })
    );
    assert_eq!(a.next_retry(), None);
    // The peer goes away again: down, and up again only once the hold-down is over.
    drop(peer);
    send(&mut a);
    send(&mut a);
    let _ = a.try_recv_batch(0, &mut batch);
    assert!(!link(&a).0);
    assert_eq!(a.poll_event().map(|e| e.up), Some(false));
    let retry = a.next_retry().expect("a retry is due");
    assert!(retry >= down_at + Duration::from_millis(200));
    a.retry_due(retry - Duration::from_millis(1));
    assert!(
        !link(&a).0 && a.poll_event().is_none(),
        "not before the hold-down"
    );
    a.retry_due(retry);
    assert!(link(&a).0);
    assert_eq!(
        a.poll_event(),
        Some(LinkEvent {
            iface: 0,
            up: true,
            cause: Cause::Retry
        })
    );
}

/// A loopback socket for the tests below: quinn-udp sends with UDP GSO and receives with
/// GRO on (non-blocking, on the test's runtime).
fn gso_socket() -> (tokio::net::UdpSocket, quinn_udp::UdpSocketState) {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let state = quinn_udp::UdpSocketState::new((&s).into()).unwrap();
    (tokio::net::UdpSocket::from_std(s).unwrap(), state)
}

/// Frame `seq` of sender `who`: `len` bytes, its first four `0x45, who, seq`, the rest a
/// pattern of both.
fn tagged(who: u8, seq: u16, len: usize) -> Vec<u8> {
    let [s0, s1] = seq.to_be_bytes();
    let mut f = vec![0x45, who, s0, s1];
    f.extend((4..len).map(|i| (i as u8).wrapping_mul(who).wrapping_add(s1)));
    f
}

#[tokio::test]
async fn a_link_to_many_peers_splits_gso_bursts_by_source_and_answers_each() {
    use std::time::Duration;
    const BURSTS: u16 = 3;
    const RUN: u16 = 8;
    // One link to many peers (no `peer`), two senders with different frame lengths.
    let local = free();
    let mut links = Links::new();
    let many = LinkSpec::Udp { local, peer: None };
    let t0 = Instant::now();
    let i = links
        .add("many", &many, &LinkOptions::default(), t0)
        .await
        .unwrap();
    assert_eq!(links.get(i).unwrap().peer(), None);
    let senders = [(1u8, 300usize, gso_socket()), (2u8, 500usize, gso_socket())];
    for (_, _, (_, state)) in &senders {
        assert!(state.max_gso_segments() >= usize::from(RUN), "no UDP GSO");
    }
    // Each sender: BURSTS GSO bursts of RUN frames, the last of each burst shorter.
    let mut expected: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    for b in 0..BURSTS {
        for (who, len, (s, state)) in &senders {
            let frames: Vec<Vec<u8>> = (0..RUN)
                .map(|k| {
                    let short = k == RUN - 1;
                    tagged(*who, b * RUN + k, if short { len - 40 } else { *len })
                })
                .collect();
            let contents = frames.concat();
            let t = quinn_udp::Transmit {
                destination: local,
                ecn: None,
                contents: &contents,
                segment_size: Some(*len),
                src_ip: None,
            };
            state.try_send(s.into(), &t).unwrap();
            let from = s.local_addr().unwrap();
            expected.extend(frames.into_iter().map(|f| (from, f)));
        }
    }
    let total = expected.len();

    // Every datagram arrives on its own, with its sender's address.
    let mut batch = Batch::new();
    let mut got: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    while got.len() < total {
        let iface = tokio::time::timeout(Duration::from_secs(5), links.recv(&mut batch))
            .await
            .unwrap_or_else(|_| panic!("{} of {total} datagrams: {got:?}", got.len()));
        assert_eq!(iface, i);
        got.extend(batch.datagrams().map(|(src, d)| (src, d.to_vec())));
    }
    let by_sender = |v: &[(SocketAddr, Vec<u8>)], who: u8| -> Vec<(SocketAddr, Vec<u8>)> {
        v.iter().filter(|(_, d)| d[1] == who).cloned().collect()
    };
    for (who, _, _) in &senders {
        // Order is kept per sender; the two may interleave.
        assert_eq!(by_sender(&got, *who), by_sender(&expected, *who));
    }
    assert_eq!(got.len(), total);
    let c = links.get(i).unwrap().counters();
    assert_eq!((c.rx_frames, c.rx_dropped()), (total as u64, 0), "{c:?}");
    assert!(
        c.rx_calls <= u64::from(2 * BURSTS),
        "a burst is one GRO message: {c:?}"
    );

    // Answer each datagram to its source, the answer as long as the question: one GSO
    // run per burst goes out.
    for (src, d) in &got {
        let mut answer = d.clone();
        answer[0] = 0x46;
        links.send_to(i, *src, &answer, Instant::now());
    }
    links.flush();
    let c = links.get(i).unwrap().counters();
    assert_eq!(c.tx_frames, total as u64, "{c:?}");
    assert!(c.tx_calls < c.tx_frames, "{c:?}");
    assert!(c.tx_calls <= u64::from(2 * BURSTS), "{c:?}");
    assert_eq!((c.tx_full, c.tx_errors), (0, 0), "{c:?}");

    // Each sender gets exactly its own answers (read with GRO: they came as runs).
    for (who, _, (s, state)) in &senders {
        let want: Vec<Vec<u8>> = by_sender(&expected, *who)
            .into_iter()
            .map(|(_, mut d)| {
                d[0] = 0x46;
                d
            })
            .collect();
        let mut answers: Vec<Vec<u8>> = Vec::new();
        let mut messages = 0;
        let mut bufs = vec![vec![0u8; 65_536]; 8];
        let mut meta = vec![quinn_udp::RecvMeta::default(); 8];
        while answers.len() < want.len() {
            let n = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    s.readable().await.unwrap();
                    let r = s.try_io(tokio::io::Interest::READABLE, || {
                        let mut slices: Vec<io::IoSliceMut<'_>> =
                            bufs.iter_mut().map(|b| io::IoSliceMut::new(b)).collect();
                        state.recv(s.into(), &mut slices, &mut meta)
                    });
                    if let Ok(n) = r {
                        break n;
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("sender {who}: {} answers", answers.len()));
            for (m, buf) in meta.iter().zip(&bufs).take(n) {
                messages += 1;
                assert_eq!(m.addr, local);
                answers.extend(buf[..m.len].chunks(m.stride.max(1)).map(<[u8]>::to_vec));
            }
        }
        assert_eq!(answers, want, "sender {who}");
        assert!(
            messages < answers.len(),
            "sender {who}: answers came as GSO runs"
        );
    }
}

/// Frames sent in parts arrive joined, on a plain link (gathered into the queue, equal
/// lengths leaving as one GSO run) and on an emulated one (joined before the emulation).
#[tokio::test]
async fn frames_sent_in_parts_arrive_whole() {
    let (pa, pb, pc, pd) = (free(), free(), free(), free());
    let conf = |name: &str, local: SocketAddr, peer: SocketAddr, extra: &str| {
        format!(
            "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{extra}"
        )
    };
    let t0 = Instant::now();
    let open = |name: &'static str, local, peer, extra: &'static str| {
        let (s, c) = links_of(&conf(name, local, peer, extra));
        async move { Links::open(&c, &s, t0).await.unwrap() }
    };
    let mut a = open("a", pa, pb, "").await;
    let mut b = open("b", pb, pa, "").await;
    let mut d = open("d", pd, pc, "").await;
    let mut e = open("e", pc, pd, "emulation = { delay_ms = 1 }\n").await;
    let frames: Vec<Vec<u8>> = (0..5u8).map(|i| vec![0x45, i, 7, 7, 7, 7]).collect();
    for f in &frames {
        b.send_parts(0, None, &[&f[..2], &f[2..]], Instant::now());
    }
    b.flush();
    e.send_parts(0, None, &[&[0x45, 9], &[], &[1, 2]], Instant::now());
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    e.send_due(Instant::now());
    let mut batch = Batch::new();
    let mut got = Vec::new();
    while got.len() < 5 {
        tokio::time::timeout(std::time::Duration::from_secs(2), a.recv(&mut batch))
            .await
            .unwrap();
        got.extend(batch.frames().map(|f| f.to_vec()));
    }
    assert_eq!(got, frames);
    tokio::time::timeout(std::time::Duration::from_secs(2), d.recv(&mut batch))
        .await
        .unwrap();
    let joined: Vec<Vec<u8>> = batch.frames().map(|f| f.to_vec()).collect();
    assert_eq!(joined, vec![vec![0x45, 9, 1, 2]]);
    let tx = b.get(0).unwrap().counters();
    assert_eq!(tx.tx_frames, 5);
    assert!(tx.tx_calls < 5, "one GSO run, not a call each: {tx:?}");
}
