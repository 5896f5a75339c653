//! TUN devices for daemons that drive one themselves, and the address notation they are
//! configured in.

use std::net::IpAddr;

/// A TUN device, as [`open_tun`] returns it.
pub use tun_rs::AsyncDevice;

/// Why TUN devices moved into network namespaces cannot be used here, if they cannot: not
/// root, no `/dev/net/tun`, or no `ip` command (iproute2). What the daemons' namespace
/// tests and `waist demo --tun` check before they start.
pub fn netns_unsupported() -> Option<&'static str> {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    });
    if !root {
        return Some("not root");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun");
    }
    let ip = std::process::Command::new("ip")
        .arg("-V")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !ip.is_ok_and(|s| s.success()) {
        return Some("no `ip` command (apt-get install iproute2)");
    }
    None
}

/// Creates (or opens) the TUN device `name` with `addresses` (address, prefix length) and
/// `mtu`, offloads off, for a daemon that drives one device itself. Needs root.
///
/// # Errors
///
/// The device cannot be created (no permission, a bad name).
pub fn open_tun(
    name: &str,
    addresses: &[(IpAddr, u8)],
    mtu: usize,
) -> anyhow::Result<tun_rs::AsyncDevice> {
    let mut b = tun_rs::DeviceBuilder::new()
        .name(name.to_string())
        .mtu(u16::try_from(mtu).unwrap_or(1500))
        .offload(false);
    for &(addr, len) in addresses {
        b = match addr {
            IpAddr::V4(v4) => b.ipv4(v4, len, None),
            IpAddr::V6(v6) => b.ipv6(v6, len),
        };
    }
    b.build_async()
        .map_err(|e| anyhow::anyhow!("cannot create TUN device `{name}`: {e} (root needed)"))
}

/// `10.1.0.1/24` → (address, prefix length).
///
/// # Errors
///
/// A message naming what is wrong.
pub fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected ADDRESS/LENGTH"))?;
    let addr: IpAddr = a.parse().map_err(|e| format!("`{a}`: {e}"))?;
    let len: u8 = l.parse().map_err(|e| format!("`{l}`: {e}"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if len > max {
        return Err(format!("prefix length {len} above {max}"));
    }
    Ok((addr, len))
}
