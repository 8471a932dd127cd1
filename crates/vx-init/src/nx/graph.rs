//! The projects and targets the repository's own Nx resolves: targets its
//! plugins infer (`@nx/vite`, `@nx/jest`, `@nx/eslint`, `@nx/js/typescript`, …) exist in no
//! file `vx init` reads, so when Nx is installed in the repository, `nx graph --file` is asked
//! for them, with each target's command, inputs, outputs and `dependsOn` as Nx resolved them.
//! Projects Nx knows outside the package-manager members (an "integrated" repository's
//! `apps/*` and `libs/*` with a `project.json`) come from the same graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use vx_workspace::{JsonValue, PackageJson};

/// One project of the graph.
#[derive(Debug, Clone)]
pub struct GraphProject {
    pub name: String,
    /// Root-relative directory ("" for the workspace root).
    pub root: String,
    /// Target name → its configuration as Nx resolved it.
    pub targets: BTreeMap<String, JsonValue>,
    /// The projects this one depends on (by Nx name), from imports, `implicitDependencies`
    /// and manifests alike.
    pub deps: Vec<String>,
}

/// What `nx graph` said, with the Nx version that said it.
#[derive(Debug, Clone)]
pub struct NxGraph {
    pub version: String,
    pub projects: Vec<GraphProject>,
}

/// The repository's installed Nx: its entry point (the package's `bin.nx`: `bin/nx.js`
/// up to Nx 22.6, `dist/bin/nx.js` after) and its version.
pub fn nx_entry(root: &Path) -> Option<(std::path::PathBuf, String)> {
    let package = root.join("node_modules/nx");
    let text = std::fs::read_to_string(package.join("package.json")).ok()?;
    let json = vx_workspace::read_jsonc(&text, "node_modules/nx/package.json").ok()?;
    let version = json
        .get("version")
        .and_then(JsonValue::as_str)
        .unwrap_or("?")
        .to_string();
    let bin = json.get("bin").and_then(|bin| match bin.as_str() {
        Some(path) => Some(path.to_string()),
        None => bin.get("nx").and_then(JsonValue::as_str).map(String::from),
    });
    let entry = package.join(bin.as_deref().unwrap_or("bin/nx.js"));
    entry.is_file().then_some((entry, version))
}

/// `node <nx entry>` in `root`: no daemon, no cloud, no terminal UI, no prompt, and not in
/// CI mode (which changes what Nx prints).
pub fn nx_command(root: &Path, entry: &Path) -> Command {
    let mut command = Command::new("node");
    command
        .arg(entry)
        .current_dir(root)
        .env("NX_DAEMON", "false")
        .env("NX_NO_CLOUD", "true")
        .env("NX_TUI", "false")
        .env("NX_INTERACTIVE", "false")
        .env_remove("CI");
    command
}

