//! Packets for the node itself: echo requests answered, ESP packets reflected (§2.5), the
//! rest delivered to the caller.

use esp_proto::endpoint::{HostAction, host_receive};
use waist_ip::IpHeader;
use waist_ip::icmp;

use crate::node::{Delivery, Fate, Node, Reason};
use crate::time::Instant;

/// Deliveries that may wait for [`Node::poll_deliver`]; past this, packets for the node are
/// dropped (counted in `dropped.local`) rather than held without bound.
pub const MAX_DELIVERIES: usize = 4096;

/// `packet` (trimmed to its IP length, header checked) is addressed to the node.
pub(crate) fn deliver(
    node: &mut Node,
    _now: Instant,
    iface: usize,
    _h: &IpHeader,
    packet: &mut [u8],
) -> Fate {
    if node.config.icmp && icmp::echo_reply(packet).is_ok() {
        node.send_own(packet.to_vec());
        return Fate::Delivered;
    }
    if let Ok(HostAction::Reflect) = host_receive(packet) {
        node.send_own(packet.to_vec());
        return Fate::Delivered;
    }
    if node.deliveries.len() >= MAX_DELIVERIES {
        return Fate::Dropped(Reason::Local);
    }
    node.deliveries.push_back(Delivery::Packet {
        iface,
        packet: packet.to_vec(),
    });
    Fate::Delivered
}
