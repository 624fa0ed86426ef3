//! DNSSEC validation by a recursive server of the emulated hierarchy: the root's trust anchor
//! (the Internet's would not do: the emulated root has keys of its own) in each resolver's form,
//! and the moment the resolver believes it is (recorded signatures have long expired; a
//! resolver must validate them at the time of the capture).
//!
//! Unbound takes the moment as an option (`val-override-date`); PowerDNS Recursor runs under
//! libfaketime (Debian's `faketime`), which moves the clock of the process it starts. Debian's
//! BIND and Knot Resolver link jemalloc, which libfaketime cannot wrap.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine;
use ldplayer_dns::Rtype;
use ldplayer_zone::Views;

/// What is wrong with a trust anchor, a moment or a domain given for validation.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    /// The anchor file cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The anchor file has no DS or DNSKEY record.
    #[error("{}: no DS or DNSKEY record for a trust anchor", .0.display())]
    NoAnchor(PathBuf),
    /// A DNSKEY of the anchor file cannot be turned into a DS.
    #[error("{}: a DNSKEY that cannot be read", .0.display())]
    BadDnskey(PathBuf),
    /// `auto` was asked of a hierarchy whose root is not signed.
    #[error("trust anchor auto: the emulated root zone has no DNSKEY (it is not signed); give a file of DS or DNSKEY records")]
    UnsignedRoot,
    /// The moment is out of range.
    #[error("validation time: {0}")]
    Time(String),
    /// A domain not to validate that is not a domain name.
    #[error("insecure domain {0:?}: not a domain name")]
    Domain(String),
}

/// How a resolver validates DNSSEC.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Validation {
    /// The trust anchor of the root.
    pub anchor: TrustAnchor,
    /// The resolver's clock (Unix seconds), when not now.
    #[serde(default)]
    pub time: Option<i64>,
    /// Domains not validated (negative trust anchors, RFC 7646), with their final dots:
    /// answers below them are insecure whatever their signatures say.
    #[serde(default)]
    pub insecure: Vec<String>,
}

/// Where the root's trust anchor comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustAnchor {
    /// A file of DS or DNSKEY records for `.`.
    File(PathBuf),
    /// The key-signing keys (DNSKEY with the SEP flag) of the emulated root zone.
    Auto,
}

/// The root's key-signing keys as zone-file lines (`. 3600 IN DNSKEY 257 3 13 ...`), from the
/// root zone of `views`; every DNSKEY when none has the SEP flag. `None` when the root is
/// missing or unsigned.
pub fn root_anchor(views: &Views) -> Option<String> {
    let root = views.zones().into_iter().find(|z| *z.origin == [0u8])?;
    let keys = root.apex().rrset(Rtype::DNSKEY)?;
    let parsed: Vec<(u16, u8, u8, &[u8])> = keys
        .rdatas()
        .filter(|r| r.len() > 4)
        .map(|r| (u16::from_be_bytes([r[0], r[1]]), r[2], r[3], &r[4..]))
        .collect();
    let sep = parsed.iter().any(|k| k.0 & 1 == 1);
    let mut out = String::new();
    for (flags, protocol, algorithm, key) in parsed {
        if sep && flags & 1 == 0 {
            continue;
        }
        let key = base64::engine::general_purpose::STANDARD.encode(key);
        let _ = writeln!(
            out,
            ".\t{}\tIN\tDNSKEY\t{flags} {protocol} {algorithm} {key}",
            keys.ttl()
        );
    }
    (!out.is_empty()).then_some(out)
}

/// The anchor file a resolver reads: the given one, or the emulated root's keys (from
/// `views`) written into `dir` as `root.anchor`.
pub fn anchor_file(
    anchor: &TrustAnchor,
    views: &Views,
    dir: &Path,
) -> Result<PathBuf, ValidationError> {
    match anchor {
        TrustAnchor::File(f) => Ok(f.clone()),
        TrustAnchor::Auto => {
            let text = root_anchor(views).ok_or(ValidationError::UnsignedRoot)?;
            let path = dir.join("root.anchor");
            ldplayer_output::write(&path, text).map_err(|e| ValidationError::Io {
                path: path.clone(),
                source: e.into(),
            })?;
            Ok(path)
        }
    }
}

