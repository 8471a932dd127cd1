//! The `Command` and `Action` of a remote task (REM-12), from what a task attempt says: the
//! script, the project directory, the environment, the declared outputs, the platform and the
//! timeout. Every path in them is relative to the workspace root, which is the input root.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use prost::Message;

use crate::digest::digest_of;
use crate::proto::{command, platform, Action, Command, Digest, Platform};

/// The variable vx sets for a local child that a remote one must not see (it names a local path).
const LOCAL_ONLY: &[&str] = &["VX_RUN_WORKSPACE"];

/// What a remote task's action is made of.
#[derive(Debug, Clone, Default)]
pub struct RemoteTask {
    /// The `sh -c` script (EXEC-2, EXEC-3).
    pub script: String,
    /// The project directory relative to the root (empty for the root project).
    pub dir: String,
    /// EXEC-4's layers 2–5, merged; `PATH` here is replaced.
    pub env: BTreeMap<String, String>,
    /// The `PATH` tail on the worker (REM-10's `path`).
    pub path_tail: String,
    /// Output globs relative to the project directory.
    pub outputs: Vec<String>,
    /// Output globs relative to the root.
    pub workspace_outputs: Vec<String>,
    /// The workspace's platform overridden by the task's.
    pub platform: BTreeMap<String, String>,
    pub timeout: Option<Duration>,
}

/// A built action: the serialised `Command` and `Action`, and the action's digest.
#[derive(Debug, Clone)]
pub struct BuiltAction {
    pub command: Vec<u8>,
    pub action: Vec<u8>,
    pub digest: Digest,
}

impl RemoteTask {
    /// The `Command` (see the module documentation and REM-12).
    pub fn command(&self) -> Command {
        let dir = if self.dir.is_empty() { "." } else { &self.dir };
        let up = if self.dir.is_empty() {
            ".".to_string()
        } else {
            vec![".."; self.dir.split('/').count()].join("/")
        };
        let mut env: BTreeMap<&str, String> = self
            .env
            .iter()
            .filter(|(name, _)| !LOCAL_ONLY.contains(&name.as_str()))
            .map(|(name, value)| (name.as_str(), value.clone()))
            .collect();
        env.insert(
            "PATH",
            format!(
                "node_modules/.bin:{up}/node_modules/.bin:{}",
                self.path_tail
            ),
        );
        let (files, directories) = self.output_paths();
        let all: BTreeSet<String> = files.iter().chain(&directories).cloned().collect();
        #[allow(deprecated)]
        Command {
            arguments: vec![
                "sh".to_string(),
                "-c".to_string(),
                format!("cd {} && {}", shell_word(dir), self.script),
            ],
            environment_variables: env
                .into_iter()
                .map(|(name, value)| command::EnvironmentVariable {
                    name: name.to_string(),
                    value,
                })
                .collect(),
            output_paths: all.into_iter().collect(),
            output_files: files.into_iter().collect(),
            output_directories: directories.into_iter().collect(),
            // The Action carries it too; servers before REAPI 2.2 read it here.
            platform: self.platform(),
            working_directory: String::new(),
            ..Default::default()
        }
    }

