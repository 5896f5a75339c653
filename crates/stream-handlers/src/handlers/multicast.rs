//! Destination-customised multicast: an Rx-side [`Mirror`] composed with Tx-side
//! per-destination filters ([`DestFilter`]), as the paper builds it (§3.2, §4).

use alloc::vec::Vec;

use super::{DestFilter, Mirror};
use crate::deploy::{Deployment, Point};
use crate::stream::{
    Destination, HandlerError, Message, Needs, Param, Predicate, StreamHandler, Work,
};

/// Destination-customised multicast: every destination receives the copy its own filter
/// lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomMulticast {
    /// The Rx-side mirror (one copy per destination).
    pub mirror: Mirror,
    /// The Tx-side per-destination filters.
    pub filters: DestFilter,
}

impl CustomMulticast {
    /// Multicast to `dests`, customised by `filters` (destination → predicate).
    pub fn new(dests: Vec<Destination>, filters: Vec<(Destination, Predicate)>) -> Self {
        Self {
            mirror: Mirror::new(dests),
            filters: DestFilter::new(filters),
        }
    }

    /// The composition as the NP deploys it: the mirror on the Rx side, the filters on the
    /// Tx side.
    pub fn deployment(&self) -> Deployment {
        let mut d = Deployment::new();
        d.push(Point::RxSide, alloc::boxed::Box::new(self.mirror.clone()));
        d.push(Point::TxSide, alloc::boxed::Box::new(self.filters.clone()));
        d
    }
}

impl StreamHandler for CustomMulticast {
    fn name(&self) -> &'static str {
        "multicast"
    }

    fn handle(&mut self, msg: Message, out: &mut Vec<Message>) {
        let mut copies = Vec::with_capacity(self.mirror.dests.len());
        self.mirror.handle(msg, &mut copies);
        for c in copies {
            self.filters.handle(c, out);
        }
    }

    fn work(&self, len: u64) -> Work {
        let m = self.mirror.work(len);
        let f = self.filters.work(len);
        let n = m.outputs;
        Work {
            instructions: m.instructions + n * f.instructions,
            sram_words: m.sram_words + n * f.sram_words,
            sdram_words: m.sdram_words + n * f.sdram_words,
            outputs: n,
        }
    }

    fn needs(&self) -> Needs {
        self.mirror.needs().then(self.filters.needs())
    }

    /// [`Param::FanOut`] goes to the mirror; [`Param::Predicate`] (every destination) and
    /// [`Param::DestPredicate`] (one destination) to the per-destination filters.
    fn configure(&mut self, param: Param) -> Result<(), HandlerError> {
        match param {
            Param::FanOut(_) => self.mirror.configure(param),
            Param::Predicate(_) | Param::DestPredicate(..) => self.filters.configure(param),
            Param::Route(..) => Err(HandlerError::UnsupportedParam),
        }
    }
}

/// The specification of customised multicast, written naively: for each destination in
/// order, the original message if that destination's predicate passes it.
pub fn naive_multicast(
    dests: &[Destination],
    filters: &[(Destination, Predicate)],
    msg: &Message,
) -> Vec<Message> {
    dests
        .iter()
        .filter(|&&d| {
            filters
                .iter()
                .find(|f| f.0 == d)
                .is_none_or(|f| f.1.matches(&msg.payload))
        })
        .map(|&d| Message::new(d, msg.payload.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Field;
    use alloc::vec;

    #[test]
    fn each_destination_gets_its_filtered_copy() {
        let f = Field::new(0, 1);
        let filters = vec![(1, Predicate::Lt(f, 10)), (2, Predicate::Ge(f, 10))];
        let mut mc = CustomMulticast::new(vec![1, 2, 3], filters.clone());
        for key in [3u8, 12] {
            let m = Message::new(0, vec![key, 0xaa]);
            let mut out = Vec::new();
            mc.handle(m.clone(), &mut out);
            assert_eq!(out, naive_multicast(&[1, 2, 3], &filters, &m));
            assert_eq!(out.len(), 2);
            let mut d = mc.deployment();
            assert_eq!(d.run(m.clone()), out);
        }
        assert_eq!(mc.work(100).outputs, 3);
    }
}
