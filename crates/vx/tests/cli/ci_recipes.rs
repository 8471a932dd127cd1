//! docs/ci.md's recipes, run as each CI runs them (the page's § How the recipes are tested): the
//! YAML is read from the page; every `run`/`script`/`command` line runs with `bash -e` in a clone
//! of a repository made from `examples/demo`, with the variables that CI documents and the real
//! `turborepo-remote-cache` on loopback as the team's remote cache. A CI's own actions (checkout,
//! cache, setup-node, artifacts) are the clone; `npm ci` is stood in for by putting the vx under
//! test at `node_modules/.bin/vx` (the demo's only dependency would be vx itself; installing it
//! from npm is tested in distribution.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};

use crate::vx_bin;

const TEAM: &str = "team_vx";
/// The scope the recipes' run records its green runs under.
const SCOPE: &str = "vx run build lint test";
/// The branch of the change request.
const BRANCH: &str = "feat/web";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The YAML block that follows `<!-- recipe: NAME -->` in docs/ci.md.
fn recipe(name: &str) -> Value {
    let page = std::fs::read_to_string(repo().join("docs/ci.md")).unwrap();
    let marker = format!("<!-- recipe: {name} -->\n```yaml\n");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("{marker} in docs/ci.md"))
        + marker.len();
    let end = page[at..].find("```").unwrap();
    serde_yaml::from_str(&page[at..at + end]).unwrap()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=ci@vx", "-c", "user.name=ci"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The team's repository: `examples/demo` with a committed `vx.lock` and a `deploy` task for
/// web (docs/ci.md § Skipping a deploy); `main` at that commit, and `feat/web` one commit on
/// with an edit to web's source. Returns it with the two commits.
fn origin() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(repo().join("examples/demo/."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let web = dir.path().join("apps/web/vx.toml");
    let mut toml = std::fs::read_to_string(&web).unwrap();
    toml.push_str("\n[tasks.deploy]\ncommand = \"echo deploying web\"\ndepends-on = [\"build\"]\n");
    std::fs::write(&web, toml).unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    // What a run of the README's first command left in the checkout is not the demo.
    git(dir.path(), &["clean", "-fdXq"]);
    // The repository's first commit is empty: a push of the demo has a commit before it.
    git(dir.path(), &["commit", "-q", "--allow-empty", "-m", "init"]);
    let out = Command::new(vx_bin())
        .arg("lock")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "demo"]);
    let main = git(dir.path(), &["rev-parse", "HEAD"]);
    git(dir.path(), &["checkout", "-q", "-b", BRANCH]);
    let app = dir.path().join("apps/web/src/app.js");
    let text = std::fs::read_to_string(&app).unwrap() + "// a change under review\n";
    std::fs::write(&app, text).unwrap();
    git(dir.path(), &["commit", "-q", "-am", "edit web"]);
    let feature = git(dir.path(), &["rev-parse", "HEAD"]);
    git(dir.path(), &["checkout", "-q", "main"]);
    (dir, main, feature)
}

/// A runner's checkout: the whole history of `branch`, no `.vx/`.
fn checkout(origin: &Path, branch: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("git")
        .args(["clone", "-q", "--no-local", "--branch", branch])
        .arg(origin)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    dir
}

/// What a build printed, step by step, and the files its steps wrote.
struct Build {
    log: String,
    dir: tempfile::TempDir,
    files: tempfile::TempDir,
}

impl Build {
    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.files.path().join(name)).unwrap_or_default()
    }
}

