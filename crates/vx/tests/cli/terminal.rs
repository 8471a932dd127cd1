//! vx in a real terminal (tmux), read from the screen as a user sees it: the live
//! region's rows with each running task's latest line, `--log-order=stream`, and Ctrl-C.

use vx_test_support::fixture::Fixture;
use vx_test_support::tmux::Tmux;

use crate::{one_project, vx_bin};

/// `vx args…` in `f`'s root on a `width`×24 terminal.
fn on_terminal(f: &Fixture, args: &[&str], width: u16) -> Option<Tmux> {
    Tmux::start(
        f.root(),
        std::path::Path::new(vx_bin()),
        args,
        &[("VX_LOG", "off")],
        (width, 24),
    )
}

/// Two tasks that print a line every 0.4 s, and one that waits for the first.
fn printing_tasks() -> Fixture {
    one_project(
        "[tasks.a]\ncommand = \"for i in 1 2 3 4 5 6 7 8; do echo compiling a step $i; sleep 0.4; done\"\n\
         [tasks.b]\ncommand = \"for i in 1 2 3 4 5 6 7 8; do printf 'testing b step %s\\\\n' $i; sleep 0.4; done\"\n\
         [tasks.c]\ncommand = \"echo c done\"\ndepends-on = [\"a\"]\n\
         [tasks.all]\ndepends-on = [\"a\", \"b\", \"c\"]\n",
    )
}

/// UI-6: each running task's row shows its latest output line, the idle slots
/// are one row, and a row says what waits.
#[test]
fn live_rows_show_each_tasks_latest_line_and_what_waits() {
    let f = printing_tasks();
    let Some(term) = on_terminal(&f, &["run", "all", "--all", "--concurrency", "4"], 100) else {
        return;
    };
    let screen = term.wait_until("both tasks' latest lines", |s| {
        s.contains("lib#a  compiling a step 3") && s.contains("lib#b  testing b step 3")
    });
    assert!(
        screen.contains("·  2 idle · 1 waiting for dependencies"),
        "{screen}"
    );
    assert_eq!(screen.matches("idle").count(), 1, "one row:\n{screen}");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("idle"), "region erased:\n{screen}");
    assert!(screen.contains("result     3 tasks"), "{screen}");
}

/// A row is cut to the terminal's width as it displays: wide characters take two columns, so
/// no row wraps onto the next line.
#[test]
fn a_row_with_wide_characters_is_cut_to_the_width() {
    let f = one_project(
        "[tasks.w]\ncommand = \"echo 日本語のテキスト日本語のテキスト日本語のテキスト日本語のテキスト; sleep 3\"\n\
         [tasks.x]\ncommand = \"sleep 3\"\n\
         [tasks.all]\ndepends-on = [\"w\", \"x\"]\n",
    );
    let Some(term) = on_terminal(&f, &["run", "all", "--all", "--concurrency", "3"], 40) else {
        return;
    };
    let screen = term.wait_for("lib#w  日本");
    let rows: Vec<&str> = screen.lines().collect();
    let at = rows.iter().position(|r| r.contains("lib#w")).unwrap();
    assert!(
        rows[at + 1].contains("lib#x"),
        "the next row is the next task, not the rest of this one:\n{screen}"
    );
    for row in &rows {
        let columns: usize = row
            .chars()
            .map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0))
            .sum();
        assert!(columns < 40, "`{row}` is {columns} columns:\n{screen}");
    }
    term.keys(&["C-c"]);
    term.finish();
}

