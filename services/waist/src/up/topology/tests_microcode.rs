//! ESP microcode in a topology: a router's `esp` section with its inline policy and
//! instructions reaches its generated config, each program's path made absolute from the
//! file that names it, and the generated config installs them wherever it is read.

use waist_router::config::RouterFile;

use super::*;

/// The shipped COUNT microcode.
const COUNT: &str = esp_micro::shipped::COUNT;

/// A directory of this process's own (removed when dropped) holding `progs/count.snap`,
/// `conf/count.snap` and `progs/bad.snap`.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("waist-topo-mc-{tag}-{}", std::process::id()));
        for sub in ["progs", "conf"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
            std::fs::write(d.join(sub).join("count.snap"), COUNT).unwrap();
        }
        std::fs::write(d.join("progs/bad.snap"), "pull 1\nfrobnicate\n").unwrap();
        Dir(d)
    }

    /// Plans `text` as the topology `t.toml` in this directory.
    fn plan(&self, text: &str) -> Result<Plan, ConfigError> {
        let source = Source::new(self.0.join("t.toml"), text);
        let file: TopologyFile = source.parse()?;
        plan(&source, &file, &self.0)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// r1 with `r1` among its keys, r2 with `r2` at the end of its table, a link between them
/// and a host on r1.
fn net(r1: &str, r2: &str) -> String {
    format!(
        "[[link]]\nbetween = [\"r1\", \"r2\"]\n\
         [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\n\
         [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n{r1}\n\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n{r2}\n"
    )
}

/// Router `name`'s generated config, read as waist-router reads it.
fn config(p: &Plan, name: &str) -> RouterFile {
    let text = p
        .processes
        .iter()
        .find(|x| x.name == name)
        .and_then(|x| x.config.as_deref())
        .unwrap();
    toml::from_str(text).unwrap()
}

/// What `f` installs, planned as if its file were somewhere else entirely.
fn installed(f: &RouterFile) -> Vec<(u8, String)> {
    let text = toml::to_string(f).unwrap();
    let source = Source::new("/nowhere/r.toml", text);
    let f: RouterFile = source.parse().unwrap();
    let p = waist_router::config::plan(&source, &f).unwrap();
    let esp = p.node.esp.unwrap();
    esp.microcode
        .installed
        .iter()
        .map(|(op, name, _)| (*op, name.clone()))
        .collect()
}

#[test]
fn a_routers_microcode_reaches_its_config_with_absolute_programs() {
    let d = Dir::new("inline");
    let r1 = "esp = { rate = 100, microcode = [\"h1\"], instruction = [\
              { opcode = 64, name = \"count\", program = \"progs/count.snap\" }] }";
    // The same in tables, for r2.
    let r2 = "[router.esp]\nrate = 100\nmicrocode = \"off\"\n\
              [[router.esp.instruction]]\nopcode = 65\nname = \"again\"\nprogram = \"progs/count.snap\"\n";
    let p = d.plan(&net(r1, r2)).unwrap();
    let want = std::path::absolute(d.0.join("progs/count.snap")).unwrap();
    let want = want.to_str().unwrap();

    let f1 = config(&p, "r1");
    let esp = f1.esp.as_ref().unwrap();
    let links = match &esp.microcode {
        Some(waist_router::microcode::MicrocodeSetting::Links(l)) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(links.len(), 1);
    assert_eq!(
        links[0].get_ref(),
        "h1",
        "a link of r1's, by the topology's name"
    );
    assert_eq!(esp.instruction.len(), 1);
    assert_eq!(esp.instruction[0].program.get_ref(), want);
    assert_eq!(installed(&f1), [(64, "count".to_string())]);

    let f2 = config(&p, "r2");
    let esp = f2.esp.as_ref().unwrap();
    assert_eq!(
        esp.microcode,
        Some(waist_router::microcode::MicrocodeSetting::Off)
    );
    assert_eq!(esp.instruction[0].program.get_ref(), want);
    assert_eq!(installed(&f2), [(65, "again".to_string())]);
}

#[test]
fn a_program_in_a_routers_config_file_is_read_beside_that_file() {
    let d = Dir::new("file");
    std::fs::write(
        d.0.join("conf/r1.toml"),
        "[esp]\nrate = 100\n\n[[esp.instruction]]\nopcode = 70\nname = \"mine\"\n\
         program = \"count.snap\"\n",
    )
    .unwrap();
    // And [defaults.router] from the topology's directory, for r2.
    let defaults = "[defaults.router]\nesp = { rate = 100, instruction = [\
                    { opcode = 71, name = \"theirs\", program = \"progs/count.snap\" }] }\n";
    let p = d
        .plan(&format!(
            "{defaults}{}",
            net("config = \"conf/r1.toml\"", "")
        ))
        .unwrap();
    let f1 = config(&p, "r1");
    // The topology's [defaults.router] esp replaces the file's: r1's own section wins
    // only inline. So r1 gets the default, read from the topology's directory…
    let program = |f: &RouterFile| {
        f.esp.as_ref().unwrap().instruction[0]
            .program
            .get_ref()
            .clone()
    };
    let progs = std::path::absolute(d.0.join("progs/count.snap")).unwrap();
    assert_eq!(program(&f1), progs.to_str().unwrap());
    assert_eq!(installed(&config(&p, "r2")), [(71, "theirs".to_string())]);
    // … and without defaults, the file's own, read from the file's directory.
    let p = d.plan(&net("config = \"conf/r1.toml\"", "")).unwrap();
    let f1 = config(&p, "r1");
    let conf = std::path::absolute(d.0.join("conf/count.snap")).unwrap();
    assert_eq!(program(&f1), conf.to_str().unwrap());
    assert_eq!(installed(&f1), [(70, "mine".to_string())]);
}

#[test]
fn microcode_the_router_refuses_is_refused_by_the_plan() {
    let d = Dir::new("bad");
    let bad = "esp = { rate = 100, instruction = [\
               { opcode = 64, name = \"bad\", program = \"progs/bad.snap\" }] }";
    let text = net(bad, "");
    let e = d.plan(&text).unwrap_err();
    let line = text.lines().position(|l| l == "name = \"r1\"").unwrap() + 1;
    assert_eq!(e.line, line, "{e}");
    assert!(
        e.message.contains("key `esp.instruction[0].program`")
            && e.message.contains("bad.snap: assembly: "),
        "{e}"
    );
    // A link r1 does not have.
    let text = net("esp = { rate = 100, microcode = [\"h9\"] }", "");
    let e = d.plan(&text).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("microcode"), "{e}");
    assert!(e.message.contains("no [[link]] named `h9`"), "{e}");
}
