//! Packets for the node itself: echo requests answered, ESP packets reflected (§2.5), the
//! rest delivered to the caller.

use esp_proto::endpoint::{HostAction, host_receive};
use waist_ip::icmp;

use crate::node::{Delivery, Fate, Node, Reason};

/// Deliveries that may wait for [`Node::poll_deliver`]; past this, packets for the node are
/// dropped (counted in `dropped.local`) rather than held without bound.
pub const MAX_DELIVERIES: usize = 4096;

impl Node {
    /// `packet` (trimmed to its IP length, header checked) is addressed to the node.
    pub(crate) fn deliver_local(&mut self, iface: usize, packet: &mut [u8]) -> Fate {
        if self.config.icmp && icmp::echo_reply(packet).is_ok() {
            self.send_own(packet.to_vec());
            return Fate::Delivered;
        }
        if let Ok(HostAction::Reflect) = host_receive(packet) {
            self.send_own(packet.to_vec());
            return Fate::Delivered;
        }
        if self.deliveries.len() >= MAX_DELIVERIES {
            return Fate::Dropped(Reason::Local);
        }
        self.deliveries.push_back(Delivery::Packet {
            iface,
            packet: packet.to_vec(),
        });
        Fate::Delivered
    }
}
