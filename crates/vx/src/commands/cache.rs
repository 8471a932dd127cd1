//! `vx cache prune` (STORE-15): evict entries by age and total size, and sweep stray files;
//! `vx cache clean`: evict every entry.

use std::path::Path;

use serde_json::json;
use vx_core::units::{format_size, parse_duration, parse_size};
use vx_core::Diagnostic;
use vx_store::prune::{prune_dir, PrunePolicy, PruneReport};

use crate::cli::{CleanArgs, EvictArgs, PruneArgs};
use crate::render;
use crate::render::out_str;
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};

pub fn prune(cwd: &Path, args: PruneArgs) -> Result<i32, Failure> {
    let policy = policy(args.older_than.as_deref(), args.max_size.as_deref())?;
    evict(cwd, &policy, &args.evict)
}

/// `vx cache clean`: a prune down to nothing (every entry, and stray files an hour old). The
/// run history (`vx last`, `vx why`) is not cache and stays; a remote cache is never touched.
pub fn clean(cwd: &Path, args: CleanArgs) -> Result<i32, Failure> {
    let policy = PrunePolicy {
        older_than: None,
        max_size: Some(0),
    };
    evict(cwd, &policy, &args.evict)
}

fn evict(cwd: &Path, policy: &PrunePolicy, args: &EvictArgs) -> Result<i32, Failure> {
    let (dry, format, cache_dir) = (args.dry, args.format.as_deref(), args.cache_dir.as_deref());
    let json = super::json_format(format)?;
    let (root, dir) = workspace::store_location(cwd, cache_dir)?;
    // Evicting takes the workspace lock (STORE-14); a dry run changes nothing.
    let _lock = if dry {
        None
    } else {
        let mut waited = false;
        vx_store::lock::acquire(&root, &mut |pid| {
            if !waited {
                waited = true;
                let pid = pid.map_or("?".to_string(), |p| p.to_string());
                render::notice(&format!(
                    "another vx run (pid {pid}) holds this workspace; waiting…"
                ));
            }
        })
        .ok()
    };
    let report =
        prune_dir(&dir, policy, dry).map_err(|e| Failure::from(Diagnostic::new(e.to_string())))?;
    if json {
        out_str(&format!(
            "{}\n",
            json!({
                "dry": dry,
                "evicted": report.evicted,
                "bytes_freed": report.bytes_freed,
                "orphans": report.orphans,
                "orphan_bytes": report.orphan_bytes,
            })
        ));
    } else {
        out_str(&format!("{}\n", sentence(&report, dry)));
    }
    Ok(exit::SUCCESS)
}

/// `--older-than` and/or `--max-size`; neither is a usage error (STORE-15).
pub fn policy(older_than: Option<&str>, max_size: Option<&str>) -> Result<PrunePolicy, Failure> {
    if older_than.is_none() && max_size.is_none() {
        return Err(
            Diagnostic::new("`vx cache prune` needs --older-than or --max-size")
                .hint("for example `vx cache prune --older-than 30d --max-size 10G`")
                .into(),
        );
    }
    let older_than = older_than
        .map(|text| {
            parse_duration(text).ok_or_else(|| {
                Diagnostic::new(format!(
                    "invalid value `{text}` for --older-than (expected a duration such as 30d)"
                ))
            })
        })
        .transpose()?;
    let max_size = max_size
        .map(|text| {
            parse_size(text).ok_or_else(|| {
                Diagnostic::new(format!(
                    "invalid value `{text}` for --max-size (expected a size such as 10G)"
                ))
            })
        })
        .transpose()?;
    Ok(PrunePolicy {
        older_than,
        max_size,
    })
}

/// `removed 12 entries, 1.2 GiB; removed 3 stray files, 40.0 MiB` (or `would remove …`).
pub fn sentence(report: &PruneReport, dry: bool) -> String {
    let verb = if dry { "would remove" } else { "removed" };
    let entries = if report.evicted == 1 {
        "1 entry".to_string()
    } else {
        format!("{} entries", report.evicted)
    };
    let mut text = format!("{verb} {entries}, {}", format_size(report.bytes_freed));
    if report.orphans > 0 {
        let files = if report.orphans == 1 {
            "1 stray file".to_string()
        } else {
            format!("{} stray files", report.orphans)
        };
        text.push_str(&format!(
            "; {verb} {files}, {}",
            format_size(report.orphan_bytes)
        ));
    }
    text
}
