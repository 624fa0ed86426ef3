//! TUN devices: raw IP packets in and out of the kernel through a file descriptor, created in
//! the caller's network namespace and movable into another one (the descriptor stays valid).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Command, Stdio};

use crate::LinkError;

/// The TUN clone device.
const CLONE_DEVICE: &CStr = c"/dev/net/tun";

/// A TUN device (`IFF_TUN | IFF_NO_PI`: each read or write is one whole IP packet, IPv4 or
/// IPv6, without a header) owned through its file descriptor: it is not persistent, so it
/// vanishes, wherever it has been moved, when the `Tun` is dropped. Reads and writes do not
/// block.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates the device `name` (at most 15 bytes; the kernel's `%d` pattern is allowed) in the
    /// calling thread's network namespace. It starts down and without addresses: configure it
    /// with iproute2 where it ends up.
    pub fn create(name: &str) -> Result<Tun, LinkError> {
        let bad_name = |why: &str| LinkError::InvalidName(name.to_string(), why.to_string());
        if name.is_empty() {
            return Err(bad_name("empty"));
        }
        if name.len() >= libc::IFNAMSIZ {
            return Err(bad_name("longer than 15 bytes"));
        }
        if name
            .bytes()
            .any(|b| b == 0 || b == b'/' || b.is_ascii_whitespace())
        {
            return Err(bad_name("contains a NUL, a slash or white space"));
        }
        // SAFETY: a valid C string, flags without pointers; the result is checked.
        let raw = unsafe {
            libc::open(
                CLONE_DEVICE.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(LinkError::Os(
                "open /dev/net/tun",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `raw` is a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain data, valid when zeroed.
        let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
        for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
            *slot = byte as libc::c_char;
        }
        // The flags fit a c_short (IFF_TUN 0x1, IFF_NO_PI 0x1000).
        request.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one ifreq, which lives across the call.
        let set = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut request) };
        if set < 0 {
            return Err(LinkError::Os("TUNSETIFF", io::Error::last_os_error()));
        }
        // The kernel writes back the name it chose (it differs when `name` had `%d`).
        let chosen: Vec<u8> = request
            .ifr_name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Ok(Tun {
            fd,
            name: String::from_utf8_lossy(&chosen).into_owned(),
        })
    }

    /// The device's name, as the kernel gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves the device into the network namespace of process `pid` (`ip link set NAME netns
    /// PID`, iproute2). The device must be in the calling thread's namespace; its descriptor
    /// keeps working here. Should that namespace end first, the kernel deletes the device and
    /// the descriptor reports an error from then on (a running link's direction reading it
    /// ends, see [`RunningLink::stop_checked`](crate::RunningLink::stop_checked)).
    pub fn move_to_netns_of(&self, pid: u32) -> Result<(), LinkError> {
        let pid = pid.to_string();
        let args = ["link", "set", self.name.as_str(), "netns", pid.as_str()];
        let out = Command::new("ip")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| LinkError::Spawn("ip (apt-get install iproute2)", e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LinkError::Command {
                command: format!("ip {}", args.join(" ")),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// Reads one packet into `buf`, returning its length; `WouldBlock` when none is waiting. A
    /// packet longer than `buf` is truncated by the kernel.
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: the buffer is valid for writes of its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }

    /// Writes one packet.
    pub(crate) fn write(&self, packet: &[u8]) -> io::Result<usize> {
        // SAFETY: the buffer is valid for reads of its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_would_refuse_are_refused_before_any_system_call() {
        for name in ["", "sixteen-bytes-xx", "a/b", "a b", "nul\0"] {
            assert!(
                matches!(Tun::create(name), Err(LinkError::InvalidName(..))),
                "{name:?}"
            );
        }
    }
}
