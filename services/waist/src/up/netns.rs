//! End hosts that are kernel network namespaces (`[[host]] kind = "netns"`), and the
//! kernel steps they share with `waist demo --tun`: a namespace made, a router's TUN
//! device moved into it and given an address, `lo` up and a default route.
//!
//! ```text
//!   namespace waist-RUN-h1 (10.1.0.10) ══ TUN whPID-0 ══ r1 … routers … r3 ══ TUN ══ waist-RUN-h2
//!   ip netns exec waist-RUN-h1 ping 10.2.0.10
//! ```
//!
//! The plan gives each netns host's router a TUN link ([`NetnsHost::device`]) with a route
//! to the host's address, which it announces. `waist up` checks before it starts anything
//! that it can make namespaces ([`preflight`]: root, `/dev/net/tun`, `ip`, and no
//! namespace of that name already); once the routers run it makes them ([`Namespaces`]),
//! prints how to use them ([`print_usage`]) and records them in the state file; a failed
//! start, a stopping `waist up` and `waist down` delete them ([`delete`]). Deleting a
//! namespace removes the device in it; the router's own end goes when the router stops.

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use super::topology::{NetnsHost, Plan};

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Runs `ip ARGS`.
///
/// # Errors
///
/// `ip` cannot run or fails (its message quoted).
pub fn ip(args: &[&str]) -> anyhow::Result<()> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run ip (apt-get install iproute2)")?;
    if !o.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}

/// Whether the namespace `name` exists (`ip netns list` would show it).
pub fn exists(name: &str) -> bool {
    Path::new(NETNS_DIR).join(name).exists()
}

/// Makes the namespace `name`.
///
/// # Errors
///
/// It exists already, or `ip` fails.
pub fn add(name: &str) -> anyhow::Result<()> {
    ip(&["netns", "add", name])
}

/// Deletes the namespace `name` (and any device in it).
///
/// # Errors
///
/// It does not exist, or `ip` fails.
pub fn remove(name: &str) -> anyhow::Result<()> {
    ip(&["netns", "del", name])
}

/// Moves `device` into the namespace `ns` (made with [`add`]) and sets it up there: `lo`
/// up, `address/prefix` on the device, the device up, a default route through it.
///
/// # Errors
///
/// A step fails (the namespace is left for the caller to delete).
pub fn configure(ns: &str, device: &str, address: IpAddr, prefix: u8) -> anyhow::Result<()> {
    let cidr = format!("{address}/{prefix}");
    ip(&["link", "set", "dev", device, "netns", ns])?;
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    match address {
        IpAddr::V4(_) => ip(&["-n", ns, "addr", "add", &cidr, "dev", device])?,
        // A point-to-point device has no neighbours to ask: no duplicate detection.
        IpAddr::V6(_) => ip(&["-n", ns, "addr", "add", &cidr, "dev", device, "nodad"])?,
    }
    ip(&["-n", ns, "link", "set", device, "up"])?;
    let family = if address.is_ipv4() { "-4" } else { "-6" };
    ip(&[family, "-n", ns, "route", "add", "default", "dev", device])
}

/// The netns hosts of `machine` (all for `None`).
pub fn of<'a>(plan: &'a Plan, machine: Option<&'a str>) -> impl Iterator<Item = &'a NetnsHost> {
    plan.netns
        .iter()
        .filter(move |h| machine.is_none_or(|m| h.machine == m))
}

/// Checks, before anything starts, that this machine can make the namespaces of
/// `machine`'s netns hosts (all for `None`): root, `/dev/net/tun`, `ip`, and no namespace
/// of the same name already.
///
/// # Errors
///
/// One line saying why not.
pub fn preflight(plan: &Plan, machine: Option<&str>) -> anyhow::Result<()> {
    let hosts: Vec<&NetnsHost> = of(plan, machine).collect();
    if hosts.is_empty() {
        return Ok(());
    }
    if let Some(why) = netio::link::netns_unsupported() {
        let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
        bail!(
            "host{} `{}` {} a network namespace (kind = \"netns\"), which needs root, \
             /dev/net/tun and `ip`: {why}",
            if hosts.len() == 1 { "" } else { "s" },
            names.join("`, `"),
            if hosts.len() == 1 { "is" } else { "are" },
        );
    }
    if let Some(h) = hosts.iter().find(|h| exists(&h.namespace)) {
        bail!(
            "host `{}`: network namespace {} exists already (a run named `{}` is up, or one \
             left it behind: `ip netns del {}`)",
            h.name,
            h.namespace,
            plan.name,
            h.namespace
        );
    }
    Ok(())
}

