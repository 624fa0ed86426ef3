//! The connection IDs and the path (RFC 9000 §5.1, §8, §17.2.5): this client's ID, the
//! server's (as the server changes it: its first Initial, a Retry, NEW_CONNECTION_ID), the IDs
//! the transport parameters must confirm, a Retry's token, and the PATH_RESPONSE and
//! RETIRE_CONNECTION_ID frames they call for.

use super::super::wire;
use super::{Retx, LOCAL_CID_LEN};

/// The connection IDs of one connection.
pub(super) struct Cids {
    /// This client's connection ID (the server's packets carry it).
    pub(super) scid: [u8; LOCAL_CID_LEN],
    /// The server's connection ID, which this client's packets carry.
    pub(super) dcid: Vec<u8>,
    /// The sequence number of `dcid` (NEW_CONNECTION_ID).
    dcid_seq: u64,
    /// The ID of the client's first Initial (the Initial keys', and what the server's
    /// transport parameters must repeat).
    pub(super) original_dcid: Vec<u8>,
    /// The server's ID in its Retry, if one came.
    pub(super) retry_scid: Option<Vec<u8>>,
    /// The Retry's token, sent in every Initial after it.
    pub(super) token: Vec<u8>,
    /// A PATH_RESPONSE to send: the PATH_CHALLENGE's data.
    path_response: Option<[u8; 8]>,
    /// A RETIRE_CONNECTION_ID to send: the sequence number.
    retire: Option<u64>,
}

impl Cids {
    /// This client's ID and the one it chose for the server.
    pub(super) fn new(scid: [u8; LOCAL_CID_LEN], dcid: Vec<u8>) -> Cids {
        Cids {
            scid,
            original_dcid: dcid.clone(),
            dcid,
            dcid_seq: 0,
            retry_scid: None,
            token: Vec::new(),
            path_response: None,
            retire: None,
        }
    }

    /// Whether a Retry (`packet`, with `token`) may be taken: the first one, with a token,
    /// its integrity tag right (RFC 9000 §17.2.5.2).
    pub(super) fn retry_acceptable(&self, packet: &[u8], token: &[u8]) -> bool {
        self.retry_scid.is_none()
            && !token.is_empty()
            && retry_tag_valid(&self.original_dcid, packet)
    }

    /// Takes a Retry: the server's new ID and its token.
    pub(super) fn on_retry(&mut self, scid: &[u8], token: Vec<u8>) {
        self.retry_scid = Some(scid.to_vec());
        self.dcid = scid.to_vec();
        self.token = token;
    }

    /// A NEW_CONNECTION_ID frame: the new ID is taken (and the current one retired) when the
    /// server asks to retire the current one. Whether it was taken (its reset token then
    /// counts).
    pub(super) fn on_new_cid(&mut self, seq: u64, retire_prior_to: u64, cid: &[u8]) -> bool {
        if retire_prior_to > self.dcid_seq && seq >= retire_prior_to {
            self.retire = Some(self.dcid_seq);
            self.dcid = cid.to_vec();
            self.dcid_seq = seq;
            true
        } else {
            false
        }
    }

    /// A PATH_CHALLENGE frame: its data goes back in a PATH_RESPONSE.
    pub(super) fn on_path_challenge(&mut self, data: [u8; 8]) {
        self.path_response = Some(data);
    }

    /// A RETIRE_CONNECTION_ID was in a packet that will not be acknowledged: it goes again.
    pub(super) fn requeue_retire(&mut self, seq: u64) {
        self.retire = Some(seq);
    }

    /// Whether a PATH_RESPONSE or RETIRE_CONNECTION_ID waits to go.
    pub(super) fn control_pending(&self) -> bool {
        self.path_response.is_some() || self.retire.is_some()
    }

    /// Writes the PATH_RESPONSE due, if one is; whether it did.
    pub(super) fn write_path_response(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(data) = self.path_response.take() else {
            return false;
        };
        out.push(0x1b);
        out.extend_from_slice(&data);
        true
    }

    /// Writes the RETIRE_CONNECTION_ID due, if one is; whether it did.
    pub(super) fn write_retire(&mut self, out: &mut Vec<u8>, frames: &mut Vec<Retx>) -> bool {
        let Some(seq) = self.retire.take() else {
            return false;
        };
        out.push(0x19);
        wire::put_varint(out, seq);
        frames.push(Retx::RetireCid(seq));
        true
    }

    /// Drops the IDs' heap memory (the connection is useless afterwards).
    #[cfg(test)]
    pub(super) fn drop_heap(&mut self) {
        self.dcid = Vec::new();
        self.original_dcid = Vec::new();
        self.token = Vec::new();
        self.retry_scid = None;
    }
}

/// Whether a Retry packet's integrity tag is right (RFC 9001 §5.8).
fn retry_tag_valid(original_dcid: &[u8], packet: &[u8]) -> bool {
    use ring::aead;
    const KEY: [u8; 16] = [
        0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8,
        0x4e,
    ];
    const NONCE: [u8; 12] = [
        0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
    ];
    let Some(split) = packet.len().checked_sub(16) else {
        return false;
    };
    let (body, tag) = packet.split_at(split);
    let mut pseudo = Vec::with_capacity(1 + original_dcid.len() + body.len());
    pseudo.push(original_dcid.len() as u8);
    pseudo.extend_from_slice(original_dcid);
    pseudo.extend_from_slice(body);
    let Ok(key) = aead::UnboundKey::new(&aead::AES_128_GCM, &KEY) else {
        return false;
    };
    let key = aead::LessSafeKey::new(key);
    let mut tag = tag.to_vec();
    key.open_in_place(
        aead::Nonce::assume_unique_for_key(NONCE),
        aead::Aad::from(&pseudo),
        &mut tag,
    )
    .is_ok()
}
