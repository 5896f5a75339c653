//! [`PipelineApp`]: pipelined objects of unknown length in sparse regions (§5.2).

use alloc::vec::Vec;

use crate::app::Application;
use crate::app::object::object_byte;
use crate::app::{Absorbed, Binding, Minisocket, UcontKey, UserContinuation, absorb, bundle};
use crate::server::{EventKind, Server};

/// Pipelined objects in sparse regions of the output (§5.2, Fig. 14 and Fig. 23).
///
/// Request `k` is the line `GET <k> <len>\n` (`LAST` before the newline on the final one):
/// object `k` has `len` bytes, byte `i` being [`PipelineApp::byte`]`(k, i)`. Every object
/// gets a region of `region` bytes of the output space; the unused rest of a region is
/// never filled and the client skips it (SKIP). Each response carries the output
/// continuation of the part it serves (MACed, app data = `k`, `len`, last, and the
/// object offset where the part starts).
///
/// Without `parallel`, the requests arrive as one byte stream read through an input
/// continuation, one line per request (a server that parses a sockets-style stream): the
/// client learns one object per round trip, and the input continuation counts the
/// regions handed out. An object longer than its region goes on **through a fresh input
/// continuation**: the output continuation of each part that overflows comes with an
/// [`Overflow`](UserContinuation::Overflow) notice, the client sends the notice back in
/// its input stream, and the server, reading it at its place there, gives the object's
/// next part the next free region (`follows` = where the full region ended) and returns
/// a fresh input continuation. The client delivers the parts in object order.
///
/// With `parallel`, every request packet is a whole request, answered on its own: the
/// client learns a new object's continuation from every request it sends
/// ([`Client::request`](crate::client::Client::request), the paper's `msk_request`), and
/// object `k` lives in region `k`. With no input stream to allocate regions from, an
/// object longer than its region is cut at the region's end.
pub struct PipelineApp {
    key: UcontKey,
    region: u64,
    parallel: bool,
}

/// One part of an object: where it lies in the output and what it holds.
#[derive(Clone, Copy, Debug)]
struct Part {
    /// The object.
    k: u64,
    /// The object's full length.
    len: u64,
    /// The final object of the run (its end is the end of the stream).
    last: bool,
    /// The object offset of the part's first byte.
    base: u64,
    /// The output offset of the part's first byte (its region's start).
    start: u64,
}

const PART_LEN: usize = 25;

impl Part {
    fn encode(&self) -> [u8; PART_LEN] {
        let mut app = [0u8; PART_LEN];
        app[..8].copy_from_slice(&self.k.to_be_bytes());
        app[8..16].copy_from_slice(&self.len.to_be_bytes());
        app[16] = u8::from(self.last);
        app[17..].copy_from_slice(&self.base.to_be_bytes());
        app
    }

    fn decode(app: &[u8], start: u64) -> Option<Part> {
        let app: &[u8; PART_LEN] = app.try_into().ok()?;
        let word = |i: usize| app.get(i..i + 8)?.try_into().ok().map(u64::from_be_bytes);
        Some(Part {
            k: word(0)?,
            len: word(8)?,
            last: app[16] == 1,
            base: word(17)?,
            start,
        })
    }
}

impl PipelineApp {
    /// The server application: `region` bytes of output space per object part.
    pub fn new(key: &[u8; 16], region: u64, parallel: bool) -> PipelineApp {
        PipelineApp {
            key: UcontKey::new(key),
            region: region.max(1),
            parallel,
        }
    }

    /// The requests for `n` objects of `len` bytes.
    pub fn requests(n: u64, len: u64) -> Vec<Vec<u8>> {
        (0..n)
            .map(|k| {
                let last = if k + 1 == n { " LAST" } else { "" };
                alloc::format!("GET {k} {len}{last}\n").into_bytes()
            })
            .collect()
    }

    /// Byte `i` of object `k`.
    pub fn byte(k: u64, i: u64) -> u8 {
        object_byte(k.wrapping_mul(0x1_0000_0001).wrapping_add(i))
    }

    /// The output a client must read for [`PipelineApp::requests`]`(n, len)`: each object
    /// whole (in parallel mode, cut to its region).
    pub fn expected(&self, n: u64, len: u64) -> Vec<u8> {
        let len = if self.parallel {
            len.min(self.region)
        } else {
            len
        };
        (0..n)
            .flat_map(|k| (0..len).map(move |i| Self::byte(k, i)))
            .collect()
    }

    /// Parses one request line (without its newline): `(k, len, last)`.
    fn parse(line: &[u8]) -> Option<(u64, u64, bool)> {
        let text = core::str::from_utf8(line).ok()?;
        let mut words = text.split(' ');
        if words.next()? != "GET" {
            return None;
        }
        let k = words.next()?.parse().ok()?;
        let len = words.next()?.parse().ok()?;
        let last = match words.next() {
            None => false,
            Some("LAST") => true,
            Some(_) => return None,
        };
        words.next().is_none().then_some((k, len, last))
    }

    /// Where `part`'s bytes end in the output, and whether the object goes on past its
    /// region (never in parallel mode: it is cut).
    fn extent(&self, part: &Part) -> (u64, bool) {
        let left = part.len.saturating_sub(part.base);
        let end = part.start.saturating_add(left.min(self.region));
        (end, left > self.region && !self.parallel)
    }

