//! Handlers that decide where messages go without changing them: content-based routing,
//! mirroring, filtering and the per-destination (Tx-side) filter. Each needs only the
//! prefix its fields lie in ([`Needs::Prefix`]), so it can decide on a message's first
//! fragment.

use alloc::vec::Vec;

use crate::stream::{
    Destination, Field, HandlerError, Message, Needs, Param, Predicate, StreamHandler, Work,
};

/// Content-based routing: the destination is looked up from a field of the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentRouter {
    /// The field routed on.
    pub field: Field,
    /// Field value → destination, scanned in order (a small table in SRAM).
    pub routes: Vec<(u32, Destination)>,
    /// Where unmatched messages go (`None`: dropped).
    pub default: Option<Destination>,
    /// Most routes the table holds.
    pub capacity: usize,
}

impl ContentRouter {
    /// A router on `field` with an empty table of `capacity` routes.
    pub fn new(field: Field, default: Option<Destination>, capacity: usize) -> Self {
        Self {
            field,
            routes: Vec::new(),
            default,
            capacity,
        }
    }

    /// The destination for `payload`, if any.
    pub fn route(&self, payload: &[u8]) -> Option<Destination> {
        let v = self.field.read(payload);
        v.and_then(|v| self.routes.iter().find(|r| r.0 == v).map(|r| r.1))
            .or(self.default)
    }
}

impl StreamHandler for ContentRouter {
    fn name(&self) -> &'static str {
        "route"
    }

    fn handle(&mut self, msg: Message, out: &mut Vec<Message>) {
        if let Some(dest) = self.route(&msg.payload) {
            out.push(Message { dest, ..msg });
        }
    }

    fn work(&self, _len: u64) -> Work {
        let n = self.routes.len() as u64;
        Work {
            // Field extract, loop over the table (load, compare, branch, advance), enqueue.
            instructions: 12 + 4 * n,
            sram_words: n + 1,
            sdram_words: 1,
            outputs: 1,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Prefix(self.field.end())
    }

    fn configure(&mut self, param: Param) -> Result<(), HandlerError> {
        let Param::Route(value, dest) = param else {
            return Err(HandlerError::UnsupportedParam);
        };
        if let Some(r) = self.routes.iter_mut().find(|r| r.0 == value) {
            r.1 = dest;
            return Ok(());
        }
        if self.routes.len() >= self.capacity {
            return Err(HandlerError::TableFull);
        }
        self.routes.push((value, dest));
        Ok(())
    }
}

/// Mirroring: a copy of every message to each destination. On the NP a copy is a
/// descriptor on a transmit queue (the buffer is shared); on the host, a send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// The destinations, one copy each.
    pub dests: Vec<Destination>,
}

impl Mirror {
    /// A mirror to `dests`.
    pub fn new(dests: Vec<Destination>) -> Self {
        Self { dests }
    }
}

impl StreamHandler for Mirror {
    fn name(&self) -> &'static str {
        "mirror"
    }

    fn handle(&mut self, msg: Message, out: &mut Vec<Message>) {
        let Some((&last, rest)) = self.dests.split_last() else {
            return;
        };
        for &dest in rest {
            out.push(Message {
                dest,
                payload: msg.payload.clone(),
            });
        }
        // The last copy takes the original buffer.
        out.push(Message { dest: last, ..msg });
    }

    fn work(&self, _len: u64) -> Work {
        let n = self.dests.len() as u64;
        Work {
            // Per copy: build a descriptor, bump the buffer's reference count, enqueue.
            instructions: 6 + 8 * n,
            sram_words: 2 * n,
            sdram_words: 0,
            outputs: n,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Prefix(0)
    }

    fn configure(&mut self, param: Param) -> Result<(), HandlerError> {
        let Param::FanOut(n) = param else {
            return Err(HandlerError::UnsupportedParam);
        };
        self.dests = (0..n).collect();
        Ok(())
    }
}

/// Filtering: keep the messages that pass a predicate, drop the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    /// What passes.
    pub predicate: Predicate,
}

impl Filter {
    /// A filter keeping what passes `predicate`.
    pub fn new(predicate: Predicate) -> Self {
        Self { predicate }
    }
}

impl StreamHandler for Filter {
    fn name(&self) -> &'static str {
        "filter"
    }

    fn handle(&mut self, msg: Message, out: &mut Vec<Message>) {
        if self.predicate.matches(&msg.payload) {
            out.push(msg);
        }
    }

    fn work(&self, _len: u64) -> Work {
        Work {
            instructions: 4 + self.predicate.instructions(),
            sram_words: 0,
            sdram_words: self.predicate.words_read(),
            outputs: 1,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Prefix(self.predicate.end())
    }

    fn configure(&mut self, param: Param) -> Result<(), HandlerError> {
        let Param::Predicate(p) = param else {
            return Err(HandlerError::UnsupportedParam);
        };
        self.predicate = p;
        Ok(())
    }
}

/// A Tx-side filter: each destination has its own predicate, applied to the copy addressed
/// to it (destinations without one get everything).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestFilter {
    /// Destination → predicate its copies must pass.
    pub filters: Vec<(Destination, Predicate)>,
}

impl DestFilter {
    /// A per-destination filter.
    pub fn new(filters: Vec<(Destination, Predicate)>) -> Self {
        Self { filters }
    }

