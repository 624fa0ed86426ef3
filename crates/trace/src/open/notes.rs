//! What a reader noticed besides its records, and who is told.

use super::PortHint;
use crate::capture::TunnelCounts;
use crate::dnstap::DnstapTypes;
use crate::input::StreamCut;
use crate::text::LineError;
use ldplayer_dnstap::Census;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Something a reader noticed that the records and skip counts alone would not tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadNote {
    /// A capture held UDP or TCP packets, but none on the DNS ports: a silent "0 messages"
    /// otherwise.
    NoDns(PortHint),
    /// DNS was found inside tunnels (VXLAN, Geneve, GRE, IP in IP): the packets taken out of
    /// each kind.
    Tunneled(TunnelCounts),
    /// A line of a text trace could not be read; it was skipped and counted by its reason.
    LineSkipped {
        /// The line number, from 1.
        line: u64,
        /// What is wrong with the line.
        error: LineError,
    },
    /// The compressed stream was cut short: what came before the cut was read, and the cut
    /// was counted as [`StreamCut::skip_reason`] (a corrupt stream is an error instead:
    /// [`crate::TraceError::Corrupt`]).
    Damaged {
        /// The input, as it was named when opened.
        input: PathBuf,
        /// Where and how the stream ended.
        cut: StreamCut,
    },
    /// A dnstap log was read: its messages by type and identity, every type counted, and the
    /// types that were made into records.
    Dnstap {
        /// The messages read.
        census: Census,
        /// The types kept (`--dnstap-types`).
        kept: DnstapTypes,
    },
}

impl ReadNote {
    /// True for a note that only describes the input without anything lost or left out (a
    /// dnstap log whose messages were all of the types kept): [`Notes::stderr`] does not print
    /// it, `inspect` shows it in its summary.
    pub fn is_descriptive(&self) -> bool {
        match self {
            ReadNote::Dnstap { census, kept } => census.by_type().all(|(t, _)| kept.contains(t)),
            _ => false,
        }
    }
}

impl fmt::Display for ReadNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadNote::NoDns(hint) => hint.fmt(f),
            ReadNote::Tunneled(counts) => write!(f, "packets taken out of tunnels: {counts}"),
            ReadNote::LineSkipped { line, error } => write!(f, "line {line} skipped: {error}"),
            ReadNote::Dnstap { census, kept } => {
                write!(f, "dnstap messages by type: {census}")?;
                let left: u64 = census
                    .by_type()
                    .filter(|(t, _)| !kept.contains(*t))
                    .map(|(_, n)| n)
                    .sum();
                if left > 0 {
                    write!(
                        f,
                        "; {left} of types other than {kept} were left out (choose with --dnstap-types)"
                    )?;
                }
                Ok(())
            }
            ReadNote::Damaged { input, cut } => write!(
                f,
                "{}: {cut}; what came before was read, and the damage is counted as {}",
                input.display(),
                cut.skip_reason()
            ),
        }
    }
}

/// Who is told a reader's [`ReadNote`]s: standard error by default, or any function (to
/// collect them for a report, say).
#[derive(Clone)]
pub struct Notes(Arc<dyn Fn(&ReadNote) + Send + Sync>);

impl Notes {
    /// Notes printed on standard error, one line each, as `ldplayer: NOTE` (but for the
    /// [descriptive](ReadNote::is_descriptive) ones).
    pub fn stderr() -> Self {
        Notes::to(|note| {
            if !note.is_descriptive() {
                eprintln!("ldplayer: {note}")
            }
        })
    }

    /// Notes handed to `tell`, in the order they were noticed.
    pub fn to(tell: impl Fn(&ReadNote) + Send + Sync + 'static) -> Self {
        Notes(Arc::new(tell))
    }

    /// Notes dropped.
    pub fn ignore() -> Self {
        Notes::to(|_| {})
    }

    /// Tells `note`.
    pub(crate) fn tell(&self, note: &ReadNote) {
        (self.0)(note)
    }
}

impl Default for Notes {
    /// [`Notes::stderr`].
    fn default() -> Self {
        Notes::stderr()
    }
}

impl fmt::Debug for Notes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Notes(..)")
    }
}
