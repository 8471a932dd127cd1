//! An engine at its limit (REM-11): one that refuses actions with `RESOURCE_EXHAUSTED` beyond
//! what it can run makes vx keep fewer in flight, not run them locally. The in-process fake
//! engine, since a real one's limit (BuildGrid's RPC thread pool) is not something a test can
//! set per run.

use vx_test_support::reapi_fake::FakeReapi;

use super::*;

#[test]
fn an_engine_at_its_limit_gets_fewer_actions_at_once_and_runs_them_all() {
    let engine = FakeReapi::start();
    engine.execute_at_most(2);
    let f = empty();
    f.write(".gitignore", ".vx/\nsummary.json\n");
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-execution]\nurl = \"{}\"\nmax-in-flight = 8\n",
            engine.url()
        ),
    );
    let projects: Vec<String> = (0..12).map(|n| format!("p{n:02}")).collect();
    for name in &projects {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(r#"{{ "name": "{name}", "version": "1.0.0" }}"#),
        );
        f.write(
            &format!("packages/{name}/vx.toml"),
            "[tasks.build]\ncommand = \"true\"\nremote = true\ncache = { inputs = [\"vx.toml\"], outputs = [] }\n",
        );
    }
    f.commit();
    let (out, summary) = run(&f, &["build", "--all", "--output-logs=full"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for name in &projects {
        let id = format!("{name}#build");
        assert_eq!(
            outcome(&summary, &id),
            ("success".into(), "miss".into(), "remote".into()),
            "{id}: {}{}",
            out.stdout,
            out.stderr
        );
    }
    // Lowered from 8 to 4 at the first burst of refusals; a machine slow enough to spread the
    // refusals over more than one burst lowers it again before the line is said (to 2, or 1),
    // never to nothing. Each line is said in the frame of the task whose attempt lowered it, and
    // frames print as tasks end: the lines come in any order, each window once.
    let mut lowered: Vec<u32> = regex::Regex::new(
        r"vx: the remote executor is at its limit \(RESOURCE_EXHAUSTED\); at most (\d+) actions? in flight from now on",
    )
    .unwrap()
    .captures_iter(&out.stdout)
    .map(|c| c[1].parse().unwrap())
    .collect();
    lowered.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        lowered.first().is_some_and(|n| (1..=4).contains(n))
            && lowered.windows(2).all(|w| w[1] < w[0]),
        "{lowered:?}: {}",
        out.stdout
    );
    assert!(!out.stderr.contains("run locally"), "{}", out.stderr);
    let (most, refused) = engine.execution_load();
    assert_eq!(most, 2, "the engine's own limit held");
    assert!(refused > 0, "it was asked for more than it could run");
}
