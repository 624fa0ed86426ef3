//! DNS messages for the framings' tests.

/// A query for `www.example. A` with ID `id`.
pub(super) fn query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
    q
}

/// Its answer: the query with QR set.
pub(super) fn answer(id: u16) -> Vec<u8> {
    let mut a = query(id);
    a[2] |= 0x80;
    a
}