/// `YYYYMMDDHHMMSS` (UTC), as unbound's `val-override-date` takes it.
pub fn unbound_date(unix: i64) -> Result<String, ValidationError> {
    let t = jiff::Timestamp::from_second(unix).map_err(|e| ValidationError::Time(e.to_string()))?;
    Ok(t.strftime("%Y%m%d%H%M%S").to_string())
}

/// libfaketime's start time for `faketime -f`: `@YYYY-MM-DD HH:MM:SS` (UTC; the clock runs on
/// from there).
pub fn faketime_spec(unix: i64) -> Result<String, ValidationError> {
    let t = jiff::Timestamp::from_second(unix).map_err(|e| ValidationError::Time(e.to_string()))?;
    Ok(format!("@{}", t.strftime("%Y-%m-%d %H:%M:%S")))
}

/// The anchor file's records as BIND's `trust-anchors` statement (`static-key` for DNSKEY,
/// `static-ds` for DS).
pub fn bind_trust_anchors(anchor: &Path) -> Result<String, ValidationError> {
    let text = read(anchor)?;
    let records = anchor_records(&text);
    if records.is_empty() {
        return Err(ValidationError::NoAnchor(anchor.to_path_buf()));
    }
    let mut out = String::from("trust-anchors {\n");
    for (name, kind, rest) in records {
        let how = if kind == "DNSKEY" {
            "static-key"
        } else {
            "static-ds"
        };
        let _ = writeln!(
            out,
            "  \"{name}\" {how} {} {} {} \"{}\";",
            rest[0],
            rest[1],
            rest[2],
            rest[3..].concat()
        );
    }
    out.push_str("};\n");
    Ok(out)
}

/// A domain name as the resolvers' configurations take it: with its final dot, and only the
/// characters of a host name (it goes into configuration files between quotes).
pub fn domain(name: &str) -> Result<String, ValidationError> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    if !ok {
        return Err(ValidationError::Domain(name.to_string()));
    }
    Ok(if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    })
}

/// The anchor file's records as PowerDNS Recursor's Lua trust anchors: its built-in root
/// anchors cleared, then one `addTA` per DS (a DNSKEY is turned into its SHA-256 DS, which is
/// all `addTA` takes).
pub fn pdns_trust_anchors(anchor: &Path) -> Result<String, ValidationError> {
    let text = read(anchor)?;
    let mut out = String::from("clearTA('.')\n");
    let mut any = false;
    for (name, kind, rest) in anchor_records(&text) {
        let ds = if kind == "DS" {
            rest.join(" ")
        } else {
            dnskey_to_ds(name, &rest)
                .ok_or_else(|| ValidationError::BadDnskey(anchor.to_path_buf()))?
        };
        let _ = writeln!(out, "addTA('{name}', \"{ds}\")");
        any = true;
    }
    if !any {
        return Err(ValidationError::NoAnchor(anchor.to_path_buf()));
    }
    Ok(out)
}

/// The text of an anchor file.
fn read(anchor: &Path) -> Result<String, ValidationError> {
    std::fs::read_to_string(anchor).map_err(|source| ValidationError::Io {
        path: anchor.to_path_buf(),
        source,
    })
}

/// The DS or DNSKEY records of an anchor file: owner, type (upper case) and the rdata fields.
fn anchor_records(text: &str) -> Vec<(&str, String, Vec<&str>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split(';').next().unwrap_or("");
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = fields
            .iter()
            .position(|f| f.eq_ignore_ascii_case("DNSKEY") || f.eq_ignore_ascii_case("DS"))
        else {
            continue;
        };
        if at == 0 || fields.len() < at + 5 {
            continue;
        }
        let rest = fields[at + 1..].to_vec();
        out.push((fields[0], fields[at].to_ascii_uppercase(), rest));
    }
    out
}

