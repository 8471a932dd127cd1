//! A sandboxed task's view (SBX-2 to SBX-5) from the workspace and its `sandbox` table: the
//! grants resolved, the default reads, the walls, the credential files to hide. The mounts
//! themselves are planned by `vx_exec::sandbox`; this is where the workspace's facts and the
//! file system are looked at (not used by a run yet: the sandbox is not available in this
//! release).
#![cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the run uses this once sandboxed tasks can run (issue 7); the tests use it now"
    )
)]

use std::path::{Path, PathBuf};

use vx_core::config::SandboxConfig;
use vx_core::key::WORKSPACE_FILES;
use vx_core::Workspace;
use vx_exec::sandbox::{resolve_grant, View, CREDENTIALS};

/// What the view is built from besides the workspace.
pub struct ViewInputs<'a> {
    pub workspace: &'a Workspace,
    /// Index of the task's project in `workspace.projects`.
    pub project: usize,
    pub config: &'a SandboxConfig,
    pub cache_dir: &'a Path,
    pub home: Option<&'a Path>,
    pub tmpdir: PathBuf,
    pub empty_file: PathBuf,
    /// vx's own binary (the sandbox's init).
    pub init: PathBuf,
}

/// The task's view; missing write grants are created as directories. The error is the reason
/// in `vx: <id>: cannot sandbox: <reason>`.
pub fn view(inputs: &ViewInputs<'_>) -> Result<View, String> {
    let root = inputs.workspace.root.clone();
    let project = inputs.workspace.projects[inputs.project].dir.clone();
    let project_dir = root.join(&project);
    let resolve = |text: &str| {
        resolve_grant(text, &root, &project_dir, inputs.home)
            .ok_or_else(|| format!("`{text}` needs HOME, which is not set"))
    };
    let mut reads: Vec<PathBuf> = default_reads(&root, &project_dir);
    for text in &inputs.config.read {
        let path = resolve(text)?;
        if path.symlink_metadata().is_ok() {
            reads.push(path);
        }
    }
    let mut writes = Vec::new();
    let real_project = project_dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", project_dir.display()))?;
    for text in &inputs.config.write {
        let path = resolve(text)?;
        // SBX-3: a grant inside the project must not lead out of it through a symlink; the
        // nearest part that exists is checked before anything is created.
        if path.starts_with(&project_dir) {
            let existing = path
                .ancestors()
                .find(|a| a.symlink_metadata().is_ok())
                .unwrap_or(&project_dir);
            let real = existing
                .canonicalize()
                .map_err(|e| format!("`{text}`: {e}"))?;
            if !real.starts_with(&real_project) {
                return Err(format!(
                    "the write grant `{text}` leaves the project through a symlink (to {})",
                    real.display()
                ));
            }
        }
        if path.symlink_metadata().is_err() {
            std::fs::create_dir_all(&path)
                .map_err(|e| format!("cannot create the write grant `{text}`: {e}"))?;
        }
        writes.push(path);
    }
    let mut walls: Vec<PathBuf> = inputs
        .workspace
        .projects
        .iter()
        .map(|p| root.join(&p.dir))
        .filter(|dir| !project_dir.starts_with(dir))
        .collect();
    walls.extend([
        root.join(".git"),
        root.join(".vx"),
        inputs.cache_dir.to_path_buf(),
    ]);
    // Only directories that exist can be emptied (a `.git` file of a worktree holds a path).
    walls.retain(|wall| wall.is_dir());
    walls.sort();
    walls.dedup();
    let hidden = match inputs.home {
        Some(home) => CREDENTIALS
            .iter()
            .map(|rel| home.join(rel))
            // Granted explicitly: a grant names the credential or a path inside it (a grant
            // of `~` or `~/.config` does not count).
            .filter(|path| !reads.iter().chain(&writes).any(|g| g.starts_with(path)))
            .filter_map(|path| {
                let meta = path.metadata().ok()?;
                Some((path, meta.is_dir()))
            })
            .collect(),
        None => Vec::new(),
    };
    Ok(View {
        root,
        project: project_dir,
        reads,
        writes,
        walls,
        hidden,
        tmpdir: inputs.tmpdir.clone(),
        empty_file: inputs.empty_file.clone(),
        init: inputs.init.clone(),
    })
}

/// SBX-3's default reads that exist: the project's and the root's `package.json`, the
/// workspace-fingerprint files (KEY-3), and `node_modules` of the project and of the root.
fn default_reads(root: &Path, project: &Path) -> Vec<PathBuf> {
    let mut reads = vec![
        project.join("package.json"),
        root.join("package.json"),
        project.join("node_modules"),
        root.join("node_modules"),
    ];
    reads.extend(WORKSPACE_FILES.iter().map(|name| root.join(name)));
    reads.retain(|path| path.symlink_metadata().is_ok());
    reads.sort();
    reads.dedup();
    reads
}

#[cfg(test)]
mod tests {
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
            error.contains("leaves the project through a symlink"),
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
        assert!(error.contains("HOME"), "{error}");
    }
}
