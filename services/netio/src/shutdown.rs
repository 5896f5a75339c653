//! Graceful shutdown: one trigger, any number of waiting tasks; and reloads on SIGHUP.
//!
//! ```text
//!  SIGINT / SIGTERM ─► on_signals ─┐
//!  fatal error in a task ──────────┴─► ShutdownTrigger::trigger ─► every Shutdown::wait returns
//!  SIGHUP ─► on_reload ─► ReloadTrigger::trigger ─► Reloads::next returns (once per request)
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
//! that) and does not time out a slow shutdown. [`on_signals`] and [`on_reload`] are
//! Unix-only, like the daemons.
//!
//! ## Reloads
//!
//! SIGHUP asks a daemon to re-read its configuration (nginx's `-s reload`, BIRD's
//! `configure`), not to stop. [`Reloads::new`] returns a [`ReloadTrigger`] and a
//! [`Reloads`]; [`on_reload`] installs the SIGHUP handler and fires the trigger on each
//! SIGHUP. The daemon's loop awaits [`Reloads::next`] beside its other work and re-reads
//! its config when it returns. Requests that arrive while one is being handled are
//! merged: however many SIGHUPs came meanwhile, `next` returns once more, and the
//! config then read is the newest. A daemon that never calls [`on_reload`] keeps
//! SIGHUP's default action (the process ends, exit status 129).
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

/// The waiting side of reloads: [`Reloads::next`] returns once per reload request.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use netio::shutdown::Reloads;
///
/// let (trigger, mut reloads) = Reloads::new();
/// trigger.trigger();
/// trigger.trigger(); // merged with the first: one re-read serves both
/// reloads.next().await;
/// assert_eq!(reloads.requested(), 2);
/// # }
/// ```
#[derive(Debug)]
pub struct Reloads {
    rx: watch::Receiver<u64>,
}

/// The firing side of reloads (cloneable; [`on_reload`] holds one for SIGHUP).
#[derive(Debug, Clone)]
pub struct ReloadTrigger {
    tx: Arc<watch::Sender<u64>>,
}

impl Reloads {
    /// Creates a trigger and its waiter.
    pub fn new() -> (ReloadTrigger, Reloads) {
        let (tx, rx) = watch::channel(0);
        (ReloadTrigger { tx: Arc::new(tx) }, Reloads { rx })
    }

    /// Returns when a reload was requested since the last time it returned (at once if
    /// one is pending). Requests made meanwhile are merged into one return. Never returns
    /// once every trigger is dropped with nothing pending.
    ///
    /// Cancel-safe: use it as a branch of `tokio::select!` in a loop.
    pub async fn next(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// How many reloads were requested so far (each trigger counted, merged or not).
    pub fn requested(&self) -> u64 {
        *self.rx.borrow()
    }
}

impl ReloadTrigger {
    /// Requests a reload: the [`Reloads`] waiter's next [`Reloads::next`] returns.
    pub fn trigger(&self) {
        self.tx.send_modify(|n| *n += 1);
    }
}

/// Installs a SIGHUP handler and spawns a task that fires `trigger` on every SIGHUP
/// (logging `SIGHUP: reloading`), so SIGHUP no longer ends the process.
///
/// The handler is installed before this returns. The task runs until every [`Reloads`]
/// waiter is dropped. Call it from inside a tokio runtime with I/O enabled; fails if the
/// handler cannot be installed.
pub fn on_reload(trigger: ReloadTrigger) -> std::io::Result<JoinHandle<()>> {
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                got = hangup.recv() => {
                    if got.is_none() {
                        return;
                    }
                    tracing::info!(signal = "SIGHUP", "reloading");
                    trigger.trigger();
                }
                () = trigger.tx.closed() => return,
            }
        }
    }))
}
