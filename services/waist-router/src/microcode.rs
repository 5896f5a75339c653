//! ESP instructions written in SNAP (ESP §8, issue 36): the `[esp]` keys that say where
//! inline microcode may come from and which programs are installed under new opcodes,
//! checked and translated into the node's microcode config
//! (`waist_node::EspConfig::microcode`).
//!
//! ```toml
//! [esp]
//! rate = 1000
//! microcode = ["lan"]          # inline microcode (opcode 32): "on" (default), "off", or
//!                              #   only in packets that arrived on these links
//!
//! [[esp.instruction]]          # a SNAP program installed as an ESP instruction
//! opcode = 64                  # 64..=127
//! name = "count"               # for logs and metrics
//! program = "count.snap"       # SNAP assembly, relative to this file's directory
//! ```
//!
//! Each program is read, assembled and verified ([`Microcode::assemble`]: forward
//! branches only, no network operations, at most 256 instructions) when the file is
//! loaded, by `--check`, a start and a reload alike; what fails is an error naming the
//! file, line and key (``r1.toml:12:11: key `esp.instruction[0].program`: count.snap:
//! assembly: …``). The verifier's bounds on one run are printed by `--check` and logged at
//! a start and when a reload installs the instruction ([`describe`]).
//!
//! ```text
//!  [esp] microcode ──(link names → interface indices)──► InlinePolicy ───────────┐
//!  [[esp.instruction]] ─► read ─► Microcode::assemble ─► (opcode, name, Microcode) ┴─►
//!                                                               EspConfig::microcode
//! ```

use std::fmt;
use std::path::PathBuf;

use esp_micro::{InlinePolicy, Microcode};
use netio::config::{ConfigError, LinkConfig, Source};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use toml::Spanned;
use waist_node::EspConfig;

/// `[esp] microcode`: where inline microcode may come from.
#[derive(Clone, Debug, PartialEq)]
pub enum MicrocodeSetting {
    /// `"on"`: from every link (and from the router itself).
    On,
    /// `"off"`: refused everywhere.
    Off,
    /// `["lan", …]`: only in packets that arrived on these links.
    Links(Vec<Spanned<String>>),
}

impl Serialize for MicrocodeSetting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MicrocodeSetting::On => s.serialize_str("on"),
            MicrocodeSetting::Off => s.serialize_str("off"),
            MicrocodeSetting::Links(links) => {
                let mut seq = s.serialize_seq(Some(links.len()))?;
                for l in links {
                    seq.serialize_element(l.get_ref())?;
                }
                seq.end()
            }
        }
    }
}

/// Reads `"on"`, `"off"` or a list of link names; anything else is a located error that
/// says which.
struct SettingVisitor;

impl<'de> Visitor<'de> for SettingVisitor {
    type Value = MicrocodeSetting;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"on\", \"off\" or a list of link names")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<MicrocodeSetting, E> {
        match v {
            "on" => Ok(MicrocodeSetting::On),
            "off" => Ok(MicrocodeSetting::Off),
            other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MicrocodeSetting, A::Error> {
        let mut links = Vec::new();
        while let Some(l) = seq.next_element::<Spanned<String>>()? {
            links.push(l);
        }
        Ok(MicrocodeSetting::Links(links))
    }
}

impl<'de> Deserialize<'de> for MicrocodeSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MicrocodeSetting, D::Error> {
        d.deserialize_any(SettingVisitor)
    }
}

/// `[[esp.instruction]]`: a SNAP program installed as an ESP instruction.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InstructionSection {
    /// The opcode packets name it by: 64..=127 ([`esp_micro::INSTALLED`]).
    pub opcode: Spanned<u8>,
    /// Its name in logs and metrics.
    pub name: Spanned<String>,
    /// The SNAP assembly file, relative to the config file's directory.
    pub program: Spanned<String>,
}

