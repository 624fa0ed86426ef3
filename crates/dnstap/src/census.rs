//! Counts of a dnstap log's messages by type and by identity, for `inspect`.

use crate::tap::{MessageType, Tap};
use std::collections::BTreeMap;
use std::fmt;

/// How many distinct identities a [`Census`] keeps apart; the messages of any more are counted
/// together, so that a log of many servers keeps a bounded census.
pub const MAX_IDENTITIES: usize = 1024;

/// Counts of messages by type and by identity (the server that logged them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    by_type: BTreeMap<MessageType, u64>,
    by_identity: BTreeMap<String, u64>,
    other_identities: u64,
}

impl Census {
    /// Counts one message.
    pub fn add(&mut self, tap: &Tap) {
        *self.by_type.entry(tap.kind).or_insert(0) += 1;
        let identity = tap
            .identity
            .as_ref()
            .map(|i| String::from_utf8_lossy(i).into_owned())
            .unwrap_or_default();
        self.count_identity(identity, 1);
    }

    fn count_identity(&mut self, identity: String, n: u64) {
        let room = self.by_identity.len() < MAX_IDENTITIES;
        match self.by_identity.get_mut(&identity) {
            Some(m) => *m += n,
            None if room => {
                self.by_identity.insert(identity, n);
            }
            None => self.other_identities += n,
        }
    }

    /// Adds `other`'s counts (of another file or connection).
    pub fn merge(&mut self, other: &Census) {
        for (t, n) in &other.by_type {
            *self.by_type.entry(*t).or_insert(0) += n;
        }
        for (i, n) in &other.by_identity {
            self.count_identity(i.clone(), *n);
        }
        self.other_identities += other.other_identities;
    }

    /// Messages counted.
    pub fn total(&self) -> u64 {
        self.by_type.values().sum()
    }

    /// Messages of `kind`.
    pub fn of_type(&self, kind: MessageType) -> u64 {
        self.by_type.get(&kind).copied().unwrap_or(0)
    }

    /// (type, messages) for every type seen, in code order.
    pub fn by_type(&self) -> impl Iterator<Item = (MessageType, u64)> + '_ {
        self.by_type.iter().map(|(t, n)| (*t, *n))
    }

    /// (identity, messages) for every identity seen (`""` when a message names none), in
    /// byte order; the messages of identities past [`MAX_IDENTITIES`] are in
    /// [`Census::other_identities`].
    pub fn by_identity(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.by_identity.iter().map(|(i, n)| (i.as_str(), *n))
    }

    /// Messages of identities beyond the first [`MAX_IDENTITIES`].
    pub fn other_identities(&self) -> u64 {
        self.other_identities
    }
}

impl fmt::Display for Census {
    /// `CLIENT_QUERY=10, CLIENT_RESPONSE=10`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.by_type.is_empty() {
            return f.write_str("none");
        }
        for (i, (t, n)) in self.by_type().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}={n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn tap(kind: MessageType, identity: &str) -> Tap {
        let mut t = Tap::new(
            kind,
            None,
            "127.0.0.1:1".parse().expect("addr"),
            "127.0.0.1:53".parse().expect("addr"),
            0,
            Bytes::new(),
        );
        t.identity = Some(Bytes::copy_from_slice(identity.as_bytes()));
        t
    }

    #[test]
    fn counts_by_type_and_identity_within_bounds() {
        let mut c = Census::default();
        c.add(&tap(MessageType::ClientResponse, "b"));
        c.add(&tap(MessageType::ClientQuery, "a"));
        c.add(&tap(MessageType::ClientQuery, "a"));
        assert_eq!(c.to_string(), "CLIENT_QUERY=2, CLIENT_RESPONSE=1");
        assert_eq!(c.by_identity().collect::<Vec<_>>(), [("a", 2), ("b", 1)]);
        for i in 0..MAX_IDENTITIES + 5 {
            c.add(&tap(MessageType::ResolverQuery, &i.to_string()));
        }
        assert_eq!(c.by_identity().count(), MAX_IDENTITIES);
        assert_eq!(c.other_identities(), 7);
        assert_eq!(c.total(), 3 + MAX_IDENTITIES as u64 + 5);
        let mut d = Census::default();
        d.merge(&c);
        assert_eq!(d, c);
    }
}
