//! Records the git commit the binary was built from, for `vx --version` (CLI-4). Outside a git
//! checkout (a crates.io build, a tarball) the version stands alone. No build date is recorded,
//! so the binary is reproducible.

use std::process::Command;

fn main() {
    let sha = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=VX_GIT_SHA={sha}");
    if let Ok(output) = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
    {
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if output.status.success() && !dir.is_empty() {
            println!("cargo:rerun-if-changed={dir}/HEAD");
            println!("cargo:rerun-if-changed={dir}/refs/heads");
        }
    }
}
