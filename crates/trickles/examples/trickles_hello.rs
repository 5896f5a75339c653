//! The README's smallest use: one Trickles transfer without a network. The server keeps
//! no per-connection state; every request carries the continuation it needs.
use trickles::Instant;
use trickles::client::{Client, ClientConfig};
use trickles::conn::{Addr, FourTuple};
use trickles::crypto::KeyConfig;
use trickles::server::{Server, ServerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let keys = KeyConfig {
        mac_keys: [[1; 16], [2; 16]],
        current_epoch: 0,
        nonce_key: [3; 16],
        rtx_nonce_key: [4; 16],
    };
    let mut server = Server::new(ServerConfig::new(keys));
    let (c, s) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
    let tuple = FourTuple {
        client_addr: c,
        client_port: 4000,
        server_addr: s,
        server_port: 80,
    };
    let mut client = Client::new(ClientConfig::default(), tuple, 12345);
    let object = b"a stateless hello";
    client.connect(Instant::ZERO, b"GET /");
    let (mut now, mut requests) = (Instant::ZERO, 0);
    while !client.is_complete() {
        now = now.saturating_add(1_000); // a millisecond later
        let Some(request) = client.poll_transmit() else {
            break;
        };
        requests += 1;
        let Ok(reply) = server.handle_request(now, c, s, &request) else {
            continue;
        };
        for r in &reply.responses {
            // The application: serve the requested range of `object`.
            let (start, len) = r
                .range
                .map_or((0, 0), |r| (r.start as usize, usize::from(r.len)));
            let data = object
                .get(start..(start + len).min(object.len()))
                .unwrap_or_default();
            let eos = start + len >= object.len();
            let mut buf = [0u8; 1600];
            let n = server
                .emit(&tuple, r, &[], data, eos, &mut buf)
                .map_err(|e| format!("{e:?}"))?;
            client
                .handle_segment(now, buf.get(..n).unwrap_or_default())
                .map_err(|e| format!("{e:?}"))?;
        }
    }
    let mut got = [0u8; 64];
    let n = client.read(&mut got);
    assert_eq!(&got[..n], object);
    println!(
        "{requests} request(s), received {:?}",
        String::from_utf8_lossy(&got[..n])
    );
    Ok(())
}
