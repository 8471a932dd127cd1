//! Task ids: `<project>#<task>`, the unique name of a task in a run.

use std::fmt;

/// The name of the root project (CFG-1).
pub const ROOT_PROJECT: &str = "//";

/// `project#task`. Ordered by project, then task, which is the order every list that reaches
/// output follows (GRAPH-6).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub project: String,
    pub task: String,
}

impl TaskId {
    pub fn new(project: impl Into<String>, task: impl Into<String>) -> TaskId {
        TaskId {
            project: project.into(),
            task: task.into(),
        }
    }

    /// Splits `pkg#task` at the last `#` that leaves a non-empty task (project names may not
    /// contain `#`, so the first `#` is the separator).
    pub fn parse(text: &str) -> Option<TaskId> {
        let (project, task) = text.split_once('#')?;
        if project.is_empty() || task.is_empty() {
            return None;
        }
        Some(TaskId::new(project, task))
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.project, self.task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_root_and_scoped_ids() {
        assert_eq!(TaskId::parse("//#lint"), Some(TaskId::new("//", "lint")));
        assert_eq!(
            TaskId::parse("@acme/web#build:css"),
            Some(TaskId::new("@acme/web", "build:css"))
        );
        assert_eq!(TaskId::parse("#build"), None);
        assert_eq!(TaskId::parse("web#"), None);
        assert_eq!(TaskId::parse("build"), None);
    }
}
