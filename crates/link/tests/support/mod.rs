//! Two network namespaces joined only by the link emulator, for the integration tests and the
//! bench: `ns_a` (10.99.0.1, fd99::1) and `ns_b` (10.99.0.2, fd99::2), each with one TUN
//! device routed point-to-point to the other, both devices driven by this process.

#![allow(dead_code)]

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldplayer_link::{Link, LinkParams, RunningLink, Timing, Tun};
use ldplayer_testbed::prerequisite::{effective_uid_is_root, netns, require, tool};

/// Side A's IPv4 address.
pub const A_V4: &str = "10.99.0.1";
/// Side B's IPv4 address.
pub const B_V4: &str = "10.99.0.2";
/// Side A's IPv6 address.
pub const A_V6: &str = "fd99::1";
/// Side B's IPv6 address.
pub const B_V6: &str = "fd99::2";

/// Root (TUN devices are made in the host namespace and moved), namespaces, iproute2,
/// nsenter and the TUN driver; false only when skipping is allowed.
pub fn prerequisites() -> bool {
    require(
        effective_uid_is_root(),
        "root (CAP_NET_ADMIN in the host namespace, to make TUN devices)",
        "run the tests as root",
    ) && netns()
        && tool("ip", "iproute2").is_some()
        && tool("nsenter", "util-linux").is_some()
        && require(
            std::path::Path::new("/dev/net/tun").exists(),
            "/dev/net/tun",
            "modprobe tun",
        )
}

/// A network namespace kept alive by a `sleep` made with `unshare -n`; killed when dropped.
pub struct Netns {
    child: Child,
}

