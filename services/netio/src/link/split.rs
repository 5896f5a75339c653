//! Splitting a received slot into its datagrams.
//!
//! One `recvmmsg` slot holds what the kernel handed over in one message: a single datagram,
//! or with UDP GRO a coalesced run of datagrams from one source, all `stride` bytes long but
//! the last, which may be shorter. [`split`] turns a slot's metadata (`len`, `stride`) and
//! the size of the buffer it landed in into the datagrams' byte ranges, and says what it
//! could not hand on:
//!
//! ```text
//!  buffer  [ d0 (stride) | d1 (stride) | d2 (≤ stride) |  unused  ]
//!          0             s             2s              len        cap
//!  len > cap: the message was cut by the buffer → the datagrams inside `cap` whole,
//!             the one cut and those beyond counted as `truncated`
//! ```
//!
//! It is total: any metadata, however wrong (stride 0, a length beyond the buffer), gives
//! ranges inside the buffer and counts that add up (`datagrams == ranges + truncated`).

use std::ops::Range;

/// What one slot held: its datagrams' ranges in the buffer, and how many were lost to a
/// buffer too small for the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    stride: usize,
    whole: usize,
    end: usize,
    next: usize,
    /// Datagrams the kernel said it delivered in this slot.
    pub datagrams: usize,
    /// Of those, datagrams cut short or beyond the end of the buffer (dropped).
    pub truncated: usize,
}

/// The datagrams of a slot of `len` bytes with GRO stride `stride` (0 or ≥ `len`: one
/// datagram) in a buffer of `cap` bytes: the datagrams whole inside the buffer, in order;
/// those cut by it counted in [`Split::truncated`].
pub fn split(len: usize, stride: usize, cap: usize) -> Split {
    let stride = if stride == 0 || stride > len {
        len
    } else {
        stride
    };
    if len == 0 {
        return Split {
            stride: 1,
            whole: 0,
            end: 0,
            next: 0,
            datagrams: 0,
            truncated: 0,
        };
    }
    let datagrams = len.div_ceil(stride);
    // Datagrams that lie wholly inside the buffer.
    let (whole, end) = if len <= cap {
        (datagrams, len)
    } else {
        let whole = cap / stride;
        (whole, whole * stride)
    };
    Split {
        stride,
        whole,
        end,
        next: 0,
        datagrams,
        truncated: datagrams - whole,
    }
}

impl Iterator for Split {
    type Item = Range<usize>;

    #[inline]
    fn next(&mut self) -> Option<Range<usize>> {
        if self.next >= self.whole {
            return None;
        }
        let start = self.next * self.stride;
        self.next += 1;
        Some(start..(start + self.stride).min(self.end))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.whole - self.next.min(self.whole);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Split {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ranges(len: usize, stride: usize, cap: usize) -> (Vec<Range<usize>>, usize, usize) {
        let s = split(len, stride, cap);
        let (d, t) = (s.datagrams, s.truncated);
        (s.collect(), d, t)
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // one datagram: a list of one range
    fn examples() {
        assert_eq!(ranges(0, 0, 100), (vec![], 0, 0));
        assert_eq!(ranges(40, 0, 100), (vec![0..40], 1, 0));
        assert_eq!(ranges(40, 40, 100), (vec![0..40], 1, 0));
        assert_eq!(ranges(40, 1400, 100), (vec![0..40], 1, 0));
        assert_eq!(
            ranges(250, 100, 300),
            (vec![0..100, 100..200, 200..250], 3, 0)
        );
        assert_eq!(
            ranges(300, 100, 300),
            (vec![0..100, 100..200, 200..300], 3, 0)
        );
        // Cut by the buffer: the third is cut short, the fourth beyond it.
        assert_eq!(ranges(400, 100, 250), (vec![0..100, 100..200], 4, 2));
        // One datagram larger than the buffer.
        assert_eq!(ranges(9000, 0, 1500), (vec![], 1, 1));
    }

    proptest! {
        #[test]
        fn any_metadata_splits_inside_the_buffer(
            len in 0usize..200_000,
            stride in prop_oneof![Just(0usize), 1usize..3000, 0usize..200_000],
            cap in 0usize..70_000,
        ) {
            let s = split(len, stride, cap);
            let (datagrams, truncated) = (s.datagrams, s.truncated);
            let rs: Vec<_> = s.collect();
            // Counts add up; nothing handed on lies outside the buffer or the message.
            prop_assert_eq!(rs.len() + truncated, datagrams);
            let eff = if stride == 0 || stride > len { len } else { stride };
            if len > 0 {
                prop_assert_eq!(datagrams, len.div_ceil(eff));
            } else {
                prop_assert_eq!(datagrams, 0);
            }
            let mut at = 0;
            for (i, r) in rs.iter().enumerate() {
                prop_assert_eq!(r.start, at, "contiguous");
                prop_assert!(r.end <= cap.min(len));
                prop_assert!(!r.is_empty());
                // All a stride long but the last of the message.
                if i + 1 < rs.len() || r.end < len {
                    prop_assert_eq!(r.len(), eff);
                }
                at = r.end;
            }
            // Untruncated: every byte of the message is handed on.
            if len <= cap {
                prop_assert_eq!(at, len);
                prop_assert_eq!(truncated, 0);
            }
        }
    }
}
