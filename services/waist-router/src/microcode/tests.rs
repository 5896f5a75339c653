//! `[esp] microcode` and `[[esp.instruction]]`: planned into the node's config, programs
//! read beside the file, every error located.

use std::path::PathBuf;

use esp_micro::InlinePolicy;
use netio::config::{ConfigError, Source};

use crate::config::{Plan, RouterFile, plan};

/// The shipped COUNT microcode.
fn count_snap() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/esp-microcode/count.snap")
}

/// A router with two links, ESP on, and `esp` appended to its `[esp]` section (which is
/// last, so `[[esp.instruction]]` tables may follow).
fn file(esp: &str) -> String {
    format!(
        "[node]\nname = \"r1\"\naddresses = [\"10.0.0.1\"]\n\n\
         [[link]]\nname = \"a\"\non = \"udp:127.0.0.1:0=127.0.0.1:9\"\n\n\
         [[link]]\nname = \"b\"\non = \"udp:127.0.0.1:0=127.0.0.1:9\"\n\n\
         [esp]\nrate = 100\nkey_seed = 1\n{esp}"
    )
}

/// An instruction table.
fn instruction(opcode: &str, name: &str, program: &str) -> String {
    format!(
        "\n[[esp.instruction]]\nopcode = {opcode}\nname = \"{name}\"\nprogram = \"{program}\"\n"
    )
}

fn plan_at(path: &str, text: &str) -> Result<Plan, ConfigError> {
    let s = Source::new(path, text);
    let f: RouterFile = s.parse()?;
    plan(&s, &f)
}

fn plan_of(text: &str) -> Result<Plan, ConfigError> {
    plan_at("r1.toml", text)
}

/// The 1-based line of the first line of `text` that starts with `start`, after line
/// `after`.
fn line_of(text: &str, start: &str, after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.starts_with(start))
        .map(|(i, _)| i + 1)
        .unwrap()
}

/// A directory of this process's own, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("waist-router-mc-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_policy_and_the_instructions_reach_the_node() {
    let count = count_snap();
    let text = file(&format!(
        "microcode = [\"b\", \"a\"]\n{}",
        instruction("64", "count", count.to_str().unwrap())
    ));
    let p = plan_of(&text).unwrap();
    let m = p.node.esp.unwrap().microcode;
    assert_eq!(m.inline, InlinePolicy::Ifaces(vec![1, 0]));
    assert_eq!(m.installed.len(), 1);
    let (opcode, name, code) = &m.installed[0];
    assert_eq!((*opcode, name.as_str()), (64, "count"));
    let want = esp_micro::Microcode::assemble(&std::fs::read_to_string(&count).unwrap()).unwrap();
    assert_eq!(*code, want);
    let line = super::describe(*opcode, name, code);
    let b = want.bounds();
    assert_eq!(
        line,
        format!(
            "ESP instruction 64 `count`: at most {} instructions, stack depth {}, {} heap words",
            b.instructions, b.stack_depth, b.heap_words
        )
    );
    assert!(b.instructions > 0 && b.stack_depth > 0, "{b:?}");

    let off = plan_of(&file("microcode = \"off\"\n")).unwrap();
    assert_eq!(off.node.esp.unwrap().microcode.inline, InlinePolicy::Off);
    let on = plan_of(&file("microcode = \"on\"\n")).unwrap();
    assert_eq!(on.node.esp.unwrap().microcode.inline, InlinePolicy::On);
    let default = plan_of(&file("")).unwrap().node.esp.unwrap().microcode;
    assert_eq!(default.inline, InlinePolicy::On);
    assert!(default.installed.is_empty());
}

#[test]
fn a_program_is_read_beside_the_config_file() {
    let dir = Dir::new("beside");
    std::fs::copy(count_snap(), dir.0.join("mine.snap")).unwrap();
    let text = file(&instruction("100", "mine", "mine.snap"));
    let at = dir.0.join("r1.toml");
    let p = plan_at(at.to_str().unwrap(), &text).unwrap();
    assert_eq!(p.node.esp.unwrap().microcode.installed[0].0, 100);
    // Not where the process runs: a file named only, read from the working directory, is
    // not found.
    let e = plan_of(&text).unwrap_err();
    assert!(e.message.contains("cannot read mine.snap:"), "{e}");
}

