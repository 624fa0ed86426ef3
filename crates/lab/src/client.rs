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

/// The flags a stub query carries: RD, AD and CD in the header, DO in EDNS. A names file line
/// gives them as `+rd`/`+nord`, `+ad`/`+noad`, `+cd`/`+nocd`, `+do`/`+nodo` (dig's spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryFlags {
    /// Recursion desired.
    pub rd: bool,
    /// AD in the query: asks a validating resolver to say whether it validated the answer (RFC
    /// 6840 §5.7), without asking for signatures.
    pub ad: bool,
    /// Checking disabled: a validating resolver answers without validating (RFC 4035 §3.2.2),
    /// so a bogus answer comes back instead of SERVFAIL.
    pub cd: bool,
    /// DNSSEC OK (EDNS): the answer carries the signatures (RFC 3225).
    pub dnssec_ok: bool,
}

impl Default for QueryFlags {
    /// What the lab asks when a line says nothing: RD and AD, without CD and DO.
    fn default() -> QueryFlags {
        QueryFlags {
            rd: true,
            ad: true,
            cd: false,
            dnssec_ok: false,
        }
    }
}

impl QueryFlags {
    /// Applies one `+flag` or `+noflag` token (case-insensitive); false when it names no flag.
    pub fn apply(&mut self, token: &str) -> bool {
        let Some(word) = token.strip_prefix('+') else {
            return false;
        };
        let word = word.to_ascii_lowercase();
        let (on, name) = match word.strip_prefix("no") {
            Some(name) => (false, name),
            None => (true, word.as_str()),
        };
        let flag = match name {
            "rd" => &mut self.rd,
            "ad" => &mut self.ad,
            "cd" => &mut self.cd,
            "do" => &mut self.dnssec_ok,
            _ => return false,
        };
        *flag = on;
        true
    }

    /// Every flag as a token, in a names file's order: `+rd +ad +nocd +nodo`.
    pub fn tokens(&self) -> String {
        let t = |on: bool, name: &str| format!("+{}{name}", if on { "" } else { "no" });
        [
            t(self.rd, "rd"),
            t(self.ad, "ad"),
            t(self.cd, "cd"),
            t(self.dnssec_ok, "do"),
        ]
        .join(" ")
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
    let flags = QueryFlags {
        ad,
        ..QueryFlags::default()
    };
    resolve_with(server, name, qtype, flags, timeout)
}

/// Sends one query for `name`/`qtype` with `flags` (EDNS, 1232-byte payload) over UDP to
/// `server` and waits up to `timeout` for its answer; a truncated answer (TC, likelier with
/// DO) is asked again over TCP within what is left of `timeout`.
pub fn resolve_with(
    server: SocketAddr,
    name: &str,
    qtype: Rtype,
    flags: QueryFlags,
    timeout: Duration,
) -> Result<Resolved, LabError> {
    let deadline = Instant::now() + timeout;
    let query = query(name, qtype, flags)?;
    let exchange = Exchange {
        server,
        query: &query,
        deadline,
        name,
        qtype,
    };
    let answer = exchange.over_udp()?;
    let tc = answer.get(2).is_some_and(|b| b & 0x02 != 0);
    if tc {
        let answer = exchange.over_tcp()?;
        return parse(&answer, name, qtype);
    }
    parse(&answer, name, qtype)
}

/// The query's wire form.
fn query(name: &str, qtype: Rtype, flags: QueryFlags) -> Result<Vec<u8>, LabError> {
    let qname: Name<Vec<u8>> = name
        .parse()
        .map_err(|_| LabError::Input(format!("not a domain name: {name:?}")))?;
    let mut b = MessageBuilder::new_vec();
    b.header_mut().set_rd(flags.rd);
    b.header_mut().set_ad(flags.ad);
    b.header_mut().set_cd(flags.cd);
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
        o.set_dnssec_ok(flags.dnssec_ok);
        Ok(())
    })
    .map_err(|_| LabError::Input("cannot add EDNS".into()))?;
    Ok(add.finish())
}

/// One query to one server, asked until `deadline`; `name` and `qtype` say what it asks, for
/// the error when no answer comes in time.
struct Exchange<'a> {
    server: SocketAddr,
    query: &'a [u8],
    deadline: Instant,
    name: &'a str,
    qtype: Rtype,
}

impl Exchange<'_> {
    /// The error when the deadline passes without an answer.
    fn timed_out(&self) -> LabError {
        let Exchange {
            server,
            name,
            qtype,
            ..
        } = self;
        LabError::Timeout(format!("{server} to answer {name} {qtype}"))
    }

    /// The time left before the deadline, or the timeout error once it has passed.
    fn left(&self) -> Result<Duration, LabError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.timed_out())
        } else {
            Ok(left)
        }
    }

    /// The answer over UDP.
    fn over_udp(&self) -> Result<Vec<u8>, LabError> {
        let (server, query) = (self.server, self.query);
        let any: SocketAddr = if server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(any).map_err(LabError::Io)?;
        sock.connect(server).map_err(LabError::Io)?;
        sock.send(query).map_err(LabError::Io)?;
        let mut buf = vec![0u8; 65535];
        loop {
            sock.set_read_timeout(Some(self.left()?))
                .map_err(LabError::Io)?;
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if waited_out(&e) => continue,
                Err(e) => return Err(LabError::Io(e)),
            };
            if n < 12 || buf[..2] != query[..2] {
                continue; // not ours
            }
            buf.truncate(n);
            return Ok(buf);
        }
    }

    /// The answer over TCP (RFC 1035 §4.2.2: each message after its two-byte length).
    fn over_tcp(&self) -> Result<Vec<u8>, LabError> {
        use std::io::{Read, Write};
        let (server, query) = (self.server, self.query);
        let io = |e: std::io::Error| {
            if waited_out(&e) {
                self.timed_out()
            } else {
                LabError::Io(e)
            }
        };
        let mut stream = std::net::TcpStream::connect_timeout(&server, self.left()?).map_err(io)?;
        let len = u16::try_from(query.len())
            .map_err(|_| LabError::Input("query too long".into()))?
            .to_be_bytes();
        // `None` would be no timeout at all: a deadline already passed is the timeout.
        stream.set_write_timeout(Some(self.left()?)).map_err(io)?;
        stream.write_all(&[&len[..], query].concat()).map_err(io)?;
        loop {
            stream.set_read_timeout(Some(self.left()?)).map_err(io)?;
            let mut len = [0u8; 2];
            stream.read_exact(&mut len).map_err(io)?;
            let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
            stream.read_exact(&mut buf).map_err(io)?;
            if buf.len() >= 12 && buf[..2] == query[..2] {
                return Ok(buf);
            }
        }
    }
}

