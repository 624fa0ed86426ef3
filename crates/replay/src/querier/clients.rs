//! The original clients a querier emulates: each one's source address, session profile, TLS
//! configurations (each with its own session store) and where its open sessions are.

use super::profile::{self, Profile};
use super::NONE;
use crate::config::ReplayConfig;
use crate::net;
use rustc_hash::FxHashMap;
use rustls::ClientConfig;
use std::net::IpAddr;
use std::sync::Arc;

/// One original client.
pub(super) struct Client {
    /// Its UDP socket (an index of the UDP sessions), or [`NONE`].
    pub udp: u32,
    /// Its TCP, TLS or DoH connection (an index of the stream sessions), or [`NONE`].
    pub conn: u32,
    /// Its source address, when the replay sets one.
    pub local: Option<IpAddr>,
    /// Its TLS configuration for DoT, with a session store of its own.
    pub tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoH (ALPN h2), with a session store of its own.
    pub doh_tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoQ (ALPN doq), with a session store of its own.
    pub doq_tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoH over HTTP/3 (ALPN h3), with a session store of its own.
    pub h3_tls: Option<Arc<ClientConfig>>,
    /// Its session profile (an index into [`Clients::profile_of`]'s profiles).
    profile: u32,
}

/// The clients seen so far, by their number in the trace, and the session profiles.
pub(super) struct Clients {
    map: FxHashMap<u32, Client>,
    /// The session profiles of the clients (the replay's own last).
    profiles: Vec<Profile>,
}

impl Clients {
    /// No clients yet, with the profiles of `config`.
    pub(super) fn new(config: &ReplayConfig) -> Clients {
        Clients {
            map: FxHashMap::default(),
            profiles: profile::resolve(config),
        }
    }

    /// Makes sure `client` has an entry (its source address when a source prefix is set).
    pub(super) fn ensure(&mut self, config: &ReplayConfig, client: u32, src: IpAddr) {
        if !self.map.contains_key(&client) {
            let local = match config.source_prefix {
                Some(p) => Some(net::client_addr(p, client)),
                None if config.original_sources => Some(net::original_source(src, &config.server)),
                None => None,
            };
            self.map.insert(
                client,
                Client {
                    udp: NONE,
                    conn: NONE,
                    local,
                    tls: None,
                    doh_tls: None,
                    doq_tls: None,
                    h3_tls: None,
                    profile: profile::assign(config, self.profiles.len(), src),
                },
            );
        }
    }

    /// The client numbered `client`, if it was seen.
    pub(super) fn get(&self, client: u32) -> Option<&Client> {
        self.map.get(&client)
    }

    /// The client numbered `client`, if it was seen, to change.
    pub(super) fn get_mut(&mut self, client: u32) -> Option<&mut Client> {
        self.map.get_mut(&client)
    }

    /// The session profile of `client` (the replay's own for a client not seen).
    pub(super) fn profile_of(&self, client: u32) -> &Profile {
        let last = self.profiles.len() - 1;
        let i = self.map.get(&client).map_or(last, |c| c.profile as usize);
        &self.profiles[i.min(last)]
    }

    /// The longest answer timeout of any profile (ns), if there are profiles.
    pub(super) fn longest_timeout_ns(&self) -> Option<i64> {
        self.profiles.iter().map(|p| p.timeout_ns).max()
    }
}
