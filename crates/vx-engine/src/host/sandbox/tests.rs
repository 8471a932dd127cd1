//! The sandbox's host probe and views, on temporary workspaces.

use super::*;

/// Projects `app` and `lib` under `packages/`, with `package.json` files and a lockfile,
/// loaded from disk as a run loads them.
fn fixture() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("vx.toml"),
        "[workspace]\nmembers = [\"packages/*\"]\n",
    )
    .unwrap();
    std::fs::write(root.join("package.json"), "{}").unwrap();
    std::fs::write(root.join("pnpm-lock.yaml"), "").unwrap();
    for name in ["app", "lib"] {
        let project = root.join("packages").join(name);
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(
            project.join("package.json"),
            format!("{{ \"name\": \"{name}\" }}"),
        )
        .unwrap();
    }
    let ws = vx_workspace::discover(&root).expect("a workspace");
    (dir, ws)
}

fn inputs<'a>(
    ws: &'a Workspace,
    config: &'a SandboxConfig,
    home: Option<&'a Path>,
) -> ViewInputs<'a> {
    ViewInputs {
        workspace: ws,
        project: ws.by_name["app"],
        config,
        cache_dir: Path::new("/elsewhere/cache"),
        home,
        tmpdir: PathBuf::from("/tmp/t"),
        empty_file: PathBuf::from("/tmp/empty"),
        init: PathBuf::from("/usr/bin/vx"),
        linked: Vec::new(),
    }
}

#[test]
fn defaults_grants_and_walls() {
    let (_dir, ws) = fixture();
    let app = ws.root.join("packages/app");
    let config = SandboxConfig {
        read: vec!["src".into(), "missing".into(), "//".into()],
        write: vec!["dist".into()],
        network: vec![],
    };
    let view = view(&inputs(&ws, &config, None)).unwrap();
    assert_eq!(view.project, app);
    assert!(view.reads.contains(&app.join("package.json")));
    assert!(view.reads.contains(&ws.root.join("package.json")));
    assert!(view.reads.contains(&ws.root.join("pnpm-lock.yaml")));
    assert!(view.reads.contains(&app.join("src")));
    assert!(view.reads.contains(&ws.root));
    assert!(
        !view.reads.contains(&app.join("missing")),
        "a read grant that does not exist covers nothing"
    );
    assert_eq!(view.writes, [app.join("dist")]);
    assert!(
        app.join("dist").is_dir(),
        "a missing write grant is created"
    );
    // The other project is a wall; the task's own project is not.
    assert!(view.walls.contains(&ws.root.join("packages/lib")));
    assert!(!view.walls.contains(&app));
    assert!(
        !view.walls.contains(&ws.root.join(".git")),
        "a wall that does not exist is not one"
    );
    std::fs::create_dir(ws.root.join(".git")).unwrap();
    let again = super::view(&inputs(&ws, &config, None)).unwrap();
    assert!(again.walls.contains(&ws.root.join(".git")));
}

#[test]
fn the_violations_section_lists_each_and_hints_at_grants() {
    let v = |kind, path: &str| Violation {
        kind,
        path: path.to_string(),
        via: None,
    };
    let text = violations_section(
        &[
            v(AccessKind::Read, "packages/app/src/a.ts"),
            v(AccessKind::Read, "packages/lib/config.json"),
            v(AccessKind::Write, "packages/app/out/x.js"),
            v(AccessKind::Write, "/etc/passwd"),
            v(AccessKind::Net, "93.184.216.34:443"),
        ],
        &[
            "registry.npmjs.org:443".to_string(),
            "localhost:5000".to_string(),
        ],
        Path::new("packages/app"),
    );
    assert_eq!(
        text,
        "├─ SANDBOX VIOLATIONS (7)\n\
         │ read  packages/app/src/a.ts\n\
         │ read  packages/lib/config.json\n\
         │ write packages/app/out/x.js\n\
         │ write /etc/passwd\n\
         │ net   93.184.216.34:443\n\
         │ net   registry.npmjs.org:443\n\
         │ net   localhost:5000\n\
         │ hint: grant what the task needs in its sandbox table: read = [\"src/a.ts\", \"//packages/lib/config.json\"], write = [\"/etc\", \"out\"], network = [\"localhost:5000\", \"registry.npmjs.org\"]\n\
         │ hint: a direct connection never leaves the sandbox; only clients that use HTTP_PROXY reach the hosts in `network`\n"
    );
}

#[test]
fn workspace_packages_linked_in_node_modules_are_found() {
    let (_dir, ws) = fixture();
    let app = ws.root.join("packages/app");
    std::fs::create_dir_all(app.join("node_modules/@acme")).unwrap();
    std::os::unix::fs::symlink("../../../lib", app.join("node_modules/@acme/lib")).unwrap();
    std::fs::create_dir_all(ws.root.join("node_modules")).unwrap();
    std::os::unix::fs::symlink("../packages/lib", ws.root.join("node_modules/lib")).unwrap();
    // Not workspace packages: a directory, and a link elsewhere.
    std::fs::create_dir_all(app.join("node_modules/left-pad")).unwrap();
    std::os::unix::fs::symlink("/usr", app.join("node_modules/usr")).unwrap();
    let mut found = linked_packages(&ws, ws.by_name["app"]);
    found.sort_by(|a, b| a.link.cmp(&b.link));
    let lib = ws.by_name["lib"];
    assert_eq!(
        found,
        [
            Linked {
                link: ws.root.join("node_modules/lib"),
                project: lib
            },
            Linked {
                link: app.join("node_modules/@acme/lib"),
                project: lib
            },
        ]
    );
}

#[test]
fn a_write_grant_that_leaves_the_project_through_a_symlink_is_refused() {
    let (_dir, ws) = fixture();
    let app = ws.root.join("packages/app");
    std::os::unix::fs::symlink(ws.root.join("packages/lib"), app.join("out")).unwrap();
    let config = SandboxConfig {
        write: vec!["out".into()],
        ..SandboxConfig::default()
    };
    let error = view(&inputs(&ws, &config, None)).unwrap_err();
    assert!(
        matches!(&error, ViewError::LeavesProject { grant, .. } if grant == "out"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("leaves the project through a symlink"),
        "{error}"
    );
    // Refused before anything is created through the link.
    let config = SandboxConfig {
        write: vec!["out/sub".into()],
        ..SandboxConfig::default()
    };
    assert!(view(&inputs(&ws, &config, None)).is_err());
    assert!(!ws.root.join("packages/lib/sub").exists());
}

#[test]
fn credentials_that_exist_are_hidden_unless_granted() {
    let (dir, ws) = fixture();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".npmrc"), "token").unwrap();
    std::fs::write(home.join(".netrc"), "machine x").unwrap();
    let config = SandboxConfig {
        // `~` itself is not an explicit grant of the credentials in it.
        read: vec!["~/.netrc".into(), "~".into()],
        ..SandboxConfig::default()
    };
    let seen = view(&inputs(&ws, &config, Some(&home))).unwrap();
    let mut hidden = seen.hidden.clone();
    hidden.sort();
    assert_eq!(
        hidden,
        [(home.join(".npmrc"), false), (home.join(".ssh"), true)]
    );
    let config = SandboxConfig {
        read: vec!["~/x".into()],
        ..SandboxConfig::default()
    };
    let error = view(&inputs(&ws, &config, None)).unwrap_err();
    assert!(
        matches!(&error, ViewError::NeedsHome { grant } if grant == "~/x"),
        "{error}"
    );
    assert_eq!(error.to_string(), "`~/x` needs HOME, which is not set");
}
