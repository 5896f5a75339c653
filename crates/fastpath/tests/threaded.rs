//! Threaded-index properties: every 32-bit word is a label that re-encodes to itself;
//! forwarding on any table and any label either refuses with the right error or sends
//! with exactly the entry's next index and one hop less, in place on the packet too.
#![allow(clippy::unwrap_used)] // tests

use fastpath::threaded::{
    Entry, Forward, ForwardError, LABEL_LEN, Label, LabelKind, NextHop, ThreadedTable,
};
use proptest::prelude::*;

fn entry() -> impl Strategy<Value = Option<Entry>> {
    proptest::option::of(
        (proptest::option::of(any::<u16>()), 0u32..1 << 24).prop_map(|(iface, next_index)| Entry {
            next_hop: iface.map_or(NextHop::Local, NextHop::Neighbour),
            next_index,
        }),
    )
}

proptest! {
    #[test]
    fn every_word_round_trips(word in any::<u32>()) {
        let label = Label::from_word(word);
        prop_assert_eq!(label.to_word(), Ok(word));
        let mut bytes = [0u8; LABEL_LEN];
        label.emit(&mut bytes).unwrap();
        prop_assert_eq!(u32::from_be_bytes(bytes), word);
        prop_assert_eq!(Label::parse(&bytes), Ok(label));
    }

    #[test]
    fn forward_follows_the_entry(
        entries in proptest::collection::vec(entry(), 0..40),
        word in any::<u32>(),
    ) {
        let mut table = ThreadedTable::new();
        for (i, e) in entries.iter().enumerate() {
            if let Some(e) = e {
                table.set(i as u32, *e).unwrap();
            }
        }
        let label = Label::from_word(word);
        let got = table.forward(label);
        let slot = entries.get(label.index as usize);
        let want = match (label.kind, slot) {
            (LabelKind::Random, _) => Err(ForwardError::NotThreaded),
            // Positions past the last installed entry do not exist in the table.
            (_, None) => Err(ForwardError::IndexOutOfRange),
            (_, Some(None)) if (label.index as usize) >= table.len() => {
                Err(ForwardError::IndexOutOfRange)
            }
            (_, Some(None)) => Err(ForwardError::NoRoute),
            (_, Some(Some(e))) => match e.next_hop {
                NextHop::Local => Ok(Forward::Deliver),
                NextHop::Neighbour(_) if label.hop_limit == 0 => Err(ForwardError::HopLimitExceeded),
                NextHop::Neighbour(iface) => Ok(Forward::Send {
                    iface,
                    out_label: Label::threaded(e.next_index, label.hop_limit - 1),
                }),
            },
        };
        prop_assert_eq!(got, want);
        // The in-place version agrees and leaves the payload alone.
        let mut packet = word.to_be_bytes().to_vec();
        packet.extend_from_slice(b"payload");
        match table.forward_packet(&mut packet) {
            Ok(Some(iface)) => {
                let Ok(Forward::Send { iface: i, out_label }) = want else {
                    return Err(TestCaseError::fail("in-place sent, forward did not"));
                };
                prop_assert_eq!(iface, i);
                prop_assert_eq!(Label::parse(&packet), Ok(out_label));
            }
            Ok(None) => prop_assert_eq!(want, Ok(Forward::Deliver)),
            Err(e) => prop_assert_eq!(want, Err(e)),
        }
        prop_assert_eq!(&packet[LABEL_LEN..], b"payload");
    }
}
