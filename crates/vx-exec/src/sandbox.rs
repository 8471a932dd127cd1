//! The sandbox's view of the file system (SBX-2 to SBX-5): which paths a sandboxed task sees,
//! read-only or writable, as bubblewrap arguments.
//!
//! How this works: [`plan`] is a pure function from a [`View`] (the workspace root, the
//! project, the paths the task may read and write, the walls and the credential files to hide,
//! the task's temporary directory) to an ordered list of [`Mount`]s; [`bwrap_args`] turns that
//! list into bubblewrap's command line. The host file system is visible read-only; the
//! workspace root is replaced by an empty directory into which only the grants are mounted,
//! parents before children, so a grant inside another one wins; a read grant of a directory
//! that contains a wall (a nested project, `.git`, `.vx`, the cache directory) is mounted around
//! the wall, which stays an empty directory unless a grant names it or a path inside it; a
//! write grant that would contain a wall is refused. Everything here is data: the caller
//! resolves grants to absolute paths, drops those that do not exist and creates missing write
//! grants as directories before planning. [`violations`] judges what the tracer saw
//! (`trace.rs`) against the same view (SBX-7).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The name of a run's sandbox scratch directory in `/tmp` starts with this, then vx's pid and
/// a dash (`/tmp/vx-sandbox-4242-Xa9b2c`): vx removes its own at exit, and the guard removes a
/// dead vx's (EXEC-7).
pub const SCRATCH_PREFIX: &str = "vx-sandbox-";

/// The scratch directories in `/tmp` of the vx process `pid`.
pub fn scratch_dirs_of(pid: i32) -> Vec<PathBuf> {
    let own = format!("{SCRATCH_PREFIX}{pid}-");
    std::fs::read_dir("/tmp")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(&own))
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// What a sandboxed task may see, every path absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// The workspace root: shown as an empty directory holding only what is granted.
    pub root: PathBuf,
    /// The project directory: the working directory, always present.
    pub project: PathBuf,
    /// Paths the task may read: the default reads and the read grants that exist.
    pub reads: Vec<PathBuf>,
    /// Paths the task may write (and read): the write grants, existing by now.
    pub writes: Vec<PathBuf>,
    /// Directories never exposed by a grant of a directory containing them.
    pub walls: Vec<PathBuf>,
    /// Credential files and directories under `$HOME` that exist and are not granted, each
    /// with whether it is a directory (SBX-5).
    pub hidden: Vec<(PathBuf, bool)>,
    /// The repository's git directories outside the workspace (the common directory of a
    /// linked worktree, the `.git` of a repository the workspace is a subdirectory of, the
    /// git directories whose object stores it borrows through `objects/info/alternates`) and a
    /// cache directory outside it: hidden like credential directories, and a read inside one is
    /// a violation, as inside the root's `.git`.
    pub git_dirs: Vec<PathBuf>,
    /// The task's own writable temporary directory (`TMPDIR`), created by the caller.
    pub tmpdir: PathBuf,
    /// An empty regular file the task cannot write, shown in place of each hidden credential
    /// file (a device such as `/dev/null` cannot be read through a bind mount in the sandbox).
    pub empty_file: PathBuf,
    /// vx's own binary, which runs as the sandbox's init (SBX-9): mounted read-only last, so
    /// it is there even when it lives under `/tmp` or inside the workspace.
    pub init: PathBuf,
    /// The Unix socket of the task's network proxy (SBX-6), bridged by init to a loopback
    /// port inside the sandbox; mounted at the same path.
    pub proxy: Option<PathBuf>,
}

/// One bubblewrap mount, in the order they must be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// The host file system, read-only (`--ro-bind / /`).
    Host,
    /// A fresh `/proc`, a minimal `/dev`, a private `/tmp`.
    Proc,
    Dev,
    /// An empty writable directory over the path (`--tmpfs`): the root, a wall, a hidden
    /// credential directory, `/tmp`.
    Empty(PathBuf),
    /// [`View::empty_file`] over the path, read-only: a hidden credential file.
    EmptyFile(PathBuf),
    /// A directory created in the sandbox (`--dir`): the project when nothing is granted there.
    Dir(PathBuf),
    ReadOnly(PathBuf),
    Writable(PathBuf),
}

