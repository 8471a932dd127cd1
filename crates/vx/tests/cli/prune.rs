//! `vx prune` (PRUNE-n): a deployable subset of a workspace, with the lockfile pruned and
//! checked by the package manager that wrote it. Each package manager's case runs the real
//! one (npm, pnpm, yarn 1, yarn berry, bun) against a real registry on loopback (Verdaccio)
//! holding small packages the test publishes: the lockfile is the one that package manager
//! wrote, `vx prune` verifies with it, and the test installs and builds the output itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use vx_test_support::fixture::Fixture;
use vx_test_support::npm_registry::{Pm, Registry};
use vx_test_support::tree::tree;

use crate::vx_bin;

/// A workspace: `@ws/app` → `@ws/lib` →(dev) `@ws/tools` (with a `bin`), and `@ws/other`,
/// installing `ext-a` (→ `ext-b@1` → `ext-c@1`), `ext-b@2` (→ `ext-c@2`), `ext-c` and, at the
/// root, `ext-d` from the registry; vx.toml tasks that build app from lib's output and
/// `ext-a`'s code.
struct Ws {
    f: Fixture,
    pm: Pm,
    /// The shim directory put first on PATH, and the package managers' caches.
    scratch: tempfile::TempDir,
    registry: Registry,
}

/// Folders of the registry's packages: `name@version` with these dependencies.
fn packages(dir: &Path) -> Vec<PathBuf> {
    let specs = [
        ("ext-a", "1.0.0", r#"{"ext-b":"^1.0.0"}"#),
        ("ext-b", "1.0.0", r#"{"ext-c":"^1.0.0"}"#),
        ("ext-b", "2.0.0", r#"{"ext-c":"^2.0.0"}"#),
        ("ext-c", "1.0.0", "{}"),
        ("ext-c", "2.0.0", "{}"),
        ("ext-d", "1.0.0", "{}"),
        ("ext-e", "1.0.0", "{}"),
    ];
    specs
        .iter()
        .map(|(name, version, deps)| {
            let at = dir.join(format!("{name}-{version}"));
            std::fs::create_dir_all(&at).unwrap();
            std::fs::write(
                at.join("package.json"),
                format!(r#"{{"name":"{name}","version":"{version}","dependencies":{deps}}}"#),
            )
            .unwrap();
            std::fs::write(
                at.join("index.js"),
                format!("module.exports = '{name}@{version}';\n"),
            )
            .unwrap();
            at
        })
        .collect()
}

impl Ws {
    fn new(pm: Pm) -> Option<Ws> {
        let scratch = tempfile::Builder::new()
            .prefix("vx-prune-")
            .tempdir()
            .unwrap();
        let shims = scratch.path().join("bin");
        std::fs::create_dir_all(&shims).unwrap();
        pm.shim(&shims)?;
        let registry = Registry::start(&packages(&scratch.path().join("packages")))?;
        let f = Fixture::new(vx_bin());
        let link = pm.workspace_range();
        f.write(
            ".gitignore",
            "node_modules/\ndist/\n.vx/\n.yarn/\n.pnp.*\nout*/\n",
        );
        f.write(
            "package.json",
            "{\n  \"name\": \"ws-root\",\n  \"private\": true,\n  \"workspaces\": [\"packages/*\"],\n  \
             \"devDependencies\": { \"ext-d\": \"^1.0.0\" }\n}\n",
        );
        f.write("pnpm-workspace.yaml", "packages:\n  - \"packages/*\"\n");
        f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
        f.write("tsconfig.base.json", "{}\n");
        f.write(
            "packages/app/package.json",
            &format!(
                r#"{{"name":"@ws/app","version":"1.0.0","dependencies":{{"@ws/lib":"{link}","ext-a":"^1.0.0"}}}}"#
            ),
        );
        f.write(
            "packages/app/vx.toml",
            "[tasks.build]\ndepends-on = [\"^build\"]\n\
             command = \"mkdir -p dist && node -e \\\"require('fs').writeFileSync('dist/app.txt', \
             require('ext-a') + ' ' + require('fs').readFileSync('../lib/dist/lib.txt', 'utf8'))\\\"\"\n\
             cache = { inputs = [\"vx.toml\"], outputs = [\"dist/**\"] }\n",
        );
        f.write(
            "packages/lib/package.json",
            &format!(
                r#"{{"name":"@ws/lib","version":"1.0.0","dependencies":{{"ext-b":"^2.0.0"}},"devDependencies":{{"@ws/tools":"{link}"}}}}"#
            ),
        );
        f.write(
            "packages/lib/vx.toml",
            "[tasks.build]\ncommand = \"mkdir -p dist && cp src/lib.txt dist/lib.txt\"\n\
             cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], workspace-inputs = [\"tsconfig.base.json\"] }\n",
        );
        f.write("packages/lib/src/lib.txt", "from lib\n");
        f.write(
            "packages/tools/package.json",
            r#"{"name":"@ws/tools","version":"1.0.0","bin":{"tool":"bin/tool.js"},"dependencies":{"ext-c":"^1.0.0"}}"#,
        );
        f.write(
            "packages/tools/bin/tool.js",
            "#!/usr/bin/env node\nconsole.log('tool');\n",
        );
        std::fs::set_permissions(
            f.path("packages/tools/bin/tool.js"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        f.write(
            "packages/other/package.json",
            r#"{"name":"@ws/other","version":"1.0.0","dependencies":{"ext-b":"^1.0.0","ext-c":"^2.0.0"}}"#,
        );
        let url = registry.url();
        f.write(".npmrc", &registry.npmrc);
        f.write(
            ".yarnrc.yml",
            &format!(
                "npmRegistryServer: \"{url}\"\nunsafeHttpWhitelist: [\"127.0.0.1\"]\n\
                 nodeLinker: node-modules\nenableTelemetry: false\nnpmMinimalAgeGate: 0\n"
            ),
        );
        f.write(
            "bunfig.toml",
            &format!("[install]\nregistry = \"{url}/\"\n"),
        );
        let ws = Ws {
            f,
            pm,
            scratch,
            registry,
        };
        let out = ws.pm_run(ws.f.root(), &["install"]);
        assert!(
            out.status.success(),
            "{} install: {}{}\nthe registry's log:\n{}",
            pm.command(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            ws.registry.log()
        );
        ws.f.commit();
        Some(ws)
    }

    /// PATH with the shim first, and the package managers' caches in the scratch directory.
    fn env(&self) -> Vec<(String, String)> {
        let cache = self.scratch.path().join("cache");
        let path = format!(
            "{}:{}",
            self.scratch.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let c = |name: &str| cache.join(name).display().to_string();
        vec![
            ("PATH".into(), path),
            ("npm_config_cache".into(), c("npm")),
            ("npm_config_store_dir".into(), c("pnpm")),
            ("npm_config_update_notifier".into(), "false".into()),
            ("YARN_CACHE_FOLDER".into(), c("yarn")),
            ("YARN_GLOBAL_FOLDER".into(), c("berry-global")),
            ("YARN_ENABLE_GLOBAL_CACHE".into(), "false".into()),
            ("BUN_INSTALL_CACHE_DIR".into(), c("bun")),
            ("XDG_CACHE_HOME".into(), c("xdg")),
            ("COREPACK_ENABLE_STRICT".into(), "0".into()),
        ]
    }

    /// The package manager in `dir` (with `install` as it installs with no flag: free to
    /// write the lockfile).
    fn pm_run(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        let mut args: Vec<&str> = args.to_vec();
        if args == ["install"] {
            match self.pm {
                Pm::Npm | Pm::Yarn1 | Pm::Bun => args.push("--ignore-scripts"),
                Pm::Pnpm => args.extend(["--ignore-scripts", "--no-frozen-lockfile"]),
                Pm::Berry => {}
            }
        }
        Command::new(self.pm.command())
            .args(&args)
            .current_dir(dir)
            .envs(self.env())
            .env("YARN_ENABLE_IMMUTABLE_INSTALLS", "false")
            .env("NO_COLOR", "1")
            .env_remove("CI")
            .stdin(Stdio::null())
            .output()
            .expect("run the package manager")
    }

    /// Its frozen install, as a Dockerfile runs it.
    fn frozen(&self, dir: &Path) -> std::process::Output {
        let args: &[&str] = match self.pm {
            Pm::Npm => &["ci", "--ignore-scripts"],
            Pm::Pnpm => &["install", "--frozen-lockfile", "--ignore-scripts"],
            Pm::Yarn1 => &["install", "--frozen-lockfile", "--ignore-scripts"],
            Pm::Berry => &["install", "--immutable"],
            Pm::Bun => &["install", "--frozen-lockfile", "--ignore-scripts"],
        };
        self.pm_run(dir, args)
    }

    fn lockfile(&self) -> &'static str {
        match self.pm {
            Pm::Npm => "package-lock.json",
            Pm::Pnpm => "pnpm-lock.yaml",
            Pm::Yarn1 | Pm::Berry => "yarn.lock",
            Pm::Bun => "bun.lock",
        }
    }

    fn prune(&self, args: &[&str]) -> vx_test_support::fixture::Output {
        let mut full = vec!["prune"];
        full.extend_from_slice(args);
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.f.vx_in("", &full, &env)
    }

    /// A fresh directory holding a copy of `from`'s contents.
    fn copy(&self, from: &Path, name: &str) -> PathBuf {
        let to = self.scratch.path().join(name);
        std::fs::create_dir_all(&to).unwrap();
        copy_into(from, &to);
        to
    }
}

fn copy_into(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir`, root-relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|(_, kind, _, _)| *kind != 'd')
        .map(|(path, ..)| path)
        .collect()
}

/// The whole story for one package manager: prune, what is kept, the install layer, the
/// package manager's own judgement, the build, the same bytes twice, `--production`, and a
/// stale lockfile refused.
fn prunes_installs_and_builds(pm: Pm) {
    let Some(ws) = Ws::new(pm) else { return };
    let lockfile = ws.lockfile();
    let out = ws.prune(&["@ws/app", "--docker"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("kept 3 of 4 projects: @ws/app, @ws/lib, @ws/tools"),
        "{out:?}"
    );
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    let json = ws.f.path("out/json");
    let full = ws.f.path("out/full");

    // json/: what installing reads, the bin a member links as an empty stub.
    let mut expected = vec![
        ".npmrc",
        ".yarnrc.yml",
        "bunfig.toml",
        lockfile,
        "package.json",
        "packages/app/package.json",
        "packages/lib/package.json",
        "packages/tools/bin/tool.js",
        "packages/tools/package.json",
        "pnpm-workspace.yaml",
    ];
    expected.sort_unstable();
    assert_eq!(listing(&json), expected);
    assert_eq!(
        std::fs::read(json.join("packages/tools/bin/tool.js")).unwrap(),
        b""
    );
    // full/: the kept projects whole, root files, the trimmed members; nothing of other.
    let files = listing(&full);
    for file in [
        "packages/app/vx.toml",
        "packages/lib/src/lib.txt",
        "packages/tools/bin/tool.js",
        "tsconfig.base.json",
        ".gitignore",
        lockfile,
    ] {
        assert!(files.iter().any(|f| f == file), "{file} not in {files:?}");
    }
    assert!(!files.iter().any(|f| f.contains("other")), "{files:?}");
    assert_eq!(
        std::fs::read_to_string(full.join("vx.toml")).unwrap(),
        "[workspace]\nmembers = [\"packages/app\", \"packages/lib\", \"packages/tools\"]\n"
    );
    assert_eq!(
        std::fs::read(full.join("packages/tools/bin/tool.js")).unwrap(),
        std::fs::read(ws.f.path("packages/tools/bin/tool.js")).unwrap()
    );
    assert_eq!(
        std::fs::read(ws.f.path(&format!("out/{lockfile}"))).unwrap(),
        std::fs::read(json.join(lockfile)).unwrap()
    );
    let original = std::fs::read_to_string(ws.f.path(lockfile)).unwrap();
    let pruned = std::fs::read_to_string(json.join(lockfile)).unwrap();
    assert!(
        original.contains("packages/other") || original.contains("@ws/other") || pm == Pm::Yarn1
    );
    assert!(
        !pruned.contains("@ws/other") && !pruned.contains("packages/other"),
        "{pruned}"
    );

    // The Dockerfile's way: install json/ frozen, copy full/ over it, build.
    let image = ws.copy(&json, "image");
    let install = ws.frozen(&image);
    assert!(install.status.success(), "{}", text(&install));
    copy_into(&full, &image);
    let build = Command::new(vx_bin())
        .args(["run", "build", "--filter", "@ws/app"])
        .current_dir(&image)
        .envs(ws.env())
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    assert_eq!(
        std::fs::read_to_string(image.join("packages/app/dist/app.txt")).unwrap(),
        "ext-a@1.0.0 from lib\n"
    );

    // The same input gives the same bytes.
    let again = ws.prune(&["@ws/app", "--docker", "--out", "out-again"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(tree(&ws.f.path("out")), tree(&ws.f.path("out-again")));

    // The package manager, free to rewrite the lockfile, leaves it as vx pruned it: for
    // another target, and for --production (which drops lib's dev link to tools).
    for (args, kept) in [
        (
            &["@ws/other", "--out", "out-other"][..],
            "kept 1 of 4 projects: @ws/other",
        ),
        (
            &["@ws/app", "--production", "--out", "out-prod"][..],
            "kept 2 of 4 projects: @ws/app, @ws/lib",
        ),
    ] {
        let out = ws.prune(args);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stdout.contains(kept), "{out:?}");
        let dir = ws.f.path(args[args.len() - 1]);
        let before = std::fs::read(dir.join(lockfile)).unwrap();
        let free = ws.copy(&dir, &format!("free-{}", args[args.len() - 1]));
        let install = ws.pm_run(&free, &["install"]);
        assert!(install.status.success(), "{}", text(&install));
        assert_eq!(
            String::from_utf8_lossy(&std::fs::read(free.join(lockfile)).unwrap()),
            String::from_utf8_lossy(&before),
            "{} rewrote the lockfile vx pruned for {args:?}",
            pm.command()
        );
    }
    let lib = std::fs::read_to_string(ws.f.path("out-prod/packages/lib/package.json")).unwrap();
    assert!(!lib.contains("@ws/tools"), "{lib}");
    assert!(!ws.f.path("out-prod/packages/tools").exists());

    // A lockfile out of date with a kept manifest: the package manager's refusal, exit 1.
    ws.f.write(
        "packages/app/package.json",
        r#"{"name":"@ws/app","version":"1.0.0","dependencies":{"@ws/lib":"*","ext-a":"^1.0.0","ext-e":"^1.0.0"}}"#
            .replace("\"*\"", &format!("\"{}\"", pm.workspace_range()))
            .as_str(),
    );
    let stale = ws.prune(&["@ws/app", "--out", "out-stale"]);
    assert_eq!(stale.code, 1, "{stale:?}");
    assert!(
        stale.stderr.contains(&format!(
            "error: the pruned {lockfile} does not install: `{}",
            pm.command()
        )),
        "{stale:?}"
    );
    assert!(!stale.stdout.contains("verified"), "{stale:?}");
}

#[test]
fn npm_prune_installs_frozen_and_builds() {
    prunes_installs_and_builds(Pm::Npm);
}

#[test]
fn pnpm_prune_installs_frozen_and_builds() {
    prunes_installs_and_builds(Pm::Pnpm);
}

#[test]
fn yarn_classic_prune_installs_frozen_and_builds() {
    prunes_installs_and_builds(Pm::Yarn1);
}

#[test]
fn yarn_berry_prune_installs_frozen_and_builds() {
    prunes_installs_and_builds(Pm::Berry);
}

#[test]
fn bun_prune_installs_frozen_and_builds() {
    prunes_installs_and_builds(Pm::Bun);
}
