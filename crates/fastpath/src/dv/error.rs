//! Why a command or a message was refused.

use core::fmt;

use super::wire::WireError;

/// Why a link command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// Link costs must be at least 1.
    ZeroCost,
    /// The cost is at or above infinity.
    CostTooHigh,
    /// No such link is up.
    UnknownLink,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroCost => write!(f, "link cost must be at least 1"),
            Self::CostTooHigh => write!(f, "link cost at or above infinity"),
            Self::UnknownLink => write!(f, "no such link is up"),
        }
    }
}

impl core::error::Error for LinkError {}

/// Why a message was refused (the router's state is unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleError {
    /// The message arrived on an interface that is not up.
    UnknownLink,
    /// The bytes are not an advertisement.
    Wire(WireError),
    /// The message claims to come from this router.
    FromSelf,
    /// An entry's cost is above this router's infinity.
    CostAboveInfinity,
    /// A host's index or address query or answer (kinds 3, 4, 6, 7) arrived as a routing
    /// message (hosts talk to [`Router::answer_query`](super::Router::answer_query)).
    HostMessage,
    /// [`Router::answer_query`](super::Router::answer_query) was given something other than an index or address query.
    NotAQuery,
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownLink => write!(f, "advertisement on a link that is not up"),
            Self::Wire(e) => write!(f, "bad advertisement: {e}"),
            Self::FromSelf => write!(f, "advertisement claims to come from this router"),
            Self::CostAboveInfinity => write!(f, "advertised cost above infinity"),
            Self::HostMessage => write!(f, "a host's index query or answer on a router link"),
            Self::NotAQuery => write!(f, "not an index query"),
        }
    }
}

impl core::error::Error for HandleError {}

impl From<WireError> for HandleError {
    fn from(e: WireError) -> Self {
        Self::Wire(e)
    }
}

/// Why [`Router::add_local_prefix`](super::Router::add_local_prefix) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalError {
    /// The table has no free index ([`Config::max_destinations`](super::Config)).
    TableFull,
}

impl fmt::Display for LocalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TableFull => write!(f, "no free index for the prefix"),
        }
    }
}

impl core::error::Error for LocalError {}
