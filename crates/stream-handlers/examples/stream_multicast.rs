//! The README's smallest use: a destination-customised multicast (an Rx-side mirror
//! composed with Tx-side per-destination filters) run natively on real messages, and the
//! work it states per message as plain counts.
use stream_handlers::deploy::Point;
use stream_handlers::handlers::CustomMulticast;
use stream_handlers::{Field, Message, Predicate};

fn main() {
    // Two clients, each customised by its own predicate on the message's first byte.
    let f = Field::new(0, 1);
    let mc = CustomMulticast::new(
        vec![1, 2],
        vec![(1, Predicate::Lt(f, 10)), (2, Predicate::Ge(f, 10))],
    );
    let mut dep = mc.deployment(); // mirror on the Rx side, filters on the Tx side
    for first in [3u8, 12] {
        let out = dep.run(Message::new(0, vec![first, 0, 0, 0]));
        assert_eq!(out.len(), 1);
        println!("value {first:2} -> client {}", out[0].dest);
    }
    // The Tx-side filter runs once per copy: twice per input message.
    let work = dep.work_by_point(1_000);
    assert_eq!(work.outputs, 2);
    println!(
        "per 1 kB message: {} instructions on the Rx side, {} on the Tx side",
        work.at(Point::RxSide).instructions,
        work.at(Point::TxSide).instructions
    );
}
