//! Installing vx the ways users do (DIST-1 … DIST-4, docs/install.md): the npm packages that
//! `scripts/package` lays out, published to a real registry on loopback (Verdaccio, with no
//! uplink: nothing comes from the internet) and installed into real workspaces by npm, pnpm,
//! Yarn 1, Yarn Berry (Plug'n'Play) and bun from the npm registry, each with its
//! `--ignore-scripts`; the launcher's exit codes, stdin and signals, Ctrl-C in a real terminal;
//! the plain tarball with its man pages and completions.
//!
//! What is packaged: with `VX_DIST_DIR` set (scripts/test sets it after running
//! `scripts/package`), the release artifacts in that directory; otherwise the binary under test,
//! packaged once per test process by `scripts/package --binary`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::fixture::Fixture;
use vx_test_support::npm_registry::{is_executable, Pm, Registry};
use vx_test_support::process::{test_child_path, unique_marker};
use vx_test_support::tmux::Tmux;

use crate::guard::wait_for_markers;
use crate::{assert_no_survivor, vx_bin};

const FRONT: &str = "@vx-run/cli";
const PLATFORM: &str = "linux-x64-gnu";

/// The packaged artifacts and what `manifest.json` says of them.
struct Dist {
    dir: PathBuf,
    manifest: serde_json::Value,
    /// The laid-out platform packages, packed by the test.
    laid_out: Vec<PathBuf>,
    _tmp: Option<tempfile::TempDir>,
    _packed: tempfile::TempDir,
}

impl Dist {
    fn file(&self, key: &[&str]) -> PathBuf {
        let mut value = &self.manifest;
        for k in key {
            value = &value[k];
        }
        self.dir
            .join(value.as_str().expect("a file name in manifest.json"))
    }

    /// What a release publishes: the front package and every platform's. The platforms only
    /// laid out here go in as they are (no binary; their os/cpu never match this machine):
    /// Yarn 1 refuses to install the front package when one of its optional dependencies is
    /// missing from the registry.
    fn tarballs(&self) -> Vec<PathBuf> {
        let mut tarballs = vec![
            self.file(&["front"]),
            self.file(&["built", PLATFORM, "npm"]),
        ];
        tarballs.extend(self.laid_out.iter().cloned());
        tarballs
    }

    fn version(&self) -> &str {
        self.manifest["version"].as_str().expect("a version")
    }

    /// The binary inside the platform package, run directly.
    fn binary(&self) -> PathBuf {
        self.dir.join(format!("npm/cli-{PLATFORM}/bin/vx"))
    }
}

/// A temp dir named for this test process: it lives in a static, which is never dropped, so the
/// dirs of test processes that are gone are removed here instead.
fn process_tempdir(prefix: &str) -> tempfile::TempDir {
    let base = std::env::temp_dir();
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(&format!("{prefix}-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-{}-", std::process::id()))
        .tempdir_in(base)
        .unwrap()
}

