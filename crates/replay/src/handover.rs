//! How the reader hands batches of queries to a querier: in bursts, and with a wake only when
//! the querier may be waiting for them.
//!
//! A querier's channel is bounded. When the reader blocked in the channel's `send` each time it
//! was full, every batch the querier took woke the reader (a futex call on the querier's core,
//! a wake-up on the reader's), and every batch the reader gave woke the querier's poll (an
//! `eventfd` write): under `--fast`, two wake-ups per 64 queries. Here the reader, finding the
//! channel full, sleeps until it has drained to [`LOW_WATER`] of its capacity and then refills
//! it in one burst; and it wakes the querier only when the channel held nothing else, which is
//! the only time the querier can have gone to sleep without this batch in sight (it takes what
//! the channel holds until it finds it empty).

use crossbeam_channel::{SendTimeoutError, Sender};
use std::time::Duration;

/// The fraction of the channel's capacity it drains to before a reader that found it full
/// refills it: a quarter of it per burst.
pub(crate) const LOW_WATER: f64 = 0.75;
/// How often a reader waiting for room looks at the channel again: the quarter it waits for
/// is 32,768 queries, 160 ms at 200k qps, and each look costs the reader a wake-up (every 1 ms,
/// they were a third of its CPU under `--fast`).
const RECHECK: Duration = Duration::from_millis(5);

/// Why a batch could not be handed over.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The querier is gone (its thread ended): nothing takes batches any more.
    QuerierGone,
}

/// Sends `item` on `tx`, waiting (sleeping, not parked in the channel) until the channel has
/// drained to [`LOW_WATER`] if it is full, and calls `wake` when the querier may be waiting for
/// it. `alive` says whether the querier still runs: a reader waiting for room stops waiting
/// once it does not.
pub(crate) fn hand_over<T>(
    tx: &Sender<T>,
    item: T,
    alive: &dyn Fn() -> bool,
    wake: &dyn Fn(),
) -> Result<(), Refused> {
    let mut item = item;
    if tx.is_full() {
        let low = tx.capacity().map_or(0, |c| (c as f64 * LOW_WATER) as usize);
        while tx.len() > low && alive() {
            std::thread::sleep(RECHECK);
        }
    }
    loop {
        match tx.send_timeout(item, RECHECK) {
            Ok(()) => break,
            Err(SendTimeoutError::Disconnected(_)) => return Err(Refused::QuerierGone),
            Err(SendTimeoutError::Timeout(back)) => {
                if !alive() {
                    return Err(Refused::QuerierGone);
                }
                item = back;
            }
        }
    }
    // Two or more in the channel: the querier has not found it empty since the one before
    // this was sent, and it takes everything up to empty, this one included.
    if tx.len() <= 1 {
        wake();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;
    use std::cell::Cell;

    #[test]
    fn the_querier_is_woken_only_for_a_channel_that_held_nothing_else() {
        let (tx, rx) = bounded::<u32>(8);
        let wakes = Cell::new(0);
        let wake = || wakes.set(wakes.get() + 1);
        hand_over(&tx, 1, &|| true, &wake).unwrap();
        assert_eq!(wakes.get(), 1);
        hand_over(&tx, 2, &|| true, &wake).unwrap();
        hand_over(&tx, 3, &|| true, &wake).unwrap();
        assert_eq!(wakes.get(), 1);
        // The querier takes everything: the next batch finds the channel empty again.
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2, 3]);
        hand_over(&tx, 4, &|| true, &wake).unwrap();
        assert_eq!(wakes.get(), 2);
    }

    #[test]
    fn a_full_channel_is_refilled_once_drained_to_its_low_water_mark() {
        let (tx, rx) = bounded::<u32>(8);
        for i in 0..8 {
            hand_over(&tx, i, &|| true, &|| {}).unwrap();
        }
        assert!(tx.is_full());
        // The reader says when it waits (it asks whether the querier is alive only then).
        let (waiting_tx, waiting_rx) = bounded::<()>(1);
        let reader = std::thread::spawn(move || {
            let alive = || {
                let _ = waiting_tx.try_send(());
                true
            };
            hand_over(&tx, 8, &alive, &|| {})
        });
        assert_eq!(waiting_rx.recv_timeout(Duration::from_secs(30)), Ok(()));
        assert_eq!(rx.recv(), Ok(0));
        // One taken: 7 of 8 is above the low-water mark (6), so the reader keeps waiting
        // rather than topping the channel up by one.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(rx.len(), 7);
        assert!(!reader.is_finished());
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(reader.join().unwrap(), Ok(()));
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            (2..9).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_reader_stops_waiting_for_a_querier_that_is_gone() {
        let (tx, _rx) = bounded::<u32>(2);
        hand_over(&tx, 1, &|| true, &|| {}).unwrap();
        hand_over(&tx, 2, &|| true, &|| {}).unwrap();
        assert_eq!(
            hand_over(&tx, 3, &|| false, &|| {}),
            Err(Refused::QuerierGone)
        );
        drop(_rx);
        let (tx, rx) = bounded::<u32>(2);
        drop(rx);
        assert_eq!(
            hand_over(&tx, 1, &|| true, &|| {}),
            Err(Refused::QuerierGone)
        );
    }
}
