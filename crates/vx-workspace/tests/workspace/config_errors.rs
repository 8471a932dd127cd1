//! Problems in one `vx.toml` (CFG-1 to CFG-12) and their collection across files (CFG-10).

use vx_workspace::parse_config;

use crate::fixture::{render, Fixture};

fn project_errors(text: &str) -> String {
    render(&parse_config(text, "packages/lib/vx.toml", false).unwrap_err())
}

fn root_errors(text: &str) -> String {
    render(&parse_config(text, "vx.toml", true).unwrap_err())
}

#[test]
fn unknown_task_key_lists_the_allowed_keys_and_suggests() {
    assert_eq!(
        project_errors("[tasks.build]\ncomand = \"tsc\"\n"),
        "packages/lib/vx.toml:2:1: unknown key `comand` in `tasks.build` (allowed: cache, command, \
         depends-on, description, env, extends, interactive, persistent, remote, retries, sandbox, timeout)\n\
         \x20 hint: did you mean `command`?\n"
    );
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    let cases = [
        ("nme = \"x\"", "unknown key `nme` in `vx.toml` (allowed: deps, name, tags, tasks)", Some("did you mean `name`?")),
        ("[tasks.b]\ncommand = \"x\"\nenv = { pass_through = [] }", "unknown key `pass_through` in `tasks.b.env` (allowed: define, pass-through, secret)", Some("did you mean `pass-through`?")),
        ("[tasks.b]\ncommand = \"x\"\npersistent = { ready_when = \"x\" }", "unknown key `ready_when` in `tasks.b.persistent` (allowed: ready-when)", Some("did you mean `ready-when`?")),
        ("[tasks.b]\ncommand = \"x\"\nsandbox = { reed = [] }", "unknown key `reed` in `tasks.b.sandbox` (allowed: network, read, write)", Some("did you mean `read`?")),
        ("[tasks.b]\ncommand = \"x\"\nremote = { platfrom = {} }", "unknown key `platfrom` in `tasks.b.remote` (allowed: extra-inputs, platform)", Some("did you mean `platform`?")),
        ("[tasks.\"build:css\".cache]\noutptus = []", "unknown key `outptus` in `tasks.\"build:css\".cache` (allowed: dependants-read, env, input-sets, inputs, outputs, portable, runtime, upstream, upstream-keys, workspace-inputs, workspace-outputs, workspace-runtime)", Some("did you mean `outputs`?")),
    ];
    for (text, message, hint) in cases {
        let errors = parse_config(text, "vx.toml", false).unwrap_err();
        let found = errors.iter().find(|d| d.message.starts_with("unknown key"));
        let d = found.unwrap_or_else(|| panic!("{text}: {}", render(&errors)));
        assert_eq!(d.message, message);
        assert_eq!(d.hints.first().map(String::as_str), hint, "{text}");
    }
}

