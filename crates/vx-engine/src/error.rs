//! An error that ends a command, and its exit code (EXIT-1). The binary prints it (ERR-1: one
//! `error: ` line on stderr, `  hint: ` lines after it).

use vx_core::Diagnostic;

use crate::exit;

/// An error that ends the command.
#[derive(Debug)]
pub enum Failure {
    /// Usage, configuration, graph or selection problems: exit 2.
    User(Vec<Diagnostic>),
    /// A bug: exit 3.
    Internal(String),
    /// Signal n came before any task started (while waiting for the workspace lock): exit
    /// 128 + n, nothing printed.
    Signalled(i32),
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::User(vec![Diagnostic::new(message)])
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::User(_) => exit::USAGE,
            Failure::Internal(_) => exit::INTERNAL,
            Failure::Signalled(n) => exit::signal(*n),
        }
    }
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Failure {
        Failure::User(vec![d])
    }
}

impl From<Vec<Diagnostic>> for Failure {
    fn from(d: Vec<Diagnostic>) -> Failure {
        Failure::User(d)
    }
}
