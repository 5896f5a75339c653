//! PLAN to ESP microcode (issue 36): [`compile_micro`], documented there (this module is
//! private; the function is re-exported by [`plan`](super)).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::ast::{Expr, ExprKind, Ty};
use super::error::type_err;
use super::{Compiled, Options, PlanError, ServiceSig, codegen, parse, types};
use crate::asm;
use crate::verify;

/// Most operands (parameters of the entry function) microcode takes: ESP's operand field
/// holds at most 8 tags or values.
pub const MICRO_OPERANDS: usize = 8;

impl ServiceSig {
    /// The services ESP microcode reaches (the `esp-micro` crate's ABI), typed with
    /// words: `ess.get(word): word` (0 for a tag with no value), `ess.put(word, word):
    /// int`, `ess.count(word): word`, `esp.param(int): word` (0 NodeId, 1 Iface, 2
    /// IfaceLoad, 3 QueueLen, 4 Timestamp), and `wide.and`, `wide.or`, `wide.xor` of two
    /// words.
    pub fn esp_micro() -> Vec<ServiceSig> {
        use super::ast::Ty::{Int, Word};
        let sig = |name: &str, params: Vec<Ty>, result: Ty| ServiceSig {
            name: name.into(),
            params,
            result,
        };
        vec![
            sig("ess.get", vec![Word], Word),
            sig("ess.put", vec![Word, Word], Int),
            sig("ess.count", vec![Word], Word),
            sig("esp.param", vec![Int], Word),
            sig("wide.and", vec![Word, Word], Word),
            sig("wide.or", vec![Word, Word], Word),
            sig("wide.xor", vec![Word, Word], Word),
        ]
    }
}

/// Compiles PLAN `source` to ESP microcode entering at `opts.entry`: one PLAN function
/// compiled to a bare SNAP program that follows the microcode ABI of the `esp-micro` crate.
///
/// ```text
///  fun count(counter: word, thresh: word) =        stack in:  [counter, thresh]
///    if ess.count(counter) > thresh then 1 else 0  stack out: [counter, thresh, verdict]
/// ```
///
/// * **Operands are the parameters.** The entry function's parameters, all of type `word`
///   (a 64-bit unsigned ESP tag or value, a SNAP wide integer), are the instruction's
///   operands in order — exactly where the ABI puts them, operand 0 deepest, which is
///   where the packet compiler puts a function's arguments too. At most
///   [`MICRO_OPERANDS`].
/// * **The result is the verdict**: an `int` (0 forward, 1 drop, 2 abort MissingState, 3
///   abort StoreFull) or a `bool` (`true` drops). It is left on top of the operands, which
///   come back unchanged: PLAN has no assignment, so microcode written in it cannot update
///   an operand (write SNAP assembly for that).
/// * **Services**: [`ServiceSig::esp_micro`] — `ess.get`, `ess.put`, `ess.count`,
///   `esp.param`, `wide.and`/`or`/`xor` — typed with words.
/// * **Words**: `+ - *` wrap mod 2^64, `= <> < <= > >=` compare unsigned (as ESP compares
///   values); `toWord(i)` makes an int a word (sign-extended: `toWord(~1)` is 2^64 − 1).
///   There is no word literal beyond `toWord`'s 25-bit range.
/// * **The code** is the entry function's block alone, entered directly, with no routing
///   preamble; `OnRemote`, `OnNeighbor` and `deliverUDP` are refused (an instruction runs
///   in place), and the program is checked by
///   [`verify_micro`](crate::verify::verify_micro).
///
/// ```
/// use snap_vm::plan::{compile_micro, Options, ServiceSig};
///
/// let src = "fun count(counter: word, thresh: word) =
///                if ess.count(counter) > thresh then 1 else 0";
/// let opts = Options { fold_bound: 0, services: ServiceSig::esp_micro(), entry: "count".into() };
/// let c = compile_micro(src, &opts)?;
/// assert_eq!(c.entry_index, 0);
/// assert!(c.assembly.contains("calls \"ess.count\""));
/// assert!(c.bounds.instructions < 20);
/// # Ok::<(), snap_vm::plan::PlanError>(())
/// ```
///
/// `opts.services` is usually [`ServiceSig::esp_micro`]. The result's
/// [`entry_index`](Compiled::entry_index) is the program's entry point (nothing to push:
/// the operands are the whole initial stack), its [`bounds`](Compiled::bounds) those of
/// [`verify_micro`](crate::verify::verify_micro).
///
/// # Errors
///
/// As [`compile`](super::compile), and [`PlanError::Type`] if the entry function takes a
/// parameter that is not a word, more than [`MICRO_OPERANDS`], or returns neither an int
/// nor a bool; [`PlanError::Unsupported`] for a send or delivery anywhere in `source`.
pub fn compile_micro(source: &str, opts: &Options) -> Result<Compiled, PlanError> {
    let mut funs = parse::parse(source)?;
    let results = types::check(&mut funs, opts)?;
    let entry = funs
        .iter()
        .find(|f| f.name == opts.entry)
        .ok_or_else(|| PlanError::NoEntry {
            name: opts.entry.clone(),
        })?;
    if let Some((name, ty)) = entry.params.iter().find(|p| p.1 != Ty::Word) {
        return Err(type_err(
            entry.pos,
            format!(
                "microcode operand `{name}` is {ty}: the operands of `{}` must be words",
                entry.name
            ),
        ));
    }
    if entry.params.len() > MICRO_OPERANDS {
        return Err(type_err(
            entry.pos,
            format!(
                "`{}` takes {} operands; microcode has at most {MICRO_OPERANDS}",
                entry.name,
                entry.params.len()
            ),
        ));
    }
    match results.get(&entry.name) {
        Some(Ty::Int | Ty::Bool) => {}
        other => {
            let t = other.map_or_else(|| "nothing".into(), |t| format!("{t}"));
            return Err(type_err(
                entry.pos,
                format!(
                    "`{}` returns {t}: microcode's verdict is an int (0 forward, 1 drop, 2 \
                     MissingState, 3 StoreFull) or a bool (true drops)",
                    entry.name
                ),
            ));
        }
    }
    for f in &funs {
        refuse_sends(&f.body)?;
    }
    let entry_params = entry.params.iter().map(|p| p.1.clone()).collect();
    let g = codegen::generate(&funs, opts, true)?;
    let program = asm::assemble(&g.assembly)?;
    let bounds = verify::verify_micro(&program)?;
    Ok(Compiled {
        assembly: g.assembly,
        entry_index: program.entry,
        program,
        bounds,
        entry_params,
    })
}

