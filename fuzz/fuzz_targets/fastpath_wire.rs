//! Arbitrary bytes as a source-hash IPv4 option, an IPv4 header with options, and an IPv6
//! header's flow label (`fastpath::wire`).
//!
//! Asserts, for any input: no parser panics; an option that parses re-emits into exactly
//! `buffer_len()` bytes equal to the input (the encoding is canonical) and parses back to
//! the same value; an option found in an IPv4 header is the one a re-parse of its bytes
//! gives; inserting an option into a header that has none yields a header in which
//! `find_ipv4_option` finds exactly that option, whose checksum verifies and whose payload
//! is unchanged; writing a flow label and reading it back gives its low 20 bits.
#![no_main]

use fastpath::wire::{
    SourceHashOption, find_ipv4_option, insert_ipv4_option, ipv6_flow_label, set_ipv6_flow_label,
};
use fastpath::{FlowId, SourceHash};
use libfuzzer_sys::fuzz_target;

fn checksum_ok(header: &[u8]) -> bool {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

fuzz_target!(|data: &[u8]| {
    // 1. The option alone.
    if let Ok(opt) = SourceHashOption::parse(data) {
        let mut out = vec![0u8; opt.buffer_len()];
        assert_eq!(opt.emit(&mut out), Ok(out.len()));
        assert_eq!(out, data, "option encoding is canonical");
        assert_eq!(SourceHashOption::parse(&out), Ok(opt));
    }

    // 2. The input as an IPv4 header's options and payload: byte 0 picks the option
    //    words, so the option walk sees arbitrary options.
    let (words, rest) = match data.split_first() {
        Some((w, rest)) => (usize::from(w % 11), rest),
        None => (0, data),
    };
    let opts_len = (words * 4).min(rest.len() & !3);
    let mut pkt = vec![
        0x45u8, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    pkt[0] = 0x40 | (5 + opts_len / 4) as u8;
    pkt.extend_from_slice(rest);
    let total = pkt.len() as u16;
    pkt[2..4].copy_from_slice(&total.to_be_bytes());
    match find_ipv4_option(&pkt) {
        Ok(Some(found)) => {
            // It is somewhere among the options; re-parse its own bytes.
            let mut out = vec![0u8; found.buffer_len()];
            found.emit(&mut out).expect("re-emits");
            assert_eq!(SourceHashOption::parse(&out), Ok(found));
        }
        Ok(None) => {
            // 3. No option yet: insert one derived from the input and find it again.
            let hash = SourceHash::new(
                data.iter()
                    .fold(0u32, |h, &b| h.rotate_left(5) ^ u32::from(b)),
            );
            let flow_id = FlowId::new(rest.get(..rest.len().min(16)).unwrap_or(&[])).ok();
            let opt = SourceHashOption { hash, flow_id };
            if let Ok(with) = insert_ipv4_option(&pkt, &opt) {
                assert_eq!(find_ipv4_option(&with), Ok(Some(opt)));
                let ihl = usize::from(with[0] & 0x0f) * 4;
                assert!(checksum_ok(&with[..ihl]));
                assert_eq!(&with[ihl..], &pkt[20 + opts_len..], "payload unchanged");
                assert_eq!(
                    usize::from(u16::from_be_bytes([with[2], with[3]])),
                    with.len()
                );
            }
        }
        Err(_) => {}
    }

    // 4. The input as an IPv6 packet: the flow label round-trips.
    let mut v6 = data.to_vec();
    if let Some(b) = v6.first_mut() {
        *b = 0x60 | (*b & 0x0f);
    }
    if ipv6_flow_label(&v6).is_ok() {
        let h = SourceHash::new((data.len() as u32).wrapping_mul(0x9e37_79b9));
        set_ipv6_flow_label(&mut v6, h).expect("label writes");
        assert_eq!(
            ipv6_flow_label(&v6),
            Ok(SourceHash::new(h.get() & 0xf_ffff))
        );
        assert_eq!(v6[4..], data[4..], "only the label changed");
    }
});