    /// The sealed continuations describing `part`: its output continuation (following
    /// `follows`), and the overflow notice when the object goes on past its region.
    fn describe(&self, conn: &Binding, part: &Part, follows: Option<u64>, out: &mut Vec<Vec<u8>>) {
        let (valid_end, overflows) = self.extent(part);
        let region_end = part.start.saturating_add(self.region);
        let app = part.encode();
        let output = UserContinuation::Output {
            valid_start: part.start,
            valid_end,
            skip_to: region_end,
            follows,
            app: &app,
        };
        out.extend(self.key.seal(conn, &output).ok());
        if overflows {
            let next = Part {
                base: part.base.saturating_add(self.region),
                ..*part
            };
            let notice = UserContinuation::Overflow {
                at: region_end,
                state: &next.encode(),
            };
            out.extend(self.key.seal(conn, &notice).ok());
        }
    }

    /// Serves the minisocket's ranges: each from the part whose region holds it. The
    /// stream ends with the final part of the last object.
    fn serve(&self, msk: Minisocket, server: &Server, parts: &[Part], sink: &mut dyn FnMut(&[u8])) {
        let _ = msk.send_with(
            server,
            &mut |range, allowed, out| {
                let Some((part, end, overflows)) = parts.iter().find_map(|p| {
                    let (end, overflows) = self.extent(p);
                    (p.start <= range.start && range.start < end).then_some((p, end, overflows))
                }) else {
                    return false;
                };
                let stop = range.start.saturating_add(allowed as u64).min(end);
                let skew = part.base.wrapping_sub(part.start);
                out.extend((range.start..stop).map(|o| Self::byte(part.k, o.wrapping_add(skew))));
                part.last && !overflows && stop >= end
            },
            sink,
        );
    }

    /// Reads the next request of the input stream (`data[from..]`, at `consumed`):
    /// a request line or a returned overflow notice. Returns the part it opens, what it
    /// follows, and how many bytes it used; `None` when no whole request is there yet.
    fn next_request(
        &self,
        conn: &Binding,
        data: &[u8],
        from: usize,
        region: u64,
    ) -> Option<(Part, Option<u64>, usize)> {
        let start = region.checked_mul(self.region)?;
        if from == 0
            && let Ok(UserContinuation::Overflow { at, state }) = self.key.open(conn, data)
        {
            // A framed request of its own: the whole packet is the notice.
            let part = Part::decode(state, start)?;
            return Some((part, Some(at), data.len()));
        }
        let new = data.get(from..)?;
        let nl = new.iter().position(|&b| b == b'\n')?;
        let (k, len, last) = new.get(..nl).and_then(Self::parse)?;
        let part = Part {
            k,
            len,
            last,
            base: 0,
            start,
        };
        Some((part, None, nl + 1))
    }
}

impl Application for PipelineApp {
    fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
        if msk.kind() == EventKind::Close {
            return;
        }
        let conn = msk.binding();
        // Parts whose ranges this request may ask for: the one its output continuation
        // names, and any it opens now.
        let mut parts: Vec<Part> = Vec::new();
        let mut described: Vec<Vec<u8>> = Vec::new();
        let ucont = msk.user_continuation().to_vec();
        let mut input = (0u64, 0u64); // (consumed, regions handed out) of the stream reader
        match self.key.open(&conn, &ucont) {
            Ok(UserContinuation::Output {
                valid_start,
                follows,
                app,
                ..
            }) => {
                if let Some(part) = Part::decode(app, valid_start) {
                    parts.push(part);
                    // The request's own continuation comes back, with its notice if any.
                    self.describe(&conn, &part, follows, &mut described);
                }
            }
            Ok(UserContinuation::Input { consumed, state }) => {
                let Some(regions) = state.first_chunk::<8>().map(|b| u64::from_be_bytes(*b)) else {
                    return;
                };
                input = (consumed, regions);
            }
            Ok(_) => return,
            Err(_) if !ucont.is_empty() => return,
            Err(_) => {}
        }
        let mut next_input = None;
        if !msk.data().is_empty() {
            if self.parallel {
                // A whole request per packet: answer it on its own, in region `k`.
                let data = msk.data();
                let line = data.strip_suffix(b"\n").unwrap_or(data);
                if let Some((k, len, last)) = Self::parse(line)
                    && let Some(start) = k.checked_mul(self.region)
                {
                    let part = Part {
                        k,
                        len,
                        last,
                        base: 0,
                        start,
                    };
                    parts.push(part);
                    described.clear();
                    self.describe(&conn, &part, None, &mut described);
                }
            } else if let Absorbed::New { from } = absorb(input.0, msk.data_offset(), msk.data())
                && let Some((part, follows, used)) =
                    self.next_request(&conn, msk.data(), from, input.1)
            {
                // A stream: take its next request only (the rest comes again).
                parts.push(part);
                described.clear();
                self.describe(&conn, &part, follows, &mut described);
                next_input = Some((input.0 + used as u64, input.1 + 1));
            }
        }
        // Every response carries the input continuation (so the stream goes on whichever
        // of them arrives) bundled with what describes the part it opened; else that
        // description; else the continuation the request came with.
        let input = next_input.and_then(|(consumed, regions)| {
            let state = regions.to_be_bytes();
            self.key
                .seal(
                    &conn,
                    &UserContinuation::Input {
                        consumed,
                        state: &state,
                    },
                )
                .ok()
        });
        let mut members: Vec<&[u8]> = input.iter().map(Vec::as_slice).collect();
        members.extend(described.iter().map(Vec::as_slice));
        let reply = match members.as_slice() {
            [] => (!ucont.is_empty()).then_some(ucont),
            [one] => Some(one.to_vec()),
            many => bundle(many),
        };
        if let Some(reply) = reply {
            if described.len() > 1 {
                // An overflow notice: every response carries it, so the client holds
                // delivery before whichever of them brings the region's last byte.
                for pkt in 0..msk.responses().len() {
                    let _ = msk.set_ucont(pkt, &reply);
                }
            } else {
                msk.set_ucont_all(&reply);
            }
        }
        self.serve(msk, server, &parts, sink);
    }
}
