//! The names every tool shares for how queries travel: the HTTP method of DNS over HTTPS.
//!
//! Replay, population files, experiment plans and the command line all name these choices; one
//! definition here (the lowest crate they all depend on) keeps their spellings the same. With
//! the `serde` feature they read and write as in TOML and JSON (`"get"`, `"post"`); with the
//! `clap` feature they are command-line values (`--doh-method get`).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_is_the_default() {
        assert_eq!(DohMethod::default(), DohMethod::Post);
    }
}