/// Why a view cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// SBX-4: a write grant would expose a wall writable.
    #[error("the write grant `{grant}` contains `{wall}`, which the sandbox never exposes; grant the directories beside it instead")]
    WriteContainsWall { grant: PathBuf, wall: PathBuf },
}

/// The mounts of `view`, in order.
pub fn plan(view: &View) -> Result<Vec<Mount>, PlanError> {
    for grant in &view.writes {
        if let Some(wall) = view
            .walls
            .iter()
            .find(|wall| wall.starts_with(grant) && !grant.starts_with(wall))
        {
            return Err(PlanError::WriteContainsWall {
                grant: grant.clone(),
                wall: wall.clone(),
            });
        }
    }
    let mut mounts = vec![
        Mount::Host,
        Mount::Proc,
        Mount::Dev,
        Mount::Empty(PathBuf::from("/tmp")),
    ];
    let hide = |(path, is_dir): &(PathBuf, bool)| {
        if *is_dir {
            Mount::Empty(path.clone())
        } else {
            Mount::EmptyFile(path.clone())
        }
    };
    mounts.extend(view.hidden.iter().map(hide));
    mounts.extend(view.git_dirs.iter().map(|dir| Mount::Empty(dir.clone())));
    mounts.push(Mount::Empty(view.root.clone()));
    // Parents before children; at the same path a write grant wins over a read.
    let mut grants: Vec<(&PathBuf, bool)> = view
        .reads
        .iter()
        .map(|p| (p, false))
        .chain(view.writes.iter().map(|p| (p, true)))
        .collect();
    grants.sort_by(|a, b| {
        (a.0.components().count(), a.0, !a.1).cmp(&(b.0.components().count(), b.0, !b.1))
    });
    // The first of each path is kept: the write, if there is one.
    grants.dedup_by(|later, earlier| later.0 == earlier.0);
    if !grants.iter().any(|(g, _)| view.project.starts_with(g)) {
        mounts.push(Mount::Dir(view.project.clone()));
    }
    for (path, writable) in &grants {
        mounts.push(if *writable {
            Mount::Writable((*path).clone())
        } else {
            Mount::ReadOnly((*path).clone())
        });
        // SBX-4: the walls inside a granted directory are emptied again after it; a grant
        // that names a wall or a path inside it is deeper, so it is mounted later, on top.
        for wall in &view.walls {
            if wall.starts_with(path) && wall != *path {
                mounts.push(Mount::Empty(wall.clone()));
            }
        }
        // SBX-5 likewise: a grant of `~` or `~/.config` does not show the credentials in it,
        // nor a grant of the main checkout its git directory.
        for hidden in &view.hidden {
            if hidden.0.starts_with(path) && hidden.0 != **path {
                mounts.push(hide(hidden));
            }
        }
        for dir in &view.git_dirs {
            if dir.starts_with(path) && dir != *path {
                mounts.push(Mount::Empty(dir.clone()));
            }
        }
    }
    mounts.push(Mount::Writable(view.tmpdir.clone()));
    if let Some(socket) = &view.proxy {
        mounts.push(Mount::Writable(socket.clone()));
    }
    if !view.init.as_os_str().is_empty() {
        mounts.push(Mount::ReadOnly(view.init.clone()));
    }
    Ok(mounts)
}

