//! Sandboxed tasks on the vx side (SBX-1 to SBX-8): whether this host can sandbox at all (the
//! probe), a task's view from the workspace and its `sandbox` table (the grants resolved, the
//! default reads, the walls, the credential files to hide), its launch, and how its
//! violations are shown. The mounts themselves are planned by `vx_exec::sandbox`; this is where
//! the workspace's facts and the file system are looked at.
//!
//! How this works: the first sandboxed task of a run asks for a [`Host`]; [`Host::probe`] finds
//! `bwrap` on vx's PATH and runs `true` through the real wrapper (bubblewrap, vx's init, the
//! tracer) in an empty view. Unless that ran, exited 0 and had its `exec` observed, every
//! sandboxed task of the run fails with `sandbox not available: <reason>` (vx fails closed).
//! The host holds the run's scratch directory (mode 0700): the empty file shown in place of
//! hidden credential files, and each attempt's `TMPDIR`.
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use vx_core::config::SandboxConfig;
use vx_core::key::WORKSPACE_FILES;
use vx_core::Workspace;
use vx_exec::sandbox::{resolve_grant, View, Violation, CREDENTIALS};
use vx_exec::trace::AccessKind;
use vx_exec::{ExecEvent, SandboxEnd, SandboxLaunch, SpawnSpec, StdinMode, Supervisor};

/// Every scratch directory this process made, so that [`remove_scratch`] can remove the ones
/// still alive when vx exits: a run leaves its tables (the host among them) to the process
/// exit, and a signal exits without unwinding.
static SCRATCH: std::sync::Mutex<Vec<std::sync::Weak<tempfile::TempDir>>> =
    std::sync::Mutex::new(Vec::new());

/// Removes the scratch directories that are still alive; called just before vx exits, on
/// every way out (the end of `main`, a second signal, the end of `vx watch`). A task that still
/// uses one is gone by then.
pub fn remove_scratch() {
    let alive: Vec<_> = match SCRATCH.lock() {
        Ok(mut list) => list.drain(..).filter_map(|weak| weak.upgrade()).collect(),
        Err(_) => return,
    };
    for scratch in alive {
        let _ = std::fs::remove_dir_all(scratch.path());
    }
}

/// What every sandboxed task of a run shares.
pub struct Host {
    bwrap: PathBuf,
    /// vx's own binary: the sandbox's init (SBX-9).
    init: PathBuf,
    /// The run's scratch directory (0700), removed with the host and the last task that uses
    /// it (a persistent task `vx watch` keeps outlives the cycle's host).
    scratch: std::sync::Arc<tempfile::TempDir>,
    /// An empty read-only file, shown in place of hidden credential files (SBX-5).
    empty_file: PathBuf,
    attempts: u64,
}

/// Why sandboxed tasks cannot run on this host (SBX-1): the reason, without the `sandbox not
/// available: ` in front.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error("observing file access needs Linux on x86-64, and this build is not")]
    Platform,
    #[error("`bwrap` is not on PATH (install bubblewrap: apt-get install bubblewrap)")]
    NoBwrap,
    #[error("cannot find vx's own binary for the sandbox's init: {0}")]
    OwnBinary(#[source] std::io::Error),
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The trial's view could not be laid out.
    #[error("{0}")]
    Mounts(vx_exec::sandbox::PlanError),
    #[error("the tracer saw nothing (is ptrace refused?)")]
    NothingTraced,
    #[error("a trial command in the sandbox failed (exit {code}){}", if said.is_empty() { String::new() } else { format!(": {said}") })]
    Trial { code: i32, said: String },
    #[error("the trial command in the sandbox never completed")]
    TrialUnfinished,
}

impl Host {
    /// The scratch directory, for a task to hold while its `TMPDIR` and proxy socket are in it.
    pub fn scratch(&self) -> std::sync::Arc<tempfile::TempDir> {
        std::sync::Arc::clone(&self.scratch)
    }