#[test]
fn unknown_workspace_keys_are_refused_at_every_level() {
    let cases = [
        ("[workspace]\nconcurency = 2", "unknown key `concurency` in `workspace` (allowed: affected-base, cache-dir, cache-retention, concurrency, exclude-from-all, input-sets, members, remote-cache, remote-execution, rules, tasks, timeout, ui)", "did you mean `concurrency`?"),
        ("[workspace]\npackages = []", "unknown key `packages` in `workspace` (allowed: affected-base, cache-dir, cache-retention, concurrency, exclude-from-all, input-sets, members, remote-cache, remote-execution, rules, tasks, timeout, ui)", "did you mean `members`?"),
        ("[workspace.cache-retention]\nolder-then = \"1d\"", "unknown key `older-then` in `workspace.cache-retention` (allowed: max-size, older-than)", "did you mean `older-than`?"),
        ("[workspace.rules]\nupfront = true", "unknown key `upfront` in `workspace.rules` (allowed: exclusive-outputs, upfront-keys)", ""),
        ("[workspace.remote-cache]\nurl = \"https://c\"\nteam = \"t\"\ntoken = \"s3cret\"", "unknown key `token` in `workspace.remote-cache` (allowed: connect-timeout, download-concurrency, idle-timeout, instance-name, max-download-size, request-timeout, signature-key-env, team, team-id, token-env, upload-concurrency, url, write)", "tokens are never written in config; set `token-env`"),
        ("[workspace.remote-execution]\nurl = \"grpc://e\"\nmax-inflight = 2", "unknown key `max-inflight` in `workspace.remote-execution` (allowed: instance-name, max-in-flight, path, platform, token-env, url)", "did you mean `max-in-flight`?"),
        ("pipeline = {}", "unknown key `pipeline` in `vx.toml` (allowed: deps, name, tags, tasks, workspace)", "vx declares tasks in `[tasks]` of each project's `vx.toml`, or as templates in `[workspace.tasks]`"),
        ("members = []", "unknown key `members` in `vx.toml` (allowed: deps, name, tags, tasks, workspace)", "`members` belongs in the `[workspace]` table"),
    ];
    for (text, message, hint) in cases {
        let errors = parse_config(text, "vx.toml", true).unwrap_err();
        let d = errors
            .iter()
            .find(|d| d.message.starts_with("unknown key"))
            .unwrap_or_else(|| panic!("{text}: {}", render(&errors)));
        assert_eq!(d.message, message);
        assert_eq!(
            d.hints.first().map(String::as_str).unwrap_or(""),
            hint,
            "{text}"
        );
    }
}

#[test]
fn keys_of_other_tools_point_at_the_vx_spelling() {
    let text =
        "[tasks.build]\ncommand = \"tsc\"\ndependsOn = [\"^build\"]\noutputs = [\"dist/**\"]\n\
                inputs = [\"src/**\"]\npassThroughEnv = [\"CI\"]\n";
    let shown = project_errors(text);
    for hint in [
        "did you mean `depends-on`?",
        "did you mean `cache.outputs`?",
        "did you mean `cache.inputs`?",
        "did you mean `env.pass-through`?",
    ] {
        assert!(
            shown.contains(&format!("  hint: {hint}\n")),
            "{hint} in\n{shown}"
        );
    }
    assert!(shown.starts_with("packages/lib/vx.toml:3:1: unknown key `dependsOn` in `tasks.build`"));
    let shown = project_errors("[tasks.build]\ncommand = \"tsc\"\ncache = false\n");
    assert_eq!(
        shown,
        "packages/lib/vx.toml:3:9: `cache` must be a table\n\
         \x20 hint: tasks without a `cache` table are not cached; remove the `cache` table\n"
    );
}

#[test]
fn durations_say_how_to_write_them() {
    let cases = [
        ("\"90\"", "timeout: \"90\" is not a duration; write \"90s\""),
        ("90", "timeout: 90 is not a duration; write \"90s\""),
        ("\"0s\"", "timeout: \"0s\" must be greater than zero"),
        ("\"31d\"", "timeout: \"31d\" is longer than the maximum of 30d"),
        ("\"30m1h\"", "timeout: \"30m1h\" is not a duration; units go from largest to smallest, each at most once, such as \"1h30m\""),
        ("\"1.5h\"", "timeout: \"1.5h\" is not a duration; write digits with a unit (ms, s, m, h or d), such as \"90s\" or \"1h30m\""),
        ("true", "`timeout` must be a duration such as \"90s\" or \"1h30m\""),
    ];
    for (value, message) in cases {
        let text = format!("[tasks.build]\ncommand = \"tsc\"\ntimeout = {value}\n");
        assert_eq!(
            project_errors(&text),
            format!("packages/lib/vx.toml:3:11: {message}\n")
        );
    }
    assert_eq!(
        root_errors("[workspace]\ntimeout = \"90\"\n"),
        "vx.toml:2:11: timeout: \"90\" is not a duration; write \"90s\"\n"
    );
}

