//! Plans of resolver servers: DNSSEC validation and its options varied, options a resolver
//! kind cannot take refused, and a synthetic hierarchy in place of a manifest.

use super::tests::{line_of, parse, refused};
use super::*;

const RESOLVER_PLAN: &str = r#"
[trace]
synth = { workload = "root", rate = 100, duration_s = 10, seed = 1, rd = true }
[server]
kind = "unbound"
manifest = "manifest"
trust_anchor = "auto"
validation_time = 2017-08-21T12:00:00Z
insecure = ["example.com"]
[vary]
aggressive_nsec = [false, true]
qname_minimisation = [true]
"#;

#[test]
fn resolvers_validate_and_vary_their_options() {
    use ldplayer_servers::validation::TrustAnchor;
    let plan = parse(RESOLVER_PLAN).unwrap();
    let v = plan.base.server.validation.as_ref().unwrap();
    assert_eq!(v.anchor, TrustAnchor::Auto);
    assert_eq!(v.time, Some(1_503_316_800));
    assert_eq!(v.insecure, ["example.com."]);
    let runs = plan.runs();
    assert_eq!(runs.len(), 2);
    let options: Vec<_> = runs
        .iter()
        .map(|r| {
            let o = r.settings.server.resolver;
            (o.aggressive_nsec, o.qname_minimisation)
        })
        .collect();
    assert_eq!(
        options,
        [(Some(false), Some(true)), (Some(true), Some(true))]
    );

    // A file anchor is resolved against the plan's folder; Unix seconds are a moment too.
    let file = RESOLVER_PLAN
        .replace("\"auto\"", "\"root.zone\"")
        .replace("2017-08-21T12:00:00Z", "1503316800");
    let plan = parse(&file).unwrap();
    let v = plan.base.server.validation.unwrap();
    assert!(matches!(&v.anchor, TrustAnchor::File(f) if f.ends_with("root.zone")));
    assert_eq!(v.time, Some(1_503_316_800));
}

#[test]
fn resolver_options_that_cannot_be_had_are_refused() {
    // A moment or insecure domains without a trust anchor.
    let no_anchor = RESOLVER_PLAN.replace("trust_anchor = \"auto\"\n", "");
    let (key, line, _) = refused(&no_anchor);
    assert_eq!(
        (key.as_str(), line),
        (
            "server.validation_time",
            line_of(&no_anchor, "validation_time")
        )
    );
    let local_date = RESOLVER_PLAN.replace("2017-08-21T12:00:00Z", "2017-08-21");
    let (key, _, message) = refused(&local_date);
    assert_eq!(key, "server.validation_time");
    assert!(message.contains("offset"), "{message}");
    let bad_domain = RESOLVER_PLAN.replace("example.com", "a b");
    assert_eq!(refused(&bad_domain).0, "server.insecure");

    // Authoritative servers neither validate nor take resolver options.
    let nsd = RESOLVER_PLAN
        .replace("kind = \"unbound\"", "kind = \"nsd\"")
        .replace("manifest = \"manifest\"", "zones = [\"root.zone\"]");
    let (key, _, message) = refused(&nsd);
    assert_eq!(key, "vary.aggressive_nsec[0]");
    assert!(message.contains("not a resolver"), "{message}");
    let nsd_anchor = nsd.replace(
        "[vary]\naggressive_nsec = [false, true]\nqname_minimisation = [true]\n",
        "",
    );
    let (key, _, message) = refused(&nsd_anchor);
    assert_eq!(key, "server.trust_anchor");
    assert!(message.contains("not a resolver"), "{message}");

    // Aggressive NSEC without validation would measure nothing.
    let unvalidated = RESOLVER_PLAN
        .replace("trust_anchor = \"auto\"\n", "")
        .replace("validation_time = 2017-08-21T12:00:00Z\n", "")
        .replace("insecure = [\"example.com\"]\n", "");
    let (key, _, message) = refused(&unvalidated);
    assert_eq!(key, "vary.aggressive_nsec[0]");
    assert!(message.contains("trust_anchor"), "{message}");

    // Knot Resolver cannot turn aggressive NSEC off, nor validate at another time.
    let kresd = RESOLVER_PLAN.replace("kind = \"unbound\"", "kind = \"kresd\"");
    let (key, _, message) = refused(&kresd);
    assert_eq!(key, "vary.aggressive_nsec[0]");
    assert!(
        message.contains("cannot turn aggressive NSEC off"),
        "{message}"
    );
    let kresd_on = kresd.replace("[false, true]", "[true]");
    let (key, _, message) = refused(&kresd_on);
    assert_eq!(key, "server.validation_time");
    assert!(message.contains("jemalloc"), "{message}");
    let kresd_now = kresd_on.replace("validation_time = 2017-08-21T12:00:00Z\n", "");
    assert!(parse(&kresd_now).is_ok());
}

#[test]
fn a_synthetic_hierarchy_takes_the_place_of_a_manifest() {
    let synthetic = RESOLVER_PLAN
        .replace(
            "manifest = \"manifest\"",
            "hierarchy = { tlds = 5, sign = \"nsec3\" }",
        )
        .replace("validation_time = 2017-08-21T12:00:00Z\n", "");
    let plan = parse(&synthetic).unwrap();
    assert_eq!(
        plan.base.server.hierarchy,
        Some(SynthHierarchy {
            tlds: 5,
            slds: 10,
            providers: 16,
            sign: SignChoice::Nsec3,
        })
    );
    assert_eq!(plan.base.server.manifest, None);

    let both = synthetic.replace("[server]\n", "[server]\nmanifest = \"manifest\"\n");
    assert_eq!(refused(&both).0, "server.hierarchy");
    let unsigned = synthetic.replace(", sign = \"nsec3\"", "");
    let (key, _, message) = refused(&unsigned);
    assert_eq!(key, "server.trust_anchor");
    assert!(message.contains("not signed"), "{message}");
    let too_many = synthetic.replace("tlds = 5", "tlds = 0");
    assert_eq!(refused(&too_many).0, "server.hierarchy.tlds");
}
