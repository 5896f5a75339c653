//! A first router's answers to its hosts' questions (§4, Fig. 6).

use alloc::vec::Vec;

use super::wire::{self, AdvEntry, Advertisement, MessageKind, PrefixEntry};
use super::{HandleError, Route, Router};
use crate::lpm::IpPrefix;

impl Router {
    /// Answers a host's query (§4, Fig. 6: "before the source S can send a packet to the
    /// destination D it first sends a query to the next router A asking for D's index").
    /// Changes no route. Returns how many entries it answered.
    ///
    /// * An [`MessageKind::IndexQuery`] (kind 3) names routers: appends an
    ///   [`MessageKind::IndexAnswer`] giving, for each, this router's index and cost, or
    ///   cost [`wire::UNREACHABLE`] and index 0 when it has no route.
    /// * An [`MessageKind::AddressQuery`] (kind 6) names addresses: appends an
    ///   [`MessageKind::AddressAnswer`] giving, for each in order, the longest reachable
    ///   prefix containing it ([`Router::lookup_v4`], [`Router::lookup_v6`]) with its
    ///   index and cost, or the address itself (a /32 or /128) with cost
    ///   [`wire::UNREACHABLE`] and index 0.
    ///
    /// An index stays bound to its destination until the destination is garbage
    /// collected ([`Config::gc_timeout`](super::Config::gc_timeout) after it became
    /// unreachable); then it may be reused, so hosts refresh what they learned
    /// ([`super::host::FirstHop`]).
    ///
    /// # Errors
    ///
    /// Bytes that are not a well-formed index or address query; `out` is untouched then.
    pub fn answer_query(&mut self, query: &[u8], out: &mut Vec<u8>) -> Result<usize, HandleError> {
        let adv = Advertisement::parse(query).inspect_err(|_| self.stats.bad_messages += 1)?;
        let infinity = self.config.infinity;
        let reachable = |r: Option<Route>| r.filter(|r| r.cost < infinity);
        let answered = match adv.kind() {
            MessageKind::IndexQuery => {
                let answers: Vec<AdvEntry> = adv
                    .entries()
                    .map(|e| match reachable(self.route(e.dest)) {
                        Some(r) => AdvEntry {
                            dest: e.dest,
                            cost: r.cost,
                            index: r.index,
                        },
                        None => AdvEntry {
                            dest: e.dest,
                            cost: wire::UNREACHABLE,
                            index: 0,
                        },
                    })
                    .collect();
                Advertisement::emit(MessageKind::IndexAnswer, self.config.id, &answers, out);
                answers.len()
            }
            MessageKind::AddressQuery => {
                let answers: Vec<PrefixEntry> = adv
                    .prefix_entries()
                    .map(|e| {
                        let found = match e.prefix {
                            IpPrefix::V4(a) => {
                                self.lookup_v4(a.addr()).map(|(p, r)| (IpPrefix::V4(p), r))
                            }
                            IpPrefix::V6(a) => {
                                self.lookup_v6(a.addr()).map(|(p, r)| (IpPrefix::V6(p), r))
                            }
                        };
                        match found {
                            Some((prefix, r)) => PrefixEntry {
                                prefix,
                                cost: r.cost,
                                index: r.index,
                            },
                            None => PrefixEntry {
                                prefix: e.prefix,
                                cost: wire::UNREACHABLE,
                                index: 0,
                            },
                        }
                    })
                    .collect();
                Advertisement::emit_prefixes(
                    MessageKind::AddressAnswer,
                    self.config.id,
                    &answers,
                    out,
                );
                answers.len()
            }
            _ => {
                self.stats.bad_messages += 1;
                return Err(HandleError::NotAQuery);
            }
        };
        self.stats.queries += 1;
        Ok(answered)
    }
}
