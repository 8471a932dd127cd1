//! The package manager's frozen install, run on a copy of what installing needs (the `json/`
//! files) before `vx prune` says the output works: the pruned lockfile is accepted as it is,
//! or the package manager's own words say what differs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use vx_exec::{SpawnSpec, StdinMode, Supervisor};
use vx_workspace::lockfile::prune::PackageManager;

use super::output;
use super::plan::Content;

/// How a check ended.
pub enum Verdict {
    /// The frozen install accepted the lockfile: the command line and how long it took.
    Passed(String, Duration),
    /// It refused it, or rewrote it: the command line and what to show.
    Failed(String, Vec<String>),
    /// The package manager could not reach a registry (or a git host): the lockfile was not
    /// judged. The command line and what it said.
    Unreachable(String, Vec<String>),
    /// The package manager is not installed.
    Missing(&'static str),
    /// The check itself could not be made here (a scratch directory, starting the program).
    Error(String),
}

/// The program and its runs: frozen, no install scripts (what the lockfile resolves is
/// checked, not what packages run), from the local store or cache first.
fn commands(pm: PackageManager) -> (&'static str, Vec<&'static [&'static str]>) {
    match pm {
        PackageManager::Pnpm => (
            "pnpm",
            vec![&[
                "install",
                "--frozen-lockfile",
                "--ignore-scripts",
                "--prefer-offline",
            ]],
        ),
        PackageManager::Npm => (
            "npm",
            vec![&[
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefer-offline",
            ]],
        ),
        // Yarn 1's --frozen-lockfile lets a workspace member's new dependency through: a
        // plain install after it must leave the lockfile as it is, too.
        PackageManager::Yarn1 => (
            "yarn",
            vec![
                &[
                    "install",
                    "--frozen-lockfile",
                    "--ignore-scripts",
                    "--non-interactive",
                    "--prefer-offline",
                ],
                &[
                    "install",
                    "--ignore-scripts",
                    "--non-interactive",
                    "--prefer-offline",
                ],
            ],
        ),
        PackageManager::Berry => (
            "yarn",
            vec![&["install", "--immutable", "--mode=skip-build"]],
        ),
        PackageManager::Bun => (
            "bun",
            vec![&["install", "--frozen-lockfile", "--ignore-scripts"]],
        ),
    }
}

/// The package manager's way to write the lockfile it wants, without installing where it can:
/// after a refusal, what differs is named from it.
fn update(pm: PackageManager) -> &'static [&'static str] {
    match pm {
        PackageManager::Pnpm => &[
            "install",
            "--lockfile-only",
            "--no-frozen-lockfile",
            "--ignore-scripts",
            "--prefer-offline",
        ],
        PackageManager::Npm => &[
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--prefer-offline",
        ],
        PackageManager::Yarn1 => &[
            "install",
            "--ignore-scripts",
            "--non-interactive",
            "--prefer-offline",
        ],
        PackageManager::Berry => &["install", "--mode=update-lockfile"],
        PackageManager::Bun => &["install", "--lockfile-only", "--ignore-scripts"],
    }
}

/// Installs `json` (the files installing needs) in a scratch directory with `pm`'s frozen
/// mode, and checks the lockfile `lockfile` is left as written.
pub fn verify(pm: PackageManager, json: &BTreeMap<String, Content>, lockfile: &str) -> Verdict {
    let (program, attempts) = commands(pm);
    let Some(path) = on_path(program) else {
        return Verdict::Missing(program);
    };
    let scratch = match scratch(json) {
        Ok(scratch) => scratch,
        Err(e) => return Verdict::Error(e),
    };
    let started = Instant::now();
    let mut shown = Vec::new();
    for args in attempts {
        let line = format!("{program} {}", args.join(" "));
        let ran = run(&path, args, scratch.path(), true);
        if ran.code == 127 && ran.said.is_empty() {
            return Verdict::Error(format!("cannot start `{line}`"));
        }
        if ran.code != 0 {
            let status = if ran.timed_out {
                format!("was stopped after {} minutes", TIMEOUT.as_secs() / 60)
            } else {
                format!("exited with {}", ran.code)
            };
            let mut said = tail(&ran.said, status);
            if unreachable(&ran.said) {
                return Verdict::Unreachable(line, said);
            }
            said.extend(explain(pm, &path, json, lockfile));
            return Verdict::Failed(line, said);
        }
        if let Some(difference) = changed(&scratch.path().join(lockfile), json.get(lockfile)) {
            let mut said = vec![format!("it rewrote {lockfile} (- vx's line, + its line):")];
            said.extend(difference);
            return Verdict::Failed(line, said);
        }
        shown.push(line);
    }
    Verdict::Passed(shown.join("`, then `"), started.elapsed())
}

/// How long one run of the package manager may take before it is stopped.
const TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How a run of the package manager ended.
struct Ran {
    /// Its exit code, 128 + a signal, 143 or 137 when stopped at the timeout, 127 when it did
    /// not start.
    code: i32,
    timed_out: bool,
    /// Its stdout, then its stderr.
    said: String,
}

/// The package manager with `args` in `dir`, under vx's supervisor as a task is (its own
/// session, whatever it leaves running stopped when it ends, stopped at [`TIMEOUT`]), with
/// vx's environment; under `CI=true` when `frozen` (where package managers refuse to write a
/// lockfile), else with writing allowed.
fn run(path: &Path, args: &[&str], dir: &Path, frozen: bool) -> Ran {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k != "CI" && k != "NO_COLOR" && k != "FORCE_COLOR")
        .collect();
    env.push(("NO_COLOR".into(), "1".into()));
    env.push(("FORCE_COLOR".into(), "0".into()));
    if frozen {
        env.push(("CI".into(), "true".into()));
    } else {
        env.push(("YARN_ENABLE_IMMUTABLE_INSTALLS".into(), "false".into()));
    }
    let spec = SpawnSpec {
        program: path.to_path_buf(),
        arg0: path.file_name().unwrap_or_default().to_os_string(),
        args: args.iter().map(OsString::from).collect(),
        cwd: dir.to_path_buf(),
        env,
        stdin: StdinMode::Null,
        timeout: Some(TIMEOUT),
        kill_grace: Duration::from_secs(5),
        drain: Duration::from_millis(250),
        stop_leftovers_on_exit: true,
        sandbox: None,
    };
    let out = Supervisor::new().output(spec);
    Ran {
        code: out.completion.exit_code,
        timed_out: out.completion.timed_out,
        said: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A scratch directory under the system's temporary directory (a fresh, unguessable name,
/// removed when dropped) holding `json`.
fn scratch(json: &BTreeMap<String, Content>) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::Builder::new()
        .prefix("vx-prune-")
        .tempdir()
        .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    output::write_all(dir.path(), json).map_err(|e| format!("{e:?}"))?;
    Ok(dir)
}

/// What differs: the lines the package manager, let to write the lockfile in another scratch
/// copy, changes in the pruned one (at most 20). Nothing when that run fails too.
fn explain(
    pm: PackageManager,
    path: &Path,
    json: &BTreeMap<String, Content>,
    lockfile: &str,
) -> Vec<String> {
    let Ok(scratch) = scratch(json) else {
        return Vec::new();
    };
    if run(path, update(pm), scratch.path(), false).code != 0 {
        return Vec::new();
    }
    match changed(&scratch.path().join(lockfile), json.get(lockfile)) {
        Some(difference) => std::iter::once(format!(
            "what {} writes instead (`{}`; - vx's line, + its line):",
            pm.name(),
            update(pm).join(" ")
        ))
        .chain(difference)
        .collect(),
        None => Vec::new(),
    }
}

/// Whether the package manager's words say it could not reach the network (what npm, pnpm,
/// yarn and bun print for a failed lookup or connection): the lockfile was not judged then. A
/// registry's 404 is not among them: a lockfile that names a package the registry does not
/// have is refused, whoever wrote it.
fn unreachable(said: &str) -> bool {
    const SIGNS: [&str; 8] = [
        "ENOTFOUND",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ECONNRESET",
        "ETIMEDOUT",
        "getaddrinfo",
        "ERR_PNPM_META_FETCH_FAIL",
        "ConnectionRefused",
    ];
    SIGNS.iter().any(|sign| said.contains(sign))
}

/// The last lines the package manager printed, after how it ended.
fn tail(said: &str, status: String) -> Vec<String> {
    // npm follows its reason with the verb's usage text.
    let said = said
        .split("npm error Clean install a project")
        .next()
        .unwrap_or(said);
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim() != "npm error")
        .collect();
    let from = lines.len().saturating_sub(20);
    std::iter::once(status)
        .chain(lines[from..].iter().map(|l| l.to_string()))
        .collect()
}

