//! When the MAC key rotates: the key period as a deadline (§2.2's two live keys).
//!
//! A [`Rotation`] holds a [`KeySchedule`], the length of one period and the period the
//! server's keys are those of. [`Rotation::poll_timeout`] is the end of that period; at
//! [`Rotation::handle_timeout`] the keys move to the period `now` falls in:
//!
//! * one [`ServerKeys::rotate`] per period passed (the new period's key current, the one
//!   before it still live, so a continuation issued just before a boundary still verifies
//!   after it, and not after the next);
//! * after a jump of more than two periods (a suspended machine, a clock set forward) no
//!   key of the old periods could be live anyway: that period's keys are installed at
//!   once, counted as one rotation;
//! * a clock set back changes nothing: the keys in use stay until their period ends.
//!
//! [`Service`](crate::app::Service) drives it for a daemon
//! ([`Service::rotate_with`](crate::app::Service::rotate_with)). Replicas given the same
//! schedule and interval, with clocks that agree, rotate together without talking.

use sansio::Instant;

use super::{KeyConfig, KeySchedule, ServerKeys};

/// The key rotation schedule of a server: see the module docs.
///
/// Period `p` covers `[p × interval, (p + 1) × interval)` microseconds on the caller's
/// clock. Replicas must agree on the period, so a daemon gives it wall-clock time
/// (microseconds since the Unix epoch) and the same interval; a simulation may count from
/// zero.
///
/// ```
/// use trickles::crypto::{KeySchedule, Rotation, ServerKeys};
/// use trickles::Instant;
/// let mut r = Rotation::new(KeySchedule::new(&[7; 16]), 1_000_000, Instant::from_micros(41_500_000));
/// let mut keys = ServerKeys::new(&r.key_config());
/// assert_eq!((r.period(), keys.current_epoch()), (41, 41));
/// assert_eq!(r.poll_timeout(), Instant::from_micros(42_000_000));
/// assert_eq!(r.handle_timeout(Instant::from_micros(42_000_000), &mut keys), 1);
/// assert_eq!((r.period(), keys.current_epoch()), (42, 42));
/// ```
#[derive(Clone, Debug)]
pub struct Rotation {
    schedule: KeySchedule,
    interval_us: u64,
    /// The period the keys are those of.
    period: u64,
}

impl Rotation {
    /// `schedule` rotating every `interval_us` microseconds (at least 1), its keys those
    /// of the period `now` falls in ([`Rotation::key_config`]).
    pub fn new(schedule: KeySchedule, interval_us: u64, now: Instant) -> Rotation {
        let interval_us = interval_us.max(1);
        Rotation {
            schedule,
            interval_us,
            period: now.micros() / interval_us,
        }
    }

    /// The key schedule every period's keys come from.
    pub fn schedule(&self) -> &KeySchedule {
        &self.schedule
    }

    /// Microseconds per period.
    pub fn interval_us(&self) -> u64 {
        self.interval_us
    }

    /// The period the keys are those of now.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The period `now` falls in.
    pub fn period_at(&self, now: Instant) -> u64 {
        now.micros() / self.interval_us
    }

    /// When `period` ends, and the next one's key becomes current (the end of time if
    /// that is past it).
    pub fn period_end(&self, period: u64) -> Instant {
        Instant::from_micros(period.saturating_add(1).saturating_mul(self.interval_us))
    }

    /// The keys of the current period ([`KeySchedule::key_config`]): what the server
    /// starts with.
    pub fn key_config(&self) -> KeyConfig {
        self.schedule.key_config(self.period)
    }

    /// When [`Rotation::handle_timeout`] wants to be called: the end of the current
    /// period.
    pub fn poll_timeout(&self) -> Instant {
        self.period_end(self.period)
    }

