//! Holding back the records of a compressed frame until the frame's check passes.
//!
//! A decompressor hands out what a frame decodes to before it reaches the frame's check (a
//! gzip member's CRC-32, an xz block's check, a zstd frame's checksum): a damaged frame can
//! give wrong bytes, which a reader takes for records nobody sent, before the damage shows.
//! [`Verified`] keeps each record (with the skips and notes that come with it) until the bytes
//! it was read from are known good ([`Damage::verified`]); when the frame turns out corrupt,
//! what it holds is dropped and counted as [`SkipReason::CorruptFrame`], and the run ends with
//! [`TraceError::Corrupt`]. It holds at most [`super::ReadOptions::hold_bytes`]: a frame larger
//! than that (the `gzip`, `xz` and `zstd` tools write one frame for a whole file, unless told
//! otherwise) has its oldest records passed on before their check, and when such a frame turns
//! out corrupt the error says which records those were, as they may be wrong. A stream cut
//! short is no corruption: what came before the cut is passed on, and a note tells the cut.

use super::{Notes, ReadNote};
use crate::capture::{Deferred, DeferredBuf};
use crate::input::{CorruptStream, Damage, Passed, Position};
use crate::record::{Record, RecordBuf};
use crate::sink::{Sink, SinkError, Source, TraceError};
use crate::skip::SkipReason;
use ldplayer_dns::DnsError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// What a held record costs besides its message: its fixed fields and the queue's entry. A
/// held skip or note costs this much too, so that a frame full of bad lines is bounded as well.
const ENTRY_COST: usize = 96;

/// A source whose records wait for their frame's check (see the module's documentation), and
/// which tells when the compressed stream was cut short.
pub(super) struct Verified {
    inner: Box<dyn Source + Send>,
    damage: Damage,
    position: Position,
    hold_bytes: usize,
    input: PathBuf,
    notes: Notes,
}

impl Verified {
    /// Wraps `inner`, whose reader publishes how far it read in `position`, reading the
    /// stream `damage` watches, from `input`; holds at most `hold_bytes` of records.
    pub(super) fn new(
        inner: Box<dyn Source + Send>,
        damage: Damage,
        position: Position,
        hold_bytes: usize,
        input: &Path,
        notes: &Notes,
    ) -> Self {
        Verified {
            inner,
            damage,
            position,
            hold_bytes,
            input: input.to_path_buf(),
            notes: notes.clone(),
        }
    }
}

impl Source for Verified {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let mut hold = Hold {
            sink,
            damage: &self.damage,
            position: &self.position,
            limit: self.hold_bytes,
            held: VecDeque::new(),
            held_bytes: 0,
            records: 0,
            passed: None,
            stopped: false,
            cut_counted: false,
        };
        let result = self.inner.run(&mut hold);
        // A reader that stopped at an error of its own in the middle of a frame may have met
        // the frame's damage before the decompressor's check did: finish the frame to know.
        if matches!(&result, Err(e) if !matches!(e, TraceError::Sink(_))) {
            self.damage.check_current_frame();
        }
        let cut = self.damage.get();
        let corrupt = cut.clone().filter(|c| !c.truncated);
        let sink_failed = matches!(&result, Err(TraceError::Sink(_)));
        let settled = hold.settle(corrupt.is_some(), sink_failed);
        if let Some(cut) = cut.filter(|c| c.truncated) {
            self.notes.tell(&ReadNote::Damaged {
                input: self.input.clone(),
                cut,
            });
        }
        if sink_failed {
            return result;
        }
        let settled = settled.map_err(TraceError::Sink)?;
        match corrupt {
            Some(cut) => Err(TraceError::Corrupt(Box::new(CorruptStream {
                passed: settled
                    .passed
                    .filter(|p| p.frame == self.damage.verified())
                    .map(|p| p.run),
                cut,
                dropped: settled.dropped,
                hold_bytes: self.hold_bytes,
            }))),
            None => result,
        }
    }
}

/// Something a reader told the sink, waiting for its frame's check.
enum Event {
    Record(RecordBuf),
    Skipped(SkipReason, u64),
    Malformed(DnsError, u64),
    Deferred(DeferredBuf),
}

struct Held {
    /// Where the bytes it came from end in the content.
    end: u64,
    /// The record's number (from 1), for records.
    number: u64,
    event: Event,
}

/// Records passed on before their frame's check, all from the frame that starts at `frame`.
#[derive(Debug, Clone, Copy)]
struct PassedEarly {
    frame: u64,
    run: Passed,
}

/// What [`Hold::settle`] did.
struct Settled {
    dropped: u64,
    passed: Option<PassedEarly>,
}

/// The sink side of [`Verified`]: holds events in order until their bytes are checked.
struct Hold<'a> {
    sink: &'a mut dyn Sink,
    damage: &'a Damage,
    position: &'a Position,
    limit: usize,
    held: VecDeque<Held>,
    held_bytes: usize,
    /// Records seen.
    records: u64,
    /// Records of the frame being read passed on before its check.
    passed: Option<PassedEarly>,
    /// The sink wants no more.
    stopped: bool,
    /// The reader counted the stream's cut (it met it; it may also have stopped before, at an
    /// error of its own).
    cut_counted: bool,
}