/// A send or delivery anywhere in `e`, refused: an instruction runs in place at one
/// router; its verdict forwards or drops the packet.
fn refuse_sends(e: &Expr) -> Result<(), PlanError> {
    let what = match &e.kind {
        ExprKind::OnRemote { .. } => Some("OnRemote"),
        ExprKind::OnNeighbor { .. } => Some("OnNeighbor"),
        ExprKind::Call(name, _) if name == "deliverUDP" => Some("deliverUDP"),
        _ => None,
    };
    if let Some(what) = what {
        return Err(PlanError::Unsupported {
            line: e.pos.line,
            col: e.pos.col,
            message: format!(
                "`{what}` in microcode: an ESP instruction runs in place at one router, it \
                 neither sends nor delivers (its verdict forwards or drops the packet)"
            ),
        });
    }
    let mut r = Ok(());
    e.for_each_child(&mut |c| {
        if r.is_ok() {
            r = refuse_sends(c);
        }
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::{End, Limits, MicroProgram, Scratch, Services};
    use alloc::string::{String, ToString};

    fn opts(entry: &str) -> Options {
        Options {
            fold_bound: 4,
            services: ServiceSig::esp_micro(),
            entry: entry.into(),
        }
    }

    /// Runs `fun f(a: word, b: word) = body` on `[a, b]`: the stack it leaves.
    fn run(body: &str, a: u64, b: u64) -> Result<Vec<i64>, String> {
        let src = format!("fun f(a: word, b: word) = {body}");
        let c = compile_micro(&src, &opts("f")).map_err(|e| e.to_string())?;
        let p = MicroProgram::new(&c.program).map_err(|e| e.to_string())?;
        let limits = Limits::from_bounds(&c.bounds, 2);
        let out = p.run(
            &mut Scratch::new(),
            &mut Services::new(),
            0,
            &[a, b],
            limits,
        );
        match out.end {
            End::Exit => Ok(out.stack),
            e => Err(format!("{e:?}")),
        }
    }

    /// The verdict `body` leaves on `[a, b]`, the operands checked unchanged below it.
    fn verdict(body: &str, a: u64, b: u64) -> i64 {
        let stack = run(body, a, b).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(stack.get(..2), Some(&[a as i64, b as i64][..]), "{body}");
        assert_eq!(stack.len(), 3, "{body}");
        stack[2]
    }

    const EDGES: [u64; 7] = [0, 1, 5, (1 << 63) - 1, 1 << 63, u64::MAX - 1, u64::MAX];

    #[test]
    fn word_comparisons_are_unsigned() {
        for a in EDGES {
            for b in EDGES {
                let cases = [
                    ("a < b", a < b),
                    ("a <= b", a <= b),
                    ("a > b", a > b),
                    ("a >= b", a >= b),
                    ("a = b", a == b),
                    ("a <> b", a != b),
                ];
                for (body, want) in cases {
                    assert_eq!(verdict(body, a, b), i64::from(want), "{a:#x} {body} {b:#x}");
                }
            }
        }
    }

    #[test]
    fn word_arithmetic_wraps() {
        for a in EDGES {
            for b in EDGES {
                let cases = [
                    ("a + b = toWord(0)", a.wrapping_add(b) == 0),
                    ("a - b < a", a.wrapping_sub(b) < a),
                    ("a * b > toWord(1)", a.wrapping_mul(b) > 1),
                    ("a + toWord(~1) = b", a.wrapping_sub(1) == b),
                ];
                for (body, want) in cases {
                    assert_eq!(verdict(body, a, b), i64::from(want), "{a:#x} {body} {b:#x}");
                }
            }
        }
    }

    #[test]
    fn int_verdicts_and_lets_work() {
        let body = "let val s = a + b in if s < a then 3 else if a = b then 1 else 0 end";
        assert_eq!(verdict(body, u64::MAX, 2), 3);
        assert_eq!(verdict(body, 4, 4), 1);
        assert_eq!(verdict(body, 4, 5), 0);
    }

    #[test]
    fn the_abi_is_checked() {
        let err = |src: &str| compile_micro(src, &opts("f")).err().map(|e| e.to_string());
        let e = err("fun f(a: int) = 0");
        assert!(
            e.as_deref().is_some_and(|e| e.contains("must be words")),
            "{e:?}"
        );
        let e = err("fun f(a: word) = a");
        assert!(
            e.as_deref().is_some_and(|e| e.contains("returns word")),
            "{e:?}"
        );
        let nine = (0..9)
            .map(|i| format!("a{i}: word"))
            .collect::<Vec<_>>()
            .join(", ");
        let e = err(&format!("fun f({nine}) = 0"));
        assert!(
            e.as_deref().is_some_and(|e| e.contains("at most 8")),
            "{e:?}"
        );
        let e = err(
            "fun g(x: int) = 0\nfun f(a: word) = (OnRemote(|g|(1), getSrc(), 1, defaultRoute); 0)",
        );
        assert!(
            e.as_deref().is_some_and(|e| e.contains("neither sends")),
            "{e:?}"
        );
        let e = err("fun f(a: word) = (deliverUDP(1, 7); 0)");
        assert!(
            e.as_deref().is_some_and(|e| e.contains("neither sends")),
            "{e:?}"
        );
        let e = err("fun f(a: word, b: word) = a < 1");
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("on words must be word")),
            "{e:?}"
        );
        let e = err("fun f(a: word, b: word) = a div b = a");
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("must be int, found word")),
            "{e:?}"
        );
    }

    #[test]
    fn packet_programs_are_unchanged_by_words() {
        // The packet compiler still puts its preamble first; words compile there too.
        let src = "fun f(a: int) = toWord(a) < toWord(~1)";
        let c = super::super::compile(
            src,
            &Options {
                fold_bound: 0,
                services: Vec::new(),
                entry: "f".into(),
            },
        );
        let c = c.unwrap_or_else(|e| panic!("{e}"));
        assert!(c.assembly.contains("defaultRoute:"));
        assert!(c.assembly.contains("wlt"));
        assert_eq!(c.entry_index, 2);
    }
}
