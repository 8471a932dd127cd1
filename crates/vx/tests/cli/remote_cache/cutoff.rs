//! KEY-9 through the real `turborepo-remote-cache`: a fresh runner takes every key at once
//! from the outputs record the uploading run wrote, and a record that lies about what an entry
//! holds costs a download, never a wrong hit.

use vx_test_support::fakes::is_record;
use vx_test_support::fixture::Fixture;
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};

use super::TEAM;
use crate::empty;

/// `lib#build` writes a different `dist/out.txt` every time it runs (a build that stamps the
/// time); `app#build` copies it, so app's output says which of lib's outputs it was built on.
fn stamping(url: &str) -> Fixture {
    let f = empty();
    f.write(".gitignore", ".vx/\ndist/\n");
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\nteam = \"{TEAM}\"\n"),
    );
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && date +%s%N > dist/out.txt\"\ncache = { inputs = [\"vx.toml\"], outputs = [\"dist/**\"] }\n",
    );
    f.write("packages/app/package.json", r#"{ "name": "app" }"#);
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cp ../lib/dist/out.txt dist/app.txt\"\ndepends-on = [\"lib#build\"]\ncache = { inputs = [\"vx.toml\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    f
}

/// `vx run build --all` uploading, with `extra`: its stderr and summary.
fn build(f: &Fixture, extra: &[&str]) -> (String, serde_json::Value) {
    let summary = f.path("summary.json");
    let summary_arg = format!("--summarize={}", summary.display());
    let mut args = vec!["run", "build", "--all", summary_arg.as_str()];
    args.extend_from_slice(extra);
    let out = f.vx_in(
        ".",
        &args,
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&summary).expect("a summary");
    (out.stderr, serde_json::from_str(&text).expect("JSON"))
}

/// The outputs record's file in the server's storage.
fn record_file(server: &HttpCacheServer) -> std::path::PathBuf {
    let dir = server.artifact_dir(TEAM);
    let records: Vec<_> = server
        .artifacts(TEAM)
        .into_iter()
        .filter(|key| is_record(&dir.join(key), key))
        .collect();
    assert_eq!(records.len(), 1, "one outputs record: {records:?}");
    dir.join(&records[0])
}

#[test]
fn a_record_that_lies_about_an_upstream_costs_a_download_never_a_wrong_hit() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // Runner A uploads lib (outputs A), app built on them, and the record "lib's entry
    // produced A".
    let a = stamping(&server.url());
    build(&a, &[]);
    let record = record_file(&server);
    let said_a = std::fs::read(&record).unwrap();
    // Runner B builds again: lib's entry (same key) now holds outputs B, app's entry for B
    // is added beside the one for A, and the record is rewritten.
    let b = stamping(&server.url());
    build(&b, &["--force"]);
    let lib_b = b.read("packages/lib/dist/out.txt");
    assert_ne!(
        lib_b,
        a.read("packages/lib/dist/out.txt"),
        "lib stamps each run"
    );
    assert_eq!(
        server.results(TEAM).len(),
        3,
        "lib once, app for A and for B"
    );
    // The record goes back to saying A, while lib's entry holds B.
    std::fs::write(&record, said_a).unwrap();
    for _ in 0..3 {
        let fresh = stamping(&server.url());
        let (stderr, summary) = build(&fresh, &[]);
        assert_eq!(fresh.read("packages/lib/dist/out.txt"), lib_b, "{stderr}");
        assert_eq!(
            fresh.read("packages/app/dist/app.txt"),
            lib_b,
            "app was restored from the entry built on the lib it restored: {stderr}"
        );
        super::assert_every_task(&summary, "restored-remote");
    }
}

/// A dependant that folds an upstream's key (`cache.upstream-keys`) waits until that
/// upstream's own key can be taken: keyed early, the upstream would fold its own upstream's
/// key rather than what it produced, and miss.
#[test]
fn a_key_folded_upstream_is_keyed_after_its_own_upstreams_arrived() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let chain = |url: &str| {
        let f = empty();
        f.write(".gitignore", ".vx/\ndist/\n");
        f.write(
            "vx.toml",
            &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\nteam = \"{TEAM}\"\n"),
        );
        for (name, more) in [
            ("x", ""),
            ("w", "depends-on = [\"x#build\"]\n"),
            ("d", "depends-on = [\"w#build\"]\n"),
        ] {
            let keys = if name == "d" {
                ", upstream-keys = [\"w#build\"]"
            } else {
                ""
            };
            f.write(
                &format!("packages/{name}/package.json"),
                &format!(r#"{{ "name": "{name}" }}"#),
            );
            f.write(
                &format!("packages/{name}/vx.toml"),
                &format!("[tasks.build]\ncommand = \"mkdir -p dist && echo {name} > dist/out.txt\"\n{more}cache = {{ inputs = [\"vx.toml\"], outputs = [\"dist/**\"]{keys} }}\n"),
            );
        }
        f.commit();
        f
    };
    build(&chain(&server.url()), &[]);
    for _ in 0..3 {
        let fresh = chain(&server.url());
        let (stderr, summary) = build(&fresh, &[]);
        super::assert_every_task(&summary, "restored-remote");
        assert_eq!(fresh.read("packages/d/dist/out.txt"), "d\n", "{stderr}");
    }
}
