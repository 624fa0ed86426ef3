//! Zone files read as the real servers read them (issue 25): the same file served by
//! `ldplayer serve` and by nsd or knotd on loopback gives the same answers to kdig, TTLs
//! included, where the file uses `$INCLUDE` under a `$TTL`, TXT strings with bytes that are not
//! UTF-8, or `@` without `$ORIGIN` (the origin given as `FILE@ORIGIN`, as nsd's `zone: name:`
//! gives it) and in a record's data; and a TTL with its most significant bit set is served as 0, as BIND loads it
//! (`named-checkzone -D`, RFC 2181 §8).

mod binary;

use binary::{s, Serve};
use ldplayer_testbed::prerequisite;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The records of kdig's answer section for `name` `rtype` at `port` on 127.0.0.1, each line's
/// fields joined by one space.
fn answer(port: u16, name: &str, rtype: &str) -> Vec<String> {
    let out = Command::new("kdig")
        .args(["@127.0.0.1", "-p", &port.to_string()])
        .args(["+timeout=2", "+retry=1", "+norecurse", "+noall", "+answer"])
        .args([name, rtype])
        .output()
        .expect("kdig must be installed (scripts/test.sh installs knot-dnsutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// nsd or knotd serving one zone on a free loopback port; killed on drop.
struct Witness {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Witness {
    /// Starts `program` (`nsd` or `knotd`) with the zone `origin` from `file` and waits (a
    /// bounded time) until it answers the zone's SOA.
    fn start(program: &str, origin: &str, file: &Path) -> Witness {
        let dir = tempfile::tempdir().unwrap();
        let port = ldplayer_testbed::free_port();
        let d = dir.path().display();
        let f = file.display();
        let (conf, args): (String, &[&str]) = match program {
            "nsd" => (
                format!(
                    "server:\n  ip-address: 127.0.0.1@{port}\n  username: \"\"\n  chroot: \"\"\n  \
                     zonesdir: \"{d}\"\n  database: \"\"\n  pidfile: \"{d}/nsd.pid\"\n  \
                     xfrdfile: \"{d}/xfrd.state\"\n  xfrdir: \"{d}\"\n  zonelistfile: \"{d}/zone.list\"\n  \
                     logfile: \"{d}/log\"\n  server-count: 1\n  do-ip6: no\n\
                     remote-control:\n  control-enable: no\nzone:\n  name: \"{origin}\"\n  zonefile: \"{f}\"\n"
                ),
                &["-d", "-c"],
            ),
            _ => (
                format!(
                    "server:\n  listen: 127.0.0.1@{port}\n  rundir: \"{d}\"\n  background-workers: 1\n\
                     log:\n  - target: \"{d}/log\"\n    any: info\ndatabase:\n  storage: \"{d}\"\n\
                     template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n    \
                     journal-content: none\n    semantic-checks: off\n\
                     zone:\n  - domain: \"{origin}\"\n    file: \"{f}\"\n"
                ),
                &["-c"],
            ),
        };
        let conf_path = dir.path().join("server.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(program)
            .args(args)
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} must be installed (scripts/test.sh): {e}"));
        let w = Witness {
            child,
            port,
            _dir: dir,
        };
        let started = Instant::now();
        while answer(port, origin, "SOA").is_empty() {
            let log = std::fs::read_to_string(w._dir.path().join("log")).unwrap_or_default();
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{program} does not serve {origin}: {log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        w
    }
}

/// `ldplayer serve` with `zone` (a file, or `FILE@ORIGIN`) on a free loopback port.
fn serve(zone: &str) -> (Serve, u16) {
    let port = ldplayer_testbed::free_port();
    let serve = Serve::start(&["--listen", &format!("127.0.0.1:{port}"), zone]);
    (serve, port)
}

/// Asks ldplayer and each witness every question; their answers must be the same and not
/// empty. Returns ldplayer's answers.
fn same_answers(ours: u16, witnesses: &[(&str, u16)], questions: &[(&str, &str)]) -> Vec<String> {
    let mut all = Vec::new();
    for (name, rtype) in questions {
        let mine = answer(ours, name, rtype);
        assert!(!mine.is_empty(), "ldplayer has no answer to {name} {rtype}");
        for (who, port) in witnesses {
            assert_eq!(
                mine,
                answer(*port, name, rtype),
                "{name} {rtype}: ldplayer, then {who}"
            );
        }
        all.extend(mine);
    }
    all
}

fn kdig_nsd_knotd() -> bool {
    prerequisite::tools(&[("kdig", "knot-dnsutils"), ("nsd", "nsd"), ("knotd", "knot")])
}

/// The records of `named-checkzone -D` for `zone` (BIND's view of it as loaded), each line's
/// fields joined by one space; `None` when BIND is missing and skipping is allowed.
fn bind_loads(origin: &str, zone: &Path) -> Option<Vec<String>> {
    let checkzone = prerequisite::tool("named-checkzone", "bind9-utils")?;
    let out = Command::new(checkzone)
        .args(["-D", "-o", "-", origin])
        .arg(zone)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect(),
    )
}

#[test]
fn included_records_take_the_ttl_in_force_where_they_are_included() {
    if !kdig_nsd_knotd() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hosts.inc"),
        "inc1 A 192.0.2.2\n$TTL 120\ninc2 A 192.0.2.3\n",
    )
    .unwrap();
    let zone = dir.path().join("example.zone");
    let hosts = dir.path().join("hosts.inc");
    std::fs::write(
        &zone,
        format!(
            "$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n\
             $INCLUDE {}\nafter A 192.0.2.4\n",
            hosts.display()
        ),
    )
    .unwrap();
    let Some(bind) = bind_loads("example", &zone) else {
        return;
    };
    let (_ours, port) = serve(&s(&zone));
    let nsd = Witness::start("nsd", "example.", &zone);
    let knot = Witness::start("knotd", "example.", &zone);
    let included = same_answers(
        port,
        &[("nsd", nsd.port), ("knotd", knot.port)],
        &[("inc1.example.", "A"), ("inc2.example.", "A")],
    );
    assert_eq!(
        included,
        [
            "inc1.example. 60 IN A 192.0.2.2",
            "inc2.example. 120 IN A 192.0.2.3"
        ]
    );
    // The included file's $TTL stays in force after it for nsd and BIND (knotd goes back to
    // the including file's): ldplayer follows nsd and BIND.
    let after = same_answers(port, &[("nsd", nsd.port)], &[("after.example.", "A")]);
    assert_eq!(after, ["after.example. 120 IN A 192.0.2.4"]);
    for line in included.iter().chain(&after) {
        assert!(bind.contains(line), "{line} not in BIND's {bind:?}");
    }
}

#[test]
fn txt_strings_keep_bytes_that_are_not_utf8() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils"), ("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("example.zone");
    let mut text =
        b"$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n".to_vec();
    // Latin-1, UTF-8, a tab inside quotes, an escaped Latin-1 byte, a Latin-1 owner.
    text.extend_from_slice(b"txt TXT \"caf\xe9\" \"caf\xc3\xa9\" \"a\tb\" \\\xe9\n");
    text.extend_from_slice(b"caf\xe9 A 192.0.2.9\n");
    std::fs::write(&zone, &text).unwrap();
    let (_ours, port) = serve(&s(&zone));
    // knotd refuses the file ("invalid text character"); BIND takes it as nsd does.
    let nsd = Witness::start("nsd", "example.", &zone);
    let answers = same_answers(
        port,
        &[("nsd", nsd.port)],
        &[("txt.example.", "TXT"), ("caf\\233.example.", "A")],
    );
    assert_eq!(
        answers,
        [
            "txt.example. 60 IN TXT \"caf\\233\" \"caf\\195\\169\" \"a\\009b\" \"\\233\"",
            "caf\\233.example. 60 IN A 192.0.2.9"
        ]
    );
}

#[test]
fn a_zone_without_origin_is_served_with_the_origin_given() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils"), ("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("relative.zone");
    std::fs::write(
        &zone,
        "$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww CNAME @\n",
    )
    .unwrap();
    let (_ours, port) = serve(&format!("{}@example.org", s(&zone)));
    let nsd = Witness::start("nsd", "example.org.", &zone);
    let answers = same_answers(
        port,
        &[("nsd", nsd.port)],
        &[
            ("example.org.", "NS"),
            ("ns.example.org.", "A"),
            ("www.example.org.", "CNAME"),
        ],
    );
    assert_eq!(answers[0], "example.org. 300 IN NS ns.example.org.");
    // Without it, the file is refused, saying how to give it.
    let out = binary::ldplayer_fails(&["serve", "--listen", "127.0.0.1:0", &s(&zone)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2:1: ", zone.display())) && err.contains("FILE@ORIGIN"),
        "{err}"
    );
}

#[test]
fn ttls_with_the_most_significant_bit_set_are_served_as_0_as_bind_loads_them() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("example.zone");
    std::fs::write(
        &zone,
        "$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n\
         a 2147483647 A 192.0.2.2\nb 2147483648 A 192.0.2.3\nc 4294967295 A 192.0.2.4\n",
    )
    .unwrap();
    let Some(bind) = bind_loads("example", &zone) else {
        return;
    };
    let (ours, port) = serve(&s(&zone));
    for name in ["a.example.", "b.example.", "c.example."] {
        let mine = answer(port, name, "A");
        assert_eq!(mine.len(), 1, "{name}: {mine:?}");
        assert!(
            bind.contains(&mine[0]),
            "{} not in BIND's {bind:?}",
            mine[0]
        );
    }
    assert_eq!(
        answer(port, "b.example.", "A"),
        ["b.example. 0 IN A 192.0.2.3"]
    );
    let said = ours.stderr();
    for line in [7, 8] {
        assert!(
            said.contains(&format!(
                "ldplayer: warning: {}:{line}:3: TTL ",
                zone.display()
            )) && said.contains("taken as 0 (RFC 2181 §8"),
            "{said}"
        );
    }
}
