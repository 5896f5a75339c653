//! A deployment written down: which handlers a stream passes through, with their
//! parameters and the destinations they send to, as one line of text (what an operator
//! writes in a topology, what `waist stream deploy` sends in a control message).
//!
//! ```text
//! spec   = "to" ADDR:PORT… ("|" clause)*
//! clause = "fields" ("image" | "flight")          names for the fields below
//!        | "size" BYTES                            typical message (admission's trial runs)
//!        | "route" FIELD (VALUE "=" DEST)* ["default=" DEST]
//!        | "mirror" [DEST ("," DEST)*]            every destination by default
//!        | "filter" PRED
//!        | "dest-filter" (DEST "=" PRED)+
//!        | "multicast" (DEST "=" PRED)*           mirror to all, then filter per destination
//!        | "delta" [PERCENT [STEP]]               20 % and step 1 by default
//!        | "byteswap"                             the paper's format handler
//! PRED   = "all" | FIELD ("==" | "<" | ">=" | "<=" | ">") NUMBER | FIELD "in" LO ".." HI
//! FIELD  = a name of the declared fields | "u8@" OFFSET | "u16@" OFFSET | "u32@" OFFSET
//! DEST   = an index into the "to" list (0, 1, …)
//! ```
//!
//! Handler indices (what control messages name) are the clauses' positions among the
//! handler clauses, from 0; `multicast` counts as one handler. A [`Spec`] prints back in
//! this form (fields by their declared names, others by offset), and parses back to
//! itself.
//!
//! ```
//! use stream_handlers::spec::Spec;
//! let s: Spec = "to 10.0.0.2:7400 10.0.0.3:7400 | fields flight | multicast 0=status==2 1=all"
//!     .parse()?;
//! assert_eq!(s.dests.len(), 2);
//! let mut d = s.deployment();
//! assert_eq!(d.stages.len(), 2); // the mirror on the Rx side, the filters on the Tx side
//! assert_eq!(s.to_string().parse::<Spec>()?, s);
//! # Ok::<(), stream_handlers::spec::SpecError>(())
//! ```

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::net::SocketAddr;
use core::str::FromStr;

use crate::deploy::{Deployment, Point};
use crate::format::Format;
use crate::handlers::{ByteSwap, ContentRouter, Delta, DestFilter, Filter, Mirror};
use crate::stream::{Destination, Field, HandlerError, Param, Predicate};

/// Most destinations a spec names.
pub const MAX_DESTS: usize = 64;
/// Most handler clauses.
pub const MAX_HANDLERS: usize = 16;
/// Most routes of one `route` clause.
pub const MAX_ROUTES: usize = 64;
/// Longest spec text, bytes.
pub const MAX_LEN: usize = 4096;

/// The declared fields a spec names its fields by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    /// [`ImageFrame`](crate::format::shipped::ImageFrame).
    Image,
    /// [`FlightRecord`](crate::format::shipped::FlightRecord).
    Flight,
}

impl Fields {
    /// The format.
    pub fn format(self) -> Format {
        match self {
            Self::Image => Format::image_frame(),
            Self::Flight => Format::flight_record(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Flight => "flight",
        }
    }
}

/// One handler of a spec, with its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerSpec {
    /// Content-based routing on a field.
    Route {
        /// The field.
        field: Field,
        /// Value → destination.
        routes: Vec<(u32, Destination)>,
        /// Where other values go (`None`: dropped).
        default: Option<Destination>,
    },
    /// A copy to each of these destinations.
    Mirror(Vec<Destination>),
    /// Keep what passes.
    Filter(Predicate),
    /// Each destination's copies pass its own predicate (others pass everything).
    DestFilter(Vec<(Destination, Predicate)>),
    /// A copy to every destination, each filtered by its own predicate.
    Multicast(Vec<(Destination, Predicate)>),
    /// Rewrite `percent` % of the message by `step`.
    Delta {
        /// Percent of the message rewritten.
        percent: u8,
        /// Added to each byte.
        step: u8,
    },
    /// Swap the byte order of every 32-bit word.
    ByteSwap,
}

/// A parsed deployment: destinations, the declared fields, handlers in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Destination `i` of the handlers is `dests[i]`.
    pub dests: Vec<SocketAddr>,
    /// The fields named in predicates, if declared.
    pub fields: Option<Fields>,
    /// A typical message's size in bytes (admission runs trials at it), if given.
    pub size: Option<u32>,
    /// The handlers, in order.
    pub handlers: Vec<HandlerSpec>,
}

/// Why a spec was refused: the token and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The offending token (or clause), as written.
    pub token: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream spec at {:?}: {}", self.token, self.why)
    }
}

impl core::error::Error for SpecError {}

fn err<T>(token: &str, why: &'static str) -> Result<T, SpecError> {
    Err(SpecError {
        token: token.into(),
        why,
    })
}

