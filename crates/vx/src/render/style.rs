//! Colour and glyphs (UI-1, UI-10). Output must read correctly without colour, so colour only
//! ever decorates text that is already complete.

use std::io::IsTerminal;

use vx_core::TaskId;

/// Whether vx colours its `run` output (UI-10).
pub fn colour_enabled(env: &dyn Fn(&str) -> Option<String>) -> bool {
    if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if let Some(force) = env("FORCE_COLOR") {
        return !(force == "0" || force == "false");
    }
    std::io::stdout().is_terminal()
}

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub colour: bool,
}

const RESET: &str = "\x1b[0m";
const PROJECT_COLOURS: [&str; 6] = ["36", "35", "33", "34", "32", "96"];

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    pub fn magenta(&self, text: &str) -> String {
        self.paint("35", text)
    }

    /// A task id with a stable per-project colour and a fixed colour for the task part.
    pub fn id(&self, id: &TaskId) -> String {
        if !self.colour {
            return id.to_string();
        }
        let hash = id
            .project
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        let colour = PROJECT_COLOURS[hash as usize % PROJECT_COLOURS.len()];
        format!(
            "{}{}",
            self.paint(colour, &id.project),
            self.paint("1", &format!("#{}", id.task))
        )
    }
}
