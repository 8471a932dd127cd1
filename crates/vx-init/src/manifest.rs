//! The `package.json` files `vx init` reads, and whether the package manager would run a
//! script's `pre`/`post` hooks (INIT-2).

use std::collections::BTreeMap;
use std::path::Path;

use vx_core::Diagnostic;
use vx_workspace::PackageJson;

use vx_engine::workspace::io_diagnostic;

/// The `package.json` in `dir` (root-relative), if there is one; problems go to `errors`.
pub(super) fn read_manifest(
    root: &Path,
    dir: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<PackageJson> {
    let rel = if dir.is_empty() {
        "package.json".to_string()
    } else {
        format!("{dir}/package.json")
    };
    let text = match std::fs::read(root.join(&rel)) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            errors.push(io_diagnostic(Path::new(&rel), "read", &e));
            return None;
        }
    };
    match vx_workspace::read_package_json(&text, &rel) {
        Ok(package) => Some(package),
        Err(mut problems) => {
            errors.append(&mut problems);
            None
        }
    }
}

/// Why the package manager would not run `pre`/`post` scripts for this package (INIT-2), if
/// it would not: `ignore-scripts` or pnpm's `enable-pre-post-scripts=false` in the package's
/// or the root's `.npmrc`, or `packageManager` yarn 2 or later.
pub(super) fn hooks_off(
    root: &Path,
    dir: &str,
    package: &PackageJson,
    root_package: &PackageJson,
) -> Option<String> {
    let mut dirs = vec![dir];
    if !dir.is_empty() {
        dirs.push("");
    }
    let mut pre_post_on = false;
    for dir in dirs {
        let rel = if dir.is_empty() {
            ".npmrc".to_string()
        } else {
            format!("{dir}/.npmrc")
        };
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        let settings = npmrc(&text);
        if settings.get("ignore-scripts").is_some_and(|v| v == "true") {
            return Some(format!("{rel} sets `ignore-scripts`"));
        }
        match settings.get("enable-pre-post-scripts").map(String::as_str) {
            Some("false") => {
                return Some(format!("{rel} turns off `enable-pre-post-scripts`"));
            }
            Some("true") => pre_post_on = true,
            _ => {}
        }
    }
    let manager = package
        .package_manager
        .as_deref()
        .or(root_package.package_manager.as_deref())?;
    let (tool, version) = manager.split_once('@')?;
    let major: u32 = version.split('.').next()?.parse().ok()?;
    // Yarn 2 dropped them; pnpm 6 to 8 run them only with `enable-pre-post-scripts=true`
    // (pnpm 9 turned them back on by default).
    let off = match tool {
        "yarn" => major >= 2,
        "pnpm" => (6..=8).contains(&major) && !pre_post_on,
        _ => false,
    };
    off.then(|| format!("`packageManager` is {manager}"))
}

/// The `key=value` settings of an `.npmrc` (comments start with `#` or `;`).
pub(super) fn npmrc(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with(['#', ';']))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let value = value.trim().trim_matches(['"', '\'']);
            (key.trim().to_string(), value.to_string())
        })
        .collect()
}