/// Runs `script` as a runner's shell does, in `dir`, with only `env` (and PATH, HOME): `npm ci`
/// stood in for (see the module documentation). Panics with the log when it fails.
fn shell(dir: &Path, script: &str, env: &BTreeMap<String, String>, log: &mut String) {
    let bin = Path::new(vx_bin()).canonicalize().unwrap();
    let script: String = script
        .lines()
        .map(|line| {
            if line.trim() == "npm ci" {
                format!(
                    "mkdir -p node_modules/.bin && ln -sf {} node_modules/.bin/vx",
                    bin.display()
                )
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(dir)
        .env_clear()
        .envs(env)
        .output()
        .unwrap();
    log.push_str(&format!("$ {script}\n"));
    log.push_str(&String::from_utf8_lossy(&out.stdout));
    log.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "step failed: {script}\n{log}");
}

/// PATH and HOME as the runner has them, and the remote cache's three variables.
fn base_env(server: &HttpCacheServer, token: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for name in ["PATH", "HOME", "LANG"] {
        if let Ok(value) = std::env::var(name) {
            env.insert(name.to_string(), value);
        }
    }
    env.insert("CI".into(), "true".into());
    env.insert("VX_REMOTE_CACHE_URL".into(), server.url());
    env.insert("VX_REMOTE_CACHE_TEAM".into(), TEAM.into());
    env.insert("VX_REMOTE_CACHE_TOKEN".into(), token.into());
    env
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(items) => items.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions

/// One build of GitHub's workflow: push or pull request, from a fork or not.
struct GitHubEvent<'a> {
    /// The recipe's name on the page.
    recipe: &'a str,
    /// The matrix job's `matrix.shard`, for a sharded recipe.
    shard: Option<u64>,
    name: &'a str,
    branch: &'a str,
    head: &'a str,
    base: &'a str,
    fork: bool,
}

/// Evaluates a `${{ … }}` expression of the recipes: `a || b`, `a && 'x' || ''`, context paths
/// and quoted strings (GitHub's truthiness: an empty string and `false` are false).
fn expression(text: &str, context: &BTreeMap<&str, String>) -> String {
    let atom = |a: &str| {
        let a = a.trim();
        match a.strip_prefix('\'').and_then(|a| a.strip_suffix('\'')) {
            Some(literal) => literal.to_string(),
            None => context.get(a).cloned().unwrap_or_default(),
        }
    };
    let truthy = |v: &str| !v.is_empty() && v != "false";
    for alternative in text.split("||") {
        let mut value = String::new();
        let mut all = true;
        for part in alternative.split("&&") {
            value = atom(part);
            if !truthy(&value) {
                all = false;
                break;
            }
        }
        if all {
            return value;
        }
    }
    String::new()
}

fn substitute(text: &str, context: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").unwrap() + at;
        out.push_str(&expression(&rest[at + 3..end], context));
        rest = &rest[end + 2..];
    }
    out + rest
}

fn github(
    origin: &Path,
    server: &HttpCacheServer,
    event: &GitHubEvent,
    also: Option<&Value>,
) -> Build {
    let workflow = recipe(event.recipe);
    let job = &workflow["jobs"]["build"];
    let dir = checkout(origin, event.branch);
    let files = tempfile::tempdir().unwrap();
    let sha = git(dir.path(), &["rev-parse", "HEAD"]);
    let pull = event.name == "pull_request";
    let payload = if pull {
        serde_json::json!({
            "pull_request": {
                "base": { "sha": event.base, "ref": "main" },
                "head": { "sha": sha, "ref": event.head, "repo": { "fork": event.fork } }
            }
        })
    } else {
        serde_json::json!({ "before": event.base, "after": sha, "ref": "refs/heads/main" })
    };
    std::fs::write(files.path().join("event.json"), payload.to_string()).unwrap();
    let token = if event.fork { "" } else { TOKEN };
    let mut context: BTreeMap<&str, String> = BTreeMap::new();
    context.insert("vars.VX_REMOTE_CACHE_URL", server.url());
    context.insert("vars.VX_REMOTE_CACHE_TEAM", TEAM.into());
    context.insert("secrets.VX_REMOTE_CACHE_TOKEN", token.into());
    context.insert(
        "github.head_ref",
        if pull {
            event.head.into()
        } else {
            String::new()
        },
    );
    context.insert(
        "github.ref_name",
        if pull {
            "7/merge".into()
        } else {
            "main".into()
        },
    );
    context.insert("github.sha", sha.clone());
    if let Some(shard) = event.shard {
        context.insert("matrix.shard", shard.to_string());
    }
    if pull {
        context.insert(
            "github.event.pull_request.head.repo.fork",
            event.fork.to_string(),
        );
    }
    let mut env = base_env(server, token);
    let f = |name: &str| files.path().join(name).display().to_string();
    for (name, value) in [
        ("GITHUB_ACTIONS", "true".to_string()),
        ("GITHUB_EVENT_NAME", event.name.to_string()),
        ("GITHUB_EVENT_PATH", f("event.json")),
        ("GITHUB_SHA", sha.clone()),
        (
            "GITHUB_REF",
            if pull {
                "refs/pull/7/merge".into()
            } else {
                "refs/heads/main".into()
            },
        ),
        ("GITHUB_REF_NAME", context["github.ref_name"].clone()),
        ("GITHUB_HEAD_REF", context["github.head_ref"].clone()),
        (
            "GITHUB_BASE_REF",
            if pull { "main".into() } else { String::new() },
        ),
        ("GITHUB_STEP_SUMMARY", f("summary.md")),
        ("GITHUB_PATH", f("path")),
        ("GITHUB_OUTPUT", f("output")),
        ("RUNNER_OS", "Linux".into()),
    ] {
        env.insert(name.into(), value);
    }
    if let Value::Mapping(vars) = &job["env"] {
        for (name, value) in vars {
            let value = substitute(value.as_str().unwrap(), &context);
            env.insert(name.as_str().unwrap().into(), value);
        }
    }
    let mut steps: Vec<Value> = job["steps"].as_sequence().unwrap().clone();
    if let Some(more) = also {
        steps.extend(more.as_sequence().unwrap().iter().cloned());
    }
    let checkout_depth = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout"))
        })
        .map(|s| s["with"]["fetch-depth"].as_u64());
    assert_eq!(
        checkout_depth,
        Some(Some(0)),
        "the whole history is checked out"
    );
    let mut log = String::new();
    for step in &steps {
        let Some(run) = step["run"].as_str() else {
            continue;
        };
        let mut step_env = env.clone();
        // GITHUB_PATH: each line is put before PATH for the steps after the one that wrote it.
        let added = std::fs::read_to_string(files.path().join("path")).unwrap_or_default();
        let mut path: Vec<String> = added.lines().rev().map(str::to_string).collect();
        path.push(env["PATH"].clone());
        step_env.insert("PATH".into(), path.join(":"));
        if let Value::Mapping(vars) = &step["env"] {
            for (name, value) in vars {
                let value = substitute(value.as_str().unwrap(), &context);
                step_env.insert(name.as_str().unwrap().into(), value);
            }
        }
        shell(dir.path(), &substitute(run, &context), &step_env, &mut log);
    }
    Build { log, dir, files }
}

