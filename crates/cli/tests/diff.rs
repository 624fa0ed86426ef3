//! `ldplayer diff` against real servers: the answers of ldplayer serve, nsd and knotd to the
//! same queries over the signed root zone; a zone changed on purpose (one delegation's glue,
//! one name removed) found exactly where it was changed; references that disagree kept apart as
//! unstable; bad input refused with the reason, and a file cut short read as far as it goes.

mod binary;

use binary::{ldplayer, query_trace, s, Query};
use ldplayer_servers::{start, RunningServer, ServerKind, ServerSetup};
use ldplayer_testbed::prerequisite::{shared_file, tools};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;

/// `kind` serving `zone` on a free loopback port, its files under `work`. A port that another
/// test took between its choice and the server's bind is chosen again.
fn serve(kind: ServerKind, zone: &Path, work: &Path) -> RunningServer {
    let mut last = String::new();
    for _ in 0..5 {
        let port = ldplayer_testbed::free_port();
        let mut setup = ServerSetup::new(
            kind,
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            work.join(format!("{}-{port}", kind.name())),
        );
        setup.port = port;
        setup.zones = vec![zone.to_path_buf()];
        setup.threads = Some(1);
        match start(&setup) {
            Ok(server) => return server,
            Err(e) if e.to_string().contains("in use") => last = e.to_string(),
            Err(e) => panic!("{kind} did not start: {e}"),
        }
    }
    panic!("{kind} did not start: {last}")
}

/// The top-level domains of a root zone whose delegation lists a nameserver for which
/// `nameserver` says yes.
fn served_by(zone: &Path, nameserver: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let text = std::fs::read_to_string(zone).expect("the zone");
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() >= 5 && f[3] == "NS" && f[0] != "." && nameserver(&f[4].to_ascii_lowercase()))
                .then(|| f[0].to_ascii_lowercase())
        })
        .collect()
}

/// The (owner, type) pairs of a zone file.
fn rrsets(zone: &Path) -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(zone).expect("the zone");
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() >= 4 && !line.starts_with(';'))
                .then(|| (f[0].to_ascii_lowercase(), f[3].to_string()))
        })
        .collect()
}

/// The top-level domains delegated in a root zone file, in the file's order.
fn tlds(zone: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(zone).expect("the zone");
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 5 && f[3] == "NS" && f[0] != "." && f[0].matches('.').count() == 1 {
            let tld = f[0].to_ascii_lowercase();
            if seen.insert(tld.clone()) {
                out.push(tld);
            }
        }
    }
    out
}

/// Names and types to ask a root server: under `tlds` (referrals), their DS and NS, names that
/// do not exist, the apex; `dnssec` cycles through no EDNS, EDNS and EDNS with DO.
fn root_queries(tlds: &[String], dnssec: bool) -> Vec<(String, &'static str, Option<bool>)> {
    let mut out = Vec::new();
    let edns = |i: usize| {
        if dnssec {
            [None, Some(false), Some(true)][i % 3]
        } else {
            [None, Some(false)][i % 2]
        }
    };
    for (i, tld) in tlds.iter().enumerate() {
        out.push((format!("www.example.{tld}"), "A", edns(i)));
        out.push((tld.clone(), "DS", edns(i + 1)));
        out.push((tld.clone(), "NS", edns(i + 2)));
        out.push((format!("nothere{i}.{tld}"), "AAAA", edns(i)));
        out.push((format!("nonexistent-tld-{i}."), "A", edns(i + 1)));
    }
    for (i, t) in ["SOA", "NS", "DNSKEY", "TXT", "SOA", "SOA"]
        .into_iter()
        .enumerate()
    {
        out.push((".".to_string(), t, edns(i)));
    }
    out
}

