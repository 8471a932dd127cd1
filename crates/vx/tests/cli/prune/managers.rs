//! Each package manager's case with the real one against Verdaccio: the pruned lockfile is
//! installed frozen, built from, left as it is by the package manager free to rewrite it,
//! followed through overrides, links and re-sorted keys; a stale lockfile and a dead registry
//! are said.

use super::*;

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
                "packages:\n  - \"packages/*\"\nminimumReleaseAge: 0\noverrides:\n  ext-c: 2.0.0\n",
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
fn yarn_classic_keeps_a_workspace_package_a_registry_package_links() {
    a_workspace_package_a_registry_package_links_is_kept(Pm::Yarn1);
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
        out.stderr.contains("could not reach the network"),
        "{out:?}"
    );
    assert!(out.stderr.contains("ECONNREFUSED"), "{out:?}");
    assert!(!out.stderr.contains("does not install"), "{out:?}");
    assert!(ws.f.path("out/package-lock.json").exists());
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
    ws.reinstall();
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

/// app installs a local package that is no workspace member (`file:../../tooling/cfg`): its
/// directory comes with the output, in both parts, and the lockfile keeps its entries.
fn a_local_package_comes_with_its_project(pm: Pm) {
    let Some(ws) = Ws::new(pm) else { return };
    ws.f.write(
        "tooling/cfg/package.json",
        r#"{"name":"@acme/cfg","version":"1.0.0","dependencies":{"ext-d":"^1.0.0"}}"#,
    );
    ws.f.write("tooling/cfg/index.js", "module.exports = 'cfg';\n");
    let link = pm.workspace_range();
    ws.f.write(
        "packages/app/package.json",
        &format!(
            r#"{{"name":"@ws/app","version":"1.0.0","dependencies":{{"@ws/lib":"{link}","ext-a":"^1.0.0","@acme/cfg":"file:../../tooling/cfg"}}}}"#
        ),
    );
    ws.reinstall();
    let out = ws.prune(&["@ws/app", "--docker"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(
            "note: tooling/cfg kept: a local package (file:, link:) a kept project installs"
        ),
        "{out:?}"
    );
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    for part in ["json", "full"] {
        assert_eq!(
            ws.f.read(&format!("out/{part}/tooling/cfg/index.js")),
            "module.exports = 'cfg';\n"
        );
    }
}

#[test]
fn npm_keeps_a_local_package_a_kept_project_installs() {
    a_local_package_comes_with_its_project(Pm::Npm);
}

#[test]
fn pnpm_keeps_a_local_package_a_kept_project_installs() {
    a_local_package_comes_with_its_project(Pm::Pnpm);
}

#[test]
fn pnpm_patches_the_configuration_names_come_with_the_install_layer() {
    // pnpm's patchedDependencies may name a file anywhere: installing needs it in json/.
    let Some(ws) = Ws::new(Pm::Pnpm) else { return };
    ws.f.write(
        "tooling/ext-a.patch",
        "diff --git a/index.js b/index.js\n--- a/index.js\n+++ b/index.js\n@@ -1 +1 @@\n\
         -module.exports = 'ext-a@1.0.0';\n+module.exports = 'ext-a@1.0.0 patched';\n",
    );
    ws.f.write(
        "pnpm-workspace.yaml",
        "packages:\n  - \"packages/*\"\nminimumReleaseAge: 0\n\
         patchedDependencies:\n  ext-a@1.0.0: tooling/ext-a.patch\n",
    );
    ws.reinstall();
    let out = ws.prune(&["@ws/app", "--docker"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    assert_eq!(
        ws.f.read("out/json/tooling/ext-a.patch"),
        ws.f.read("tooling/ext-a.patch")
    );
}

#[test]
fn npm_flags_are_computed_again_for_what_is_kept() {
    // other needs ext-d in production, the root only in development: pruned to app, ext-d is a
    // development package, and npm says so with `"dev": true`.
    let Some(ws) = Ws::new(Pm::Npm) else { return };
    ws.f.write(
        "packages/other/package.json",
        r#"{"name":"@ws/other","version":"1.0.0","dependencies":{"ext-b":"^1.0.0","ext-c":"^2.0.0","ext-d":"^1.0.0"}}"#,
    );
    ws.reinstall();
    let dev_flag = |lock: &str| -> bool {
        let lock: serde_json::Value = serde_json::from_str(lock).unwrap();
        lock["packages"]["node_modules/ext-d"]["dev"] == serde_json::json!(true)
    };
    assert!(!dev_flag(&ws.f.read("package-lock.json")));
    let out = ws.prune(&["@ws/app"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    let pruned = ws.f.read("out/package-lock.json");
    assert!(dev_flag(&pruned), "{pruned}");
    // What npm writes for the smaller workspace, byte for byte.
    let free = ws.copy(&ws.f.path("out"), "free");
    let install = ws.pm_run(&free, &["install", "--package-lock-only"]);
    assert!(install.status.success(), "{}", text(&install));
    assert_eq!(
        std::fs::read_to_string(free.join("package-lock.json")).unwrap(),
        pruned
    );
}

#[test]
fn pnpm_catalogs_keep_only_what_the_kept_projects_take() {
    // lib takes ext-b from the catalog, other ext-c: pruned to app (with lib), the lockfile's
    // catalogs hold ext-b alone, as pnpm writes them for that workspace.
    let Some(ws) = Ws::new(Pm::Pnpm) else { return };
    ws.f.write(
        "pnpm-workspace.yaml",
        "packages:\n  - \"packages/*\"\nminimumReleaseAge: 0\ncatalog:\n  ext-b: ^2.0.0\n  ext-c: ^2.0.0\n",
    );
    ws.f.write(
        "packages/lib/package.json",
        r#"{"name":"@ws/lib","version":"1.0.0","dependencies":{"ext-b":"catalog:"},"devDependencies":{"@ws/tools":"workspace:*"}}"#,
    );
    ws.f.write(
        "packages/other/package.json",
        r#"{"name":"@ws/other","version":"1.0.0","dependencies":{"ext-b":"^1.0.0","ext-c":"catalog:"}}"#,
    );
    ws.reinstall();
    assert!(ws.f.read("pnpm-lock.yaml").contains("catalogs:"));
    let out = ws.prune(&["@ws/app"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    let pruned = ws.f.read("out/pnpm-lock.yaml");
    let catalogs: String = pruned
        .split("\nimporters:")
        .next()
        .unwrap()
        .split("catalogs:")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(
        catalogs.contains("ext-b:") && !catalogs.contains("ext-c:"),
        "{pruned}"
    );
    let free = ws.copy(&ws.f.path("out"), "free");
    let install = ws.pm_run(&free, &["install", "--lockfile-only"]);
    assert!(install.status.success(), "{}", text(&install));
    assert_eq!(
        std::fs::read_to_string(free.join("pnpm-lock.yaml")).unwrap(),
        pruned
    );
}

#[test]
fn what_the_package_manager_leaves_running_is_stopped() {
    // A package manager that leaves a process behind (a daemon an install starts): vx prune
    // runs it as it runs a task, and nothing of it outlives the check.
    let Some(ws) = Ws::new(Pm::Pnpm) else { return };
    let marker = vx_test_support::process::unique_marker("prune-leftover");
    let wrapper = ws.scratch.path().join("wrapped");
    std::fs::create_dir_all(&wrapper).unwrap();
    let real = ws.scratch.path().join("bin/pnpm");
    std::fs::write(
        wrapper.join("pnpm"),
        format!(
            "#!/bin/sh\n(exec sh -c 'sleep 300; : {marker}' >/dev/null 2>&1) &\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        wrapper.join("pnpm"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:{}", wrapper.display(), ws.env()[0].1);
    let out = ws.prune_with(&["@ws/app"], &[("PATH", path)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `"), "{out:?}");
    crate::assert_no_survivor(&marker);
}

#[test]
fn a_package_manager_on_a_relative_path_entry_is_found_and_run() {
    // PATH=node_modules/.bin-style relative entries: found from where vx runs, run from the
    // scratch directory, so it must be made absolute.
    let Some(ws) = Ws::new(Pm::Pnpm) else { return };
    std::fs::create_dir_all(ws.f.path("tools-bin")).unwrap();
    std::fs::copy(
        ws.scratch.path().join("bin/pnpm"),
        ws.f.path("tools-bin/pnpm"),
    )
    .unwrap();
    let path = format!("tools-bin:{}", std::env::var("PATH").unwrap_or_default());
    let out = ws.prune_with(&["@ws/app"], &[("PATH", path)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("verified: `pnpm install"), "{out:?}");
}