fn short(commit: &str) -> &str {
    &commit[..7]
}

/// The lines every recipe's two builds must print: the push recorded green in the remote cache,
/// and the change request on a fresh runner compares with it and restores from the remote.
fn check_push(build: &Build, main: &str) {
    assert!(
        build.log.contains(&format!(
            "vx: recorded {} as green for `{SCOPE}` on main, on this machine and in the remote cache\n",
            short(main)
        )),
        "{}",
        build.log
    );
}

fn check_change_request(build: &Build, main: &str, feature: &str) {
    assert!(
        build.log.contains(&format!(
            "vx: --affected compares with {}: the last green run of `{SCOPE}` on main that HEAD descends from (recorded in the remote cache)\n",
            short(main)
        )),
        "{}",
        build.log
    );
    let cache_line = build
        .log
        .lines()
        .find(|l| l.starts_with("cache "))
        .unwrap_or_default();
    assert!(
        cache_line.contains(" remote"),
        "what the change did not reach came from the remote cache: {}",
        build.log
    );
    assert!(
        build.log.contains(&format!(
            "vx: recorded {} as green for `{SCOPE}` on {BRANCH}, on this machine and in the remote cache\n",
            short(feature)
        )),
        "{}",
        build.log
    );
}

#[test]
fn github_actions_recipe_runs_as_the_page_says() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, main, feature) = origin();
    let push = GitHubEvent {
        recipe: "github-actions",
        shard: None,
        name: "push",
        branch: "main",
        head: "",
        base: "0000000000000000000000000000000000000000",
        fork: false,
    };
    let built = github(origin.path(), &server, &push, None);
    check_push(&built, &main);
    assert!(built.log.contains("::group::"), "{}", built.log);
    assert!(built.file("summary.md").contains("✅"), "{}", built.log);
    assert!(built.dir.path().join("vx-junit.xml").exists());

    let deploy = recipe("github-actions-deploy");
    let pull = GitHubEvent {
        recipe: "github-actions",
        shard: None,
        name: "pull_request",
        branch: BRANCH,
        head: BRANCH,
        base: &main,
        fork: false,
    };
    let reviewed = github(origin.path(), &server, &pull, Some(&deploy));
    check_change_request(&reviewed, &main, &feature);
    assert!(
        reviewed.file("output").contains("deploy=true\n"),
        "the change reaches web's deploy: {}",
        reviewed.log
    );

    // The same pull request from a fork: no token, remote reads only, nothing uploaded.
    let fork = GitHubEvent { fork: true, ..pull };
    let forked = github(origin.path(), &server, &fork, None);
    assert!(forked.log.contains("no token was sent"), "{}", forked.log);
    assert!(!forked.log.contains("upload"), "{}", forked.log);
    assert!(
        !forked.log.contains("in the remote cache\n"),
        "a fork records nothing remotely: {}",
        forked.log
    );
}