fn write_trace(path: &Path, queries: &[(String, &'static str, Option<bool>)]) {
    let q: Vec<Query<'_>> = queries
        .iter()
        .map(|(n, t, d)| Query {
            qname: n,
            qtype: t,
            flags: "-",
            dnssec_ok: *d,
        })
        .collect();
    query_trace(path, &q, 16);
}

/// Replays `trace` to `servers` with answers kept, into `results`.
fn replay(trace: &Path, servers: &[&RunningServer], results: &Path) {
    let mut args = vec!["replay".to_string(), s(trace)];
    for srv in servers {
        args.push("--server".into());
        args.push(srv.address().to_string());
    }
    for a in ["--speed", "8", "--keep-answers", "-q", "--results"] {
        args.push(a.into());
    }
    args.push(s(results));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ldplayer(&args);
}

/// `ldplayer diff ARGS --json`: its exit status and report.
fn diff(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("diff")
        .args(args)
        .arg("--json")
        .output()
        .expect("ldplayer runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), json, stderr)
}

/// The differing fields of a report, with their counts.
fn fields(report: &serde_json::Value) -> BTreeMap<String, u64> {
    report["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter(|f| f["queries"].as_u64() > Some(0))
        .map(|f| {
            (
                f["field"].as_str().expect("a name").to_string(),
                f["queries"].as_u64().expect("a count"),
            )
        })
        .collect()
}

/// The rows of a `--csv`: by field, the differing queries' indexes.
fn csv_rows(path: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let text = std::fs::read_to_string(path).expect("the CSV");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("index,qname,qtype,field,tested,reference")
    );
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for line in lines {
        let mut f = line.split(',');
        let index: u64 = f.next().expect("index").parse().expect("a number");
        let field = f.nth(2).expect("field").to_string();
        out.entry(field).or_default().insert(index);
    }
    out
}

#[test]
fn ldplayer_serve_nsd_and_knot_on_the_signed_root_zone() {
    let Some(zone) = shared_file("zones/root-signed-2017-08-21.zone") else {
        return;
    };
    if !tools(&[("nsd", "nsd"), ("knotd", "knot")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let all = tlds(&zone);
    let picked: Vec<String> = all.iter().step_by(all.len() / 60).cloned().collect();
    let queries = root_queries(&picked, true);
    let trace = dir.path().join("root.txt");
    write_trace(&trace, &queries);
    let ours = serve(ServerKind::Ldplayer, &zone, dir.path());
    let nsd = serve(ServerKind::Nsd, &zone, dir.path());
    let knot = serve(ServerKind::Knot, &zone, dir.path());
    let results = dir.path().join("root.res");
    replay(&trace, &[&ours, &nsd, &knot], &results);
    let r = s(&results);

    // ldplayer serve against nsd: no difference (docs/performance.md lists none on this zone).
    let (status, report, err) = diff(&[&r, "--target", "0", "--reference", "1"]);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(report["compared"], queries.len() as u64, "{report}");
    assert_eq!(
        report["different"],
        0,
        "ldplayer serve against nsd: {}",
        fields(&report).len()
    );
    // knotd against nsd: its minimal responses (no NS set in the authority section of a
    // positive answer, so no glue for it either), and nothing else.
    let csv = dir.path().join("knot.csv");
    let (status, report, err) = diff(&[&r, "--target", "2", "--reference", "1", "--csv", &s(&csv)]);
    assert_eq!(status, Some(0), "{err}");
    let rows = csv_rows(&csv);
    let apex_soa: BTreeSet<u64> = queries
        .iter()
        .enumerate()
        .filter(|(_, (n, t, _))| n == "." && *t == "SOA")
        .map(|(i, _)| i as u64)
        .collect();
    assert_eq!(apex_soa.len(), 3);
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        ["additional", "authority"],
        "knotd against nsd: {report}"
    );
    assert_eq!(rows["authority"], apex_soa, "{report}");
    assert_eq!(rows["additional"], apex_soa, "{report}");
    let text = std::fs::read_to_string(&csv).expect("csv");
    assert!(
        text.contains(",.,SOA,authority,(empty),. 518400 IN NS a.root-servers.net."),
        "{text}"
    );
    // Asked again, twice: the same difference each time.
    let (status, report, err) = diff(&[
        &r,
        "--target",
        "2",
        "--reference",
        "1",
        "--reask",
        "2",
        "--trace",
        &s(&trace),
    ]);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(report["reask"]["asked"], 3, "{report}");
    assert_eq!(report["reask"]["reproducible"], 3, "{report}");
    assert_eq!(report["reask"]["not_reproducible"], 0, "{report}");
    assert_eq!(report["different"], 3, "{report}");
    drop((ours, nsd, knot));
}

/// The root zone with one delegation's glue changed (`a.ns.nic.cz.`, of cz.) and one name
/// removed (fr., its delegation and everything under it).
fn changed_root(zone: &Path) -> String {
    let text = std::fs::read_to_string(zone).expect("the zone");
    let mut out = String::new();
    for line in text.lines() {
        let owner = line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if owner == "fr." || owner.ends_with(".fr.") {
            continue;
        }
        if owner == "a.ns.nic.cz." && line.contains("194.0.12.1") {
            out.push_str(&line.replace("194.0.12.1", "194.0.12.99"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The root zone's next version: the serial one up and cz.'s glue changed.
fn next_root(zone: &Path) -> String {
    let text = std::fs::read_to_string(zone).expect("the zone");
    text.replacen("2018031200", "2018031201", 1)
        .replace("194.0.12.1\n", "194.0.12.98\n")
}

/// Whether the query for `name` is under `domain` (or is it).
fn under(name: &str, domain: &str) -> bool {
    name == domain || name.ends_with(&format!(".{domain}"))
}

#[test]
fn a_changed_glue_and_a_removed_name_are_found_exactly_where_they_are() {
    let Some(zone) = shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    if !tools(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let changed = dir.path().join("root-changed.zone");
    std::fs::write(&changed, changed_root(&zone)).expect("changed zone");
    let all = tlds(&zone);
    let mut picked: Vec<String> = all.iter().step_by(all.len() / 40).cloned().collect();
    for t in ["cz.", "fr.", "de."] {
        if !picked.iter().any(|p| p == t) {
            picked.push(t.to_string());
        }
    }
    let queries = root_queries(&picked, false);
    let trace = dir.path().join("root.txt");
    write_trace(&trace, &queries);
    let original = serve(ServerKind::Nsd, &zone, dir.path());
    let modified = serve(ServerKind::Nsd, &changed, dir.path());
    // One file per server, as two separate replays of the same trace.
    let (a, b) = (
        dir.path().join("original.res"),
        dir.path().join("changed.res"),
    );
    replay(&trace, &[&original], &a);
    replay(&trace, &[&modified], &b);
    let csv = dir.path().join("d.csv");
    let (status, report, err) = diff(&[&s(&a), &s(&b), "--csv", &s(&csv)]);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(report["compared"], queries.len() as u64, "{report}");
    let rows = csv_rows(&csv);
    let indexes = |pred: &dyn Fn(&str, &str) -> bool| -> BTreeSet<u64> {
        queries
            .iter()
            .enumerate()
            .filter(|(_, (n, t, _))| pred(n, t))
            .map(|(i, _)| i as u64)
            .collect()
    };
    // The referrals to every delegation that lists a.ns.nic.cz. (cz.) carry the changed glue
    // in their additional section, and so do those to delegations with a nameserver under
    // fr., whose glue went with it (kn. has ns.cocca.fr.); they differ in nothing else. DS
    // answers carry no glue.
    let glued: BTreeSet<String> = served_by(&zone, |ns| ns == "a.ns.nic.cz." || under(ns, "fr."))
        .into_iter()
        .filter(|d| d != "fr.")
        .collect();
    assert!(glued.contains("cz.") && glued.contains("kn."), "{glued:?}");
    let glue = indexes(&|n, t| glued.iter().any(|d| under(n, d)) && t != "DS");
    assert!(glue.len() >= 6, "{glue:?}");
    // Under fr., now absent: NXDOMAIN (rcode) with the root's SOA (authority), authoritative
    // where a referral was not (flags.aa), without glue (additional), without the DS (answer).
    let fr = indexes(&|n, _| under(n, "fr."));
    let fr_referrals = indexes(&|n, t| under(n, "fr.") && t != "DS");
    let fr_ds = indexes(&|n, t| n == "fr." && t == "DS");
    assert_eq!((fr.len(), fr_referrals.len(), fr_ds.len()), (4, 3, 1));
    let additional: BTreeSet<u64> = glue.union(&fr_referrals).copied().collect();
    let expected: BTreeMap<String, BTreeSet<u64>> = [
        ("rcode", fr.clone()),
        ("flags.aa", fr_referrals.clone()),
        ("answer", fr_ds),
        ("authority", fr.clone()),
        ("additional", additional),
    ]
    .into_iter()
    .map(|(f, at)| (f.to_string(), at))
    .collect();
    assert_eq!(rows, expected, "{report}");
    let everything: BTreeSet<u64> = glue.union(&fr).copied().collect();
    assert_eq!(
        report["different"],
        everything.len() as u64,
        "exactly the queries under them"
    );
    drop((original, modified));
}

#[test]
fn references_that_disagree_make_queries_unstable_not_different() {
    let Some(zone) = shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    if !tools(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let next = dir.path().join("root-next.zone");
    std::fs::write(&next, next_root(&zone)).expect("next zone");
    let all = tlds(&zone);
    let mut picked: Vec<String> = all.iter().step_by(all.len() / 40).cloned().collect();
    picked.push("cz.".into());
    let queries = root_queries(&picked, false);
    let trace = dir.path().join("root.txt");
    write_trace(&trace, &queries);
    // Two references, one a version behind the other, and the tested server on the first.
    let v1 = serve(ServerKind::Nsd, &zone, dir.path());
    let v2 = serve(ServerKind::Nsd, &next, dir.path());
    let tested = serve(ServerKind::Ldplayer, &zone, dir.path());
    let results = dir.path().join("three.res");
    replay(&trace, &[&v1, &v2, &tested], &results);
    let (status, report, err) = diff(&[&s(&results)]);
    assert_eq!(status, Some(0), "{err}");
    // The answers that carry the SOA (the apex's SOA, names that do not exist, types a name
    // does not have: NXDOMAIN and NODATA) or the glue of a.ns.nic.cz. (referrals to the
    // delegations that list it) differ between the versions: unstable. The rest is compared,
    // and the same.
    let glued = served_by(&zone, |ns| ns == "a.ns.nic.cz.");
    let present = rrsets(&zone);
    let unstable = queries
        .iter()
        .filter(|(n, t, _)| {
            let is_tld = picked.contains(n);
            let referral =
                !n.starts_with("nonexistent-tld-") && n != "." && !(is_tld && *t == "DS");
            (n == "." && (*t == "SOA" || !present.contains(&(n.clone(), t.to_string()))))
                || n.starts_with("nonexistent-tld-")
                || (is_tld && *t == "DS" && !present.contains(&(n.clone(), "DS".to_string())))
                || (referral && glued.iter().any(|d| under(n, d)))
        })
        .count() as u64;
    assert!(unstable > 40, "{unstable}");
    assert_eq!(report["unstable"], unstable, "{report}");
    assert_eq!(
        report["compared"],
        queries.len() as u64 - unstable,
        "{report}"
    );
    assert_eq!(report["different"], 0, "{report}");
    let by_field = report["unstable_by_field"].to_string();
    assert!(
        by_field.contains("authority") && by_field.contains("additional"),
        "{by_field}"
    );
    drop((v1, v2, tested));
}

#[test]
fn bad_input_is_refused_with_its_reason_and_a_cut_file_read_as_far_as_it_goes() {
    let Some(zone) = shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    if !tools(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let all = tlds(&zone);
    let picked: Vec<String> = all.iter().step_by(all.len() / 40).cloned().collect();
    let queries = root_queries(&picked, false);
    let trace = dir.path().join("root.txt");
    write_trace(&trace, &queries);
    let nsd = serve(ServerKind::Nsd, &zone, dir.path());
    let ours = serve(ServerKind::Ldplayer, &zone, dir.path());

    // Results without answers: the option to use is named.
    let plain = dir.path().join("plain.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &nsd.address().to_string(),
        "--speed",
        "8",
        "-q",
        "--results",
        &s(&plain),
    ]);
    let with = dir.path().join("with.res");
    replay(&trace, &[&ours], &with);
    let (status, _, err) = diff(&[&s(&plain), &s(&with)]);
    assert_eq!(status, Some(2), "{err}");
    assert!(
        err.contains("holds no answers") && err.contains("--keep-answers"),
        "{err}"
    );

    // Results of another trace: refused.
    let other = dir.path().join("other.txt");
    let later: Vec<_> = root_queries(&picked[1..], false);
    write_trace(&other, &later);
    let other_res = dir.path().join("other.res");
    replay(&other, &[&nsd], &other_res);
    let (status, _, err) = diff(&[&s(&other_res), &s(&with)]);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("different traces"), "{err}");

    // One target only: nothing to compare with.
    let (status, _, err) = diff(&[&s(&with)]);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("at least two"), "{err}");

    // A file cut short (a replay killed mid-run): what it holds is compared, the rest is not.
    // A slow replay writes a block every second.
    let slow = dir.path().join("slow.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &nsd.address().to_string(),
        "--server",
        &ours.address().to_string(),
        "--speed",
        "0.1",
        "--keep-answers",
        "-q",
        "--results",
        &s(&slow),
    ]);
    let bytes = std::fs::read(&slow).expect("results");
    let cut = dir.path().join("cut.res");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).expect("cut");
    let (status, report, err) = diff(&[&s(&cut)]);
    assert_eq!(status, Some(0), "{err}");
    let compared = report["compared"].as_u64().expect("compared");
    let not_compared = report["not_compared"].as_u64().expect("not compared");
    assert!(compared > 0 && compared < queries.len() as u64, "{report}");
    assert_eq!(report["different"], 0, "{report}");
    let lost = report["inputs"][0]["damage"]["results_lost"]
        .as_u64()
        .expect("lost");
    assert!(lost > 0, "{report}");
    // Every query is compared or lost a result: none is made up.
    assert!(compared + not_compared <= queries.len() as u64);
    assert!(compared + lost >= queries.len() as u64, "{report}");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("INCOMPLETE") || warnings.contains("cut short"),
        "{warnings}"
    );
    drop((nsd, ours));
}

#[test]
fn a_difference_that_is_gone_when_asked_again_is_not_reproducible() {
    let Some(zone) = shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    if !tools(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let changed = dir.path().join("root-changed.zone");
    std::fs::write(&changed, changed_root(&zone)).expect("changed zone");
    let all = tlds(&zone);
    let mut picked: Vec<String> = all.iter().step_by(all.len() / 20).cloned().collect();
    picked.push("cz.".into());
    let queries = root_queries(&picked, false);
    let trace = dir.path().join("root.txt");
    write_trace(&trace, &queries);
    let reference = serve(ServerKind::Nsd, &zone, dir.path());
    let tested = serve(ServerKind::Nsd, &changed, dir.path());
    let results = dir.path().join("two.res");
    replay(&trace, &[&reference, &tested], &results);
    let (status, first, err) = diff(&[&s(&results)]);
    assert_eq!(status, Some(0), "{err}");
    let different = first["different"].as_u64().expect("a count");
    assert!(different >= 3, "{first}");
    // The tested server gets the reference's zone back, on the same address: re-asked, the
    // differences are gone, so none reproduces, and none is counted as a difference.
    let address = tested.address();
    tested.stop().expect("nsd stops");
    let mut setup = ServerSetup::new(
        ServerKind::Nsd,
        vec![address.ip()],
        dir.path().join("nsd-again"),
    );
    setup.port = address.port();
    setup.zones = vec![zone.clone()];
    setup.threads = Some(1);
    let again = start(&setup).expect("nsd starts again on its address");
    let (status, report, err) = diff(&[
        &s(&results),
        "--reask",
        "1",
        "--trace",
        &s(&trace),
        "--max-differences",
        "any=0",
    ]);
    assert_eq!(
        status,
        Some(0),
        "no reproducible difference is past the bound: {err}"
    );
    assert_eq!(report["reask"]["asked"], different, "{report}");
    assert_eq!(report["reask"]["not_reproducible"], different, "{report}");
    assert_eq!(report["reask"]["reproducible"], 0, "{report}");
    assert_eq!(report["different"], 0, "{report}");
    let additional = report["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["field"] == "additional")
        .expect("additional");
    assert_eq!(additional["queries"], 0, "{additional}");
    assert!(
        additional["not_reproducible"].as_u64() > Some(0),
        "{additional}"
    );
    // Without re-asking, the bound fails.
    let (status, _, err) = diff(&[&s(&results), "--max-differences", "any=0"]);
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("past its bound"), "{err}");
    drop((reference, again));
}
