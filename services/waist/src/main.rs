//! `waist`: the command line — demo, paper reproductions, host tools.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = waist::Cli::parse();
    let stdout = std::io::stdout();
    netio::trace::report(
        cli.log
            .init("warn")
            .and_then(|()| waist::run(cli, &mut stdout.lock()))
            .map(std::process::ExitCode::from),
    )
}
