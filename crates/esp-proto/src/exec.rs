//! Running an instruction against one store context (paper Figs. 3 and 6).
//!
//! [`execute`] is the instruction semantics alone; [`process`] is what a router does with
//! a packet's ESP header in one context: pass packets with Err or RB set untouched, run the
//! instruction, write changed operands back, and on an abort set Err, clear Loc and forward.

use core::fmt;

use ess::{Ess, Full, Instant, Tables, Value};

use crate::instr::{InstrError, Instruction};
use crate::wire::{Header, Loc};

/// What to do with the packet after the instruction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on toward its destination.
    Forward,
    /// Discard it silently.
    Drop,
}

/// Why an instruction aborted (the packet is then forwarded with Err set, §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// The store had no room for a binding the instruction had to create.
    StoreFull,
    /// State the instruction needs (such as COLLECT's child count) does not exist.
    MissingState,
    /// The instruction could not be decoded.
    Malformed(InstrError),
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abort::StoreFull => f.write_str("ephemeral state store full"),
            Abort::MissingState => f.write_str("required ephemeral state missing"),
            Abort::Malformed(e) => write!(f, "malformed instruction: {e}"),
        }
    }
}

impl From<Full> for Abort {
    fn from(_: Full) -> Abort {
        Abort::StoreFull
    }
}

/// Runs `instr` against `ess` at `now`, updating the store and the packet's operands.
///
/// Each instruction is atomic on the store: it checks everything that can make it abort
/// before it writes anything, so an abort leaves the store as it was. It does a bounded,
/// constant amount of work (at most two tag lookups).
///
/// Beyond the paper's pseudo-code: COUNT's counter saturates at `u64::MAX` instead of
/// wrapping; COLLECT checks its child count exists before folding in its value (the paper
/// folds first, then aborts), and counts down with wrapping, so more reports than children
/// are never forwarded. Otherwise reads and writes happen in the figures' order, which
/// matters when one tag serves as two operands (COLLECT with V = C reads the count after
/// writing the value). `tests/model.rs` checks all of this against the pseudo-code run on
/// the plain store model.
///
/// # Errors
///
/// [`Abort`] if the instruction aborted; the store is unchanged.
pub fn execute<T: Tables>(
    ess: &mut Ess<T>,
    now: Instant,
    instr: &mut Instruction,
) -> Result<Verdict, Abort> {
    match instr {
        Instruction::Count { counter, thresh } => {
            let h = ess.find_create(now, *counter)?;
            let count = if h.is_new() { 0 } else { ess.read(h).0 }.saturating_add(1);
            ess.write(h, Value(count));
            Ok(if count <= *thresh {
                Verdict::Forward
            } else {
                Verdict::Drop
            })
        }
        Instruction::Compare { value, current, op } => {
            let h = ess.find_create(now, *value)?;
            if h.is_new() || op.holds(ess.read(h).0, current.0) {
                ess.write(h, *current);
                Ok(Verdict::Forward)
            } else {
                Ok(Verdict::Drop)
            }
        }
        Instruction::Collect {
            value,
            val,
            counter,
            op,
        } => {
            // The child count must exist before anything is written. Its handle stays valid
            // across the `find_create` below: at the same `now` a creation reclaims only
            // expired entries, and this one is live.
            let children = ess.find(now, *counter).ok_or(Abort::MissingState)?;
            let h = ess.find_create(now, *value)?;
            let result = if h.is_new() {
                val.0
            } else {
                op.apply(ess.read(h).0, val.0)
            };
            ess.write(h, Value(result));
            let left = ess.read(children).0.wrapping_sub(1);
            ess.write(children, Value(left));
            if left == 0 {
                *val = Value(result);
                Ok(Verdict::Forward)
            } else {
                Ok(Verdict::Drop)
            }
        }
    }
}

