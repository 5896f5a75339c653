//! Links every waist core crate into a `#![no_std]` staticlib without `alloc` or `std`.
//!
//! `.ci/run` builds this for `x86_64-unknown-none`, a target whose standard library has no
//! `std` at all (only `core` and `alloc`): if any core crate, or anything it depends on,
//! pulls in `std`, the build fails with "can't find crate for `std`". Where that target
//! cannot be installed, `.ci/run` falls back to a host build with `panic = "abort"`, where a
//! `std` sneaking in fails instead on the duplicate `panic_impl` lang item (ours below and
//! std's).
//!
//! Each core crate is exercised by one exported function, so its code is really compiled
//! and linked, not just its metadata read.
#![no_std]

use core::panic::PanicInfo;

use ess::{BorrowedTables, Entry, Ess, EssConfig, HashKey, Instant, Tag, Value};

/// `ess`: builds a store over tables on the stack (no allocator), puts `value` under `tag`
/// at tick 0 and reads it back at tick `at`. Returns the value, or `u64::MAX` for *nil* or
/// any error.
#[unsafe(no_mangle)]
pub extern "C" fn waist_nostd_ess_roundtrip(tag: u64, value: u64, at: u64) -> u64 {
    const LOG2: u8 = 4;
    const CAP: usize = 1 << LOG2;
    let Ok(config) = EssConfig::new(LOG2, 1_000, 10, HashKey::from_seed(tag ^ 0x5eed)) else {
        return u64::MAX;
    };
    let mut entries = [Entry::EMPTY; CAP];
    let mut hash = [0u32; 2 * CAP]; // h = 2, the config's default
    let tables = BorrowedTables::new(&mut entries, &mut hash);
    let Ok(mut ess) = Ess::with_tables(config, tables) else {
        return u64::MAX;
    };
    if ess
        .put(Instant::from_ticks(0), Tag(tag), Value(value))
        .is_err()
    {
        return u64::MAX;
    }
    ess.clean(Instant::from_ticks(at), 4);
    ess.get(Instant::from_ticks(at), Tag(tag))
        .map_or(u64::MAX, |v| v.0)
}

#[panic_handler]
fn panic(_info: &PanicInfo<'_>) -> ! {
    loop {}
}

/// `esp-proto`: parses an ESP header from the first `len` (at most 16) bytes of
/// `first ‖ second` (big-endian), clears its Loc bits, and returns its opcode, or
/// `u32::MAX` if the bytes are not a valid header.
#[unsafe(no_mangle)]
pub extern "C" fn waist_nostd_esp_opcode(first: u64, second: u64, len: u8) -> u32 {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&first.to_be_bytes());
    buf[8..].copy_from_slice(&second.to_be_bytes());
    let len = usize::from(len).min(buf.len());
    match esp_proto::wire::Header::new_checked(&mut buf[..len]) {
        Ok(mut h) => {
            h.set_loc(esp_proto::wire::Loc::NONE);
            u32::from(h.opcode())
        }
        Err(_) => u32::MAX,
    }
}

/// `esp-proto` without an allocator: builds a dedicated IPv4 packet carrying COUNT under
/// `tag` with threshold `thresh`, runs it twice through a store on the stack as a router
/// does (locate, process), and returns how many of the two passes were forwarded (0–2), or
/// `u32::MAX` on any error.
#[unsafe(no_mangle)]
pub extern "C" fn waist_nostd_esp_count(tag: u64, thresh: u64) -> u32 {
    use esp_proto::exec::{Context, Env, Verdict, process};
    use esp_proto::instr::Instruction;
    use esp_proto::wire::{HeaderRepr, Loc, emit_dedicated_ipv4, locate};

    const LOG2: u8 = 4;
    const CAP: usize = 1 << LOG2;
    let Ok(config) = EssConfig::new(LOG2, 1_000, 10, HashKey::from_seed(tag)) else {
        return u32::MAX;
    };
    let mut entries = [Entry::EMPTY; CAP];
    let mut hash = [0u32; 2 * CAP];
    let Ok(mut ess) = Ess::with_tables(config, BorrowedTables::new(&mut entries, &mut hash)) else {
        return u32::MAX;
    };
    let instr = Instruction::Count {
        counter: Tag(tag),
        thresh,
    };
    let mut esp = [0u8; 8 + 16];
    let repr = HeaderRepr {
        loc: Loc::ALL,
        err: false,
        rb: false,
        opcode: instr.opcode(),
        cid: 1,
        operand_len: 16,
    };
    if repr.emit(&mut esp).is_err() || instr.emit(&mut esp[8..]).is_err() {
        return u32::MAX;
    }
    let env = Env::new(1, HashKey::from_seed(2));
    let mut forwarded = 0;
    for t in 0..2 {
        let mut packet = [0u8; 20 + 24];
        if emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64, &esp, &[], &mut packet).is_err() {
            return u32::MAX;
        }
        let Ok(Some(at)) = locate(&packet) else {
            return u32::MAX;
        };
        let Ok(mut header) = at.header_mut(&mut packet) else {
            return u32::MAX;
        };
        let p = process(
            &mut Context::new(&mut ess, &env, 1),
            Instant::from_ticks(t),
            &mut header,
        );
        forwarded += u32::from(p.verdict == Verdict::Forward);
    }
    forwarded
}

/// `waist-sansio`: the first draw of `SplitMix64::new(seed)` XOR the first of `Rng::new(seed)`,
/// plus the ticks of `Instant::from_ticks(seed)` moved `add` ticks later.
#[unsafe(no_mangle)]
pub extern "C" fn waist_nostd_sansio_draw(seed: u64, add: u64) -> u64 {
    let later = sansio::Instant::from_ticks(seed)
        .saturating_add(add)
        .ticks();
    let draw = sansio::SplitMix64::new(seed).next_u64() ^ sansio::Rng::new(seed).next_u64();
    draw.wrapping_add(later)
}

/// `waist-ip`: builds an IPv4 header for `ttl`, decrements the TTL in place and returns
/// the new TTL if the header checksum still verifies (`u32::MAX` otherwise).
#[unsafe(no_mangle)]
pub extern "C" fn waist_nostd_ip_ttl(ttl: u8) -> u32 {
    let mut p = [0u8; 20];
    let (src, dst) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
    if waist_ip::emit_header(&mut p, src, dst, 17, ttl, 0).is_err() {
        return u32::MAX;
    }
    match waist_ip::rewrite::decrement_ttl(&mut p) {
        Ok(t) if waist_ip::IpHeader::parse(&p).is_ok() => u32::from(t),
        _ => u32::MAX,
    }
}
