//! Work on every core: a list cut into one run per core, each run handled by its own thread,
//! the results given back in the list's order.

/// How many threads handle `n` items: one per core, at most 8, at least 1, never more than the
/// items.
pub(crate) fn threads(n: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(n.max(1))
}

/// `work` on `items` cut into consecutive runs, one per core, each on its own thread; the
/// results in the runs' order. Fewer than `min` items are one run on this thread (threads cost
/// more than they save there). A panic in `work` is resumed here.
pub(crate) fn in_runs<T, R>(items: Vec<T>, min: usize, work: impl Fn(Vec<T>) -> R + Sync) -> Vec<R>
where
    T: Send,
    R: Send,
{
    let threads = threads(items.len());
    if threads == 1 || items.len() < min {
        return vec![work(items)];
    }
    let per = items.len().div_ceil(threads);
    let mut runs = Vec::with_capacity(threads);
    let mut rest = items;
    while rest.len() > per {
        let tail = rest.split_off(per);
        runs.push(rest);
        rest = tail;
    }
    runs.push(rest);
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> = runs
            .into_iter()
            .map(|run| scope.spawn(move || work(run)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::in_runs;

    /// Every item is handled once, and the runs come back in order.
    #[test]
    fn runs_in_order() {
        for (n, min) in [(0, 1), (5, 10), (1000, 1), (1001, 16)] {
            let items: Vec<usize> = (0..n).collect();
            let runs = in_runs(items, min, |run| run);
            let back: Vec<usize> = runs.into_iter().flatten().collect();
            assert_eq!(back, (0..n).collect::<Vec<_>>(), "{n} items");
        }
        let small = in_runs(vec![1, 2, 3], 10, |run| run.len());
        assert_eq!(small, [3]);
    }
}
