//! The small pieces an answer is assembled from: a fixed list of RRsets to write, and names
//! in stack buffers.

use crate::name::{self, MAX_NAME};
use crate::zone::{Node, RRset};

/// Owner, RRset, its RRSIGs, and for an NS/MX set the nodes of its zone (its targets' owners
/// then count as written where the records name them, see `Writer::linked_rrset`).
pub(super) type Item<'z> = (&'z [u8], &'z RRset, Option<&'z RRset>, Option<&'z [Node]>);

/// A fixed-capacity list of RRsets to write (no allocation).
pub(super) struct Items<'z, const N: usize> {
    pub(super) items: [Option<Item<'z>>; N],
    pub(super) len: usize,
}

impl<'z, const N: usize> Items<'z, N> {
    pub(super) fn new() -> Self {
        Items {
            items: [None; N],
            len: 0,
        }
    }
    pub(super) fn push(&mut self, owner: &'z [u8], set: &'z RRset, sig: Option<&'z RRset>) {
        self.push_linked(owner, set, sig, None);
    }
    pub(super) fn push_linked(
        &mut self,
        owner: &'z [u8],
        set: &'z RRset,
        sig: Option<&'z RRset>,
        nodes: Option<&'z [Node]>,
    ) {
        if self.items[..self.len]
            .iter()
            .any(|i| matches!(i, Some((_, s, _, _)) if std::ptr::eq(*s, set)))
        {
            return;
        }
        if self.len < N {
            self.items[self.len] = Some((owner, set, sig, nodes));
            self.len += 1;
        }
    }
}

/// A lowercase name in a stack buffer.
#[derive(Clone, Copy)]
pub(super) struct NameBuf {
    b: [u8; MAX_NAME],
    len: usize,
}

impl NameBuf {
    pub(super) fn from(n: &[u8]) -> Self {
        let mut b = [0u8; MAX_NAME];
        let len = n.len().min(MAX_NAME);
        b[..len].copy_from_slice(&n[..len]);
        b[..len].make_ascii_lowercase();
        NameBuf { b, len }
    }
    pub(super) fn get(&self) -> &[u8] {
        &self.b[..self.len]
    }
}

/// `*.` + name, if it fits.
pub(super) fn wildcard_of(ce: &[u8]) -> Option<NameBuf> {
    if ce.len() + 2 > MAX_NAME {
        return None;
    }
    let mut b = [0u8; MAX_NAME];
    b[0] = 1;
    b[1] = b'*';
    b[2..2 + ce.len()].copy_from_slice(ce);
    Some(NameBuf {
        b,
        len: ce.len() + 2,
    })
}

/// The ancestor of `name` (or itself) with one label more than `ce`.
pub(super) fn next_closer<'a>(name: &'a [u8], ce: &[u8]) -> &'a [u8] {
    let want = name::label_count(ce) + 1;
    let mut cur = name;
    while name::label_count(cur) > want {
        match name::parent(cur) {
            Some(p) => cur = p,
            None => break,
        }
    }
    cur
}
