//! Where each task runs (REM-11): a cached one-shot task with `remote`, with
//! `[workspace.remote-execution]` configured, `--remote-exec` not `off`, no secret in what it
//! would send and no output glob without a fixed directory, runs on the remote executor; every
//! other task runs here. Decided once per run, before the loop, and said once.

use std::collections::BTreeMap;

use vx_core::config::TaskConfig;
use vx_core::env::is_secret_name;
use vx_core::globs::literal_prefix;

use super::nodes::{environment, rows, Kind, Row};
use super::Plan;
use crate::options::RunOptions;
use crate::outcome::Notice;

/// Where a task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    Remote,
    Local,
    /// It asks for remote execution but its environment holds these secrets.
    LocalForSecrets(Vec<String>),
    /// It asks for remote execution but this output glob has no fixed directory below the
    /// workspace root: the action would have to send the whole root back, which runners do not
    /// capture.
    LocalForOutputs(String),
}

/// The run's placement: the nodes placed remotely, and what stays local and why.
pub struct Placed {
    pub remote: Vec<usize>,
    pub notices: Vec<Notice>,
}

/// Where `row`'s task runs, as far as the configuration and the flags say.
pub fn placement(
    plan: &Plan,
    options: &RunOptions,
    host: &BTreeMap<String, String>,
    row: Row<'_>,
) -> Placement {
    let config = row.config;
    let asks = config.remote.is_some()
        && config.cache.is_some()
        && row.kind == Kind::OneShot
        && config.interactive != Some(true);
    if !asks || options.remote_exec_off || plan.workspace.settings.remote_execution.is_none() {
        return Placement::Local;
    }
    let known = credential_values(&plan.workspace.settings, host);
    let sent = sent_environment(config, environment(plan, host, row));
    let secrets = secret_names(config, &sent, &known);
    if !secrets.is_empty() {
        return Placement::LocalForSecrets(secrets);
    }
    let in_root = plan.workspace.projects[plan.graph.nodes[row.node].project]
        .dir
        .is_empty();
    let cache = config.cache.as_deref().expect("checked above");
    let project = cache.outputs.iter().flatten().filter(|_| in_root);
    let unbounded = project
        .chain(&cache.workspace_outputs)
        .find(|glob| !glob.starts_with('!') && literal_prefix(glob).is_empty());
    match unbounded {
        Some(glob) => Placement::LocalForOutputs(glob.clone()),
        None => Placement::Remote,
    }
}

/// Every node's placement; what asks for remote execution and stays local is said.
pub fn place(plan: &Plan, options: &RunOptions, host: &BTreeMap<String, String>) -> Placed {
    let mut placed = Placed {
        remote: Vec::new(),
        notices: Vec::new(),
    };
    let asking: Vec<Row<'_>> = rows(plan)
        .into_iter()
        .filter(|row| row.config.remote.is_some())
        .collect();
    if asking.is_empty() || options.remote_exec_off {
        return placed;
    }
    if plan.workspace.settings.remote_execution.is_none() {
        let what = match asking.len() {
            1 => format!("{} asks", asking[0].id),
            n => format!("{n} tasks ask"),
        };
        placed.notices.push(Notice::note(format!(
            "{what} for remote execution, but [workspace.remote-execution] is not configured; running locally"
        )));
        return placed;
    }
    for row in asking {
        let id = row.id;
        match placement(plan, options, host, row) {
            Placement::Remote => placed.remote.push(row.node),
            Placement::Local => {}
            Placement::LocalForSecrets(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                placed.notices.push(Notice::note(format!(
                    "{id}: runs locally because its environment holds a secret ({})",
                    names.join(", ")
                )));
            }
            Placement::LocalForOutputs(glob) => placed.notices.push(Notice::note(format!(
                "{id}: runs locally because its output glob `{glob}` names no directory below the workspace root"
            ))),
        }
    }
    placed
}

/// The values of the remote credentials in vx's environment: the remote cache's token and
/// signing key, the remote executor's token. Masked in every task's output like `env.secret`
/// values (EXEC-5, REM-16), and a task whose environment holds one never runs remotely.
pub fn credential_values(
    settings: &vx_core::config::WorkspaceConfig,
    host: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut values = crate::cache::remote::secret_values(settings.remote_cache.as_ref(), host);
    values.extend(vx_reapi::token_values(
        settings.remote_execution.as_ref(),
        host,
    ));
    values
}