    /// The predicate for `dest` ([`Predicate::All`] if it has none; the first entry wins).
    pub fn predicate(&self, dest: Destination) -> Predicate {
        self.filters
            .iter()
            .find(|f| f.0 == dest)
            .map_or(Predicate::All, |f| f.1)
    }
}

impl StreamHandler for DestFilter {
    fn name(&self) -> &'static str {
        "dest-filter"
    }

    fn handle(&mut self, msg: Message, out: &mut Vec<Message>) {
        if self.predicate(msg.dest).matches(&msg.payload) {
            out.push(msg);
        }
    }

    fn work(&self, _len: u64) -> Work {
        // The Tx thread of the destination's port holds its predicate in SRAM: one
        // lookup, one evaluation.
        let worst = self
            .filters
            .iter()
            .map(|f| f.1.instructions())
            .max()
            .unwrap_or(1);
        Work {
            instructions: 6 + worst,
            sram_words: 2,
            sdram_words: 1,
            outputs: 1,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Prefix(self.filters.iter().map(|f| f.1.end()).max().unwrap_or(0))
    }

    /// [`Param::Predicate`] replaces every destination's predicate;
    /// [`Param::DestPredicate`] sets one destination's (its first entry, the one
    /// [`DestFilter::predicate`] reads), adding an entry if it has none.
    fn configure(&mut self, param: Param) -> Result<(), HandlerError> {
        match param {
            Param::Predicate(p) => {
                for f in &mut self.filters {
                    f.1 = p;
                }
            }
            Param::DestPredicate(dest, p) => match self.filters.iter_mut().find(|f| f.0 == dest) {
                Some(f) => f.1 = p,
                None => self.filters.push((dest, p)),
            },
            _ => return Err(HandlerError::UnsupportedParam),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;

    fn msg(key: u8) -> Message {
        Message::new(0, vec![key, 1, 2, 3])
    }

    #[test]
    fn router_routes_on_the_field_and_falls_back_to_default() {
        let mut r = ContentRouter::new(Field::new(0, 1), None, 2);
        r.configure(Param::Route(5, 9)).unwrap();
        r.configure(Param::Route(6, 8)).unwrap();
        assert_eq!(
            r.configure(Param::Route(7, 1)),
            Err(HandlerError::TableFull)
        );
        r.configure(Param::Route(6, 3)).unwrap();
        let mut out = Vec::new();
        r.handle(msg(5), &mut out);
        r.handle(msg(6), &mut out);
        r.handle(msg(7), &mut out);
        assert_eq!(out.iter().map(|m| m.dest).collect::<Vec<_>>(), vec![9, 3]);
        r.default = Some(4);
        r.handle(msg(7), &mut out);
        assert_eq!(out.last().map(|m| m.dest), Some(4));
        assert_eq!(
            r.configure(Param::FanOut(2)),
            Err(HandlerError::UnsupportedParam)
        );
    }

    #[test]
    fn mirror_copies_to_each_destination_and_fan_out_changes() {
        let mut m = Mirror::new(vec![1, 2, 3]);
        let mut out = Vec::new();
        m.handle(msg(1), &mut out);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|o| o.payload == msg(1).payload));
        m.configure(Param::FanOut(5)).unwrap();
        assert_eq!(m.work(100).outputs, 5);
        assert!(m.work(100).instructions > Mirror::new(vec![1]).work(100).instructions);
    }

    #[test]
    fn filters_keep_what_passes() {
        let f = Field::new(0, 1);
        let mut flt = Filter::new(Predicate::Ge(f, 3));
        let mut out = Vec::new();
        flt.handle(msg(2), &mut out);
        flt.handle(msg(3), &mut out);
        assert_eq!(out.len(), 1);
        let mut d = DestFilter::new(vec![(1, Predicate::Eq(f, 2))]);
        out.clear();
        d.handle(Message::new(1, vec![2]), &mut out);
        d.handle(Message::new(1, vec![3]), &mut out);
        d.handle(Message::new(2, vec![3]), &mut out);
        assert_eq!(out.len(), 2);
        d.configure(Param::Predicate(Predicate::Eq(f, 3))).unwrap();
        assert_eq!(d.predicate(1), Predicate::Eq(f, 3));
    }

    #[test]
    fn one_destination_is_re_parameterised_alone() {
        let f = Field::new(0, 1);
        let mut d = DestFilter::new(vec![(1, Predicate::Eq(f, 1)), (2, Predicate::Eq(f, 2))]);
        d.configure(Param::DestPredicate(2, Predicate::Ge(f, 5)))
            .unwrap();
        assert_eq!(d.predicate(1), Predicate::Eq(f, 1));
        assert_eq!(d.predicate(2), Predicate::Ge(f, 5));
        d.configure(Param::DestPredicate(3, Predicate::Lt(f, 2)))
            .unwrap();
        assert_eq!(d.filters.len(), 3);
        assert_eq!(d.predicate(3), Predicate::Lt(f, 2));
        assert_eq!(d.predicate(1), Predicate::Eq(f, 1));
        for mut h in [
            Box::new(Filter::new(Predicate::All)) as Box<dyn StreamHandler>,
            Box::new(Mirror::new(vec![1])),
            Box::new(ContentRouter::new(f, None, 1)),
        ] {
            assert_eq!(
                h.configure(Param::DestPredicate(1, Predicate::All)),
                Err(HandlerError::UnsupportedParam)
            );
        }
    }
}
