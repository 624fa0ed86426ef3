//! Compressed outputs, written in frames that a reader can check one by one.
//!
//! The readers ([`crate::input`]) hold back a frame's records until the frame's checksum has
//! passed, up to a bound (16 MiB of records): a file written as one frame bigger than that
//! cannot be fully checked before its records are passed on. So what ldplayer writes is cut
//! into frames of [`FRAME_INPUT_BYTES`] of input, each with its own check: gzip members (CRC-32),
//! xz streams (CRC-64) and Zstandard frames with their content checksum (XXH64). Every tool
//! reads such files as one stream (`zcat`, `xzcat`, `zstdcat`). The cost: about 0.1% in size
//! for each format, at 4 MiB frames.

use std::io::{self, Write};
use std::path::Path;

use crate::input::Compression;

/// How much input goes into one frame: a quarter of the readers' hold, so a damaged frame's
/// records are never passed on before its check.
pub const FRAME_INPUT_BYTES: u64 = 4 << 20;

/// The file name suffixes that ask for a compression, in any case: the one place that knows
/// them (the readers recognise compressed input by its magic number instead).
const SUFFIXES: [(&str, Compression); 3] = [
    (".gz", Compression::Gzip),
    (".xz", Compression::Xz),
    (".zst", Compression::Zstd),
];

impl Compression {
    /// The compression a file name's suffix asks for (`.gz`, `.xz`, `.zst`), or none.
    pub fn from_name(path: &Path) -> Compression {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        Compression::split_suffix(&name).1
    }

    /// A file name without its compression suffix, and the compression that suffix asks for
    /// (`trace.pcap.gz` is `trace.pcap` and gzip): what is left names the format inside.
    pub fn split_suffix(name: &str) -> (&str, Compression) {
        SUFFIXES
            .iter()
            .find_map(|&(suffix, c)| {
                // A name that is only the suffix (`.gz`) is a hidden file, not a compressed one.
                let at = name.len().checked_sub(suffix.len()).filter(|&at| at > 0)?;
                let tail = name.get(at..)?;
                tail.eq_ignore_ascii_case(suffix).then(|| (&name[..at], c))
            })
            .unwrap_or((name, Compression::None))
    }
}

/// The encoder of one frame.
enum Frame<W: Write> {
    Plain(W),
    Gzip(flate2::write::GzEncoder<W>),
    Xz(liblzma::write::XzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Frame<W> {
    fn start(compression: Compression, out: W) -> io::Result<Frame<W>> {
        Ok(match compression {
            Compression::None => Frame::Plain(out),
            Compression::Gzip => Frame::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::default(),
            )),
            Compression::Xz => Frame::Xz(liblzma::write::XzEncoder::new(out, 6)),
            Compression::Zstd => {
                let mut e = zstd::stream::write::Encoder::new(out, 3)?;
                e.include_checksum(true)?;
                e.set_pledged_src_size(None)?;
                Frame::Zstd(e)
            }
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Frame::Plain(w) => w,
            Frame::Gzip(w) => w,
            Frame::Xz(w) => w,
            Frame::Zstd(w) => w,
        }
    }

    /// Writes the frame's end and its check; gives the output back.
    fn finish(self) -> io::Result<W> {
        match self {
            Frame::Plain(w) => Ok(w),
            Frame::Gzip(w) => w.finish(),
            Frame::Xz(w) => w.finish(),
            Frame::Zstd(w) => w.finish(),
        }
    }
}

/// A writer that compresses what it is given in frames of [`FRAME_INPUT_BYTES`] (or passes it
/// on as it is). [`finish`](Self::finish) ends the last frame; dropped without it, the output
/// ends mid-frame, as a cut file does.
pub struct FramedEncoder<W: Write> {
    compression: Compression,
    frame: Option<Frame<W>>,
    in_frame: u64,
    frame_bytes: u64,
}

impl<W: Write> FramedEncoder<W> {
    /// Compresses into `out` as `compression` says.
    pub fn new(compression: Compression, out: W) -> io::Result<FramedEncoder<W>> {
        Self::with_frame_size(compression, out, FRAME_INPUT_BYTES)
    }