// ---------------------------------------------------------------------------------------------
// GitLab CI, Buildkite, CircleCI: one shell per job (GitLab, Buildkite) or per step (CircleCI).

/// A fresh runner of a CI: the checkout of `branch` (no `.vx/`), a folder for the CI's files,
/// and the environment: the remote cache's variables, the CI's own (`own`, and `sha` naming the
/// variable of the commit built), then the build's (`vars`).
fn runner(
    origin: &Path,
    server: &HttpCacheServer,
    branch: &str,
    sha: &str,
    own: &[(&str, &str)],
    vars: &[(&str, &str)],
) -> (
    tempfile::TempDir,
    tempfile::TempDir,
    BTreeMap<String, String>,
) {
    let dir = checkout(origin, branch);
    let mut env = base_env(server, TOKEN);
    env.insert(sha.into(), git(dir.path(), &["rev-parse", "HEAD"]));
    for (name, value) in own.iter().chain(vars) {
        env.insert(name.to_string(), value.to_string());
    }
    (dir, tempfile::tempdir().unwrap(), env)
}

/// GitLab: the job's `script` lines in one shell, as the runner runs them.
fn gitlab(origin: &Path, server: &HttpCacheServer, vars: &[(&str, &str)], branch: &str) -> Build {
    gitlab_recipe("gitlab-ci", origin, server, vars, branch)
}

/// [`gitlab`] with the recipe named `name` on the page.
fn gitlab_recipe(
    name: &str,
    origin: &Path,
    server: &HttpCacheServer,
    vars: &[(&str, &str)],
    branch: &str,
) -> Build {
    let pipeline = recipe(name);
    assert_eq!(pipeline["variables"]["GIT_DEPTH"].as_u64(), Some(0));
    let job = &pipeline["build"];
    let own = [("GITLAB_CI", "true"), ("CI_DEFAULT_BRANCH", "main")];
    let (dir, files, env) = runner(origin, server, branch, "CI_COMMIT_SHA", &own, vars);
    let mut log = String::new();
    shell(
        dir.path(),
        &strings(&job["script"]).join("\n"),
        &env,
        &mut log,
    );
    assert_eq!(
        job["artifacts"]["reports"]["junit"].as_str(),
        Some("vx-junit.xml")
    );
    Build { log, dir, files }
}

