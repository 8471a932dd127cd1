//! The fuzz workspace's files (the layout is in `mod.rs`'s header).

use vx_test_support::fixture::Fixture;

use super::PROJECTS;

/// Writes and commits the workspace.
pub(super) fn write(f: &Fixture) {
    f.write(".gitignore", "out/\n.vx/\n*.log\nlocal.env\n");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write("shared/a.txt", "shared\n");
    for (name, deps) in PROJECTS {
        let dir = format!("packages/{name}");
        let deps: Vec<String> = deps
            .iter()
            .map(|d| format!("\"{d}\": \"workspace:*\""))
            .collect();
        f.write(
            &format!("{dir}/package.json"),
            &format!(
                "{{ \"name\": \"{name}\", \"version\": \"1.0.0\", \"dependencies\": {{ {} }} }}\n",
                deps.join(", ")
            ),
        );
        let literal = if name == "p0" { ", \"local.env\"" } else { "" };
        let mut config = format!(
            concat!(
                "[tasks.build]\n",
                "command = \"mkdir -p out && (LC_ALL=C ls -R src > out/list.txt 2>&1 || true) && od -An -N8 -tu8 /dev/urandom > out/list.txt.map\"\n",
                "depends-on = [\"^build\"]\n",
                "cache = {{ inputs = [\"src/**\"{literal}], outputs = [\"out/**\"], dependants-read = [\"out/**\", \"!**/*.map\"] }}\n\n",
                "[tasks.lint]\ncommand = \"true\"\n\n",
                "[tasks.test]\ncommand = \"true\"\ndepends-on = [\"build\", \"lint\"]\n",
                "cache = {{ inputs = [\"test/**\"], outputs = [] }}\n",
            ),
            literal = literal
        );
        if name == "p4" {
            config.push_str(concat!(
                "\n[tasks.bundle]\ncommand = \"true\"\n",
                "cache = { inputs = [], workspace-inputs = [\"shared/**\"], outputs = [] }\n",
            ));
        }
        f.write(&format!("{dir}/vx.toml"), &config);
        f.write(&format!("{dir}/README.md"), &format!("# {name}\n"));
        f.write(&format!("{dir}/src/a.txt"), "a\n");
        f.write(&format!("{dir}/src/b.txt"), "bb\n");
        f.write(&format!("{dir}/src/sub/c.txt"), "ccc\n");
        f.write(&format!("{dir}/test/t.txt"), "t\n");
    }
    f.commit();
}
