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
        // A registry package that depends on a workspace package: installing links it.
        ("ext-f", "1.0.0", r#"{"@ws/tools":"^1.0.0"}"#),
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

    /// The root package.json with `extra` fields added, installed again and committed.
    fn reinstall_with(&self, extra: &str) {
        self.f.write(
            "package.json",
            &format!(
                "{{\n  \"name\": \"ws-root\",\n  \"private\": true,\n  \"workspaces\": [\"packages/*\"],\n  \
                 {extra}\n}}\n"
            ),
        );
        let out = self.pm_run(self.f.root(), &["install"]);
        assert!(out.status.success(), "{}", text(&out));
        self.f.commit();
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
            ("pnpm_config_store_dir".into(), c("pnpm")),
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
        self.prune_with(args, &[])
    }

    /// `vx prune ARGS` with `extra` variables over [`Ws::env`]'s.
    fn prune_with(
        &self,
        args: &[&str],
        extra: &[(&str, String)],
    ) -> vx_test_support::fixture::Output {
        let mut full = vec!["prune"];
        full.extend_from_slice(args);
        let mut env = self.env();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
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
    // What differs is named: the package manager's own lockfile has the new dependency.
    assert!(
        stale.stderr.contains("+ ") && stale.stderr.contains("ext-e"),
        "{stale:?}"
    );
}

/// The root's overrides (`resolutions` for yarn, `overrides` for npm and bun, pnpm's in
/// pnpm-workspace.yaml) make every ext-c 2.0.0: the lockfile keys what they resolve to.
fn overrides_are_followed(pm: Pm) {
    let Some(ws) = Ws::new(pm) else { return };
    match pm {
        Pm::Pnpm => {
            ws.f.write(
                "pnpm-workspace.yaml",
                "packages:\n  - \"packages/*\"\noverrides:\n  ext-c: 2.0.0\n",
            );
            ws.reinstall_with("\"devDependencies\": { \"ext-d\": \"^1.0.0\" }");
        }
        Pm::Yarn1 | Pm::Berry => ws.reinstall_with(
            "\"devDependencies\": { \"ext-d\": \"^1.0.0\" },\n  \"resolutions\": { \"ext-c\": \"2.0.0\" }",
        ),
        Pm::Npm | Pm::Bun => ws.reinstall_with(
            "\"devDependencies\": { \"ext-d\": \"^1.0.0\" },\n  \"overrides\": { \"ext-c\": \"2.0.0\" }",
        ),
    }
    let lock = ws.f.read(ws.lockfile());
    assert!(
        !lock.contains("ext-c-1.0.0")
            && !lock.contains("ext-c@1.0.0")
            && !lock.contains("ext-c@npm:1.0.0"),
        "{lock}"
    );
    let out = ws.prune(&["@ws/app"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    let pruned = ws.f.read(&format!("out/{}", ws.lockfile()));
    assert!(pruned.contains("ext-c"), "{pruned}");
}

#[test]
fn npm_overrides_are_followed() {
    overrides_are_followed(Pm::Npm);
}

#[test]
fn pnpm_overrides_are_followed() {
    overrides_are_followed(Pm::Pnpm);
}

#[test]
fn yarn_classic_resolutions_are_followed() {
    overrides_are_followed(Pm::Yarn1);
}

#[test]
fn yarn_berry_resolutions_are_followed() {
    overrides_are_followed(Pm::Berry);
}

#[test]
fn bun_overrides_are_followed() {
    overrides_are_followed(Pm::Bun);
}

/// A root dependency from the registry (ext-f) depends on @ws/tools, which the package
/// manager links to the workspace package: pruning for @ws/other keeps tools too, and says why.
fn a_workspace_package_a_registry_package_links_is_kept(pm: Pm) {
    let Some(ws) = Ws::new(pm) else { return };
    ws.reinstall_with("\"devDependencies\": { \"ext-d\": \"^1.0.0\", \"ext-f\": \"^1.0.0\" }");
    let lock = ws.f.read(ws.lockfile());
    assert!(lock.contains("ext-f"), "{lock}");
    let out = ws.prune(&["@ws/other"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("kept 2 of 4 projects: @ws/other, @ws/tools"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("note: @ws/tools kept: a package the lockfile installs depends on it"),
        "{out:?}"
    );
    assert!(out.stdout.contains("verified: `"), "{out:?}");
}

#[test]
fn npm_keeps_a_workspace_package_a_registry_package_links() {
    a_workspace_package_a_registry_package_links_is_kept(Pm::Npm);
}

#[test]
fn yarn_berry_keeps_a_workspace_package_a_registry_package_links() {
    a_workspace_package_a_registry_package_links_is_kept(Pm::Berry);
}

#[test]
fn bun_keeps_a_workspace_package_a_registry_package_links() {
    a_workspace_package_a_registry_package_links_is_kept(Pm::Bun);
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

/// A workspace with no package manager run: `web` → `ui`, `docs` alone, `web/e2e` nested in
/// web, and the pnpm lockfile the pnpm case's install wrote (from the lockfile pruners' unit
/// tests), so what does not install anything needs no registry.
fn small() -> Fixture {
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", "out*/\n.vx/\n");
    f.write(
        "package.json",
        r#"{"name":"root","private":true,"workspaces":["packages/*","packages/web/e2e"]}"#,
    );
    f.write(
        "vx.toml",
        "[workspace]\n# the projects\nmembers = [\"packages/*\", 'packages/web/e2e'] # and e2e\n",
    );
    for (dir, name, deps) in [
        ("packages/web", "web", r#"{"ui":"*"}"#),
        ("packages/ui", "ui", "{}"),
        ("packages/docs", "docs", "{}"),
        ("packages/web/e2e", "e2e", r#"{"web":"*"}"#),
    ] {
        f.write(
            &format!("{dir}/package.json"),
            &format!(r#"{{"name":"{name}","version":"1.0.0","dependencies":{deps}}}"#),
        );
        f.write(&format!("{dir}/src/index.js"), &format!("// {name}\n"));
    }
    f.commit();
    f
}

#[test]
fn an_unknown_project_is_refused_with_a_suggestion() {
    let f = small();
    let out = f.vx(&["prune", "wbe"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no project named `wbe`"), "{out:?}");
    assert!(out.stderr.contains("web"), "{out:?}");
    assert!(!f.path("out").exists());
    let root = f.vx(&["prune"]);
    assert_eq!(root.code, 2, "{root:?}");
    assert!(
        root.stderr.contains("name the projects to keep"),
        "{root:?}"
    );
}

#[test]
fn the_project_of_the_current_directory_is_the_default_and_nested_projects_stay_out() {
    let f = small();
    let out = f.vx_in("packages/web/src", &["prune"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("kept 2 of 4 projects: ui, web"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("note: no lockfile at the root: nothing to prune or verify"),
        "{out:?}"
    );
    let files = listing(&f.path("out"));
    assert!(
        files.contains(&"packages/web/src/index.js".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"packages/ui/src/index.js".to_string()),
        "{files:?}"
    );
    assert!(
        !files
            .iter()
            .any(|p| p.contains("e2e") || p.contains("docs")),
        "{files:?}"
    );
    // The root vx.toml's members are the kept directories; the rest of it stays.
    assert_eq!(
        f.read("out/vx.toml"),
        "[workspace]\n# the projects\nmembers = [\"packages/ui\", \"packages/web\"] # and e2e\n"
    );
    // A directory names its project too.
    let by_dir = f.vx(&["prune", "./packages/docs", "--out", "out-docs"]);
    assert_eq!(by_dir.code, 0, "{by_dir:?}");
    assert!(
        by_dir.stdout.contains("kept 1 of 4 projects: docs"),
        "{by_dir:?}"
    );
}

#[test]
fn an_output_directory_vx_prune_did_not_write_is_never_replaced() {
    let f = small();
    f.write("mine/notes.txt", "keep me\n");
    let out = f.vx(&["prune", "web", "--out", "mine"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--out") && out.stderr.contains("vx prune did not write it"),
        "{out:?}"
    );
    assert_eq!(f.read("mine/notes.txt"), "keep me\n");
    // Its own output is replaced whole: nothing of the earlier subset is left.
    assert_eq!(f.vx(&["prune", "docs"]).code, 0);
    assert!(f.path("out/packages/docs/package.json").exists());
    let again = f.vx(&["prune", "web"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(!f.path("out/packages/docs").exists());
    assert!(f.path("out/packages/web/package.json").exists());
    // Nor can the output hold the workspace.
    let root = f.vx(&["prune", "web", "--out", "."]);
    assert_eq!(root.code, 2, "{root:?}");
    assert!(f.path("package.json").exists());
}

#[test]
fn a_missing_package_manager_fails_unless_no_verify_is_asked() {
    let f = small();
    f.write(
        "pnpm-lock.yaml",
        "lockfileVersion: '9.0'\n\nimporters:\n\n  .: {}\n\n  packages/docs: {}\n\n  packages/ui: {}\n\n  \
         packages/web:\n    dependencies:\n      ui:\n        specifier: '*'\n        version: link:../ui\n\n  \
         packages/web/e2e:\n    dependencies:\n      web:\n        specifier: '*'\n        version: link:..\n",
    );
    f.write("vx.lock", "");
    f.commit();
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().display().to_string();
    let out = f.vx_in("", &["prune", "web"], &[("PATH", &path)]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("`pnpm` is not on PATH"), "{out:?}");
    assert!(out.stderr.contains("--no-verify"), "{out:?}");
    let out = f.vx_in("", &["prune", "web", "--no-verify"], &[("PATH", &path)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("not verified (--no-verify)"), "{out:?}");
    assert!(
        out.stdout.contains("pruned pnpm-lock.yaml: 3 of 5 members"),
        "{out:?}"
    );
    assert!(out.stdout.contains("note: vx.lock left out"), "{out:?}");
    assert!(!f.path("out/vx.lock").exists());
    let lock = f.read("out/pnpm-lock.yaml");
    assert!(!lock.contains("docs") && !lock.contains("e2e"), "{lock}");
}

#[test]
fn a_binary_bun_lockfile_is_refused_with_the_way_to_a_text_one() {
    let f = small();
    f.write("bun.lockb", "\0binary");
    f.commit();
    let out = f.vx(&["prune", "web"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("cannot prune bun.lockb"), "{out:?}");
    assert!(out.stderr.contains("--save-text-lockfile"), "{out:?}");
    assert!(!f.path("out").exists());
}

#[test]
fn a_project_a_kept_task_depends_on_by_id_is_kept_and_the_demo_output_builds() {
    // The demo: @demo/api's build depends on `codegen#build` (no package.json edge) and on
    // @demo/utils; web and ui are left out.
    let f = Fixture::new(vx_bin());
    copy_into(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo"),
        f.root(),
    );
    f.commit();
    let out = f.vx(&["prune", "@demo/api", "--docker"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("kept 3 of 5 projects: @demo/api, @demo/utils, codegen"),
        "{out:?}"
    );
    let full = f.path("out/full");
    assert!(!full.join("apps/web").exists() && !full.join("packages/ui").exists());
    let build = Command::new(vx_bin())
        .args(["run", "build"])
        .current_dir(&full)
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    let server = std::fs::read_to_string(full.join("apps/api/dist/server.js")).unwrap();
    assert!(server.contains("generated by codegen"), "{server}");
}

#[test]
fn a_registry_out_of_reach_is_said_and_not_blamed_on_the_lockfile() {
    let Some(mut ws) = Ws::new(Pm::Npm) else {
        return;
    };
    ws.registry.stop();
    // An empty cache: npm must reach the registry, which refuses.
    let cache = ws.scratch.path().join("empty-cache").display().to_string();
    let out = ws.prune_with(
        &["@ws/app"],
        &[
            ("npm_config_cache", cache),
            ("npm_config_fetch_retries", "0".into()),
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("error: cannot verify the pruned lockfile: `npm ci"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("could not reach the registry or fetch a package"),
        "{out:?}"
    );
    assert!(out.stderr.contains("ECONNREFUSED"), "{out:?}");
    assert!(!out.stderr.contains("does not install"), "{out:?}");
    assert!(ws.f.path("out/package-lock.json").exists());
}

#[test]
fn the_output_outside_git_passes_the_checks_the_workspace_passes() {
    // check reads every file of its project, build writes dist/, which .gitignore ignores: in
    // git an ignored directory is never an input, so `upfront-keys` has nothing to say. The
    // pruned output has no .git (as in a Docker image); its .gitignore must count the same.
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", "dist/\n.vx/\nout/\n");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write(
        "packages/app/package.json",
        r#"{"name":"app","version":"1.0.0"}"#,
    );
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/a.txt > dist/a.txt\"\n\
         cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n\
         [tasks.check]\ncommand = \"ls\"\ncache = { inputs = [\"**/*\"], outputs = [] }\n",
    );
    f.write("packages/app/src/a.txt", "a\n");
    f.commit();
    assert_eq!(
        f.vx_in("packages/app", &["run", "check", "build"], &[])
            .code,
        0
    );
    let out = f.vx(&["prune", "app"]);
    assert_eq!(out.code, 0, "{out:?}");
    let run = Command::new(vx_bin())
        .args(["run", "check", "build"])
        .current_dir(f.path("out/packages/app"))
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    assert_eq!(f.read("out/packages/app/dist/a.txt"), "a\n");
}

#[test]
fn members_from_the_package_manager_are_listed_in_the_pruned_vx_toml() {
    // The members come from package.json's globs, which name directories the output lacks:
    // the pruned vx.toml lists the kept ones, so vx in the output warns about nothing.
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", "out/\n.vx/\n");
    f.write(
        "package.json",
        r#"{"name":"root","private":true,"workspaces":["apps/*","libs/*","tools/*"]}"#,
    );
    f.write("vx.toml", "[workspace]\nconcurrency = 2\n");
    f.write(
        "apps/web/package.json",
        r#"{"name":"web","dependencies":{"ui":"*"}}"#,
    );
    f.write("libs/ui/package.json", r#"{"name":"ui"}"#);
    f.write("apps/web/vx.toml", "[tasks.build]\ncommand = \"true\"\n");
    f.write("tools/gen/package.json", r#"{"name":"gen"}"#);
    f.commit();
    let out = f.vx(&["prune", "web"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        f.read("out/vx.toml"),
        "[workspace]\nmembers = [\"apps/web\", \"libs/ui\"]  # vx prune: the projects kept\nconcurrency = 2\n"
    );
    assert_eq!(f.read("out/package.json"), f.read("package.json"));
    let run = Command::new(vx_bin())
        .args(["run", "build", "--all"])
        .current_dir(f.path("out"))
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    assert!(!text(&run).contains("warning"), "{}", text(&run));
}

/// app asks for ext-c `1.x`, ext-b@1 for `^1.0.0`, other for `2.0.0`: yarn merges the first two
/// into one entry whose key starts `ext-c@1.x`, sorted before `ext-c@2.0.0`. Pruned to other,
/// the key loses `1.x` and yarn sorts it after: the pruned file must too.
fn a_key_that_loses_its_first_descriptor_moves_where_yarn_sorts_it(pm: Pm) {
    let Some(ws) = Ws::new(pm) else { return };
    let link = pm.workspace_range();
    ws.f.write(
        "packages/app/package.json",
        &format!(
            r#"{{"name":"@ws/app","version":"1.0.0","dependencies":{{"@ws/lib":"{link}","ext-a":"^1.0.0","ext-c":"1.x"}}}}"#
        ),
    );
    ws.f.write(
        "packages/other/package.json",
        r#"{"name":"@ws/other","version":"1.0.0","dependencies":{"ext-b":"^1.0.0","ext-c":"2.0.0"}}"#,
    );
    let install = ws.pm_run(ws.f.root(), &["install"]);
    assert!(install.status.success(), "{}", text(&install));
    ws.f.commit();
    let lock = ws.f.read("yarn.lock");
    assert!(
        lock.contains("ext-c@1.x, ") || lock.contains("ext-c@npm:1.x, "),
        "{lock}"
    );
    let out = ws.prune(&["@ws/other"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    let pruned = std::fs::read(ws.f.path("out/yarn.lock")).unwrap();
    let free = ws.copy(&ws.f.path("out"), "free");
    if pm == Pm::Yarn1 {
        // Yarn 1 does not write a lockfile whose entries all still answer: it must resolve
        // afresh (the registry has one version per range, so the result is the same).
        std::fs::remove_file(free.join("yarn.lock")).unwrap();
    }
    let install = ws.pm_run(&free, &["install"]);
    assert!(install.status.success(), "{}", text(&install));
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(free.join("yarn.lock")).unwrap()),
        String::from_utf8_lossy(&pruned)
    );
}

#[test]
fn yarn_classic_sorts_a_key_that_lost_its_first_descriptor() {
    a_key_that_loses_its_first_descriptor_moves_where_yarn_sorts_it(Pm::Yarn1);
}

#[test]
fn yarn_berry_sorts_a_key_that_lost_its_first_descriptor() {
    a_key_that_loses_its_first_descriptor_moves_where_yarn_sorts_it(Pm::Berry);
}
