//! Query names: unique names under a zone, and the root-like mix of real TLDs and junk.

use crate::encode;
use crate::error::SynthError;
use crate::rng::{below, Chance, Rng};
use chacha20::rand_core::Rng as _;
use ldplayer_dns::{name_from_presentation, BUSY_TLDS, MAX_NAME_LEN};

/// A root zone that delegates every TLD the root-like workload asks for (with glue in
/// 192.0.2.0/24): what the embedded server answers root-like traces from when no zone is given
/// (`ldplayer demo`, experiments with `kind = "ldplayer"` and no zones).
pub fn synthetic_root_zone() -> String {
    let mut z = String::from(
        "$ORIGIN .\n$TTL 86400\n. IN SOA a.root-servers.net. nstld.verisign-grs.com. 2026112200 1800 900 604800 86400\n\
         . 518400 IN NS a.root-servers.net.\na.root-servers.net. 518400 IN A 127.0.0.1\n",
    );
    for (i, tld) in root_like_tlds().enumerate() {
        z.push_str(&format!(
            "{tld}. 172800 IN NS ns1.nic.{tld}.\nns1.nic.{tld}. 172800 IN A 192.0.2.{}\n",
            i + 1
        ));
    }
    z
}

/// The top-level domains the root-like workload asks for ([`BUSY_TLDS`]), so that a test or
/// demo can build a root zone that delegates them.
pub fn root_like_tlds() -> impl Iterator<Item = &'static str> {
    BUSY_TLDS.iter().map(|(tld, _)| *tld)
}

/// Suffixes that leak to the root from private networks and misconfigured software.
const JUNK_SUFFIXES: &[&str] = &[
    "local",
    "home",
    "lan",
    "corp",
    "internal",
    "localdomain",
    "domain",
    "router",
    "belkin",
    "invalid",
    "dlink",
    "workgroup",
];

/// Writes the unique names `<n in hex>.<zone>` of the fixed and Poisson workloads.
#[derive(Debug, Clone)]
pub struct UniqueNames {
    zone: Vec<u8>,
}

impl UniqueNames {
    /// Names under `zone` (presentation form); checks that a 16-digit label still fits.
    pub fn new(zone: &str) -> Result<UniqueNames, SynthError> {
        let zone = name_from_presentation(zone)?;
        if zone.len() + 17 > MAX_NAME_LEN {
            return Err(SynthError::ZoneTooLong);
        }
        Ok(UniqueNames { zone })
    }

    /// Appends the labels of name `n`, and returns the zone to finish the name with.
    pub fn write(&self, out: &mut Vec<u8>, n: u64) -> &[u8] {
        encode::hex_label(out, n);
        &self.zone
    }
}

/// Draws root-like names: junk (nonexistent TLDs) with probability `junk_share`, otherwise an
/// existing TLD by weight, bare or under a random second-level label.
#[derive(Debug, Clone)]
pub struct RootNames {
    junk: Chance,
    tlds: Vec<(Vec<u8>, u64)>,
    tld_total: u64,
    junk_suffixes: Vec<Vec<u8>>,
}

impl RootNames {
    /// The mix with `junk_share` junk.
    pub fn new(junk_share: f64) -> RootNames {
        let wire = |s: &str| {
            let mut v = vec![s.len() as u8];
            v.extend_from_slice(s.as_bytes());
            v.push(0);
            v
        };
        let mut cum = 0;
        let tlds = BUSY_TLDS
            .iter()
            .map(|&(t, w)| {
                cum += w as u64;
                (wire(t), cum)
            })
            .collect();
        RootNames {
            junk: Chance::new(junk_share),
            tlds,
            tld_total: cum,
            junk_suffixes: JUNK_SUFFIXES.iter().map(|s| wire(s)).collect(),
        }
    }

    /// Appends the leading labels of a name and returns the suffix (ending with the root label)
    /// to finish it with.
    pub fn write<'a>(&'a self, out: &mut Vec<u8>, rng: &mut Rng) -> &'a [u8] {
        let kind = rng.next_u64();
        if self.junk.hit(rng.next_u64()) {
            if kind & 0xff < 154 {
                // About 60%: a random single label like Chromium's 7-to-15-letter probes.
                random_label(out, rng, 7, 15);
                &[0]
            } else {
                random_label(out, rng, 3, 12);
                let i = below(rng, self.junk_suffixes.len() as u64) as usize;
                &self.junk_suffixes[i]
            }
        } else {
            let r = below(rng, self.tld_total);
            let i = self.tlds.partition_point(|&(_, c)| c <= r);
            let tld = &self.tlds[i.min(self.tlds.len() - 1)].0;
            if kind & 1 == 0 {
                random_label(out, rng, 3, 12);
            }
            tld
        }
    }
}

/// Appends a label of `min..=max` random lower-case letters.
fn random_label(out: &mut Vec<u8>, rng: &mut Rng, min: u64, max: u64) {
    let len = min + below(rng, max - min + 1);
    out.push(len as u8);
    let mut bits = 0u64;
    for i in 0..len {
        if i % 12 == 0 {
            bits = rng.next_u64();
        }
        out.push(b'a' + (bits % 26) as u8);
        bits /= 26;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng;

    #[test]
    fn zone_length_checked() {
        assert!(UniqueNames::new("example.").is_ok());
        let long = format!("{}.", vec!["a".repeat(60); 4].join("."));
        assert_eq!(
            UniqueNames::new(&long).unwrap_err(),
            SynthError::ZoneTooLong
        );
        assert!(UniqueNames::new("a..b").is_err());
    }

    #[test]
    fn root_names_are_names() {
        let names = RootNames::new(0.5);
        let mut r = rng(9);
        for _ in 0..1000 {
            let mut out = Vec::new();
            let suffix = names.write(&mut out, &mut r);
            out.extend_from_slice(suffix);
            let mut s = String::new();
            ldplayer_dns::name_to_presentation(&out, &mut s);
            assert_eq!(name_from_presentation(&s).unwrap(), out);
        }
    }
}