/// bubblewrap's arguments for `mounts`, with new namespaces (network: only loopback) and the
/// project as the working directory; the command follows them. The command is pid 1 of the
/// pid namespace (`--as-pid-1`): vx's sandbox init (`sandbox_init.rs`), whose exit ends every
/// process in the sandbox; bubblewrap's own reaper would outlive it and keep them. Every
/// capability is dropped (run by root, bubblewrap would keep them, and a task could undo the
/// mounts).
///
/// Two of bubblewrap's options are left out on purpose. `--new-session` would move init out of
/// bubblewrap's session and process group, where vx's SIGKILL and the guard (EXEC-7) reach
/// it; it is not needed against terminal injection, since vx starts bubblewrap in a session of
/// its own with no controlling terminal and init starts the command in another. And
/// `--die-with-parent` follows the thread that spawned bubblewrap, not vx (SBX-9): vx's death
/// is the guard's to handle.
pub fn bwrap_args(mounts: &[Mount], view: &View) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--cap-drop", "ALL", "--unshare-all", "--as-pid-1"]
        .iter()
        .map(OsString::from)
        .collect();
    let mut push = |flag: &str, paths: &[&Path]| {
        args.push(flag.into());
        args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    };
    for mount in mounts {
        match mount {
            Mount::Host => push("--ro-bind", &[Path::new("/"), Path::new("/")]),
            Mount::Proc => push("--proc", &[Path::new("/proc")]),
            Mount::Dev => push("--dev", &[Path::new("/dev")]),
            Mount::Empty(path) => push("--tmpfs", &[path]),
            Mount::EmptyFile(path) => push("--ro-bind", &[&view.empty_file, path]),
            Mount::Dir(path) => push("--dir", &[path]),
            Mount::ReadOnly(path) => push("--ro-bind", &[path, path]),
            Mount::Writable(path) => push("--bind", &[path, path]),
        }
    }
    push("--chdir", &[&view.project]);
    args
}

/// An access the task was not granted (SBX-7).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub kind: crate::trace::AccessKind,
    /// Root-relative when inside the workspace, else absolute.
    pub path: String,
    /// The path as the task named it, when it reached `path` another way: through a symlink
    /// inside a grant, or through `/proc/self/cwd` (shown the same way as `path`).
    pub via: Option<String>,
}

/// What [`violations`] asks of the host's file system.
pub trait HostFiles {
    /// Whether `path` exists on the host (a dangling link counts).
    fn exists(&self, path: &Path) -> bool;
    /// Where `path` leads on the host once every symlink in it is followed; `None` when it
    /// does not exist.
    fn resolve(&self, path: &Path) -> Option<PathBuf>;
}

/// The real file system.
pub struct RealFiles;