/// How the lockfile in `after` differs from the one written, if it does: its changed lines
/// (`- ` what vx wrote, `+ ` what is there now), at most 20.
fn changed(after: &Path, written: Option<&Content>) -> Option<Vec<String>> {
    let Some(Content::Written(bytes, _)) = written else {
        return None;
    };
    let now = std::fs::read(after).unwrap_or_default();
    if &now == bytes {
        return None;
    }
    let (ours, theirs) = (
        String::from_utf8_lossy(bytes),
        String::from_utf8_lossy(&now),
    );
    let diff = similar::TextDiff::from_lines(ours.as_ref(), theirs.as_ref());
    let mut lines: Vec<String> = diff
        .iter_all_changes()
        .filter_map(|change| {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "- ",
                similar::ChangeTag::Insert => "+ ",
                similar::ChangeTag::Equal => return None,
            };
            Some(format!("{sign}{}", change.value().trim_end()))
        })
        .collect();
    let more = lines.len().saturating_sub(20);
    lines.truncate(20);
    if more > 0 {
        lines.push(format!("… and {more} more changed lines"));
    }
    if lines.is_empty() {
        lines.push("(line endings or the final newline)".into());
    }
    Some(lines)
}

/// `program` as the shell would find it on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").ok()?;
    // A relative entry (`node_modules/.bin`) is found from here, and run from the scratch
    // directory: made absolute.
    let found = vx_exec::subprocess::find_on_path(program, &path)?;
    Some(std::env::current_dir().unwrap_or_default().join(found))
}
