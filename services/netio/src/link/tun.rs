//! TUN devices for daemons that drive one themselves, and the address notation they are
//! configured in.

use std::net::IpAddr;

/// A TUN device, as [`open_tun`] returns it.
pub use tun_rs::AsyncDevice;

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
