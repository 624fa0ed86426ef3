//! Properties of diff's parsers: any bytes as answers and any text as criteria are read without
//! panicking; an answer never differs from itself; comparing is symmetric; a message and its
//! copy with the records of each section shuffled, names recased and TTLs changed differ in
//! nothing under the default criteria.

use ldplayer_diff::present::{field_text, message_text};
use ldplayer_diff::{Bound, Canon, Criteria, Field};
use proptest::prelude::*;

/// A response with the given records in its answer section, each (name label, type, TTL,
/// rdata), names written out.
fn message(records: &[(String, u16, u32, Vec<u8>)], upper: bool) -> Vec<u8> {
    let mut m = vec![0x12, 0x34, 0x84, 0x00, 0, 1];
    m.extend_from_slice(&(records.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
    for (label, rtype, ttl, rdata) in records {
        let label = if upper {
            label.to_ascii_uppercase()
        } else {
            label.clone()
        };
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
        m.extend_from_slice(b"\x07example\x00");
        m.extend_from_slice(&rtype.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(rdata);
    }
    m
}

fn canon(wire: &[u8], c: &Criteria) -> Canon {
    let mut x = Canon::default();
    x.fill(Some(wire), c);
    x
}

proptest! {
    #[test]
    fn any_bytes_compare_without_panicking(a in prop::collection::vec(any::<u8>(), 0..300),
                                           b in prop::collection::vec(any::<u8>(), 0..300)) {
        let c = Criteria::default();
        let (ca, cb, ca2) = (canon(&a, &c), canon(&b, &c), canon(&a, &c));
        for f in Field::ALL {
            prop_assert!(!ca.differs(&ca2, f));
            prop_assert_eq!(ca.differs(&cb, f), cb.differs(&ca, f));
            let _ = field_text(Some(&a), "answered", f);
        }
        let _ = message_text(Some(&b), "answered");
    }

    #[test]
    fn order_case_and_ttls_do_not_count(
        records in prop::collection::vec(
            ("[a-z]{1,10}", prop::sample::select(vec![1u16, 16, 28]), any::<u32>(),
             prop::collection::vec(any::<u8>(), 4..5)),
            1..12),
        seed in any::<u64>(),
    ) {
        let c = Criteria::default();
        let a = message(&records, false);
        let mut shuffled = records.clone();
        // A deterministic shuffle, and other TTLs.
        let n = shuffled.len();
        for i in 0..n {
            let j = ((seed >> (i % 32)) as usize + i * 7) % n;
            shuffled.swap(i, j);
        }
        for r in &mut shuffled {
            r.2 = r.2.wrapping_add(1);
        }
        let b = message(&shuffled, true);
        let (ca, cb) = (canon(&a, &c), canon(&b, &c));
        for f in Field::ALL {
            prop_assert!(!ca.differs(&cb, f), "{} differs", f);
        }
        // With TTLs counted, the answer differs, and only it.
        let ttl = Criteria { ttl: true, ..Criteria::default() };
        let (ca, cb) = (canon(&a, &ttl), canon(&b, &ttl));
        let differing: Vec<Field> = Field::ALL.into_iter().filter(|&f| ca.differs(&cb, f)).collect();
        prop_assert_eq!(differing, vec![Field::Answer]);
    }

    #[test]
    fn any_text_as_criteria_or_bound(text in "\\PC{0,200}") {
        if let Ok(c) = Criteria::from_toml(&text) {
            prop_assert!(!c.fields.is_empty());
        }
        if let Ok(b) = Bound::parse(&text) {
            prop_assert!((0.0..=100.0).contains(&b.max_pct));
        }
    }

    #[test]
    fn criteria_lists_of_known_fields_are_taken(picked in prop::collection::vec(0..Field::ALL.len(), 1..8)) {
        let names: Vec<String> = picked.iter().map(|&i| format!("\"{}\"", Field::ALL[i].name())).collect();
        let c = Criteria::from_toml(&format!("fields = [{}]", names.join(", "))).expect("valid");
        for &i in &picked {
            prop_assert!(c.compares(Field::ALL[i]));
        }
        let mut distinct = picked.clone();
        distinct.sort_unstable();
        distinct.dedup();
        prop_assert_eq!(c.fields.len(), distinct.len());
    }
}
