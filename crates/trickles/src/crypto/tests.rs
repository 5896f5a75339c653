use super::*;
use crate::wire::continuation::EpochStart;
use alloc::vec::Vec;
use proptest::prelude::*;

proptest! {
    /// The register-built IPv4 blocks are the documented input's 48 bytes, and their
    /// tag is the general CMAC's of those bytes.
    #[test]
    fn v4_blocks_are_the_documented_input(
        client in any::<[u8; 4]>(), server in any::<[u8; 4]>(),
        ports in any::<(u16, u16)>(), words in any::<[u32; 6]>(),
        halves in any::<(u16, u16, u16)>(), rtx in any::<u8>(), nonce in any::<u64>(),
        es in 0usize..3,
    ) {
        let tuple = FourTuple {
            client_addr: Addr::V4(client),
            client_port: ports.0,
            server_addr: Addr::V4(server),
            server_port: ports.1,
        };
        let c = Continuation {
            number: words[0],
            tcp_base: words[1],
            start_cwnd: halves.0,
            ssthresh: halves.1,
            proof_start: words[2],
            rtt_us: words[3],
            timestamp_ms: words[4],
            epoch_start: [EpochStart::Open, EpochStart::Recovery, EpochStart::Timeout][es],
            rtx,
            site: halves.2,
            key_epoch: 0,
            flags: 0,
            conn_nonce: nonce,
            tag: [0; 16],
        };
        let mut bytes = [0u8; CONT_MAC_MAX];
        prop_assert_eq!(continuation_mac_input(&tuple, &c, &mut bytes), CONT_MAC_V4);
        let blocks = continuation_blocks_v4(client, server, &tuple, &c);
        for (i, b) in blocks.iter().enumerate() {
            prop_assert_eq!(&b.to_ne_bytes()[..], &bytes[16 * i..16 * i + 16]);
        }
        let key = MacKey::new(&[words[5] as u8; 16]);
        prop_assert_eq!(key.tag3_blocks(blocks), key.tag_u128(&[&bytes[..CONT_MAC_V4]]));
    }
}

/// A continuation from random field values; `key_epoch` and `flags` as given.
fn continuation_from(words: [u32; 6], halves: [u16; 3], rest: (u8, u64, usize)) -> Continuation {
    let (rtx, nonce, es) = rest;
    Continuation {
        number: words[0],
        tcp_base: words[1],
        start_cwnd: halves[0],
        ssthresh: halves[1],
        proof_start: words[2],
        rtt_us: words[3],
        timestamp_ms: words[4],
        epoch_start: [EpochStart::Open, EpochStart::Recovery, EpochStart::Timeout][es % 3],
        rtx,
        site: halves[2],
        key_epoch: 0,
        flags: 0,
        conn_nonce: nonce,
        tag: [0xA5; 16],
    }
}

/// An address of the family `v6`, from random bytes.
fn addr(v6: bool, bytes: [u8; 16]) -> Addr {
    if v6 {
        Addr::V6(bytes)
    } else {
        Addr::V4([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
}

proptest! {
    /// `mac_continuations` gives every continuation of a batch the tag `mac_continuation`
    /// gives it alone (zeros where that is `None`), for IPv4, IPv6 and mixed tuples, both
    /// live epochs mixed in one batch (and now and then a dead one or a reserved flag),
    /// delayed-ack flag on and off, 1 to 9 continuations per batch.
    #[test]
    fn batched_continuation_macs_equal_one_by_one(
        families in (any::<bool>(), any::<bool>()),
        addrs in any::<([u8; 16], [u8; 16])>(),
        ports in any::<(u16, u16)>(),
        keys in any::<([u8; 16], [u8; 16], u8)>(),
        batch in proptest::collection::vec(
            (any::<[u32; 6]>(), any::<[u16; 3]>(), (any::<u8>(), any::<u64>(), 0usize..3),
             0u8..16, 0u8..8),
            1..=9,
        ),
    ) {
        let tuple = FourTuple {
            client_addr: addr(families.0, addrs.0),
            client_port: ports.0,
            server_addr: addr(families.1, addrs.1),
            server_port: ports.1,
        };
        let cfg = KeyConfig {
            mac_keys: [keys.0, keys.1],
            current_epoch: keys.2,
            nonce_key: [3; 16],
            rtx_nonce_key: [4; 16],
        };
        let server = ServerKeys::new(&cfg);
        let mut cs: Vec<Continuation> = batch
            .iter()
            .map(|&(words, halves, rest, epoch, flags)| {
                let mut c = continuation_from(words, halves, rest);
                // Mostly the two live epochs; 1 in 16 a dead one.
                c.key_epoch = match epoch {
                    0 => keys.2.wrapping_add(1 + epoch % 2),
                    e if e % 2 == 0 => keys.2,
                    _ => keys.2.wrapping_sub(1),
                };
                // Mostly 0 and the delayed-ack bit; 1 in 8 a reserved bit.
                c.flags = match flags {
                    0 => 0x02,
                    f => f & CONTINUATION_FLAG_DELAYED_ACK,
                };
                c
            })
            .collect();
        let expected: Vec<Option<Tag>> =
            cs.iter().map(|c| server.mac_continuation(&tuple, c)).collect();
        let macd = server.mac_continuations(&tuple, cs.iter_mut());
        prop_assert_eq!(macd, expected.iter().filter(|t| t.is_some()).count());
        for (c, want) in cs.iter().zip(&expected) {
            prop_assert_eq!(c.tag, want.unwrap_or_default());
            if want.is_some() {
                prop_assert!(server.verify_continuation(&tuple, c));
            }
        }
    }
}