fn number<T: FromStr>(s: &str, why: &'static str) -> Result<T, SpecError> {
    s.parse().or_else(|_| err(s, why))
}

impl Spec {
    fn field(&self, s: &str) -> Result<Field, SpecError> {
        for (prefix, width) in [("u8@", 1), ("u16@", 2), ("u32@", 4)] {
            if let Some(off) = s.strip_prefix(prefix) {
                return Ok(Field::new(number(off, "offset is not 0–65535")?, width));
            }
        }
        match self.fields {
            Some(f) => f.format().field(s).or_else(|_| {
                err(
                    s,
                    "not a 1-, 2- or 4-byte unsigned field of the declared fields",
                )
            }),
            None => err(
                s,
                "unknown field (declare `fields image|flight`, or write u32@OFFSET)",
            ),
        }
    }

    fn predicate(&self, s: &str) -> Result<Predicate, SpecError> {
        if s == "all" {
            return Ok(Predicate::All);
        }
        if let Some((f, range)) = s.split_once(" in ")
            && let Some((lo, hi)) = range.split_once("..")
        {
            let f = self.field(f.trim())?;
            let lo = number(lo.trim(), "range bound is not a u32")?;
            let hi = number(hi.trim(), "range bound is not a u32")?;
            return Ok(Predicate::Range(f, lo, hi));
        }
        for op in ["==", ">=", "<=", "<", ">"] {
            if let Some((f, v)) = s.split_once(op) {
                let field = self.field(f)?;
                let v: u32 = number(v, "value is not a u32")?;
                let bump = |v: u32| v.checked_add(1).ok_or(());
                return match op {
                    "==" => Ok(Predicate::Eq(field, v)),
                    "<" => Ok(Predicate::Lt(field, v)),
                    ">=" => Ok(Predicate::Ge(field, v)),
                    "<=" => match bump(v) {
                        Ok(n) => Ok(Predicate::Lt(field, n)),
                        Err(()) => Ok(Predicate::All),
                    },
                    _ => match bump(v) {
                        Ok(n) => Ok(Predicate::Ge(field, n)),
                        Err(()) => Ok(Predicate::Range(field, 1, 0)),
                    },
                };
            }
        }
        err(
            s,
            "not a predicate (all, FIELD==N, FIELD<N, FIELD>=N, FIELD in LO..HI)",
        )
    }

    fn dest(&self, s: &str) -> Result<Destination, SpecError> {
        let d: Destination = number(s, "destination is not an index of the `to` list")?;
        if usize::from(d) >= self.dests.len() {
            return err(s, "destination index past the `to` list");
        }
        Ok(d)
    }

    fn per_dest(&self, args: &[&str]) -> Result<Vec<(Destination, Predicate)>, SpecError> {
        let mut out: Vec<(Destination, Predicate)> = Vec::new();
        for a in args {
            let (d, p) = a
                .split_once('=')
                .map_or_else(|| err(a, "expected DEST=PRED"), Ok)?;
            let d = self.dest(d)?;
            if out.iter().any(|o| o.0 == d) {
                return err(a, "destination given twice");
            }
            out.push((d, self.predicate(p)?));
        }
        Ok(out)
    }

    fn clause(&mut self, words: &[&str], text: &str) -> Result<(), SpecError> {
        let (name, args) = words
            .split_first()
            .map_or_else(|| err(text, "empty clause"), Ok)?;
        let handler = match *name {
            "fields" => {
                self.fields = Some(match args {
                    ["image"] => Fields::Image,
                    ["flight"] => Fields::Flight,
                    _ => return err(text, "expected `fields image` or `fields flight`"),
                });
                return Ok(());
            }
            "size" => {
                let [n] = args else {
                    return err(text, "expected `size BYTES`");
                };
                self.size = Some(number(n, "size is not a u32")?);
                return Ok(());
            }
            "route" => {
                let (field, rest) = args
                    .split_first()
                    .map_or_else(|| err(text, "route needs a field"), Ok)?;
                let field = self.field(field)?;
                let (mut routes, mut default) = (Vec::new(), None);
                for a in rest {
                    let (k, v) = a
                        .split_once('=')
                        .map_or_else(|| err(a, "expected VALUE=DEST"), Ok)?;
                    if k == "default" {
                        default = Some(self.dest(v)?);
                    } else if routes.len() >= MAX_ROUTES {
                        return err(a, "too many routes (64 at most)");
                    } else {
                        routes.push((number(k, "route value is not a u32")?, self.dest(v)?));
                    }
                }
                HandlerSpec::Route {
                    field,
                    routes,
                    default,
                }
            }
            "mirror" => match args {
                [] => HandlerSpec::Mirror((0..self.dests.len() as u16).collect()),
                [list] => HandlerSpec::Mirror(
                    list.split(',')
                        .map(|d| self.dest(d))
                        .collect::<Result<_, _>>()?,
                ),
                _ => return err(text, "expected `mirror` or `mirror D,D,…`"),
            },
            "filter" => HandlerSpec::Filter(self.predicate(&args.join(" "))?),
            "dest-filter" if args.is_empty() => return err(text, "dest-filter needs DEST=PRED"),
            "dest-filter" => HandlerSpec::DestFilter(self.per_dest(args)?),
            "multicast" => HandlerSpec::Multicast(self.per_dest(args)?),
            "delta" => {
                let percent = args
                    .first()
                    .map_or(Ok(20), |p| number(p, "percent is not 0–100"))?;
                let step = args
                    .get(1)
                    .map_or(Ok(1), |s| number(s, "step is not 0–255"))?;
                if percent > 100 || args.len() > 2 {
                    return err(text, "expected `delta [PERCENT [STEP]]`, percent 0–100");
                }
                HandlerSpec::Delta { percent, step }
            }
            "byteswap" if args.is_empty() => HandlerSpec::ByteSwap,
            _ => {
                return err(
                    text,
                    "unknown clause (to, fields, size, route, mirror, filter, dest-filter, multicast, delta, byteswap)",
                );
            }
        };
        if self.handlers.len() >= MAX_HANDLERS {
            return err(text, "too many handlers (16 at most)");
        }
        self.handlers.push(handler);
        Ok(())
    }