/// `keytag algorithm 2 digest` (SHA-256, RFC 4509) of a DNSKEY given as its presentation
/// fields (flags, protocol, algorithm, base64 key in pieces).
fn dnskey_to_ds(owner: &str, fields: &[&str]) -> Option<String> {
    let flags: u16 = fields.first()?.parse().ok()?;
    let protocol: u8 = fields.get(1)?.parse().ok()?;
    let algorithm: u8 = fields.get(2)?.parse().ok()?;
    let key = base64::engine::general_purpose::STANDARD
        .decode(fields.get(3..)?.concat())
        .ok()?;
    let mut rdata = flags.to_be_bytes().to_vec();
    rdata.extend_from_slice(&[protocol, algorithm]);
    rdata.extend_from_slice(&key);
    // RFC 4034 Appendix B.
    let mut ac: u32 = 0;
    for (i, &b) in rdata.iter().enumerate() {
        ac += if i & 1 == 1 {
            u32::from(b)
        } else {
            u32::from(b) << 8
        };
    }
    ac += (ac >> 16) & 0xffff;
    let tag = ac & 0xffff;
    let mut wire = Vec::new();
    for label in owner
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        wire.push(label.len() as u8);
        wire.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
    }
    wire.push(0);
    wire.extend_from_slice(&rdata);
    let digest = ring::digest::digest(&ring::digest::SHA256, &wire);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    Some(format!("{tag} {algorithm} 2 {hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_in_each_resolvers_form() {
        assert_eq!(unbound_date(1_700_000_000).unwrap(), "20231114221320");
        assert_eq!(
            faketime_spec(1_700_000_000).unwrap(),
            "@2023-11-14 22:13:20"
        );
    }

    /// The root KSK-2017 and its DS as IANA publishes them (root-anchors.xml).
    #[test]
    fn a_dnskey_gives_the_ds_iana_publishes() {
        let key = "AwEAAaz/tAm8yTn4Mfeh5eyI96WSVexTBAvkMgJzkKTOiW1vkIbzxeF3+/4RgWOq7HrxRixHlFlExOLAJr5emLvN7SWXgnLh4+B5xQlNVz8Og8kvArMtNROxVQuCaSnIDdD5LKyWbRd2n9WGe2R8PzgCmr3EgVLrjyBxWezF0jLHwVN8efS3rCj/EWgvIWgb9tarpVUDK/b58Da+sqqls3eNbuv7pr+eoZG+SrDK6nWeL3c6H5Apxz7LjVc1uTIdsIXxuOLYA4/ilBmSVIzuDWfdRUfhHdY6+cn8HFRm+2hM8AnXGXws9555KrUB5qihylGa8subX2Nn6UwNR1AkUTV74bU=";
        let ds = dnskey_to_ds(".", &["257", "3", "8", key]).unwrap();
        assert_eq!(
            ds,
            "20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"
        );
    }

    #[test]
    fn bind_takes_dnskey_and_ds_anchors() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(
            &f,
            ". 3600 IN DNSKEY 257 3 13 AbCd eFgH\n. IN DS 20326 8 2 E06D44B8\n; nothing\n",
        )
        .unwrap();
        let text = bind_trust_anchors(&f).unwrap();
        assert!(
            text.contains("\".\" static-key 257 3 13 \"AbCdeFgH\";"),
            "{text}"
        );
        assert!(
            text.contains("\".\" static-ds 20326 8 2 \"E06D44B8\";"),
            "{text}"
        );
        let lua = pdns_trust_anchors(&f).unwrap();
        assert!(lua.starts_with("clearTA('.')\n"), "{lua}");
        assert!(lua.contains("addTA('.', \"20326 8 2 E06D44B8\")"), "{lua}");
        std::fs::write(&f, "; empty\n").unwrap();
        assert!(bind_trust_anchors(&f).is_err());
        assert!(pdns_trust_anchors(&f).is_err());
    }

    proptest::proptest! {
        /// Whatever an anchor file holds, reading it gives anchors or an error, never a panic;
        /// a DNSKEY line that is read gives a DS with the key's algorithm.
        #[test]
        fn any_anchor_file_is_read_or_refused(text in ".{0,400}", key in "[A-Za-z0-9+/]{0,88}") {
            let dir = tempfile::tempdir().unwrap();
            let f = dir.path().join("anchor");
            std::fs::write(&f, &text).unwrap();
            let _ = bind_trust_anchors(&f);
            let _ = pdns_trust_anchors(&f);
            std::fs::write(&f, format!(". IN DNSKEY 257 3 13 {key}\n{text}")).unwrap();
            if let Ok(lua) = pdns_trust_anchors(&f) {
                proptest::prop_assert!(lua.contains(" 13 2 "), "{}", lua);
            }
        }
    }
}
