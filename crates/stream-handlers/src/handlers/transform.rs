//! Handlers that change the message: delta (rewrites a fifth of it) and the format handler
//! [`ByteSwap`] (converts the whole payload). Both need the whole message
//! ([`Needs::Whole`]).

use alloc::vec::Vec;

use crate::stream::{HandlerError, Message, Needs, Param, StreamHandler, Work, words};

/// The delta handler: updates a fraction of the message in place, 20% in the paper (§4).
/// It adds `step` to every byte of the region `offset .. offset + len·percent/100` (an
/// update of the message's changing fields, e.g. counters or positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delta {
    /// Where the modified region starts.
    pub offset: u16,
    /// How much of the message it modifies, percent (20 in the paper).
    pub percent: u8,
    /// The value added to each byte of the region.
    pub step: u8,
}

impl Delta {
    /// The paper's delta: 20% of the message from its start, adding `step`.
    pub const fn paper(step: u8) -> Self {
        Self {
            offset: 0,
            percent: 20,
            step,
        }
    }

    /// Bytes a `len`-byte message has modified.
    pub const fn region_len(&self, len: u64) -> u64 {
        let pct = if self.percent > 100 {
            100
        } else {
            self.percent as u64
        };
        len.saturating_mul(pct) / 100
    }
}

impl StreamHandler for Delta {
    fn name(&self) -> &'static str {
        "delta"
    }

    fn handle(&mut self, mut msg: Message, out: &mut Vec<Message>) {
        let len = msg.payload.len();
        let start = usize::from(self.offset).min(len);
        let n = usize::try_from(self.region_len(len as u64)).unwrap_or(len);
        let end = start.saturating_add(n).min(len);
        if let Some(region) = msg.payload.get_mut(start..end) {
            for b in region {
                *b = b.wrapping_add(self.step);
            }
        }
        out.push(msg);
    }

    fn work(&self, len: u64) -> Work {
        let w = words(self.region_len(len));
        Work {
            // Per word: load, four byte adds packed as two ALU ops, store, loop.
            instructions: w.saturating_mul(4).saturating_add(10),
            sram_words: 0,
            sdram_words: w.saturating_mul(2),
            outputs: 1,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Whole
    }

    fn configure(&mut self, _param: Param) -> Result<(), HandlerError> {
        Err(HandlerError::UnsupportedParam)
    }
}

/// The paper's format handler (its [`name`](StreamHandler::name) is "format"): converts
/// the whole payload between byte orders, word by word (a big-endian ↔ little-endian
/// translation of 32-bit fields, as a binary format converter does for a heterogeneous
/// receiver). When the length is not a multiple of 4, the last `len % 4` bytes stay as
/// they are.
///
/// Not to be confused with [`format::Format`](crate::format::Format), a declared message
/// format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteSwap;

impl StreamHandler for ByteSwap {
    fn name(&self) -> &'static str {
        "format"
    }

    fn handle(&mut self, mut msg: Message, out: &mut Vec<Message>) {
        for w in msg.payload.chunks_exact_mut(4) {
            w.reverse();
        }
        out.push(msg);
    }

    fn work(&self, len: u64) -> Work {
        let w = words(len);
        Work {
            // Per word: load, two shifts and two field inserts (the microengine has no
            // byte-swap instruction), store, loop: 7.
            instructions: w.saturating_mul(7).saturating_add(8),
            sram_words: 0,
            sdram_words: w.saturating_mul(2),
            outputs: 1,
        }
    }

    fn needs(&self) -> Needs {
        Needs::Whole
    }

    fn configure(&mut self, _param: Param) -> Result<(), HandlerError> {
        Err(HandlerError::UnsupportedParam)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn delta_modifies_a_fifth_of_the_message() {
        let mut d = Delta::paper(1);
        let mut out = Vec::new();
        d.handle(Message::new(0, vec![0; 100]), &mut out);
        let changed = out[0].payload.iter().filter(|&&b| b != 0).count();
        assert_eq!(changed, 20);
        assert!(d.work(1000).sdram_words < ByteSwap.work(1000).sdram_words);
    }

    #[test]
    fn format_swaps_every_word_and_is_an_involution() {
        let mut f = ByteSwap;
        let mut out = Vec::new();
        f.handle(Message::new(0, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]), &mut out);
        assert_eq!(out[0].payload, vec![4, 3, 2, 1, 8, 7, 6, 5, 9]);
        let once = out.pop().unwrap();
        f.handle(once, &mut out);
        assert_eq!(out[0].payload, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(f.work(4000).sdram_words, 2000);
    }
}
