//! Writing the `vx.toml` text of `vx init` and `vx migrate`: the header, the `[workspace]`
//! table in the root file, the `[workspace.tasks.<name>]` templates, one `[tasks.<name>]`
//! table per task, and the comments for what was not carried over.
//!
//! The text is written by hand rather than serialised, because most of what makes it useful
//! is comments: TODOs, the commented cache suggestion, the scripts left out.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::scripts::{Todo, TodoReason};

/// One `vx.toml` as `vx init` writes it.
#[derive(Debug, Clone, Default)]
pub struct File {
    /// Root-relative path.
    pub rel: String,
    /// Comment lines at the top, without `# `.
    pub header: Vec<String>,
    /// `name = "..."` (a project without a `package.json` name).
    pub name: Option<String>,
    /// `tags = [...]`.
    pub tags: Vec<String>,
    /// `deps = [...]`: project dependencies no `package.json` gives (an Nx project's).
    pub deps: Vec<String>,
    /// `Some` in the root file: the `[workspace]` table.
    pub workspace: Option<WorkspaceTable>,
    /// `[workspace.input-sets.<name>]` tables (root file only).
    pub input_sets: Vec<InputSetTable>,
    /// `[workspace.tasks.<name>]` tables (root file only).
    pub templates: Vec<Table>,
    /// `[tasks.<name>]` tables.
    pub tasks: Vec<Table>,
    /// Comment blocks after the tasks (scripts left out), each a list of lines without `# `.
    pub trailer: Vec<Vec<String>>,
    /// TODOs that belong to no table (a script left out).
    pub loose_todos: Vec<Todo>,
}

/// The `[workspace]` table.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceTable {
    /// `members = [...]`, when written.
    pub members: Option<Vec<String>>,
    /// `concurrency = N`, when carried over.
    pub concurrency: Option<u32>,
    /// `ui = "tui"`, when carried over.
    pub tui: bool,
    /// `affected-base = "..."`, when carried over.
    pub affected_base: Option<String>,
    /// `exclude-from-all`, with the root script it was read from.
    pub exclude_from_all: Option<(Vec<String>, String)>,
}

/// A task table; a key left `None` (or empty) is not written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    /// `extends = false`: the template of the same name does not apply.
    pub no_template: bool,
    /// Comment lines written above the keys, without `# `.
    pub comments: Vec<String>,
    pub description: Option<String>,
    pub command: Option<String>,
    pub depends_on: Option<Vec<String>>,
    pub define: BTreeMap<String, String>,
    pub pass_through: Vec<String>,
    /// `Some(true)` is written with a ready-when TODO.
    pub persistent: Option<bool>,
    pub interactive: bool,
    /// An active `cache` table.
    pub cache: Option<Cache>,
    /// A commented `cache` table the user checks and uncomments.
    pub suggestion: Option<Cache>,
    /// TODO comments, written after the keys.
    pub todos: Vec<(TodoReason, String)>,
}

/// A `cache` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cache {
    pub input_sets: Vec<String>,
    /// `None`: left out (a template's default inputs apply).
    pub inputs: Option<Vec<String>>,
    pub workspace_inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub workspace_outputs: Vec<String>,
    /// `dependants-read`, written when set.
    pub dependants_read: Option<Vec<String>>,
    pub env: Vec<String>,
    pub runtime: Vec<String>,
    /// A project's table over its template's (which it extends key by key): only the keys
    /// marked below are written.
    pub partial: bool,
    /// Partial: write every input key (`input-sets`, `inputs`, `workspace-inputs`, `env`,
    /// `runtime`), empty ones too, so none of the template's stays.
    pub input_sets_set: bool,
    /// Partial: write `outputs`.
    pub outputs_set: bool,
    /// Partial: write `workspace-outputs`.
    pub workspace_outputs_set: bool,
}

/// A `[workspace.input-sets.<name>]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputSetTable {
    pub name: String,
    pub input_sets: Vec<String>,
    pub inputs: Vec<String>,
    pub workspace_inputs: Vec<String>,
    pub env: Vec<String>,
    pub runtime: Vec<String>,
}

