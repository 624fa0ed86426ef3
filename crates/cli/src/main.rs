//! `ldplayer`: DNS experimentation at scale.
//!
//! This crate is the thin command-line layer: it parses arguments, opens inputs and outputs,
//! connects the library crates (trace formats, capture reader, synthesizer, mutator, inspector)
//! and prints summaries. Everything it does is available from those crates.

mod args;
mod cmd;
mod io;
mod port_hint;
mod progress;

use clap::Parser;

fn main() {
    let args = args::Cli::parse();
    let result = match args.command {
        args::Command::Convert(a) => cmd::convert::run(a),
        args::Command::Inspect(a) => cmd::inspect::run(a),
        args::Command::Synth(a) => cmd::synth::run(a),
        args::Command::Mutate(a) => cmd::mutate::run(a),
        args::Command::Replay(a) => cmd::replay::run(a),
        args::Command::Results(c) => cmd::results::run(c),
        args::Command::Zones(c) => cmd::zones::run(c),
        args::Command::Lab(a) => cmd::lab::run(a),
        args::Command::Serve(a) => cmd::serve::run(a),
        args::Command::Demo(a) => cmd::demo::run(a),
    };
    if let Err(e) = result {
        eprintln!("ldplayer: {e:#}");
        std::process::exit(1);
    }
}
