//! How a process of a run was started ([`Launch`]): recorded by [`fleet`](super::fleet) at
//! `waist up`, used again by [`restart`](super::restart).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// How a process was started: everything `waist restart` needs to start it again the
/// same way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The binary.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment (that of the `waist up` that started it; variables whose
    /// name or value is not UTF-8 are left out).
    pub env: Vec<(String, String)>,
    /// Its working directory (relative paths in `args` are relative to it).
    pub cwd: PathBuf,
}

impl Launch {
    /// `program` with `args`, in this process's environment and working directory.
    ///
    /// # Panics
    ///
    /// Never; a working directory that cannot be read is recorded as `.`.
    pub fn here(program: PathBuf, args: Vec<String>) -> Launch {
        Launch {
            program,
            args,
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    /// Starts it, stdin from /dev/null, stdout to `log` with the extension `.out`
    /// (truncated: it holds the line that says where the metrics are) and stderr to `log`
    /// (truncated, or appended to after a marker line when `again`).
    ///
    /// # Errors
    ///
    /// A log that cannot be opened, a program that cannot start.
    pub fn start(&self, log: &Path, again: bool) -> anyhow::Result<Child> {
        let out = log.with_extension("out");
        let stdout = std::fs::File::create(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        let mut stderr = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(again)
            .truncate(!again)
            .open(log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        if again {
            writeln!(stderr, "--- waist restart: started again ---")
                .with_context(|| format!("cannot write {}", log.display()))?;
        }
        Command::new(&self.program)
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("cannot start {}", self.program.display()))
    }
}
