//! vx on a real pseudo-terminal: as its controlling terminal and standard streams, with a
//! window of [`COLUMNS`] × [`ROWS`], everything it writes collected; [`final_screen`] replays
//! that through a terminal emulator to get what a user would see at the end.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vx_test_support::fixture::Fixture;

pub const COLUMNS: u16 = 100;
pub const ROWS: u16 = 60;

/// vx running with a pseudo-terminal as its controlling terminal and standard streams.
pub struct OnPty {
    child: Option<Child>,
    master: File,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl OnPty {
    pub fn start(f: &Fixture, args: &[&str]) -> OnPty {
        OnPty::start_with(f, args, false, false)
    }

    /// [`OnPty::start`] with extra environment variables.
    pub fn start_env(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> OnPty {
        OnPty::launch(f, args, env, false, None)
    }

    /// [`OnPty::finish`] for a value that cannot be moved out of.
    pub fn finish_ref(&mut self) -> (Option<i32>, String) {
        let status = self.child.take().unwrap().wait().unwrap();
        self.settle();
        (status.code(), self.screen())
    }

    /// With `tostop`, the terminal stops a background process that writes to it (`stty
    /// tostop`), as some users' shells are set up.
    ///
    /// With `background`, vx runs as a background job of a job-control shell on that terminal
    /// (`vx … &`), so its process group is not the terminal's foreground.
    pub fn start_with(f: &Fixture, args: &[&str], tostop: bool, background: bool) -> OnPty {
        let shell = background.then_some("set -m; \"$0\" \"$@\" & wait $!");
        OnPty::launch(f, args, &[], tostop, shell)
    }

    /// vx run by `sh -c script` on the terminal, as `"$0" "$@"` (the script may use job
    /// control with `set -m`).
    pub fn start_in_shell(f: &Fixture, args: &[&str], script: &str) -> OnPty {
        OnPty::launch(f, args, &[], false, Some(script))
    }

    fn launch(
        f: &Fixture,
        args: &[&str],
        env: &[(&str, &str)],
        tostop: bool,
        shell: Option<&str>,
    ) -> OnPty {
        let size = nix::pty::Winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("a pseudo-terminal");
        if tostop {
            use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg};
            let mut modes = tcgetattr(&pty.slave).unwrap();
            modes.local_flags.insert(LocalFlags::TOSTOP);
            tcsetattr(&pty.slave, SetArg::TCSANOW, &modes).unwrap();
        }
        let slave: OwnedFd = pty.slave;
        // `setsid --ctty` (util-linux) starts vx in a new session whose controlling terminal
        // is the pseudo-terminal on its stdin, as a terminal emulator's shell would.
        let vx = f.command("", args);
        let mut command = std::process::Command::new("setsid");
        command.arg("--ctty");
        if let Some(script) = shell {
            // With `set -m` (job control) a job gets a process group of its own.
            command.args(["sh", "-c", script]).arg(vx.get_program());
        } else {
            command.arg(vx.get_program());
        }
        command.args(vx.get_args());
        if let Some(dir) = vx.get_current_dir() {
            command.current_dir(dir);
        }
        for (name, value) in vx.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        for (name, value) in env {
            command.env(name, value);
        }
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = command.spawn().expect("vx starts");
        // The command holds copies of the slave end; without dropping them the master would
        // never see the end of the output.
        drop(command);
        let master = File::from(pty.master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Reading the master fails (EIO) once every slave end is closed.
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        OnPty {
            child: Some(child),
            master,
            screen,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits (bounded) until the terminal has shown `text`.
    pub fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.screen().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}; it shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn type_keys(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    /// Waits for vx to exit; returns its exit code and everything the terminal showed.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.take().unwrap().wait().unwrap();
        self.settle();
        (status.code(), self.screen())
    }

    /// Lets the reader catch up with what vx wrote just before exiting.
    fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut last = self.screen().len();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            let now = self.screen().len();
            if now == last {
                break;
            }
            last = now;
        }
    }
}

impl Drop for OnPty {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The text on the screen after a terminal of the pty's size (tall enough that nothing
/// scrolls away in these tests) processed `output`.
pub fn final_screen(output: &[u8]) -> String {
    let mut parser = vt100::Parser::new(ROWS * 4, COLUMNS, 0);
    parser.process(output);
    parser.screen().contents()
}
