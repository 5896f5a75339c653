//! The key file.
//!
//! A key file holds one 16-byte master secret as 32 hex digits (lines starting with `#`
//! are comments). Everything else is derived from it by [`trickles::crypto::KeySchedule`]:
//! the continuation MAC key of each rotation period (wall-clock time since the Unix
//! epoch divided by the rotation interval), the nonce keys and the application's user
//! continuation key. So every server process given the same file — replicas, or one
//! process restarted — holds the same two live keys at the same moment without talking to
//! the others, and any of them accepts the continuations any other issued. When to rotate
//! is the core's business ([`Keys::rotation`] hands it a [`Rotation`]); this module only
//! reads and writes the file.
//!
//! A missing file is created with fresh random bytes from the operating system, mode 0600,
//! never overwriting one that appears meanwhile (`O_EXCL`).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use trickles::Instant;
use trickles::crypto::{KeySchedule, Rotation};

/// A service's secrets: the schedule derived from the key file's master secret.
#[derive(Clone, Debug)]
pub struct Keys {
    schedule: KeySchedule,
    rotate: Duration,
}

impl Keys {
    /// Keys from `master`, rotating every `rotate` (at least one second).
    pub fn new(master: &[u8; 16], rotate: Duration) -> Keys {
        Keys {
            schedule: KeySchedule::new(master),
            rotate: rotate.max(Duration::from_secs(1)),
        }
    }

    /// Reads the key file at `path`, creating it with a fresh secret when missing.
    ///
    /// # Errors
    ///
    /// The file cannot be read or created, or does not hold 32 hex digits.
    pub fn load_or_create(path: &Path, rotate: Duration) -> anyhow::Result<Keys> {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut f) => {
                let mut master = [0u8; 16];
                getrandom::fill(&mut master)
                    .map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
                writeln!(
                    f,
                    "# trickles-web master secret: share with the replicas, keep private\n{}",
                    hex(&master)
                )
                .with_context(|| format!("writing key file {}", path.display()))?;
                tracing::info!(path = %path.display(), "created a new key file");
                Ok(Keys::new(&master, rotate))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Ok(meta) = std::fs::metadata(path)
                    && meta.permissions().mode() & 0o077 != 0
                {
                    tracing::warn!(path = %path.display(), "key file is readable by others: chmod 600 it");
                }
                Keys::load(path, rotate)
            }
            Err(e) => Err(e).with_context(|| format!("creating key file {}", path.display())),
        }
    }

    /// Reads the key file at `path` (which must exist).
    ///
    /// # Errors
    ///
    /// The file cannot be read or does not hold 32 hex digits (named `PATH:LINE`).
    pub fn load(path: &Path, rotate: Duration) -> anyhow::Result<Keys> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading key file {}", path.display()))?;
        let master = parse(&text)
            .map_err(|(line, m)| anyhow::anyhow!("key file {}:{line}: {m}", path.display()))?;
        Ok(Keys::new(&master, rotate))
    }

    /// Checks what [`load_or_create`](Keys::load_or_create) would do, writing nothing: an
    /// existing file is read as it would be; a missing one needs a directory to be made in.
    ///
    /// # Errors
    ///
    /// As [`load`](Keys::load); for a missing file, a parent that is not a directory.
    pub fn check(path: &Path) -> anyhow::Result<()> {
        if path.exists() {
            return Keys::load(path, Duration::from_secs(1)).map(|_| ());
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        match parent {
            Some(dir) if !dir.is_dir() => bail!(
                "creating key file {}: {} is not a directory",
                path.display(),
                dir.display()
            ),
            _ => Ok(()),
        }
    }

    /// The server's rotation from `now` on (wall-clock microseconds since the Unix
    /// epoch, so replicas agree on the period): the schedule, every rotation interval.
    pub fn rotation(&self, now: Instant) -> Rotation {
        let interval_us = u64::try_from(self.rotate.as_micros()).unwrap_or(u64::MAX);
        Rotation::new(self.schedule.clone(), interval_us, now)
    }

    /// The key schedule.
    pub fn schedule(&self) -> &KeySchedule {
        &self.schedule
    }

    /// The application's user-continuation key (fixed; it binds to the connection).
    pub fn ucont_key(&self) -> [u8; 16] {
        self.schedule.derive(b"ucont", 0)
    }
}

/// 32 hex digits on the first line that is not a comment; or that line's number (1-based)
/// and what is wrong with it.
fn parse(text: &str) -> Result<[u8; 16], (usize, &'static str)> {
    let found = text
        .lines()
        .map(str::trim)
        .enumerate()
        .find(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((i, line)) = found else {
        return Err((text.lines().count().max(1), "no key line (32 hex digits)"));
    };
    let wrong = (i + 1, "the key line must be 32 hex digits");
    if line.len() != 32 || !line.is_ascii() {
        return Err(wrong);
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let pair = line.get(2 * i..2 * i + 2).unwrap_or_default();
        *o = u8::from_str_radix(pair, 16).map_err(|_| wrong)?;
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_mode_0600_then_read_back() {
        let dir = std::env::temp_dir().join(format!("tw-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        let _ = std::fs::remove_file(&path);
        Keys::check(&path).unwrap();
        assert!(!path.exists(), "a check creates nothing");
        let a = Keys::load_or_create(&path, Duration::from_secs(60)).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = Keys::load_or_create(&path, Duration::from_secs(60)).unwrap();
        assert_eq!(a.schedule().mac_key(5), b.schedule().mac_key(5));
        assert_eq!(a.ucont_key(), b.ucont_key());
        std::fs::write(&path, "# c\nzz\n").unwrap();
        let e = Keys::load_or_create(&path, Duration::from_secs(60)).unwrap_err();
        let named = format!(
            "key file {}:2: the key line must be 32 hex digits",
            path.display()
        );
        assert_eq!(e.to_string(), named);
        assert_eq!(Keys::check(&path).unwrap_err().to_string(), named);
        assert!(
            Keys::check(&path.join("keys")).is_err(),
            "a file is no directory"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parse_and_periods() {
        let k = parse("# x\n000102030405060708090a0b0c0d0e0f\n").unwrap();
        assert_eq!(k[15], 15);
        assert_eq!(
            parse("0001"),
            Err((1, "the key line must be 32 hex digits"))
        );
        assert_eq!(parse("# a\n\n00zz0203040506070809\n").unwrap_err().0, 3);
        assert_eq!(parse("").unwrap_err().1, "no key line (32 hex digits)");
        let keys = Keys::new(&k, Duration::from_secs(100));
        // 12,345.6 s after the epoch: period 123 of 100 s, ending at 12,400 s.
        let r = keys.rotation(Instant::from_micros(12_345_600_000));
        assert_eq!(r.period(), 123);
        assert_eq!(r.period_end(123), Instant::from_micros(12_400_000_000));
        assert_eq!(r.key_config().current_epoch, 123);
        assert_eq!(r.schedule().mac_key(124), KeySchedule::new(&k).mac_key(124));
        // Never faster than once a second.
        let fast = Keys::new(&k, Duration::from_millis(10));
        assert_eq!(fast.rotation(Instant::ZERO).interval_us(), 1_000_000);
    }
}
