//! HIST-1's facts about an invocation that more than one place records: the CI provider and
//! argv with forwarded arguments masked (history rows, run snapshots).

use std::collections::BTreeMap;

/// HIST-1: the CI provider, from the first truthy of its variables, then `CI`.
pub fn ci_provider(env: &BTreeMap<String, String>) -> Option<String> {
    let truthy = |name: &str| env.get(name).is_some_and(|v| crate::host::env::truthy(v));
    [
        ("GITHUB_ACTIONS", "github-actions"),
        ("GITLAB_CI", "gitlab-ci"),
        ("BUILDKITE", "buildkite"),
        ("CIRCLECI", "circleci"),
        ("CI", "ci"),
    ]
    .iter()
    .find(|(name, _)| truthy(name))
    .map(|(_, provider)| provider.to_string())
}

/// HIST-1: argv as recorded: what follows the first bare `--` (arguments forwarded to tasks,
/// which may hold anything) replaced by a digest keyed with the store's salt.
pub fn masked_argv(argv: &[String], salt: &[u8; 32]) -> Vec<String> {
    let mut forwarded = false;
    argv.iter()
        .map(|arg| {
            if forwarded {
                let digest = blake3::keyed_hash(salt, arg.as_bytes());
                format!("[forwarded {}]", &digest.to_hex()[..12])
            } else {
                forwarded = arg == "--";
                arg.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_arguments_are_recorded_as_digests() {
        let argv: Vec<String> = ["vx", "run", "deploy", "--", "--token", "s3cret", "--"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let masked = masked_argv(&argv, &[7; 32]);
        assert_eq!(&masked[..4], &argv[..4]);
        assert!(masked[4].starts_with("[forwarded ") && masked[5].starts_with("[forwarded "));
        assert!(!masked.iter().any(|a| a.contains("s3cret")));
        assert_ne!(
            masked[5],
            masked_argv(&argv, &[8; 32])[5],
            "keyed with the salt"
        );
    }

    #[test]
    fn the_ci_provider_is_the_first_truthy_variable() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(ci_provider(&env(&[])), None);
        assert_eq!(ci_provider(&env(&[("CI", "true")])).as_deref(), Some("ci"));
        assert_eq!(
            ci_provider(&env(&[
                ("CI", "1"),
                ("GITLAB_CI", "true"),
                ("GITHUB_ACTIONS", "false")
            ]))
            .as_deref(),
            Some("gitlab-ci")
        );
    }
}
