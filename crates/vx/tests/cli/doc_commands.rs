//! The command lines the documentation shows run as shown, in order, with bash in one
//! copy of `examples/demo` per page (a fresh git repository), as a reader following the page
//! would:
//!
//! - each `vx …` line of a `sh`/`bash` block;
//! - each `$ …` line of an example with output (any other block that has a `$ vx …` line), setup
//!   lines such as `$ rm -rf packages/ui/dist` included; a `$` line right below a frame's
//!   `┌─` header is the task's command, not the reader's. The `error:` and `vx:` lines the
//!   example shows below a command must be lines of what it prints;
//! - a `toml` block that opens with `# add to <path>` is appended to that file.
//!
//! A command must exit 0, or with the status its ` # exits N` comment names; a long-running one
//! (a dev server, `vx watch`) passes when it is still running after a few seconds with no
//! `error:` line, and is then stopped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// One thing a reader of a page does, with the page's line number.
#[derive(Debug, PartialEq)]
enum Step {
    /// Runs `command`, which should exit `expect` and print each of the `shown` lines.
    Run {
        line: usize,
        command: String,
        expect: i32,
        shown: Vec<String>,
    },
    /// Appends `text` to the file at `path`.
    Append {
        line: usize,
        path: String,
        text: String,
    },
    /// A line that names vx in a way the test cannot run: a failure, so that no command line
    /// escapes.
    Unrecognised { line: usize, text: String },
}

/// Whether the shell command line `text` runs vx: in any of its `&&`/`;`/`|`-separated parts,
/// or in a `$(…)`/`<(…)`, the first word after `NAME=value` assignments and wrappers (`env`,
/// `time`, `timeout` and their options and duration, `cd DIR &&` being its own part) is `vx`.
fn runs_vx(text: &str) -> bool {
    const WRAPPERS: [&str; 5] = ["env", "time", "timeout", "exec", "command"];
    text.split(['&', ';', '|', '(', ')']).any(|part| {
        let mut words = part
            .split_whitespace()
            .skip_while(|w| w.contains('=') || matches!(*w, "$" | "<" | "source" | "eval"));
        match words.next() {
            Some(w) if WRAPPERS.contains(&w) => words.any(|w| w == "vx"),
            Some(w) => w == "vx",
            None => false,
        }
    })
}

/// Whether `text` mentions the command `vx` at all (the word, not `VX_…` or `vx.toml`).
fn mentions_vx(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "()<\"'`$;&|".contains(c))
        .any(|w| w == "vx")
}

/// `text` without a trailing ` # comment` (a task id's `#` has no space before it), and the
/// status the comment says it exits with (`# exits 2`), or 0.
fn command_and_status(text: &str) -> (String, i32) {
    let Some(at) = text.find(" # ") else {
        return (text.trim().to_string(), 0);
    };
    let comment = &text[at + 3..];
    let status = regex::Regex::new(r"\bexits (\d+)")
        .unwrap()
        .captures(comment)
        .map(|c| c[1].parse().unwrap())
        .unwrap_or(0);
    (text[..at].trim_end().to_string(), status)
}