fn dist() -> &'static Dist {
    static DIST: OnceLock<Dist> = OnceLock::new();
    DIST.get_or_init(|| {
        let (dir, tmp) = match std::env::var_os("VX_DIST_DIR") {
            Some(dir) => (PathBuf::from(dir), None),
            None => {
                let tmp = process_tempdir("vx-dist");
                let out = Command::new("python3")
                    .arg(repo().join("scripts/package"))
                    .arg("--binary")
                    .arg(vx_bin())
                    .arg("--out")
                    .arg(tmp.path())
                    .output()
                    .expect("run scripts/package");
                assert!(out.status.success(), "scripts/package: {out:?}");
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap_or_else(|e| {
            panic!("{}/manifest.json: {e} (run scripts/package)", dir.display())
        });
        let manifest: serde_json::Value =
            serde_json::from_str(&manifest).expect("manifest.json parses");
        let packed = process_tempdir("vx-dist-packed");
        let laid_out = manifest["laid_out"]
            .as_array()
            .expect("laid_out in manifest.json")
            .iter()
            .map(|name| {
                let out = Command::new("npm")
                    .args(["pack", "--json", "--pack-destination"])
                    .arg(packed.path())
                    .current_dir(dir.join(format!("npm/cli-{}", name.as_str().unwrap())))
                    .output()
                    .expect("run npm pack");
                assert!(out.status.success(), "npm pack: {out:?}");
                let listing: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                packed.path().join(listing[0]["filename"].as_str().unwrap())
            })
            .collect();
        Dist {
            manifest,
            dir,
            laid_out,
            _tmp: tmp,
            _packed: packed,
        }
    })
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A workspace with two packages (app builds from lib's output), vx.toml files, and
/// `"build": "vx run build --all"` in the root package.json, committed, then `@vx-run/cli`
/// added as a dev dependency by `pm` from `registry` without running any install script.
struct Installed {
    f: Fixture,
    pm: Pm,
    program: PathBuf,
    pre: Vec<PathBuf>,
    cache: PathBuf,
    /// Serves the packages while the workspace lives.
    _registry: Registry,
}

impl Installed {
    fn new(pm: Pm) -> Option<Installed> {
        let (program, pre) = pm.program()?;
        let registry = Registry::start(&dist().tarballs())?;
        let cache = registry.scratch("pm-cache");
        let f = Fixture::new(vx_bin());
        f.write(".gitignore", "node_modules/\ndist/\n.vx/\n.yarn/\n.pnp.*\n");
        f.write(
            "package.json",
            r#"{ "name": "dist-ws", "version": "1.0.0", "private": true,
  "workspaces": ["packages/*"], "scripts": { "build": "vx run build --all" } }"#,
        );
        f.write("pnpm-workspace.yaml", "packages:\n  - \"packages/*\"\n");
        f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
        f.write(
            "packages/lib/package.json",
            r#"{ "name": "@ws/lib", "version": "1.0.0" }"#,
        );
        f.write(
            "packages/lib/vx.toml",
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n\
             cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        );
        f.write("packages/lib/src/a.txt", "from lib\n");
        f.write(
            "packages/app/package.json",
            &format!(
                r#"{{ "name": "@ws/app", "version": "1.0.0", "dependencies": {{ "@ws/lib": "{}" }} }}"#,
                pm.workspace_range()
            ),
        );
        f.write(
            "packages/app/vx.toml",
            "[tasks.build]\ncommand = \"mkdir -p dist && cp ../lib/dist/out.txt dist/app.txt\"\n\
             depends-on = [\"^build\"]\n\
             cache = { inputs = [\"vx.toml\"], outputs = [\"dist/**\"] }\n",
        );
        // Where each package manager reads the registry from.
        let url = registry.url();
        f.write(".npmrc", &registry.npmrc);
        f.write(
            ".yarnrc.yml",
            &format!(
                "npmRegistryServer: \"{url}\"\nunsafeHttpWhitelist: [\"127.0.0.1\"]\n\
                 nodeLinker: pnp\nenableGlobalCache: false\nenableTelemetry: false\n\
                 enableScripts: false\nnpmMinimalAgeGate: 0\ncacheFolder: \"{}\"\n",
                cache.join("berry").display()
            ),
        );
        f.write(
            "bunfig.toml",
            &format!(
                "[install]\nregistry = \"{url}/\"\n\n[install.cache]\ndir = \"{}\"\n",
                cache.join("bun").display()
            ),
        );
        f.commit();
        let installed = Installed {
            f,
            pm,
            program,
            pre,
            cache,
            _registry: registry,
        };
        let cache = installed.cache.display().to_string();
        let add: Vec<&str> = match pm {
            Pm::Npm => vec![
                "install",
                "-D",
                FRONT,
                "--ignore-scripts",
                "--cache",
                &cache,
            ],
            Pm::Pnpm => vec![
                "add",
                "-D",
                "-w",
                FRONT,
                "--ignore-scripts",
                "--store-dir",
                &cache,
            ],
            Pm::Yarn1 => vec![
                "add",
                "-D",
                "-W",
                FRONT,
                "--ignore-scripts",
                "--cache-folder",
                &cache,
            ],
            // Berry: `enableScripts: false` in .yarnrc.yml is its --ignore-scripts.
            Pm::Berry => vec!["add", "-D", FRONT],
            Pm::Bun => vec!["add", "-d", FRONT, "--ignore-scripts"],
        };
        let registry_flag = format!("--registry={url}/");
        let mut args = add;
        if pm == Pm::Yarn1 {
            args.push(&registry_flag);
        }
        let out = installed.pm_run(&args);
        assert!(
            out.status.success(),
            "installing with {}: {out:?}\nthe registry's log:\n{}",
            installed.name(),
            installed._registry.log()
        );
        Some(installed)
    }

    fn name(&self) -> &'static str {
        match self.pm {
            Pm::Npm => "npm",
            Pm::Pnpm => "pnpm",
            Pm::Yarn1 => "yarn 1",
            Pm::Berry => "yarn berry",
            Pm::Bun => "bun",
        }
    }

    fn pm_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.pre)
            .args(args)
            .current_dir(self.f.root())
            .env("NO_COLOR", "1")
            // Under CI, Berry refuses to change the lockfile and bun to write one.
            .env("YARN_ENABLE_IMMUTABLE_INSTALLS", "false")
            .env("COREPACK_ENABLE_STRICT", "0")
            .env("npm_config_update_notifier", "false")
            .env("BUN_INSTALL_CACHE_DIR", self.cache.join("bun"))
            .env("XDG_CACHE_HOME", self.cache.join("xdg"))
            // Berry keeps registry metadata (tarball URLs with the port) in its global folder,
            // which would outlive this registry.
            .env("YARN_GLOBAL_FOLDER", self.cache.join("berry-global"))
            .env_remove("VX_BINARY")
            .stdin(Stdio::null());
        command
    }

    fn pm_run(&self, args: &[&str]) -> Output {
        self.pm_command(args)
            .output()
            .expect("run the package manager")
    }

    /// `vx ARGS` the way this package manager runs a package's command.
    fn exec(&self, args: &[&str]) -> Output {
        let mut full: Vec<&str> = match self.pm {
            Pm::Npm => return self.npx(args),
            Pm::Pnpm => vec!["exec", "vx"],
            // Yarn 1 prints its own banner and timing unless silenced.
            Pm::Yarn1 => vec!["--silent", "vx"],
            Pm::Berry => vec!["vx"],
            Pm::Bun => vec!["x", "vx"],
        };
        full.extend_from_slice(args);
        self.pm_run(&full)
    }

    fn npx(&self, args: &[&str]) -> Output {
        let mut command = Command::new("npx");
        command
            .args(["--no", "--", "vx"])
            .args(args)
            .current_dir(self.f.root())
            .env("NO_COLOR", "1")
            .env("npm_config_update_notifier", "false")
            .stdin(Stdio::null());
        command.output().expect("run npx")
    }

    /// The root package.json's `build` script, run by the package manager.
    fn script_build(&self) -> Output {
        match self.pm {
            Pm::Yarn1 => self.pm_run(&["--silent", "build"]),
            Pm::Berry => self.pm_run(&["build"]),
            _ => self.pm_run(&["run", "build"]),
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// DIST-1: install, then `vx --version`, `vx run build --all` (both tasks executed), the
/// `build` script (both cached), and a failing command's exit code, through the package
/// manager's own way of running a package's command.
fn installs_and_runs(pm: Pm) {
    let Some(ws) = Installed::new(pm) else { return };
    let direct = Command::new(dist().binary())
        .arg("--version")
        .output()
        .unwrap();
    let version = ws.exec(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        String::from_utf8_lossy(&direct.stdout),
        "{}: {}",
        ws.name(),
        text(&version)
    );
    if pm != Pm::Berry {
        // The layout this package manager made is one the launcher's shell path knows: with
        // no Node on PATH (only the programs the shell path and pnpm's shim run), the link still
        // becomes the binary instead of falling back to Node.
        let bin = tempfile::tempdir().unwrap();
        for tool in ["uname", "readlink", "dirname", "sed"] {
            std::os::unix::fs::symlink(format!("/usr/bin/{tool}"), bin.path().join(tool)).unwrap();
        }
        let shell_path = Command::new(ws.f.path("node_modules/.bin/vx"))
            .arg("--version")
            .env("PATH", bin.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&shell_path.stdout),
            String::from_utf8_lossy(&direct.stdout),
            "{}: {}",
            ws.name(),
            text(&shell_path)
        );
    }
    let run = ws.exec(&["run", "build", "--all"]);
    assert_eq!(run.status.code(), Some(0), "{}: {}", ws.name(), text(&run));
    assert_eq!(ws.f.read("packages/app/dist/app.txt"), "from lib\n");
    assert!(text(&run).contains("2 tasks · 0 cached"), "{}", text(&run));
    let script = ws.script_build();
    assert_eq!(
        script.status.code(),
        Some(0),
        "{}: {}",
        ws.name(),
        text(&script)
    );
    assert!(
        text(&script).contains("2 tasks · 2 cached"),
        "{}",
        text(&script)
    );
    // A usage error keeps vx's exit code through the launcher.
    let wrong = ws.exec(&["run", "no-such-task", "--all"]);
    let direct = Command::new(dist().binary())
        .args(["run", "no-such-task", "--all"])
        .current_dir(ws.f.root())
        .output()
        .unwrap();
    assert_ne!(direct.status.code(), Some(0));
    assert_eq!(
        wrong.status.code(),
        direct.status.code(),
        "{}: {}",
        ws.name(),
        text(&wrong)
    );
}

#[test]
fn npm_install_then_npx_and_a_script_run_vx() {
    installs_and_runs(Pm::Npm);
}

#[test]
fn pnpm_add_then_pnpm_exec_and_a_script_run_vx() {
    installs_and_runs(Pm::Pnpm);
}

#[test]
fn yarn_classic_add_then_yarn_vx_and_a_script_run_vx() {
    installs_and_runs(Pm::Yarn1);
}

/// Yarn Berry with Plug'n'Play: no node_modules, every command run by Node, the platform
/// package unplugged (`preferUnplugged`) so its binary is a file on disk.
#[test]
fn yarn_berry_pnp_add_then_yarn_vx_and_a_script_run_vx() {
    installs_and_runs(Pm::Berry);
}

#[test]
fn bun_add_then_bun_x_and_a_script_run_vx() {
    installs_and_runs(Pm::Bun);
}

/// A long task (a `vx-test-child` tree carrying `marker`) in the npm workspace.
fn with_long_task(ws: &Installed, marker: &str) {
    ws.f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n\n\
             [tasks.long]\ncommand = \"{} --marker {marker} fork-tree 1 sleep 300\"\n",
            test_child_path().display()
        ),
    );
}

