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

/// Sets the allocator's purge delay, unless the environment already did (mimalloc reads it at
/// start); call it first thing in `main`.
pub fn return_freed_memory_promptly() {
    if delay_in(std::env::vars_os().map(|(name, _)| name)) {
        return;
    }
    // SAFETY: `mi_option_set` only stores a value in mimalloc's option table (an atomic
    // store); any option index below `_mi_option_last` is valid.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_AFTER_MS) }
}

/// Whether these environment names set mimalloc's purge delay: mimalloc reads its variables in
/// any case, and the delay's old name too.
fn delay_in(mut names: impl Iterator<Item = std::ffi::OsString>) -> bool {
    names.any(|name| {
        name.to_str().is_some_and(|name| {
            name.eq_ignore_ascii_case("MIMALLOC_PURGE_DELAY")
                || name.eq_ignore_ascii_case("MIMALLOC_RESET_DELAY")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get() -> std::ffi::c_long {
        // SAFETY: reading an option is an atomic load of a valid index.
        unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }
    }

    /// Option 15 is the purge delay: mimalloc 3's default for it is 1000 ms, or what the
    /// environment of this test says (should the options be renumbered, this fails rather than
    /// vx setting some other option).
    #[test]
    fn the_option_set_is_the_purge_delay() {
        let from_environment = std::env::vars().find_map(|(name, value)| {
            delay_in(std::iter::once(name.into()))
                .then(|| value.trim().parse::<std::ffi::c_long>().ok())
                .flatten()
        });
        assert_eq!(get(), from_environment.unwrap_or(1000));
        // SAFETY: as in `return_freed_memory_promptly`.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_AFTER_MS) }
        assert_eq!(get(), PURGE_AFTER_MS);
    }

    #[test]
    fn a_delay_the_environment_sets_is_left_alone() {
        let names =
            |list: &[&str]| -> Vec<std::ffi::OsString> { list.iter().map(|n| n.into()).collect() };
        assert!(delay_in(
            names(&["PATH", "mimalloc_purge_delay"]).into_iter()
        ));
        assert!(delay_in(names(&["MIMALLOC_RESET_DELAY"]).into_iter()));
        assert!(!delay_in(
            names(&["PATH", "MIMALLOC_SHOW_STATS"]).into_iter()
        ));
    }
}
