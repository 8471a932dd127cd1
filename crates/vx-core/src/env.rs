//! The child environment of a task (EXEC-4) and which values count as secrets (EXEC-5).
//!
//! Pure: the caller passes vx's own environment in.

use std::collections::BTreeMap;

use crate::config::EnvConfig;

/// Layer 1 of EXEC-4: copied from vx's environment when set.
pub const ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TEMP",
    "TMP",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "COLORTERM",
    "FORCE_COLOR",
    "NO_COLOR",
    "CI",
    "NODE_OPTIONS",
    "COREPACK_HOME",
    "PNPM_HOME",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// What a task's environment is built from.
pub struct EnvInputs<'a> {
    /// vx's own environment.
    pub host: &'a BTreeMap<String, String>,
    pub config: Option<&'a EnvConfig>,
    /// Absolute project and root directories (for `node_modules/.bin`).
    pub project_dir: &'a str,
    pub root_dir: &'a str,
    pub workspace_root: &'a str,
    pub task_id: &'a str,
}

/// Builds the environment in the layers of EXEC-4, later layers winning.
pub fn task_environment(inputs: &EnvInputs<'_>) -> BTreeMap<String, String> {
    let host = inputs.host;
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for name in ALLOWLIST {
        if let Some(value) = host.get(*name) {
            env.insert((*name).to_string(), value.clone());
        }
    }
    if let Some(config) = inputs.config {
        for entry in &config.pass_through {
            match entry.strip_suffix('*') {
                Some(prefix) => {
                    for (name, value) in host.range(prefix.to_string()..) {
                        if !name.starts_with(prefix) {
                            break;
                        }
                        env.insert(name.clone(), value.clone());
                    }
                }
                None => {
                    if let Some(value) = host.get(entry) {
                        env.insert(entry.clone(), value.clone());
                    }
                }
            }
        }
        for (name, value) in &config.define {
            env.insert(name.clone(), value.clone());
        }
    }
    let mut path = Vec::new();
    for dir in [inputs.project_dir, inputs.root_dir] {
        let bin = format!("{}/node_modules/.bin", dir.trim_end_matches('/'));
        if !bin.contains(':') && !path.contains(&bin) {
            path.push(bin);
        }
    }
    if let Some(existing) = env.get("PATH") {
        path.push(existing.clone());
    }
    env.insert("PATH".into(), path.join(":"));
    env.insert("VX_RUN_WORKSPACE".into(), inputs.workspace_root.into());
    env.insert("VX_RUN_TASK".into(), inputs.task_id.into());
    let no_color = env.get("NO_COLOR").is_some_and(|v| !v.is_empty());
    if !env.contains_key("FORCE_COLOR") && !no_color {
        env.insert("FORCE_COLOR".into(), "1".into());
    }
    env
}

/// Does this variable name hold a secret by its name (EXEC-5)?
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.ends_with("_FILE") || upper.ends_with("_PATH") || upper.ends_with("_DIR") {
        return false;
    }
    ["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|word| upper.contains(word))
}

/// The shortest value that is masked.
pub const MIN_SECRET_LEN: usize = 6;

/// Secret values of a task (EXEC-5): values of secret-named variables of vx's environment or of
/// `env.define`, and of names listed in `env.secret`, wherever they come from. Returns the
/// values and the listed names whose values are too short to mask.
pub fn secret_values(
    host: &BTreeMap<String, String>,
    config: Option<&EnvConfig>,
) -> (Vec<String>, Vec<String>) {
    let mut values: Vec<String> = Vec::new();
    let mut too_short = Vec::new();
    let listed: Vec<&String> = config
        .map(|c| c.secret.iter().collect())
        .unwrap_or_default();
    let defines = config.map(|c| &c.define);
    let sources = host.iter().chain(defines.into_iter().flatten());
    for (name, value) in sources {
        let named = is_secret_name(name);
        let is_listed = listed.contains(&name);
        if !(named || is_listed) {
            continue;
        }
        if value.chars().count() >= MIN_SECRET_LEN {
            values.push(value.clone());
        } else if is_listed && !value.is_empty() {
            too_short.push(name.clone());
        }
    }
    values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    values.dedup();
    too_short.sort();
    too_short.dedup();
    (values, too_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> BTreeMap<String, String> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("OTHER", "1"),
            ("MY_TOKEN", "supersecret123"),
            ("VITE_A", "a"),
            ("VITE_B", "b"),
            ("VITEX", "x"),
            ("SSH_AUTH_SOCK", "/tmp/s"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn inputs<'a>(
        host: &'a BTreeMap<String, String>,
        config: Option<&'a EnvConfig>,
    ) -> EnvInputs<'a> {
        EnvInputs {
            host,
            config,
            project_dir: "/ws/packages/a",
            root_dir: "/ws",
            workspace_root: "/ws",
            task_id: "a#build",
        }
    }

    #[test]
    fn only_the_allowlist_passes_by_default() {
        let host = host();
        let env = task_environment(&inputs(&host, None));
        assert_eq!(env["HOME"], "/home/u");
        assert!(!env.contains_key("OTHER"));
        assert!(!env.contains_key("MY_TOKEN"));
        assert!(!env.contains_key("SSH_AUTH_SOCK"));
        assert_eq!(
            env["PATH"],
            "/ws/packages/a/node_modules/.bin:/ws/node_modules/.bin:/usr/bin"
        );
        assert_eq!(env["VX_RUN_TASK"], "a#build");
        assert_eq!(env["FORCE_COLOR"], "1");
    }

    #[test]
    fn pass_through_wildcards_and_define_layer_in_order() {
        let host = host();
        let config = EnvConfig {
            pass_through: vec!["OTHER".into(), "VITE_*".into(), "UNSET".into()],
            define: [("VITE_B".to_string(), "defined".to_string())].into(),
            secret: vec![],
        };
        let env = task_environment(&inputs(&host, Some(&config)));
        assert_eq!(env["OTHER"], "1");
        assert_eq!(env["VITE_A"], "a");
        assert_eq!(env["VITE_B"], "defined");
        assert!(!env.contains_key("VITEX"));
        assert!(!env.contains_key("UNSET"));
    }

    #[test]
    fn no_color_suppresses_force_color() {
        let mut host = host();
        host.insert("NO_COLOR".into(), "1".into());
        let env = task_environment(&inputs(&host, None));
        assert!(!env.contains_key("FORCE_COLOR"));
    }

    #[test]
    fn secrets_by_name_and_by_listing() {
        let mut host = host();
        host.insert("KEY_FILE".into(), "/path/to/keyfile".into());
        host.insert("PLAIN".into(), "shh".into());
        let config = EnvConfig {
            secret: vec!["PLAIN".into()],
            define: [("API_SECRET".to_string(), "defined-secret".to_string())].into(),
            ..EnvConfig::default()
        };
        let (values, short) = secret_values(&host, Some(&config));
        assert_eq!(
            values,
            vec!["defined-secret".to_string(), "supersecret123".to_string()]
        );
        assert_eq!(short, vec!["PLAIN".to_string()]);
    }
}