/// Whether a socket call failed because its timeout passed (what a read or write with a
/// timeout reports then, by platform).
fn waited_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_tokens_read_and_write() {
        let mut f = QueryFlags::default();
        assert_eq!(f.tokens(), "+rd +ad +nocd +nodo");
        for t in ["+CD", "+do", "+noad", "+nord"] {
            assert!(f.apply(t), "{t}");
        }
        assert_eq!(
            f,
            QueryFlags {
                rd: false,
                ad: false,
                cd: true,
                dnssec_ok: true
            }
        );
        assert_eq!(f.tokens(), "+nord +noad +cd +do");
        for t in ["+tcp", "cd", "+no", "AAAA"] {
            assert!(!f.apply(t), "{t}");
        }
    }

    /// Each flag lands in the header or in the OPT record of the query sent.
    #[test]
    fn the_query_carries_the_flags() {
        for (tokens, rd, ad, cd, dnssec_ok) in [
            ("", true, true, false, false),
            ("+nord +noad +cd +do", false, false, true, true),
        ] {
            let mut f = QueryFlags::default();
            for t in tokens.split_whitespace() {
                f.apply(t);
            }
            let wire = query("www.example.", Rtype::A, f).expect("query");
            let msg = Message::from_octets(wire).expect("parses");
            let h = msg.header();
            assert_eq!((h.rd(), h.ad(), h.cd()), (rd, ad, cd), "{tokens}");
            let opt = msg.opt().expect("EDNS");
            assert_eq!(opt.dnssec_ok(), dnssec_ok, "{tokens}");
            assert_eq!(opt.udp_payload_size(), 1232);
        }
    }

    /// A response to `query` (its ID and question) with `flags` and, with `answer`, one A
    /// record 192.0.2.1 for the question's name.
    fn response(query: &[u8], flags: u16, answer: bool) -> Vec<u8> {
        let mut end = 12;
        while query[end] != 0 {
            end += 1 + usize::from(query[end]);
        }
        end += 1 + 4;
        let mut r = query[..2].to_vec();
        r.extend_from_slice(&flags.to_be_bytes());
        r.extend_from_slice(&[0, 1, 0, u8::from(answer), 0, 0, 0, 0]);
        r.extend_from_slice(&query[12..end]);
        if answer {
            r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
        }
        r
    }

    /// A truncated answer over UDP (after another query's answer, which is passed over) is
    /// asked again over TCP, and the TCP answer is the one returned.
    #[test]
    fn a_truncated_answer_is_asked_again_over_tcp() {
        use std::io::{Read, Write};
        let (tcp, udp) = (0..10)
            .find_map(|_| {
                let tcp = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
                let udp = UdpSocket::bind(tcp.local_addr().ok()?).ok()?;
                Some((tcp, udp))
            })
            .expect("a loopback port free for both TCP and UDP");
        let server = udp.local_addr().expect("address");
        let serving = std::thread::spawn(move || -> std::io::Result<()> {
            udp.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut buf = [0u8; 512];
            let (n, peer) = udp.recv_from(&mut buf)?;
            let mut other = response(&buf[..n], 0x8180, true);
            other[0] ^= 0xff;
            udp.send_to(&other, peer)?;
            udp.send_to(&response(&buf[..n], 0x8380, false), peer)?;
            let (mut stream, _) = tcp.accept()?;
            stream.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut len = [0u8; 2];
            stream.read_exact(&mut len)?;
            let mut query = vec![0u8; usize::from(u16::from_be_bytes(len))];
            stream.read_exact(&mut query)?;
            let r = response(&query, 0x8180, true);
            stream.write_all(&(r.len() as u16).to_be_bytes())?;
            stream.write_all(&r)
        });
        let resolved = resolve(
            server,
            "www.example.",
            Rtype::A,
            false,
            Duration::from_secs(10),
        )
        .expect("an answer");
        assert_eq!(resolved.question, "www.example. A");
        assert_eq!(resolved.rcode, Rcode::NOERROR);
        assert_eq!(resolved.answer.len(), 1, "{resolved:?}");
        assert!(resolved.answer[0].ends_with("192.0.2.1"), "{resolved:?}");
        serving.join().expect("server thread").expect("server side");
    }

    /// No answer by the deadline is a timeout that names the server and the question.
    #[test]
    fn no_answer_is_a_timeout_naming_the_question() {
        let silent = UdpSocket::bind("127.0.0.1:0").expect("socket");
        let server = silent.local_addr().expect("address");
        let timeout = Duration::from_millis(200);
        match resolve(server, "www.example.", Rtype::A, false, timeout) {
            Err(LabError::Timeout(what)) => {
                assert_eq!(what, format!("{server} to answer www.example. A"))
            }
            other => panic!("not a timeout: {other:?}"),
        }
    }
}
