//! A replay through a real recursive resolver in the lab, in a few library calls: the hierarchy
//! of a manifest served by ldplayer's meta-server in one network namespace, unbound in another,
//! and a text or binary trace replayed at unbound with the trace's timing.
//!
//! `cargo run -p ldplayer-lab --example replay_through_resolver -- MANIFEST TRACE.bin`
//! (as root, or where unprivileged user namespaces are allowed). The manifest's paths and the
//! trace must be absolute or relative to the current directory.
//!
//! One executable plays all three parts: on the host it re-runs itself in a new namespace (the
//! resolver side, which it recognizes by [`ldplayer_lab::is_resolver_side`]); there, the lab
//! starts it once more as the server side, which [`ldplayer_lab::run_side_if_asked`] runs
//! first thing in `main`. For brevity Ctrl-C is not handled on the host: the `ldplayer lab`
//! command shows how a signal handler stops every part in order.

use ldplayer_lab::{LabConfig, NameserverKind, ResolverKind, ResolverSide};
use ldplayer_replay::{Replay, ReplayConfig};
use ldplayer_results::Summary;
use ldplayer_trace::{binary::MappedTrace, Proto};
use std::error::Error;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

fn main() -> Result<(), Box<dyn Error>> {
    // The server side: this program started again by the lab, until the resolver side
    // interrupts it.
    if ldplayer_lab::run_side_if_asked(|stats| eprintln!("meta-server: {stats:?}"))? {
        return Ok(());
    }
    // Nothing sets it here: the host waits for the lab to end.
    let stop = AtomicBool::new(false);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let exe = std::env::current_exe()?;
    if !ldplayer_lab::is_resolver_side() {
        let status = ldplayer_lab::launch(&exe, &args, &stop)?;
        return if status.success() {
            Ok(())
        } else {
            Err(format!("the lab failed ({status})").into())
        };
    }
    let [manifest, trace] = &args[..] else {
        return Err("usage: replay_through_resolver MANIFEST TRACE.bin".into());
    };

    let work_dir = tempfile::tempdir()?;
    let lab = ResolverSide::start(
        &LabConfig {
            manifest: std::path::absolute(manifest)?,
            nameservers: NameserverKind::Meta,
            hints: None,
            resolver: ResolverKind::Unbound,
            capture: None,
            dnstap: None,
            work_dir: work_dir.path().to_path_buf(),
            encrypted: false,
            validation: None,
        },
        &exe,
    )?;
    let config = ReplayConfig {
        proto_override: Some(Proto::Udp),
        ..ldplayer_lab::workload::replay_config(&lab)
    };
    let mut source = MappedTrace::open(&PathBuf::from(trace))?;
    let done = Replay::new(config)?.run(&mut source, Summary::new())?;
    lab.finish();

    print!("{}", done.results.report());
    println!("engine: {}", serde_json::to_string(&done.stats)?);
    Ok(())
}