impl HostFiles for RealFiles {
    fn exists(&self, path: &Path) -> bool {
        path.symlink_metadata().is_ok()
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// SBX-7: which of `accesses` are violations of `view`. A read is one when it names a path
/// that exists on the host inside the workspace (or inside one of [`View::git_dirs`]) and no
/// grant covers — a directory on the way to a grant excepted; other reads outside the workspace
/// never are. A read a grant covers is one all the same when the path leads, through a symlink,
/// to such a place (`src/link -> ../../q/secret.txt`): it is reported at the place it leads
/// to, with the path the task named. A write is one anywhere outside the write grants and the
/// task's temporary directory, and, outside the workspace, the private `/tmp`, `/dev` and
/// `/proc`. A grant does not cover what a wall inside it hides. Paths are taken lexically
/// (`a/../b` is `b`); the result is sorted and without repeats.
pub fn violations(
    view: &View,
    accesses: &[crate::trace::Access],
    host: &dyn HostFiles,
) -> Vec<Violation> {
    use crate::trace::AccessKind;
    // A grant covers a path inside it, unless a wall between them hides it (SBX-4).
    let covered = |path: &Path, grants: &[PathBuf]| {
        grants.iter().any(|g| {
            path.starts_with(g)
                && !view
                    .walls
                    .iter()
                    .any(|w| path.starts_with(w) && w.starts_with(g) && w != g)
        })
    };
    let readable: Vec<PathBuf> = view.reads.iter().chain(&view.writes).cloned().collect();
    let private = [
        PathBuf::from("/tmp"),
        PathBuf::from("/dev"),
        PathBuf::from("/proc"),
    ];
    let forbidden_read = |path: &Path| {
        let inside = path.starts_with(&view.root);
        // Only a grant that names a git directory (or a path in it) shows it.
        let in_git = view.git_dirs.iter().any(|dir| {
            path.starts_with(dir)
                && !readable
                    .iter()
                    .any(|g| path.starts_with(g) && g.starts_with(dir))
        });
        ((inside && !covered(path, &readable) && !readable.iter().any(|g| g.starts_with(path)))
            || in_git)
            && host.exists(path)
    };
    let shown = |path: &Path| match path.strip_prefix(&view.root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        Ok(_) => ".".to_string(),
        Err(_) => path.to_string_lossy().into_owned(),
    };
    // The root's own real path, so that a resolved path is compared in the root's terms even
    // when the root itself lies below a symlink.
    let real_root = host.resolve(&view.root);
    let in_root_terms = |real: PathBuf| match &real_root {
        Some(real_root) if real_root != &view.root => match real.strip_prefix(real_root) {
            Ok(rest) => view.root.join(rest),
            Err(_) => real,
        },
        _ => real,
    };
    let mut found: Vec<Violation> = Vec::new();
    for access in accesses {
        let path = lexical(&access.path);
        let asked = access.asked.as_deref().map(shown);
        let violates = match access.kind {
            // The tracer reports only connections to non-loopback addresses.
            AccessKind::Net => true,
            AccessKind::Read => forbidden_read(&path),
            // Inside the workspace only the write grants count (the workspace may itself
            // live under /tmp); outside it, the private directories too.
            AccessKind::Write => {
                !covered(&path, &view.writes)
                    && !path.starts_with(&view.tmpdir)
                    && (path.starts_with(&view.root)
                        || !private.iter().any(|p| path.starts_with(p)))
            }
        };
        if violates {
            found.push(Violation {
                kind: access.kind,
                path: shown(&path),
                via: asked,
            });
            continue;
        }
        // A granted read that a symlink leads elsewhere: judged where it arrives.
        if access.kind == AccessKind::Read && path.starts_with(&view.root) {
            let Some(real) = host.resolve(&path).map(in_root_terms) else {
                continue;
            };
            if real != path && forbidden_read(&real) {
                found.push(Violation {
                    kind: access.kind,
                    path: shown(&real),
                    via: Some(asked.unwrap_or_else(|| shown(&path))),
                });
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `path` with `.` and `..` components resolved without looking at the file system.
pub fn lexical(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// SBX-5: the credential stores under `$HOME` a sandboxed task never sees unless it is granted
/// one explicitly.
pub const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".config/containers/auth.json",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".bunfig.toml",
];

/// SBX-3: a grant as written, resolved to an absolute path: relative to the project (`.` is
/// the project), `//path` relative to the root (`//` the root), `/abs` as is, `~/path` under
/// `home`. Components `..` are resolved lexically; `None` for `~/…` without a home.
pub fn resolve_grant(
    text: &str,
    root: &Path,
    project: &Path,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let joined = if let Some(rest) = text.strip_prefix("//") {
        root.join(rest)
    } else if text.starts_with('/') {
        PathBuf::from(text)
    } else if let Some(rest) = text.strip_prefix("~/") {
        home?.join(rest)
    } else if text == "~" {
        home?.to_path_buf()
    } else {
        project.join(text)
    };
    Some(lexical(&joined))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn view() -> View {
        View {
            root: p("/ws"),
            project: p("/ws/packages/app"),
            walls: vec![p("/ws/.git"), p("/ws/.vx"), p("/ws/packages/app/nested")],
            tmpdir: p("/tmp/vx-task-1"),
            empty_file: p("/ws/.vx/tmp/empty"),
            init: p("/tmp/build/vx"),
            ..View::default()
        }
    }

    /// The mounts after the fixed prefix (host, proc, dev, /tmp, hidden files, the root).
    fn grants_part(mounts: &[Mount]) -> &[Mount] {
        let root = mounts
            .iter()
            .position(|m| *m == Mount::Empty(p("/ws")))
            .expect("the root is emptied");
        &mounts[root + 1..]
    }

    #[test]
    fn resolving_grants() {
        let (root, project, home) = (p("/ws"), p("/ws/packages/app"), p("/home/u"));
        let cases = [
            (".", "/ws/packages/app"),
            ("src", "/ws/packages/app/src"),
            ("../lib/dist", "/ws/packages/lib/dist"),
            ("//", "/ws"),
            ("//tools/bin", "/ws/tools/bin"),
            ("/etc/ssl", "/etc/ssl"),
            ("~/.cache/tool", "/home/u/.cache/tool"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                resolve_grant(text, &root, &project, Some(&home)),
                Some(p(expected)),
                "{text}"
            );
        }
        assert_eq!(resolve_grant("~/.npmrc", &root, &project, None), None);
    }

    #[test]
    fn nothing_granted_leaves_an_empty_root_with_the_project_directory() {
        let mounts = plan(&view()).unwrap();
        assert_eq!(
            &mounts[..4],
            [
                Mount::Host,
                Mount::Proc,
                Mount::Dev,
                Mount::Empty(p("/tmp"))
            ]
        );
        assert_eq!(
            grants_part(&mounts),
            [
                Mount::Dir(p("/ws/packages/app")),
                Mount::Writable(p("/tmp/vx-task-1")),
                Mount::ReadOnly(p("/tmp/build/vx"))
            ]
        );
    }

    #[test]
    fn grants_are_mounted_parents_first_and_a_write_wins_at_the_same_path() {
        let mut v = view();
        v.reads = vec![
            p("/ws/packages/app/src"),
            p("/ws/packages/app"),
            p("/ws/packages/app/dist"),
        ];
        v.writes = vec![p("/ws/packages/app/dist")];
        let mounts = plan(&v).unwrap();
        assert_eq!(
            grants_part(&mounts),
            [
                Mount::ReadOnly(p("/ws/packages/app")),
                Mount::Empty(p("/ws/packages/app/nested")),
                Mount::Writable(p("/ws/packages/app/dist")),
                Mount::ReadOnly(p("/ws/packages/app/src")),
                Mount::Writable(p("/tmp/vx-task-1")),
                Mount::ReadOnly(p("/tmp/build/vx")),
            ]
        );
    }

    #[test]
    fn a_grant_of_the_root_is_mounted_around_the_walls_unless_one_is_named() {
        let mut v = view();
        v.reads = vec![p("/ws"), p("/ws/.git/HEAD")];
        let mounts = plan(&v).unwrap();
        assert_eq!(
            grants_part(&mounts),
            [
                Mount::ReadOnly(p("/ws")),
                Mount::Empty(p("/ws/.git")),
                Mount::Empty(p("/ws/.vx")),
                Mount::Empty(p("/ws/packages/app/nested")),
                Mount::ReadOnly(p("/ws/.git/HEAD")),
                Mount::Writable(p("/tmp/vx-task-1")),
                Mount::ReadOnly(p("/tmp/build/vx")),
            ],
            "only the named file of .git is shown"
        );
    }

    #[test]
    fn a_write_grant_containing_a_wall_is_refused() {
        let mut v = view();
        v.writes = vec![p("/ws/packages")];
        assert_eq!(
            plan(&v),
            Err(PlanError::WriteContainsWall {
                grant: p("/ws/packages"),
                wall: p("/ws/packages/app/nested"),
            })
        );
        // Naming the wall itself (or a path in it) is honoured.
        v.writes = vec![p("/ws/packages/app/nested/out")];
        assert!(plan(&v).is_ok());
    }

    /// A host where everything exists but `missing`, and `links` lead from one prefix to
    /// another.
    #[derive(Default)]
    struct Files {
        missing: Vec<PathBuf>,
        links: Vec<(PathBuf, PathBuf)>,
    }

    impl HostFiles for Files {
        fn exists(&self, path: &Path) -> bool {
            !self.missing.iter().any(|m| m == path)
        }

        fn resolve(&self, path: &Path) -> Option<PathBuf> {
            let resolved = self
                .links
                .iter()
                .find_map(|(from, to)| Some(to.join(path.strip_prefix(from).ok()?)))
                .unwrap_or_else(|| path.to_path_buf());
            self.exists(&resolved).then_some(resolved)
        }
    }

    #[test]
    fn a_granted_read_leading_elsewhere_through_a_link_or_proc_is_judged_where_it_lands() {
        use crate::trace::{Access, AccessKind::Read};
        let mut v = view();
        v.reads = vec![p("/ws/packages/app/src")];
        v.git_dirs = vec![p("/home/u/main/.git")];
        let files = Files {
            links: vec![
                (
                    p("/ws/packages/app/src/link"),
                    p("/ws/packages/q/secret.txt"),
                ),
                (
                    p("/ws/packages/app/src/fine"),
                    p("/ws/packages/app/src/a.ts"),
                ),
            ],
            ..Files::default()
        };
        let accesses = [
            Access {
                kind: Read,
                path: p("/ws/packages/app/src/link"),
                asked: None,
            },
            Access {
                kind: Read,
                path: p("/ws/packages/app/src/fine"),
                asked: None,
            },
            Access {
                kind: Read,
                path: p("/ws/packages/app/../q/other.txt"),
                asked: Some(p("/proc/self/cwd/../q/other.txt")),
            },
            Access {
                kind: Read,
                path: p("/home/u/main/.git/objects/ab/cdef"),
                asked: None,
            },
            Access {
                kind: Read,
                path: p("/home/u/elsewhere.txt"),
                asked: None,
            },
        ];
        let got: Vec<(String, Option<String>)> = violations(&v, &accesses, &files)
            .into_iter()
            .map(|x| (x.path, x.via))
            .collect();
        assert_eq!(
            got,
            [
                ("/home/u/main/.git/objects/ab/cdef".to_string(), None),
                (
                    "packages/q/other.txt".to_string(),
                    Some("/proc/self/cwd/../q/other.txt".to_string())
                ),
                (
                    "packages/q/secret.txt".to_string(),
                    Some("packages/app/src/link".to_string())
                ),
            ]
        );
    }

    #[test]
    fn git_dirs_outside_the_root_are_hidden_and_hidden_again_inside_a_grant() {
        let mut v = view();
        v.git_dirs = vec![p("/home/u/main/.git")];
        v.reads = vec![p("/home/u/main")];
        let mounts = plan(&v).unwrap();
        let root = mounts
            .iter()
            .position(|m| *m == Mount::Empty(p("/ws")))
            .unwrap();
        assert!(mounts[..root].contains(&Mount::Empty(p("/home/u/main/.git"))));
        let grant = mounts
            .iter()
            .position(|m| *m == Mount::ReadOnly(p("/home/u/main")))
            .unwrap();
        assert_eq!(mounts[grant + 1], Mount::Empty(p("/home/u/main/.git")));
    }

    #[test]
    fn violations_are_ungranted_reads_in_the_workspace_and_writes_outside_the_grants() {
        use crate::trace::{
            Access,
            AccessKind::{Read, Write},
        };
        let mut v = view();
        v.reads = vec![p("/ws/packages/app/src")];
        v.writes = vec![p("/ws/packages/app/dist")];
        let a = |kind, path: &str| Access {
            kind,
            path: p(path),
            asked: None,
        };
        let accesses = [
            a(Read, "/ws/packages/app/src/index.ts"),
            a(Read, "/ws/packages/app/dist/out.js"),
            a(Read, "/ws/packages/app"),
            a(Read, "/ws/packages"),
            a(Read, "/ws/packages/shared/config.json"),
            a(Read, "/ws/packages/app/src/../secret.txt"),
            a(Read, "/ws/packages/app/missing.txt"),
            a(Read, "/usr/lib/node/index.js"),
            a(Read, "/ws/packages/shared/config.json"),
            a(Write, "/ws/packages/app/dist/out.js"),
            a(Write, "/tmp/vx-task-1/scratch"),
            a(Write, "/tmp/cache"),
            a(Write, "/dev/null"),
            a(Write, "/ws/packages/app/other.txt"),
            a(Write, "/home/u/.cache/tool"),
        ];
        let files = Files {
            missing: vec![p("/ws/packages/app/missing.txt")],
            ..Files::default()
        };
        let got = violations(&v, &accesses, &files);
        let got: Vec<(crate::trace::AccessKind, String)> =
            got.into_iter().map(|x| (x.kind, x.path)).collect();
        assert_eq!(
            got,
            [
                (Read, "packages/app/secret.txt".to_string()),
                (Read, "packages/shared/config.json".to_string()),
                (Write, "/home/u/.cache/tool".to_string()),
                (Write, "packages/app/other.txt".to_string()),
            ]
        );
    }

    #[test]
    fn walls_inside_a_grant_and_a_workspace_under_tmp_still_count() {
        use crate::trace::{
            Access,
            AccessKind::{Read, Write},
        };
        let mut v = view();
        v.root = p("/tmp/ws");
        v.project = p("/tmp/ws/packages/app");
        v.walls = vec![p("/tmp/ws/.git"), p("/tmp/ws/packages/lib")];
        v.reads = vec![p("/tmp/ws")];
        let accesses = [
            Access {
                kind: Read,
                asked: None,
                path: p("/tmp/ws/.git/config"),
            },
            Access {
                kind: Read,
                asked: None,
                path: p("/tmp/ws/packages/lib/index.js"),
            },
            Access {
                kind: Read,
                asked: None,
                path: p("/tmp/ws/README.md"),
            },
            Access {
                kind: Write,
                asked: None,
                path: p("/tmp/ws/packages/app/out.txt"),
            },
            Access {
                kind: Write,
                asked: None,
                path: p("/tmp/scratch"),
            },
        ];
        let got: Vec<String> = violations(&v, &accesses, &Files::default())
            .into_iter()
            .map(|x| x.path)
            .collect();
        assert_eq!(
            got,
            [
                ".git/config",
                "packages/lib/index.js",
                "packages/app/out.txt"
            ]
        );
    }

    #[test]
    fn a_grant_containing_a_credential_hides_it_again_and_capabilities_are_dropped() {
        let mut v = view();
        v.hidden = vec![(p("/home/u/.ssh"), true)];
        v.reads = vec![p("/home/u")];
        let mounts = plan(&v).unwrap();
        let grant = mounts
            .iter()
            .position(|m| *m == Mount::ReadOnly(p("/home/u")))
            .unwrap();
        assert_eq!(mounts[grant + 1], Mount::Empty(p("/home/u/.ssh")));
        let args = bwrap_args(&mounts, &v);
        assert_eq!(args[..2], ["--cap-drop", "ALL"].map(OsString::from));
    }

    #[test]
    fn credentials_are_hidden_as_empty_files_or_directories() {
        let mut v = view();
        v.hidden = vec![(p("/home/u/.ssh"), true), (p("/home/u/.npmrc"), false)];
        let mounts = plan(&v).unwrap();
        assert!(mounts.contains(&Mount::Empty(p("/home/u/.ssh"))));
        assert!(mounts.contains(&Mount::EmptyFile(p("/home/u/.npmrc"))));
        let args = bwrap_args(&mounts, &v);
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = text.iter().position(|a| a == "/home/u/.npmrc").unwrap();
        assert_eq!(&text[at - 2..at], ["--ro-bind", "/ws/.vx/tmp/empty"]);
        assert_eq!(&text[text.len() - 2..], ["--chdir", "/ws/packages/app"]);
    }
}
