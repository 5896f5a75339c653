//! `waist restart NAME`: one daemon of a running network stopped and started again, as it
//! was started.
//!
//! ```text
//!  waist restart r2 ─► state.json: r2 `restarting`
//!                  ─► SIGTERM to r2's pid (if it runs waist-router), SIGKILL after the grace
//!                  ─► the same program, arguments, environment and working directory
//!                     (`Started::launch`), stderr appended to logs/r2.log, stdout in
//!                     logs/r2.out again
//!                  ─► ready: its metrics endpoint answers
//!                  ─► state.json: r2's new pid and metrics address, no longer `restarting`
//! ```
//!
//! It works on a detached run and on one whose `waist up` runs in the foreground. The
//! restarted process is no child of that `waist up`, so the supervisor finds it again
//! through the state file: while it waits, a process of its own that exits while its
//! entry says `restarting` (or names another pid) is reported as restarted, not as failed;
//! when it stops the run, it signals the pids the state file names beside its own
//! children, each only if it still runs the expected program
//! ([`is_ours`]).
//!
//! The state file is written whole to a temporary file and renamed into place, so a reader
//! never sees half of it. It holds each process's environment (as `waist up` had it), so it
//! is readable by its owner only. A state file written before `waist restart` existed has
//! no `launch` records: such a run cannot be restarted process by process.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use clap::Args;
use nix::sys::signal::{Signal, kill};

use super::fleet::{self, Fleet, STOP_GRACE};
use super::{State, is_ours, pid, stop_pids};

/// `waist restart` options.
#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The process to restart: a router's name or a server replica's (`web-1`), as
    /// `waist status` lists them.
    pub name: String,
    /// The run's directory (`waist up --dir`).
    #[arg(long, default_value = "waist-run")]
    pub dir: PathBuf,
}

