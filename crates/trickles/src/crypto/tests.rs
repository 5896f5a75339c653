use super::*;
use crate::wire::continuation::EpochStart;
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
