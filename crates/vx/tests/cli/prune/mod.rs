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

mod layout;
mod managers;

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
        // pnpm refuses packages younger than a day unless told: these are seconds old.
        f.write(
            "pnpm-workspace.yaml",
            "packages:\n  - \"packages/*\"\nminimumReleaseAge: 0\n",
        );
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
        self.reinstall();
    }

    /// The workspace installed again (the lockfile written anew) and committed.
    fn reinstall(&self) {
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
