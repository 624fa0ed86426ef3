//! Moving clients to another transport, one connection per client.

use crate::choice::{ClientHash, Share};
use ldplayer_trace::Proto;
use std::collections::HashMap;
use std::net::IpAddr;

/// The transport change and the connections it has handed out (O(moved clients) memory).
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    proto: Proto,
    hash: ClientHash,
    share: Share,
    conns: HashMap<IpAddr, u64>,
}

impl Transport {
    /// Moves a `share` of the clients (by `hash`) to `proto`.
    pub fn new(proto: Proto, hash: ClientHash, share: Share) -> Transport {
        Transport {
            proto,
            hash,
            share,
            conns: HashMap::new(),
        }
    }

    /// Sets the transport and connection of a record of `client`; see
    /// [`Mutation::Transport`](crate::Mutation::Transport) for the numbering.
    pub fn apply(&mut self, client: IpAddr, proto: &mut Proto, conn: &mut u64) {
        let partial = !self.share.is_all() && !self.share.is_none();
        if self.share.hit(self.hash.of(client)) {
            *proto = self.proto;
            *conn = if self.proto.is_connection() {
                let next = self.conns.len() as u64 + 1;
                let k = *self.conns.entry(client).or_insert(next);
                if partial {
                    2 * k - 1
                } else {
                    k
                }
            } else {
                0
            };
        } else if partial && self.proto.is_connection() {
            *conn = conn.saturating_mul(2);
        }
    }
}