impl Hold<'_> {
    fn cost(event: &Event) -> usize {
        match event {
            Event::Record(r) => ENTRY_COST + r.wire.len(),
            Event::Deferred(d) => ENTRY_COST + d.cost(),
            _ => ENTRY_COST,
        }
    }

    /// Queues `event`, then passes on what may go.
    fn hold(&mut self, event: Event) -> Result<(), SinkError> {
        self.held_bytes += Self::cost(&event);
        self.held.push_back(Held {
            end: self.position.get(),
            number: self.records,
            event,
        });
        self.release()
    }

    /// Passes on the events whose bytes are checked, and the oldest others while more than
    /// the limit is held.
    fn release(&mut self) -> Result<(), SinkError> {
        let verified = self.damage.verified();
        while let Some(front) = self.held.front() {
            let checked = front.end <= verified;
            if !checked && self.held_bytes <= self.limit {
                break;
            }
            let Some(held) = self.held.pop_front() else {
                break;
            };
            self.held_bytes -= Self::cost(&held.event);
            if !checked && matches!(held.event, Event::Record(_)) {
                // Every byte not checked is in the frame that starts where the checked ones end.
                match &mut self.passed {
                    Some(p) if p.frame == verified => p.run.count += 1,
                    p => {
                        *p = Some(PassedEarly {
                            frame: verified,
                            run: Passed {
                                first: held.number,
                                count: 1,
                            },
                        })
                    }
                }
            }
            self.deliver(held.event)?;
        }
        Ok(())
    }

    fn deliver(&mut self, event: Event) -> Result<(), SinkError> {
        match event {
            Event::Record(r) => {
                let result = self.sink.record(&r.as_record());
                if matches!(result, Err(SinkError::Stopped)) {
                    self.stopped = true;
                }
                result
            }
            Event::Skipped(reason, location) => {
                self.sink.skipped(reason, location);
                Ok(())
            }
            Event::Malformed(error, location) => {
                self.sink.malformed(error, location);
                Ok(())
            }
            Event::Deferred(part) => {
                let result = self.sink.deferred(part.as_deferred());
                if matches!(result, Err(SinkError::Stopped)) {
                    self.stopped = true;
                }
                result
            }
        }
    }

    /// Ends the run: the events still held are dropped when their frame is `corrupt` (its
    /// records counted as [`SkipReason::CorruptFrame`]), passed on otherwise (unless the sink
    /// stopped or `failed`); then the sink is finished.
    fn settle(mut self, corrupt: bool, failed: bool) -> Result<Settled, SinkError> {
        let mut dropped = 0;
        let mut delivered = Ok(());
        while let Some(held) = self.held.pop_front() {
            if self.stopped || failed || delivered.is_err() {
                break;
            }
            delivered = match held.event {
                Event::Record(_) if corrupt => {
                    dropped += 1;
                    self.sink.skipped(SkipReason::CorruptFrame, held.number);
                    Ok(())
                }
                // A note about a dropped record goes with it; so do the packets of the frame.
                Event::Malformed(..) | Event::Deferred(_) if corrupt => Ok(()),
                event => self.deliver(event),
            };
        }
        if corrupt && !self.cut_counted && !self.stopped && !failed {
            self.sink
                .skipped(SkipReason::CorruptFile, self.records.saturating_add(1));
        }
        let finished = self.sink.finish();
        match delivered {
            Err(SinkError::Stopped) | Ok(()) => finished?,
            Err(e) => return Err(e),
        }
        Ok(Settled {
            dropped,
            passed: self.passed,
        })
    }
}

impl Sink for Hold<'_> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if self.stopped {
            return Err(SinkError::Stopped);
        }
        self.records += 1;
        if self.held.is_empty() && self.position.get() <= self.damage.verified() {
            return self.sink.record(record);
        }
        self.hold(Event::Record(record.to_owned_record()))
    }

    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.cut_counted |= matches!(reason, SkipReason::CorruptFile | SkipReason::TruncatedFile);
        if self.held.is_empty() {
            return self.sink.skipped(reason, location);
        }
        // A sink error shows again at the next record.
        let _ = self.hold(Event::Skipped(reason, location));
    }

    fn malformed(&mut self, error: DnsError, location: u64) {
        if self.held.is_empty() {
            return self.sink.malformed(error, location);
        }
        let _ = self.hold(Event::Malformed(error, location));
    }

    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        if self.stopped {
            return Err(SinkError::Stopped);
        }
        if self.held.is_empty() && self.position.get() <= self.damage.verified() {
            return self.sink.deferred(part);
        }
        self.hold(Event::Deferred(part.to_owned_deferred()))
    }

    /// The sink is finished by [`Hold::settle`], once the fate of what is held is known.
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
