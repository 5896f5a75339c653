//! The ESP paper's §4.3 aggregation on real router processes, beside the simulator.
//!
//! ```text
//! cargo build --release -p waist-router
//! cargo run --release -p waist-router --example aggregation_live [RUNS]
//! ```
//!
//! A small tree of `waist-router` processes on loopback: a root with 4 child routers, 5
//! leaves under each (20 leaves, played by UDP sockets here), and a collector above the
//! root. The first two children's links up to the root lose 10% of what they send (netio's
//! emulation). Each run, every leaf contributes 1: COUNT then COLLECT (plain), or RCHLD
//! then RCOLLECT with 2 copies (robust, 512-bit IDmaps, k = 11), phases 100 ms apart; the
//! run is complete if a result reaches the collector and correct if it is 20. The same
//! tree, the same lossy links and the same instructions
//! (`waist_node::sim::esp::aggregate::leaf_instructions`) then run in the simulator.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // experiment driver

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use ess::{HashKey, Tag};
use netsim::{LinkId, NodeId, Rng};
use waist_node::sim::esp::aggregate::{AggTree, Scheme, TreeSpec, leaf_instructions};

const CHILDREN: usize = 4;
const LEAVES: usize = 5;
const LOSS: f64 = 0.1;
const LOSSY: [usize; 2] = [0, 1];
const COLLECTOR: [u8; 4] = [10, 255, 0, 1];

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr, loss: f64) -> String {
    let emu = if loss > 0.0 {
        format!("emulation = {{ loss = {loss}, seed = 7 }}\n")
    } else {
        String::new()
    };
    format!(
        "[[link]]\nname = \"{name}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n{emu}\n"
    )
}

fn router(name: &str, addr: [u8; 4], links: &[String], default_link: &str) -> String {
    let [a, b, c, d] = addr;
    format!(
        "[node]\nname = \"{name}\"\naddresses = [\"{a}.{b}.{c}.{d}\"]\n[esp]\nrate = 10000\nkey_seed = {d}\n{}[[route]]\nprefix = \"0.0.0.0/0\"\nlink = \"{default_link}\"\n",
        links.concat()
    )
}

struct Routers(Vec<Child>);

impl Drop for Routers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }
}

fn leaf_addr(i: usize, j: usize) -> [u8; 4] {
    [10, i as u8 + 1, j as u8 + 1, 1]
}

