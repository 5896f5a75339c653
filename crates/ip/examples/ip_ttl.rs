//! The README's smallest use: build an IPv4 header, decrement its TTL in place, and check
//! that the header checksum still verifies.
use waist_ip::{IpHeader, emit_header, rewrite};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut p = [0u8; 24];
    emit_header(
        &mut p,
        [10, 0, 0, 1].into(),
        [10, 0, 0, 2].into(),
        17,
        64,
        4,
    )?;
    rewrite::decrement_ttl(&mut p)?;
    let h = IpHeader::parse(&p)?; // checks version, lengths and the header checksum
    assert_eq!(h.ttl, 63);
    println!(
        "{} -> {}: TTL {}, checksum still verifies",
        h.src, h.dst, h.ttl
    );
    Ok(())
}