/// `--log-order=stream`: every task's lines appear as they are printed, prefixed with its id,
/// while it still runs; its one-liner follows when it ends.
#[test]
fn log_order_stream_prints_every_line_live_with_its_task() {
    let f = printing_tasks();
    let Some(term) = on_terminal(
        &f,
        &[
            "run",
            "all",
            "--all",
            "--concurrency",
            "4",
            "--log-order=stream",
        ],
        100,
    ) else {
        return;
    };
    let screen = term.wait_until("lines of both tasks", |s| {
        s.contains("lib#a │ compiling a step 2") && s.contains("lib#b │ testing b step 2")
    });
    assert!(!screen.contains("success"), "both still run:\n{screen}");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    for line in [
        "lib#a │ compiling a step 8",
        "lib#b │ testing b step 8",
        "lib#c │ c done",
    ] {
        assert!(screen.contains(line), "`{line}`:\n{screen}");
    }
    let last_a = screen.find("lib#a │ compiling a step 8").unwrap();
    let a_done = screen
        .find("success no-cache lib#a")
        .expect("a's one-liner");
    assert!(last_a < a_done, "{screen}");
}

/// Ctrl-C typed in the terminal: the footer says the run was interrupted and counts what never
/// started, with no cached share.
#[test]
fn ctrl_c_in_the_terminal_gives_an_interrupted_footer() {
    let f = printing_tasks();
    let Some(term) = on_terminal(&f, &["run", "all", "--all", "--concurrency", "4"], 100) else {
        return;
    };
    term.wait_for("lib#a  compiling a step 2");
    term.keys(&["C-c"]);
    let (code, screen) = term.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(
        screen.contains("tasks      2 aborted · 1 not run · 3 total"),
        "{screen}"
    );
    assert!(
        screen.contains("result     interrupted by SIGINT · 0 of 3 tasks ended"),
        "{screen}"
    );
    assert!(!screen.contains("%)"), "{screen}");
}

/// `--ui=tui`: the task list with status and time, the selected task's output, keys to move
/// and search; on exit the terminal is given back and the footer prints below.
#[test]
fn the_task_ui_lists_tasks_shows_the_selected_output_and_searches() {
    let f = printing_tasks();
    let Some(term) = on_terminal(
        &f,
        &["run", "all", "--all", "--concurrency", "4", "--ui=tui"],
        100,
    ) else {
        return;
    };
    term.wait_until("the task list", |s| {
        s.contains("┌ tasks") && s.contains("lib#a") && s.contains("lib#b") && s.contains("lib#c")
    });
    // The first task, then the next: the right pane follows the selection.
    term.keys(&["g"]);
    let screen = term.wait_for("lib#a · running");
    assert!(screen.contains("compiling a step"), "{screen}");
    term.keys(&["Down"]);
    let screen = term.wait_for("lib#b · running");
    assert!(screen.contains("testing b step"), "{screen}");
    assert!(!screen.contains("compiling a step"), "{screen}");
    // A search keeps the matching tasks only.
    term.keys(&["/"]);
    term.type_text("#c");
    term.keys(&["Enter"]);
    let screen = term.wait_until("only lib#c listed", |s| {
        s.contains("lib#c") && !s.contains("lib#a  ") && !s.contains("lib#b  ")
    });
    assert!(screen.contains("lib#c · "), "{screen}");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(
        !screen.contains("┌ tasks"),
        "the terminal is given back:\n{screen}"
    );
    assert!(screen.contains("result     3 tasks"), "{screen}");
}

/// In the task UI an interactive task reads what is typed into it (`i`, then the keys; Ctrl-Z
/// stops typing).
#[test]
fn the_task_ui_types_into_an_interactive_task() {
    let f = one_project(
        "[tasks.ask]\ncommand = \"printf 'name? '; read name; echo hello $name; sleep 2\"\ninteractive = true\n",
    );
    let Some(term) = on_terminal(&f, &["run", "lib#ask", "--ui=tui"], 100) else {
        return;
    };
    term.wait_for("name?");
    term.keys(&["i"]);
    term.wait_for("typing into it");
    term.type_text("vx");
    term.keys(&["Enter"]);
    let screen = term.wait_for("hello vx");
    assert!(
        screen.contains("name? vx"),
        "what is typed is echoed:\n{screen}"
    );
    term.keys(&["C-z"]);
    term.wait_for("i type into it");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

/// Ctrl-C in the task UI stops the run like a SIGINT, and the terminal comes back with the
/// interrupted footer. `ui = "tui"` in `[workspace]` asks for the UI too.
#[test]
fn ctrl_c_in_the_task_ui_and_the_workspace_setting() {
    let f = printing_tasks();
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nui = \"tui\"\n",
    );
    f.commit();
    let Some(term) = on_terminal(&f, &["run", "all", "--all", "--concurrency", "4"], 100) else {
        return;
    };
    term.wait_for("┌ tasks");
    term.wait_for("step 2");
    term.keys(&["C-c"]);
    let (code, screen) = term.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(!screen.contains("┌ tasks"), "{screen}");
    assert!(screen.contains("interrupted by SIGINT"), "{screen}");
}