    /// SBX-1: whether sandboxed tasks can run here, found by running `true` through the real
    /// wrapper; the error says why not (`bwrap` missing, user namespaces refused, tracing
    /// impossible).
    pub fn probe(path_var: Option<&str>) -> Result<Host, Unavailable> {
        if !vx_exec::trace::supported() {
            return Err(Unavailable::Platform);
        }
        // SBX-1: an absolute path (a relative PATH entry would be resolved in the project).
        let bwrap = path_var
            .and_then(|path| vx_exec::subprocess::find_on_path("bwrap", path))
            .filter(|bwrap| bwrap.is_absolute())
            .ok_or(Unavailable::NoBwrap)?;
        let init = std::env::current_exe().map_err(Unavailable::OwnBinary)?;
        // Under /tmp whatever vx's TMPDIR says: every sandbox gets a /tmp of its own, so no
        // task sees another's TMPDIR or proxy socket (only its own are mounted in).
        let scratch = tempfile::Builder::new()
            .prefix(&format!(
                "{}{}-",
                vx_exec::sandbox::SCRATCH_PREFIX,
                std::process::id()
            ))
            .tempdir_in("/tmp")
            .map_err(|source| Unavailable::Create {
                path: PathBuf::from("/tmp"),
                source,
            })?;
        let empty_file = scratch.path().join("empty");
        std::fs::write(&empty_file, b"")
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&empty_file, std::fs::Permissions::from_mode(0o444))
            })
            .map_err(|source| Unavailable::Create {
                path: empty_file.clone(),
                source,
            })?;
        let scratch = std::sync::Arc::new(scratch);
        if let Ok(mut list) = SCRATCH.lock() {
            list.retain(|weak| weak.strong_count() > 0);
            list.push(std::sync::Arc::downgrade(&scratch));
        }
        let mut host = Host {
            bwrap,
            init,
            scratch,
            empty_file,
            attempts: 0,
        };
        host.trial(path_var)?;
        Ok(host)
    }

    /// Runs `true` sandboxed in an empty view; Ok when it exited 0 and its exec was seen.
    fn trial(&mut self, path_var: Option<&str>) -> Result<(), Unavailable> {
        let root = self.scratch.path().join("probe");
        std::fs::create_dir(&root).map_err(|source| Unavailable::Create {
            path: root.clone(),
            source,
        })?;
        let tmpdir = self.attempt_dir().map_err(|source| Unavailable::Create {
            path: self.scratch.path().to_path_buf(),
            source,
        })?;
        let view = View {
            root: root.clone(),
            project: root.clone(),
            tmpdir: tmpdir.clone(),
            empty_file: self.empty_file.clone(),
            init: self.init.clone(),
            ..View::default()
        };
        let true_path = path_var
            .and_then(|path| vx_exec::subprocess::find_on_path("true", path))
            .unwrap_or_else(|| PathBuf::from("/bin/true"));
        let spec = SpawnSpec {
            program: true_path,
            arg0: "true".into(),
            args: Vec::new(),
            cwd: root,
            env: vec![("PATH".into(), path_var.unwrap_or("/usr/bin:/bin").into())],
            stdin: StdinMode::Null,
            timeout: Some(std::time::Duration::from_secs(30)),
            kill_grace: std::time::Duration::from_secs(1),
            drain: std::time::Duration::from_millis(250),
            stop_leftovers_on_exit: true,
            sandbox: Some(self.launch(&view).map_err(Unavailable::Mounts)?),
        };
        let (tx, rx) = crossbeam_channel::unbounded();
        Supervisor::new().spawn(
            spec,
            Box::new(move |event| {
                let _ = tx.send(event);
            }),
        );
        let mut stderr = Vec::new();
        let mut seen = 0;
        for event in rx {
            match event {
                ExecEvent::Output { bytes, .. } => stderr.extend_from_slice(&bytes),
                ExecEvent::Access(_) => seen += 1,
                ExecEvent::Completed(done) => {
                    let _ = std::fs::remove_dir_all(&tmpdir);
                    let said = String::from_utf8_lossy(&stderr);
                    let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    return match (done.sandbox, done.exit_code) {
                        (Some(SandboxEnd::Reported), 0) if seen > 0 => Ok(()),
                        (Some(SandboxEnd::Reported), 0) => Err(Unavailable::NothingTraced),
                        (_, code) => Err(Unavailable::Trial {
                            code,
                            said: said.to_string(),
                        }),
                    };
                }
                _ => {}
            }
        }
        Err(Unavailable::TrialUnfinished)
    }

    /// A new attempt's `TMPDIR`, created with mode 0700 (SBX-2); the caller removes it when
    /// the attempt ends.
    pub fn attempt_dir(&mut self) -> std::io::Result<PathBuf> {
        self.attempts += 1;
        let dir = self.scratch.path().join(format!("tmp-{}", self.attempts));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(dir)
    }

    /// Where a task's proxy socket goes (SBX-6): in the scratch directory, named after the
    /// attempt directory just made.
    pub fn proxy_socket(&self) -> PathBuf {
        self.scratch
            .path()
            .join(format!("net-{}.sock", self.attempts))
    }

    pub fn init(&self) -> &Path {
        &self.init
    }

    pub fn empty_file(&self) -> &Path {
        &self.empty_file
    }

    /// How bubblewrap starts a task with `view`; the error is a `cannot sandbox` reason.
    pub fn launch(&self, view: &View) -> Result<SandboxLaunch, vx_exec::sandbox::PlanError> {
        let mounts = vx_exec::sandbox::plan(view)?;
        Ok(SandboxLaunch {
            bwrap: self.bwrap.clone(),
            options: vx_exec::sandbox::bwrap_args(&mounts, view),
            init: self.init.clone(),
            proxy: view.proxy.clone(),
        })
    }
}