    /// The handlers as a deployment on a node: routing, mirroring and filtering on the Rx
    /// side, per-destination filters on the Tx side, delta and byte swaps in transit.
    pub fn deployment(&self) -> Deployment {
        let mut d = Deployment::new();
        for h in &self.handlers {
            match h {
                HandlerSpec::Route {
                    field,
                    routes,
                    default,
                } => {
                    let mut r = ContentRouter::new(*field, *default, MAX_ROUTES);
                    r.routes.clone_from(routes);
                    d.push(Point::RxSide, Box::new(r));
                }
                HandlerSpec::Mirror(dests) => {
                    d.push(Point::RxSide, Box::new(Mirror::new(dests.clone())))
                }
                HandlerSpec::Filter(p) => d.push(Point::RxSide, Box::new(Filter::new(*p))),
                HandlerSpec::DestFilter(f) => {
                    d.push(Point::TxSide, Box::new(DestFilter::new(f.clone())))
                }
                HandlerSpec::Multicast(f) => {
                    d.push(
                        Point::RxSide,
                        Box::new(Mirror::new((0..self.dests.len() as u16).collect())),
                    );
                    d.push(Point::TxSide, Box::new(DestFilter::new(f.clone())));
                }
                HandlerSpec::Delta { percent, step } => d.push(
                    Point::InTransit,
                    Box::new(Delta {
                        offset: 0,
                        percent: *percent,
                        step: *step,
                    }),
                ),
                HandlerSpec::ByteSwap => d.push(Point::InTransit, Box::new(ByteSwap)),
            }
        }
        d
    }

    /// Applies a control message's parameter to handler `index` (a position among the
    /// handler clauses).
    ///
    /// # Errors
    ///
    /// [`HandlerError::UnsupportedParam`] if there is no such handler, the parameter does not
    /// apply to it or names a destination past the `to` list; [`HandlerError::TableFull`]
    /// for a route past [`MAX_ROUTES`].
    pub fn apply(&mut self, index: u16, param: Param) -> Result<(), HandlerError> {
        let n = self.dests.len();
        let known = |d: Destination| usize::from(d) < n;
        let h = self
            .handlers
            .get_mut(usize::from(index))
            .ok_or(HandlerError::UnsupportedParam)?;
        match (h, param) {
            (HandlerSpec::Filter(p), Param::Predicate(q)) => *p = q,
            (HandlerSpec::DestFilter(f) | HandlerSpec::Multicast(f), Param::Predicate(q)) => {
                f.iter_mut().for_each(|e| e.1 = q);
            }
            (
                HandlerSpec::DestFilter(f) | HandlerSpec::Multicast(f),
                Param::DestPredicate(d, q),
            ) if known(d) => match f.iter_mut().find(|e| e.0 == d) {
                Some(e) => e.1 = q,
                None => f.push((d, q)),
            },
            (HandlerSpec::Mirror(m), Param::FanOut(k)) if usize::from(k) <= n => {
                *m = (0..k).collect();
            }
            (HandlerSpec::Route { routes, .. }, Param::Route(v, d)) if known(d) => {
                let full = routes.len() >= MAX_ROUTES;
                match routes.iter_mut().find(|r| r.0 == v) {
                    Some(r) => r.1 = d,
                    None if full => return Err(HandlerError::TableFull),
                    None => routes.push((v, d)),
                }
            }
            _ => return Err(HandlerError::UnsupportedParam),
        }
        Ok(())
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        if text.len() > MAX_LEN {
            return err(text.get(..32).unwrap_or(""), "spec longer than 4096 bytes");
        }
        let mut clauses = text.split('|');
        let first = clauses.next().unwrap_or("").trim();
        let words: Vec<&str> = first.split_whitespace().collect();
        let Some((&"to", addrs)) = words.split_first() else {
            return err(first, "a spec starts with `to ADDR:PORT …`");
        };
        if addrs.is_empty() || addrs.len() > MAX_DESTS {
            return err(first, "1 to 64 destinations");
        }
        let mut spec = Spec {
            dests: addrs
                .iter()
                .map(|a| number(a, "not an address:port"))
                .collect::<Result<_, _>>()?,
            fields: None,
            size: None,
            handlers: Vec::new(),
        };
        for c in clauses {
            let c = c.trim();
            // `in` ranges keep their spaces: join a predicate's words back.
            let joined = c.replace(" in ", "\u{0}in\u{0}").replace(" .. ", "..");
            let words: Vec<String> = joined
                .split_whitespace()
                .map(|w| w.replace('\u{0}', " "))
                .collect();
            let refs: Vec<&str> = words.iter().map(String::as_str).collect();
            spec.clause(&refs, c)?;
        }
        Ok(spec)
    }
}

