//! How vx reports its own errors: one `error: ` line on stderr, `  hint: ` lines after it
//! (ERR-1), and the exit code of EXIT-1.

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

/// The most configuration errors printed at once (CFG-10).
const MAX_PRINTED: usize = 20;

/// Writes the failure to stderr.
pub fn report(failure: &Failure) {
    let mut text = String::new();
    match failure {
        Failure::User(diagnostics) => {
            for d in diagnostics.iter().take(MAX_PRINTED) {
                text.push_str(&format!("error: {d}\n"));
                for hint in &d.hints {
                    text.push_str(&format!("  hint: {hint}\n"));
                }
            }
            if diagnostics.len() > MAX_PRINTED {
                text.push_str(&format!(
                    "error: and {} more errors\n",
                    diagnostics.len() - MAX_PRINTED
                ));
            }
        }
        Failure::Internal(message) => {
            text.push_str(&format!("error: internal error: {message}\n"));
            text.push_str(
                "  hint: this is a bug in vx; please report it with the command you ran\n",
            );
        }
        Failure::Signalled(_) => {}
    }
    crate::render::stderr(&text);
}
