//! SEL-10: `--affected=last-green` takes as its base the nearest ancestor of HEAD where a green
//! run of the same tasks was recorded, on this machine or (on a fresh clone) in the remote
//! cache: the real `turborepo-remote-cache` and `buildbox-casd` on loopback. Real git histories,
//! GitHub Actions' and GitLab CI's variables as their documentation gives them.

use std::collections::BTreeSet;
use std::process::Command;

use vx_test_support::fixture::{Fixture, Output};
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};
use vx_test_support::reapi::Casd;

use crate::vx_bin;

/// The full commit id `what` names in the repository at `dir`.
fn rev(dir: &std::path::Path, what: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", what])
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("run git");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `vx run build --affected=last-green` in `f` with `env`, summarised: the output, and the ids
/// of the tasks that ran.
fn last_green(f: &Fixture, env: &[(&str, &str)]) -> (Output, BTreeSet<String>) {
    let summary = f.root().join(".git/summary.json");
    let _ = std::fs::remove_file(&summary);
    let arg = format!("--summarize={}", summary.display());
    let out = f.vx_in(".", &["run", "build", "--affected=last-green", &arg], env);
    let ran = std::fs::read_to_string(&summary)
        .ok()
        .map(|text| {
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            doc["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    (out, ran)
}

fn ids(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const EVERY_BUILD: [&str; 3] = ["app#build", "docs#build", "lib#build"];
const LIB_REACHES: [&str; 2] = ["app#build", "lib#build"];

fn short(commit: &str) -> &str {
    &commit[..7]
}

#[test]
fn a_green_run_is_remembered_and_the_next_run_compares_with_it() {
    let f = Fixture::w_cached(vx_bin());
    let first = rev(f.root(), "HEAD");
    let (out, ran) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(ran, ids(&EVERY_BUILD));
    assert!(
        out.stderr.contains(
            "vx: --affected=last-green: no green run of `vx run build` is recorded for main, master, so every task is affected\n"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(
            "vx: recorded {} as green for `vx run build` on main, on this machine\n",
            short(&first)
        )),
        "{}",
        out.stderr
    );

    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    let (out, ran) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(ran, ids(&LIB_REACHES), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: --affected compares with {}: the last green run of `vx run build` on main that HEAD descends from (remembered by this machine)\n",
            short(&first)
        )),
        "{}",
        out.stderr
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.root().join(".git/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["affected"]["commit"], first.as_str());
    assert!(summary["affected"]["why"]
        .as_str()
        .unwrap()
        .starts_with("the last green run of `vx run build` on main"));

    // The green run at the edit is the base now: nothing is affected, and the hint says why.
    let (out, _) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("  hint: HEAD itself is the last green commit\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_red_run_or_a_dirty_tree_is_not_remembered_and_the_base_stays_green() {
    let f = Fixture::w_cached(vx_bin());
    let green = rev(f.root(), "HEAD");
    assert_eq!(last_green(&f, &[]).0.code, 0);
    // A commit whose lib build fails: red, not recorded.
    f.write("packages/lib/src/a.txt", "red\n");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"exit 3\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    let red = rev(f.root(), "HEAD");
    let (out, _) = last_green(&f, &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!out.stderr.contains("recorded"), "{}", out.stderr);
    // Fixed, but with a file git does not know: green, and not recorded, saying why.
    f.write("packages/lib/vx.toml", vx_test_support::fixture::CACHED_LIB);
    f.write("packages/docs/notes.txt", "draft\n");
    f.commit();
    f.write("packages/docs/scratch.txt", "not committed\n");
    let (out, ran) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: --affected compares with {}: the last green run",
            short(&green)
        )),
        "the red commit {red} is never a base: {}",
        out.stderr
    );
    // Everything changed since the green commit ran: lib's source from the red commit too.
    assert_eq!(ran, ids(&EVERY_BUILD), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "vx: this green run is not recorded for --affected=last-green: the work tree differs from HEAD (packages/docs/scratch.txt; see `git status`)\n"
        ),
        "{}",
        out.stderr
    );
    let remembered = std::fs::read_to_string(f.path(".vx/green.json")).unwrap();
    assert!(remembered.contains(&green) && !remembered.contains(&red));
}

#[test]
fn a_green_commit_head_does_not_descend_from_is_never_the_base() {
    let f = Fixture::w_cached(vx_bin());
    let main_green = rev(f.root(), "HEAD");
    assert_eq!(last_green(&f, &[]).0.code, 0);
    // A topic branch goes green on a commit main never gets.
    f.git(&["checkout", "-q", "-b", "topic"]);
    f.write("packages/lib/src/a.txt", "topic\n");
    f.commit();
    let topic = rev(f.root(), "HEAD");
    let (out, _) = last_green(&f, &[]);
    assert!(out.stderr.contains("recorded"), "{}", out.stderr);
    // Back on main, a docs edit: the base is main's green commit, and lib is not taken as
    // unchanged from the topic's.
    f.git(&["checkout", "-q", "main"]);
    f.write("packages/docs/notes.txt", "main\n");
    f.commit();
    let (out, ran) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("compares with {}:", short(&main_green))),
        "not the topic's {topic}: {}",
        out.stderr
    );
    assert_eq!(ran, ids(&["docs#build"]));
}

