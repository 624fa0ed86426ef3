//! The names every tool shares for how queries travel: the transport to replay over, the HTTP
//! method of DNS over HTTPS and the client stack that carries the encrypted transports.
//!
//! Replay, population files, experiment plans and the command line all name these choices; one
//! definition here (the lowest crate they all depend on) keeps their spellings the same. With
//! the `serde` feature they read and write as in TOML and JSON (`"doh"`, `"get"`,
//! `"reference"`); with the `clap` feature they are command-line values (`--proto doh`,
//! `--doh-method get`, `--stack reference`).

use std::fmt;
use std::str::FromStr;

use crate::Proto;

/// The HTTP method of DNS over HTTPS queries (RFC 8484 §4.1): a population group's and a plan's
/// `doh_method`, `replay --doh-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum DohMethod {
    /// The query as the body of a POST (`application/dns-message`), the replay's default.
    #[default]
    Post,
    /// The query base64url-encoded in the `dns` parameter of the URL (`?dns=`), cacheable by
    /// HTTP caches.
    Get,
}

/// The transport a replay uses (a plan's `proto`, the `--proto` of `replay`, `mutate` and
/// `lab`): each query's own from the trace, or every client moved to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ProtoChoice {
    /// Each query's transport as in the trace (or as set with `mutate --proto`).
    Keep,
    /// DNS over UDP.
    Udp,
    /// DNS over TCP (RFC 7766).
    Tcp,
    /// DNS over TLS (RFC 7858).
    Tls,
    /// DNS over HTTPS (RFC 8484) over HTTP/2; the trace format calls it `https`.
    #[cfg_attr(feature = "serde", serde(alias = "https"))]
    #[cfg_attr(feature = "clap", value(alias = "https"))]
    Doh,
    /// DNS over QUIC (RFC 9250); the trace format calls it `quic`.
    #[cfg_attr(feature = "serde", serde(alias = "quic"))]
    #[cfg_attr(feature = "clap", value(alias = "quic"))]
    Doq,
}

impl ProtoChoice {
    /// The trace transport to move clients to, `None` for [`ProtoChoice::Keep`].
    pub fn forced(self) -> Option<Proto> {
        match self {
            ProtoChoice::Keep => None,
            ProtoChoice::Udp => Some(Proto::Udp),
            ProtoChoice::Tcp => Some(Proto::Tcp),
            ProtoChoice::Tls => Some(Proto::Tls),
            ProtoChoice::Doh => Some(Proto::Https),
            ProtoChoice::Doq => Some(Proto::Quic),
        }
    }

    /// Whether the queries moved go over connections (TCP, TLS, HTTPS or QUIC).
    pub fn is_connection(self) -> bool {
        !matches!(self, ProtoChoice::Keep | ProtoChoice::Udp)
    }

    /// The name in plans and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtoChoice::Keep => "keep",
            ProtoChoice::Udp => "udp",
            ProtoChoice::Tcp => "tcp",
            ProtoChoice::Tls => "tls",
            ProtoChoice::Doh => "doh",
            ProtoChoice::Doq => "doq",
        }
    }
}

/// Which client stacks carry DoT, DoH and DoQ: a population group's and a plan's `stack`,
/// `replay --stack`, and the `stacks` of the replay's JSON summary.
///
/// ldplayer is a measuring instrument: its own stacks are lean enough for tens of thousands of
/// simulated clients, and the reference stacks are the ones other DNS clients are built on,
/// so that a figure measured with one can be held against the other in the same build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stack {
    /// ldplayer's own sans-IO stacks: a TLS 1.3 record layer after the rustls handshake, an
    /// HTTP/2 client with its own HPACK decoder, a QUIC client with its own loss recovery and
    /// HTTP/3 (a few KiB per idle session); the replay's default.
    #[default]
    Lean,
    /// The stacks other clients use: rustls' ordinary `ClientConnection` for the whole TLS
    /// session (DoT, and under DoH), the `h2` crate for DoH, `quinn` for DoQ and `h3` with
    /// `h3-quinn` for DoH over HTTP/3.
    Reference,
}

impl Stack {
    /// Both stacks, lean first.
    pub const ALL: [Stack; 2] = [Stack::Lean, Stack::Reference];

    /// The name on the command line, in population files, plans and the JSON summary: `lean`
    /// or `reference`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stack::Lean => "lean",
            Stack::Reference => "reference",
        }
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Stack {
    type Err = String;

    /// Reads a stack's [`Stack::as_str`] name, as [`crate::Proto`] reads its own.
    fn from_str(s: &str) -> Result<Stack, String> {
        Stack::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown stack `{s}`: expected lean or reference"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_is_the_default() {
        assert_eq!(DohMethod::default(), DohMethod::Post);
    }

    #[test]
    fn each_choice_but_keep_forces_its_own_transport() {
        let all = [
            ProtoChoice::Keep,
            ProtoChoice::Udp,
            ProtoChoice::Tcp,
            ProtoChoice::Tls,
            ProtoChoice::Doh,
            ProtoChoice::Doq,
        ];
        let forced: Vec<Proto> = all.iter().filter_map(|c| c.forced()).collect();
        assert_eq!(forced, Proto::ALL.to_vec());
        for c in all {
            assert_eq!(
                c.is_connection(),
                c.forced().is_some_and(|p| p != Proto::Udp),
                "{c:?}"
            );
            assert_eq!(c.as_str().to_uppercase(), format!("{c:?}").to_uppercase());
        }
    }

    #[test]
    fn lean_is_the_default() {
        assert_eq!(Stack::default(), Stack::Lean);
    }

    #[test]
    fn a_stack_reads_back_from_its_name_and_nothing_else() {
        for s in Stack::ALL {
            assert_eq!(s.as_str().parse::<Stack>(), Ok(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert_eq!(Stack::Lean.as_str(), "lean");
        assert_eq!(Stack::Reference.as_str(), "reference");
        assert!("Lean".parse::<Stack>().is_err());
        assert!("quinn".parse::<Stack>().is_err());
    }
}
