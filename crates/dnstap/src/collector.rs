//! A dnstap collector: listens on a Unix or TCP socket, as `fstrm_capture` does, speaks the
//! bi-directional Frame Streams handshake with every server that connects (or takes a
//! uni-directional stream), and hands on each data frame as it arrives.
//!
//! Each connection has a thread of its own; frames go to the consumer through a bounded
//! channel (a slow consumer slows the writers down, as a socket would, instead of growing
//! memory). A connection ends with its `STOP` (answered by `FINISH`), by the writer going away
//! (every whole frame before is kept, a frame cut short is reported with its bytes), or when
//! the collector is stopped (each connection ends at its next frame boundary or read timeout).

use crate::fstrm::handshake::{self, HandshakeError, Mode};
use crate::fstrm::{ControlType, Frame, FrameError, FrameReader, DNSTAP_CONTENT_TYPE};
use bytes::Bytes;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often waiting threads look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// How long a writer has for its handshake.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

/// Frames waiting for the consumer, at most.
const QUEUE: usize = 16 * 1024;

/// Where a collector listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A Unix socket at this path (what Unbound's `dnstap-socket-path`, BIND's
    /// `dnstap-output unix` and Knot's `sink` name).
    Unix(PathBuf),
    /// A TCP address (Unbound's `dnstap-ip`, dnsdist's `newFrameStreamTcpLogger`).
    Tcp(SocketAddr),
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
            Listen::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// What happens on a collector's connections, in the order it happens on each.
#[derive(Debug)]
pub enum Event {
    /// A writer connected and finished its handshake.
    Connected {
        /// The connection's number, from 1.
        id: u64,
        /// Who it is (a TCP address; Unix peers have none).
        peer: String,
        /// How it opened its stream.
        mode: Mode,
    },
    /// A data frame (one dnstap message) of connection `id`.
    Frame {
        /// The connection.
        id: u64,
        /// The frame.
        data: Bytes,
    },
    /// A connection ended.
    Closed {
        /// The connection.
        id: u64,
        /// How.
        ending: Ending,
    },
}

/// How a connection ended.
#[derive(Debug)]
pub enum Ending {
    /// With `STOP` (answered with `FINISH` on a bi-directional stream).
    Stopped,
    /// The writer went away between frames, without `STOP`.
    Disconnected,
    /// The writer went away inside a frame, or the collector was stopped while one was coming:
    /// that frame is lost; `bytes` of it had arrived.
    CutFrame {
        /// The bytes of the frame that had arrived.
        bytes: usize,
    },
    /// The collector was stopped between frames.
    Interrupted,
    /// The handshake failed (another content type, not Frame Streams): nothing was taken.
    Refused(HandshakeError),
    /// Reading failed, or the stream lost its framing (the frames before were handed on).
    Failed(FrameError),
}

/// A socket of either kind.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }
    fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
        }
    }
    fn set_blocking(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(false),
            Stream::Tcp(s) => s.set_nonblocking(false),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

/// A bound collector, ready to [`Collector::run`].
pub struct Collector {
    listener: Listener,
}

/// Why a collector could not listen.
#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    /// Binding failed.
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        /// Where.
        listen: Listen,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A Unix socket path is taken by a live socket, or by a file that is no socket.
    #[error("cannot listen on {}: {why}", .path.display())]
    PathTaken {
        /// The path.
        path: PathBuf,
        /// What is there.
        why: &'static str,
    },
}

/// Frees a Unix socket path left by a collector that is gone: refuses a file that is no
/// socket, and a socket someone still listens on.
fn free_socket_path(path: &Path) -> Result<(), CollectorError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let taken = |why| CollectorError::PathTaken {
        path: path.to_path_buf(),
        why,
    };
    if !meta.file_type().is_socket() {
        return Err(taken("a file that is not a socket is there"));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(taken("another program listens there"));
    }
    std::fs::remove_file(path).map_err(|source| CollectorError::Bind {
        listen: Listen::Unix(path.to_path_buf()),
        source,
    })
}

impl Collector {
    /// Listens on `listen`. A Unix socket left by a collector that is gone is replaced.
    pub fn bind(listen: &Listen) -> Result<Collector, CollectorError> {
        let bind = |source| CollectorError::Bind {
            listen: listen.clone(),
            source,
        };
        let listener = match listen {
            Listen::Unix(path) => {
                free_socket_path(path)?;
                let l = UnixListener::bind(path).map_err(bind)?;
                l.set_nonblocking(true).map_err(bind)?;
                Listener::Unix(l, path.clone())
            }
            Listen::Tcp(addr) => {
                let l = TcpListener::bind(addr).map_err(bind)?;
                l.set_nonblocking(true).map_err(bind)?;
                Listener::Tcp(l)
            }
        };
        Ok(Collector { listener })
    }

    /// Where it listens (a TCP port of 0 is the one given).
    pub fn local(&self) -> Listen {
        match &self.listener {
            Listener::Unix(_, p) => Listen::Unix(p.clone()),
            Listener::Tcp(l) => Listen::Tcp(
                l.local_addr()
                    .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            ),
        }
    }

