//! The one option of vx's allocator (mimalloc, the binary's global allocator) that vx sets,
//! here because setting it is an `unsafe` call.
//!
//! mimalloc 3 returns freed memory to the operating system a second after it was freed (its
//! `purge_delay`, 1000 ms). Most vx runs are over in about a second, so memory freed on the way
//! (the configuration parsed on several threads, output listings, the rows read ahead) was
//! still resident at the peak: at 10,000 tasks the whole way peaked at 148–153 MiB, a cold run
//! at 153 and a core edit at 160 MiB. Purging after 5 ms brings them to about 130, 143 and 150
//! MiB for about 4% more CPU (purges, and page faults where the memory is used again); 20 ms
//! kept a cold run and a core edit above 150 MiB (docs/benchmarks.md). `MIMALLOC_PURGE_DELAY`
//! in the environment still wins.

/// mimalloc 3's `mi_option_purge_delay` (`mimalloc.h`; `libmimalloc-sys` has no name for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays with the allocator before it goes back to the system.
const PURGE_AFTER_MS: std::ffi::c_long = 5;

/// Sets the allocator's purge delay, unless `MIMALLOC_PURGE_DELAY` in the environment already
/// did (mimalloc reads it at start); call it first thing in `main`.
pub fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: `mi_option_set` only stores a value in mimalloc's option table (an atomic
    // store); any option index below `_mi_option_last` is valid.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_AFTER_MS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Option 15 is the purge delay: mimalloc 3's default for it is 1000 ms (should the
    /// options be renumbered, this fails rather than vx setting some other option).
    #[test]
    fn the_option_set_is_the_purge_delay() {
        // SAFETY: reading an option is an atomic load of a valid index.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(before, 1000);
        return_freed_memory_promptly();
        // SAFETY: as above.
        let after = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(after, PURGE_AFTER_MS);
    }
}
