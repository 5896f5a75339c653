//! The PLAN compiler (`snap_vm::plan::compile`) on arbitrary text.
//!
//! Asserts: no panic and no hang on any input; an error names a position from line 1
//! where it has one; a compiled program's assembly assembles to the same program, which
//! the verifier accepts with the bounds the compiler reported.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snap_vm::plan::{Options, PlanError, ServiceSig, compile};
use snap_vm::verify::verify;
use snap_vm::vm::NodeConfig;

fuzz_target!(|input: &[u8]| {
    let Ok(source) = core::str::from_utf8(input) else {
        return;
    };
    let entry = snap_vm::plan::functions(source)
        .ok()
        .and_then(|mut f| f.pop())
        .unwrap_or_else(|| "f".to_string());
    let opts = Options {
        fold_bound: 3,
        services: ServiceSig::ess(),
        entry,
    };
    match compile(source, &opts) {
        Ok(c) => {
            let again = snap_vm::asm::assemble(&c.assembly).expect("own assembly assembles");
            assert_eq!(again, c.program);
            let node = NodeConfig {
                address: [0; 4],
                ifaces: 2,
                mtu: 1500,
            };
            assert_eq!(verify(&c.program, &node).expect("verifies"), c.bounds);
        }
        Err(e) => {
            let text = e.to_string();
            assert!(!text.is_empty());
            if let PlanError::Syntax { line, .. } | PlanError::Type { line, .. } = e {
                assert!(line >= 1, "{text}");
            }
        }
    }
});
