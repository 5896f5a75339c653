//! `waist image`: the container image of our daemons and host tools, built offline.
//!
//! ```text
//!  cargo build --release --target x86_64-unknown-linux-gnu (crt-static)   or --bins DIR
//!    └─► a build context: Dockerfile (dist/Dockerfile, built in), rootfs/bin/ (the six
//!        binaries, debug information stripped), rootfs/lib… (the shared libraries and
//!        loader of binaries that are not static, from ldd)
//!          └─► docker build -t waist:latest -t waist:VERSION  ─► the image's size
//! ```
//!
//! The image is `FROM scratch`: nothing is pulled, so it builds on a machine without
//! internet. Static binaries use glibc's static linking (`-C target-feature=+crt-static`;
//! the explicit `--target` keeps build scripts and proc macros dynamic). Setting RUSTFLAGS
//! replaces the workspace's `.cargo/config.toml` flags for the target, so the static
//! binaries pick AES-NI at run time (the `aes` crate's detection) instead of at compile
//! time. `--bins DIR` takes binaries already built (a test's debug build, say); those
//! that are dynamically linked get their libraries and loader copied in at the paths
//! `ldd` names.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use clap::Args;

/// The binaries the image holds, in `/bin`.
pub const BINARIES: [&str; 6] = [
    "waist",
    "waist-router",
    "trickles-web",
    "trickles-get",
    "trickles-proxy",
    "trickles-load",
];
/// The Dockerfile (`dist/Dockerfile`), built in so `waist image` works from anywhere.
pub const DOCKERFILE: &str = include_str!("../../../dist/Dockerfile");
/// The target the static binaries are built for.
pub const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The workspace version, the image's second tag.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `waist image` options.
#[derive(Debug, Args)]
pub struct ImageArgs {
    /// Use the binaries in DIR instead of building static ones (dynamically linked ones
    /// get their shared libraries and loader copied in).
    #[arg(long, value_name = "DIR")]
    pub bins: Option<PathBuf>,
    /// The image's tags (repeatable); default `waist:latest` and `waist:VERSION`.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The repository to build the binaries from.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub source: PathBuf,
    /// Cargo's target directory for the static build (default: $CARGO_TARGET_DIR, else
    /// SOURCE/target).
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Keep the binaries' debug information (by default `strip --strip-debug` removes it
    /// from the copies in the image; symbols stay, for backtraces).
    #[arg(long)]
    pub keep_debug: bool,
    /// The docker command (its daemon from $DOCKER_HOST as usual).
    #[arg(long, value_name = "PATH", default_value = "docker")]
    pub docker: PathBuf,
}

/// `waist image`: builds (or takes) the binaries, stages the context, runs `docker
/// build`, and reports the image's size on `out`.
pub fn run(args: &ImageArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let bins = match &args.bins {
        Some(dir) => dir.clone(),
        None => build_static(args).context("building the static binaries")?,
    };
    let stage = std::env::temp_dir().join(format!("waist-image-{}", std::process::id()));
    let staged = stage_context(&bins, &stage, !args.keep_debug);
    let built = staged.and_then(|linked| {
        let tags = if args.tags.is_empty() {
            vec!["waist:latest".to_string(), format!("waist:{VERSION}")]
        } else {
            args.tags.clone()
        };
        docker_build(&args.docker, &stage, &tags)?;
        let size = image_size(&args.docker, &tags[0])?;
        writeln!(
            out,
            "{}: {} bytes ({:.1} MB), {}",
            tags.join(", "),
            size,
            size as f64 / 1e6,
            linked
        )?;
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&stage);
    built
}

/// Builds the binaries statically; returns their directory.
fn build_static(args: &ImageArgs) -> anyhow::Result<PathBuf> {
    if !args.source.join("Cargo.toml").is_file() {
        bail!(
            "{} is not the repository (no Cargo.toml); run from its root or pass --source",
            args.source.display()
        );
    }
    let target_dir = match (&args.target_dir, std::env::var_os("CARGO_TARGET_DIR")) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => PathBuf::from(d),
        (None, None) => args.source.join("target"),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "cargo build --release --target {TARGET} (static) in {}",
        target_dir.display()
    );
    let status = Command::new(cargo)
        .current_dir(&args.source)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_TARGET_DIR", &target_dir)
        .args(["build", "--release", "--target", TARGET])
        .args(["-p", "waist", "-p", "waist-router", "-p", "trickles-web"])
        .stdout(stderr_stdio()?)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo build: {status}");
    }
    Ok(target_dir.join(TARGET).join("release"))
}