/// The namespaces of a run, made once its routers run; deleted when dropped unless
/// detached.
#[derive(Debug, Default)]
pub struct Namespaces {
    made: Vec<NetnsHost>,
}

impl Namespaces {
    /// Makes the namespace of every netns host of `machine` (all for `None`) and moves its
    /// router's TUN device into it. Call this once the routers are ready (they made the
    /// devices).
    ///
    /// # Errors
    ///
    /// A step fails: what was made is deleted before the error returns.
    pub fn create(plan: &Plan, machine: Option<&str>) -> anyhow::Result<Namespaces> {
        let mut spaces = Namespaces::default();
        for h in of(plan, machine) {
            add(&h.namespace).with_context(|| format!("host `{}`", h.name))?;
            spaces.made.push(h.clone());
            reattach(h)?;
        }
        Ok(spaces)
    }

    /// The hosts whose namespaces were made, in plan order.
    pub fn hosts(&self) -> &[NetnsHost] {
        &self.made
    }

    /// Leaves the namespaces in place after this value is gone (`waist up --detach`:
    /// `waist down` deletes them).
    pub fn detach(mut self) -> Vec<NetnsHost> {
        std::mem::take(&mut self.made)
    }

    /// Deletes every namespace now; returns how many there were.
    pub fn delete(mut self) -> usize {
        delete(&std::mem::take(&mut self.made))
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        delete(&self.made);
    }
}

/// Moves `h`'s device into its namespace (which exists) and sets it up there: at start,
/// and again after its router restarted (a router that exits takes its TUN device with it,
/// and makes a new one in its own namespace when it starts).
///
/// # Errors
///
/// A step fails.
pub fn reattach(h: &NetnsHost) -> anyhow::Result<()> {
    let prefix = if h.address.is_ipv4() { 32 } else { 128 };
    configure(&h.namespace, &h.device, h.address, prefix).with_context(|| {
        format!(
            "host `{}`: cannot move {}'s device {} into {}",
            h.name, h.router, h.device, h.namespace
        )
    })
}

/// Deletes the namespaces of `hosts` that exist; returns how many of them are gone now
/// (deleted here, or by another `waist` stopping the same run).
pub fn delete(hosts: &[NetnsHost]) -> usize {
    for h in hosts.iter().filter(|h| exists(&h.namespace)) {
        let _ = remove(&h.namespace);
    }
    hosts.iter().filter(|h| !exists(&h.namespace)).count()
}

/// What to try from `h`'s namespace: a server's address, else another host's, else its
/// router's.
fn target(plan: &Plan, h: &NetnsHost) -> IpAddr {
    let others = plan
        .netns
        .iter()
        .map(|o| o.address)
        .chain(plan.hosts.iter().map(|o| o.address))
        .filter(|a| *a != h.address);
    plan.servers
        .iter()
        .map(|(_, a, _)| *a)
        .chain(others)
        .next()
        .unwrap_or(h.router_address)
}

/// Prints each netns host of the run and how to use it (`ip netns exec waist-demo-h1 ping
/// 10.2.0.80`).
///
/// # Errors
///
/// If writing fails.
pub fn print_usage(plan: &Plan, hosts: &[NetnsHost], out: &mut dyn Write) -> anyhow::Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\n{:<10} {:<12} {:<8} {:<20} try",
        "netns host", "address", "router", "namespace"
    )?;
    for h in hosts {
        writeln!(
            out,
            "{:<10} {:<12} {:<8} {:<20} ip netns exec {} ping {}",
            h.name,
            h.address,
            h.router,
            h.namespace,
            h.namespace,
            target(plan, h)
        )?;
    }
    Ok(())
}

/// `waist status`'s lines for a run's namespaces: each with its host, address, router and
/// whether it still exists.
///
/// # Errors
///
/// If writing fails.
pub fn print_status(hosts: &[NetnsHost], out: &mut dyn Write) -> anyhow::Result<()> {
    for h in hosts {
        writeln!(
            out,
            "{:<10} {:<13} {:<20} {} via {}{}",
            h.name,
            "netns host",
            h.namespace,
            h.address,
            h.router,
            if exists(&h.namespace) {
                ""
            } else {
                "  (namespace gone)"
            }
        )?;
    }
    Ok(())
}

