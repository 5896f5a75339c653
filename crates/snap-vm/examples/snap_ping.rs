//! The README's smallest use: Fig. 1's ping runs at B, turns around, and delivers its
//! payload at A.
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::{Value, Word};
use snap_vm::vm::{Delivered, End, NodeConfig, Vm};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut ping = Program {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        rb: 8,
        ..Program::default()
    };
    ping.code = [
        (Op::Forw, 0),
        (Op::Bne, 5),
        (Op::Push, 1),
        (Op::Getsrc, 0),
        (Op::Forwto, 0),
        (Op::Pop, 0),
        (Op::Demux, 0),
    ]
    .map(|(op, imm)| Word::new(op as u8, imm))
    .to_vec();
    let payload = ping.heap_bytes(b"hello");
    ping.stack = vec![payload, Value::int(7), Value::int(0)]; // [0 :: port :: payload]

    // At B the packet turns around toward A.
    let mut b = Vm::new(NodeConfig {
        address: [10, 0, 0, 2],
        ifaces: 2,
        mtu: 1500,
    });
    let out = b.run(0, 0, ping.to_bytes()?);
    assert_eq!(out.end, End::Forwarded);
    let back_to_a = out.transmits.first().ok_or("no transmit at B")?;
    assert_eq!(back_to_a.dst, [10, 0, 0, 1]);

    // Back at A, it delivers the payload to port 7.
    let mut a = Vm::new(NodeConfig {
        address: [10, 0, 0, 1],
        ifaces: 2,
        mtu: 1500,
    });
    let back = a.run(1, 0, back_to_a.packet.clone());
    let d = back.delivery.ok_or("nothing delivered at A")?;
    assert_eq!(
        (d.port, &d.value),
        (7, &Delivered::Bytes(b"hello".to_vec()))
    );
    let Delivered::Bytes(bytes) = &d.value else {
        return Err("not bytes".into());
    };
    println!(
        "ping: B turned it around, A delivered {:?} to port {}",
        String::from_utf8_lossy(bytes),
        d.port
    );
    Ok(())
}
