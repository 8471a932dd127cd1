use super::*;

#[test]
fn variables_named_in_a_command() {
    assert_eq!(
        variables(
            "NODE_ENV=production vite build --base $BASE_URL ${API}/x $npm_package_name $HOME $1"
        ),
        ["API", "BASE_URL"]
    );
}

/// A workspace of two projects under a temporary root.
struct Ws {
    root: PathBuf,
}

impl Ws {
    fn new(name: &str, files: &[&str]) -> Ws {
        let root = std::env::temp_dir().join(format!("vx-learn-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for file in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        Ws { root }
    }
    fn read(&self, p: &str) -> (AccessKind, PathBuf) {
        (AccessKind::Read, self.root.join(p))
    }
    fn write(&self, p: &str) -> (AccessKind, PathBuf) {
        (AccessKind::Write, self.root.join(p))
    }
}

impl Drop for Ws {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn subject(dir: &str, command: &str) -> Subject {
    Subject {
        id: format!("{}#build", if dir.is_empty() { "//" } else { "a" }),
        dir: dir.into(),
        command: command.into(),
        projects: vec!["".into(), "packages/a".into(), "packages/b".into()],
    }
}

fn run(ws: &Ws, subject: &Subject, accesses: &[(AccessKind, PathBuf)]) -> Result<Proposal, String> {
    run_with(
        ws,
        subject,
        accesses,
        &BTreeMap::new(),
        &BTreeSet::new(),
        &|_| false,
        &|_| false,
    )
}

fn run_with(
    ws: &Ws,
    subject: &Subject,
    accesses: &[(AccessKind, PathBuf)],
    writers: &BTreeMap<String, String>,
    upstream: &BTreeSet<String>,
    ignored: &dyn Fn(&str) -> bool,
    tracked: &dyn Fn(&str) -> bool,
) -> Result<Proposal, String> {
    let cx = Context {
        root: &ws.root,
        writers,
        upstream,
        ignored,
        tracked,
        home: Some(Path::new("/home/u")),
    };
    propose(&cx, subject, accesses)
}

const FILES: [&str; 10] = [
    "packages/a/src/lib/x.ts",
    "packages/a/tsconfig.json",
    "packages/a/dist/x.js",
    "packages/a/dist/x.d.ts",
    "packages/b/src/y.ts",
    "packages/b/dist/y.js",
    "scripts/gen.js",
    "tsconfig.base.json",
    "pnpm-lock.yaml",
    "packages/a/.env",
];

#[test]
fn reads_and_writes_become_globs_at_the_coarsest_level_that_names_nothing_else() {
    let ws = Ws::new("globs", &FILES);
    let s = subject("packages/a", "tsc && node ../../scripts/gen.js $TARGET");
    let accesses = vec![
        ws.read("packages/a/src/lib/x.ts"),
        ws.read("packages/a/tsconfig.json"),
        ws.read("packages/a/../../tsconfig.base.json"),
        ws.read("scripts/gen.js"),
        ws.read("pnpm-lock.yaml"),
        ws.read("node_modules/typescript/lib/tsc.js"),
        (AccessKind::Read, PathBuf::from("/usr/lib/libc.so.6")),
        ws.read("packages/a/src/missing.ts"),
        ws.read("packages/b/src/y.ts"),
        ws.write("packages/a/dist/x.js"),
        ws.write("packages/a/dist/x.d.ts"),
        ws.read("packages/a/dist/x.js"),
        (AccessKind::Write, PathBuf::from("/tmp/tsc-xyz")),
        (AccessKind::Write, PathBuf::from("/home/u/.cache/tool/x")),
        ws.write("node_modules/.cache/babel/x"),
    ];
    assert_eq!(
        run(&ws, &s, &accesses).unwrap(),
        Proposal {
            inputs: vec!["src/**".into(), "tsconfig.json".into()],
            workspace_inputs: vec![
                "packages/b/src/**".into(),
                "scripts/**".into(),
                "tsconfig.base.json".into()
            ],
            outputs: vec!["dist/**".into()],
            env: vec!["TARGET".into()],
        }
    );
    // A listing of the project is every file in it but the outputs; of a directory, that
    // directory whole.
    let mut listing = accesses.clone();
    listing.push(ws.read("packages/a"));
    assert_eq!(run(&ws, &s, &listing).unwrap().inputs, ["**", "!dist/**"]);
    let listing = vec![
        ws.read("packages/a/src/lib"),
        ws.write("packages/a/dist/x.js"),
    ];
    assert_eq!(run(&ws, &s, &listing).unwrap().inputs, ["src/**"]);
}

#[test]
fn a_write_beside_sources_is_an_output_by_name_and_never_a_source_directory() {
    // tsc without an outDir writes x.js beside x.ts: `src/**` as an output would let vx clean
    // the sources.
    let ws = Ws::new("beside", &["packages/a/src/x.ts", "packages/a/src/x.js"]);
    let s = subject("packages/a", "tsc");
    let accesses = vec![
        ws.read("packages/a/src/x.ts"),
        ws.write("packages/a/src/x.js"),
    ];
    let got = run(&ws, &s, &accesses).unwrap();
    assert_eq!(got.outputs, ["src/x.js"]);
    assert_eq!(got.inputs, ["src/**"]);
    // A tracked file rewritten (`eslint --fix`, `prettier --write`): no cache.
    let fix = vec![
        ws.read("packages/a/src/x.ts"),
        ws.write("packages/a/src/x.ts"),
    ];
    let tracked = |p: &str| p.ends_with("x.ts");
    let none = |_: &str| false;
    let refused = run_with(
        &ws,
        &s,
        &fix,
        &BTreeMap::new(),
        &BTreeSet::new(),
        &none,
        &tracked,
    );
    assert_eq!(
        refused.unwrap_err(),
        "it rewrote packages/a/src/x.ts, which git tracks: vx cleans a task's outputs before it runs"
    );
}

#[test]
fn files_other_tasks_wrote_are_left_to_upstream_keys_only() {
    let ws = Ws::new("writers", &FILES);
    let s = subject("packages/a", "cat ../b/dist/y.js");
    let accesses = vec![ws.read("packages/b/dist/y.js")];
    let writers: BTreeMap<String, String> =
        [("packages/b/dist/y.js".to_string(), "b#build".to_string())].into();
    let none = |_: &str| false;
    let upstream: BTreeSet<String> = ["b#build".to_string()].into();
    let got = run_with(&ws, &s, &accesses, &writers, &upstream, &none, &none).unwrap();
    assert!(got.workspace_inputs.is_empty(), "{got:?}");
    let refused = run_with(&ws, &s, &accesses, &writers, &BTreeSet::new(), &none, &none);
    assert_eq!(
        refused.unwrap_err(),
        "it read packages/b/dist/y.js, which b#build wrote, and it does not depend on b#build"
    );
}

#[test]
fn ignored_files_and_files_looked_for_are_named_exactly() {
    let ws = Ws::new("literals", &FILES);
    let s = subject("packages/a", "vite build");
    let accesses = vec![
        ws.read("packages/a/.env"),
        ws.read("packages/a/.babelrc"),
        ws.read("packages/a/src/lib/x.ts"),
        ws.read("packages/a/src/lib/x.tsx"),
        ws.read(".browserslistrc"),
    ];
    let ignored = |p: &str| p.ends_with(".env");
    let none = |_: &str| false;
    let got = run_with(
        &ws,
        &s,
        &accesses,
        &BTreeMap::new(),
        &BTreeSet::new(),
        &ignored,
        &none,
    )
    .unwrap();
    assert_eq!(got.inputs, [".babelrc", ".env", "src/**"]);
    assert_eq!(got.workspace_inputs, [".browserslistrc"]);
}

#[test]
fn the_root_project_leaves_the_members_files_to_them() {
    let ws = Ws::new("root", &FILES);
    let s = subject("", "eslint .");
    let got = run(
        &ws,
        &s,
        &[
            ws.read("packages/b/src/y.ts"),
            ws.read("tsconfig.base.json"),
        ],
    )
    .unwrap();
    assert_eq!(got.inputs, ["tsconfig.base.json"]);
    assert_eq!(got.workspace_inputs, ["packages/b/src/**"]);
    let wrote = run(&ws, &s, &[ws.write("packages/b/dist/y.js")]);
    assert_eq!(
        wrote.unwrap_err(),
        "it wrote packages/b/dist/y.js, outside its project"
    );
}

#[test]
fn what_no_key_can_see_keeps_the_task_uncached() {
    let ws = Ws::new("closed", &FILES);
    let s = subject("packages/a", "x");
    let cases: Vec<((AccessKind, PathBuf), &str)> = vec![
        (
            ws.write("packages/b/src/y.ts"),
            "it wrote packages/b/src/y.ts, outside its project",
        ),
        (
            ws.write("node_modules/.prisma/client/index.js"),
            "it wrote node_modules/.prisma/client/index.js, in node_modules: a hit would not bring it back",
        ),
        (
            ws.read(".git/HEAD"),
            "it read .git/HEAD: its output may depend on the commit",
        ),
        (
            (AccessKind::Write, PathBuf::from("/home/u/.config/app/x")),
            "it wrote /home/u/.config/app/x, outside the workspace",
        ),
        (
            ws.read("packages"),
            "it listed packages, which holds another project: a new file there is no input vx can name",
        ),
        (
            (AccessKind::Net, PathBuf::from("93.184.216.34:443")),
            "it connected to 93.184.216.34:443: what it fetched is no input vx can see",
        ),
    ];
    for (access, why) in cases {
        assert_eq!(run(&ws, &s, &[access]).unwrap_err(), why);
    }
}