/// What [`process`] did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Processed {
    /// Forward or drop.
    pub verdict: Verdict,
    /// Set if the instruction aborted here (the packet now carries Err).
    pub abort: Option<Abort>,
}

/// Processes an ESP header in one context, as a router does: packets with Err or RB set
/// pass untouched; otherwise the instruction runs, changed operands are written back, and an
/// abort sets Err, clears Loc and forwards. Only operands and control bits change.
pub fn process<T: Tables, B: AsRef<[u8]> + AsMut<[u8]>>(
    ess: &mut Ess<T>,
    now: Instant,
    header: &mut Header<B>,
) -> Processed {
    if header.err() || header.rb() {
        return Processed {
            verdict: Verdict::Forward,
            abort: None,
        };
    }
    let outcome = Instruction::parse(header.opcode(), header.operands())
        .map_err(Abort::Malformed)
        .and_then(|mut instr| {
            let verdict = execute(ess, now, &mut instr)?;
            // The length was checked by `parse`, so this cannot fail.
            let _ = instr.emit(header.operands_mut());
            Ok(verdict)
        });
    match outcome {
        Ok(verdict) => Processed {
            verdict,
            abort: None,
        },
        Err(abort) => {
            header.set_err(true);
            header.set_loc(Loc::NONE);
            Processed {
                verdict: Verdict::Forward,
                abort: Some(abort),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instr::{CombineOp, CompareOp};
    use crate::wire::HeaderRepr;
    use ess::{EssConfig, HashKey, Tag};

    fn store() -> Ess {
        Ess::new(EssConfig::new(4, 10_000, 1, HashKey::from_seed(1)).unwrap())
    }

    const T0: Instant = Instant::from_ticks(0);

    #[test]
    fn count_passes_up_to_the_threshold() {
        let mut ess = store();
        let mut i = Instruction::Count {
            counter: Tag(7),
            thresh: 2,
        };
        let v: std::vec::Vec<_> = (0..4)
            .map(|_| execute(&mut ess, T0, &mut i).unwrap())
            .collect();
        assert_eq!(
            v,
            [
                Verdict::Forward,
                Verdict::Forward,
                Verdict::Drop,
                Verdict::Drop
            ]
        );
        assert_eq!(
            ess.get(T0, Tag(7)),
            Some(Value(4)),
            "counting goes on past the threshold"
        );
    }

    #[test]
    fn compare_thins_to_an_increasing_sequence() {
        let mut ess = store();
        let passed: std::vec::Vec<u64> = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
            .into_iter()
            .filter(|&u| {
                let mut i = Instruction::Compare {
                    value: Tag(1),
                    current: Value(u),
                    op: CompareOp::Lt,
                };
                execute(&mut ess, T0, &mut i) == Ok(Verdict::Forward)
            })
            .collect();
        assert_eq!(passed, [3, 4, 5, 9]);
    }

    #[test]
    fn count_then_collect_forwards_the_aggregate_once() {
        let mut ess = store();
        for _ in 0..3 {
            count(&mut ess, Tag(100), 1);
        }
        let mut out = std::vec::Vec::new();
        for val in [10, 20, 5] {
            let mut i = Instruction::Collect {
                value: Tag(200),
                val: Value(val),
                counter: Tag(100),
                op: CombineOp::Add,
            };
            out.push((execute(&mut ess, T0, &mut i).unwrap(), i));
        }
        assert_eq!(out[0].0, Verdict::Drop);
        assert_eq!(out[1].0, Verdict::Drop);
        assert_eq!(out[2].0, Verdict::Forward);
        assert!(matches!(
            out[2].1,
            Instruction::Collect { val: Value(35), .. }
        ));
        // A fourth report finds the count spent and is not forwarded.
        let mut late = Instruction::Collect {
            value: Tag(200),
            val: Value(1),
            counter: Tag(100),
            op: CombineOp::Add,
        };
        assert_eq!(execute(&mut ess, T0, &mut late), Ok(Verdict::Drop));
    }

    #[test]
    fn collect_without_a_count_aborts_and_changes_nothing() {
        let mut ess = store();
        let mut i = Instruction::Collect {
            value: Tag(1),
            val: Value(1),
            counter: Tag(2),
            op: CombineOp::Add,
        };
        assert_eq!(execute(&mut ess, T0, &mut i), Err(Abort::MissingState));
        assert_eq!((ess.get(T0, Tag(1)), ess.occupied()), (None, 0));
    }

    #[test]
    fn a_full_store_aborts() {
        let mut ess = store();
        for t in 0..16 {
            ess.put(T0, Tag(1000 + t), Value(0)).unwrap();
        }
        let mut i = Instruction::Count {
            counter: Tag(1),
            thresh: 9,
        };
        assert_eq!(execute(&mut ess, T0, &mut i), Err(Abort::StoreFull));
    }

    /// Runs COUNT on `counter` (a setup step for COLLECT).
    fn count(ess: &mut Ess, counter: Tag, thresh: u64) {
        execute(ess, T0, &mut Instruction::Count { counter, thresh }).unwrap();
    }

    /// A header carrying `instr`.
    fn packet_of(instr: Instruction, err: bool, rb: bool) -> std::vec::Vec<u8> {
        let mut ops = std::vec![0u8; instr.operand_len()];
        instr.emit(&mut ops).unwrap();
        packet(instr.opcode(), &ops, err, rb)
    }

    fn packet(opcode: u8, operands: &[u8], err: bool, rb: bool) -> std::vec::Vec<u8> {
        let repr = HeaderRepr {
            loc: Loc::ALL,
            err,
            rb,
            opcode,
            cid: 9,
            operand_len: operands.len() as u8,
        };
        let mut buf = std::vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        buf[8..].copy_from_slice(operands);
        buf
    }

    #[test]
    fn process_writes_operands_back_and_marks_aborts() {
        let mut ess = store();
        count(&mut ess, Tag(100), 1);
        let collect = Instruction::Collect {
            value: Tag(200),
            val: Value(7),
            counter: Tag(100),
            op: CombineOp::Max,
        };
        let mut buf = packet_of(collect, false, false);
        let before = buf.clone();
        let mut h = Header::new_checked(&mut buf[..]).unwrap();
        assert_eq!(
            process(&mut ess, T0, &mut h),
            Processed {
                verdict: Verdict::Forward,
                abort: None
            }
        );
        assert_eq!(buf[..8], before[..8], "header untouched");

        // Same again: the count is spent → dropped, no abort.
        let mut buf2 = before.clone();
        let mut h = Header::new_checked(&mut buf2[..]).unwrap();
        assert_eq!(process(&mut ess, T0, &mut h).verdict, Verdict::Drop);

        // Unknown opcode: abort, Err set, Loc cleared, forwarded; nothing else changes.
        let mut bad = packet(99, &[1, 2, 3], false, false);
        let mut h = Header::new_checked(&mut bad[..]).unwrap();
        let p = process(&mut ess, T0, &mut h);
        assert_eq!(p.verdict, Verdict::Forward);
        assert!(matches!(
            p.abort,
            Some(Abort::Malformed(InstrError::Opcode { opcode: 99 }))
        ));
        assert!(h.err() && h.loc().is_empty());
        assert_eq!(h.operands(), &[1, 2, 3]);

        // Err or RB set: forwarded unprocessed.
        for (err, rb) in [(true, false), (false, true)] {
            let mut pkt = packet_of(
                Instruction::Count {
                    counter: Tag(5),
                    thresh: 0,
                },
                err,
                rb,
            );
            let mut h = Header::new_checked(&mut pkt[..]).unwrap();
            assert_eq!(process(&mut ess, T0, &mut h).verdict, Verdict::Forward);
            assert_eq!(ess.get(T0, Tag(5)), None);
        }
    }
}
