//! Node-resident services (paper §III.B `calls`): constant-time routines named by string
//! that packets invoke, and the ESS service that lets SNAP programs act as ESP "microcode"
//! against the node's ephemeral state store.

use ess::{Ess, EssConfig, HashKey, Instant, Tag as EssTag, Value as EssValue};

use crate::value::Value;
use crate::vm::{Fault, Frame};

/// Re-export: lives in [`op`](crate::op) now, beside the instructions whose allocation it
/// bounds.
pub use crate::op::MAX_SERVICE_ALLOC;
/// Re-export: the service interface lives in [`vm`](crate::vm) now, beside the [`Frame`]
/// and [`Fault`] it is written against.
pub use crate::vm::{Service, Services};

/// Which ESS operation an [`EssService`] performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EssOp {
    /// `ess.get`: pops a tag; pushes its value as a wide integer, or the small integer 0 if
    /// the tag is nil (`istag wide` tells them apart).
    Get,
    /// `ess.put`: pops a value, then a tag; binds them; pushes 1 (0 if the store is full).
    Put,
    /// `ess.count`: pops a tag; increments its count (nil = 0); pushes the new count.
    Count,
}

/// The ESS as a service: `ess.get`, `ess.put`, `ess.count`. Tags and values are small or
/// wide integers. Each computation — a packet's (source, demux port) — sees its own tag
/// space: tags are hashed with the computation under a node secret before they reach the
/// store, so programs of different computations cannot read or clobber each other's state.
#[derive(Debug)]
pub struct EssService {
    op: EssOp,
    store: alloc::rc::Rc<core::cell::RefCell<Ess>>,
    key: HashKey,
}

impl EssService {
    /// The three services over one new store built from `config`; `key` isolates
    /// computations.
    pub fn trio(config: EssConfig, key: HashKey) -> [EssService; 3] {
        let store = alloc::rc::Rc::new(core::cell::RefCell::new(Ess::new(config)));
        [EssOp::Get, EssOp::Put, EssOp::Count].map(|op| EssService {
            op,
            store: store.clone(),
            key,
        })
    }

    fn tag(&self, frame: &Frame<'_>, raw: i64) -> EssTag {
        let (src, port) = frame.computation();
        // An IPv4 source as it always was; an IPv6 one folded to 64 bits first.
        let src = match src {
            core::net::IpAddr::V4(a) => u64::from(u32::from(a)),
            core::net::IpAddr::V6(a) => {
                let x = u128::from(a);
                self.key.hash((x >> 64) as u64 ^ self.key.hash(x as u64))
            }
        };
        let who = (src << 16) | u64::from(port);
        EssTag(self.key.hash(self.key.hash(who) ^ raw as u64))
    }
}

impl Service for EssService {
    fn name(&self) -> &[u8] {
        match self.op {
            EssOp::Get => b"ess.get",
            EssOp::Put => b"ess.put",
            EssOp::Count => b"ess.count",
        }
    }

    fn call(&mut self, now: u64, frame: &mut Frame<'_>) -> Result<(), Fault> {
        let now = Instant::from_ticks(now);
        let mut ess = self.store.try_borrow_mut().map_err(|_| Fault::Service)?;
        match self.op {
            EssOp::Get => {
                let t = frame.pop_wide()?;
                let tag = self.tag(frame, t);
                match ess.get(now, tag) {
                    Some(v) => {
                        let w = frame.alloc_wide(v.0 as i64)?;
                        frame.push(w)
                    }
                    None => frame.push(Value::int(0)),
                }
            }
            EssOp::Put => {
                let v = frame.pop_wide()?;
                let t = frame.pop_wide()?;
                let tag = self.tag(frame, t);
                let ok = ess.put(now, tag, EssValue(v as u64)).is_ok();
                frame.push(Value::int(i32::from(ok)))
            }
            EssOp::Count => {
                let t = frame.pop_wide()?;
                let tag = self.tag(frame, t);
                let h = ess.find_create(now, tag).map_err(|_| Fault::Service)?;
                let n = if h.is_new() { 0 } else { ess.read(h).0 } + 1;
                ess.write(h, EssValue(n));
                frame.push(Value::int(n.min(crate::value::INT_MAX as u64) as i32))
            }
        }
    }
}
