//! `waist`: the command line — demo, paper reproductions.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = waist::Cli::parse();
    let stdout = std::io::stdout();
    waist::run(cli, &mut stdout.lock())
}
