//! What is kept and where it goes, without a package manager run (no lockfile, or one a
//! test wrote): the projects, the root files, links, `vx.toml`, the output directory, refusals.

use super::*;

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
    // The directory itself stays (a mount point, a link to one): its entries are replaced.
    std::fs::create_dir_all(f.path("volume")).unwrap();
    std::os::unix::fs::symlink(f.path("volume"), f.path("out-link")).unwrap();
    for _ in 0..2 {
        let linked = f.vx(&["prune", "docs", "--out", "out-link"]);
        assert_eq!(linked.code, 0, "{linked:?}");
    }
    assert!(std::fs::symlink_metadata(f.path("out-link"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(f.path("volume/packages/docs/package.json").exists());
    // What a killed run left (its staging directory) is no reason to refuse, and goes.
    std::fs::create_dir_all(f.path("out-killed/.vx-prune-staging-1/packages")).unwrap();
    let after_kill = f.vx(&["prune", "docs", "--out", "out-killed"]);
    assert_eq!(after_kill.code, 0, "{after_kill:?}");
    let names: Vec<String> = std::fs::read_dir(f.path("out-killed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".vx-prune-staging")),
        "{names:?}"
    );
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
    // A header with a comment is the same header.
    f.write("vx.toml", "[workspace] # the root\nconcurrency = 2\n");
    f.commit();
    assert_eq!(f.vx(&["prune", "web", "--out", "out-commented"]).code, 0);
    assert_eq!(
        f.read("out-commented/vx.toml"),
        "[workspace] # the root\nmembers = [\"apps/web\", \"libs/ui\"]  # vx prune: the projects kept\nconcurrency = 2\n"
    );
    let run = Command::new(vx_bin())
        .args(["run", "build", "--all"])
        .current_dir(f.path("out"))
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    assert!(!text(&run).contains("warning"), "{}", text(&run));
}

#[test]
fn a_link_out_of_a_kept_project_brings_its_root_target_and_one_into_a_project_left_out_is_said() {
    // web links to a root script (as TanStack/query's packages link ../../scripts/…) and to a
    // page of docs, which is left out.
    let f = small();
    f.write("scripts/shared.js", "// shared\n");
    f.write("scripts/more/deep.js", "// deep\n");
    f.write("scripts/unrelated.js", "// not linked\n");
    std::os::unix::fs::symlink("../../scripts/shared.js", f.path("packages/web/shared.js"))
        .unwrap();
    std::os::unix::fs::symlink("../../scripts/more", f.path("packages/web/more")).unwrap();
    std::os::unix::fs::symlink("../docs/src/index.js", f.path("packages/web/docs.js")).unwrap();
    // An ignored file never comes through a link (secrets), nor do projects through a link
    // to the directory that holds them.
    f.write(".gitignore", "out*/\n.vx/\n/.env\n");
    f.write(".env", "TOKEN=secret\n");
    std::os::unix::fs::symlink("../../.env", f.path("packages/web/.env")).unwrap();
    std::os::unix::fs::symlink("..", f.path("packages/web/all")).unwrap();
    f.commit();
    let out = f.vx(&["prune", "web"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(f.read("out/packages/web/shared.js"), "// shared\n");
    assert_eq!(f.read("out/packages/web/more/deep.js"), "// deep\n");
    assert!(!f.path("out/scripts/unrelated.js").exists());
    assert!(!f.path("out/packages/docs").exists());
    assert!(!f.path("out/.env").exists());
    assert!(
        out.stdout.contains(
            "note: packages/web/.env links to .env: ignored, or other projects' files, so not \
             copied; it dangles"
        ),
        "{out:?}"
    );
    assert!(
        out.stdout.contains(
            "note: packages/web/docs.js links to packages/docs/src/index.js, in packages/docs, \
             a project left out: it dangles"
        ),
        "{out:?}"
    );
}

#[test]
fn a_bin_stub_stands_in_json_only() {
    // web's bin is a build output (ignored): json/ gets an empty stand-in for installing to
    // link, full/ nothing — the build writes it there, an empty file would only mislead.
    let f = small();
    f.write(".gitignore", "out*/\n.vx/\ndist/\n");
    f.write(
        "packages/web/package.json",
        r#"{"name":"web","version":"1.0.0","bin":{"web":"./dist/cli.js"},"dependencies":{"ui":"*"}}"#,
    );
    f.write("packages/web/dist/cli.js", "#!/usr/bin/env node\n");
    f.commit();
    let out = f.vx(&["prune", "web", "--docker"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(f.read("out/json/packages/web/dist/cli.js"), "");
    assert!(!f.path("out/full/packages/web/dist/cli.js").exists());
    assert!(f.path("out/full/packages/web/package.json").exists());
}
