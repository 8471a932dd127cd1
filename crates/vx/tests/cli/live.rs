//! The live status region (UI-6) on a real pseudo-terminal: drawn while tasks run, redrawn in
//! place, and gone from the final screen, which keeps only what scrolled (one-liners, frames)
//! and the footer.

use crate::one_project;
use crate::pty::{final_screen, OnPty};

/// Three independent tasks that take a while, so the region is drawn several times.
fn slow_tasks() -> vx_test_support::fixture::Fixture {
    one_project(
        "[tasks.a]\ncommand = \"sleep 0.6; echo a done\"\n\
         [tasks.b]\ncommand = \"sleep 0.6; echo b done\"\n\
         [tasks.c]\ncommand = \"sleep 0.6; echo c done\"\n\
         [tasks.all]\ndepends-on = [\"a\", \"b\", \"c\"]\n",
    )
}

#[test]
fn the_region_is_drawn_while_tasks_run_and_erased_before_the_footer() {
    let f = slow_tasks();
    let vx = OnPty::start(&f, &["run", "all", "--all", "--concurrency", "2"]);
    // While the tasks run: busy slots with their elapsed time, and the counters.
    vx.wait_for("0/3 tasks");
    let (code, raw) = vx.finish();
    assert_eq!(code, Some(0), "{raw}");
    assert!(raw.contains("lib#a") && raw.contains("\x1b[J"), "{raw:?}");
    let screen = final_screen(raw.as_bytes());
    // What stays: one line per task (broad flow) and the footer, in order, nothing else.
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let one_liners: Vec<&&str> = lines.iter().filter(|l| l.starts_with('⏺')).collect();
    assert_eq!(one_liners.len(), 3, "{screen}");
    assert!(lines.iter().any(|l| l.starts_with("── vx ")), "{screen}");
    assert!(lines.last().unwrap().starts_with("result"), "{screen}");
    for leftover in ["/3 tasks", "idle", "running"] {
        assert!(
            !screen.contains(leftover),
            "`{leftover}` left on the screen:\n{screen}"
        );
    }
    assert_eq!(
        lines.len(),
        3 + 7,
        "one-liners and the footer only:\n{screen}"
    );
}

#[test]
fn the_focused_flow_shows_it_only_while_dependencies_run() {
    let f = one_project(
        "[tasks.dep]\ncommand = \"sleep 0.5; echo dep done\"\n\
         [tasks.main]\ncommand = \"echo main output\"\ndepends-on = [\"dep\"]\n",
    );
    let vx = OnPty::start(&f, &["run", "lib#main"]);
    vx.wait_for("lib#dep");
    let (code, raw) = vx.finish();
    assert_eq!(code, Some(0), "{raw}");
    let frame = raw.find("$ echo main output").expect("main's frame");
    assert!(
        raw[..frame].contains("0/2 tasks"),
        "drawn while dep ran: {raw:?}"
    );
    assert!(
        !raw[frame..].contains("/2 tasks"),
        "not once main started: {raw:?}"
    );
    let screen = final_screen(raw.as_bytes());
    assert!(!screen.contains("/2 tasks"), "{screen}");
    crate::assert_contains(&screen, "main output");
}

#[test]
fn no_region_in_the_ci_flow_even_on_a_terminal() {
    let f = slow_tasks();
    let mut vx = OnPty::start_env(&f, &["run", "all", "--all"], &[("CI", "true")]);
    let (code, raw) = vx.finish_ref();
    assert_eq!(code, Some(0), "{raw}");
    assert!(
        !raw.contains("/3 tasks") && !raw.contains("\x1b[J"),
        "{raw:?}"
    );
}

#[test]
fn diagnostics_go_to_a_file_while_the_region_is_drawn() {
    let f = slow_tasks();
    let mut vx = OnPty::start_env(&f, &["run", "all", "--all"], &[("VX_LOG", "vx=debug")]);
    let (code, raw) = vx.finish_ref();
    assert_eq!(code, Some(0), "{raw}");
    // A task's start is logged at debug level while the region is drawn.
    let log = f.read(".vx/logs/vx.log");
    assert!(
        log.contains("DEBUG") && log.contains("started") && log.contains("lib#a"),
        "{log}"
    );
    let screen = final_screen(raw.as_bytes());
    assert!(!screen.contains("DEBUG"), "{screen}");
}
