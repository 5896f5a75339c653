//! A router on its own thread and runtime, as a separate process would run it: for tests,
//! benchmarks and tools that start routers in-process on loopback. Optionally with its
//! metrics endpoint on `127.0.0.1:0`.
//!
//! ```no_run
//! let r = waist_router::embed::Embedded::start("r1.toml", std::fs::read_to_string("r1.toml")?, true)?;
//! println!("metrics at {:?}", r.metrics());
//! let summary = r.stop()?;
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::net::SocketAddr;
use std::thread::JoinHandle;

use anyhow::Context;
use netio::config::Source;
use tokio::sync::oneshot;

use crate::config::{RouterFile, plan};
use crate::{Router, Summary};

/// A running embedded router. Stopped (and joined) by [`Embedded::stop`] or on drop.
#[derive(Debug)]
pub struct Embedded {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<anyhow::Result<Summary>>>,
    metrics: Option<SocketAddr>,
}

impl Embedded {
    /// Starts the router whose config is `text` (named `file` in errors), with its metrics
    /// endpoint if `metrics`. Returns once its links are open.
    ///
    /// # Errors
    ///
    /// A config error or a link that cannot be opened.
    pub fn start(file: &str, text: String, metrics: bool) -> anyhow::Result<Embedded> {
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<Option<SocketAddr>>>();
        let file = file.to_string();
        let thread = std::thread::spawn(move || -> anyhow::Result<Summary> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let opened = async {
                    let source = Source::new(file, text);
                    let parsed: RouterFile = source.parse()?;
                    let p = plan(&source, &parsed)?;
                    let router = Router::open(&p, &source).await?;
                    let served = if metrics {
                        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                        let addr = l.local_addr()?;
                        let (handle, scrapes) = netio::metrics::channel();
                        Some((l, handle, scrapes, addr))
                    } else {
                        None
                    };
                    anyhow::Ok((router, served))
                };
                let (router, served) = match opened.await {
                    Ok(x) => x,
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = ready_tx.send(Err(e));
                        anyhow::bail!("{msg}");
                    }
                };
                let (stop_server, server_stopped) = oneshot::channel::<()>();
                let scrapes = match served {
                    Some((l, handle, scrapes, addr)) => {
                        tokio::spawn(netio::metrics::serve(l, handle, async {
                            let _ = server_stopped.await;
                        }));
                        let _ = ready_tx.send(Ok(Some(addr)));
                        Some(scrapes)
                    }
                    None => {
                        let _ = ready_tx.send(Ok(None));
                        None
                    }
                };
                let summary = router
                    .run(
                        async {
                            let _ = stopped.await;
                        },
                        scrapes,
                    )
                    .await;
                let _ = stop_server.send(());
                summary
            })
        });
        let metrics = ready_rx
            .recv()
            .context("the router thread ended before it was ready")??;
        Ok(Embedded {
            stop: Some(stop),
            thread: Some(thread),
            metrics,
        })
    }

    /// Its metrics address, if it serves metrics.
    pub fn metrics(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// Stops it and returns what it did.
    ///
    /// # Errors
    ///
    /// The router's own error, or a panic in its thread.
    pub fn stop(mut self) -> anyhow::Result<Summary> {
        self.finish()
    }

    fn finish(&mut self) -> anyhow::Result<Summary> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| anyhow::anyhow!("the router thread panicked"))?,
            None => anyhow::bail!("already stopped"),
        }
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}