/// SBX-7's frame section: the violations, one per line (root-relative), then the requests the
/// proxy refused (`host:port`), and a hint to grant them, written as grants of the task's
/// project (`project`, root-relative; empty for the root).
pub fn violations_section(violations: &[Violation], refused: &[String], project: &Path) -> String {
    let mut text = format!(
        "├─ SANDBOX VIOLATIONS ({})\n",
        violations.len() + refused.len()
    );
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut direct = false;
    let mut unix = false;
    for violation in violations {
        let word = match violation.kind {
            AccessKind::Read => "read ",
            AccessKind::Write => "write",
            AccessKind::Net => "net  ",
        };
        match &violation.via {
            Some(via) => text.push_str(&format!("│ {word} {} (via {via})\n", violation.path)),
            None => text.push_str(&format!("│ {word} {}\n", violation.path)),
        }
        let grant = grant_text(&violation.path, project);
        match violation.kind {
            AccessKind::Read => reads.push(grant),
            // A write grant is a directory: grant the one the path is in.
            AccessKind::Write => writes.push(match grant.rsplit_once('/') {
                Some((dir, _)) if !dir.is_empty() && dir != "/" => dir.to_string(),
                _ => grant,
            }),
            // A host process's Unix socket is never reachable.
            AccessKind::Net if violation.path.starts_with("unix:") => unix = true,
            // No grant lets a direct connection out: only the proxy does.
            AccessKind::Net => direct = true,
        }
    }
    let mut hosts = Vec::new();
    for target in refused {
        text.push_str(&format!("│ net   {target}\n"));
        hosts.push(match target.rsplit_once(':') {
            Some((host, "80" | "443")) => host.to_string(),
            _ => target.clone(),
        });
    }
    reads.dedup();
    writes.sort();
    writes.dedup();
    hosts.sort();
    hosts.dedup();
    let list = |items: &[String]| {
        items
            .iter()
            .map(|i| format!("\"{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut hint = Vec::new();
    if !reads.is_empty() {
        hint.push(format!("read = [{}]", list(&reads)));
    }
    if !writes.is_empty() {
        hint.push(format!("write = [{}]", list(&writes)));
    }
    if !hosts.is_empty() {
        hint.push(format!("network = [{}]", list(&hosts)));
    }
    if !hint.is_empty() {
        text.push_str(&format!(
            "│ hint: grant what the task needs in its sandbox table: {}\n",
            hint.join(", ")
        ));
    }
    if unix {
        text.push_str(
            "│ hint: a sandboxed task reaches only the Unix sockets it makes itself (in its write grants, TMPDIR or /tmp); a task that talks to a host daemon's socket runs unsandboxed\n",
        );
    }
    if direct {
        text.push_str(
            "│ hint: a direct connection never leaves the sandbox; only clients that use HTTP_PROXY reach the hosts in `network`\n",
        );
    }
    text
}

/// A violation's path as a grant: inside the project relative to it, elsewhere in the
/// workspace as `//path`, outside it absolute.
fn grant_text(path: &str, project: &Path) -> String {
    let path_buf = Path::new(path);
    if path.starts_with('/') {
        path.to_string()
    } else if let Ok(inside) = path_buf.strip_prefix(project) {
        match inside.to_string_lossy() {
            rest if rest.is_empty() => ".".to_string(),
            rest => rest.into_owned(),
        }
    } else if path == "." {
        "//".to_string()
    } else {
        format!("//{path}")
    }
}

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
    /// The real directories of the linked workspace packages the task may read (SBX-3; see
    /// [`linked_packages`]).
    pub linked: Vec<PathBuf>,
}

/// A workspace package linked in the project's or the root's `node_modules` (SBX-3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// The link, as the task names it (`…/node_modules/@acme/lib`).
    pub link: PathBuf,
    /// Index of the linked project in `workspace.projects`.
    pub project: usize,
}

/// The workspace packages linked in `node_modules` of project `project` and of the root:
/// `node_modules/<name>` and `node_modules/@scope/<name>` entries that are symbolic links to a
/// project's directory (as pnpm, npm, yarn and bun workspaces make them).
pub fn linked_packages(workspace: &Workspace, project: usize) -> Vec<Linked> {
    let root = &workspace.root;
    let real_root = root.canonicalize().unwrap_or_else(|_| root.clone());
    let by_dir: std::collections::HashMap<PathBuf, usize> = workspace
        .projects
        .iter()
        .enumerate()
        .map(|(i, p)| (real_root.join(&p.dir), i))
        .collect();
    let mut found = Vec::new();
    let mut look = |link: PathBuf| {
        let is_link = link
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return;
        }
        if let Some(&linked) = link.canonicalize().ok().and_then(|real| by_dir.get(&real)) {
            found.push(Linked {
                link,
                project: linked,
            });
        }
    };
    let project_dir = root.join(&workspace.projects[project].dir);
    let mut dirs = vec![project_dir.join("node_modules"), root.join("node_modules")];
    dirs.dedup();
    for modules in dirs {
        let Ok(entries) = std::fs::read_dir(&modules) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('@') {
                for scoped in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                    look(scoped.path());
                }
            } else {
                look(path);
            }
        }
    }
    found
}