/// Stages the build context in `stage`: the Dockerfile and `rootfs/` (the binaries in
/// `rootfs/bin`, with `strip` losing their debug information; libraries at their paths).
/// Returns how the binaries are linked (`static`, or the libraries copied in).
pub fn stage_context(bins: &Path, stage: &Path, strip: bool) -> anyhow::Result<String> {
    let _ = std::fs::remove_dir_all(stage);
    let root = stage.join("rootfs");
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    std::fs::write(stage.join("Dockerfile"), DOCKERFILE)?;
    let mut libs: Vec<PathBuf> = Vec::new();
    for name in BINARIES {
        let from = bins.join(name);
        if !from.is_file() {
            bail!("{}: missing (need {})", from.display(), BINARIES.join(", "));
        }
        let to = bin.join(name);
        std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        if strip {
            strip_debug(&to)?;
        }
        for lib in shared_libraries(&from)? {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    for lib in &libs {
        let rel = lib.strip_prefix("/").unwrap_or(lib);
        let to = root.join(rel);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // fs::copy follows symlinks: the image gets the library under the name asked for.
        std::fs::copy(lib, &to).with_context(|| format!("copying {}", lib.display()))?;
    }
    if libs.is_empty() {
        Ok("static".to_string())
    } else {
        let names: Vec<String> = libs.iter().map(|l| l.display().to_string()).collect();
        Ok(format!("dynamic, with {}", names.join(" ")))
    }
}

/// `strip --strip-debug FILE` (binutils, there wherever cargo links).
fn strip_debug(file: &Path) -> anyhow::Result<()> {
    let status = Command::new("strip")
        .arg("--strip-debug")
        .arg(file)
        .status()
        .context("running strip (binutils; or pass --keep-debug)")?;
    if !status.success() {
        bail!("strip --strip-debug {}: {status}", file.display());
    }
    Ok(())
}

/// The shared libraries and loader `binary` needs, by `ldd`; none when it is static.
pub fn shared_libraries(binary: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .context("running ldd")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    if !out.status.success() {
        bail!("ldd {}: {}", binary.display(), text.trim());
    }
    parse_ldd(&text).with_context(|| format!("ldd {}", binary.display()))
}

/// The absolute paths in `ldd`'s output (`name => /path (addr)` and `/loader (addr)`);
/// fails on a library ldd could not find.
pub fn parse_ldd(text: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    bail!("{}: not found", name.trim());
                }
                rest
            }
            None => line,
        };
        let path = target.split_whitespace().next().unwrap_or("");
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    Ok(paths)
}

/// `docker build` of the staged context, its output on our stderr.
fn docker_build(docker: &Path, stage: &Path, tags: &[String]) -> anyhow::Result<()> {
    let mut cmd = Command::new(docker);
    // The classic builder: it needs no buildx plugin, and FROM scratch pulls nothing.
    cmd.env("DOCKER_BUILDKIT", "0").arg("build");
    for t in tags {
        cmd.args(["-t", t]);
    }
    cmd.args(["--build-arg", &format!("VERSION={VERSION}")])
        .arg(stage)
        .stdout(stderr_stdio()?);
    let status = cmd
        .status()
        .with_context(|| format!("running {}", docker.display()))?;
    if !status.success() {
        bail!("docker build: {status}");
    }
    Ok(())
}

/// The image's size in bytes, as `docker image inspect` reports it.
fn image_size(docker: &Path, tag: &str) -> anyhow::Result<u64> {
    let out = Command::new(docker)
        .args(["image", "inspect", "--format", "{{.Size}}", tag])
        .output()
        .with_context(|| format!("running {}", docker.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "docker image inspect {tag}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    text.trim()
        .parse()
        .with_context(|| format!("docker image inspect {tag}: size {:?}", text.trim()))
}

/// Our stderr, for a child's stdout (so `out` holds only the report).
fn stderr_stdio() -> anyhow::Result<Stdio> {
    Ok(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_parses() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd5d1f0000)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0c1e2a0000)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1e0bf000)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1e8f1000)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        let e = parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err();
        assert_eq!(e.to_string(), "libfoo.so.1: not found");
    }

    #[test]
    fn a_dynamic_binary_is_staged_with_its_libraries() {
        // Six copies of true(1), which links the C library dynamically.
        let base = std::env::temp_dir().join(format!("waist-image-test-{}", std::process::id()));
        let bins = base.join("bins");
        std::fs::create_dir_all(&bins).unwrap();
        for b in BINARIES {
            std::fs::copy("/bin/true", bins.join(b)).unwrap();
        }
        let stage = base.join("stage");
        let linked = stage_context(&bins, &stage, true).unwrap();
        assert!(linked.starts_with("dynamic, with "), "{linked}");
        for b in BINARIES {
            assert!(stage.join("rootfs/bin").join(b).is_file());
        }
        for lib in shared_libraries(Path::new("/bin/true")).unwrap() {
            let staged = stage.join("rootfs").join(lib.strip_prefix("/").unwrap());
            assert!(staged.is_file(), "{} not staged", staged.display());
        }
        assert_eq!(
            std::fs::read_to_string(stage.join("Dockerfile")).unwrap(),
            DOCKERFILE
        );

        std::fs::remove_file(bins.join("trickles-load")).unwrap();
        let e = stage_context(&bins, &stage, false).unwrap_err().to_string();
        assert!(
            e.ends_with(&format!(
                "trickles-load: missing (need {})",
                BINARIES.join(", ")
            )),
            "{e}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_dockerfile_is_from_scratch() {
        assert!(DOCKERFILE.lines().any(|l| l == "FROM scratch"));
        assert!(DOCKERFILE.lines().any(|l| l == "ENV PATH=/bin"));
    }
}