    /// Moves `keys` to the period `now` falls in (see the module docs) and returns the
    /// rotations done: 0 before [`Rotation::poll_timeout`] or when the clock went back,
    /// one per period passed, 1 after a jump of more than two periods.
    pub fn handle_timeout(&mut self, now: Instant, keys: &mut ServerKeys) -> u64 {
        let period = self.period_at(now);
        if period > self.period.saturating_add(2) {
            *keys = ServerKeys::new(&self.schedule.key_config(period));
            self.period = period;
            return 1;
        }
        let mut rotations = 0;
        while self.period < period {
            self.period += 1;
            keys.rotate(self.schedule.mac_key(self.period));
            rotations += 1;
        }
        rotations
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::client::{Client, ClientConfig};
    use crate::conn::{Addr, FourTuple};
    use crate::server::{Rejected, Server, ServerConfig};

    /// One period: 0.3 s, shorter than the default freshness horizon (1 s), so the only
    /// thing that can refuse an old continuation below is its key.
    const PERIOD: u64 = 300_000;

    fn schedule() -> KeySchedule {
        KeySchedule::new(&[9; 16])
    }

    /// A rotation starting at `now`, and the keys it starts with.
    fn rotation_at(now: Instant) -> (Rotation, ServerKeys) {
        let r = Rotation::new(schedule(), PERIOD, now);
        let keys = ServerKeys::new(&r.key_config());
        (r, keys)
    }

    fn at(periods: u64, us: u64) -> Instant {
        Instant::from_micros(periods * PERIOD + us)
    }

    fn tuple() -> FourTuple {
        FourTuple {
            client_addr: Addr::V4([10, 0, 0, 1]),
            client_port: 4000,
            server_addr: Addr::V4([10, 0, 0, 2]),
            server_port: 80,
        }
    }

    /// Whether `keys` are exactly the schedule's for `period`: the same tags under the
    /// current and the previous epoch, and the epoch before that dead.
    fn are_keys_of(keys: &ServerKeys, period: u64) -> bool {
        let want = ServerKeys::new(&schedule().key_config(period));
        let t = tuple();
        let (cur, prev) = (period as u8, (period as u8).wrapping_sub(1));
        keys.current_epoch() == cur
            && keys.mac(cur, &t, b"x") == want.mac(cur, &t, b"x")
            && keys.mac(prev, &t, b"x") == want.mac(prev, &t, b"x")
            && !keys.is_live(prev.wrapping_sub(1))
    }

    #[test]
    fn rotates_exactly_at_the_period_boundary() {
        let (mut r, mut keys) = rotation_at(at(5, 123));
        assert_eq!(r.period(), 5);
        assert!(are_keys_of(&keys, 5));
        assert_eq!(r.poll_timeout(), at(6, 0));
        assert_eq!(
            r.handle_timeout(at(5, PERIOD - 1), &mut keys),
            0,
            "1 µs early"
        );
        assert!(are_keys_of(&keys, 5));
        assert_eq!(r.handle_timeout(at(6, 0), &mut keys), 1);
        assert_eq!(r.period(), 6);
        assert!(are_keys_of(&keys, 6));
        assert_eq!(r.poll_timeout(), at(7, 0));
        // Called again within the period: nothing more.
        assert_eq!(r.handle_timeout(at(6, 1), &mut keys), 0);
    }

    #[test]
    fn one_rotation_per_period_passed() {
        let (mut r, mut keys) = rotation_at(at(5, 0));
        assert_eq!(r.handle_timeout(at(7, 5), &mut keys), 2);
        assert_eq!(r.period(), 7);
        assert!(are_keys_of(&keys, 7));
        assert_eq!(r.poll_timeout(), at(8, 0));
    }

    #[test]
    fn a_jump_of_more_than_two_periods_installs_that_periods_keys() {
        let (mut r, mut keys) = rotation_at(at(5, 0));
        assert_eq!(r.handle_timeout(at(8, 10), &mut keys), 1);
        assert_eq!(r.period(), 8);
        assert!(are_keys_of(&keys, 8));
        assert_eq!(r.poll_timeout(), at(9, 0));
        // Far ahead, across the epochs' wrap-around at 256: still one rotation.
        assert_eq!(r.handle_timeout(at(1_000, 0), &mut keys), 1);
        assert_eq!(r.period(), 1_000);
        assert!(are_keys_of(&keys, 1_000));
    }

    #[test]
    fn a_clock_set_back_changes_nothing() {
        let (mut r, mut keys) = rotation_at(at(5, 0));
        assert_eq!(r.handle_timeout(at(6, 0), &mut keys), 1);
        for back in [at(5, 10), at(2, 0), Instant::ZERO] {
            assert_eq!(r.handle_timeout(back, &mut keys), 0);
            assert_eq!(r.period(), 6);
            assert!(are_keys_of(&keys, 6));
            assert_eq!(r.poll_timeout(), at(7, 0));
        }
    }

    #[test]
    fn periods_and_their_ends() {
        let r = Rotation::new(schedule(), 0, Instant::from_micros(7));
        assert_eq!(
            (r.interval_us(), r.period()),
            (1, 7),
            "a zero interval is 1 µs"
        );
        assert_eq!(r.period_end(u64::MAX), Instant::from_micros(u64::MAX));
        let r = Rotation::new(schedule(), PERIOD, Instant::ZERO);
        assert_eq!(r.period_at(at(3, PERIOD - 1)), 3);
        assert_eq!(r.period_at(at(4, 0)), 4);
        assert_eq!(r.schedule().mac_key(4), schedule().mac_key(4));
    }

    /// A fresh server whose keys are those of period 0, and the client's second request,
    /// which presents a continuation the server issued at `t` (in period 0).
    fn issued_at(t: Instant) -> (Rotation, Server, Vec<u8>) {
        let r = Rotation::new(schedule(), PERIOD, Instant::ZERO);
        let mut server = Server::new(ServerConfig::new(r.key_config()));
        let tuple = tuple();
        let mut client = Client::new(ClientConfig::default(), tuple, 777);
        client.connect(t, b"GET");
        let syn = client.poll_transmit().expect("the SYN");
        let reply = server
            .handle_request(t, tuple.client_addr, tuple.server_addr, &syn)
            .expect("the SYN is answered");
        let object = [7u8; 64 * 1024];
        let mut buf = [0u8; 2048];
        for resp in &reply.responses {
            let (start, len) = resp
                .range
                .map_or((0, 0), |r| (r.start as usize, usize::from(r.len)));
            let data = object.get(start..start + len).unwrap_or_default();
            let n = server
                .emit(&tuple, resp, &[], data, false, &mut buf)
                .expect("emitted");
            client.handle_segment(t, &buf[..n]).expect("taken");
        }
        let request = client
            .poll_transmit()
            .expect("a request with a continuation");
        (r, server, request)
    }

    #[test]
    fn a_continuation_outlives_one_rotation_not_two() {
        let issued = at(0, PERIOD - 50_000);
        let (c, s) = (tuple().client_addr, tuple().server_addr);
        // Before any rotation it verifies, of course.
        let (_, mut server, request) = issued_at(issued);
        assert!(
            server
                .handle_request(issued.saturating_add(10_000), c, s, &request)
                .is_ok()
        );
        // One rotation later: its key is the previous one, still live.
        let (mut r, mut server, request) = issued_at(issued);
        let now = at(1, 50_000);
        assert_eq!(r.handle_timeout(now, server.keys_mut()), 1);
        assert!(server.handle_request(now, c, s, &request).is_ok());
        // Two rotations later (0.35 s on, inside the freshness horizon): its key is gone.
        let (mut r, mut server, request) = issued_at(issued);
        let now = at(2, 50_000);
        assert_eq!(r.handle_timeout(now, server.keys_mut()), 2);
        assert_eq!(
            server.handle_request(now, c, s, &request).map(|_| ()),
            Err(Rejected::Mac)
        );
    }
}