impl Table {
    /// Whether the table sets nothing (it need not be written).
    pub fn is_empty(&self) -> bool {
        let named_only = Table {
            name: self.name.clone(),
            ..Table::default()
        };
        *self == named_only
    }
}

impl File {
    /// Every TODO comment of the file, in file order; a template's subject is
    /// `<name> (template)`.
    pub fn todos(&self) -> Vec<Todo> {
        let mut todos = Vec::new();
        let tables = self
            .templates
            .iter()
            .map(|t| (t, format!("{} (template)", t.name)))
            .chain(self.tasks.iter().map(|t| (t, t.name.clone())));
        for (table, subject) in tables {
            if table.persistent == Some(true) {
                todos.push(Todo {
                    reason: TodoReason::ReadyWhen,
                    subject: subject.clone(),
                    text: "add ready-when".into(),
                });
            }
            for (reason, text) in &table.todos {
                todos.push(Todo {
                    reason: *reason,
                    subject: subject.clone(),
                    text: text.clone(),
                });
            }
            if table.suggestion.is_some() {
                todos.push(Todo {
                    reason: TodoReason::CacheSuggestion,
                    subject: subject.clone(),
                    text: SUGGESTION_TODO.into(),
                });
            }
        }
        todos.extend(self.loose_todos.iter().cloned());
        todos
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            let _ = writeln!(out, "# {}", one_line(line));
        }
        if self.name.is_some() || !self.tags.is_empty() || !self.deps.is_empty() {
            out.push('\n');
        }
        if let Some(name) = &self.name {
            let _ = writeln!(out, "name = {}", string(name));
        }
        if !self.tags.is_empty() {
            let _ = writeln!(out, "tags = {}", array(&self.tags));
        }
        if !self.deps.is_empty() {
            let _ = writeln!(out, "deps = {}", array(&self.deps));
        }
        if let Some(workspace) = &self.workspace {
            out.push_str("\n[workspace]\n");
            if let Some(members) = &workspace.members {
                let _ = writeln!(out, "members = {}", array(members));
            }
            if let Some(concurrency) = workspace.concurrency {
                let _ = writeln!(out, "concurrency = {concurrency}");
            }
            if workspace.tui {
                out.push_str("ui = \"tui\"\n");
            }
            if let Some(base) = &workspace.affected_base {
                let _ = writeln!(out, "affected-base = {}", string(base));
            }
            if let Some((dirs, script)) = &workspace.exclude_from_all {
                let _ = writeln!(
                    out,
                    "# `--all` leaves out what the root `{}` script leaves out:",
                    one_line(script)
                );
                let _ = writeln!(out, "exclude-from-all = {}", array(dirs));
            }
        }
        for set in &self.input_sets {
            let _ = writeln!(out, "\n[workspace.input-sets.{}]", key(&set.name));
            let lists = [
                ("input-sets", &set.input_sets),
                ("inputs", &set.inputs),
                ("workspace-inputs", &set.workspace_inputs),
                ("env", &set.env),
                ("runtime", &set.runtime),
            ];
            for (name, list) in lists {
                if !list.is_empty() {
                    let _ = writeln!(out, "{name} = {}", array(list));
                }
            }
        }
        for table in &self.templates {
            let _ = writeln!(out, "\n[workspace.tasks.{}]", key(&table.name));
            table.render_keys(&mut out);
        }
        for table in &self.tasks {
            let _ = writeln!(out, "\n[tasks.{}]", key(&table.name));
            table.render_keys(&mut out);
        }
        for block in &self.trailer {
            out.push('\n');
            for line in block {
                let _ = writeln!(out, "# {}", one_line(line));
            }
        }
        out
    }
}

const SUGGESTION_TODO: &str = "check inputs and outputs, then uncomment to cache this task";

