//! Moving a minisocket between replicas (§3.2): serialized under a MAC with a stamp,
//! installed on another replica within the key's horizon.

use super::*;

impl Minisocket {
    /// Serializes this minisocket under `key`, stamped with `now`, for
    /// [`Minisocket::install`] on another replica (or after a restart).
    pub fn extract(&self, key: &MigrationKey, now: Instant) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(MIGRATION_VERSION);
        out.push(kind_byte(self.kind));
        put_addr(&mut out, &self.tuple.client_addr);
        out.extend_from_slice(&self.tuple.client_port.to_be_bytes());
        put_addr(&mut out, &self.tuple.server_addr);
        out.extend_from_slice(&self.tuple.server_port.to_be_bytes());
        out.extend_from_slice(&self.conn_nonce.to_be_bytes());
        out.extend_from_slice(&now.micros().to_be_bytes());
        out.extend_from_slice(&self.received.micros().to_be_bytes());
        match self.data_offset {
            Some(o) => {
                out.push(1);
                out.extend_from_slice(&o.to_be_bytes());
            }
            None => out.push(0),
        }
        put_bytes(&mut out, &self.user_continuation);
        put_bytes(&mut out, &self.data);
        // At most a few dozen responses per request (burst limit and window growth).
        out.extend_from_slice(&(self.responses.len() as u16).to_be_bytes());
        for (i, resp) in self.responses.iter().enumerate() {
            out.push(resp.kind as u8);
            out.extend_from_slice(&resp.packet_number.to_be_bytes());
            out.extend_from_slice(&resp.nonce.to_be_bytes());
            match &resp.continuation {
                Some(c) => {
                    out.push(1);
                    let mut b = [0u8; CONTINUATION_LEN];
                    c.emit(&mut b);
                    out.extend_from_slice(&b);
                }
                None => out.push(0),
            }
            match &resp.delta {
                Some(d) => {
                    out.push(1);
                    let mut b = [0u8; DELTA_MAX_LEN];
                    let n = d.emit(&mut b).unwrap_or(0);
                    out.extend_from_slice(b.get(..n).unwrap_or_default());
                }
                None => out.push(0),
            }
            match resp.range {
                Some(r) => {
                    out.push(1);
                    out.extend_from_slice(&r.start.to_be_bytes());
                    out.extend_from_slice(&r.len.to_be_bytes());
                }
                None => out.push(0),
            }
            out.extend_from_slice(&resp.limit.to_be_bytes());
            match self.ucont(i) {
                Some(u) => {
                    out.push(1);
                    put_bytes(&mut out, u);
                }
                None => out.push(0),
            }
        }
        let tag = key.mac.tag(&[MIGRATION_DOMAIN, &out]);
        out.extend_from_slice(&tag);
        out
    }

    /// Rebuilds a minisocket from [`Minisocket::extract`]'s bytes: the MAC is checked
    /// first, then the stamp (refused if older than the key's horizon at `now`, or from
    /// the future), then the fields.
    pub fn install(key: &MigrationKey, bytes: &[u8], now: Instant) -> Result<Minisocket, MskError> {
        let now_us = now.micros();
        let split = bytes
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(MskError::Malformed)?;
        let (body, tag) = bytes.split_at(split);
        if !key.mac.verify(&[MIGRATION_DOMAIN, body], &tag_array(tag)) {
            return Err(MskError::Mac);
        }
        let (m, stamped) = decode(body).map_err(|_| MskError::Malformed)?;
        if stamped > now_us || now_us - stamped > key.horizon_us {
            return Err(MskError::Stale);
        }
        Ok(m)
    }
}

const MIGRATION_VERSION: u8 = 1;
const MIGRATION_DOMAIN: &[u8] = b"trickles minisocket";

fn kind_byte(kind: EventKind) -> u8 {
    match kind {
        EventKind::Open => 0,
        EventKind::Request => 1,
        EventKind::Close => 2,
    }
}

