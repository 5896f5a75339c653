//! Running an instruction in one store context (paper Figs. 3, 6 and 9).
//!
//! [`execute`] is the instruction semantics alone; [`process`] is what a router does with
//! a packet's ESP header in one context: pass packets with Err or RB set untouched, run the
//! instruction, write changed operands back, and on an abort set Err, clear Loc and forward.

use core::fmt;

use ess::{Ess, Full, Handle, HashKey, Instant, Tables, Tag, Value};

use crate::idmap::IdMap;
use crate::instr::{InstrError, Instruction, Param, Robust};
use crate::wire::{ErrCode, Header, Loc};

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

impl core::error::Error for Abort {}

impl Abort {
    /// The code a router puts in the header for this abort.
    pub const fn code(&self) -> ErrCode {
        match self {
            Abort::StoreFull => ErrCode::StoreFull,
            Abort::MissingState => ErrCode::MissingState,
            Abort::Malformed(_) => ErrCode::Malformed,
        }
    }
}

impl From<Full> for Abort {
    fn from(_: Full) -> Abort {
        Abort::StoreFull
    }
}

/// The node parameters a context offers instructions (§2.4's well-known operands), and the
/// node's secret for its IDmaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Env {
    /// The node's id ([`Param::NodeId`]).
    pub node: u64,
    /// The interface this context serves ([`Param::Iface`]); `u32::MAX` for the central one.
    pub iface: u32,
    /// That interface's load ([`Param::IfaceLoad`]).
    pub iface_load: u64,
    /// That interface's queue length ([`Param::QueueLen`]).
    pub queue_len: u64,
    /// A coarse timestamp ([`Param::Timestamp`]).
    pub timestamp: u64,
    /// The node's secret for [`IdMap::for_node`].
    pub idmap_key: HashKey,
}

impl Env {
    /// A node `node` with secret `idmap_key`, every other parameter 0 and the central
    /// interface.
    pub const fn new(node: u64, idmap_key: HashKey) -> Env {
        Env {
            node,
            iface: u32::MAX,
            iface_load: 0,
            queue_len: 0,
            timestamp: 0,
            idmap_key,
        }
    }

    /// The value of `param` here.
    pub const fn param(&self, param: Param) -> u64 {
        match param {
            Param::NodeId => self.node,
            Param::Iface => self.iface as u64,
            Param::IfaceLoad => self.iface_load,
            Param::QueueLen => self.queue_len,
            Param::Timestamp => self.timestamp,
        }
    }
}

/// One store context as an instruction sees it.
pub struct Context<'a, T: Tables> {
    /// The context's store (for the packet's CID).
    pub store: &'a mut Ess<T>,
    /// On an output port, the store of the same port's input side, where NACKs leave the
    /// marks SUBCAST tests. `None` elsewhere: SUBCAST then tests `store`.
    pub port_input: Option<&'a Ess<T>>,
    /// The node parameters.
    pub env: &'a Env,
    /// The packet's computation ID.
    pub cid: u32,
}

impl<'a, T: Tables> Context<'a, T> {
    /// A context over `store` alone.
    pub fn new(store: &'a mut Ess<T>, env: &'a Env, cid: u32) -> Self {
        Context {
            store,
            port_input: None,
            env,
            cid,
        }
    }
}