/// A located error about field `field` of instruction `i`, keyed as
/// `esp.instruction[i].field` (the line alone does not say which instruction).
fn instruction_error<T>(
    source: &Source,
    i: usize,
    field: &str,
    at: &Spanned<T>,
    message: impl Into<String>,
) -> ConfigError {
    let mut e = source.error_for(at, message);
    e.key = Some(format!("esp.instruction[{i}].{field}"));
    e
}

/// Where `program` is: as written if absolute, else beside the config file.
pub fn program_path(source: &Source, program: &str) -> PathBuf {
    match source.file().parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(program),
        _ => PathBuf::from(program),
    }
}

/// The inline policy `setting` asks for, link names as interface indices (`links` in
/// order: interface `i` is the `i`-th).
///
/// # Errors
///
/// A link name no `[[link]]` has, located at the name.
pub fn policy(
    source: &Source,
    setting: Option<&MicrocodeSetting>,
    links: &[LinkConfig],
) -> Result<InlinePolicy, ConfigError> {
    Ok(match setting {
        None | Some(MicrocodeSetting::On) => InlinePolicy::On,
        Some(MicrocodeSetting::Off) => InlinePolicy::Off,
        Some(MicrocodeSetting::Links(names)) => {
            let mut ifaces = Vec::with_capacity(names.len());
            for n in names {
                let i = links
                    .iter()
                    .position(|l| l.name.get_ref() == n.get_ref())
                    .ok_or_else(|| {
                        source.error_for(n, format!("no [[link]] named `{}`", n.get_ref()))
                    })?;
                if !ifaces.contains(&i) {
                    ifaces.push(i);
                }
            }
            InlinePolicy::Ifaces(ifaces)
        }
    })
}

/// The instructions `sections` install: each program read (relative to the file's
/// directory), assembled and verified.
///
/// # Errors
///
/// The first instruction that cannot be installed (opcode outside 64..=127 or taken
/// twice, an empty name, a program that cannot be read, assembled or verified), located
/// at its key as `esp.instruction[i].KEY`.
pub fn installed(
    source: &Source,
    sections: &[InstructionSection],
) -> Result<Vec<(u8, String, Microcode)>, ConfigError> {
    let mut out: Vec<(u8, String, Microcode)> = Vec::with_capacity(sections.len());
    for (i, s) in sections.iter().enumerate() {
        let opcode = *s.opcode.get_ref();
        if !esp_micro::INSTALLED.contains(&opcode) {
            let e = esp_micro::InstallError { opcode };
            return Err(instruction_error(
                source,
                i,
                "opcode",
                &s.opcode,
                e.to_string(),
            ));
        }
        if let Some((_, other, _)) = out.iter().find(|(op, _, _)| *op == opcode) {
            return Err(instruction_error(
                source,
                i,
                "opcode",
                &s.opcode,
                format!("opcode {opcode} is installed twice (`{other}` has it already)"),
            ));
        }
        let name = s.name.get_ref().trim();
        if name.is_empty() {
            return Err(instruction_error(
                source,
                i,
                "name",
                &s.name,
                "an empty name",
            ));
        }
        let path = program_path(source, s.program.get_ref());
        let text = std::fs::read_to_string(&path).map_err(|e| {
            let m = format!("cannot read {}: {e}", path.display());
            instruction_error(source, i, "program", &s.program, m)
        })?;
        let microcode = Microcode::assemble(&text).map_err(|e| {
            let m = format!("{}: {e}", path.display());
            instruction_error(source, i, "program", &s.program, m)
        })?;
        out.push((opcode, name.to_string(), microcode));
    }
    Ok(out)
}

/// `[esp]`'s microcode keys set in the node's ESP config `esp` (`links`: the file's
/// `[[link]]`s).
///
/// # Errors
///
/// As [`policy`] and [`installed`].
pub fn plan(
    source: &Source,
    setting: Option<&MicrocodeSetting>,
    sections: &[InstructionSection],
    links: &[LinkConfig],
    esp: &mut EspConfig,
) -> Result<(), ConfigError> {
    esp.microcode.inline = policy(source, setting, links)?;
    esp.microcode.installed = installed(source, sections)?;
    Ok(())
}

