//! The service interface (paper §III.B `calls`): constant-time routines named by string that
//! packets invoke, run against the calling packet's [`Frame`].

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{Fault, Frame};

/// A node-resident service. SNAP-safe services run in constant time and allocate at most
/// [`MAX_SERVICE_ALLOC`](crate::op::MAX_SERVICE_ALLOC) heap words per call; the VM enforces the allocation limit.
pub trait Service {
    /// The name packets call it by.
    fn name(&self) -> &[u8];

    /// Runs one call against the calling packet's `frame` (its stack and heap) at `now`.
    ///
    /// # Errors
    ///
    /// A [`Fault`] terminates the packet.
    fn call(&mut self, now: u64, frame: &mut Frame<'_>) -> Result<(), Fault>;
}

/// A set of services `calls` can reach, by name. [`Services`] is the node's; a caller
/// running a program on a bare frame ([`MicroProgram::run`](super::MicroProgram::run)) may offer its own,
/// borrowing state only for the run.
pub trait ServiceSet {
    /// Runs the service named `name` against `frame` at `now`.
    ///
    /// # Errors
    ///
    /// [`Fault::NoService`] if the set has no service of that name; whatever the service
    /// returns otherwise.
    fn call(&mut self, name: &[u8], now: u64, frame: &mut Frame<'_>) -> Result<(), Fault>;
}

impl ServiceSet for Services {
    fn call(&mut self, name: &[u8], now: u64, frame: &mut Frame<'_>) -> Result<(), Fault> {
        self.get_mut(name).ok_or(Fault::NoService)?.call(now, frame)
    }
}

/// The services a node offers.
#[derive(Default)]
pub struct Services {
    list: Vec<Box<dyn Service>>,
}

impl core::fmt::Debug for Services {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(
                self.list
                    .iter()
                    .map(|s| alloc::string::String::from_utf8_lossy(s.name())),
            )
            .finish()
    }
}

impl Services {
    /// No services.
    pub fn new() -> Services {
        Services::default()
    }

    /// Registers `service` (replacing one of the same name).
    pub fn register(&mut self, service: Box<dyn Service>) {
        self.list.retain(|s| s.name() != service.name());
        self.list.push(service);
    }

    /// The service named `name`.
    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut (dyn Service + 'static)> {
        self.list
            .iter_mut()
            .find(|s| s.name() == name)
            .map(|b| &mut **b)
    }
}
