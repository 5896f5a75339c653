//! The README's smallest use: a two-interface router forwards one UDP packet in place.
use waist_node::{Config, Instant, Node, routes::prefix};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut node = Node::new(Config::router([10, 0, 0, 254].into(), 2), Instant::ZERO)?;
    node.add_route(prefix([10, 2, 0, 0].into(), 16)?, 1);
    let mut frame = [0u8; 28];
    waist_ip::emit_header(
        &mut frame,
        [10, 1, 0, 1].into(),
        [10, 2, 0, 7].into(),
        17,
        64,
        8,
    )?;
    let out = node
        .handle_packet(Instant::ZERO, 0, &mut frame)
        .ok_or("dropped")?; // forwarded in place
    assert_eq!(out.iface, 1);
    println!(
        "10.1.0.1 -> 10.2.0.7 leaves on interface {}, TTL now {}",
        out.iface, frame[8]
    );
    Ok(())
}