/// DIST-2: the launcher passes stdin and exit codes through, on both of its paths: the shell
/// (`node_modules/.bin/vx`, which `exec`s) and Node (how Yarn Berry runs it). `VX_BINARY`
/// stands in a program that echoes stdin and exits 7.
#[test]
fn the_launcher_passes_stdin_and_exit_codes_through() {
    let Some(ws) = Installed::new(Pm::Npm) else {
        return;
    };
    let probe = ws.f.path("probe.sh");
    std::fs::write(&probe, "#!/bin/sh\necho \"args: $*\"\ncat\nexit 7\n").unwrap();
    std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bin_link = ws.f.path("node_modules/.bin/vx");
    let launcher = ws.f.path("node_modules/@vx-run/cli/bin/vx");
    assert!(is_executable(&bin_link), "npm linked node_modules/.bin/vx");
    let shell = Command::new(&bin_link);
    let mut node = Command::new("node");
    node.arg(&launcher);
    for (how, mut command) in [("shell", shell), ("node", node)] {
        let mut child = command
            .args(["a b", "c"])
            .env("VX_BINARY", &probe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"line one\nline two\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7), "{how}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "args: a b c\nline one\nline two\n",
            "{how}"
        );
    }
}

/// DIST-2: SIGINT and SIGTERM sent to the launcher's pid stop vx's tasks and end with vx's
/// code (130, 143), on the shell path (the launcher became vx) and on Node's (it passes the
/// signal on when no terminal sends it to the whole group).
#[test]
fn a_signal_sent_to_the_launcher_stops_every_task() {
    let Some(ws) = Installed::new(Pm::Npm) else {
        return;
    };
    let bin_link = ws.f.path("node_modules/.bin/vx");
    let launcher = ws.f.path("node_modules/@vx-run/cli/bin/vx");
    for (how, signal, code) in [
        ("shell", Signal::SIGINT, 130),
        ("node", Signal::SIGINT, 130),
        ("node", Signal::SIGTERM, 143),
    ] {
        let marker = unique_marker("dist-signal");
        with_long_task(&ws, &marker);
        let mut command = if how == "shell" {
            Command::new(&bin_link)
        } else {
            let mut c = Command::new("node");
            c.arg(&launcher);
            c
        };
        let child = command
            .args(["run", "@ws/lib#long"])
            .current_dir(ws.f.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_markers(&marker, 1);
        if how == "shell" {
            // The launcher `exec`ed: the process started as the script is vx itself.
            let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap();
            assert!(
                exe.ends_with(format!("@vx-run/cli-{PLATFORM}/bin/vx")),
                "{}",
                exe.display()
            );
        }
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{how} {signal}: {}",
            text(&out)
        );
        assert_no_survivor(&marker);
    }
}

