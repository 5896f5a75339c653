//! The README's smallest use: a COMPARE instruction written as operands and read back.
use esp_proto::instr::{CompareOp, Instruction};
use esp_proto::{Tag, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let thin = Instruction::Compare {
        value: Tag(0x7u64),
        current: Value(42),
        op: CompareOp::Lt,
    };
    let mut operands = [0u8; 17];
    thin.emit(&mut operands)?;
    let back = Instruction::parse(thin.opcode(), &operands)?;
    assert_eq!(back, thin);
    println!(
        "{thin} (opcode {:?}) round-trips through its operand bytes",
        thin.opcode()
    );
    Ok(())
}