/// Runs `instr` in `ctx` at `now`, updating the store and the packet's operands.
///
/// Each instruction is atomic on the store: it checks everything that can make it abort,
/// including room for every binding it will create ([`Ess::make_room`]), before it writes
/// anything, so an abort leaves the store as it was. It does a bounded, constant amount of
/// work: at most `3w + 3` tag lookups, `w ≤ 8`.
///
/// Beyond the paper's pseudo-code: COUNT's counters saturate instead of wrapping; COLLECT
/// and RCOLLECT check the state they need exists before folding in their value (the paper
/// folds first, then aborts); COLLECT counts down with wrapping, so more reports than
/// children are never forwarded. Otherwise reads and writes happen in the figures' order,
/// which matters when one tag serves as two operands. `tests/model.rs` checks all of this
/// against the pseudo-code run on the plain store model.
///
/// # Errors
///
/// [`Abort`] if the instruction aborted; the store is unchanged.
pub fn execute<T: Tables>(
    ctx: &mut Context<'_, T>,
    now: Instant,
    instr: &mut Instruction,
) -> Result<Verdict, Abort> {
    let ess = &mut *ctx.store;
    match instr {
        Instruction::Count { counter, thresh } => {
            let count = bump(ess, now, *counter)?;
            Ok(pass(count <= *thresh))
        }
        Instruction::Compare { value, current, op } => {
            let h = ess.find_create(now, *value)?;
            let pass_on = h.is_new() || op.holds(ess.read(h).0, current.0);
            if pass_on {
                ess.write(h, *current);
            }
            Ok(pass(pass_on))
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
            let result = fold(ess, h, *op, val.0);
            let left = ess.read(children).0.wrapping_sub(1);
            ess.write(children, Value(left));
            if left == 0 {
                *val = Value(result);
            }
            Ok(pass(left == 0))
        }
        Instruction::Rchld {
            children,
            counter,
            robust,
        } => rchld(ess, ctx.env, ctx.cid, now, *children, *counter, robust),
        Instruction::Rcollect { .. } => rcollect(ess, ctx.env, ctx.cid, now, instr),
        Instruction::Get { tag, value } => {
            *value = ess.get(now, *tag).ok_or(Abort::MissingState)?;
            Ok(Verdict::Forward)
        }
        Instruction::Put { tag, value } => {
            ess.put(now, *tag, *value)?;
            Ok(Verdict::Forward)
        }
        Instruction::Update { tag, value, op } => {
            let h = ess.find_create(now, *tag)?;
            *value = Value(fold(ess, h, *op, value.0));
            Ok(Verdict::Forward)
        }
        Instruction::Mark { tag } => {
            ess.put(now, *tag, Value(ctx.env.node))?;
            Ok(Verdict::Forward)
        }
        Instruction::LastMark { tag, node } => {
            if ess.find(now, *tag).is_some() {
                *node = Value(ctx.env.node);
            }
            Ok(Verdict::Forward)
        }
        Instruction::Subcast { tag } => {
            let marks: &Ess<T> = match ctx.port_input {
                Some(input) => input,
                None => ess,
            };
            Ok(pass(marks.find(now, *tag).is_some()))
        }
        Instruction::Param { param, op, value } => {
            *value = Value(op.apply(value.0, ctx.env.param(*param)));
            Ok(Verdict::Forward)
        }
        Instruction::PutParam { tag, param } => {
            ess.put(now, *tag, Value(ctx.env.param(*param)))?;
            Ok(Verdict::Forward)
        }
        Instruction::Test { tag, value, op } => Ok(pass(
            ess.get(now, *tag).is_some_and(|s| op.holds(s.0, value.0)),
        )),
        Instruction::Exists { tag } => Ok(pass(ess.find(now, *tag).is_some())),
        Instruction::Absent { tag } => Ok(pass(ess.find(now, *tag).is_none())),
        Instruction::Cswap { tag, expect, new } => {
            let h = ess.find_create(now, *tag)?;
            let old = ess.read(h);
            let swapped = old == *expect;
            if swapped {
                ess.write(h, *new);
            }
            *expect = old;
            Ok(pass(swapped))
        }
    }
}

const fn pass(cond: bool) -> Verdict {
    if cond {
        Verdict::Forward
    } else {
        Verdict::Drop
    }
}

/// The binding of `tag`: `found` if a lookup earlier in this instruction found it (a live
/// binding's handle stays valid while the instruction runs: creations reclaim only expired
/// entries), else [`Ess::find_create`].
#[inline]
fn resolve<T: Tables>(
    ess: &mut Ess<T>,
    now: Instant,
    tag: Tag,
    found: Option<Handle>,
) -> Result<Handle, Full> {
    match found {
        Some(h) => Ok(h),
        None => ess.find_create(now, tag),
    }
}

/// COUNT's step: `tag ← tag + 1` (nil = 0, saturating); returns the new count.
fn bump<T: Tables>(ess: &mut Ess<T>, now: Instant, tag: Tag) -> Result<u64, Full> {
    bump_at(ess, now, tag, None)
}

/// [`bump`] with the binding perhaps already found.
fn bump_at<T: Tables>(
    ess: &mut Ess<T>,
    now: Instant,
    tag: Tag,
    found: Option<Handle>,
) -> Result<u64, Full> {
    let h = resolve(ess, now, tag, found)?;
    let count = if h.is_new() { 0 } else { ess.read(h).0 }.saturating_add(1);
    ess.write(h, Value(count));
    Ok(count)
}

/// COLLECT's step: `V ← V ∘ val` (a new binding takes `val`); returns the new value.
fn fold<T: Tables>(ess: &mut Ess<T>, h: Handle, op: crate::instr::CombineOp, val: u64) -> u64 {
    let result = if h.is_new() {
        val
    } else {
        op.apply(ess.read(h).0, val)
    };
    ess.write(h, Value(result));
    result
}

/// Word `i` of the filter whose first tag is `first`.
const fn word_tag(first: Tag, i: usize) -> Tag {
    Tag(first.0.wrapping_add(i as u64))
}

