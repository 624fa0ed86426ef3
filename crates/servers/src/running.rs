//! A started server, whichever kind: what it is (version, command, files), where it answers,
//! and how it is stopped, explicitly or on drop, so that an experiment interrupted by an error
//! leaves no server behind.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;

use ldplayer_server::ServerStats;

use crate::{process, ServerError, ServerKind, TlsFiles};

/// A server that answers; stopped by [`stop`](Self::stop) or when dropped.
#[derive(Debug)]
pub struct RunningServer {
    pub(crate) kind: ServerKind,
    pub(crate) version: String,
    pub(crate) log: PathBuf,
    pub(crate) config: Option<PathBuf>,
    pub(crate) command: String,
    pub(crate) tls: Option<TlsFiles>,
    pub(crate) addr: SocketAddr,
    pub(crate) tls_addr: Option<SocketAddr>,
    pub(crate) https_addr: Option<SocketAddr>,
    pub(crate) quic_addr: Option<SocketAddr>,
    pub(crate) tcp_clients: usize,
    pub(crate) process: Process,
}

/// What runs the server.
#[derive(Debug)]
pub(crate) enum Process {
    /// A program started by this crate.
    External(Child),
    /// ldplayer's server in this process.
    Embedded(ldplayer_server::RunningServer),
    /// Already stopped.
    Stopped,
}

impl RunningServer {
    /// The server's main process, for measuring it (its children, such as NSD's workers, are in
    /// the process group of the same id); `None` for the embedded server, which is this
    /// process.
    pub fn pid(&self) -> Option<u32> {
        match &self.process {
            Process::External(child) => Some(child.id()),
            _ => None,
        }
    }

    /// Which server it is.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// Its version, as the program reports it (`NSD version 4.6.1`, `BIND 9.18.…`, `ldplayer
    /// 0.1.0`), for the experiment's record of its environment.
    pub fn version(&self) -> String {
        self.version.clone()
    }

    /// Its log (`server.log` in the work directory): the program's standard output and error,
    /// or the embedded server's start and stop lines.
    pub fn log_path(&self) -> Option<&Path> {
        Some(&self.log)
    }

    /// The configuration file written for it (none for the embedded server).
    pub fn config_path(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// The command line that started it (`in process` for the embedded server).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The certificate it serves DNS over TLS, HTTPS and QUIC with (made for it when the setup
    /// gave none); clients trust its `ca`.
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// Where it answers plain DNS (the first listen address and the port), as probed.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }

    /// Where it answers DNS over TLS, when it does.
    pub fn tls_address(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// Where it answers DNS over HTTPS (path `/dns-query`), when it does.
    pub fn https_address(&self) -> Option<SocketAddr> {
        self.https_addr
    }

    /// Where it answers DNS over QUIC (a UDP port), when it does.
    pub fn quic_address(&self) -> Option<SocketAddr> {
        self.quic_addr
    }

    /// The TCP connections it was configured to hold: [`ServerSetup::max_tcp_clients`], or
    /// fewer when the file descriptor limit it could get is lower (said in its log too).
    ///
    /// [`ServerSetup::max_tcp_clients`]: crate::ServerSetup::max_tcp_clients
    pub fn max_tcp_clients(&self) -> usize {
        self.tcp_clients
    }

    /// The embedded server's counters so far (queries, responses, connections); `None` for
    /// external servers.
    pub fn embedded_stats(&self) -> Option<ServerStats> {
        match &self.process {
            Process::Embedded(server) => Some(server.stats()),
            _ => None,
        }
    }

    /// Stops the server: SIGTERM, a few seconds' grace, then SIGKILL for the main process and
    /// everything it forked; the embedded server's threads are joined and its counters logged.
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<(), ServerError> {
        match std::mem::replace(&mut self.process, Process::Stopped) {
            Process::External(mut child) => process::stop(self.kind, &mut child),
            Process::Embedded(server) => {
                let stats = server.stop();
                let line = format!(
                    "ldplayer stopped: {} UDP and {} TCP queries, {} responses, {} TCP \
                     connections accepted ({} closed idle)\n",
                    stats.udp_queries,
                    stats.tcp_queries,
                    stats.responses,
                    stats.tcp_accepted,
                    stats.tcp_idle_closed
                );
                crate::embedded::append_to(&self.log, &line);
                Ok(())
            }
            Process::Stopped => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            eprintln!("{e}");
        }
    }
}