    /// Accepts writers until `stop` is set, in a thread of its own; the events of every
    /// connection come out of the returned channel, which ends once `stop` is set and every
    /// connection has ended.
    pub fn run(self, stop: Arc<AtomicBool>) -> Receiver<Event> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        std::thread::spawn(move || self.accept_loop(&stop, tx));
        rx
    }

    fn accept(&self) -> io::Result<Option<(Stream, String)>> {
        let accepted = match &self.listener {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| (Stream::Unix(s), String::new())),
            Listener::Tcp(l) => l.accept().map(|(s, a)| (Stream::Tcp(s), a.to_string())),
        };
        match accepted {
            Ok(a) => Ok(Some(a)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn accept_loop(self, stop: &Arc<AtomicBool>, tx: SyncSender<Event>) {
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let mut next_id = 0;
        while !stop.load(Ordering::Relaxed) {
            match self.accept() {
                Ok(Some((stream, peer))) => {
                    next_id += 1;
                    let (id, tx, stop) = (next_id, tx.clone(), stop.clone());
                    threads.push(std::thread::spawn(move || {
                        let ending = connection(stream, id, peer, &tx, &stop);
                        let _ = tx.send(Event::Closed { id, ending });
                    }));
                    threads.retain(|t| !t.is_finished());
                }
                // Out of descriptors and the like: wait and try again.
                Ok(None) | Err(_) => std::thread::sleep(POLL / 4),
            }
        }
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = &self.listener {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One writer's connection, to its end.
fn connection(
    stream: Stream,
    id: u64,
    peer: String,
    tx: &SyncSender<Event>,
    stop: &AtomicBool,
) -> Ending {
    let setup = stream
        .set_blocking()
        .and_then(|()| stream.set_read_timeout(HANDSHAKE_WAIT))
        .and_then(|()| stream.try_clone());
    let mut out = match setup {
        Ok(out) => out,
        Err(e) => return Ending::Failed(FrameError::Io(e)),
    };
    let mut frames = FrameReader::new(stream);
    let mode = match handshake::accept(&mut frames, &mut out, DNSTAP_CONTENT_TYPE) {
        Ok(mode) => mode,
        Err(e) => return Ending::Refused(e),
    };
    if let Err(e) = frames.get_ref().set_read_timeout(POLL) {
        return Ending::Failed(FrameError::Io(e));
    }
    if tx.send(Event::Connected { id, peer, mode }).is_err() {
        return Ending::Interrupted;
    }
    loop {
        match frames.next_frame() {
            Ok(Some(Frame::Data(data))) => {
                if tx.send(Event::Frame { id, data }).is_err() {
                    return Ending::Interrupted;
                }
            }
            Ok(Some(Frame::Control(c))) if c.kind == ControlType::Stop => {
                if mode == Mode::Bidirectional {
                    let _ = handshake::finish(&mut out);
                }
                return Ending::Stopped;
            }
            Ok(Some(Frame::Control(_))) | Err(FrameError::BadControl { .. }) => {}
            Ok(None) => return Ending::Disconnected,
            Err(FrameError::Truncated { have, .. }) => return Ending::CutFrame { bytes: have },
            Err(e) if !e.is_final() => {
                if stop.load(Ordering::Relaxed) {
                    return match frames.pending() {
                        0 => Ending::Interrupted,
                        bytes => Ending::CutFrame { bytes },
                    };
                }
            }
            Err(e) => return Ending::Failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fstrm::FrameWriter;

    fn collect(rx: Receiver<Event>) -> Vec<Event> {
        rx.into_iter().collect()
    }

    #[test]
    fn takes_frames_from_bidirectional_and_unidirectional_writers_and_cut_ones() {
        let dir = std::env::temp_dir().join(format!("ldplayer-dnstap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("c.sock");
        let collector = Collector::bind(&Listen::Unix(path.clone())).expect("bind");
        let stop = Arc::new(AtomicBool::new(false));
        let rx = collector.run(stop.clone());

        // A bi-directional writer: READY, START, two frames, STOP, and it waits for FINISH.
        let s = UnixStream::connect(&path).expect("connect");
        let mut reader = FrameReader::new(s.try_clone().expect("clone"));
        let mut out = s;
        handshake::connect(&mut reader, &mut out, DNSTAP_CONTENT_TYPE).expect("handshake");
        out.write_all(b"\0\0\0\x03one\0\0\0\x03two")
            .expect("frames");
        handshake::stop(&mut reader, &mut out).expect("FINISH came");

        // A uni-directional one: START, a frame, STOP.
        let s = UnixStream::connect(&path).expect("connect");
        let mut w = FrameWriter::new(s, DNSTAP_CONTENT_TYPE).expect("start");
        w.write_frame(b"three").expect("frame");
        w.finish().expect("stop");
        // Another that goes away inside its second frame.
        let mut cut = UnixStream::connect(&path).expect("connect");
        cut.write_all(
            &crate::fstrm::Control::new(ControlType::Start, &[DNSTAP_CONTENT_TYPE]).encode(),
        )
        .expect("start");
        cut.write_all(b"\0\0\0\x04four\0\0\0\x09nin")
            .expect("frames");
        drop(cut);

        // Another content type is refused.
        let s = UnixStream::connect(&path).expect("connect");
        let mut reader = FrameReader::new(s.try_clone().expect("clone"));
        let mut out = s;
        assert!(handshake::connect(&mut reader, &mut out, b"protobuf:x").is_err());

        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        let events = collect(rx);
        let data: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Frame { data, .. } => Some(String::from_utf8_lossy(data).into_owned()),
                _ => None,
            })
            .collect();
        // Frames keep their order within a connection; connections run side by side.
        let mut data = data;
        data.sort();
        assert_eq!(data, ["four", "one", "three", "two"]);
        let endings: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Closed { ending, .. } => Some(format!("{ending:?}")),
                _ => None,
            })
            .collect();
        assert_eq!(endings.len(), 4, "{endings:?}");
        assert!(
            endings.iter().filter(|e| *e == "Stopped").count() == 2,
            "{endings:?}"
        );
        assert!(
            endings.iter().any(|e| e == "CutFrame { bytes: 7 }"),
            "{endings:?}"
        );
        assert!(
            endings.iter().any(|e| e.starts_with("Refused")),
            "{endings:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