/// How long `vx init` waits for a runner it asks (`nx graph`, `turbo run --dry=json`, its own
/// `vx run --dry=json`): `VX_INIT_TIMEOUT`, default 5 minutes.
const INIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// `command`'s output, as `Command::output`, but bounded: one that has not exited within
/// `VX_INIT_TIMEOUT` is killed with its whole process group, and the error says so. A hung
/// runner never hangs `vx init`.
pub fn output_within(command: &mut Command) -> std::io::Result<std::process::Output> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let within = std::env::var("VX_INIT_TIMEOUT")
        .ok()
        .and_then(|t| vx_core::units::parse_duration(&t))
        .unwrap_or(INIT_TIMEOUT);
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "it did not answer within {} (`VX_INIT_TIMEOUT`)",
                    vx_core::units::format_duration(within)
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Asks the repository's own Nx for its project graph. `Err` says why there is none (Nx not
/// installed, or it failed): the caller then infers what it can from the files.
pub fn read(root: &Path) -> Result<NxGraph, String> {
    let (entry, version) = nx_entry(root).ok_or("Nx is not installed (no node_modules/nx)")?;
    let dir = tempfile_dir()?;
    let file = dir.join("graph.json");
    let output = output_within(
        nx_command(root, &entry)
            .arg("graph")
            .arg(format!("--file={}", file.display())),
    );
    let result = match output {
        Err(e) => Err(format!("`node` could not run Nx: {e}")),
        Ok(out) if !out.status.success() => {
            let text = String::from_utf8_lossy(&out.stderr);
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(format!("`nx graph` failed: {}", last.trim()))
        }
        Ok(_) => fs_err::read_to_string(&file)
            .map_err(|e| format!("`nx graph` wrote no graph: {e}"))
            .and_then(|text| parse(&text, version)),
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Without Nx to ask: the directories holding a `project.json` (what Nx's own project
/// discovery starts from), root-relative and sorted, found by a walk that honours
/// `.gitignore` and never enters `node_modules`; the root itself is left out.
pub fn project_json_dirs(root: &Path) -> Vec<String> {
    let mut dirs = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .filter_entry(|e| e.file_name() != "node_modules")
        .build();
    for entry in walk.flatten() {
        if entry.file_name() != "project.json" || !entry.path().is_file() {
            continue;
        }
        let Some(dir) = entry
            .path()
            .parent()
            .and_then(|d| d.strip_prefix(root).ok())
        else {
            continue;
        };
        let dir = dir.to_string_lossy().replace('\\', "/");
        if !dir.is_empty() {
            dirs.push(dir);
        }
    }
    dirs.sort();
    dirs
}

/// A fresh private directory for the graph file.
pub fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!(
        "vx-init-nx-{}-{}",
        std::process::id(),
        vx_engine::ids::random_hex(8)
    ));
    fs_err::create_dir(&dir).map_err(|e| format!("no temporary directory: {e}"))?;
    Ok(dir)
}

/// The projects of `nx graph --file` output.
fn parse(text: &str, version: String) -> Result<NxGraph, String> {
    let json = vx_workspace::read_jsonc(text, "nx graph")
        .map_err(|d| format!("`nx graph` wrote what vx cannot read: {}", d.message))?;
    let nodes = json
        .get("graph")
        .and_then(|g| g.get("nodes"))
        .ok_or("`nx graph` wrote no `graph.nodes`")?;
    let mut projects = Vec::new();
    for (name, node) in nodes.entries() {
        let Some(data) = node.get("data") else {
            continue;
        };
        let root = data
            .get("root")
            .and_then(JsonValue::as_str)
            .unwrap_or_default();
        let root = match root.trim_end_matches('/') {
            "." => "",
            other => other,
        };
        let targets = data
            .get("targets")
            .map(JsonValue::entries)
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| (k.value.clone(), v.clone()))
            .collect();
        projects.push(GraphProject {
            name: name.value.clone(),
            root: root.to_string(),
            targets,
            deps: Vec::new(),
        });
    }
    let edges = json.get("graph").and_then(|g| g.get("dependencies"));
    for project in &mut projects {
        let list = edges.and_then(|e| e.get(&project.name));
        for edge in list.and_then(JsonValue::as_array).unwrap_or_default() {
            let target = edge.get("target").and_then(JsonValue::as_str);
            if let Some(target) = target.filter(|t| nodes.get(t).is_some()) {
                if target != project.name && !project.deps.iter().any(|d| d == target) {
                    project.deps.push(target.to_string());
                }
            }
        }
        project.deps.sort();
    }
    projects.sort_by(|a, b| a.root.cmp(&b.root));
    Ok(NxGraph { version, projects })
}

/// The vx name of the project Nx calls `name`: the package name of the member whose Nx
/// name (`project.json` or `package.json` `nx.name`) it is, or a package of that name.
pub fn vx_name_of(nx: &super::Nx, name: &str, members: &[(String, PackageJson)]) -> Option<String> {
    let by_nx_name = nx
        .projects
        .iter()
        .find(|(_, p)| p.name.as_ref().is_some_and(|(n, _)| n == name))
        .map(|(dir, p)| {
            let package = members.iter().find(|(d, _)| d == dir);
            package
                .and_then(|(_, m)| m.name.clone())
                .or_else(|| p.name.as_ref().map(|(n, _)| n.clone()))
                .unwrap_or_default()
        });
    by_nx_name.or_else(|| {
        members
            .iter()
            .any(|(_, m)| m.name.as_deref() == Some(name))
            .then(|| name.to_string())
    })
}