    /// Like [`new`](Self::new), with frames of `frame_bytes` of input (for tests).
    pub fn with_frame_size(
        compression: Compression,
        out: W,
        frame_bytes: u64,
    ) -> io::Result<FramedEncoder<W>> {
        Ok(FramedEncoder {
            compression,
            frame: Some(Frame::start(compression, out)?),
            in_frame: 0,
            frame_bytes: frame_bytes.max(1),
        })
    }

    fn frame(&mut self) -> io::Result<&mut Frame<W>> {
        self.frame
            .as_mut()
            .ok_or_else(|| io::Error::other("the compressed output is finished"))
    }

    /// Ends the frame and starts the next on the same output.
    fn next_frame(&mut self) -> io::Result<()> {
        let frame = self
            .frame
            .take()
            .ok_or_else(|| io::Error::other("the compressed output is finished"))?;
        let out = frame.finish()?;
        self.frame = Some(Frame::start(self.compression, out)?);
        self.in_frame = 0;
        Ok(())
    }

    /// Ends the last frame; gives the output back (not flushed).
    pub fn finish(mut self) -> io::Result<W> {
        match self.frame.take() {
            Some(frame) => frame.finish(),
            None => Err(io::Error::other("the compressed output is finished")),
        }
    }
}

impl<W: Write> Write for FramedEncoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.compression == Compression::None {
            return self.frame()?.writer().write(buf);
        }
        if self.in_frame >= self.frame_bytes {
            self.next_frame()?;
        }
        let room = (self.frame_bytes - self.in_frame).min(buf.len() as u64) as usize;
        let n = self.frame()?.writer().write(&buf[..room])?;
        self.in_frame += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.frame()?.writer().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn decompress(compression: Compression, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match compression {
            Compression::Gzip => flate2::read::MultiGzDecoder::new(bytes)
                .read_to_end(&mut out)
                .map(drop),
            Compression::Xz => liblzma::read::XzDecoder::new_multi_decoder(bytes)
                .read_to_end(&mut out)
                .map(drop),
            Compression::Zstd => zstd::stream::read::Decoder::new(bytes)
                .and_then(|mut d| d.read_to_end(&mut out))
                .map(drop),
            Compression::None => {
                out.extend_from_slice(bytes);
                Ok(())
            }
        }
        .expect("decompresses");
        out
    }

    #[test]
    fn suffixes_name_the_compression_in_any_case_and_are_looked_through() {
        use std::path::Path;
        for (name, inner, compression) in [
            ("trace.pcap.gz", "trace.pcap", Compression::Gzip),
            ("trace.bin.XZ", "trace.bin", Compression::Xz),
            ("t.txt.zst", "t.txt", Compression::Zstd),
            ("trace.pcap", "trace.pcap", Compression::None),
            ("trace.gzip", "trace.gzip", Compression::None),
            (".gz", ".gz", Compression::None),
        ] {
            assert_eq!(
                Compression::split_suffix(name),
                (inner, compression),
                "{name}"
            );
            let in_dir = format!("dir.gz/{name}");
            assert_eq!(
                Compression::from_name(Path::new(&in_dir)),
                compression,
                "{in_dir}"
            );
        }
    }

    #[test]
    fn every_format_is_written_in_frames_and_reads_back_whole() {
        let input: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Xz,
            Compression::Zstd,
        ] {
            let mut e =
                FramedEncoder::with_frame_size(compression, Vec::new(), 64 << 10).expect("encoder");
            for chunk in input.chunks(10_000) {
                e.write_all(chunk).expect("write");
            }
            let bytes = e.finish().expect("finish");
            assert_eq!(decompress(compression, &bytes), input, "{compression}");
            // 400,000 bytes in 64 KiB frames: 7 frames, each starting with the format's magic.
            let magic: &[u8] = match compression {
                Compression::Gzip => &[0x1f, 0x8b, 0x08],
                Compression::Xz => &[0xfd, b'7', b'z', b'X', b'Z', 0],
                Compression::Zstd => &[0x28, 0xb5, 0x2f, 0xfd],
                Compression::None => continue,
            };
            let frames = bytes.windows(magic.len()).filter(|w| *w == magic).count();
            assert!(frames >= 7, "{compression}: {frames} frames");
        }
    }
}