/// `waist status --json`'s entries for a run's namespaces.
pub fn status_json(hosts: &[NetnsHost]) -> Vec<serde_json::Value> {
    hosts
        .iter()
        .map(|h| {
            serde_json::json!({
                "host": h.name,
                "namespace": h.namespace,
                "address": h.address.to_string(),
                "router": h.router,
                "device": h.device,
                "present": exists(&h.namespace),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn host(name: &str, namespace: String, device: String, address: &str) -> NetnsHost {
        NetnsHost {
            name: name.into(),
            address: address.parse().unwrap(),
            router: "r1".into(),
            router_address: "10.0.0.1".parse().unwrap(),
            machine: "local".into(),
            namespace,
            device,
        }
    }

    /// Deletes what a failing test may leave.
    struct Leftovers(Vec<String>, String);

    impl Drop for Leftovers {
        fn drop(&mut self) {
            for ns in self.0.iter().filter(|ns| exists(ns)) {
                let _ = remove(ns);
            }
            if !self.1.is_empty() {
                let _ = ip(&["link", "del", &self.1]);
            }
        }
    }

    #[test]
    fn a_failed_create_deletes_what_it_made_and_a_device_can_move_in_again() {
        if let Some(why) = netio::link::netns_unsupported() {
            eprintln!("skipping: network namespaces need root, /dev/net/tun and ip: {why}");
            return;
        }
        let id = std::process::id();
        let (ns1, ns2, dev) = (
            format!("waist-test-{id}-a"),
            format!("waist-test-{id}-b"),
            format!("wt{id}"),
        );
        let _left = Leftovers(vec![ns1.clone(), ns2.clone()], dev.clone());
        ip(&["tuntap", "add", "dev", &dev, "mode", "tun"]).unwrap();
        // The first host's device exists and moves; the second's does not.
        let plan = Plan {
            name: "test".into(),
            machines: BTreeMap::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
            netns: vec![
                host("a", ns1.clone(), dev.clone(), "10.1.0.10"),
                host("b", ns2.clone(), format!("wt{id}-none"), "10.2.0.10"),
            ],
            servers: Vec::new(),
            metrics_base: 0,
            capture: Default::default(),
        };
        let e = Namespaces::create(&plan, None).unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!("host `b`: cannot move r1's device wt{id}-none")),
            "{e:#}"
        );
        assert!(!exists(&ns1) && !exists(&ns2), "{}", namespaces_listed());

        // Without the failing host both steps work, and dropping deletes.
        let plan = Plan {
            netns: plan.netns[..1].to_vec(),
            ..plan
        };
        ip(&["tuntap", "add", "dev", &dev, "mode", "tun"]).unwrap();
        let spaces = Namespaces::create(&plan, None).unwrap();
        assert!(exists(&ns1));
        // As after a router's restart: its device gone from the namespace, a new one in
        // ours, moved in again.
        ip(&["-n", &ns1, "link", "del", &dev]).unwrap();
        ip(&["tuntap", "add", "dev", &dev, "mode", "tun"]).unwrap();
        reattach(&spaces.hosts()[0]).unwrap();
        let o = Command::new("ip")
            .args(["-n", &ns1, "-4", "addr", "show", "dev", &dev])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("inet 10.1.0.10/32"),
            "{o:?}"
        );
        drop(spaces);
        assert!(!exists(&ns1), "{}", namespaces_listed());
    }

    #[test]
    fn only_the_machines_own_namespace_hosts_are_checked_and_made() {
        if let Some(why) = netio::link::netns_unsupported() {
            eprintln!("skipping: network namespaces need root, /dev/net/tun and ip: {why}");
            return;
        }
        let ns = format!("waist-test-{}-only", std::process::id());
        let _left = Leftovers(vec![ns.clone()], String::new());
        add(&ns).unwrap();
        let mut h = host("h2", ns.clone(), "wt-none".into(), "10.2.0.10");
        h.machine = "beta".into();
        let plan = Plan {
            name: "test".into(),
            machines: BTreeMap::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
            netns: vec![h],
            servers: Vec::new(),
            metrics_base: 0,
            capture: Default::default(),
        };
        // `--only alpha` neither checks nor makes beta's namespace host.
        preflight(&plan, Some("alpha")).unwrap();
        assert!(
            Namespaces::create(&plan, Some("alpha"))
                .unwrap()
                .hosts()
                .is_empty()
        );
        // `--only beta` (and a run of every machine) finds its namespace taken.
        for only in [Some("beta"), None] {
            let e = preflight(&plan, only).unwrap_err().to_string();
            assert!(
                e.contains(&format!("host `h2`: network namespace {ns} exists already")),
                "{e}"
            );
        }
        assert!(exists(&ns), "preflight deleted a namespace");
    }

    fn namespaces_listed() -> String {
        let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}
