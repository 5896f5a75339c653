//! The README's smallest use: two echo nodes bouncing one packet over a lossy, jittery link.
use netsim::{Instant, LinkConfig, Node, Outbox, Simulator};

struct Echo;
impl Node for Echo {
    fn handle_packet(&mut self, _: Instant, iface: usize, p: Vec<u8>, out: &mut Outbox) {
        out.send(iface, p);
    }
}

fn main() {
    let mut sim = Simulator::new(7);
    let (a, b) = (sim.add_node(Echo), sim.add_node(Echo));
    let link = sim.connect(a, b, LinkConfig::with_delay(5).loss_ppm(10_000).jitter(2));
    sim.act(a, |_, _, out| out.send(0, b"hello".to_vec()));
    sim.run(1_000);
    let s = sim.link_stats(link); // the same seed gives the same numbers on every run
    println!(
        "at {:?}: {} sent, {} delivered, {} lost",
        sim.now(),
        s.sent,
        s.delivered,
        s.lost
    );
}