impl Table {
    fn render_keys(&self, out: &mut String) {
        for line in &self.comments {
            let _ = writeln!(out, "# {}", one_line(line));
        }
        if self.no_template {
            out.push_str("extends = false\n");
        }
        if let Some(description) = &self.description {
            let _ = writeln!(out, "description = {}", string(description));
        }
        if let Some(command) = &self.command {
            let _ = writeln!(out, "command = {}", string(command));
        }
        if let Some(depends_on) = &self.depends_on {
            let _ = writeln!(out, "depends-on = {}", array(depends_on));
        }
        let mut env = Vec::new();
        if !self.pass_through.is_empty() {
            env.push(format!("pass-through = {}", array(&self.pass_through)));
        }
        if !self.define.is_empty() {
            let entries: Vec<String> = self
                .define
                .iter()
                .map(|(name, value)| format!("{} = {}", key(name), string(value)))
                .collect();
            env.push(format!("define = {{ {} }}", entries.join(", ")));
        }
        if !env.is_empty() {
            let _ = writeln!(out, "env = {{ {} }}", env.join(", "));
        }
        for (_, text) in &self.todos {
            let _ = writeln!(out, "# TODO: {}", one_line(text));
        }
        match self.persistent {
            Some(true) => out.push_str("persistent = true  # TODO: add ready-when\n"),
            Some(false) => out.push_str("persistent = false\n"),
            None => {}
        }
        if self.interactive {
            out.push_str("interactive = true\n");
        }
        if let Some(cache) = &self.cache {
            let _ = writeln!(out, "cache = {}", cache.inline());
        }
        if let Some(cache) = &self.suggestion {
            let _ = writeln!(out, "# TODO: {SUGGESTION_TODO}");
            let _ = writeln!(out, "# cache = {}", cache.inline());
        }
    }
}

impl Cache {
    /// The inline table.
    fn inline(&self) -> String {
        let mut keys = Vec::new();
        let all_inputs = self.partial && self.input_sets_set;
        let list = |keys: &mut Vec<String>, name: &str, items: &[String], always: bool| {
            if always || !items.is_empty() {
                keys.push(format!("{name} = {}", array(items)));
            }
        };
        list(
            &mut keys,
            "input-sets",
            &self.input_sets,
            all_inputs && !self.input_sets.is_empty(),
        );
        match &self.inputs {
            Some(inputs) => keys.push(format!("inputs = {}", array(inputs))),
            None if all_inputs => keys.push("inputs = []".to_string()),
            None => {}
        }
        list(
            &mut keys,
            "workspace-inputs",
            &self.workspace_inputs,
            all_inputs,
        );
        if !self.partial || self.outputs_set {
            keys.push(format!("outputs = {}", array(&self.outputs)));
        }
        let workspace_outputs = self.partial && self.workspace_outputs_set;
        list(
            &mut keys,
            "workspace-outputs",
            &self.workspace_outputs,
            workspace_outputs,
        );
        if let Some(read) = &self.dependants_read {
            keys.push(format!("dependants-read = {}", array(read)));
        }
        list(&mut keys, "env", &self.env, all_inputs);
        list(&mut keys, "runtime", &self.runtime, all_inputs);
        format!("{{ {} }}", keys.join(", "))
    }
}

/// Text for a comment: TOML comments cannot hold control characters other than tab.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect()
}

/// A TOML key: bare when it can be, else a quoted string.
pub fn key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        name.to_string()
    } else {
        basic(name)
    }
}

/// A TOML string: `"…"` when nothing needs escaping, else `'…'` when that can hold it, else
/// an escaped `"…"`.
pub fn string(value: &str) -> String {
    let control = value.chars().any(|c| c.is_control() && c != '\t');
    if !control && !value.contains(['"', '\\']) {
        format!("\"{value}\"")
    } else if !control && !value.contains('\'') {
        format!("'{value}'")
    } else {
        basic(value)
    }
}

/// An escaped basic string.
fn basic(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|i| string(i)).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_keys_are_quoted_only_when_needed() {
        assert_eq!(string("tsc -b"), "\"tsc -b\"");
        assert_eq!(string(r#"eslint "src/**""#), r#"'eslint "src/**"'"#);
        assert_eq!(string(r#"echo "it's""#), r#""echo \"it's\"""#);
        assert_eq!(string("a\nb"), "\"a\\nb\"");
        assert_eq!(key("build"), "build");
        assert_eq!(key("build:css"), "\"build:css\"");
    }
}
