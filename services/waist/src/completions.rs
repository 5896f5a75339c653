//! `waist completions SHELL [BINARY]` and `waist man DIR`: shell completion scripts and
//! man pages for every binary of the workspace, generated from their clap definitions
//! (`clap_complete`, `clap_mangen`), so they never drift from the options.
//!
//! ```text
//!  waist::Cli, waist_router::daemon::Args, trickles_web::{daemon, get, proxy, load}::Args
//!        └─► Binary::command ─┬─► clap_complete::generate ─► the script on stdout
//!                             └─► clap_mangen ─► DIR/NAME.1 (and DIR/waist-SUB.1 …)
//! ```
//!
//! Install them (bash, zsh, fish; the man pages) as the root README says:
//!
//! ```text
//! waist completions bash trickles-get > ~/.local/share/bash-completion/completions/trickles-get
//! waist man ~/.local/share/man/man1
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::CommandFactory;

/// A binary of the workspace: the ones a user runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Binary {
    /// This command line.
    Waist,
    /// The router daemon.
    WaistRouter,
    /// The Trickles web server.
    TricklesWeb,
    /// The Trickles downloader.
    TricklesGet,
    /// The local HTTP proxy over Trickles.
    TricklesProxy,
    /// The load generator.
    TricklesLoad,
}

impl Binary {
    /// Every binary, `waist` first.
    pub const ALL: [Binary; 6] = [
        Binary::Waist,
        Binary::WaistRouter,
        Binary::TricklesWeb,
        Binary::TricklesGet,
        Binary::TricklesProxy,
        Binary::TricklesLoad,
    ];

    /// Its executable's name.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Waist => "waist",
            Binary::WaistRouter => "waist-router",
            Binary::TricklesWeb => "trickles-web",
            Binary::TricklesGet => "trickles-get",
            Binary::TricklesProxy => "trickles-proxy",
            Binary::TricklesLoad => "trickles-load",
        }
    }

    /// Its clap definition, named as the executable (the libraries' `Args` may carry
    /// their package's name).
    pub fn command(self) -> clap::Command {
        let cmd = match self {
            Binary::Waist => crate::Cli::command(),
            Binary::WaistRouter => waist_router::daemon::Args::command(),
            Binary::TricklesWeb => trickles_web::daemon::Args::command(),
            Binary::TricklesGet => trickles_web::get::Args::command(),
            Binary::TricklesProxy => trickles_web::proxy::Args::command(),
            Binary::TricklesLoad => trickles_web::load::Args::command(),
        };
        cmd.name(self.name()).bin_name(self.name())
    }
}

/// Writes `binary`'s completion script for `shell` to `out`.
///
/// # Errors
///
/// If writing fails.
pub fn completions(
    shell: clap_complete::Shell,
    binary: Binary,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut cmd = binary.command();
    clap_complete::generate(shell, &mut cmd, binary.name(), out);
    out.flush().context("writing the completion script")
}

/// Writes a man page `NAME.1` for every binary into `dir` (made if missing), and one
/// `NAME-SUB.1` per subcommand (`waist-up.1`, `waist-snap-asm.1`, …); returns the paths
/// written, in order.
///
/// # Errors
///
/// If `dir` cannot be made or a page cannot be written.
pub fn man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for binary in Binary::ALL {
        let mut cmd = binary.command().disable_help_subcommand(true);
        cmd.build();
        pages(cmd, dir, &mut written)?;
    }
    Ok(written)
}

/// `cmd`'s page and its subcommands' (built first, so they carry their full names).
fn pages(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let path = man
        .generate_to(dir)
        .with_context(|| format!("writing a man page into {}", dir.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub.clone(), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(shell: clap_complete::Shell, binary: Binary) -> String {
        let mut out = Vec::new();
        completions(shell, binary, &mut out).unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn bash_completes_waists_subcommands() {
        let bash = script(clap_complete::Shell::Bash, Binary::Waist);
        for word in ["repro", "up", "completions", "man"] {
            assert!(bash.contains(word), "no {word} in the bash script");
        }
        assert!(bash.contains("complete -F _waist"), "{bash}");
        let get = script(clap_complete::Shell::Bash, Binary::TricklesGet);
        assert!(get.contains("--connect-timeout"), "{get}");
        assert!(get.contains("trickles-get"), "{get}");
    }

    #[test]
    fn zsh_and_fish_name_the_binary() {
        for binary in Binary::ALL {
            for shell in [clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
                let s = script(shell, binary);
                assert!(!s.is_empty(), "{shell} {binary:?}");
                assert!(s.contains(binary.name()), "{shell} {binary:?}: {s}");
            }
        }
        let fish = script(clap_complete::Shell::Fish, Binary::WaistRouter);
        assert!(fish.contains("complete -c waist-router"), "{fish}");
    }

    #[test]
    fn the_commands_print_them() {
        use clap::Parser as _;
        let run = |args: &[&str]| {
            let cli = crate::Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
            let mut out = Vec::new();
            let code = crate::run(cli, &mut out).unwrap_or_else(|e| panic!("{e}"));
            (code, String::from_utf8(out).unwrap_or_default())
        };
        let (code, fish) = run(&["waist", "completions", "fish", "trickles-proxy"]);
        assert_eq!(code, 0);
        assert!(fish.contains("complete -c trickles-proxy"), "{fish}");
        assert!(fish.contains("connect-timeout"), "{fish}");
        let dir = std::env::temp_dir().join(format!("waist-man-cmd-{}", std::process::id()));
        let dir_text = dir.display().to_string();
        let (code, listed) = run(&["waist", "man", &dir_text]);
        assert_eq!(code, 0);
        assert!(
            listed.lines().any(|l| l.ends_with("/waist-router.1")),
            "{listed}"
        );
        assert!(dir.join("trickles-load.1").is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_man_page_per_binary_and_subcommand() {
        let dir = std::env::temp_dir().join(format!("waist-man-{}", std::process::id()));
        let written = man_pages(&dir).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = written
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        for binary in Binary::ALL {
            assert!(names.contains(&format!("{}.1", binary.name())), "{names:?}");
        }
        assert!(names.contains(&"waist-up.1".to_string()), "{names:?}");
        let router = std::fs::read_to_string(dir.join("waist-router.1")).unwrap_or_default();
        assert!(router.contains(".TH"), "{router}");
        assert!(router.contains("\\-\\-config"), "{router}");
        let get = std::fs::read_to_string(dir.join("trickles-get.1")).unwrap_or_default();
        assert!(get.contains("\\-\\-idle\\-timeout"), "{get}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
