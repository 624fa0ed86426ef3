//! Records as text lines that compare across servers and resolvers.

/// A record in presentation format (`owner ttl class type data`, as `domain` prints it) as the
/// line the lab prints for an answer and Deckard checks are compared with: without the TTL
/// (caches count it down), owner, class and type lowercased, the data as it is (base64 keys and
/// TXT strings keep their case).
pub fn answer_line(record: &str) -> String {
    let f: Vec<&str> = record.splitn(5, ' ').collect();
    match f.as_slice() {
        [owner, _ttl, class, rtype, data] => format!(
            "{} {} {} {data}",
            owner.to_ascii_lowercase(),
            class.to_ascii_lowercase(),
            rtype.to_ascii_lowercase()
        ),
        _ => record.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ttl_dropped_case_kept_in_data() {
        assert_eq!(
            super::answer_line("WWW.Example. 300 IN TXT \"Hello World\""),
            "www.example. in txt \"Hello World\""
        );
        assert_eq!(super::answer_line("Odd Line"), "odd line");
    }
}
