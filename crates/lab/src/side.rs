//! The lab's server side in a program of one's own: [`run_side_if_asked`], first thing in
//! `main`, runs it when [`ResolverSide::start`](crate::ResolverSide::start) started this program
//! as the server side, so that any binary that drives a lab works as its server side too.

use crate::{LabError, ServerSideConfig};
use ldplayer_server::ServerStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs the lab's server side when this process was started as one (its configuration named
/// by [`crate::SERVER_SIDE_ENV`]), until the resolver side interrupts it, and says whether it
/// did: call it first thing in `main` and return when it says `true`. The meta-server's
/// counters go to `report` at the end (nsd has none).
///
/// A `false` means this process is not a server side: nothing was done.
pub fn run_side_if_asked(report: impl FnOnce(&ServerStats)) -> Result<bool, LabError> {
    let Some(config) = ServerSideConfig::from_env() else {
        return Ok(false);
    };
    run_server_side(&config?, report)?;
    Ok(true)
}

/// Runs the server side of `config` in this process until Ctrl-C, SIGTERM or SIGHUP (the
/// resolver side interrupts its server side so), then hands the meta-server's counters to
/// `report`.
///
/// It installs this process's handler for those signals; where one is already installed, the
/// side stops when the process does.
pub fn run_server_side(
    config: &ServerSideConfig,
    report: impl FnOnce(&ServerStats),
) -> Result<(), LabError> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Failing to install the handler only means the signals end the process as usual.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    if let Some(stats) = config.run(&stop)? {
        report(&stats);
    }
    Ok(())
}