#[test]
fn a_run_that_finds_nothing_affected_moves_the_green_commit_forward() {
    let f = Fixture::w_cached(vx_bin());
    let first = rev(f.root(), "HEAD");
    assert_eq!(last_green(&f, &[]).0.code, 0);
    f.write("NOTES.md", "outside every project\n");
    f.commit();
    let second = rev(f.root(), "HEAD");
    let (out, ran) = last_green(&f, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(ran.is_empty(), "{ran:?}");
    assert!(
        out.stderr.contains(&format!(
            "vx: no project changed since {}\nvx: recorded {} as green",
            short(&first),
            short(&second)
        )),
        "{}",
        out.stderr
    );
    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    let (out, _) = last_green(&f, &[]);
    assert!(
        out.stderr
            .contains(&format!("compares with {}:", short(&second))),
        "{}",
        out.stderr
    );
}

#[test]
fn only_a_last_green_run_records_in_ci_too() {
    let f = Fixture::w_cached(vx_bin());
    // A green run of the whole workspace in CI, without the flag: nothing recorded, nothing said.
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("GITLAB_CI", "true"), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("recorded"), "{}", out.stderr);
    assert!(!f.path(".vx/green.json").exists());
    // Nor does an --affected run against another base, which certifies nothing.
    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    let out = f.vx_in(
        ".",
        &["run", "build", "--affected=HEAD~1"],
        &[("GITLAB_CI", "true"), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!f.path(".vx/green.json").exists());
    // The first last-green run finds nothing green, runs everything and records HEAD.
    let (out, ran) = last_green(&f, &[("GITLAB_CI", "true"), ("CI", "true")]);
    assert_eq!(ran, ids(&EVERY_BUILD), "{}", out.stderr);
    assert!(std::fs::read_to_string(f.path(".vx/green.json"))
        .unwrap()
        .contains(&rev(f.root(), "HEAD")));
}

/// The two-machine story on a real server: CI on main records a green run in the remote cache;
/// a fresh clone (no `.vx`) of a later commit, in a pull request, takes it as its base.
fn a_fresh_clone_finds_the_green_commit_in_the_remote_cache(url: &str) {
    let f = Fixture::w_cached(vx_bin());
    let team = if url.starts_with("http") {
        "team = \"team_vx\"\n"
    } else {
        ""
    };
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\nwrite = \"ci\"\n{team}"
        ),
    );
    f.commit();
    let green = rev(f.root(), "HEAD");
    let push = [
        ("CI", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "push"),
        ("GITHUB_REF", "refs/heads/main"),
        ("GITHUB_REF_NAME", "main"),
        ("VX_REMOTE_CACHE_TOKEN", TOKEN),
    ];
    let (out, _) = last_green(&f, &push);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: recorded {} as green for `vx run build` on main, on this machine and in the remote cache\n",
            short(&green)
        )),
        "{}",
        out.stderr
    );
    // A pull request from feat/x into main, on a runner that has never run vx.
    f.git(&["checkout", "-q", "-b", "feat/x"]);
    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    let clone = crate::clone_of(f.root(), &["--branch", "feat/x"]);
    let pull = [
        ("CI", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_REF", "refs/pull/7/merge"),
        ("GITHUB_HEAD_REF", "feat/x"),
        ("GITHUB_BASE_REF", "main"),
        ("VX_REMOTE_CACHE_TOKEN", TOKEN),
    ];
    let (out, ran) = last_green(&clone, &pull);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: --affected compares with {}: the last green run of `vx run build` on main that HEAD descends from (recorded in the remote cache)\n",
            short(&green)
        )),
        "{}",
        out.stderr
    );
    assert_eq!(ran, ids(&LIB_REACHES), "{}", out.stderr);
    // The pull request's own green run is recorded under its branch; main's record keeps its
    // commit. A third runner of the same pull request takes the newer one.
    let head = rev(clone.root(), "HEAD");
    assert!(
        out.stderr.contains(&format!(
            "recorded {} as green for `vx run build` on feat/x",
            short(&head)
        )),
        "{}",
        out.stderr
    );
    let third = crate::clone_of(f.root(), &["--branch", "feat/x"]);
    third.write("packages/docs/notes.txt", "later\n");
    third.commit();
    let (out, ran) = last_green(&third, &pull);
    assert!(
        out.stderr
            .contains(&format!("compares with {}:", short(&head))),
        "{}",
        out.stderr
    );
    assert_eq!(ran, ids(&["docs#build"]), "{}", out.stderr);
    // The third runner's green run replaced feat/x's record with one that names it first: a
    // fourth runner, cloned from the third, takes the third's commit.
    let newer = rev(third.root(), "HEAD");
    let fourth = crate::clone_of(third.root(), &["--branch", "feat/x"]);
    fourth.write("packages/lib/src/a.txt", "again\n");
    fourth.commit();
    let (out, ran) = last_green(&fourth, &pull);
    assert!(
        out.stderr.contains(&format!(
            "compares with {}: the last green run of `vx run build` on feat/x",
            short(&newer)
        )),
        "{}",
        out.stderr
    );
    assert_eq!(ran, ids(&LIB_REACHES), "{}", out.stderr);
}

