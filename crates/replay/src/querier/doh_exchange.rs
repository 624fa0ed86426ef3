//! What DoH's two clients share around their HTTP/2 (the lean [`super::doh_framing::DohFraming`]
//! and the reference stack's `crate::reference::doh::H2Doh`): the query as sent, where each
//! request ends in the TLS byte stream and whether the querier was told, and what a connection
//! hands the querier besides bytes.

use super::transport::{MatchKey, StreamError};
use crate::cause::Cause;
use ldplayer_dns::HEADER_LEN;

/// The largest DNS message sent or taken as a body (RFC 8484 bodies are DNS messages).
pub(crate) const MAX_MESSAGE: usize = 65_535;

/// A query as DoH sends it: a whole DNS message, with DNS ID 0 (RFC 8484 §4.1: cache
/// friendly).
pub(crate) fn doh_query(wire: &[u8]) -> Result<Vec<u8>, StreamError> {
    if wire.len() < HEADER_LEN || wire.len() > MAX_MESSAGE {
        return Err(StreamError::BadQuery);
    }
    let mut wire = wire.to_vec();
    wire[..2].copy_from_slice(&[0, 0]);
    Ok(wire)
}

/// Where a query's request ends in the TLS byte stream, and whether the querier was told.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RequestEnd {
    /// Where its last frame ends in the TLS byte stream, once sealed.
    pub at: Option<u64>,
    /// The end has been told to the querier.
    pub told: bool,
}

/// Tells `sealed` the end of each query not told yet, in queue order (`queries`: whether each
/// is done, and its end), and stops at the first whose request is not sealed yet. A query done
/// without bytes of its own on the wire (failed before it went out) ends at `now`: nothing to
/// wait for.
pub(crate) fn tell_ends<'a>(
    queries: impl IntoIterator<Item = (bool, &'a mut RequestEnd)>,
    now: u64,
    sealed: &mut impl FnMut(u64),
) {
    for (done, end) in queries {
        if end.told {
            continue;
        }
        let at = match end.at {
            Some(at) => at,
            None if done => now,
            None => break,
        };
        end.told = true;
        sealed(at);
    }
}

/// What a DoH connection has for the querier besides bytes, from one hand-over to the next.
#[derive(Debug, Default)]
pub(crate) struct Outcomes {
    /// Answers complete since the last hand-over, by query key.
    pub answers: Vec<(u64, Vec<u8>)>,
    /// Queries failed since the querier last took them, by query key.
    pub failed: Vec<(u64, Cause)>,
    /// The connection failed as a whole (no h2 by ALPN, an HTTP/2 connection error), until the
    /// querier takes it.
    pub fatal: Option<Cause>,
}

impl Outcomes {
    /// Hands over the failed queries, each with its key and why.
    pub fn take_failures(&mut self, failed: &mut impl FnMut(MatchKey, Cause)) {
        for (key, cause) in self.failed.drain(..) {
            failed(MatchKey::Stream(key), cause);
        }
    }

    /// Gives back what a burst grew, once nothing is in flight: answers and failures are handed
    /// over after this, so only an empty list is released.
    pub fn release_if_idle(&mut self) {
        if self.answers.is_empty() {
            self.answers = Vec::new();
        }
        if self.failed.is_empty() {
            self.failed = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::querier::test_messages::query;

    #[test]
    fn queries_go_with_id_zero_and_must_be_messages() {
        let query = query(0x1234);
        let sent = doh_query(&query).unwrap();
        assert_eq!(sent[..2], [0, 0]);
        assert_eq!(sent[2..], query[2..]);
        assert!(matches!(
            doh_query(&query[..HEADER_LEN - 1]),
            Err(StreamError::BadQuery)
        ));
        assert!(matches!(
            doh_query(&vec![0; MAX_MESSAGE + 1]),
            Err(StreamError::BadQuery)
        ));
    }

    #[test]
    fn ends_are_told_in_queue_order_up_to_the_first_not_sealed() {
        let mut ends = [
            RequestEnd {
                at: Some(10),
                told: true,
            },
            RequestEnd {
                at: Some(20),
                told: false,
            },
            // Failed before it went out.
            RequestEnd::default(),
            // Not sealed yet: it and what follows wait.
            RequestEnd::default(),
            RequestEnd {
                at: Some(40),
                told: false,
            },
        ];
        let done = [true, false, true, false, false];
        let mut told = Vec::new();
        tell_ends(done.iter().copied().zip(ends.iter_mut()), 30, &mut |at| {
            told.push(at)
        });
        assert_eq!(told, [20, 30]);
        assert_eq!(ends.map(|e| e.told), [true, true, true, false, false]);
        ends[3].at = Some(35);
        tell_ends(done.iter().copied().zip(ends.iter_mut()), 50, &mut |at| {
            told.push(at)
        });
        assert_eq!(told, [20, 30, 35, 40]);
    }
}