#[test]
fn gitlab_ci_recipe_runs_as_the_page_says() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, main, feature) = origin();
    let built = gitlab(
        origin.path(),
        &server,
        &[
            ("CI_PIPELINE_SOURCE", "push"),
            ("CI_COMMIT_BRANCH", "main"),
            ("CI_COMMIT_REF_NAME", "main"),
            (
                "CI_COMMIT_BEFORE_SHA",
                "0000000000000000000000000000000000000000",
            ),
        ],
        "main",
    );
    check_push(&built, &main);
    assert!(built.log.contains("section_start:"), "{}", built.log);
    assert!(built.dir.path().join("vx-junit.xml").exists());
    let reviewed = gitlab(
        origin.path(),
        &server,
        &[
            ("CI_PIPELINE_SOURCE", "merge_request_event"),
            ("CI_COMMIT_REF_NAME", BRANCH),
            ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", BRANCH),
            ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
            ("CI_MERGE_REQUEST_DIFF_BASE_SHA", &main),
        ],
        BRANCH,
    );
    check_change_request(&reviewed, &main, &feature);
}

/// Buildkite: the step's `command` lines in one shell.
fn buildkite(
    origin: &Path,
    server: &HttpCacheServer,
    vars: &[(&str, &str)],
    branch: &str,
) -> Build {
    let pipeline = recipe("buildkite");
    let step = &pipeline["steps"][0];
    let own = [
        ("BUILDKITE", "true"),
        ("BUILDKITE_BRANCH", branch),
        ("BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main"),
    ];
    let (dir, files, env) = runner(origin, server, branch, "BUILDKITE_COMMIT", &own, vars);
    let mut log = String::new();
    shell(
        dir.path(),
        &strings(&step["command"]).join("\n"),
        &env,
        &mut log,
    );
    let artifacts = step["artifact_paths"].as_str().unwrap();
    assert!(dir.path().join(artifacts).exists(), "{artifacts}");
    Build { log, dir, files }
}

#[test]
fn buildkite_recipe_runs_as_the_page_says() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, main, feature) = origin();
    let built = buildkite(
        origin.path(),
        &server,
        &[("BUILDKITE_PULL_REQUEST", "false")],
        "main",
    );
    check_push(&built, &main);
    assert!(built.log.contains("\n--- "), "{}", built.log);
    let reviewed = buildkite(
        origin.path(),
        &server,
        &[
            ("BUILDKITE_PULL_REQUEST", "7"),
            ("BUILDKITE_PULL_REQUEST_BASE_BRANCH", "main"),
        ],
        BRANCH,
    );
    check_change_request(&reviewed, &main, &feature);
}

/// CircleCI: each `run` step in its own shell, which sources `$BASH_ENV` first (bash does so
/// for a non-interactive shell, as CircleCI relies on).
fn circleci(origin: &Path, server: &HttpCacheServer, vars: &[(&str, &str)], branch: &str) -> Build {
    let config = recipe("circleci");
    let steps = config["jobs"]["build"]["steps"].as_sequence().unwrap();
    let own = [("CIRCLECI", "true"), ("CIRCLE_BRANCH", branch)];
    let (dir, files, mut env) = runner(origin, server, branch, "CIRCLE_SHA1", &own, vars);
    let bash_env = files.path().join("bash_env");
    std::fs::write(&bash_env, "").unwrap();
    env.insert("BASH_ENV".into(), bash_env.display().to_string());
    let mut log = String::new();
    for step in steps {
        let run = match &step["run"] {
            Value::String(command) => command.clone(),
            Value::Mapping(_) => step["run"]["command"].as_str().unwrap().to_string(),
            _ => continue,
        };
        shell(dir.path(), &run, &env, &mut log);
    }
    let results = steps
        .iter()
        .find_map(|s| s["store_test_results"]["path"].as_str())
        .unwrap();
    assert!(dir.path().join(results).join("vx/junit.xml").exists());
    Build { log, dir, files }
}

#[test]
fn circleci_recipe_runs_as_the_page_says() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, main, feature) = origin();
    let built = circleci(origin.path(), &server, &[], "main");
    check_push(&built, &main);
    let reviewed = circleci(
        origin.path(),
        &server,
        &[("CIRCLE_PULL_REQUEST", "https://github.com/acme/repo/pull/7")],
        BRANCH,
    );
    check_change_request(&reviewed, &main, &feature);
}