/// For a project outside the package-manager members: its scripts that are not targets
/// of the graph leave the mapping (Nx 22 makes targets of the scripts of workspace members
/// only), said in one line.
pub fn graph_targets_only(
    graph: &NxGraph,
    dir: &str,
    mapping: &mut crate::scripts::Mapping,
) -> Option<(Vec<String>, super::super::turbo::NotCarried)> {
    let project = graph.projects.iter().find(|p| p.root == dir)?;
    let mut dropped = Vec::new();
    mapping.tasks.retain(|task| {
        let keep = project.targets.contains_key(&task.name);
        if !keep {
            dropped.push(task.name.clone());
        }
        keep
    });
    let note = super::super::turbo::NotCarried {
        what: format!("{dir}/package.json: scripts {}", dropped.join(", ")),
        at: vx_core::Location::new(format!("{dir}/package.json"), 1, 1),
        why: "the project is outside the package-manager workspaces, and Nx's graph gives it no \
              target of these names: not tasks"
            .to_string(),
    };
    (!dropped.is_empty()).then_some((dropped, note))
}

/// For each script [`graph_targets_only`] left out that a template would make a task all the
/// same (templates apply to every script of their name): a table saying `extends = false`
/// and nothing else, so the project has no such task, as under Nx.
pub fn opt_outs(dropped: &[String], templates: &BTreeSet<String>) -> Vec<crate::toml::Table> {
    dropped
        .iter()
        .filter(|name| templates.contains(*name))
        .map(|name| crate::toml::Table {
            name: name.clone(),
            no_template: true,
            comments: vec![
                "Nx makes no target of this script here: no task, though the template would give one."
                    .to_string(),
            ],
            ..Default::default()
        })
        .collect()
}

/// The vx names of the projects the Nx project at `dir` depends on: a dependency's
/// `package.json` name where it has one, else its Nx name (which its vx.toml then gives).
pub fn graph_deps(graph: &NxGraph, dir: &str, members: &[(String, PackageJson)]) -> Vec<String> {
    let Some(project) = graph.projects.iter().find(|p| p.root == dir) else {
        return Vec::new();
    };
    let mut deps: Vec<String> = project
        .deps
        .iter()
        .filter_map(|name| {
            let dep = graph.projects.iter().find(|p| p.name == *name)?;
            let manifest = members.iter().find(|(d, _)| *d == dep.root);
            // The root project is no member: no edge to it.
            if dep.root.is_empty() {
                return None;
            }
            Some(
                manifest
                    .and_then(|(_, p)| p.name.clone())
                    .unwrap_or_else(|| dep.name.clone()),
            )
        })
        .collect();
    deps.sort();
    deps.dedup();
    deps
}

impl super::Nx {
    /// Adds the targets of `graph` that no file `vx init` reads defines — those Nx plugins
    /// infer — to the projects read, as targets of their own (with what Nx resolved for them),
    /// and the graph's project names. `has_script(dir, name)`: a `package.json` script, which
    /// `vx init` maps itself. Returns how many targets were added.
    pub fn add_graph(&mut self, graph: &NxGraph, has_script: &dyn Fn(&str, &str) -> bool) -> usize {
        let mut added = 0;
        for project in &graph.projects {
            self.project_names.insert(project.name.clone());
            let Some(own) = self.projects.get_mut(&project.root) else {
                continue;
            };
            if own.name.is_none() {
                own.name = Some((project.name.clone(), vx_core::Location::default()));
            }
            for (name, def) in &project.targets {
                if own.targets.contains_key(name) || has_script(&project.root, name) {
                    continue;
                }
                own.targets.insert(name.clone(), def.clone());
                added += 1;
            }
        }
        self.not_carried.retain(|n| n.what != "plugins");
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_gives_roots_and_targets() {
        let text = r#"{"graph": {"nodes": {
            "web": {"name": "web", "type": "app", "data": {"root": "apps/web",
                "targets": {"build": {"executor": "nx:run-commands",
                                      "options": {"command": "vite build", "cwd": "apps/web"}}}}},
            "ws": {"name": "ws", "type": "lib", "data": {"root": ".", "targets": {}}}},
            "dependencies": {"web": [{"source": "web", "target": "ws", "type": "implicit"},
                                     {"source": "web", "target": "npm:vite", "type": "static"}]}}}"#;
        let graph = parse(text, "21.6.11".into()).unwrap();
        assert_eq!(graph.projects.len(), 2);
        assert_eq!(graph.projects[0].root, "");
        assert_eq!(graph.projects[1].root, "apps/web");
        let build = &graph.projects[1].targets["build"];
        assert_eq!(
            build
                .get("options")
                .and_then(|o| o.get("command"))
                .and_then(JsonValue::as_str),
            Some("vite build")
        );
        assert_eq!(graph.projects[1].deps, ["ws"]);
        assert!(parse("{}", "x".into()).is_err());
    }
}