/// One line on an installed instruction and the verifier's bounds on one run:
/// ``ESP instruction 64 `count`: at most 10 instructions, stack depth 5, 9 heap words``
/// (operands not counted: each adds a stack value and three heap words).
pub fn describe(opcode: u8, name: &str, microcode: &Microcode) -> String {
    let b = microcode.bounds();
    format!(
        "ESP instruction {opcode} `{name}`: at most {} instructions, stack depth {}, {} heap words",
        b.instructions, b.stack_depth, b.heap_words
    )
}

/// Logs [`describe`]'s line for each of `installed`, with its fields structured.
pub fn log_installed(router: &str, installed: &[(u8, String, Microcode)], verb: &str) {
    for (opcode, name, m) in installed {
        let b = m.bounds();
        tracing::info!(
            router,
            opcode,
            name = %name,
            instructions = b.instructions,
            stack_depth = b.stack_depth,
            heap_words = b.heap_words,
            "{verb} {}",
            describe(*opcode, name, m)
        );
    }
}

/// The inline policy in words, links by name: `on`, `off`, `on links a, b`.
pub fn policy_words(policy: &InlinePolicy, links: &[LinkConfig]) -> String {
    match policy {
        InlinePolicy::On => "on".into(),
        InlinePolicy::Off => "off".into(),
        InlinePolicy::Ifaces(list) => {
            let names: Vec<String> = list
                .iter()
                .map(|&i| {
                    links
                        .get(i)
                        .map_or_else(|| i.to_string(), |l| l.name.get_ref().clone())
                })
                .collect();
            format!("on links {}", names.join(", "))
        }
    }
}

/// What a reload changed in the ESP microcode, from the running ESP config `old` to the
/// applied `new` (`links`: the new file's): the summary's words (`inline microcode off`,
/// `+1 ESP instruction`, `-1 ESP instruction`, `1 ESP instruction changed`), and a log
/// line for each instruction installed, replaced (with its bounds) or removed.
pub fn reload_words(
    router: &str,
    old: Option<&EspConfig>,
    new: Option<&EspConfig>,
    links: &[LinkConfig],
    out: &mut Vec<String>,
) {
    // Without ESP the node keeps no microcode to speak of.
    let Some(new) = new.map(|e| &e.microcode) else {
        return;
    };
    let on = InlinePolicy::On;
    let (policy, before) = old.map_or((&on, &[][..]), |e| {
        (&e.microcode.inline, e.microcode.installed.as_slice())
    });
    if *policy != new.inline {
        out.push(format!(
            "inline microcode {}",
            policy_words(&new.inline, links)
        ));
    }
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for n in &new.installed {
        match before.iter().find(|o| o.0 == n.0) {
            None => added.push(n.clone()),
            Some(o) if o != n => changed.push(n.clone()),
            Some(_) => {}
        }
    }
    let removed: Vec<_> = before
        .iter()
        .filter(|o| !new.installed.iter().any(|n| n.0 == o.0))
        .collect();
    log_installed(router, &added, "installed");
    log_installed(router, &changed, "replaced");
    for (opcode, name, _) in &removed {
        tracing::info!(router, opcode, name = %name, "removed ESP instruction {opcode} `{name}`");
    }
    let words = |n: usize| {
        if n == 1 {
            "ESP instruction"
        } else {
            "ESP instructions"
        }
    };
    if !added.is_empty() {
        out.push(format!("+{} {}", added.len(), words(added.len())));
    }
    if !removed.is_empty() {
        out.push(format!("-{} {}", removed.len(), words(removed.len())));
    }
    if !changed.is_empty() {
        out.push(format!(
            "{} {} changed",
            changed.len(),
            words(changed.len())
        ));
    }
}

#[cfg(test)]
mod tests;