fn main() -> anyhow::Result<()> {
    let runs: u64 = std::env::args().nth(1).map_or(Ok(50), |s| s.parse())?;
    let bin: PathBuf = std::env::current_exe()?
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("waist-router"))
        .filter(|p| p.exists())
        .ok_or_else(|| anyhow::anyhow!("no waist-router binary beside the example: run `cargo build --release -p waist-router` first"))?;
    let dir = std::env::temp_dir().join(format!("waist-agg-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // Addresses: collector ↔ root.up; root.cI ↔ child I.up; child I.lJ ↔ leaf (I, J).
    let (coll, root_up) = (free(), free());
    let mut root_links = vec![link("up", root_up, coll, 0.0)];
    let mut configs = Vec::new();
    let mut leaves = Vec::new();
    for i in 0..CHILDREN {
        let (root_side, child_up) = (free(), free());
        root_links.push(link(&format!("c{i}"), root_side, child_up, 0.0));
        let loss = if LOSSY.contains(&i) { LOSS } else { 0.0 };
        let mut links = vec![link("up", child_up, root_side, loss)];
        for j in 0..LEAVES {
            let (router_side, leaf) = (free(), free());
            links.push(link(&format!("l{j}"), router_side, leaf, 0.0));
            let s = UdpSocket::bind(leaf)?;
            s.connect(router_side)?;
            leaves.push((leaf_addr(i, j), s));
        }
        configs.push((
            format!("child{i}"),
            router(&format!("child{i}"), [10, 0, 0, i as u8 + 2], &links, "up"),
        ));
    }
    configs.push((
        "root".into(),
        router("root", [10, 0, 0, 1], &root_links, "up"),
    ));
    let collector = UdpSocket::bind(coll)?;
    collector.connect(root_up)?;
    collector.set_nonblocking(true)?;

    let mut children = Routers(Vec::new());
    for (name, text) in &configs {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, text)?;
        children.0.push(
            Command::new(&bin)
                .arg("--config")
                .arg(&path)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .spawn()?,
        );
    }
    std::thread::sleep(Duration::from_millis(500));

    let schemes = [
        ("plain", Scheme::Plain),
        (
            "robust, limit 2",
            Scheme::Robust {
                words: 8,
                k: 11,
                limit: 2,
            },
        ),
    ];
    println!(
        "ESP §4.3 aggregation, live: {} router processes, {} leaves, links of children {LOSSY:?} up to the root at {:.0}% loss; {runs} runs per scheme",
        CHILDREN + 1,
        leaves.len(),
        LOSS * 100.0
    );
    println!(
        "{:<18} {:>22} {:>22}",
        "scheme", "live completed/correct", "sim completed/correct"
    );
    let mut rng = Rng::new(2002);
    let mut cid = 0u32;
    let mut buf = [0u8; 2048];
    for (label, scheme) in schemes {
        let (mut completed, mut correct) = (0, 0);
        for _ in 0..runs {
            cid += 1;
            let tags: [Tag; 6] = core::array::from_fn(|_| Tag(rng.next_u64()));
            let mut phases: Vec<(Instruction, Instruction, u16, &UdpSocket, Endpoint)> = Vec::new();
            for (addr, s) in &leaves {
                let key = HashKey::from_seed(rng.next_u64());
                let (a, b, copies) = leaf_instructions(scheme, &tags, cid, &key);
                let ep = Endpoint::new(cid, (*addr).into())
                    .with_dest(COLLECTOR.into())
                    .with_loc(Loc::OUTPUT);
                phases.push((a, b, copies, s, ep));
            }
            for second in [false, true] {
                for (a, b, copies, s, ep) in &phases {
                    let p = ep.packet(if second { b } else { a })?;
                    for _ in 0..*copies {
                        s.send(&p)?;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_millis(100));
            let ep = Endpoint::new(cid, COLLECTOR.into());
            let mut result = None;
            while let Ok(n) = collector.recv(&mut buf) {
                let Ok(got) = ep.receive(&buf[..n]) else {
                    continue;
                };
                if got.err.is_some() || result.is_some() {
                    continue;
                }
                if let Instruction::Collect { val, .. } | Instruction::Rcollect { val, .. } =
                    got.instr
                {
                    result = Some(val.0);
                }
            }
            if let Some(v) = result {
                completed += 1;
                correct += u64::from(v == leaves.len() as u64);
            }
        }
        // The same tree and lossy links in the simulator.
        let spec = TreeSpec {
            leaves: CHILDREN * LEAVES,
            root_branching: CHILDREN,
            min_branching: LEAVES,
            max_branching: LEAVES,
            hop_delay: 1_000,
            seed: 2002,
            store_log2: 8,
        };
        let mut tree = AggTree::build(spec).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let root = tree.routers[0];
        let lossy: Vec<LinkId> = LOSSY
            .iter()
            .filter_map(|&i| {
                let child: NodeId = *tree.routers.get(i + 1)?;
                (0..tree.sim.iface_count(root))
                    .find(|&f| tree.sim.peer(root, f).map(|p| p.0) == Some(child))
                    .and_then(|f| tree.sim.iface_link(root, f))
            })
            .collect();
        let mut sim_rng = Rng::new(2002);
        let (mut s_completed, mut s_correct) = (0, 0);
        for _ in 0..runs {
            let o = tree.run(scheme, &lossy, (LOSS * 1e6) as u32, 100_000, &mut sim_rng);
            s_completed += u64::from(o.completed());
            s_correct += u64::from(o.correct);
        }
        println!(
            "{label:<18} {:>22} {:>22}",
            format!("{completed}/{correct}"),
            format!("{s_completed}/{s_correct}")
        );
    }
    drop(children);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