fn put_addr(out: &mut Vec<u8>, a: &Addr) {
    match a {
        Addr::V4(b) => {
            out.push(4);
            out.extend_from_slice(b);
        }
        Addr::V6(b) => {
            out.push(6);
            out.extend_from_slice(b);
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Lengths are those of one request's data or user continuation: below 2^32.
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn tag_array(tag: &[u8]) -> [u8; TAG_LEN] {
    let mut t = [0u8; TAG_LEN];
    if tag.len() == TAG_LEN {
        t.copy_from_slice(tag);
    }
    t
}

/// Decodes [`Minisocket::extract`]'s body (MAC already checked): the minisocket and its
/// stamp. Lengths are still checked: every read goes through the crate's [`Reader`].
fn decode(body: &[u8]) -> Result<(Minisocket, u64), WireError> {
    let mut r = Reader::new(body);
    if r.u8()? != MIGRATION_VERSION {
        return Err(WireError::BadVersion(0));
    }
    let kind = match r.u8()? {
        0 => EventKind::Open,
        1 => EventKind::Request,
        2 => EventKind::Close,
        k => return Err(WireError::BadKind(k)),
    };
    let client_addr = addr(&mut r)?;
    let client_port = r.u16()?;
    let server_addr = addr(&mut r)?;
    let server_port = r.u16()?;
    let conn_nonce = r.u64()?;
    let stamped = r.u64()?;
    let received = Instant::from_micros(r.u64()?);
    let data_offset = present(&mut r)?.then(|| r.u64()).transpose()?;
    let user_continuation = bytes(&mut r)?.to_vec();
    let data = bytes(&mut r)?.to_vec();
    let n = usize::from(r.u16()?);
    let mut responses = Vec::new();
    let mut uconts = Vec::new();
    for _ in 0..n {
        let kind = ResponseKind::try_from(r.u8()?)?;
        let packet_number = r.u32()?;
        let nonce = r.u32()?;
        let continuation = present(&mut r)?
            .then(|| Continuation::parse(r.take(CONTINUATION_LEN)?))
            .transpose()?;
        let delta = if present(&mut r)? {
            let rest = r.peek();
            let (d, used) = ContinuationDelta::parse(rest)?;
            r.take(used)?;
            Some(d)
        } else {
            None
        };
        let range = present(&mut r)?
            .then(|| -> Result<ByteRange, WireError> {
                Ok(ByteRange {
                    start: r.u64()?,
                    len: r.u16()?,
                })
            })
            .transpose()?;
        let limit = r.u16()?;
        let ucont = present(&mut r)?
            .then(|| bytes(&mut r).map(<[u8]>::to_vec))
            .transpose()?;
        responses.push(PlannedResponse {
            kind,
            packet_number,
            nonce,
            continuation,
            delta,
            range,
            limit,
        });
        uconts.push(ucont);
    }
    if r.remaining() != 0 {
        return Err(WireError::BadLength);
    }
    let m = Minisocket {
        kind,
        tuple: FourTuple {
            client_addr,
            client_port,
            server_addr,
            server_port,
        },
        conn_nonce,
        received,
        user_continuation,
        data_offset,
        data,
        responses,
        uconts: Uconts {
            all: AllUcont::None,
            each: uconts,
        },
    };
    Ok((m, stamped))
}

/// A presence byte: 0 or 1.
fn present(r: &mut Reader<'_>) -> Result<bool, WireError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(WireError::BadFlags(b)),
    }
}

fn addr(r: &mut Reader<'_>) -> Result<Addr, WireError> {
    match r.u8()? {
        4 => Ok(Addr::V4(r.array()?)),
        6 => Ok(Addr::V6(r.array()?)),
        b => Err(WireError::BadKind(b)),
    }
}

/// A `u32`-length-prefixed byte string.
fn bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], WireError> {
    let n = usize::try_from(r.u32()?).map_err(|_| WireError::BadLength)?;
    r.take(n)
}

/// The key replicas share to move minisockets between them, with the longest time an
/// extracted minisocket may wait before it is installed.
#[derive(Clone, Debug)]
pub struct MigrationKey {
    mac: MacKey,
    horizon_us: u64,
}

impl MigrationKey {
    /// Prepares `key`; extracted minisockets older than `horizon_us` are refused (use the
    /// transport's freshness horizon: their continuations are no use to a client later).
    pub fn new(key: &[u8; 16], horizon_us: u64) -> MigrationKey {
        MigrationKey {
            mac: MacKey::new(key),
            horizon_us,
        }
    }
}
