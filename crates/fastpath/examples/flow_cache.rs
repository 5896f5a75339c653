//! The README's smallest use: a source-hashed flow cache, one miss then a hit.
use fastpath::{FlowCache, FlowId, Lookup, SourceHash};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut cache: FlowCache<u16> = FlowCache::new(16)?; // 65,536 slots
    let fid = FlowId::new(&[10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0, 7])?;
    let hash = SourceHash::new(0x9c41_7be2); // chosen by the sender
    let (port, l) = cache.get_or_insert_with(hash, &fid, |_| 3); // slow path on a miss
    assert_eq!((*port, l), (3, Lookup::Miss));
    assert_eq!(cache.get(hash, &fid), Some(&3));
    println!(
        "first packet: {l:?}, then a hit: port {:?}",
        cache.get(hash, &fid)
    );
    Ok(())
}
