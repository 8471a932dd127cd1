//! What `vx` itself would say about the workspace as the editor holds it: the load with the
//! open documents in place of their files (`vx_workspace::load_planned`), then the checks a
//! run makes before anything starts — every `depends-on` resolved (GRAPH-2) and the graph of
//! every task free of cycles (GRAPH-5). The same diagnostics, in the same words, as `vx run`
//! prints; a workspace that loads is kept for completion, hover and navigation, and the last
//! one that loaded stays while the files are broken.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vx_core::graph::{ExcludeDependencies, TaskGraph, TaskTable};
use vx_core::{Diagnostic, TaskId, Workspace};
use vx_workspace::LoadError;

/// A diagnostic and whether it is an error (else a warning).
pub type Said = (Diagnostic, bool);

/// The outcome of one analysis.
pub struct Analysis {
    /// What `vx run` would print, in its order.
    pub said: Vec<Said>,
    /// The workspace and its resolved edges, when it loaded.
    pub loaded: Option<Loaded>,
}

pub struct Loaded {
    pub workspace: Workspace,
    /// Every task's resolved edges; `None` when a `depends-on` entry does not resolve.
    pub table: Option<TaskTable>,
}

/// Loads the workspace at `root` with `overlay` (root-relative path → text) in place of files;
/// `parsed` keeps what earlier analyses parsed, so that only changed files are parsed again.
pub fn analyse(
    root: &Path,
    overlay: &BTreeMap<String, String>,
    parsed: &vx_workspace::Parsed,
) -> Analysis {
    let workspace = match vx_workspace::load_planned_with(root, overlay, parsed) {
        Ok(workspace) => workspace,
        Err(e) => {
            return Analysis {
                said: load_problems(e).into_iter().map(|d| (d, true)).collect(),
                loaded: None,
            }
        }
    };
    let mut said: Vec<Said> = workspace
        .warnings
        .iter()
        .map(|w| (w.clone(), false))
        .collect();
    let table = match TaskTable::resolve(&workspace) {
        Ok(table) => {
            let all: Vec<TaskId> = table.edges.keys().cloned().collect();
            if let Err(cycle) =
                TaskGraph::build(&workspace, &table, &all, &ExcludeDependencies::None)
            {
                said.push((cycle, true));
            }
            Some(table)
        }
        Err(problems) => {
            said.extend(problems.into_iter().map(|d| (d, true)));
            None
        }
    };
    Analysis {
        said,
        loaded: Some(Loaded { workspace, table }),
    }
}

/// The diagnostics of a failed load, worded as `vx` words them.
fn load_problems(e: LoadError) -> Vec<Diagnostic> {
    match vx_engine::workspace::load_error(e) {
        vx_engine::error::Failure::User(diagnostics) => diagnostics,
        vx_engine::error::Failure::Internal(message) => vec![Diagnostic::new(message)],
        vx_engine::error::Failure::Signalled(_) => Vec::new(),
    }
}

/// The workspace root holding `path` (a file or a directory), if any.
pub fn root_of(path: &Path) -> Option<PathBuf> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    // A directory the editor has but the disk does not (an unsaved new project) has a parent
    // that exists.
    let existing = dir.ancestors().find(|d| d.is_dir())?;
    vx_workspace::find_root(existing).ok()
}