    fn platform(&self) -> Option<Platform> {
        (!self.platform.is_empty()).then(|| Platform {
            properties: self
                .platform
                .iter()
                .map(|(name, value)| platform::Property {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
        })
    }

    /// The root-relative fixed prefix of each output glob: a literal path is an output file,
    /// the prefix of a pattern an output directory (the project directory itself for a pattern
    /// with no fixed part, such as `**/*.d.ts`).
    pub fn output_paths(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut files = BTreeSet::new();
        let mut directories = BTreeSet::new();
        let project = self.outputs.iter().map(|glob| (true, glob));
        let workspace = self.workspace_outputs.iter().map(|glob| (false, glob));
        for (in_project, glob) in project.chain(workspace) {
            let glob = glob.trim_start_matches("./").trim_end_matches('/');
            let parts: Vec<&str> = glob.split('/').collect();
            let fixed = parts
                .iter()
                .position(|p| p.contains(['*', '?', '[', '{']))
                .unwrap_or(parts.len());
            let prefix = parts[..fixed].join("/");
            let base = if in_project { self.dir.as_str() } else { "" };
            let path = match (base.is_empty(), prefix.is_empty()) {
                (true, _) => prefix,
                (false, true) => base.to_string(),
                (false, false) => format!("{base}/{prefix}"),
            };
            if fixed == parts.len() {
                files.insert(path);
            } else {
                // The root itself is the empty path, which REAPI allows for the whole tree.
                directories.insert(path);
            }
        }
        (files, directories)
    }

    /// The `Command` and the `Action` over the input root `input_root`.
    pub fn build(&self, input_root: &Digest) -> BuiltAction {
        let command = self.command().encode_to_vec();
        let action = Action {
            command_digest: Some(digest_of(&command)),
            input_root_digest: Some(input_root.clone()),
            timeout: self.timeout.map(crate::proto_duration),
            do_not_cache: false,
            platform: self.platform(),
            ..Default::default()
        }
        .encode_to_vec();
        let digest = digest_of(&action);
        BuiltAction {
            command,
            action,
            digest,
        }
    }
}

/// `word` quoted for `sh` when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./@+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> RemoteTask {
        RemoteTask {
            script: "tsc -p .".into(),
            dir: "packages/web".into(),
            env: [
                ("NODE_ENV", "production"),
                ("VX_RUN_WORKSPACE", "/home/me/repo"),
                ("PATH", "/home/me/bin:/usr/bin"),
                ("A_FIRST", "1"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            path_tail: "/usr/local/bin:/usr/bin:/bin".into(),
            outputs: vec!["dist/**".into(), "**/*.d.ts".into(), "report.json".into()],
            workspace_outputs: vec!["coverage/web/**".into()],
            platform: [("OSFamily", "linux"), ("ISA", "x86-64")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            timeout: Some(Duration::from_secs(90)),
        }
    }

    #[test]
    fn the_command_runs_in_the_project_dir_with_sorted_relative_environment() {
        let command = task().command();
        assert_eq!(
            command.arguments,
            ["sh", "-c", "cd packages/web && tsc -p ."]
        );
        let env: Vec<(String, String)> = command
            .environment_variables
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        assert_eq!(
            env,
            [
                ("A_FIRST".to_string(), "1".to_string()),
                ("NODE_ENV".to_string(), "production".to_string()),
                (
                    "PATH".to_string(),
                    "node_modules/.bin:../../node_modules/.bin:/usr/local/bin:/usr/bin:/bin"
                        .to_string()
                ),
            ],
            "no VX_RUN_WORKSPACE, no local PATH"
        );
        assert_eq!(command.working_directory, "");
        // Servers before REAPI 2.2 read the platform from the Command.
        #[allow(deprecated)]
        let platform = command.platform.as_ref();
        let platform: Vec<&str> = platform
            .unwrap()
            .properties
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(platform, ["ISA", "OSFamily"]);
    }

    #[test]
    fn outputs_are_fixed_prefixes_relative_to_the_root() {
        let command = task().command();
        assert_eq!(
            command.output_paths,
            [
                "coverage/web",
                "packages/web",
                "packages/web/dist",
                "packages/web/report.json"
            ]
        );
        #[allow(deprecated)]
        let (files, dirs) = (command.output_files, command.output_directories);
        assert_eq!(files, ["packages/web/report.json"]);
        assert_eq!(dirs, ["coverage/web", "packages/web", "packages/web/dist"]);
    }

    #[test]
    fn the_root_project_and_odd_directories_are_quoted_and_relative() {
        let root = RemoteTask {
            dir: String::new(),
            outputs: vec!["**/*.log".into()],
            ..task()
        };
        let command = root.command();
        assert_eq!(command.arguments[2], "cd . && tsc -p .");
        assert!(command.environment_variables.iter().any(|v| v
            .value
            .starts_with("node_modules/.bin:./node_modules/.bin:")));
        assert!(command.output_paths.contains(&String::new()));
        #[allow(deprecated)]
        let older = &command.output_directories;
        assert!(older.contains(&String::new()));
        let odd = RemoteTask {
            dir: "apps/my app".into(),
            ..task()
        };
        assert_eq!(odd.command().arguments[2], "cd 'apps/my app' && tsc -p .");
    }

    #[test]
    fn the_action_carries_the_timeout_and_changes_with_any_part() {
        let root = digest_of(b"");
        let built = task().build(&root);
        let action = Action::decode(built.action.as_slice()).unwrap();
        assert_eq!(action.timeout.unwrap().seconds, 90);
        assert_eq!(action.command_digest.unwrap(), digest_of(&built.command));
        assert!(!action.do_not_cache);
        assert_eq!(built.digest, digest_of(&built.action));
        assert_eq!(task().build(&root).digest, built.digest, "stable");
        let other = RemoteTask {
            script: "tsc -b".into(),
            ..task()
        };
        assert_ne!(other.build(&root).digest, built.digest);
        assert_ne!(task().build(&digest_of(b"x")).digest, built.digest);
    }
}
