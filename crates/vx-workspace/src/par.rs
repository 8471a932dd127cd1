//! Data parallelism for the warm path: the same pure function over many items (`lstat` of
//! input files, output listings, configuration parsing) on a few scoped threads.
//!
//! The work items are cheap and uniform, so contiguous chunks balance well enough and need no
//! queue; results keep the order of the items.

use std::num::NonZeroUsize;

/// How many threads [`map`] uses: the CPUs this process may run on, at most 8 (more threads
/// than that only contend on the kernel's directory locks).
pub fn threads() -> usize {
    cpus().min(8)
}

/// The CPUs this process may run on, asked once: the standard library reads the cgroup files
/// on every call, and a warm run asks for every output it refreshes.
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

/// Below this many items a second thread costs more than it saves.
const SERIAL_BELOW: usize = 64;

/// `items.iter().map(f).collect()`, on up to [`threads`] threads; the results keep the order.
/// A panic in `f` is re-raised on the calling thread.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads();
    if threads < 2 || items.len() < SERIAL_BELOW {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for part in parts {
            match part.join() {
                Ok(results) => out.extend(results),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items() {
        let items: Vec<u32> = (0..1000).collect();
        let squares = map(&items, |x| x * x);
        assert_eq!(squares, items.iter().map(|x| x * x).collect::<Vec<_>>());
    }

    #[test]
    fn few_items_and_none_work_too() {
        assert_eq!(map(&[1, 2, 3], |x| x + 1), vec![2, 3, 4]);
        assert!(map(&[] as &[u8], |x| *x).is_empty());
    }

    #[test]
    fn the_work_runs_on_more_than_one_thread_when_there_are_cpus() {
        let items: Vec<u32> = (0..512).collect();
        let ids = map(&items, |_| std::thread::current().id());
        let distinct: std::collections::HashSet<_> = ids.into_iter().collect();
        assert_eq!(distinct.len() > 1, threads() > 1);
    }
}
