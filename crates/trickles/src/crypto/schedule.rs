//! One master secret, every key: the rotation schedule replicas share.

use core::fmt;

use aes::Aes128;
use aes::cipher::KeyInit;

use super::{KeyConfig, encrypt};

/// Every key a service needs, derived from one 16-byte master secret by period.
///
/// Replicas given the same master secret (a shared key file) derive the same keys at the
/// same time without talking to each other, and a restarted process picks up exactly where
/// it was: the MAC key of rotation period `p` (wall-clock time divided by the rotation
/// interval: [`Rotation::period_at`](super::Rotation::period_at)) is `AES_master("trickles mac" ‖ p)`, live for
/// periods `p` and `p + 1` (the core's two live keys; see [`ServerKeys::rotate`](super::ServerKeys::rotate)). The
/// nonce keys and the application's keys do not rotate: they are fixed derivations under
/// their own labels.
///
/// ```
/// use trickles::crypto::KeySchedule;
/// let a = KeySchedule::new(&[7; 16]);
/// let b = KeySchedule::new(&[7; 16]);
/// assert_eq!(a.mac_key(41), b.mac_key(41));
/// assert_ne!(a.mac_key(41), a.mac_key(42));
/// let cfg = a.key_config(42);
/// assert_eq!(cfg.current_epoch, 42);
/// assert_eq!(cfg.mac_keys[0], a.mac_key(42)); // slot e % 2
/// assert_eq!(cfg.mac_keys[1], a.mac_key(41));
/// ```
#[derive(Clone)]
pub struct KeySchedule {
    aes: Aes128,
}

impl fmt::Debug for KeySchedule {
    /// Key bytes never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySchedule").finish_non_exhaustive()
    }
}

impl KeySchedule {
    /// The schedule under `master`.
    pub fn new(master: &[u8; 16]) -> KeySchedule {
        KeySchedule {
            aes: <Aes128 as KeyInit>::new(&(*master).into()),
        }
    }

    /// A 16-byte key for `label` (at most 8 bytes, zero-padded) and `index`:
    /// `AES_master(label ‖ index)`, a PRF output, so distinct inputs give independent keys.
    pub fn derive(&self, label: &[u8], index: u64) -> [u8; 16] {
        let mut l = [0u8; 8];
        for (d, s) in l.iter_mut().zip(label) {
            *d = *s;
        }
        let x = (u128::from(u64::from_be_bytes(l)) << 64) | u128::from(index);
        encrypt(&self.aes, x).to_be_bytes()
    }

    /// The MAC key of rotation period `period`.
    pub fn mac_key(&self, period: u64) -> [u8; 16] {
        self.derive(b"tr-mac", period)
    }

    /// The server's [`KeyConfig`] during `period`: that period's key current (epoch
    /// `period mod 256`), the previous period's still live, the fixed nonce keys. At the
    /// next period boundary the keys rotate to `mac_key(period + 1)`: a
    /// [`Rotation`](super::Rotation) does it.
    pub fn key_config(&self, period: u64) -> KeyConfig {
        let mut mac_keys = [[0; 16]; 2];
        let (cur, prev) = if period.is_multiple_of(2) {
            (0, 1)
        } else {
            (1, 0)
        };
        mac_keys[cur] = self.mac_key(period);
        mac_keys[prev] = self.mac_key(period.wrapping_sub(1));
        KeyConfig {
            mac_keys,
            // The epoch is the period's low byte: rotation increments both.
            current_epoch: period as u8,
            nonce_key: self.derive(b"tr-nonce", 0),
            rtx_nonce_key: self.derive(b"tr-rtx", 0),
        }
    }
}
