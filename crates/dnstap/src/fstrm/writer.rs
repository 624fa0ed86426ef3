//! Writing a uni-directional Frame Streams byte stream (a file).

use super::{Control, ControlType};
use std::io::{self, Write};

/// Writes `START`, data frames, and `STOP` on finishing. Give it a buffered writer.
pub struct FrameWriter<W: Write> {
    out: W,
    frames: u64,
}

impl<W: Write> FrameWriter<W> {
    /// Starts a stream of `content_type` on `out` (writes `START`).
    pub fn new(mut out: W, content_type: &[u8]) -> io::Result<Self> {
        out.write_all(&Control::new(ControlType::Start, &[content_type]).encode())?;
        Ok(FrameWriter { out, frames: 0 })
    }

    /// Writes one data frame.
    pub fn write_frame(&mut self, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a data frame of {} bytes cannot be written (1 to 2^32-1)",
                        data.len()
                    ),
                )
            })?;
        self.out.write_all(&len.to_be_bytes())?;
        self.out.write_all(data)?;
        self.frames += 1;
        Ok(())
    }

    /// Data frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Writes `STOP`, flushes, and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out
            .write_all(&Control::new(ControlType::Stop, &[]).encode())?;
        self.out.flush()?;
        Ok(self.out)
    }
}
