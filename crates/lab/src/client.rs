//! A minimal stub client: one query, one answer, as text that compares across runs.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use bytes::Bytes;
use domain::base::iana::Class;
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::base::{Message, MessageBuilder, Name, ParsedName};
use domain::rdata::AllRecordData;
use ldplayer_dns::{Rcode, Rtype};

use crate::LabError;

/// What a resolver answered for one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The question, `name type`.
    pub question: String,
    /// The response code of the header (its four bits), e.g. `NOERROR`.
    pub rcode: Rcode,
    /// The resolver said the answer is authentic: it validated it (the AD flag).
    pub ad: bool,
    /// The answer section, one record per line in presentation format, TTLs left out (they
    /// differ between runs), sorted.
    pub answer: Vec<String>,
}

impl Resolved {
    /// One line: `question rcode [AD] record; record; ...` (`AD` when the resolver validated
    /// the answer; no trailing space when the answer section is empty).
    pub fn line(&self) -> String {
        let mut line = format!("{} {}", self.question, self.rcode);
        if self.ad {
            line.push_str(" AD");
        }
        if !self.answer.is_empty() {
            line.push(' ');
            line.push_str(&self.answer.join("; "));
        }
        line
    }
}

/// Sends one recursive query for `name`/`qtype` (EDNS, 1232-byte payload; with `ad`, the AD
/// bit) over UDP to `server` and waits up to `timeout` for its answer.
pub fn resolve(
    server: SocketAddr,
    name: &str,
    qtype: Rtype,
    ad: bool,
    timeout: Duration,
) -> Result<Resolved, LabError> {
    let qname: Name<Vec<u8>> = name
        .parse()
        .map_err(|_| LabError::Input(format!("not a domain name: {name:?}")))?;
    let mut b = MessageBuilder::new_vec();
    b.header_mut().set_rd(true);
    // RFC 6840 §5.7: AD in a query asks a validating resolver to say whether it validated the
    // answer (without DO, so no signatures come back to compare).
    b.header_mut().set_ad(ad);
    // Any ID will do (one query per socket); the clock's low bits vary per query.
    let id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u16)
        .unwrap_or(0x1dbe);
    b.header_mut().set_id(id);
    let mut q = b.question();
    q.push((
        &qname,
        domain::base::iana::Rtype::from_int(qtype.0),
        Class::IN,
    ))
    .map_err(|_| LabError::Input(format!("name too long: {name:?}")))?;
    let mut add = q.additional();
    add.opt(|o| {
        o.set_udp_payload_size(1232);
        Ok(())
    })
    .map_err(|_| LabError::Input("cannot add EDNS".into()))?;
    let query = add.finish();
    let any: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(any).map_err(LabError::Io)?;
    sock.connect(server).map_err(LabError::Io)?;
    sock.send(&query).map_err(LabError::Io)?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 65535];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(LabError::Timeout(format!(
                "{server} to answer {name} {qtype}"
            )));
        }
        sock.set_read_timeout(Some(left)).map_err(LabError::Io)?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                continue
            }
            Err(e) => return Err(LabError::Io(e)),
        };
        if n < 12 || buf[..2] != query[..2] {
            continue; // not ours
        }
        return parse(&buf[..n], name, qtype);
    }
}

fn parse(wire: &[u8], name: &str, qtype: Rtype) -> Result<Resolved, LabError> {
    let msg = Message::from_octets(Bytes::copy_from_slice(wire))
        .map_err(|_| LabError::Input("malformed answer".into()))?;
    let mut answer = Vec::new();
    let section = msg
        .answer()
        .map_err(|_| LabError::Input("malformed answer".into()))?;
    for rec in section.into_records::<AllRecordData<Bytes, ParsedName<Bytes>>>() {
        let rec = rec.map_err(|_| LabError::Input("malformed answer".into()))?;
        let text = rec.display_zonefile(DisplayKind::Simple).to_string();
        answer.push(ldplayer_zone::text::answer_line(&text));
    }
    answer.sort();
    Ok(Resolved {
        question: format!("{name} {qtype}"),
        rcode: Rcode::from_parts(msg.header().rcode().to_int(), 0),
        ad: msg.header().ad(),
        answer,
    })
}
