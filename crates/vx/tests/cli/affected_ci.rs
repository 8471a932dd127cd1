//! SEL-8: a bare `--affected` in CI takes the base the CI names, and says which and why. Real
//! git histories; each CI's variables (and GitHub's event payload file) set as its
//! documentation says the CI sets them; a shallow clone made with `git clone --depth 1`.

use std::collections::BTreeMap;
use std::process::Command;

use vx_test_support::fixture::Fixture;

use crate::vx_bin;

/// Fixture W with caches, then a commit that edits only lib's source on top: the base commit
/// (before the edit) and the fixture.
fn edited_after_base() -> (Fixture, String) {
    let f = Fixture::w_cached(vx_bin());
    let base = rev(&f, "HEAD");
    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    (f, base)
}

/// The full commit id `what` names in `f`.
fn rev(f: &Fixture, what: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", what])
        .current_dir(f.root())
        .env_remove("GIT_DIR")
        .output()
        .expect("run git");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `vx run build --affected --dry=json` with `env`: the planned ids, and stderr.
fn planned(f: &Fixture, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let out = f.vx_in(".", &["run", "build", "--affected", "--dry=json"], env);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: BTreeMap<String, ()> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), ()))
        .collect();
    (ids.into_keys().collect(), out.stderr)
}

/// What a change to lib reaches: lib's build and app's; docs is not planned.
const REACHED: [&str; 2] = ["app#build", "lib#build"];

/// Writes GitHub's event payload for `f` and returns its path.
fn payload(f: &Fixture, json: &str) -> String {
    let path = f.root().join(".git/event.json");
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

#[test]
fn github_pull_request_compares_with_the_payloads_base_sha() {
    let (f, base) = edited_after_base();
    // HEAD~1 would be the same here; a base two commits back shows the payload is read.
    f.write("packages/docs/note.txt", "docs change on the base branch\n");
    f.commit();
    let event = payload(
        &f,
        &format!(
            r#"{{"pull_request": {{"number": 7, "base": {{"ref": "main", "sha": "{base}"}}}}}}"#
        ),
    );
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", event.as_str()),
        ("GITHUB_BASE_REF", "main"),
    ];
    let (ids, stderr) = planned(&f, &env);
    assert_eq!(ids, ["app#build", "docs#build", "lib#build"], "{stderr}");
    assert!(
        stderr.contains(&format!(
            "vx: --affected compares with {}: GitHub Actions, the pull request's base (pull_request.base.sha of the event)\n",
            &base[..7]
        )),
        "{stderr}"
    );
    // `--summarize` says the same.
    let out = f.vx_in(
        ".",
        &["run", "build", "--affected", "--summarize=summary.json"],
        &env,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let summary: serde_json::Value = serde_json::from_str(&f.read("summary.json")).unwrap();
    assert_eq!(
        summary["affected"],
        serde_json::json!({
            "base": base,
            "commit": base,
            "merge_base": base,
            "why": "GitHub Actions, the pull request's base (pull_request.base.sha of the event)",
        })
    );
}

#[test]
fn github_push_compares_with_before_and_a_new_branch_falls_back_saying_so() {
    let (f, base) = edited_after_base();
    let event = payload(&f, &format!(r#"{{"before": "{base}", "after": "x"}}"#));
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "push"),
        ("GITHUB_EVENT_PATH", event.as_str()),
    ];
    let (ids, stderr) = planned(&f, &env);
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(
        stderr.contains("GitHub Actions, the commit before this push (before of the event)"),
        "{stderr}"
    );
    // A new branch's first push: `before` is zeros; the default base is taken, and the line
    // says why.
    let zeros = "0".repeat(40);
    let event = payload(&f, &format!(r#"{{"before": "{zeros}", "created": true}}"#));
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "push"),
        ("GITHUB_EVENT_PATH", event.as_str()),
    ];
    let (ids, stderr) = planned(&f, &env);
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "vx: --affected compares with HEAD~1 ({}): GitHub Actions names no commit before this push (a new branch's first push); no origin/HEAD",
            &base[..7]
        )),
        "{stderr}"
    );
}