/// The task UI on a terminal narrower than 40 columns: the list takes what there is, and the run
/// ends normally.
#[test]
fn the_task_ui_fits_a_narrow_terminal() {
    let f = one_project("[tasks.a]\ncommand = \"echo first line; sleep 1\"\n");
    let Some(term) = on_terminal(&f, &["run", "lib#a", "--ui=tui"], 30) else {
        return;
    };
    term.wait_for("lib#a");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("result"), "{screen}");
}

/// A task UI that cannot start (here failing on purpose after raw mode, through the tests'
/// variable) says so once, gives the terminal back as it was (the shell's `stty` after vx still
/// reads `icanon`), and the run goes on with plain output.
#[test]
fn a_task_ui_that_cannot_start_gives_the_terminal_back_and_runs_plainly() {
    let f = one_project("[tasks.a]\ncommand = \"echo from a\"\n");
    let line = format!(
        "{} run lib#a --ui=tui; echo \"vx exited $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-*icanon'",
        vx_bin()
    );
    let Some(term) = Tmux::start(
        f.root(),
        std::path::Path::new("/bin/sh"),
        &["-c", &line],
        &[("VX_LOG", "off"), ("VX_TEST_TUI_START_FAILS", "1")],
        (100, 24),
    ) else {
        return;
    };
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains(
            "warning: cannot start the task UI (VX_TEST_TUI_START_FAILS is set); plain output instead"
        ),
        "{screen}"
    );
    assert!(screen.contains("from a"), "{screen}");
    assert!(screen.contains("vx exited 0"), "{screen}");
    assert!(
        screen.lines().any(|l| l.trim() == "icanon"),
        "the terminal is back in canonical mode:\n{screen}"
    );
}

/// `--ui=tui` stays open while persistent tasks run once the rest is done, as turbo's does: the
/// list puts running tasks first, a server's output is read and typed into, and `q` stops them
/// and gives the terminal back with the footer (issue 48).
#[test]
fn the_task_ui_stays_open_with_persistent_tasks_until_q() {
    let f = one_project(
        "[tasks.build]\ncommand = \"echo built\"\n\
         [tasks.dev]\ncommand = \"echo listening; while read line; do echo got $line; done\"\n\
         persistent = true\ninteractive = true\n",
    );
    let Some(term) = on_terminal(&f, &["run", "lib#build", "lib#dev", "--ui=tui"], 100) else {
        return;
    };
    let screen = term.wait_for("persistent tasks running");
    let row = |id: &str| {
        screen
            .lines()
            .position(|l| l.starts_with('│') && l.contains(id))
            .unwrap_or_else(|| panic!("no row of {id}:\n{screen}"))
    };
    assert!(
        row("lib#dev") < row("lib#build"),
        "running first:\n{screen}"
    );
    // The server's output, and what is typed into it.
    term.keys(&["g"]);
    term.wait_for("lib#dev · running");
    term.keys(&["i"]);
    term.wait_for("typing into it");
    term.type_text("hello");
    term.keys(&["Enter"]);
    term.wait_for("got hello");
    term.keys(&["C-z"]);
    term.wait_for("q or Ctrl-C stops them");
    term.keys(&["q"]);
    let (code, screen) = term.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(
        !screen.contains("┌ tasks"),
        "the terminal is given back:\n{screen}"
    );
    assert!(screen.contains("result "), "the footer follows:\n{screen}");
}