/// Handles of the `w` words of a filter that exist (`None` for nil words).
fn find_words<T: Tables>(
    ess: &Ess<T>,
    now: Instant,
    first: Tag,
    words: usize,
) -> [Option<Handle>; crate::idmap::MAX_WORDS] {
    let mut out = [None; crate::idmap::MAX_WORDS];
    for (i, slot) in out.iter_mut().enumerate().take(words) {
        *slot = ess.find(now, word_tag(first, i));
    }
    out
}

/// Creations needed for the nil words among `handles`, plus `extra` single tags.
fn missing(handles: &[Option<Handle>], words: usize, extra: &[Option<Handle>]) -> usize {
    handles.iter().take(words).filter(|h| h.is_none()).count()
        + extra.iter().filter(|h| h.is_none()).count()
}

/// The filter under `first` (nil words read as 0), creating missing words.
fn or_into_filter<T: Tables>(
    ess: &mut Ess<T>,
    now: Instant,
    first: Tag,
    idmap: &IdMap,
    found: &[Option<Handle>],
) -> Result<IdMap, Full> {
    let mut filter = IdMap::empty(idmap.words());
    for i in 0..usize::from(idmap.words()) {
        let h = resolve(
            ess,
            now,
            word_tag(first, i),
            found.get(i).copied().flatten(),
        )?;
        let w = if h.is_new() { 0 } else { ess.read(h).0 } | idmap.word(i);
        ess.write(h, Value(w));
        filter.set_word(i, w);
    }
    Ok(filter)
}

/// RCHLD (Fig. 9, left).
fn rchld<T: Tables>(
    ess: &mut Ess<T>,
    env: &Env,
    cid: u32,
    now: Instant,
    children: Tag,
    counter: Tag,
    robust: &mut Robust,
) -> Result<Verdict, Abort> {
    let w = usize::from(robust.idmap.words());
    let filter = find_words(ess, now, children, w);
    let counter_h = ess.find(now, counter);
    let need = missing(&filter, w, &[counter_h]);
    if need > 0 {
        ess.reserve(now, need)?;
    }
    or_into_filter(ess, now, children, &robust.idmap, &filter)?;
    // Found before the writes: if C is one of T0's words, the handle sees them (Fig. 9
    // reads C after writing T0). If it was nil but is one of T0's words, `resolve` finds
    // the binding just created.
    let count = bump_at(ess, now, counter, counter_h)?;
    if count <= u64::from(robust.thresh) {
        robust.idmap = IdMap::for_node(&env.idmap_key, cid, robust.k, robust.idmap.words());
        Ok(Verdict::Forward)
    } else {
        Ok(Verdict::Drop)
    }
}

