//! `waist`: the command line — demo, paper reproductions, host tools.

use clap::Parser;

fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = waist::Cli::parse();
    let stdout = std::io::stdout();
    waist::run(cli, &mut stdout.lock()).map(std::process::ExitCode::from)
}