/// DIST-2: Ctrl-C in a real terminal, through `npx vx`, stops every task and exits 130.
#[test]
fn ctrl_c_through_npx_in_a_terminal_stops_every_task() {
    let Some(ws) = Installed::new(Pm::Npm) else {
        return;
    };
    let marker = unique_marker("dist-ctrl-c");
    with_long_task(&ws, &marker);
    let Some(term) = Tmux::start(
        ws.f.root(),
        Path::new("npx"),
        &["--no", "--", "vx", "run", "@ws/lib#long"],
        &[("npm_config_update_notifier", "false")],
        (100, 30),
    ) else {
        return;
    };
    wait_for_markers(&marker, 1);
    term.keys(&["C-c"]);
    let (code, screen) = term.finish();
    assert_eq!(code, 130, "{screen}");
    assert_no_survivor(&marker);
}

/// DIST-3: the packages carry no install script and say where they install; the front package
/// names every platform, and each platform package has its os/cpu(/libc) fields.
#[test]
fn the_npm_packages_need_no_install_script_and_name_their_platforms() {
    let d = dist();
    let read = |rel: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.dir.join(rel)).unwrap()).unwrap()
    };
    let front = read("npm/cli/package.json");
    assert_eq!(front["name"], FRONT);
    assert_eq!(front["bin"]["vx"], "bin/vx");
    assert!(front.get("scripts").is_none(), "{front}");
    let platforms = [
        ("linux-x64-gnu", "linux", "x64", Some("glibc")),
        ("linux-arm64-gnu", "linux", "arm64", Some("glibc")),
        ("darwin-arm64", "darwin", "arm64", None),
        ("darwin-x64", "darwin", "x64", None),
    ];
    for (name, os, cpu, libc) in platforms {
        let package = format!("{FRONT}-{name}");
        assert_eq!(front["optionalDependencies"][&package], d.version());
        let manifest = read(&format!("npm/cli-{name}/package.json"));
        assert_eq!(manifest["name"], package.as_str());
        assert_eq!(manifest["os"], serde_json::json!([os]));
        assert_eq!(manifest["cpu"], serde_json::json!([cpu]));
        match libc {
            Some(libc) => assert_eq!(manifest["libc"], serde_json::json!([libc])),
            None => assert!(manifest.get("libc").is_none()),
        }
        assert_eq!(manifest["preferUnplugged"], true);
        assert!(manifest.get("scripts").is_none(), "{manifest}");
        let built = d.manifest["built"].get(name).is_some();
        assert_eq!(
            d.dir.join(format!("npm/cli-{name}/bin/vx")).exists(),
            built,
            "{name}: a binary exactly where one was built"
        );
    }
    assert!(d.manifest["built"].get(PLATFORM).is_some());
    assert!(is_executable(&d.binary()));
}