/// Writes a field: by its declared name if `names` has a 1-, 2- or 4-byte unsigned field
/// at the same place (it parses back to the same field), else as `uW@OFFSET`.
fn write_field(f: &mut fmt::Formatter<'_>, field: Field, names: Option<&Format>) -> fmt::Result {
    let named = names.and_then(|fmt| {
        fmt.fields()
            .iter()
            .find(|d| fmt.field(&d.name) == Ok(field))
            .map(|d| d.name.as_str())
    });
    if let Some(n) = named {
        return f.write_str(n);
    }
    let w = match field.width {
        1 => 8,
        2 => 16,
        _ => 32,
    };
    write!(f, "u{w}@{}", field.offset)
}

fn write_pred(f: &mut fmt::Formatter<'_>, p: &Predicate, names: Option<&Format>) -> fmt::Result {
    let (field, op, v) = match *p {
        Predicate::All => return f.write_str("all"),
        Predicate::Eq(x, v) => (x, "==", v),
        Predicate::Lt(x, v) => (x, "<", v),
        Predicate::Ge(x, v) => (x, ">=", v),
        Predicate::Range(x, lo, hi) => {
            write_field(f, x, names)?;
            return write!(f, " in {lo}..{hi}");
        }
    };
    write_field(f, field, names)?;
    write!(f, "{op}{v}")
}

impl HandlerSpec {
    /// Writes the clause, fields by their names in `names` where it has them.
    fn write(&self, f: &mut fmt::Formatter<'_>, names: Option<&Format>) -> fmt::Result {
        let per_dest = |f: &mut fmt::Formatter<'_>, list: &[(Destination, Predicate)]| {
            list.iter().try_for_each(|(d, p)| {
                write!(f, " {d}=")?;
                write_pred(f, p, names)
            })
        };
        match self {
            Self::Route {
                field,
                routes,
                default,
            } => {
                f.write_str("route ")?;
                write_field(f, *field, names)?;
                routes.iter().try_for_each(|(v, d)| write!(f, " {v}={d}"))?;
                default.map_or(Ok(()), |d| write!(f, " default={d}"))
            }
            Self::Mirror(d) => {
                f.write_str("mirror ")?;
                let list: Vec<String> = d.iter().map(ToString::to_string).collect();
                f.write_str(&list.join(","))
            }
            Self::Filter(p) => {
                f.write_str("filter ")?;
                write_pred(f, p, names)
            }
            Self::DestFilter(l) => {
                f.write_str("dest-filter")?;
                per_dest(f, l)
            }
            Self::Multicast(l) => {
                f.write_str("multicast")?;
                per_dest(f, l)
            }
            Self::Delta { percent, step } => write!(f, "delta {percent} {step}"),
            Self::ByteSwap => f.write_str("byteswap"),
        }
    }
}

/// A clause alone: fields by offset (`u8@30`).
impl fmt::Display for HandlerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("to")?;
        self.dests.iter().try_for_each(|d| write!(f, " {d}"))?;
        if let Some(x) = self.fields {
            write!(f, " | fields {}", x.name())?;
        }
        if let Some(n) = self.size {
            write!(f, " | size {n}")?;
        }
        let names = self.fields.map(Fields::format);
        for h in &self.handlers {
            f.write_str(" | ")?;
            h.write(f, names.as_ref())?;
        }
        Ok(())
    }
}
