//! `diff`'s view of answers: any two byte strings are compared field by field without
//! panicking, whatever the criteria; an answer never differs from itself; the comparison is
//! symmetric; and every field's value and the whole answer print in presentation format.
#![no_main]
use ldplayer_diff::present::{field_text, message_text};
use ldplayer_diff::{Canon, Criteria, Field, RrsigMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let split = rest
        .first()
        .map_or(0, |&b| usize::from(b) * rest.len() / 256)
        .min(rest.len());
    let (a, b) = rest.split_at(split);
    let criteria = Criteria {
        ttl: choice & 1 != 0,
        case: choice & 2 != 0,
        rrsig: if choice & 4 != 0 {
            RrsigMode::Full
        } else {
            RrsigMode::Covered
        },
        ..Criteria::default()
    };
    let (mut ca, mut cb, mut ca2) = (Canon::default(), Canon::default(), Canon::default());
    ca.fill(Some(a), &criteria);
    cb.fill((choice & 8 == 0).then_some(b), &criteria);
    ca2.fill(Some(a), &criteria);
    for f in Field::ALL {
        assert!(!ca.differs(&ca2, f), "{f} of an answer against itself");
        assert_eq!(ca.differs(&cb, f), cb.differs(&ca, f), "{f} is not symmetric");
        let _ = field_text(Some(a), "answered", f);
    }
    let _ = message_text(Some(b), "answered");
});
