//! Graceful shutdown: one trigger, any number of waiting tasks.
//!
//! ```text
//!  SIGINT / SIGTERM ─► on_signals ─┐
//!  fatal error in a task ──────────┴─► ShutdownTrigger::trigger ─► every Shutdown::wait returns
//! ```
//!
//! [`Shutdown::new`] returns a [`ShutdownTrigger`] and a [`Shutdown`]. Clone the `Shutdown`
//! into every task that must stop (the core's `select!`, the metrics server, link tasks);
//! each awaits [`Shutdown::wait`] or polls [`Shutdown::is_triggered`]. The state is a
//! `tokio::sync::watch` of one `bool` that only ever goes from `false` to `true`, so a
//! clone made after the trigger sees it at once, and a task that was busy when it fired
//! does not miss it.
//!
//! Dropping every [`ShutdownTrigger`] without triggering also counts as a shutdown: nobody
//! could ever trigger it any more, and waking the waiters is better than leaving them
//! hanging. Keep the trigger alive (for example by handing it to [`on_signals`]) for as
//! long as the daemon should run.
//!
//! What it does not do: it does not wait for the tasks to finish (join their handles for
//! that), does not time out a slow shutdown, and does not handle signals other than
//! SIGINT and SIGTERM. [`on_signals`] is Unix-only, like the daemons.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use netio::shutdown::Shutdown;
//!
//! let (trigger, shutdown) = Shutdown::new();
//! let mut waiting = shutdown.clone();
//! let task = tokio::spawn(async move { waiting.wait().await });
//! trigger.trigger();
//! task.await.unwrap();
//! assert!(shutdown.is_triggered());
//! # }
//! ```

use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The waiting side: cheap to clone, one per task that must stop on shutdown.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// The firing side: [`ShutdownTrigger::trigger`] wakes every [`Shutdown`].
///
/// Cloneable, so both the signal task and a task that hits a fatal error can hold one.
/// Dropping the last one without triggering also shuts down (see the module docs).
#[derive(Debug, Clone)]
pub struct ShutdownTrigger {
    tx: Arc<watch::Sender<bool>>,
}

impl Shutdown {
    /// Creates a trigger and the first waiter (clone it for more).
    pub fn new() -> (ShutdownTrigger, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (ShutdownTrigger { tx: Arc::new(tx) }, Shutdown { rx })
    }

    /// Returns when shutdown has been triggered (at once if it already was).
    ///
    /// Cancel-safe: use it as a branch of `tokio::select!` in a loop.
    pub async fn wait(&mut self) {
        // `Err` means every trigger was dropped: treated as a shutdown (module docs).
        let _ = self.rx.wait_for(|triggered| *triggered).await;
    }

    /// Whether shutdown has been triggered (or every trigger dropped), without waiting.
    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow() || self.rx.has_changed().is_err()
    }
}

impl ShutdownTrigger {
    /// Triggers shutdown: every [`Shutdown::wait`], now and later, returns.
    ///
    /// Calling it again does nothing more.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }
}

/// Installs SIGINT and SIGTERM handlers and spawns a task that triggers shutdown on the
/// first of them.
///
/// The handlers are installed before this returns, so a signal sent afterwards is never
/// handled by the default action (which would kill the process). Once installed, tokio
/// keeps them for the life of the process: a second SIGINT does not kill the daemon
/// either, so make shutdown finish. The task ends after triggering. Call it from inside
/// a tokio runtime with I/O enabled; fails if a handler cannot be installed.
pub fn on_signals(trigger: ShutdownTrigger) -> std::io::Result<JoinHandle<()>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(tokio::spawn(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        tracing::info!(signal = name, "shutting down");
        trigger.trigger();
    }))
}
