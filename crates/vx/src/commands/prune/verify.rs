//! The package manager's frozen install, run on a copy of what installing needs (the `json/`
//! files) before `vx prune` says the output works: the pruned lockfile is accepted as it is,
//! or the package manager's own words say what differs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vx_workspace::lockfile::prune::PackageManager;

use super::output;
use super::plan::Content;

/// How a check ended.
pub enum Verdict {
    /// The frozen install accepted the lockfile: the command line and how long it took.
    Passed(String, Duration),
    /// It refused it, or rewrote it: the command line and what to show.
    Failed(String, Vec<String>),
    /// The package manager is not installed.
    Missing(&'static str),
}

/// One run of the package manager.
struct Step {
    args: &'static [&'static str],
    /// Run the next step instead when the output holds this (pnpm's `--offline` when the
    /// store lacks a package): the next step is this one's fallback, not a further check.
    fallback_if: Option<&'static str>,
}

const fn step(args: &'static [&'static str]) -> Step {
    Step {
        args,
        fallback_if: None,
    }
}

/// The program and its runs: frozen, no install scripts (what the lockfile resolves is
/// checked, not what packages run), from the local store or cache first.
fn commands(pm: PackageManager) -> (&'static str, Vec<Step>) {
    match pm {
        PackageManager::Pnpm => (
            "pnpm",
            vec![
                Step {
                    args: &[
                        "install",
                        "--frozen-lockfile",
                        "--ignore-scripts",
                        "--offline",
                    ],
                    fallback_if: Some("ERR_PNPM_NO_OFFLINE"),
                },
                step(&[
                    "install",
                    "--frozen-lockfile",
                    "--ignore-scripts",
                    "--prefer-offline",
                ]),
            ],
        ),
        PackageManager::Npm => (
            "npm",
            vec![step(&[
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefer-offline",
            ])],
        ),
        // Yarn 1's --frozen-lockfile lets a workspace member's new dependency through: a
        // plain install after it must leave the lockfile as it is, too.
        PackageManager::Yarn1 => (
            "yarn",
            vec![
                step(&[
                    "install",
                    "--frozen-lockfile",
                    "--ignore-scripts",
                    "--non-interactive",
                    "--prefer-offline",
                ]),
                step(&[
                    "install",
                    "--ignore-scripts",
                    "--non-interactive",
                    "--prefer-offline",
                ]),
            ],
        ),
        PackageManager::Berry => (
            "yarn",
            vec![step(&["install", "--immutable", "--mode=skip-build"])],
        ),
        PackageManager::Bun => (
            "bun",
            vec![step(&["install", "--frozen-lockfile", "--ignore-scripts"])],
        ),
    }
}

/// Installs `json` (the files installing needs) in a scratch directory with `pm`'s frozen
/// mode, and checks the lockfile `lockfile` is left as written.
pub fn verify(pm: PackageManager, json: &BTreeMap<String, Content>, lockfile: &str) -> Verdict {
    let (program, attempts) = commands(pm);
    let Some(path) = on_path(program) else {
        return Verdict::Missing(program);
    };
    let scratch = match output::stage(&std::env::temp_dir().join("vx-prune-verify")) {
        Ok(scratch) => scratch,
        Err(e) => return Verdict::Failed(program.into(), vec![format!("{e:?}")]),
    };
    if let Err(e) = output::write_all(&scratch.dir, json) {
        return Verdict::Failed(program.into(), vec![format!("{e:?}")]);
    }
    let started = Instant::now();
    let mut shown = Vec::new();
    let mut steps = attempts.iter().peekable();
    while let Some(step) = steps.next() {
        let line = format!("{program} {}", step.args.join(" "));
        let run = Command::new(&path)
            .args(step.args)
            .current_dir(&scratch.dir)
            .env("NO_COLOR", "1")
            .env("FORCE_COLOR", "0")
            .env("CI", "true")
            .stdin(Stdio::null())
            .output();
        let out = match run {
            Ok(out) => out,
            Err(e) => return Verdict::Failed(line, vec![e.to_string()]),
        };
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let fallback = step.fallback_if.is_some_and(|mark| said.contains(mark));
        if !out.status.success() && !fallback {
            let status = out
                .status
                .code()
                .map_or("was killed".to_string(), |c| format!("exited with {c}"));
            return Verdict::Failed(line, tail(&said, status));
        }
        if let Some(difference) = changed(&scratch.dir.join(lockfile), json.get(lockfile)) {
            return Verdict::Failed(line, vec![format!("it rewrote {lockfile}: {difference}")]);
        }
        if out.status.success() {
            shown.push(line);
            if step.fallback_if.is_some() {
                // Its fallback is not needed.
                steps.next();
            }
        }
    }
    Verdict::Passed(shown.join("`, then `"), started.elapsed())
}

/// The last lines the package manager printed, after how it ended.
fn tail(said: &str, status: String) -> Vec<String> {
    let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(20);
    std::iter::once(status)
        .chain(lines[from..].iter().map(|l| l.to_string()))
        .collect()
}

/// How the lockfile the install left differs from the one written, if it does: the first
/// line that differs.
fn changed(after: &Path, written: Option<&Content>) -> Option<String> {
    let Some(Content::Written(bytes, _)) = written else {
        return None;
    };
    let now = std::fs::read(after).unwrap_or_default();
    if &now == bytes {
        return None;
    }
    let (a, b) = (
        String::from_utf8_lossy(bytes),
        String::from_utf8_lossy(&now),
    );
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 1;
    loop {
        match (la.next(), lb.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (x, y) => {
                return Some(format!(
                    "line {n}: vx wrote `{}`, it wrote `{}`",
                    x.unwrap_or("(the end)"),
                    y.unwrap_or("(the end)")
                ))
            }
        }
    }
}

/// `program` as the shell would find it on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
