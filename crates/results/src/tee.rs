//! Result sinks made of other sinks: a fan-out to two sinks ([`Tee`]), an optional sink
//! (`Option<S>`) and a boxed one (`Box<dyn ResultSink>`), so that a caller composes what a replay
//! writes (a summary, plus a results file when one is asked for) and gets each part back by
//! value when the replay is done, without shared, locked wrappers.

use crate::result::{QueryResult, ResultSink};
use std::io;

/// Hands every result to two sinks, `first` then `second`.
///
/// Both sinks see every result and are both finished, even when one of them fails; the first
/// error (of `first` before `second`) is the one returned. Nest tees for more than two sinks.
#[derive(Debug, Clone, Default)]
pub struct Tee<A, B> {
    first: A,
    second: B,
}

impl<A, B> Tee<A, B> {
    /// A fan-out to `first` and `second`.
    pub fn new(first: A, second: B) -> Tee<A, B> {
        Tee { first, second }
    }

    /// The first sink.
    pub fn first(&self) -> &A {
        &self.first
    }

    /// The second sink.
    pub fn second(&self) -> &B {
        &self.second
    }

    /// Both sinks, to read them once the results are in.
    pub fn into_parts(self) -> (A, B) {
        (self.first, self.second)
    }
}

impl<A: ResultSink, B: ResultSink> ResultSink for Tee<A, B> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        let first = self.first.result(r);
        let second = self.second.result(r);
        first.and(second)
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        let first = self.first.result_with_answer(r, answer);
        let second = self.second.result_with_answer(r, answer);
        first.and(second)
    }

    fn finish(&mut self) -> io::Result<()> {
        let first = self.first.finish();
        let second = self.second.finish();
        first.and(second)
    }
}

/// Hands every result to `inner` as the result of target `target`: its
/// [`QueryResult::target`] set so. A replay to several servers drives one engine per server,
/// each with its sink so marked, into one results file.
#[derive(Debug, Clone, Default)]
pub struct Targeted<S> {
    target: u16,
    inner: S,
}

impl<S> Targeted<S> {
    /// `inner`, taking results as target `target`'s.
    pub fn new(target: u16, inner: S) -> Targeted<S> {
        Targeted { target, inner }
    }

    /// The target its results are marked with.
    pub fn target(&self) -> u16 {
        self.target
    }

    /// The inner sink.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: ResultSink> ResultSink for Targeted<S> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        self.inner.result(&QueryResult {
            target: self.target,
            ..*r
        })
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        let r = QueryResult {
            target: self.target,
            ..*r
        };
        self.inner.result_with_answer(&r, answer)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

/// One sink shared by several writers (the engines of a replay to several servers, each with
/// its result writer thread): each result is handed over under the lock. Every writer finishes
/// it; finishing is flushing, so finishing it again does no harm.
impl<S: ResultSink> ResultSink for std::sync::Arc<std::sync::Mutex<S>> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        lock(self).result(r)
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        lock(self).result_with_answer(r, answer)
    }

    fn finish(&mut self) -> io::Result<()> {
        lock(self).finish()
    }
}

/// The shared sink, even when another writer panicked holding it (what it wrote stays).
fn lock<S>(m: &std::sync::Mutex<S>) -> std::sync::MutexGuard<'_, S> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// No sink: takes nothing. `Some(sink)`: the sink. For outputs the user may or may not ask for.
impl<S: ResultSink> ResultSink for Option<S> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        match self {
            Some(s) => s.result(r),
            None => Ok(()),
        }
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        match self {
            Some(s) => s.result_with_answer(r, answer),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        match self {
            Some(s) => s.finish(),
            None => Ok(()),
        }
    }
}

/// A boxed sink, for sinks chosen at run time.
impl<S: ResultSink + ?Sized> ResultSink for Box<S> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        (**self).result(r)
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        (**self).result_with_answer(r, answer)
    }

    fn finish(&mut self) -> io::Result<()> {
        (**self).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Summary};
    use ldplayer_trace::Proto;

    fn result(index: u64) -> QueryResult {
        QueryResult {
            index,
            trace_ns: 0,
            intended_ns: 1_000,
            sent_ns: 1_000,
            received_ns: 2_000,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: 40,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        }
    }

    /// Keeps the indexes it got, fails on demand, and remembers being finished.
    #[derive(Default)]
    struct Probe {
        seen: Vec<u64>,
        fail: Option<io::ErrorKind>,
        finished: bool,
    }

    impl ResultSink for Probe {
        fn result(&mut self, r: &QueryResult) -> io::Result<()> {
            self.seen.push(r.index);
            self.fail.map_or(Ok(()), |k| Err(io::Error::from(k)))
        }
        fn finish(&mut self) -> io::Result<()> {
            self.finished = true;
            self.fail.map_or(Ok(()), |k| Err(io::Error::from(k)))
        }
    }

    #[test]
    fn both_sinks_get_every_result_and_come_back() {
        let mut tee = Tee::new(Summary::new(), Some(Probe::default()));
        for i in 0..3 {
            tee.result(&result(i)).unwrap();
        }
        tee.finish().unwrap();
        let (summary, probe) = tee.into_parts();
        assert_eq!(summary.results(), 3);
        let probe = probe.expect("the probe");
        assert_eq!(probe.seen, [0, 1, 2]);
        assert!(probe.finished);
    }

    #[test]
    fn the_first_error_wins_and_both_are_finished() {
        let failing = |k| Probe {
            fail: Some(k),
            ..Probe::default()
        };
        let mut tee = Tee::new(
            failing(io::ErrorKind::StorageFull),
            failing(io::ErrorKind::BrokenPipe),
        );
        let e = tee.result(&result(7)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        let e = tee.finish().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        let (a, b) = tee.into_parts();
        assert_eq!((a.seen, b.seen), (vec![7], vec![7]));
        assert!(a.finished && b.finished);

        let mut tee = Tee::new(Probe::default(), failing(io::ErrorKind::BrokenPipe));
        assert_eq!(
            tee.finish().unwrap_err().kind(),
            io::ErrorKind::BrokenPipe,
            "an error of the second sink is not lost"
        );
    }

    #[test]
    fn no_sink_takes_results_quietly_and_a_boxed_one_passes_them_on() {
        let mut none: Option<Probe> = None;
        none.result(&result(1)).unwrap();
        none.finish().unwrap();
        let mut boxed = Box::new(Probe::default());
        <Box<Probe> as ResultSink>::result(&mut boxed, &result(4)).unwrap();
        <Box<Probe> as ResultSink>::finish(&mut boxed).unwrap();
        assert_eq!(boxed.seen, [4]);
        assert!(boxed.finished);
    }
}