#[test]
fn gitlab_buildkite_and_azure_name_their_bases() {
    let (f, base) = edited_after_base();
    let short = &base[..7];
    let (ids, stderr) = planned(
        &f,
        &[
            ("GITLAB_CI", "true"),
            ("CI_MERGE_REQUEST_DIFF_BASE_SHA", base.as_str()),
        ],
    );
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(
        stderr.contains(&format!("vx: --affected compares with {short}: GitLab CI, the merge request's diff base (CI_MERGE_REQUEST_DIFF_BASE_SHA)")),
        "{stderr}"
    );
    let (ids, stderr) = planned(
        &f,
        &[
            ("GITLAB_CI", "true"),
            ("CI_COMMIT_BEFORE_SHA", base.as_str()),
        ],
    );
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(stderr.contains("(CI_COMMIT_BEFORE_SHA)"), "{stderr}");
    // Buildkite and Azure name a branch; the clone has it as a remote-tracking ref.
    f.git(&["update-ref", "refs/remotes/origin/main", &base]);
    let (ids, stderr) = planned(
        &f,
        &[
            ("BUILDKITE", "true"),
            ("BUILDKITE_PULL_REQUEST", "12"),
            ("BUILDKITE_PULL_REQUEST_BASE_BRANCH", "main"),
        ],
    );
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(
        stderr.contains(&format!("vx: --affected compares with origin/main ({short}): Buildkite, the pull request's base branch")),
        "{stderr}"
    );
    let (ids, stderr) = planned(
        &f,
        &[
            ("TF_BUILD", "True"),
            ("SYSTEM_PULLREQUEST_TARGETBRANCH", "refs/heads/main"),
        ],
    );
    assert_eq!(ids, REACHED, "{stderr}");
    assert!(
        stderr.contains("Azure Pipelines, the pull request's target branch"),
        "{stderr}"
    );
}

#[test]
fn a_shallow_clone_without_the_base_is_refused_with_the_command_that_fetches_it() {
    let (origin, base) = edited_after_base();
    // A CI checkout: one commit deep.
    let clone = Fixture::new(vx_bin());
    std::fs::remove_dir_all(clone.root().join(".git")).unwrap();
    let url = format!("file://{}", origin.root().display());
    let out = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &url, "."])
        .current_dir(clone.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let env = [
        ("GITLAB_CI", "true"),
        ("CI_MERGE_REQUEST_DIFF_BASE_SHA", base.as_str()),
    ];
    let out = clone.vx_in(".", &["run", "build", "--affected", "--dry"], &env);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "error: --affected: the base GitLab CI, the merge request's diff base (CI_MERGE_REQUEST_DIFF_BASE_SHA) is {}, which this clone does not have\n  \
             hint: this is a shallow clone: fetch its whole history with `git fetch --no-tags --unshallow origin`\n  \
             hint: or check out with the whole history (GitHub Actions: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`), or name a base with `--affected=<ref>`\n",
            &base[..7]
        )
    );
    // The hint's command, as given, makes the run work.
    let fetched = Command::new("sh")
        .args(["-c", "git fetch --no-tags --unshallow origin"])
        .current_dir(clone.root())
        .output()
        .unwrap();
    assert!(fetched.status.success(), "{fetched:?}");
    let (ids, stderr) = planned(&clone, &env);
    assert_eq!(ids, REACHED, "{stderr}");
}

#[test]
fn dry_exit_code_says_whether_anything_would_run() {
    let (f, base) = edited_after_base();
    // A deploy job's question: does the change reach anything?
    let affected_since = format!("--affected={base}");
    let out = f.vx(&["run", "build", &affected_since, "--dry", "--exit-code"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("vx: --exit-code: 2 tasks would run: app#build, lib#build\n"),
        "{}",
        out.stderr
    );
    let out = f.vx(&["run", "build", "--affected=HEAD", "--dry", "--exit-code"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.ends_with("vx: --exit-code: nothing would run\n"),
        "{}",
        out.stderr
    );
    // Tasks that would be restored do not run; one without a cache does.
    let built = f.vx(&["run", "build", "--all"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    let out = f.vx(&["run", "build", "--all", "--dry=json", "--exit-code"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("vx: --exit-code: 1 task would run: docs#build\n"),
        "{}",
        out.stderr
    );
    let out = f.vx(&["run", "build", "--filter", "app", "--dry", "--exit-code"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("vx: --exit-code: nothing would run\n"),
        "{}",
        out.stderr
    );
    // Without --dry it means nothing: refused.
    let out = f.vx(&["run", "build", "--exit-code"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: `--exit-code` needs `--dry`\n  hint: `vx run TASKS --affected --dry --exit-code` exits 1 when something would run\n"
    );
}

#[test]
fn a_base_the_full_clone_lacks_is_refused_with_a_fetch() {
    // A base commit that is nowhere here (a force-pushed branch): a full clone is told to fetch.
    let (f, _) = edited_after_base();
    let gone = "1234567890abcdef1234567890abcdef12345678";
    let out = f.vx_in(
        ".",
        &["run", "build", "--affected", "--dry"],
        &[("GITLAB_CI", "true"), ("CI_COMMIT_BEFORE_SHA", gone)],
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.starts_with(
            "error: --affected: the base GitLab CI, the commit before this push (CI_COMMIT_BEFORE_SHA) is 1234567, which this clone does not have\n  hint: fetch it with `git fetch --no-tags origin`\n"
        ),
        "{}",
        out.stderr
    );
}