/// What a reader of `markdown` does, in order.
fn steps(markdown: &str) -> Vec<Step> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n];
        let indent = line.len() - line.trim_start().len();
        let Some(fence) = line.trim_start().strip_prefix("```") else {
            n += 1;
            continue;
        };
        // The language is the first word of the fence's info (```sh title=… is sh).
        let lang = fence.split_whitespace().next().unwrap_or("");
        let first = n + 1;
        let mut end = first;
        while end < lines.len() && !lines[end].trim_start().starts_with("```") {
            end += 1;
        }
        // A block inside a list item: its lines lose the fence's indent.
        let block: Vec<&str> = lines[first..end]
            .iter()
            .map(|l| {
                let spaces = l.len() - l.trim_start().len();
                &l[spaces.min(indent)..]
            })
            .collect();
        match lang {
            "sh" | "bash" | "shell" => {
                for (i, line) in block.iter().enumerate() {
                    let text = line.trim();
                    let text = text.strip_prefix("$ ").unwrap_or(text);
                    if runs_vx(text) {
                        let (command, expect) = command_and_status(text);
                        found.push(Step::Run {
                            line: first + i + 1,
                            command,
                            expect,
                            shown: Vec::new(),
                        });
                    } else if !text.starts_with('#') && mentions_vx(text) {
                        found.push(Step::Unrecognised {
                            line: first + i + 1,
                            text: text.to_string(),
                        });
                    }
                }
            }
            "toml" => {
                if let Some(path) = block
                    .first()
                    .and_then(|l| l.trim().strip_prefix("# add to "))
                {
                    found.push(Step::Append {
                        line: first + 1,
                        path: path.trim().to_string(),
                        text: block[1..].join("\n") + "\n",
                    });
                }
            }
            "" | "console" | "text" => {
                // The reader's `$` lines: not a frame's command right below its header.
                let prompts: Vec<usize> = (0..block.len())
                    .filter(|&i| {
                        block[i].starts_with("$ ") && !(i > 0 && block[i - 1].starts_with("┌─"))
                    })
                    .collect();
                if prompts.iter().any(|&i| runs_vx(&block[i][2..])) {
                    for (k, &i) in prompts.iter().enumerate() {
                        let next = prompts.get(k + 1).copied().unwrap_or(block.len());
                        let (command, expect) = command_and_status(&block[i][2..]);
                        let shown = block[i + 1..next]
                            .iter()
                            .map(|l| l.trim())
                            .filter(|l| {
                                l.starts_with("error:")
                                    || l.starts_with("vx:")
                                    || l.starts_with("hint:")
                            })
                            .map(str::to_string)
                            .collect();
                        found.push(Step::Run {
                            line: first + i + 1,
                            command,
                            expect,
                            shown,
                        });
                    }
                } else {
                    for &i in &prompts {
                        if mentions_vx(&block[i][2..]) {
                            found.push(Step::Unrecognised {
                                line: first + i + 1,
                                text: block[i].to_string(),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        n = end + 1;
    }
    found
}

/// A copy of `examples/demo` in a fresh git repository that looks like a clone with work on it:
/// `origin/main` (also `origin/HEAD`) is the first commit, and `HEAD` one more that edits
/// `packages/ui` and `apps/web`, so the pages' `--affected` and `[origin/main]` examples select
/// something.
fn demo() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(repo.join("examples/demo/."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let git = |args: &[&str]| {
        // Fixed dates: the commits are the same ones in every copy, so a page can show their
        // hashes.
        let status = Command::new("git")
            .args(["-c", "user.email=docs@vx", "-c", "user.name=docs"])
            .args(args)
            .env("GIT_AUTHOR_DATE", "2026-12-01T10:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-12-01T10:00:00Z")
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    // What a run of the README's first command left in the checkout (`.vx`, `dist/`) is not
    // the demo.
    git(&["clean", "-fdXq"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "demo"]);
    git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    for file in ["packages/ui/src/button.js", "apps/web/src/app.js"] {
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("// a later change\n");
        std::fs::write(&path, text).unwrap();
    }
    git(&["commit", "-qam", "later"]);
    dir
}

/// Runs `command` with bash in `dir` (vx first on PATH, in a session of its own): its exit code,
/// or `None` when it was still running after `patience` and was stopped; and its output.
fn run(dir: &Path, command: &str, patience: Duration) -> (Option<i32>, String) {
    let bin: PathBuf = Path::new(crate::vx_bin()).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Outside the workspace: a file in it would be a change `--affected` sees.
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("output.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut command_line = Command::new("setsid");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("VX_") {
            command_line.env_remove(name);
        }
    }
    let mut child = command_line
        .args(["bash", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        // As on a developer's terminal, whatever runs the tests.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > patience {
            let group = Pid::from_raw(-(child.id() as i32));
            let _ = kill(group, Signal::SIGTERM);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    (code, output)
}

/// Does every step of `page` in order in one demo copy; the failures, described.
fn failures_of(page: &str) -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join(page)).unwrap();
    let steps = steps(&text);
    if steps.is_empty() {
        return Vec::new();
    }
    let dir = demo();
    let mut failures = Vec::new();
    for step in steps {
        let (line, command, expect, shown) = match step {
            Step::Unrecognised { line, text } => {
                failures.push(format!(
                    "{page}:{line}: `{text}` names vx, but is no command line the test can run"
                ));
                continue;
            }
            Step::Append { line, path, text } => {
                let file = dir.path().join(&path);
                let mut old = std::fs::read_to_string(&file).unwrap_or_default();
                if !old.is_empty() && !old.ends_with('\n') {
                    old.push('\n');
                }
                if let Err(e) = std::fs::write(&file, old + "\n" + &text) {
                    failures.push(format!("{page}:{line}: cannot add to {path}: {e}"));
                }
                continue;
            }
            Step::Run {
                line,
                command,
                expect,
                shown,
            } => (line, command, expect, shown),
        };
        let long_running = command.contains("#dev") || command.contains("vx watch");
        let patience = if long_running {
            Duration::from_secs(4)
        } else {
            Duration::from_secs(60)
        };
        let (code, output) = run(dir.path(), &command, patience);
        let status_ok = match code {
            Some(code) => code == expect,
            None => long_running && !output.contains("error:"),
        };
        let printed: Vec<&str> = output.lines().map(str::trim).collect();
        let missing: Vec<&String> = shown
            .iter()
            .filter(|l| !printed.contains(&l.as_str()))
            .collect();
        if !status_ok || !missing.is_empty() {
            failures.push(format!(
                "{page}:{line}: `{command}` ended with {code:?} (expected {expect}){}:\n{output}",
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(", without the lines {missing:?}")
                }
            ));
        }
    }
    failures
}

#[test]
fn the_readme_command_lines_run_on_the_demo() {
    let failures = failures_of("README.md");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every page of docs/, each in its own copy of the demo.
#[test]
fn the_docs_command_lines_run_on_the_demo() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages: Vec<String> = std::fs::read_dir(repo.join("docs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    let failures: Vec<String> = pages.iter().flat_map(|page| failures_of(page)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_steps_of_a_page_are_found_with_their_statuses_and_shown_lines() {
    let page = "text\n```sh\nvx run web#dev   # a server\nls\nvx run nope  # exits 2\n```\n\
```toml\nvx = 1\n```\n```toml\n# add to apps/api/vx.toml\n[tasks.x]\ncommand = \"true\"\n```\n\
```\n$ rm -rf dist\n$ vx run x\n┌─ api#x\n$ true\nvx: a note\nerror: no\n  hint: try\n$ vx why  # exits 2\n```\n\
```\n$ taplo check\nerror: x\n```\n\
- item\n\n  ```\n  $ vx show\n  ```\n\
```sh title=x\n$ env A=1 vx info\ntime vx run x\necho \"$(vx schema)\"\n```\n\
```\n$ xargs vx\n```\n```sh\nsudo vx run x\n```\n";
    let run = |line, command: &str, expect, shown: &[&str]| Step::Run {
        line,
        command: command.to_string(),
        expect,
        shown: shown.iter().map(|s| s.to_string()).collect(),
    };
    let odd = |line, text: &str| Step::Unrecognised {
        line,
        text: text.to_string(),
    };
    assert_eq!(
        steps(page),
        [
            run(3, "vx run web#dev", 0, &[]),
            run(5, "vx run nope", 2, &[]),
            Step::Append {
                line: 11,
                path: "apps/api/vx.toml".to_string(),
                text: "[tasks.x]\ncommand = \"true\"\n".to_string()
            },
            run(16, "rm -rf dist", 0, &[]),
            run(17, "vx run x", 0, &["vx: a note", "error: no", "hint: try"]),
            run(23, "vx why", 2, &[]),
            // Inside a list item.
            run(32, "vx show", 0, &[]),
            run(35, "env A=1 vx info", 0, &[]),
            run(36, "time vx run x", 0, &[]),
            run(37, "echo \"$(vx schema)\"", 0, &[]),
            // Named, but not runnable as written: the test fails on them.
            odd(40, "$ xargs vx"),
            odd(43, "sudo vx run x"),
        ]
    );
    assert!(runs_vx("NAME=v vx run build"));
    assert!(runs_vx("cd apps/web && vx watch build"));
    assert!(runs_vx("timeout --foreground -s INT 0.5 vx run x"));
    assert!(runs_vx("source <(vx completions bash)"));
    assert!(!runs_vx("taplo check"));
    assert!(!runs_vx("echo vx"));
    assert!(!mentions_vx("export VX_CACHE_DIR=/x; cat vx.toml"));
}
