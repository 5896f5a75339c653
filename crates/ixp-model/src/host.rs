//! The host model: what an intermediate host (a Dell 530, 1.7 GHz Xeon, Linux 2.4, the
//! paper's §4 cluster) pays to receive, handle and send application messages over its
//! user-level RUDP on raw sockets.
//!
//! Every host-side number in the reproductions comes from [`HostParams`], each field a
//! physical quantity with its source; none is set per figure row.

use stream_handlers::Work;

/// Costs of the host's data path, nanoseconds unless said otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostParams {
    /// Core clock, Hz (paper §4: 1.7 GHz Xeon).
    pub cpu_hz: f64,
    /// Instructions per cycle on handler loops (a Pentium 4 core sustains about one on
    /// simple integer loops).
    pub ipc: f64,
    /// Receiving one packet in the kernel: NIC interrupt, driver, IP input and raw-socket
    /// demultiplexing. About 10 µs on a 2002-era Linux 2.4 host (interrupt ≈ 3–5 µs plus
    /// the stack; cf. Clark et al., "An analysis of TCP processing overhead", scaled).
    pub packet_rx_ns: f64,
    /// Sending one packet in the kernel: raw-socket output, IP, driver, DMA setup (≈ 6 µs).
    pub packet_tx_ns: f64,
    /// One user/kernel crossing (a `recvfrom`/`sendto` system call's entry, exit and
    /// socket lookup on Linux 2.4: ≈ 2 µs).
    pub crossing_ns: f64,
    /// Copying one byte between kernel and user buffers (≈ 1 GB/s `copy_to_user` on the
    /// Xeon's 400 MHz front-side bus: 1 ns/byte).
    pub copy_ns_per_byte: f64,
    /// User-level RUDP work per application message and connection: reassembly queue,
    /// message descriptor, timer bookkeeping (≈ 3 µs).
    pub message_ns: f64,
    /// One handler memory reference to an already-copied (cached) message word, ns.
    pub memory_word_ns: f64,
}

impl HostParams {
    /// The paper's hosts (§4): dual 1.7 GHz Xeon Dell 530s, Linux 2.4.18, 100 Mb/s NICs.
    pub const DELL_530: HostParams = HostParams {
        cpu_hz: 1.7e9,
        ipc: 1.0,
        packet_rx_ns: 10_000.0,
        packet_tx_ns: 6_000.0,
        crossing_ns: 2_000.0,
        copy_ns_per_byte: 1.0,
        message_ns: 3_000.0,
        memory_word_ns: 0.5,
    };

    /// Time to run handler `work` on the host CPU, ns.
    pub fn handler_ns(&self, work: &Work) -> f64 {
        let instr = work.instructions as f64 / (self.cpu_hz * self.ipc) * 1e9;
        instr + (work.sram_words + work.sdram_words) as f64 * self.memory_word_ns
    }

    /// Receiving one packet of `bytes` payload into a user-level (`user`) or kernel handler.
    pub fn recv_packet_ns(&self, bytes: u64, user: bool) -> f64 {
        if user {
            self.packet_rx_ns + self.crossing_ns + bytes as f64 * self.copy_ns_per_byte
        } else {
            self.packet_rx_ns
        }
    }

    /// Sending one packet of `bytes` payload from a user-level (`user`) or kernel handler.
    pub fn send_packet_ns(&self, bytes: u64, user: bool) -> f64 {
        if user {
            self.packet_tx_ns + self.crossing_ns + bytes as f64 * self.copy_ns_per_byte
        } else {
            self.packet_tx_ns
        }
    }
}

impl Default for HostParams {
    fn default() -> Self {
        Self::DELL_530
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_level_pays_crossings_and_copies_the_kernel_does_not() {
        let h = HostParams::DELL_530;
        let user = h.recv_packet_ns(1000, true);
        let kernel = h.recv_packet_ns(1000, false);
        assert!((user - kernel - h.crossing_ns - 1000.0 * h.copy_ns_per_byte).abs() < 1e-9);
        assert!(h.send_packet_ns(1000, true) > h.send_packet_ns(1000, false));
        let w = Work {
            instructions: 1700,
            sram_words: 0,
            sdram_words: 10,
            outputs: 1,
        };
        assert!((h.handler_ns(&w) - (1000.0 + 5.0)).abs() < 1e-6);
    }
}