/// Why a task's view could not be laid out: the reason in `vx: <id>: cannot sandbox: <reason>`.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("`{grant}` needs HOME, which is not set")]
    NeedsHome { grant: String },
    #[error("{}: {source}", dir.display())]
    Project {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("`{grant}`: {source}")]
    Grant {
        grant: String,
        source: std::io::Error,
    },
    #[error("the write grant `{grant}` leaves the project through a symlink (to {})", to.display())]
    LeavesProject { grant: String, to: PathBuf },
    #[error("cannot create the write grant `{grant}`: {source}")]
    CreateGrant {
        grant: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Mounts(#[from] vx_exec::sandbox::PlanError),
}

/// The task's view; missing write grants are created as directories.
pub fn view(inputs: &ViewInputs<'_>) -> Result<View, ViewError> {
    let root = inputs.workspace.root.clone();
    let project = inputs.workspace.projects[inputs.project].dir.clone();
    let project_dir = root.join(&project);
    let resolve = |text: &str| {
        resolve_grant(text, &root, &project_dir, inputs.home).ok_or_else(|| ViewError::NeedsHome {
            grant: text.to_string(),
        })
    };
    let mut reads: Vec<PathBuf> = default_reads(&root, &project_dir);
    reads.extend(inputs.linked.iter().cloned());
    for text in &inputs.config.read {
        let path = resolve(text)?;
        if path.symlink_metadata().is_ok() {
            reads.push(path);
        }
    }
    let mut writes = Vec::new();
    let real_project = project_dir
        .canonicalize()
        .map_err(|source| ViewError::Project {
            dir: project_dir.clone(),
            source,
        })?;
    for text in &inputs.config.write {
        let path = resolve(text)?;
        // SBX-3: a grant inside the project must not lead out of it through a symlink; the
        // nearest part that exists is checked before anything is created.
        if path.starts_with(&project_dir) {
            let existing = path
                .ancestors()
                .find(|a| a.symlink_metadata().is_ok())
                .unwrap_or(&project_dir);
            let real = existing.canonicalize().map_err(|source| ViewError::Grant {
                grant: text.to_string(),
                source,
            })?;
            if !real.starts_with(&real_project) {
                return Err(ViewError::LeavesProject {
                    grant: text.to_string(),
                    to: real,
                });
            }
        }
        if path.symlink_metadata().is_err() {
            std::fs::create_dir_all(&path).map_err(|source| ViewError::CreateGrant {
                grant: text.to_string(),
                source,
            })?;
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
    // The repository's git directories: a linked worktree's own and its common directory (in
    // the main checkout), or the `.git` of a repository the workspace is a subdirectory of.
    // Inside the root they are walls; outside it they are hidden outright.
    // The object stores it borrows from (`clone --shared`/`--reference`: `objects/info/
    // alternates`) hold every file of the origin: walled the same. And a cache directory
    // outside the workspace holds every task's outputs and logs: hidden too.
    let mut git_dirs = Vec::new();
    let real_root = root.canonicalize().unwrap_or_else(|_| root.clone());
    let mut wall_or_hide = |dir: &Path, walls: &mut Vec<PathBuf>| {
        let Ok(dir) = dir.canonicalize() else {
            return;
        };
        match dir.strip_prefix(&real_root) {
            Ok(rel) => walls.push(root.join(rel)),
            // Never hide a directory holding the workspace itself.
            Err(_) if real_root.starts_with(&dir) => {}
            Err(_) => git_dirs.push(dir),
        }
    };
    if let Ok(Some(dirs)) = vx_workspace::tree::find_repository(&root) {
        for dir in alternate_object_dirs(&dirs.common_dir.join("objects")) {
            // The origin's whole git directory when the store is its `objects`.
            let dir = match dir.parent() {
                Some(git_dir) if dir.ends_with("objects") => git_dir.to_path_buf(),
                _ => dir,
            };
            wall_or_hide(&dir, &mut walls);
        }
        for dir in [dirs.git_dir, dirs.common_dir] {
            wall_or_hide(&dir, &mut walls);
        }
    }
    if !inputs.cache_dir.starts_with(&root) {
        wall_or_hide(inputs.cache_dir, &mut walls);
    }
    git_dirs.sort();
    git_dirs.dedup();
    // A directory inside another is hidden with it.
    let outer = git_dirs.clone();
    git_dirs.retain(|dir| !outer.iter().any(|o| dir.starts_with(o) && dir != o));
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
        git_dirs,
        tmpdir: inputs.tmpdir.clone(),
        empty_file: inputs.empty_file.clone(),
        init: inputs.init.clone(),
        proxy: None,
    })
}

/// The object directories `objects` borrows from, transitively: each line of
/// `objects/info/alternates` (absolute, or relative to `objects`), and
/// `GIT_ALTERNATE_OBJECT_DIRECTORIES`. Bounded as git bounds it (5 levels).
fn alternate_object_dirs(objects: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::env::var_os("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        .map(|list| std::env::split_paths(&list).collect())
        .unwrap_or_default();
    let mut next = vec![objects.to_path_buf()];
    for _ in 0..5 {
        let mut deeper = Vec::new();
        for dir in next {
            let Ok(text) = std::fs::read_to_string(dir.join("info/alternates")) else {
                continue;
            };
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let alternate = dir.join(line);
                if !found.contains(&alternate) {
                    found.push(alternate.clone());
                    deeper.push(alternate);
                }
            }
        }
        next = deeper;
    }
    found
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
mod tests;