#[test]
fn type_errors_name_the_key_and_the_expected_kind() {
    assert_eq!(
        root_errors("[workspace]\nconcurrency = 0\nmembers = \"apps/*\"\n"),
        "vx.toml:2:15: `concurrency` must be a positive integer\n\
         vx.toml:3:11: `members` must be an array of strings\n"
    );
    assert_eq!(
        project_errors("tags = [1]\n[tasks.b]\ncommand = \"\"\ndescription = 3\n"),
        "packages/lib/vx.toml:1:9: `tags` must be an array of strings\n\
         packages/lib/vx.toml:3:11: `command` must not be empty\n\
         packages/lib/vx.toml:4:15: `description` must be a string\n"
    );
    assert_eq!(
        project_errors("[tasks]\nbuild = \"tsc\"\n"),
        "packages/lib/vx.toml:2:9: task `build` must be a table\n\
         \x20 hint: write `[tasks.build]` with `command = \"tsc\"` on the next line\n"
    );
}

#[test]
fn environment_tables_follow_cfg5() {
    let text = "[tasks.b]\ncommand = \"x\"\n[tasks.b.env]\npass-through = [\"VITE_*\", \"A-B\", \"*\", \"NODE_ENV\"]\n\
                define = { NODE_ENV = \"production\", PORT = 3000, \"1X\" = \"a\\u0000b\" }\nsecret = [\"TOKEN_*\"]\n";
    assert_eq!(
        project_errors(text),
        "packages/lib/vx.toml:4:27: env.pass-through: `A-B` is not a variable name (letters, digits and `_`, not starting with a digit)\n\
         packages/lib/vx.toml:4:34: env.pass-through: `*` is not a valid pattern; `*` may only end a non-empty prefix\n\
         packages/lib/vx.toml:5:12: env: `NODE_ENV` is both in `pass-through` and in `define`; keep one\n\
         packages/lib/vx.toml:5:44: `env.define.PORT` must be a string\n\
         \x20 hint: write `PORT = \"3000\"`\n\
         packages/lib/vx.toml:5:50: env.define: `1X` is not a variable name (letters, digits and `_`, not starting with a digit)\n\
         packages/lib/vx.toml:5:57: env.define.1X: the value contains a NUL character\n\
         packages/lib/vx.toml:6:11: env.secret: `TOKEN_*` is a pattern; only exact names are allowed here\n"
    );
}

/// `[workspace.tasks]`, `extends`, `[workspace.rules]`, `cache`, `cache-dir`,
/// `cache-retention`, `affected-base`, `retries`, `ready-when`, `interactive`, `sandbox`, a
/// `remote-cache` (HTTP or `grpc://`), `remote-execution` and `remote` are built;
/// the root's `build` gets the template's `cache`, so its `remote` has one.
#[test]
fn later_milestone_keys_are_not_available_yet() {
    let text = "[workspace]\ncache-dir = \".cache\"\naffected-base = \"main\"\ncache-retention = { older-than = \"1d\" }\n\
                rules = { upfront-keys = true, exclusive-outputs = false }\n[workspace.remote-cache]\nurl = \"grpc://c\"\n\
                [workspace.remote-execution]\nurl = \"grpc://e\"\n[workspace.tasks.build]\ncache = { outputs = [] }\n\
                [tasks.build]\ncommand = \"x\"\nretries = 1\ninteractive = false\nextends = true\nremote = true\n\
                sandbox = { read = [\"src\"] }\n[tasks.dev]\ncommand = \"vite\"\npersistent = { ready-when = \"ready\" }\n\
                [tasks.ok]\ncommand = \"x\"\npersistent = true\n";
    assert_eq!(
        root_errors(text),
        "vx.toml:5:32: exclusive-outputs = false is not available yet\n"
    );
}