/// RCOLLECT (Fig. 9, right), in the Basic Redundant Instruction Form (§4.3.1): a
/// duplicate does not change the computation's state but is updated and forwarded like the
/// original, within the forwarding limit.
fn rcollect<T: Tables>(
    ess: &mut Ess<T>,
    env: &Env,
    cid: u32,
    now: Instant,
    instr: &mut Instruction,
) -> Result<Verdict, Abort> {
    let Instruction::Rcollect {
        value,
        val,
        heard,
        children,
        forwarded,
        op,
        robust,
    } = instr
    else {
        return Err(Abort::MissingState);
    };
    let w = usize::from(robust.idmap.words());
    // Everything that can abort is checked first: RCHLD's filter must exist, and so must the
    // running value if this packet turns out to be a duplicate.
    let expected = find_words(ess, now, *children, w);
    if expected.iter().take(w).any(Option::is_none) {
        return Err(Abort::MissingState);
    }
    let heard_h = find_words(ess, now, *heard, w);
    let mut seen = IdMap::empty(robust.idmap.words());
    for (i, h) in heard_h.iter().enumerate().take(w) {
        seen.set_word(i, h.map_or(0, |h| ess.read(h).0));
    }
    let duplicate = robust.idmap.is_subset_of(&seen);
    let value_h = ess.find(now, *value);
    if duplicate && value_h.is_none() {
        return Err(Abort::MissingState);
    }
    let forwarded_h = ess.find(now, *forwarded);
    let need = if duplicate {
        0
    } else {
        missing(&heard_h, w, &[value_h])
    } + usize::from(forwarded_h.is_none());
    if need > 0 {
        ess.reserve(now, need)?;
    }

    // α stays the local copy the figure keeps; β is read after the writes, as the figure
    // does (it matters when T0 shares tags with T1 or V).
    let (alpha, xi) = if duplicate {
        (seen, value_h.map_or(0, |h| ess.read(h).0))
    } else {
        let alpha = or_into_filter(ess, now, *heard, &robust.idmap, &heard_h)?;
        let h = resolve(ess, now, *value, value_h)?;
        (alpha, fold(ess, h, *op, val.0))
    };
    let matched = expected
        .iter()
        .enumerate()
        .take(w)
        .all(|(i, h)| h.is_some_and(|h| ess.read(h).0 == alpha.word(i)));
    if !matched {
        return Ok(Verdict::Drop);
    }
    let sent = bump_at(ess, now, *forwarded, forwarded_h)?;
    if sent <= u64::from(robust.thresh) {
        robust.idmap = IdMap::for_node(&env.idmap_key, cid, robust.k, robust.idmap.words());
        *val = Value(xi);
        Ok(Verdict::Forward)
    } else {
        Ok(Verdict::Drop)
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

impl Processed {
    /// Forwarded, nothing happened.
    pub const PASS: Processed = Processed {
        verdict: Verdict::Forward,
        abort: None,
    };
}

/// Instructions beyond the built-in set: inline microcode ([`OP_MICRO`](crate::instr::OP_MICRO))
/// and instructions installed under opcodes in [`INSTALLED`](crate::instr::INSTALLED) (§8).
/// The `esp-micro` crate implements it with SNAP programs; esp-proto only hands it the
/// opcodes it does not know.
pub trait Extension<T: Tables> {
    /// Runs the instruction `opcode` (not a built-in one) whose operand bytes are `operands`
    /// in `ctx` at `now`. On `Some(Ok(_))` the extension has written any changed operands
    /// into `operands`; on `Some(Err(_))` it must have left them and the store unchanged,
    /// as a built-in's abort does. `None`: no such instruction here (reported as
    /// [`Abort::Malformed`] naming the opcode).
    fn execute(
        &mut self,
        ctx: &mut Context<'_, T>,
        now: Instant,
        opcode: u8,
        operands: &mut [u8],
    ) -> Option<Result<Verdict, Abort>>;
}

/// A router with the built-in instructions only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoExtension;

impl<T: Tables> Extension<T> for NoExtension {
    #[inline]
    fn execute(
        &mut self,
        _: &mut Context<'_, T>,
        _: Instant,
        _: u8,
        _: &mut [u8],
    ) -> Option<Result<Verdict, Abort>> {
        None
    }
}

/// Processes an ESP header in one context, as a router does: packets with Err or RB set
/// pass untouched; otherwise the instruction runs, changed operands are written back, and an
/// abort sets Err and its code, clears Loc and forwards. Only operands and control bits
/// change. Only the built-in instructions run ([`process_with`] takes an [`Extension`]).
///
/// The caller checks Loc selects this context (as `node::EspNode` does); `ctx.cid` should be
/// the header's CID.
pub fn process<T: Tables, B: AsRef<[u8]> + AsMut<[u8]>>(
    ctx: &mut Context<'_, T>,
    now: Instant,
    header: &mut Header<B>,
) -> Processed {
    process_with(ctx, now, header, &mut NoExtension)
}

/// [`process`], with opcodes that are not built in run by `ext`, reported exactly as a
/// built-in's outcome is.
pub fn process_with<T: Tables, B: AsRef<[u8]> + AsMut<[u8]>, E: Extension<T> + ?Sized>(
    ctx: &mut Context<'_, T>,
    now: Instant,
    header: &mut Header<B>,
    ext: &mut E,
) -> Processed {
    if header.err() || header.rb() {
        return Processed::PASS;
    }
    let opcode = header.opcode();
    if !crate::instr::is_builtin(opcode) {
        return match ext.execute(ctx, now, opcode, header.operands_mut()) {
            Some(Ok(verdict)) => Processed {
                verdict,
                abort: None,
            },
            Some(Err(abort)) => aborted(header, abort),
            None => aborted(header, Abort::Malformed(InstrError::Opcode { opcode })),
        };
    }
    let mut instr = match Instruction::parse(header.opcode(), header.operands()) {
        Ok(instr) => instr,
        Err(e) => return aborted(header, Abort::Malformed(e)),
    };
    match execute(ctx, now, &mut instr) {
        Ok(verdict) => {
            if verdict == Verdict::Forward && instr.rewrites_operands() {
                // The length was checked by `parse` and execution keeps IDmap sizes, so
                // this cannot fail. A dropped packet's operands do not matter.
                let _ = instr.emit(header.operands_mut());
            }
            Processed {
                verdict,
                abort: None,
            }
        }
        Err(abort) => aborted(header, abort),
    }
}

/// Marks an abort in the header: Err and its code set, Loc cleared; forwarded.
fn aborted<B: AsRef<[u8]> + AsMut<[u8]>>(header: &mut Header<B>, abort: Abort) -> Processed {
    header.set_err(true);
    header.set_err_code(abort.code());
    header.set_loc(Loc::NONE);
    Processed {
        verdict: Verdict::Forward,
        abort: Some(abort),
    }
}

#[cfg(test)]
mod tests;
