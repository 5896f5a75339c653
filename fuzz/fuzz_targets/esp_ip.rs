//! Locating ESP instructions in arbitrary IP packets, and piggybacking one.
//!
//! Asserts: `locate` never panics; a range it returns is in bounds and holds exactly one
//! ESP header; rewriting control bits and operands through that header changes no byte
//! outside the range (the IP header is never changed) and the packet still locates the same;
//! a packet that carries no instruction either refuses a small one with a value or, once
//! piggybacked, locates to exactly that instruction; reflecting twice is the identity bar
//! the recomputed IPv4 checksum.
#![no_main]

use esp_proto::wire::{Header, IpError, Loc, locate, piggyback_into, piggybacked_len, reflect};
use libfuzzer_sys::fuzz_target;

/// COUNT-sized: version 1, Loc = output, opcode 1, CID 7, three operand bytes.
const ESP: [u8; 11] = [0x14, 0, 1, 3, 0, 0, 0, 7, 1, 2, 3];

fuzz_target!(|data: &[u8]| {
    match locate(data) {
        Ok(Some(found)) => {
            assert!(found.range.start <= found.range.end && found.range.end <= data.len());
            let mut buf = data.to_vec();
            let mut h = Header::new_checked(&mut buf[found.range.clone()])
                .expect("a located range holds one header");
            h.set_loc(Loc::from_bits(!h.loc().bits()));
            h.set_err(!h.err());
            h.set_rb(!h.rb());
            for b in h.operands_mut() {
                *b ^= 0xA5;
            }
            for (i, (a, b)) in data.iter().zip(&buf).enumerate() {
                assert!(
                    a == b || found.range.contains(&i),
                    "byte {i} outside the range changed"
                );
            }
            assert_eq!(locate(&buf), Ok(Some(found.clone())));
            assert_eq!(
                piggybacked_len(data, &ESP),
                Err(IpError::AlreadyCarried {
                    offset: found.range.start
                })
            );
        }
        Ok(None) => match piggybacked_len(data, &ESP) {
            Ok(len) => {
                let mut out = vec![0; len];
                assert_eq!(piggyback_into(data, &ESP, &mut out), Ok(len));
                let found = locate(&out)
                    .expect("piggybacked packets parse")
                    .expect("and carry it");
                assert_eq!(&out[found.range], &ESP[..]);
            }
            Err(IpError::OptionSpace { .. } | IpError::Ip(waist_ip::IpError::TooLong { .. })) => {}
            Err(e) => panic!("a packet that locates cannot be refused with {e:?}"),
        },
        Err(_) => return,
    }
    let mut twice = data.to_vec();
    reflect(&mut twice).expect("a packet that locates reflects");
    reflect(&mut twice).expect("and reflects back");
    if data[0] >> 4 == 4 {
        assert_eq!((&twice[..10], &twice[12..]), (&data[..10], &data[12..]));
    } else {
        assert_eq!(twice, data);
    }
});