#[test]
fn single_task_constraints_of_cfg9() {
    let text = "[tasks.group]\ndepends-on = [\"a\"]\ncache = { inputs = [], outputs = [] }\n\
                [tasks.dev]\ncommand = \"vite\"\npersistent = true\nretries = 2\n\
                [tasks.tty]\ncommand = \"x\"\ninteractive = true\nsandbox = {}\npersistent = { ready-when = \"a(\" }\n\
                [tasks.c]\ncommand = \"x\"\ncache = { inputs = [\"dist/x.js\", \"src\"], outputs = [\"**\"], upstream = [\"gen\", \"^*\"] }\n\
                [tasks.\"a#b\"]\ncommand = \"x\"\n[tasks.\"^up\"]\ncommand = \"x\"\n[tasks.dep]\ndepends-on = [\"*\", \"web#b*\", \"#x\"]\n";
    let shown = root_errors(text);
    let expected = [
        "vx.toml:3:1: `cache` is not allowed on a group task (it has no `command`)",
        "vx.toml:7:1: `retries` is not allowed on a persistent task",
        "vx.toml:11:1: `sandbox` is not allowed on an interactive task",
        "vx.toml:12:16: `persistent.ready-when` is not allowed on an interactive task",
        "vx.toml:12:29: persistent.ready-when is not a valid regular expression: unclosed group",
        "vx.toml:15:21: cache.inputs: `dist/x.js` is also an output",
        "vx.toml:15:53: cache.outputs: `**` covers the project's own `vx.toml`",
        "vx.toml:15:72: cache.upstream: `gen` is not a `depends-on` entry of this task",
        "vx.toml:16:8: task name `a#b` must not contain `#`",
        "vx.toml:18:8: task name `^up` must not start with `^`",
        "vx.toml:21:15: depends-on: `*` is only allowed in `cache.upstream`",
        "vx.toml:21:20: depends-on: `web#b*` is a pattern; patterns are not allowed with `project#`",
        "vx.toml:21:30: depends-on: `#x` is not a task reference; write `project#task`",
    ];
    for line in expected {
        assert!(
            shown.contains(&format!("{line}\n")),
            "missing {line} in\n{shown}"
        );
    }
    let shown = project_errors("[tasks.c]\ncommand = \"x\"\ncache = { env = [\"A\"] }\n");
    assert!(
        shown.contains("packages/lib/vx.toml:3:1: `cache` needs `inputs`\n"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "packages/lib/vx.toml:3:1: `cache` needs `outputs`\n  hint: write `outputs = []`"
        ),
        "{shown}"
    );
}

#[test]
fn globs_are_checked_against_cfg7() {
    let text = "[tasks.c]\ncommand = \"x\"\n[tasks.c.cache]\ninputs = [\"../shared/**\", \"/abs\", \"$TURBO_DEFAULT$\", \"src/{a}\"]\n\
                outputs = [\"!dist/**\"]\nworkspace-inputs = [\"./tsconfig.json\", \"@(a|b)\"]\n";
    let shown = project_errors(text);
    let expected = [
        "packages/lib/vx.toml:4:11: cache.inputs: `../shared/**` leaves the project (`..`); use `workspace-inputs` or `workspace-outputs` for paths elsewhere in the workspace",
        "packages/lib/vx.toml:4:27: cache.inputs: `/abs` is absolute; globs here are project-relative (`workspace-inputs` and `workspace-outputs` are root-relative)",
        "packages/lib/vx.toml:4:35: cache.inputs: `$TURBO_DEFAULT$` uses `$TURBO_DEFAULT$`, which vx does not know; list the inputs explicitly, such as `src/**`",
        "packages/lib/vx.toml:4:54: cache.inputs: `src/{a}` has a brace set with one alternative (`{a}`); write it without braces",
        "packages/lib/vx.toml:5:11: `cache.outputs` selects nothing: every entry is a negation",
        "packages/lib/vx.toml:6:40: cache.workspace-inputs: `@(a|b)` is an extglob, which vx does not support; use a brace set `{a,b}`",
    ];
    for line in expected {
        assert!(
            shown.contains(&format!("{line}\n")),
            "missing {line} in\n{shown}"
        );
    }
}

#[test]
fn sandbox_grants_are_paths_not_globs() {
    let shown = project_errors(
        "[tasks.c]\ncommand = \"x\"\nsandbox = { read = [\"src/*\"], write = [\"dist\"] }\n",
    );
    assert!(shown.contains(
        "packages/lib/vx.toml:3:21: sandbox.read: `src/*` is not allowed: sandbox grants are paths, not globs; grant the directory\n"
    ), "{shown}");
}

