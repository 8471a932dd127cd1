//! Records what `vx --version` prints besides the version (CLI-4): the commit the binary was
//! built from and the target it was built for. The commit comes from `VX_BUILD_COMMIT` when set
//! (a packager's override), else from the `.cargo_vcs_info.json` that `cargo package` writes (a
//! build from crates.io), else from git in a checkout; without any, the version stands alone.
//! No build date is recorded, so the binary is reproducible.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=VX_BUILD_COMMIT");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let sha = std::env::var("VX_BUILD_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| packaged_commit(Path::new(&manifest_dir)))
        .or_else(git_commit)
        .unwrap_or_default();
    println!("cargo:rustc-env=VX_GIT_SHA={sha}");
    println!(
        "cargo:rustc-env=VX_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    if let Ok(output) = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
    {
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if output.status.success() && !dir.is_empty() {
            // Only paths that exist: cargo reruns a build script on every build for one that
            // does not, and vx would be linked again each time.
            for path in ["HEAD", "refs/heads", "packed-refs"] {
                let path = Path::new(&dir).join(path);
                if path.exists() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
    }
}

fn git_commit() -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

/// `{"git": {"sha1": "…"}, …}`, read without a JSON parser: build scripts stay dependency-free.
fn packaged_commit(manifest_dir: &Path) -> Option<String> {
    let path = manifest_dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    let start = text.find("\"sha1\"")? + "\"sha1\"".len();
    let rest = text[start..].trim_start().strip_prefix(':')?.trim_start();
    let sha: String = rest
        .strip_prefix('"')?
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 10).then(|| sha[..10].to_string())
}
