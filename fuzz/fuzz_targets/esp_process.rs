//! A router processing arbitrary ESP headers against one small store.
//!
//! Asserts, for every packet that parses as a header: processing never panics; the packet's
//! length, version, opcode, CID and reserved bits never change (only Loc, Err, RB and the
//! operands may, and the error code when it aborts); an abort always leaves Err set, its
//! code recorded and Loc clear and forwards; packets that arrive with Err or RB set are not
//! touched at all; and one instruction creates at most 3w + 3 ≤ 27 bindings.
#![no_main]

use esp_proto::exec::{Context, Env, Verdict, process};
use esp_proto::wire::ErrCode;
use esp_proto::wire::Header;
use ess::{Ess, EssConfig, HashKey, Instant};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let config = EssConfig::new(3, 8, 1, HashKey::from_seed(1)).expect("valid config");
    let mut ess = Ess::new(config);
    // The input is a sequence of packets, each prefixed by a length byte and a time step.
    let mut rest = data;
    let mut now = 0u64;
    while let [len, step, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (pkt, next) = tail.split_at(len);
        rest = next;
        now += u64::from(*step % 4);
        let mut buf = pkt.to_vec();
        let Ok(mut h) = Header::new_checked(&mut buf[..]) else {
            continue;
        };
        let untouched = h.err() || h.rb();
        let created = ess.counters().created;
        let env = Env::new(7, HashKey::from_seed(2));
        let cid = h.cid();
        let p = process(
            &mut Context::new(&mut ess, &env, cid),
            Instant::from_ticks(now),
            &mut h,
        );
        assert!(ess.counters().created - created <= 27, "bounded store work");
        if let Some(abort) = p.abort {
            assert!(h.err() && h.loc().is_empty());
            assert_eq!(h.err_code(), abort.code());
            assert_ne!(h.err_code(), ErrCode::None);
            assert_eq!(p.verdict, Verdict::Forward);
        } else {
            assert_eq!(buf[1] & 0x70, pkt[1] & 0x70, "code changes only on abort");
        }
        assert_eq!(buf.len(), pkt.len());
        assert_eq!(buf[0] >> 4, pkt[0] >> 4, "version");
        assert_eq!(buf[1] & 0x0F, pkt[1] & 0x0F, "reserved bits");
        assert_eq!(
            buf[1] & 0x80,
            pkt[1] & 0x80,
            "RB is never changed by a router"
        );
        assert_eq!(buf[2..8], pkt[2..8], "opcode, length and CID");
        if untouched {
            assert_eq!(buf, pkt, "Err/RB packets pass unprocessed");
        }
    }
});
