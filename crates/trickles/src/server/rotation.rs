//! The server's one deadline: the end of its key period (§2.2's two live keys).
//!
//! With a [`Rotation`](crate::crypto::Rotation) configured, the server's MAC keys are those
//! of a rotation period, and [`Server::poll_timeout`] is that period's end. At
//! [`Server::handle_timeout`] the server moves to the period `now` falls in:
//!
//! * one [`ServerKeys::rotate`] per period passed (the new period's key current, the one
//!   before it still live, so a continuation issued just before a boundary still verifies
//!   after it, and not after the next);
//! * after a jump of more than two periods (a suspended machine, a clock set forward) no
//!   key of the old periods is live anyway: that period's keys are installed at once,
//!   counted as one rotation;
//! * a clock set back changes nothing: the keys in use stay until their period ends.
//!
//! Replicas given the same schedule and interval, and clocks that agree, rotate together
//! without talking.

use sansio::Instant;

use super::Server;
use crate::crypto::ServerKeys;

impl Server {
    /// When [`Server::handle_timeout`] wants to be called: the end of the current key
    /// period, with a [`ServerConfig::rotation`](super::ServerConfig::rotation); `None`
    /// without one (the keys never rotate).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.cfg
            .rotation
            .as_ref()
            .map(|r| r.period_end(self.period))
    }

    /// Moves the keys to the period `now` falls in (see the module docs); does nothing
    /// before [`Server::poll_timeout`], or without a rotation.
    pub fn handle_timeout(&mut self, now: Instant) {
        let (Some(rotation), Some(schedule)) = (&self.cfg.rotation, &self.schedule) else {
            return;
        };
        let period = rotation.period_at(now);
        if period > self.period.saturating_add(2) {
            self.keys = ServerKeys::new(&schedule.key_config(period));
            self.period = period;
            self.rotations += 1;
            return;
        }
        while self.period < period {
            self.period += 1;
            self.keys.rotate(schedule.mac_key(self.period));
            self.rotations += 1;
        }
    }

    /// The key period the server's keys are those of (with a rotation; otherwise 0).
    pub fn key_period(&self) -> u64 {
        self.period
    }

    /// Key rotations done so far (a jump over several periods counts one).
    pub fn rotations(&self) -> u64 {
        self.rotations
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::client::{Client, ClientConfig};
    use crate::conn::{Addr, FourTuple};
    use crate::crypto::{KeySchedule, Rotation};
    use crate::server::{Rejected, ServerConfig};

    /// One period: 0.3 s, shorter than the default freshness horizon (1 s), so the only
    /// thing that can refuse an old continuation below is its key.
    const PERIOD: u64 = 300_000;

    const MASTER: [u8; 16] = [9; 16];

    fn schedule() -> KeySchedule {
        KeySchedule::new(&MASTER)
    }

    fn server_at(now: Instant) -> Server {
        Server::new(ServerConfig::rotating(Rotation::new(&MASTER, PERIOD, now)))
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

    /// Whether `server`'s keys are exactly the schedule's for `period`: the same tags
    /// under the current and the previous epoch, and the epoch before that dead.
    fn has_keys_of(server: &mut Server, period: u64) -> bool {
        let want = ServerKeys::new(&schedule().key_config(period));
        let t = tuple();
        let keys = server.keys_mut();
        let (cur, prev) = (period as u8, (period as u8).wrapping_sub(1));
        keys.current_epoch() == cur
            && keys.mac(cur, &t, b"x") == want.mac(cur, &t, b"x")
            && keys.mac(prev, &t, b"x") == want.mac(prev, &t, b"x")
            && !keys.is_live(prev.wrapping_sub(1))
    }

    #[test]
    fn rotates_exactly_at_the_period_boundary() {
        let mut s = server_at(at(5, 123));
        assert_eq!(s.key_period(), 5);
        assert!(has_keys_of(&mut s, 5));
        assert_eq!(s.poll_timeout(), Some(at(6, 0)));
        s.handle_timeout(at(5, PERIOD - 1));
        assert_eq!((s.rotations(), s.key_period()), (0, 5), "one µs early");
        s.handle_timeout(at(6, 0));
        assert_eq!((s.rotations(), s.key_period()), (1, 6));
        assert!(has_keys_of(&mut s, 6));
        assert_eq!(s.poll_timeout(), Some(at(7, 0)));
        // Called again within the period: nothing more.
        s.handle_timeout(at(6, 1));
        assert_eq!(s.rotations(), 1);
    }

    #[test]
    fn one_rotation_per_period_passed() {
        let mut s = server_at(at(5, 0));
        s.handle_timeout(at(7, 5));
        assert_eq!((s.rotations(), s.key_period()), (2, 7));
        assert!(has_keys_of(&mut s, 7));
        assert_eq!(s.poll_timeout(), Some(at(8, 0)));
    }

    #[test]
    fn a_jump_of_more_than_two_periods_installs_that_periods_keys() {
        let mut s = server_at(at(5, 0));
        s.handle_timeout(at(8, 10));
        assert_eq!((s.rotations(), s.key_period()), (1, 8));
        assert!(has_keys_of(&mut s, 8));
        assert_eq!(s.poll_timeout(), Some(at(9, 0)));
        // Far ahead, across epochs' wrap-around at 256: still one rotation.
        s.handle_timeout(at(1_000, 0));
        assert_eq!((s.rotations(), s.key_period()), (2, 1_000));
        assert!(has_keys_of(&mut s, 1_000));
    }

    #[test]
    fn a_clock_set_back_changes_nothing() {
        let mut s = server_at(at(5, 0));
        s.handle_timeout(at(6, 0));
        assert_eq!(s.rotations(), 1);
        for back in [at(5, 10), at(2, 0), Instant::ZERO] {
            s.handle_timeout(back);
            assert_eq!((s.rotations(), s.key_period()), (1, 6));
            assert!(has_keys_of(&mut s, 6));
            assert_eq!(s.poll_timeout(), Some(at(7, 0)));
        }
    }

    #[test]
    fn without_a_rotation_the_keys_never_change() {
        let mut s = Server::new(ServerConfig::new(schedule().key_config(5)));
        assert_eq!(s.poll_timeout(), None);
        s.handle_timeout(at(1_000, 0));
        assert_eq!(s.rotations(), 0);
        assert!(has_keys_of(&mut s, 5));
    }

    /// A fresh server starting in period 0 and the client's second request, which
    /// presents a continuation the server issued at `t` (in period 0).
    fn issued_at(t: Instant) -> (Server, Vec<u8>) {
        let mut server = server_at(Instant::ZERO);
        let tuple = tuple();
        let mut client = Client::new(ClientConfig::default(), tuple, 777);
        client.connect(t, b"GET");
        let syn = client.poll_transmit().expect("the SYN");
        let reply = server
            .handle_request(t, tuple.client_addr, tuple.server_addr, &syn)
            .expect("the SYN is answered");
        let object = [7u8; 64 * 1024];
        let mut buf = [0u8; 2048];
        for r in &reply.responses {
            let (start, len) = r
                .range
                .map_or((0, 0), |r| (r.start as usize, usize::from(r.len)));
            let data = object.get(start..start + len).unwrap_or_default();
            let n = server
                .emit(&tuple, r, &[], data, false, &mut buf)
                .expect("emitted");
            client.handle_segment(t, &buf[..n]).expect("taken");
        }
        let request = client
            .poll_transmit()
            .expect("a request with a continuation");
        (server, request)
    }

    #[test]
    fn a_continuation_outlives_one_rotation_not_two() {
        let issued = at(0, PERIOD - 50_000);
        let tuple = tuple();
        // Before any rotation it verifies, of course.
        let (mut s, request) = issued_at(issued);
        let now = issued.saturating_add(10_000);
        assert!(
            s.handle_request(now, tuple.client_addr, tuple.server_addr, &request)
                .is_ok()
        );
        // One rotation later: its key is the previous one, still live.
        let (mut s, request) = issued_at(issued);
        let now = at(1, 50_000);
        s.handle_timeout(now);
        assert_eq!(s.rotations(), 1);
        assert!(
            s.handle_request(now, tuple.client_addr, tuple.server_addr, &request)
                .is_ok()
        );
        // Two rotations later (0.35 s on, inside the freshness horizon): its key is gone.
        let (mut s, request) = issued_at(issued);
        let now = at(2, 50_000);
        s.handle_timeout(now);
        assert_eq!(s.rotations(), 2);
        assert_eq!(
            s.handle_request(now, tuple.client_addr, tuple.server_addr, &request)
                .map(|_| ()),
            Err(Rejected::Mac)
        );
    }
}
