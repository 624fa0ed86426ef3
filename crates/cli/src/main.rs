//! `ldplayer`: DNS experimentation at scale.
//!
//! This crate is the thin command-line layer: it parses arguments, opens inputs and outputs,
//! connects the library crates (trace formats, capture reader, synthesizer, mutator, inspector)
//! and prints summaries. Everything it does is available from those crates.

mod args;
mod cmd;
mod guard;
mod io;
mod progress;
mod values;

use clap::Parser;

fn main() {
    restore_sigpipe();
    // The lab's server side: the lab starts this program again in a namespace of its own and
    // says so in the environment, not on the command line.
    if let Some(config) = ldplayer_lab::ServerSideConfig::from_env() {
        exit_on_error(
            config
                .map_err(anyhow::Error::from)
                .and_then(|c| cmd::lab::server_side(&c)),
        );
        return;
    }
    // A side of an experiment's run: started again in the run's namespaces, told so in the
    // environment.
    if let Some(config) = ldplayer_experiment::SideConfig::from_env() {
        exit_on_error(
            config
                .map_err(anyhow::Error::from)
                .and_then(cmd::experiment::side),
        );
        return;
    }
    let args = args::Cli::parse();
    exit_on_error(guard::claim(&args.command));
    let result = match args.command {
        args::Command::Convert(a) => cmd::convert::run(a),
        args::Command::Inspect(a) => cmd::inspect::run(a),
        args::Command::Synth(a) => cmd::synth::run(a),
        args::Command::Mutate(a) => cmd::mutate::run(a),
        args::Command::Replay(a) => cmd::replay::run(a),
        args::Command::Results(c) => cmd::results::run(c),
        args::Command::Zones(c) => cmd::zones::run(c),
        args::Command::Lab(a) => cmd::lab::run(a),
        args::Command::Experiment(a) => cmd::experiment::run(a),
        args::Command::Report(a) => cmd::report::run(a),
        args::Command::Serve(a) => cmd::serve::run(a),
        args::Command::Demo(a) => cmd::demo::run(a),
        args::Command::Compare(a) => cmd::compare::run(a),
        args::Command::Population(c) => cmd::population::run(c),
    };
    exit_on_error(result);
}

/// Reports an error and exits with status 1.
fn exit_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("ldplayer: {e:#}");
        std::process::exit(1);
    }
}

/// Lets a closed pipe end the process quietly, as it does `cat` or `awk`: `ldplayer results
/// export run.res --csv | head` used to panic ("failed printing to stdout: Broken pipe") because
/// Rust programs ignore SIGPIPE. Sockets are unaffected: the standard library writes to them with
/// MSG_NOSIGNAL, and UDP never raises it.
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread starts; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