#[test]
fn workspace_is_only_allowed_in_the_root_file() {
    let shown = project_errors("[workspace]\n");
    assert!(
        shown.starts_with(
            "packages/lib/vx.toml:1:2: `[workspace]` is only allowed in the root `vx.toml`\n"
        ),
        "{shown}"
    );
}

#[test]
fn malformed_toml_is_one_located_error() {
    assert_eq!(
        project_errors("[tasks.build]\ncommand = \"tsc\ntimeout = 1\n"),
        "packages/lib/vx.toml:2:15: invalid TOML: invalid character in string: `\\n`\n"
    );
}

#[test]
fn errors_of_every_file_are_reported_together_and_sorted() {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"b\", \"a\"]\nconcurrency = -1\n",
    )
    .file("b/vx.toml", "[tasks.x]\ncommand = \"y\"\ntimeout = \"5\"\n")
    .file("a/vx.toml", "[tasks.x]\ncomand = \"y\"\n")
    .file("a/package.json", "{ \"name\": 1 }");
    assert_eq!(
        f.errors(),
        "a/package.json:1:11: `name` must be a string\n\
         a/vx.toml:2:1: unknown key `comand` in `tasks.x` (allowed: cache, command, depends-on, description, env, extends, interactive, persistent, remote, retries, sandbox, timeout)\n\
         \x20 hint: did you mean `command`?\n\
         b/vx.toml:3:11: timeout: \"5\" is not a duration; write \"5s\"\n\
         vx.toml:3:15: `concurrency` must be a positive integer\n"
    );
}

#[test]
fn files_that_are_not_utf8_are_located_errors() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"a\"]\n");
    fs_err::create_dir_all(f.path("a")).unwrap();
    fs_err::write(f.path("a/vx.toml"), b"[tasks.x]\ncommand = \"\xff\"\n").unwrap();
    assert_eq!(
        f.errors(),
        "a/vx.toml:2:12: `a/vx.toml` is not valid UTF-8\n"
    );
}

#[test]
fn a_task_without_command_or_depends_on_is_refused() {
    assert_eq!(
        project_errors("[tasks.build]\ndescription = \"nothing to do\"\n"),
        "packages/lib/vx.toml:1:8: task `build` needs either `command` or `depends-on`\n"
    );
}

#[test]
fn sandbox_network_entries_are_host_patterns() {
    let shown = project_errors(
        "[tasks.c]\ncommand = \"x\"\nsandbox = { network = [\"registry.npmjs.org\", \"https://example.com\", \"*.com\"] }\n",
    );
    for line in [
        "packages/lib/vx.toml:3:46: sandbox.network: `https://example.com` is not a host pattern: write the host without a scheme (`example.com`)\n",
        "packages/lib/vx.toml:3:69: sandbox.network: `*.com` would allow a whole top-level domain; name the domain (`*.example.com`)\n",
    ] {
        assert!(shown.contains(line), "missing {line} in\n{shown}");
    }
    assert!(!shown.contains("registry.npmjs.org"), "{shown}");
}

/// REM-16: signing is for HTTP artifacts; with a `grpc://` URL it is a configuration error at
/// its key.
#[test]
fn signature_key_env_with_a_grpc_url_is_refused_at_its_key() {
    let text =
        "[workspace]\n[workspace.remote-cache]\nurl = \"grpc://c:1\"\nsignature-key-env = \"K\"\n";
    assert_eq!(
        root_errors(text),
        "vx.toml:4:1: `signature-key-env` signs HTTP artifacts; a `grpc://` remote cache cannot use it\n"
    );
}

/// REM-2: an HTTP remote cache names its team; the error points at the table.
#[test]
fn an_http_remote_cache_without_a_team_is_refused_at_its_table() {
    let text = "[workspace]\n[workspace.remote-cache]\nurl = \"https://cache.example.com\"\n";
    assert_eq!(
        root_errors(text),
        "vx.toml:2:1: `remote-cache` with an HTTP `url` needs `team` or `team-id`\n"
    );
}