// ---------------------------------------------------------------------------------------------
// One run on several runners: every job of a matrix at once, each on its own clone.

/// The tasks a build's log shows executed (their section titles: `<id> (executed 12ms)`).
fn executed(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| line.find(" (executed ").map(|at| &line[..at]))
        .map(|head| {
            let head = head.rsplit("\u{1b}[0K").next().unwrap_or(head);
            head.rsplit("::group::").next().unwrap_or(head).to_string()
        })
        .collect()
}

/// The jobs of a matrix executed every task of the plan exactly once between them.
fn each_task_once(builds: &[Build], origin: &Path) {
    let mut ran: Vec<String> = builds.iter().flat_map(|b| executed(&b.log)).collect();
    ran.sort();
    let said: Vec<&str> = builds
        .iter()
        .flat_map(|b| b.log.lines())
        .filter(|l| l.contains("--shard") || l.starts_with("warning:"))
        .collect();
    assert_eq!(
        ran,
        every_task(origin),
        "each task once, on its own runner; the jobs said:\n{}",
        said.join("\n")
    );
}

/// Every task of the demo's `build test lint` plan, from one runner's `--dry=json`.
fn every_task(origin: &Path) -> Vec<String> {
    let out = Command::new(vx_bin())
        .args(["run", "build", "test", "lint", "--all", "--dry=json"])
        .current_dir(origin)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<String> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn github_actions_matrix_recipe_runs_every_task_once_across_its_jobs() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, _, _) = origin();
    let jobs = recipe("github-actions-shards")["jobs"]["build"]["strategy"]["matrix"]["shard"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(jobs, [1, 2, 3]);
    // The push of the demo onto the empty first commit: everything is affected.
    let before = &git(origin.path(), &["rev-parse", "HEAD~1"]);
    let builds: Vec<Build> = std::thread::scope(|s| {
        let started: Vec<_> = jobs
            .iter()
            .map(|&k| {
                let (origin, server) = (origin.path(), &server);
                s.spawn(move || {
                    let push = GitHubEvent {
                        recipe: "github-actions-shards",
                        shard: Some(k),
                        name: "push",
                        branch: "main",
                        head: "",
                        base: before,
                        fork: false,
                    };
                    github(origin, server, &push, None)
                })
            })
            .collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    each_task_once(&builds, origin.path());
    for (k, build) in jobs.iter().zip(&builds) {
        assert!(
            build
                .log
                .contains(&format!("vx: --shard {k}/3: this runner runs ")),
            "{}",
            build.log
        );
        assert!(build.dir.path().join(format!("vx-junit-{k}.xml")).exists());
    }
}

#[test]
fn gitlab_parallel_recipe_runs_every_task_once_across_its_jobs() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (origin, _, _) = origin();
    let total = recipe("gitlab-ci-shards")["build"]["parallel"]
        .as_u64()
        .unwrap();
    assert_eq!(total, 3);
    let before = &git(origin.path(), &["rev-parse", "HEAD~1"]);
    let builds: Vec<Build> = std::thread::scope(|s| {
        let started: Vec<_> = (1..=total)
            .map(|k| {
                let (origin, server) = (origin.path(), &server);
                s.spawn(move || {
                    let index = k.to_string();
                    let vars = [
                        ("CI_PIPELINE_SOURCE", "push"),
                        ("CI_COMMIT_BRANCH", "main"),
                        ("CI_COMMIT_BEFORE_SHA", before.as_str()),
                        ("CI_NODE_INDEX", index.as_str()),
                        ("CI_NODE_TOTAL", "3"),
                    ];
                    gitlab_recipe("gitlab-ci-shards", origin, server, &vars, "main")
                })
            })
            .collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    each_task_once(&builds, origin.path());
    for (k, build) in (1..=total).zip(&builds) {
        assert!(
            build.log.contains(&format!("vx: --shard {k}/3: ")),
            "{}",
            build.log
        );
    }
}
