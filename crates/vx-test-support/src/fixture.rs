//! Fixture workspaces for CLI tests: a temporary git repository with files written by the test,
//! the real `vx` binary run in it, and redaction of the run-dependent parts of its output
//! (durations, temporary paths) so outputs can be compared as text (TEST-1).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use regex::Regex;

/// Fixture W's `packages/lib/vx.toml` with `lib#build` cached (`src/**` → `dist/**`).
pub const CACHED_LIB: &str = concat!(
    "[tasks.build]\n",
    "command = \"mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\n",
    "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
);

/// A temporary workspace directory, removed when dropped.
pub struct Fixture {
    dir: tempfile::TempDir,
    /// The `vx` binary under test.
    bin: PathBuf,
}

/// What one `vx` invocation produced.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    /// stdout with durations and temporary paths replaced by placeholders.
    pub fn stdout_redacted(&self, fixture: &Fixture) -> String {
        redact(&self.stdout, fixture.root())
    }

    pub fn stderr_redacted(&self, fixture: &Fixture) -> String {
        redact(&self.stderr, fixture.root())
    }
}

impl Fixture {
    /// An empty git repository (with a committer identity) using `bin` as `vx`.
    pub fn new(bin: impl Into<PathBuf>) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("vx-test-")
            .tempdir()
            .expect("create a temp dir");
        let fixture = Fixture {
            dir,
            bin: bin.into(),
        };
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture.git(&["config", "user.email", "test@example.com"]);
        fixture.git(&["config", "user.name", "vx test"]);
        fixture.git(&["config", "commit.gpgsign", "false"]);
        fixture
    }

    /// Fixture W, the acceptance scenarios' workspace (ACC-n in docs/requirements.md): packages
    /// lib, app (depends on lib) and docs, committed.
    pub fn w(bin: impl Into<PathBuf>) -> Fixture {
        let f = Fixture::new(bin);
        f.write(".gitignore", "dist/\n.vx/\n");
        f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
        f.write(
            "packages/lib/package.json",
            r#"{ "name": "lib", "version": "1.0.0" }"#,
        );
        f.write(
            "packages/lib/vx.toml",
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\n",
        );
        f.write("packages/lib/src/a.txt", "a\n");
        f.write(
            "packages/app/package.json",
            r#"{ "name": "app", "version": "1.0.0", "dependencies": { "lib": "workspace:*" } }"#,
        );
        f.write(
            "packages/app/vx.toml",
            concat!(
                "[tasks.build]\n",
                "command = \"mkdir -p dist && cat ../lib/dist/out.txt src/*.txt > dist/app.txt && echo built app\"\n",
                "depends-on = [\"^build\"]\n\n",
                "[tasks.test]\n",
                "command = \"test -s dist/app.txt && echo ok\"\n",
                "depends-on = [\"build\"]\n\n",
                "[tasks.check]\n",
                "depends-on = [\"build\", \"test\"]\n",
            ),
        );
        f.write("packages/app/src/b.txt", "b\n");
        f.write("packages/docs/package.json", r#"{ "name": "docs" }"#);
        f.write(
            "packages/docs/vx.toml",
            "[tasks.build]\ncommand = \"echo docs\"\n",
        );
        f.commit();
        f
    }

    /// Fixture W as the acceptance scenarios take it: lib#build, app#build and app#test cached.
    pub fn w_cached(bin: impl Into<PathBuf>) -> Fixture {
        let f = Fixture::w(bin);
        f.write("packages/lib/vx.toml", CACHED_LIB);
        f.write(
            "packages/app/vx.toml",
            concat!(
                "[tasks.build]\n",
                "command = \"mkdir -p dist && cat ../lib/dist/out.txt src/*.txt > dist/app.txt && echo built app\"\n",
                "depends-on = [\"^build\"]\n",
                "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n",
                "[tasks.test]\n",
                "command = \"test -s dist/app.txt && echo ok\"\n",
                "depends-on = [\"build\"]\n",
                "cache = { inputs = [\"src/**\"], outputs = [] }\n\n",
                "[tasks.check]\n",
                "depends-on = [\"build\", \"test\"]\n",
            ),
        );
        f.commit();
        f
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes a file, creating parent directories.
    pub fn write(&self, rel: &str, contents: &str) -> &Fixture {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::fs::write(&path, contents).expect("write fixture file");
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    pub fn git(&self, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(self.root())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdout(Stdio::null())
            .status()
            .expect("run git");
        assert!(status.success(), "git {args:?} failed");
    }

    /// Stages and commits everything.
    pub fn commit(&self) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "fixture", "--allow-empty"]);
    }

    /// A `vx` command in `rel` (relative to the root), with a clean environment: no `CI`, no
    /// variable of a CI (they choose `--affected`'s base, sections and reports), colour
    /// variables or `VX_*` from the test's own environment.
    pub fn command(&self, rel: &str, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command.args(args).current_dir(self.path(rel));
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            // A CI's own variables (`GITHUB_STEP_SUMMARY`, `CI_COMMIT_BEFORE_SHA`, …) choose
            // `--affected`'s base and where reports go: a test sets the ones it means.
            const CI_PREFIXES: [&str; 8] = [
                "GITHUB_",
                "GITLAB_",
                "CI_",
                "BUILDKITE",
                "SYSTEM_PULLREQUEST",
                "CIRCLE",
                "TEAMCITY_",
                "TF_BUILD",
            ];
            let drop = matches!(
                name.as_str(),
                "CI" | "NO_COLOR" | "FORCE_COLOR" | "CLICOLOR_FORCE"
            ) || CI_PREFIXES.iter().any(|p| name.starts_with(p))
                || name.starts_with("VX_")
                || name.starts_with("GIT_");
            if drop {
                command.env_remove(&name);
            }
        }
        command
    }

    /// Runs `vx args…` at the root.
    pub fn vx(&self, args: &[&str]) -> Output {
        self.vx_in("", args, &[])
    }

    /// Runs `vx args…` in `rel` with extra environment variables.
    pub fn vx_in(&self, rel: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.command(rel, args);
        command.envs(env.iter().copied()).stdin(Stdio::null());
        let started = Instant::now();
        let output = command.output().expect("run vx");
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            elapsed: started.elapsed(),
        }
    }
}

/// Replaces durations (`12ms`, `3.41s`, `1m02s`) with `[t]`, short keys (12 hex digits) with
/// `[key]` and the fixture root with `[root]` (TEST-1).
pub fn redact(text: &str, root: &Path) -> String {
    static DURATION: OnceLock<Regex> = OnceLock::new();
    static KEY: OnceLock<Regex> = OnceLock::new();
    let duration =
        DURATION.get_or_init(|| Regex::new(r"\b\d+(ms|\.\d\ds|m\d\ds)\b").expect("valid regex"));
    let key = KEY.get_or_init(|| Regex::new(r"\b[0-9a-f]{12}\b").expect("valid regex"));
    let mut text = text.to_string();
    for root in [root.to_path_buf(), root.canonicalize().unwrap_or_default()] {
        let root = root.to_string_lossy().into_owned();
        if !root.is_empty() {
            text = text.replace(&root, "[root]");
        }
    }
    let text = key.replace_all(&text, "[key]");
    duration.replace_all(&text, "[t]").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_durations_and_root() {
        let root = Path::new("/tmp/vx-test-abc");
        assert_eq!(
            redact("⏺ 12ms success in /tmp/vx-test-abc/x · 3.41s · 1m02s", root),
            "⏺ [t] success in [root]/x · [t] · [t]"
        );
    }
}
