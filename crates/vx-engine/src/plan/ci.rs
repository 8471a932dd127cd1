//! The base a bare `--affected` takes in CI (SEL-8): what the CI the run is in says the change
//! is compared with, read from the variables (and GitHub's event payload) each CI documents.
//! Pure: the caller gives the environment and a way to read a file, and turns a [`CiBase`] into
//! a git ref.
//!
//! | CI | detected by | base |
//! |---|---|---|
//! | GitHub Actions | `GITHUB_ACTIONS=true` | pull_request(_target): the payload's `pull_request.base.sha`, else `origin/$GITHUB_BASE_REF`; merge_group: `merge_group.base_sha`; push: `before` (a new branch's first push has none) |
//! | GitLab CI | `GITLAB_CI=true` | `CI_MERGE_REQUEST_DIFF_BASE_SHA`, else `CI_COMMIT_BEFORE_SHA` (none on a new branch) |
//! | Buildkite | `BUILDKITE=true` | `origin/$BUILDKITE_PULL_REQUEST_BASE_BRANCH` on a pull request |
//! | Azure Pipelines | `TF_BUILD=True` | `origin/<branch>` of `SYSTEM_PULLREQUEST_TARGETBRANCH` on a pull request |
//! | CircleCI | `CIRCLECI=true` | none: it names no base (the default refs are used) |
//!
//! A sha of forty zeros is git's "no commit" (a new branch's first push): no base.

use std::collections::BTreeMap;
use std::path::Path;

/// What the CI says about the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiBase {
    /// Compare with this commit or ref (`reference`); `why` says where it came from.
    Base { reference: String, why: String },
    /// The CI was found but names no base for this build: the default refs are used, and
    /// `why` says so.
    Nothing { why: String },
    /// Not in a CI vx knows.
    NotCi,
}

/// The base the CI in `env` names; `read` reads a file (GitHub's event payload).
pub fn ci_base(env: &BTreeMap<String, String>, read: impl Fn(&Path) -> Option<String>) -> CiBase {
    let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let is = |name: &str, value: &str| var(name).is_some_and(|v| v.eq_ignore_ascii_case(value));
    if is("GITHUB_ACTIONS", "true") {
        return github(env, &read);
    }
    if is("GITLAB_CI", "true") {
        if let Some(sha) = var("CI_MERGE_REQUEST_DIFF_BASE_SHA").filter(|s| is_commit(s)) {
            return base(
                sha,
                "GitLab CI, the merge request's diff base (CI_MERGE_REQUEST_DIFF_BASE_SHA)",
            );
        }
        if let Some(sha) = var("CI_COMMIT_BEFORE_SHA").filter(|s| is_commit(s)) {
            return base(
                sha,
                "GitLab CI, the commit before this push (CI_COMMIT_BEFORE_SHA)",
            );
        }
        return nothing("GitLab CI names no earlier commit (a new branch's first pipeline)");
    }
    if is("BUILDKITE", "true") {
        return match var("BUILDKITE_PULL_REQUEST_BASE_BRANCH") {
            Some(branch) => base(
                &format!("origin/{branch}"),
                "Buildkite, the pull request's base branch (BUILDKITE_PULL_REQUEST_BASE_BRANCH)",
            ),
            None => nothing("Buildkite names no base outside a pull request"),
        };
    }
    if is("TF_BUILD", "true") {
        return match var("SYSTEM_PULLREQUEST_TARGETBRANCH") {
            Some(target) => base(
                &format!("origin/{}", target.trim_start_matches("refs/heads/")),
                "Azure Pipelines, the pull request's target branch (SYSTEM_PULLREQUEST_TARGETBRANCH)",
            ),
            None => nothing("Azure Pipelines names no base outside a pull request"),
        };
    }
    if is("CIRCLECI", "true") {
        return nothing("CircleCI names no base");
    }
    CiBase::NotCi
}

/// The branches a build is about, as the CI names them (`--affected=last-green`, SEL-10): the
/// branch built (a pull request's head branch), and for a pull request the branch it targets.
/// Outside a CI vx knows, or where the CI does not say, both are `None` and git's branch is used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiBranches {
    pub current: Option<String>,
    pub target: Option<String>,
    /// The repository's default branch, where the CI names it (GitLab's `CI_DEFAULT_BRANCH`).
    pub default: Option<String>,
}

