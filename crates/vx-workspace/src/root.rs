//! Finding the workspace root from the current directory (DISC-1).
//!
//! Walking up from cwd, the nearest directory whose `vx.toml` has a `[workspace]` table wins,
//! however far up it is. Failing that, the package-manager roots met on the way up
//! (`pnpm-workspace.yaml`, or a `package.json` with `workspaces`) are candidates: the nearest
//! one whose member globs claim cwd wins, else the nearest one. Claims are decided by matching
//! paths against the globs, without listing any directory.

use std::path::{Path, PathBuf};

use vx_core::config::CONFIG_FILE;

use crate::disk;
use crate::manifest::parse_manifest;
use crate::members::MemberGlobs;
use crate::pnpm::pnpm_packages;
use crate::LoadError;

/// Where the root was found.
#[derive(Debug)]
pub(crate) struct FoundRoot {
    /// Canonical.
    pub(crate) dir: PathBuf,
}

/// Finds the root for `cwd`, which must be canonical.
pub(crate) fn find_root(cwd: &Path) -> Result<FoundRoot, LoadError> {
    let mut package_json_above = false;
    // Package-manager roots, nearest first, with whether their globs claim cwd.
    let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(bytes) = disk::read(&dir.join(CONFIG_FILE))? {
            if has_workspace_table(&String::from_utf8_lossy(&bytes)) {
                return Ok(FoundRoot {
                    dir: dir.to_path_buf(),
                });
            }
        }
        let rel = cwd
            .strip_prefix(dir)
            .expect("an ancestor")
            .to_string_lossy()
            .replace('\\', "/");
        let package_json = disk::read(&dir.join("package.json"))?;
        package_json_above |= package_json.is_some();
        if let Some(bytes) = disk::read(&dir.join("pnpm-workspace.yaml"))? {
            // A file that does not parse still marks a root; loading it reports the error.
            let text = String::from_utf8_lossy(&bytes);
            let globs = pnpm_packages(&text, "pnpm-workspace.yaml").unwrap_or_default();
            let claims = MemberGlobs::new(&globs, &mut Vec::new()).claims(&rel);
            candidates.push((dir.to_path_buf(), claims));
        } else if let Some(bytes) = package_json {
            let text = String::from_utf8_lossy(&bytes);
            if let Ok(manifest) = parse_manifest(&text, "package.json") {
                if let Some(globs) = manifest.workspaces {
                    let claims = MemberGlobs::new(&globs, &mut Vec::new()).claims(&rel);
                    candidates.push((dir.to_path_buf(), claims));
                }
            } else if text.contains("\"workspaces\"") {
                candidates.push((dir.to_path_buf(), false));
            }
        }
    }
    let chosen = candidates
        .iter()
        .find(|(_, claims)| *claims)
        .or(candidates.first());
    match chosen {
        Some((dir, _)) => Ok(FoundRoot { dir: dir.clone() }),
        None => Err(LoadError::NotInWorkspace {
            cwd: cwd.to_path_buf(),
            package_json_above,
        }),
    }
}

/// Whether a `vx.toml` declares `[workspace]`. A file that does not parse counts when a line
/// opens the table, so its syntax error is reported by loading it as the root rather than
/// sending the search further up.
fn has_workspace_table(text: &str) -> bool {
    match toml_span::parse(text) {
        Ok(tree) => tree.as_table().is_some_and(|t| t.contains_key("workspace")),
        Err(_) => text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("[workspace]")
                || line.starts_with("[workspace.")
                || line.starts_with("workspace.")
                || line.starts_with("workspace =")
        }),
    }
}