/// `waist restart`; returns the exit code.
///
/// # Errors
///
/// No run in the directory, no process of that name (the names are listed), a run
/// started before processes were recorded for restarts, a process that does not become
/// ready again (its log's tail).
pub fn restart(args: &RestartArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let state = State::load(&args.dir)?;
    let Some(i) = state.processes.iter().position(|s| s.name == args.name) else {
        let names: Vec<&str> = state.processes.iter().map(|s| s.name.as_str()).collect();
        bail!(
            "run `{}` in {} has no process `{}` (it has: {})",
            state.name,
            args.dir.display(),
            args.name,
            names.join(", ")
        );
    };
    let old = state.processes[i].clone();
    let launch = old.launch.clone().ok_or_else(|| {
        anyhow!(
            "`{}` was started by a waist that did not record how; restart the whole run \
             (`waist down --dir {1}`, then `waist up … --dir {1}`)",
            old.name,
            args.dir.display()
        )
    })?;
    let program = old.role.program();
    if !update(
        &args.dir,
        fleet::Started {
            restarting: true,
            ..old.clone()
        },
    )? {
        bail!("the run in {} was stopped", args.dir.display());
    }
    let began = Instant::now();
    let was_running = is_ours(old.pid, program);
    if was_running {
        stop_pids(&[(old.pid, program)], STOP_GRACE);
    }
    let started = launch.start(&old.log, true).and_then(|mut child| {
        let new = fleet::Started {
            pid: child.id(),
            ..old.clone()
        };
        match fleet::wait_ready(Some(&mut child), &new) {
            Ok(metrics) => Ok(fleet::Started { metrics, ..new }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    });
    // Whatever happened, the entry is no longer being restarted.
    let entry = match &started {
        Ok(new) => new.clone(),
        Err(_) => fleet::Started {
            restarting: false,
            ..old.clone()
        },
    };
    if !update(&args.dir, entry)? {
        // `waist down` removed the run meanwhile: the new process goes too.
        if let Ok(new) = &started {
            stop_pids(&[(new.pid, program)], STOP_GRACE);
        }
        bail!(
            "the run in {} was stopped while `{}` restarted",
            args.dir.display(),
            args.name
        );
    }
    let new = started?;
    // A router's TUN devices went with its old process: its namespace hosts get the new
    // ones, as `waist up` gave them the first.
    let hosts: Vec<_> = state
        .namespaces
        .iter()
        .filter(|h| h.router == new.name)
        .collect();
    for h in &hosts {
        super::netns::reattach(h)?;
    }
    writeln!(
        out,
        "{}: restarted {} ({program}): pid {} → {}{}, metrics http://{}/metrics, ready in {} ms{}",
        state.name,
        new.name,
        old.pid,
        new.pid,
        if was_running {
            ""
        } else {
            " (it was not running)"
        },
        new.metrics,
        began.elapsed().as_millis(),
        match hosts.len() {
            0 => String::new(),
            n => format!(", {n} namespace host(s) attached again"),
        }
    )?;
    Ok(0)
}

/// Replaces the entry of the same name in the state file in `dir` with `entry`, reading the
/// file again first so that what others wrote meanwhile (another `waist restart`) stays;
/// false if the run is gone (its state file removed by `waist down`).
///
/// # Errors
///
/// The file cannot be written.
fn update(dir: &Path, entry: fleet::Started) -> anyhow::Result<bool> {
    let Ok(mut state) = State::load(dir) else {
        return Ok(false);
    };
    match state.processes.iter_mut().find(|s| s.name == entry.name) {
        Some(slot) => *slot = entry,
        None => return Ok(false),
    }
    state.save(dir)?;
    Ok(true)
}

/// Stops a foreground run: its own children ([`Fleet::stop`]) and the processes that
/// `waist restart` started in their place (the state file in `dir` names them), all
/// SIGTERMed at once, SIGKILLed after `grace`. Returns how many were still running.
pub(super) fn stop_all(dir: &Path, fleet: &mut Fleet, grace: Duration) -> usize {
    let adopted: Vec<(u32, &'static str)> = State::load(dir)
        .map(|state| {
            state
                .processes
                .iter()
                .filter(|s| !fleet.started.iter().any(|f| f.pid == s.pid))
                .filter(|s| is_ours(s.pid, s.role.program()))
                .map(|s| (s.pid, s.role.program()))
                .collect()
        })
        .unwrap_or_default();
    for (p, _) in &adopted {
        let _ = kill(pid(*p), Signal::SIGTERM);
    }
    let stopped = fleet.stop(grace).len();
    stop_pids(&adopted, grace);
    stopped + adopted.len()
}

/// What a foreground `waist up` says of a process of its own (`name`, started as `old`)
/// that exited: `Some` if `waist restart` stopped it (its entry in `dir`'s state file is
/// `restarting` or names another pid), with whether that restart is still under way;
/// `None` if not (report the exit).
pub(super) fn restarted(dir: &Path, name: &str, old: u32) -> Option<(String, bool)> {
    let state = State::load(dir).ok()?;
    let s = state.processes.iter().find(|s| s.name == name)?;
    match (s.restarting, s.pid != old) {
        (true, _) => Some((
            format!("{name} (pid {old}) stopped by `waist restart`"),
            true,
        )),
        (false, true) => Some((
            format!(
                "{name} (pid {old}) restarted by `waist restart`: pid {}",
                s.pid
            ),
            false,
        )),
        (false, false) => None,
    }
}

/// The pid the state file in `dir` gives `name` once no restart of it is under way.
pub(super) fn settled_pid(dir: &Path, name: &str) -> Option<u32> {
    let state = State::load(dir).ok()?;
    let s = state.processes.iter().find(|s| s.name == name)?;
    (!s.restarting).then_some(s.pid)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::up::STATE_FILE;
    use crate::up::launch::Launch;
    use crate::up::topology::Capture;

    /// A state file as `waist up` wrote it before `waist restart` existed.
    const OLDER: &str = r#"{
  "name": "two",
  "topology": "two.toml",
  "processes": [
    {
      "name": "r1",
      "role": "router",
      "machine": "local",
      "pid": 4194304,
      "metrics": "127.0.0.1:28000",
      "pcap": "run/pcap",
      "log": "run/logs/r1.log",
      "links": [["r2", "127.0.0.1:27000", "127.0.0.1:27001"]]
    }
  ],
  "supervisor": null
}"#;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("waist-restart-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_older_state_file_is_read_but_its_processes_are_not_restarted_alone() {
        let dir = scratch("older");
        std::fs::write(dir.join(STATE_FILE), OLDER).unwrap();
        let state = State::load(&dir).unwrap();
        let r1 = &state.processes[0];
        assert_eq!(
            (r1.capture, r1.launch.is_none(), r1.restarting),
            (Capture::Unbounded, true, false)
        );
        let args = RestartArgs {
            name: "r1".into(),
            dir: dir.clone(),
        };
        let err = restart(&args, &mut Vec::new()).unwrap_err().to_string();
        assert!(
            err.starts_with("`r1` was started by a waist that did not record how"),
            "{err}"
        );
        // Nothing was marked or rewritten.
        assert_eq!(
            std::fs::read_to_string(dir.join(STATE_FILE)).unwrap(),
            OLDER
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_saved_state_is_whole_private_and_read_back_with_its_launches() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("save");
        std::fs::write(dir.join(STATE_FILE), OLDER).unwrap();
        let mut state = State::load(&dir).unwrap();
        let launch = Launch::here(PathBuf::from("/bin/true"), vec!["--x".into()]);
        state.processes[0].launch = Some(launch.clone());
        state.processes[0].restarting = true;
        state.save(&dir).unwrap();
        let mode = std::fs::metadata(dir.join(STATE_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = State::load(&dir).unwrap();
        assert_eq!(again.processes[0].launch.as_ref(), Some(&launch));
        assert!(again.processes[0].restarting);
        assert!(launch.env.iter().any(|(k, _)| k == "PATH"));
        // No temporary file left beside it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_launch_starts_again_with_its_environment_and_appends_to_its_log() {
        let dir = scratch("launch");
        let log = dir.join("p.log");
        let mut launch = Launch::here(
            PathBuf::from("/bin/sh"),
            vec!["-c".into(), "echo $WAIST_T; echo err >&2; pwd".into()],
        );
        launch.env.retain(|(k, _)| k == "PATH");
        launch.env.push(("WAIST_T".into(), "recorded".into()));
        launch.cwd = dir.clone();
        for again in [false, true] {
            assert!(launch.start(&log, again).unwrap().wait().unwrap().success());
        }
        let out = std::fs::read_to_string(log.with_extension("out")).unwrap();
        assert_eq!(out, format!("recorded\n{}\n", dir.display()));
        let err = std::fs::read_to_string(&log).unwrap();
        assert_eq!(err, "err\n--- waist restart: started again ---\nerr\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
