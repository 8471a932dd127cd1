//! A temporary workspace built file by file, and readable renderings of what discovery
//! returns, so assertions compare whole messages.

use std::path::{Path, PathBuf};

use vx_core::{Diagnostic, Workspace};
use vx_workspace::{discover, LoadError};

pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The fixture's root, canonical (as `Workspace.root` is).
    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().expect("the fixture exists")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn file(&self, rel: &str, text: &str) -> &Fixture {
        let path = self.path(rel);
        fs_err::create_dir_all(path.parent().expect("a parent")).unwrap();
        fs_err::write(path, text).unwrap();
        self
    }

    pub fn dir(&self, rel: &str) -> &Fixture {
        fs_err::create_dir_all(self.path(rel)).unwrap();
        self
    }

    /// A `package.json` with a name, a version, and dependencies given as raw JSON.
    pub fn package(&self, dir: &str, name: &str, version: &str, extra: &str) -> &Fixture {
        let sep = if extra.is_empty() { "" } else { ",\n  " };
        let text =
            format!("{{\n  \"name\": \"{name}\",\n  \"version\": \"{version}\"{sep}{extra}\n}}\n");
        self.file(&join(dir, "package.json"), &text)
    }

    pub fn discover(&self, cwd: &str) -> Result<Workspace, LoadError> {
        self.dir(cwd);
        discover(&self.path(cwd))
    }

    pub fn workspace(&self, cwd: &str) -> Workspace {
        match self.discover(cwd) {
            Ok(workspace) => workspace,
            Err(LoadError::Config(errors)) => panic!("config errors:\n{}", render(&errors)),
            Err(other) => panic!("{other:?}"),
        }
    }

    /// The configuration errors of discovery from the root, rendered.
    pub fn errors(&self) -> String {
        match self.discover("") {
            Err(LoadError::Config(errors)) => render(&errors),
            Ok(_) => panic!("expected configuration errors"),
            Err(other) => panic!("{other:?}"),
        }
    }
}

fn join(dir: &str, file: &str) -> String {
    if dir.is_empty() {
        file.to_string()
    } else {
        format!("{dir}/{file}")
    }
}

/// Diagnostics as the binary prints them, without the `error: ` prefix.
pub fn render(errors: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in errors {
        out.push_str(&d.to_string());
        out.push('\n');
        for hint in &d.hints {
            out.push_str(&format!("  hint: {hint}\n"));
        }
    }
    out
}

/// `name (dir)` for each project, in the workspace's order.
pub fn projects(workspace: &Workspace) -> Vec<String> {
    workspace
        .projects
        .iter()
        .map(|p| format!("{} ({})", p.name, p.dir))
        .collect()
}

/// `to kind` for each edge of a project.
pub fn edges(workspace: &Workspace, name: &str) -> Vec<String> {
    workspace
        .project(name)
        .unwrap_or_else(|| panic!("no project {name}"))
        .deps
        .iter()
        .map(|e| format!("{} {:?}", e.to, e.kind))
        .collect()
}

pub fn same_path(a: &Path, b: &Path) -> bool {
    a.canonicalize().unwrap() == b.canonicalize().unwrap()
}