/// The branches the CI in `env` names.
pub fn ci_branches(env: &BTreeMap<String, String>) -> CiBranches {
    let var = |name: &str| {
        env.get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(|v| v.trim_start_matches("refs/heads/").to_string())
    };
    let is = |name: &str, value: &str| {
        env.get(name)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    let first = |names: &[&str]| names.iter().find_map(|n| var(n));
    if is("GITHUB_ACTIONS", "true") {
        // GITHUB_REF_NAME is `<number>/merge` on a pull request; its head branch is HEAD_REF.
        let pull = var("GITHUB_HEAD_REF");
        let pushed = env
            .get("GITHUB_REF")
            .and_then(|r| r.trim().strip_prefix("refs/heads/"))
            .filter(|b| !b.is_empty())
            .map(str::to_string);
        let current = pull.clone().or(pushed);
        return CiBranches {
            current,
            target: pull.and(var("GITHUB_BASE_REF")),
            default: None,
        };
    }
    if is("GITLAB_CI", "true") {
        return CiBranches {
            current: first(&["CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_BRANCH"]),
            target: var("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"),
            default: var("CI_DEFAULT_BRANCH"),
        };
    }
    if is("BUILDKITE", "true") {
        return CiBranches {
            current: var("BUILDKITE_BRANCH"),
            target: var("BUILDKITE_PULL_REQUEST_BASE_BRANCH"),
            default: var("BUILDKITE_PIPELINE_DEFAULT_BRANCH"),
        };
    }
    if is("TF_BUILD", "true") {
        return CiBranches {
            current: first(&["SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCH"])
                .filter(|b| !b.starts_with("refs/")),
            target: var("SYSTEM_PULLREQUEST_TARGETBRANCH"),
            default: None,
        };
    }
    if is("CIRCLECI", "true") {
        return CiBranches {
            current: var("CIRCLE_BRANCH"),
            target: None,
            default: None,
        };
    }
    CiBranches::default()
}

fn github(env: &BTreeMap<String, String>, read: &impl Fn(&Path) -> Option<String>) -> CiBase {
    let var = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let event = var("GITHUB_EVENT_NAME").unwrap_or("");
    let payload: Option<serde_json::Value> = var("GITHUB_EVENT_PATH")
        .and_then(|path| read(Path::new(path)))
        .and_then(|text| serde_json::from_str(&text).ok());
    let field = |pointer: &str| {
        payload
            .as_ref()
            .and_then(|p| p.pointer(pointer))
            .and_then(|v| v.as_str())
            .filter(|s| is_commit(s))
            .map(str::to_string)
    };
    match event {
        "pull_request" | "pull_request_target" => {
            if let Some(sha) = field("/pull_request/base/sha") {
                return base(
                    &sha,
                    "GitHub Actions, the pull request's base (pull_request.base.sha of the event)",
                );
            }
            match var("GITHUB_BASE_REF") {
                Some(branch) => base(
                    &format!("origin/{branch}"),
                    "GitHub Actions, the pull request's base branch (GITHUB_BASE_REF)",
                ),
                None => nothing("GitHub Actions gave no pull request base"),
            }
        }
        "merge_group" => match field("/merge_group/base_sha") {
            Some(sha) => base(
                &sha,
                "GitHub Actions, the merge queue's base (merge_group.base_sha of the event)",
            ),
            None => nothing("GitHub Actions gave no merge queue base"),
        },
        "push" => match field("/before") {
            Some(sha) => base(
                &sha,
                "GitHub Actions, the commit before this push (before of the event)",
            ),
            None => nothing(
                "GitHub Actions names no commit before this push (a new branch's first push)",
            ),
        },
        "" => nothing("GitHub Actions gave no event"),
        other => nothing(&format!(
            "GitHub Actions names no base for a `{other}` event"
        )),
    }
}

fn base(reference: &str, why: &str) -> CiBase {
    CiBase::Base {
        reference: reference.to_string(),
        why: why.to_string(),
    }
}

fn nothing(why: &str) -> CiBase {
    CiBase::Nothing {
        why: why.to_string(),
    }
}

/// A full commit id that is not git's all-zeros "no commit".
fn is_commit(text: &str) -> bool {
    (text.len() == 40 || text.len() == 64)
        && text.bytes().all(|b| b.is_ascii_hexdigit())
        && text.bytes().any(|b| b != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";
    const ZEROS: &str = "0000000000000000000000000000000000000000";

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn github(event: &str, payload: &str, more: &[(&str, &str)]) -> CiBase {
        let mut pairs = vec![
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_EVENT_NAME", event),
            ("GITHUB_EVENT_PATH", "/event.json"),
        ];
        pairs.extend_from_slice(more);
        let payload = payload.to_string();
        ci_base(&env(&pairs), |p| {
            (p == Path::new("/event.json")).then(|| payload.clone())
        })
    }

    fn reference(found: CiBase) -> String {
        match found {
            CiBase::Base { reference, .. } => reference,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn github_takes_the_pull_request_base_then_the_base_ref() {
        let payload = format!(r#"{{"pull_request": {{"base": {{"sha": "{SHA}"}}}}}}"#);
        assert_eq!(reference(github("pull_request", &payload, &[])), SHA);
        assert_eq!(reference(github("pull_request_target", &payload, &[])), SHA);
        let found = github("pull_request", "{}", &[("GITHUB_BASE_REF", "main")]);
        assert_eq!(reference(found), "origin/main");
        assert!(matches!(
            github("pull_request", "not json", &[]),
            CiBase::Nothing { .. }
        ));
    }

    #[test]
    fn github_push_takes_before_and_a_new_branch_has_none() {
        let payload = format!(r#"{{"before": "{SHA}"}}"#);
        assert_eq!(reference(github("push", &payload, &[])), SHA);
        let first = format!(r#"{{"before": "{ZEROS}", "created": true}}"#);
        match github("push", &first, &[]) {
            CiBase::Nothing { why } => assert!(why.contains("first push"), "{why}"),
            other => panic!("{other:?}"),
        }
        let queue = format!(r#"{{"merge_group": {{"base_sha": "{SHA}"}}}}"#);
        assert_eq!(reference(github("merge_group", &queue, &[])), SHA);
        assert!(matches!(
            github("workflow_dispatch", "{}", &[]),
            CiBase::Nothing { .. }
        ));
    }

    #[test]
    fn gitlab_buildkite_azure_and_circleci() {
        let gitlab = |pairs: &[(&str, &str)]| {
            let mut all = vec![("GITLAB_CI", "true")];
            all.extend_from_slice(pairs);
            ci_base(&env(&all), |_| None)
        };
        let other = "89abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            reference(gitlab(&[
                ("CI_MERGE_REQUEST_DIFF_BASE_SHA", SHA),
                ("CI_COMMIT_BEFORE_SHA", other)
            ])),
            SHA
        );
        assert_eq!(reference(gitlab(&[("CI_COMMIT_BEFORE_SHA", other)])), other);
        assert!(matches!(
            gitlab(&[("CI_COMMIT_BEFORE_SHA", ZEROS)]),
            CiBase::Nothing { .. }
        ));
        let buildkite = ci_base(
            &env(&[
                ("BUILDKITE", "true"),
                ("BUILDKITE_PULL_REQUEST_BASE_BRANCH", "develop"),
            ]),
            |_| None,
        );
        assert_eq!(reference(buildkite), "origin/develop");
        let azure = ci_base(
            &env(&[
                ("TF_BUILD", "True"),
                ("SYSTEM_PULLREQUEST_TARGETBRANCH", "refs/heads/main"),
            ]),
            |_| None,
        );
        assert_eq!(reference(azure), "origin/main");
        assert!(matches!(
            ci_base(&env(&[("CIRCLECI", "true")]), |_| None),
            CiBase::Nothing { .. }
        ));
        assert_eq!(ci_base(&env(&[("CI", "true")]), |_| None), CiBase::NotCi);
    }
}
