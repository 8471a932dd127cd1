//! How vx prints its own errors: one `error: ` line on stderr, `  hint: ` lines after it
//! (ERR-1). The error and its exit code are the engine's (`vx_engine::error::Failure`).

use vx_engine::error::Failure;

/// The most configuration errors printed at once (CFG-10).
const MAX_PRINTED: usize = 20;

/// Writes the failure to stderr.
pub fn report(failure: &Failure) {
    crate::render::stderr(&text(failure));
}

/// The failure as vx prints it (`vx mcp` hands it to an agent as a tool's error).
pub fn text(failure: &Failure) -> String {
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
    text
}