#[test]
fn a_dead_remote_is_one_warning_and_this_machines_green_runs_serve() {
    let f = Fixture::w_cached(vx_bin());
    let green = rev(f.root(), "HEAD");
    assert_eq!(last_green(&f, &[]).0.code, 0);
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"http://127.0.0.1:{port}\"\nteam = \"team_vx\"\n"
        ),
    );
    f.commit();
    let (out, _) = last_green(&f, &[("VX_REMOTE_CACHE_TOKEN", TOKEN)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warned: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("could not be read"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", out.stderr);
    assert!(
        warned[0].starts_with(&format!(
            "warning: --affected=last-green: the remote cache http://127.0.0.1:{port} could not be read ("
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("compares with {}:", short(&green))),
        "{}",
        out.stderr
    );
}

#[test]
fn http_remote_cache_carries_green_runs_between_machines() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    a_fresh_clone_finds_the_green_commit_in_the_remote_cache(&server.url());
}

#[test]
fn reapi_remote_cache_carries_green_runs_between_machines() {
    let Some(casd) = Casd::start() else {
        return;
    };
    a_fresh_clone_finds_the_green_commit_in_the_remote_cache(&casd.url());
}

#[test]
fn a_shallow_clone_without_the_green_commit_is_refused_with_the_fetch() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = Fixture::w_cached(vx_bin());
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{}\"\nteam = \"team_vx\"\n",
            server.url()
        ),
    );
    f.commit();
    let green = rev(f.root(), "HEAD");
    let gitlab = [
        ("CI", "true"),
        ("GITLAB_CI", "true"),
        ("CI_COMMIT_BRANCH", "main"),
        ("CI_DEFAULT_BRANCH", "main"),
        ("VX_REMOTE_CACHE_TOKEN", TOKEN),
    ];
    assert_eq!(last_green(&f, &gitlab).0.code, 0);
    f.write("packages/lib/src/a.txt", "edited\n");
    f.commit();
    let clone = Fixture::new(vx_bin());
    std::fs::remove_dir_all(clone.root().join(".git")).unwrap();
    let url = format!("file://{}", f.root().display());
    let cloned = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &url, "."])
        .current_dir(clone.root())
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{cloned:?}");
    let (out, _) = last_green(&clone, &gitlab);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "error: --affected=last-green: none of the green commits of `vx run build` ({}) is in this shallow clone's history\n  \
             hint: this is a shallow clone: fetch its whole history with `git fetch --no-tags --unshallow origin`\n  \
             hint: or check out with the whole history (GitHub Actions: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`), or name a base with `--affected=<ref>`\n",
            short(&green)
        )
    );
    let fetched = Command::new("sh")
        .args(["-c", "git fetch --no-tags --unshallow origin"])
        .current_dir(clone.root())
        .output()
        .unwrap();
    assert!(fetched.status.success(), "{fetched:?}");
    let (out, ran) = last_green(&clone, &gitlab);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(ran, ids(&LIB_REACHES), "{}", out.stderr);
}

#[test]
fn a_record_the_remote_refuses_is_one_warning_and_the_run_stays_green() {
    // A server that has nothing and refuses every upload.
    let fake = vx_test_support::http_fake::FakeHttpCache::start();
    fake.answer_all(vx_test_support::http_fake::Answer::Status(404));
    let f = Fixture::w_cached(vx_bin());
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{}\"\nteam = \"team_vx\"\n",
            fake.url()
        ),
    );
    f.commit();
    let (out, _) = last_green(&f, &[("CI", "true"), ("VX_REMOTE_CACHE_TOKEN", TOKEN)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let refused: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("could not record this green run"))
        .collect();
    assert_eq!(refused.len(), 1, "{}", out.stderr);
    assert!(
        refused[0].starts_with(&format!(
            "warning: remote cache {}: could not record this green run for --affected=last-green (",
            fake.url()
        )),
        "{}",
        out.stderr
    );
    // This machine remembers it all the same.
    assert!(std::fs::read_to_string(f.path(".vx/green.json"))
        .unwrap()
        .contains(&rev(f.root(), "HEAD")));
}
