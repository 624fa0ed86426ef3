//! DNS inside tunnels, as tshark finds it: real captures (from the shared data) whose frames are
//! put inside VXLAN, Geneve, GRE (IP and Ethernet inside) and IP in IP give the same messages as
//! the captures themselves, and `inspect` counts the packets taken out of each kind of tunnel.
//! tshark is the witness that the wrapped captures are what they claim: it reads the same DNS
//! messages out of each as out of the original.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::prerequisite::{shared_file, tools};
use std::path::Path;
use std::process::Command;

/// One frame of a legacy pcap file.
struct Frame {
    sec: u32,
    usec: u32,
    data: Vec<u8>,
}

/// The frames of a legacy pcap file (either byte order, microseconds) and its link type.
fn read_pcap(path: &Path) -> (u32, Vec<Frame>) {
    let bytes = std::fs::read(path).expect("read the capture");
    let magic = u32::from_le_bytes(bytes[0..4].try_into().expect("magic"));
    let le = match magic {
        0xa1b2_c3d4 => true,
        0xd4c3_b2a1 => false,
        other => panic!("{}: not a microsecond pcap ({other:#x})", path.display()),
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().expect("4 bytes");
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let link = u32_at(20);
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let caplen = u32_at(at + 8) as usize;
        frames.push(Frame {
            sec: u32_at(at),
            usec: u32_at(at + 4),
            data: bytes[at + 16..at + 16 + caplen].to_vec(),
        });
        at += 16 + caplen;
    }
    (link, frames)
}

/// Writes Ethernet frames as a little-endian microsecond pcap.
fn write_pcap(path: &Path, frames: &[Frame]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for f in frames {
        for v in [f.sec, f.usec, f.data.len() as u32, f.data.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&f.data);
    }
    std::fs::write(path, out).expect("write the capture");
}

/// The kinds of tunnel, as `inspect` names them, and how each wraps an Ethernet frame.
#[derive(Clone, Copy, Debug)]
enum Wrap {
    Vxlan,
    Geneve,
    GreIp,
    GreEthernet,
    IpInIp,
}

impl Wrap {
    fn name(self) -> &'static str {
        match self {
            Wrap::Vxlan => "vxlan",
            Wrap::Geneve => "geneve",
            Wrap::GreIp | Wrap::GreEthernet => "gre",
            Wrap::IpInIp => "ipip",
        }
    }
}

/// The IP packet of an Ethernet frame and its ethertype; `None` for another protocol (ARP).
fn ip_of(frame: &[u8]) -> Option<(u16, &[u8])> {
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    (ethertype == 0x0800 || ethertype == 0x86dd).then(|| (ethertype, &frame[14..]))
}

/// An Ethernet frame carrying an IPv4 packet from 192.0.2.1 to 192.0.2.2 of `proto` with
/// `payload`, with its header checksum.
fn outer_ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
    let sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(payload);
    f
}

/// UDP from port 54321 to `port` (no checksum, as tunnels send it).
fn udp(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = 54321u16.to_be_bytes().to_vec();
    u.extend_from_slice(&port.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

/// `frame` inside a tunnel of `kind`; `None` when the tunnel carries IP and the frame is not.
fn wrap(kind: Wrap, frame: &[u8]) -> Option<Vec<u8>> {
    Some(match kind {
        Wrap::Vxlan => {
            let mut p = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
            p.extend_from_slice(frame);
            outer_ipv4(17, &udp(4789, &p))
        }
        Wrap::Geneve => {
            // One option of one word (class 0x0102, type 0x80, length 1).
            let mut p = vec![
                0x02, 0, 0x65, 0x58, 0, 0, 7, 0, 0x01, 0x02, 0x80, 0x01, 1, 2, 3, 4,
            ];
            p.extend_from_slice(frame);
            outer_ipv4(17, &udp(6081, &p))
        }
        Wrap::GreIp => {
            let (ethertype, ip) = ip_of(frame)?;
            // Key present.
            let mut p = vec![0x20, 0];
            p.extend_from_slice(&ethertype.to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, 9]);
            p.extend_from_slice(ip);
            outer_ipv4(47, &p)
        }
        Wrap::GreEthernet => {
            // Checksum present (not checked by readers: zero).
            let mut p = vec![0x80, 0, 0x65, 0x58, 0, 0, 0, 0];
            p.extend_from_slice(frame);
            outer_ipv4(47, &p)
        }
        Wrap::IpInIp => {
            let (ethertype, ip) = ip_of(frame)?;
            outer_ipv4(if ethertype == 0x0800 { 4 } else { 41 }, ip)
        }
    })
}

/// tshark's DNS query names, frame by frame.
fn tshark_names(path: &Path) -> Vec<String> {
    let out = Command::new("tshark")
        .args([
            "-n",
            "-r",
            &s(path),
            "-Y",
            "dns",
            "-T",
            "fields",
            "-e",
            "dns.qry.name",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// ldplayer's records of a capture as text lines.
fn records(path: &Path, scratch: &Path) -> Vec<String> {
    let text = scratch.join("records.txt");
    let _ = std::fs::remove_file(&text);
    ldplayer(&["convert", &s(path), "--to", "text", "-o", &s(&text), "-q"]);
    std::fs::read_to_string(&text)
        .expect("text")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("time\t"))
        .map(String::from)
        .collect()
}

#[test]
fn dns_inside_vxlan_geneve_gre_and_ip_in_ip_is_read_as_tshark_reads_it() {
    if !tools(&[("tshark", "tshark")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    for name in [
        "dnscap_dns.pcap",
        "dnscap_dns6.pcap",
        "dnscap_dnso1tcp.pcap",
    ] {
        let Some(original) = shared_file(&format!("pcap/{name}")) else {
            return;
        };
        let (link, frames) = read_pcap(&original);
        assert_eq!(link, 1, "{name}: Ethernet");
        let want_names = tshark_names(&original);
        let want = records(&original, dir.path());
        assert!(!want.is_empty(), "{name}: DNS in the original");
        for kind in [
            Wrap::Vxlan,
            Wrap::Geneve,
            Wrap::GreIp,
            Wrap::GreEthernet,
            Wrap::IpInIp,
        ] {
            let wrapped: Vec<Frame> = frames
                .iter()
                .filter_map(|f| {
                    Some(Frame {
                        sec: f.sec,
                        usec: f.usec,
                        data: wrap(kind, &f.data)?,
                    })
                })
                .collect();
            let path = dir.path().join(format!("{kind:?}-{name}"));
            write_pcap(&path, &wrapped);
            assert_eq!(
                tshark_names(&path),
                want_names,
                "{name} in {kind:?}: tshark reads the DNS of the original"
            );
            assert_eq!(
                records(&path, dir.path()),
                want,
                "{name} in {kind:?}: the same messages as the original"
            );
            let out = ldplayer(&["inspect", &s(&path), "--json"]);
            let summary: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("inspect --json");
            assert_eq!(
                summary["tunnels"][kind.name()],
                wrapped.len() as u64,
                "{name} in {kind:?}: every packet counted as taken out of its tunnel: {summary}"
            );
            let text = String::from_utf8(ldplayer(&["inspect", &s(&path)]).stdout).expect("utf-8");
            assert!(
                text.contains(&format!("{} {} packets", kind.name(), wrapped.len())),
                "{text}"
            );
        }
    }
}