impl Netns {
    /// A new, empty namespace (loopback up).
    pub fn new() -> Netns {
        let child = Command::new("unshare")
            .args(["-n", "sleep", "300"])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare (util-linux) runs");
        let ns = Netns { child };
        let mine = std::fs::read_link("/proc/self/ns/net").expect("own namespace");
        let start = Instant::now();
        while std::fs::read_link(format!("/proc/{}/ns/net", ns.pid())).ok() == Some(mine.clone()) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "unshare -n is stuck"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// The pid of the process holding the namespace.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `ip args` inside, panicking with its standard error on failure.
    pub fn ip(&self, args: &[&str]) {
        let out = self.ip_output(args);
        assert!(
            out.status.success(),
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `ip args` inside and returns what it did.
    pub fn ip_output(&self, args: &[&str]) -> std::process::Output {
        Command::new("nsenter")
            .args(["-t", &self.pid().to_string(), "-n", "ip"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("nsenter (util-linux) runs")
    }

    /// Runs `f` on a thread that has entered the namespace: a socket it makes stays in the
    /// namespace wherever it is used afterwards.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let ns = File::open(format!("/proc/{}/ns/net", self.pid())).expect("namespace file");
        std::thread::spawn(move || {
            // SAFETY: a valid namespace descriptor; only this thread changes namespace.
            let entered = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the thread in the namespace")
    }

    /// A UDP socket bound to `addr` inside the namespace.
    pub fn udp(&self, addr: SocketAddr) -> UdpSocket {
        self.run(move || UdpSocket::bind(addr).expect("bind in the namespace"))
    }
}

impl Netns {
    /// Ends the namespace now: its last process is killed.
    pub fn end(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One timing-sensitive test at a time: on a 2-core machine, tests measuring round trips in
/// parallel would measure each other. Hold the guard for the test's length.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The two sides and the link between them.
pub struct Testbed {
    /// Side A (clients).
    pub a: Netns,
    /// Side B (server).
    pub b: Netns,
    /// Side A's device name.
    pub tun_a: String,
    /// Side B's device name.
    pub tun_b: String,
}

/// Device names unique in this process (tests run in parallel), at most 15 bytes.
fn tun_names() -> (String, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tag = format!("{}{n}", std::process::id() % 100_000);
    (format!("lka{tag}"), format!("lkb{tag}"))
}

impl Testbed {
    /// Two namespaces and two TUN devices made here, moved in and addressed; not yet joined.
    pub fn new() -> (Testbed, Tun, Tun) {
        let (a, b) = (Netns::new(), Netns::new());
        let (name_a, name_b) = tun_names();
        let tun_a = Tun::create(&name_a).expect("TUN device a");
        let tun_b = Tun::create(&name_b).expect("TUN device b");
        tun_a.move_to_netns_of(a.pid()).expect("move a");
        tun_b.move_to_netns_of(b.pid()).expect("move b");
        for (ns, dev, (v4, peer4), (v6, peer6)) in [
            (&a, &name_a, (A_V4, B_V4), (A_V6, B_V6)),
            (&b, &name_b, (B_V4, A_V4), (B_V6, A_V6)),
        ] {
            ns.ip(&["addr", "add", v4, "peer", peer4, "dev", dev]);
            ns.ip(&["-6", "addr", "add", v6, "dev", dev, "nodad"]);
            // No link-local address, hence no IPv6 router solicitations of the kernel's own
            // through the link: a TUN device sends one (48 bytes) on coming up and again 4 s
            // later, and one still on the delay line when a test stops the link made its
            // counters show a packet read and not written (client_rtt, once in CI).
            ns.ip(&["link", "set", "dev", dev, "addrgenmode", "none"]);
            ns.ip(&["link", "set", dev, "up"]);
            // An IPv6 `peer` address would route the local address, not the peer's.
            ns.ip(&["-6", "route", "add", peer6, "dev", dev]);
        }
        let bed = Testbed {
            a,
            b,
            tun_a: tun_a.name().to_string(),
            tun_b: tun_b.name().to_string(),
        };
        (bed, tun_a, tun_b)
    }

    /// The testbed with the link running.
    pub fn linked(a_to_b: LinkParams, b_to_a: LinkParams, seed: u64) -> (Testbed, RunningLink) {
        Testbed::linked_with(a_to_b, b_to_a, seed, Timing::default())
    }

    /// The testbed with the link running, its threads waiting as `timing` says.
    pub fn linked_with(
        a_to_b: LinkParams,
        b_to_a: LinkParams,
        seed: u64,
        timing: Timing,
    ) -> (Testbed, RunningLink) {
        let (bed, tun_a, tun_b) = Testbed::new();
        let link =
            Link::start_with(tun_a, tun_b, a_to_b, b_to_a, seed, timing).expect("the link starts");
        (bed, link)
    }
}

/// An echo server in its own thread, answering until dropped.
pub struct Echo {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts an echo server on `socket`.
pub fn echo(socket: UdpSocket) -> Echo {
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stopped.load(Ordering::Relaxed) {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                let _ = socket.send_to(&buf[..n], from);
            }
        }
    });
    Echo {
        stop,
        thread: Some(thread),
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Makes the receive buffer of `socket` `bytes` large (as root, beyond `rmem_max`), so that a
/// flood is not lost in the receiving socket.
pub fn set_receive_buffer(socket: &UdpSocket, bytes: i32) {
    // SAFETY: a live socket, an int option of the right size.
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    assert_eq!(
        set,
        0,
        "SO_RCVBUFFORCE: {}",
        std::io::Error::last_os_error()
    );
}

/// `count` sequential round trips of a 32-byte datagram from `client` (connected), each
/// waiting at most a second; the round-trip times of those answered, sorted.
pub fn ping_pong(client: &UdpSocket, count: u32) -> Vec<Duration> {
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let mut rtts = Vec::with_capacity(count as usize);
    let mut buf = [0u8; 64];
    for i in 0..count {
        let payload = [i.to_be_bytes(), [0x5a; 4]].concat().repeat(4);
        let sent = Instant::now();
        client.send(&payload).expect("send");
        // Skip stale answers to an earlier, timed-out ping.
        while let Ok(n) = client.recv(&mut buf) {
            if buf[..n] == payload[..] {
                rtts.push(sent.elapsed());
                break;
            }
        }
    }
    rtts.sort();
    rtts
}

/// The `q` quantile of sorted durations.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    assert!(!sorted.is_empty(), "no samples");
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}