#[test]
fn microcode_errors_name_the_file_line_and_key() {
    let count = count_snap();
    let count = count.to_str().unwrap();
    let esp = line_of(&file(""), "[esp]", 0);

    let e = plan_of(&file("microcode = [\"a\", \"nowhere\"]\n")).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (esp + 3, Some("microcode")),
        "{e}"
    );
    assert!(e.message.contains("no [[link]] named `nowhere`"), "{e}");
    for bad in ["\"maybe\"", "5", "[1]"] {
        let e = plan_of(&file(&format!("microcode = {bad}\n"))).unwrap_err();
        assert_eq!(e.line, esp + 3, "{bad}: {e}");
        assert_eq!(e.key.as_deref(), Some("microcode"), "{bad}: {e}");
    }
    let e = plan_of(&file("microcode = \"maybe\"\n")).unwrap_err();
    assert!(
        e.message
            .contains("expected \"on\", \"off\" or a list of link names"),
        "{e}"
    );

    // Each instruction's keys, named with its index.
    let cases = [
        (
            format!(
                "{}{}",
                instruction("64", "c", count),
                instruction("12", "d", count)
            ),
            "esp.instruction[1].opcode",
            "opcode = 12",
            "opcode 12 is not installable; installed instructions take 64..=127",
        ),
        (
            format!(
                "{}{}",
                instruction("64", "c", count),
                instruction("64", "d", count)
            ),
            "esp.instruction[1].opcode",
            "opcode = 64",
            "opcode 64 is installed twice (`c` has it already)",
        ),
        (
            instruction("64", " ", count),
            "esp.instruction[0].name",
            "name = ",
            "an empty name",
        ),
        (
            instruction("64", "c", "/nonexistent/x.snap"),
            "esp.instruction[0].program",
            "program = ",
            "cannot read /nonexistent/x.snap",
        ),
    ];
    for (esp_text, key, line_text, message) in cases {
        let text = file(&esp_text);
        let e = plan_of(&text).unwrap_err();
        // The last instruction's line (the one at fault in every case).
        let last = text.rfind("[[esp.instruction]]").unwrap();
        let after = text[..last].matches('\n').count();
        assert_eq!(e.line, line_of(&text, line_text, after), "{e}");
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert!(e.message.contains(message), "{e}");
        assert!(e.to_string().starts_with("r1.toml:"), "{e}");
    }
    // What toml itself refuses is located the same way.
    let e = plan_of(&file(&instruction("300", "c", count))).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("opcode"), "{e}");
    let e = plan_of(&file(
        &instruction("64", "c", count).replace("program", "programme"),
    ))
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("programme"), "{e}");
    assert!(e.message.contains("did you mean `program`?"), "{e}");
}

#[test]
fn a_program_that_does_not_assemble_or_verify_is_a_located_error() {
    let dir = Dir::new("bad");
    std::fs::write(dir.0.join("typo.snap"), "pull 1\nfrobnicate\n").unwrap();
    // Sends a packet: not an ESP instruction's business.
    std::fs::write(dir.0.join("net.snap"), "forw\npush 0\n").unwrap();
    let at = dir.0.join("r1.toml");
    let at = at.to_str().unwrap();
    for (program, message) in [("typo.snap", "assembly: "), ("net.snap", "verification: ")] {
        let text = file(&format!(
            "{}{}",
            instruction("64", "count", count_snap().to_str().unwrap()),
            instruction("65", "bad", program)
        ));
        let e = plan_at(at, &text).unwrap_err();
        let last = text.rfind("[[esp.instruction]]").unwrap();
        let after = text[..last].matches('\n').count();
        assert_eq!(e.line, line_of(&text, "program = ", after), "{e}");
        assert_eq!(e.key.as_deref(), Some("esp.instruction[1].program"), "{e}");
        let path = dir.0.join(program);
        assert!(
            e.message
                .starts_with(&format!("{}: {message}", path.display())),
            "{e}"
        );
    }
}

#[test]
fn microcode_keys_write_back_as_they_read() {
    let count = count_snap();
    for setting in ["\"off\"", "\"on\"", "[\"a\", \"b\"]"] {
        let text = file(&format!(
            "microcode = {setting}\n{}{}",
            instruction("64", "count", count.to_str().unwrap()),
            instruction("127", "again", count.to_str().unwrap())
        ));
        let s = Source::new("r1.toml", text.as_str());
        let f: RouterFile = s.parse().unwrap();
        let written = toml::to_string(&f).unwrap();
        let back: RouterFile = toml::from_str(&written).unwrap();
        assert_eq!(back, f, "{written}");
        assert!(written.contains("[[esp.instruction]]"), "{written}");
        // And it plans the same.
        let again = plan_of(&written).unwrap().node.esp.unwrap().microcode;
        let first = plan_of(&text).unwrap().node.esp.unwrap().microcode;
        assert_eq!(
            (again.inline, again.installed),
            (first.inline, first.installed)
        );
    }
}