/// What of a task's environment goes to a remote worker (REM-12): layers 2–5 of EXEC-4, so
/// the allowlist's values of this machine (`HOME`, `TERM`, `LANG`, …) stay here unless the
/// task passes them through or defines them. `PATH` is the action's own.
pub fn sent_environment(
    config: &TaskConfig,
    env: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let declared = |name: &str| {
        config.env.as_ref().is_some_and(|e| {
            e.define.contains_key(name)
                || e.pass_through
                    .iter()
                    .any(|entry| match entry.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => entry == name,
                    })
        })
    };
    env.into_iter()
        .filter(|(name, _)| {
            name == "FORCE_COLOR"
                || !vx_core::env::ALLOWLIST.contains(&name.as_str())
                || declared(name)
        })
        .collect()
}

/// The names of a task's environment (EXEC-4 layers 2–5) that hold secrets (EXEC-5): named
/// like one or listed in `env.secret`, with a value, or holding one of the `known` secret
/// values (the remote credentials, whatever the variable passing them is called). Such a task
/// never runs remotely (REM-11).
pub fn secret_names(
    config: &TaskConfig,
    env: &BTreeMap<String, String>,
    known: &[String],
) -> Vec<String> {
    let listed: &[String] = config.env.as_ref().map_or(&[], |e| &e.secret);
    let mut names: Vec<String> = env
        .iter()
        .filter(|(name, value)| {
            !value.is_empty()
                && (is_secret_name(name) || listed.contains(name) || known.contains(value))
        })
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use vx_core::config::EnvConfig;

    fn config(env: Option<EnvConfig>) -> TaskConfig {
        TaskConfig {
            env: env.map(Box::new),
            ..TaskConfig::default()
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn only_layers_2_to_5_leave_the_machine() {
        let env = map(&[
            ("HOME", "/home/me"),
            ("TERM", "xterm"),
            ("LANG", "C.UTF-8"),
            ("TZ", "UTC"),
            ("PATH", "/x/node_modules/.bin:/usr/bin"),
            ("FORCE_COLOR", "1"),
            ("VX_RUN_TASK", "lib#build"),
            ("MODE", "prod"),
            ("NODE_ENV", "production"),
        ]);
        let declared = config(Some(EnvConfig {
            pass_through: vec!["LANG".into(), "NODE_*".into()],
            define: map(&[("MODE", "prod"), ("TZ", "UTC")]),
            secret: Vec::new(),
        }));
        let sent = sent_environment(&declared, env.clone());
        assert_eq!(
            sent.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "FORCE_COLOR",
                "LANG",
                "MODE",
                "NODE_ENV",
                "TZ",
                "VX_RUN_TASK"
            ]
        );
        let plain = sent_environment(&config(None), env);
        assert_eq!(
            plain.keys().map(String::as_str).collect::<Vec<_>>(),
            ["FORCE_COLOR", "MODE", "NODE_ENV", "VX_RUN_TASK"],
            "what no layer 2–5 declared is vx's own or not from the allowlist"
        );
    }

    #[test]
    fn secrets_are_named_or_listed_with_a_value() {
        let listed = config(Some(EnvConfig {
            secret: vec!["DEPLOY_HOOK".into()],
            ..EnvConfig::default()
        }));
        let env = map(&[
            ("NPM_TOKEN", "abcdef123456"),
            ("DEPLOY_HOOK", "https://x"),
            ("EMPTY_TOKEN", ""),
            ("CERT_FILE", "/etc/cert"),
            ("MODE", "prod"),
        ]);
        assert_eq!(
            secret_names(&listed, &env, &[]),
            ["DEPLOY_HOOK", "NPM_TOKEN"]
        );
        assert_eq!(secret_names(&config(None), &env, &[]), ["NPM_TOKEN"]);
        // A credential vx knows, under a name that does not look like one.
        let known = ["prod".to_string()];
        assert_eq!(
            secret_names(&config(None), &env, &known),
            ["MODE", "NPM_TOKEN"]
        );
    }
}
