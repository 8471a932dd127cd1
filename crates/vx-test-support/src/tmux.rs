//! A real terminal for tests: a command run in a detached tmux session of a fixed size, whose
//! screen the test reads (`capture-pane`) and into which it types (`send-keys`).
//!
//! Each [`Tmux`] has its own server (its socket in a temporary directory), so tests running in
//! parallel never see each other's sessions, and dropping it kills the server and what runs in
//! it. The command's exit code is printed on the screen after it (`[exit N]`) and the pane is
//! then kept open, so the final screen can be read.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long [`Tmux::wait_for`] waits.
const WAIT: Duration = Duration::from_secs(20);

pub struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// `program args…` in `dir`, on a `width`×`height` terminal with `env` set, or `None`
    /// (after saying the test is skipped) when tmux is missing outside CI and `scripts/test`.
    pub fn start(
        dir: &Path,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        (width, height): (u16, u16),
    ) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            let why = "tmux is missing: install it with `apt-get install tmux` (scripts/test does)";
            assert!(!crate::tools::tools_required(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let socket = tmp.path().join("tmux.sock");
        // A terminal session outside CI: the test's own `CI` (set in CI) would select the CI
        // flow, which draws nothing live.
        let mut line = format!(
            "cd {} && exec env -u CI -u GITHUB_ACTIONS -u GITLAB_CI -u TF_BUILD -u BUILDKITE -u TEAMCITY_VERSION -u CIRCLECI",
            quote(&dir.display().to_string())
        );
        for (name, value) in env {
            line.push_str(&format!(" {name}={}", quote(value)));
        }
        line.push_str(" sh -c ");
        // A trap (not an ignore, which the command would inherit) keeps the shell alive when
        // Ctrl-C reaches the whole foreground group, so the exit code and screen stay.
        let mut inner = format!("trap : INT; {}", quote(&program.display().to_string()));
        for arg in args {
            inner.push(' ');
            inner.push_str(&quote(arg));
        }
        inner.push_str("; echo \"[exit $?]\"; exec sleep 3600");
        line.push_str(&quote(&inner));
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg(line)
            .env_remove("TMUX")
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        Some(Tmux { socket, _dir: tmp })
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket);
        command
    }

    /// What the terminal shows now, one line per row, trailing blanks trimmed.
    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (bounded) until the screen satisfies `done`, and returns that screen.
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {what}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Waits (bounded) until `text` is on the screen, and returns the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("`{text}`"), |s| s.contains(text))
    }

    /// Waits for the command to end; its exit code and the final screen.
    pub fn finish(&self) -> (i32, String) {
        let screen = self.wait_for("[exit ");
        let code = screen
            .rsplit("[exit ")
            .next()
            .and_then(|rest| rest.split(']').next())
            .and_then(|n| n.parse().ok())
            .expect("an exit code");
        (code, screen)
    }

    /// Types keys, in tmux's names (`Down`, `Enter`, `C-c`, `q`).
    pub fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .arg("send-keys")
            .args(keys)
            .status()
            .expect("tmux send-keys runs");
        assert!(status.success(), "tmux send-keys {keys:?} failed");
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-l", text])
            .status()
            .expect("tmux send-keys runs");
        assert!(status.success(), "tmux send-keys -l {text:?} failed");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// `text` quoted for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