/// DIST-4: the plain tarball: the binary (its `--version` with commit and target), man pages
/// that `man` renders, completion scripts a shell loads, the BuildGrid worker and the licences.
#[test]
fn the_tarball_holds_the_binary_man_pages_and_completions() {
    let d = dist();
    let tmp = tempfile::tempdir().unwrap();
    let tarball = d.file(&["built", PLATFORM, "tarball"]);
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let target = d.manifest["built"][PLATFORM]["target"].as_str().unwrap();
    let top = tmp.path().join(format!("vx-{}-{target}", d.version()));
    let version = Command::new(top.join("bin/vx"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(
        version.starts_with(&format!("vx {} (", d.version())) && version.contains(target),
        "{version}"
    );
    for file in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(top.join(file).is_file(), "{file}");
    }
    for page in ["vx.1", "vx-run.1", "vx-init.1"] {
        assert!(top.join("share/man/man1").join(page).is_file(), "{page}");
    }
    let man = Command::new("man")
        .env("MANPATH", top.join("share/man"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .args(["vx-run"])
        .output();
    match man {
        Ok(man) => {
            let page = String::from_utf8_lossy(&man.stdout);
            assert!(man.status.success(), "{man:?}");
            assert!(page.contains("--concurrency"), "{page}");
        }
        Err(e) => {
            let why = format!("man is missing ({e}): apt-get install man-db (scripts/test does)");
            assert!(!vx_test_support::tools::tools_required(), "{why}");
            eprintln!("skipped the man page check: {why}");
        }
    }
    let bash = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p vx",
            top.join("share/bash-completion/completions/vx").display()
        ))
        .output()
        .unwrap();
    assert!(bash.status.success(), "{bash:?}");
    assert!(String::from_utf8_lossy(&bash.stdout).contains(" vx"));
    assert!(top.join("share/zsh/site-functions/_vx").is_file());
    assert!(top
        .join("share/fish/vendor_completions.d/vx.fish")
        .is_file());
    // The BuildGrid worker, as in the repository, executable.
    let worker = top.join("share/vx/vx-buildgrid-worker");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&worker).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
    assert_eq!(
        std::fs::read(&worker).unwrap(),
        std::fs::read(repo().join("contrib/vx-buildgrid-worker")).unwrap()
    );
}

/// The package managers scripts/test installs are the ones the tests name when one is missing.
#[test]
fn scripts_test_installs_the_package_managers_the_tests_name() {
    let script = std::fs::read_to_string(repo().join("scripts/test")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("PM_VERSIONS=\""))
        .expect("PM_VERSIONS in scripts/test");
    assert_eq!(
        line.trim_end_matches('"'),
        vx_test_support::npm_registry::VERSIONS
    );
}
