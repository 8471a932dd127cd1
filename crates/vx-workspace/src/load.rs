//! Loading the workspace whose root was found: the root's files, the member directories,
//! each project's `vx.toml` and `package.json`, names (DISC-3, DISC-4), the tasks with the
//! workspace templates laid under them (CFG-13), edges (DISC-5), and finally the checks over
//! every cached task's outputs (GRAPH-8, GRAPH-9).
//!
//! Every problem in every file is collected before anything is returned (CFG-10): a file with
//! errors still contributes what could be read, so later checks (names, edges) see the whole
//! workspace and report their own problems too.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;

use vx_core::config::{ProjectConfig, TaskConfig, WorkspaceConfig, CONFIG_FILE};
use vx_core::{Diagnostic, Diagnostics, Location, Project, Spanned, Workspace, ROOT_PROJECT};

use crate::disk;
use crate::edges::{resolve_edges, EdgeSource};
use crate::manifest::{parse_manifest, Manifest};
use crate::members::MemberGlobs;
use crate::pnpm::pnpm_packages;
use crate::source::invalid_utf8;
use crate::templates::{resolve_tasks, ProjectTasks, Templates};
use crate::toml_config::{load_config, project_name_problem, LoadedConfig};
use crate::LoadError;

/// A directory's two files, as far as they could be read.
struct Files {
    dir: String,
    config: Option<LoadedConfig>,
    manifest: Option<Manifest>,
    has_package_json: bool,
}

/// A project before edges: its files and its resolved name.
struct Named {
    name: String,
    files: Files,
}

/// What a full load and a frozen one both read: the root's files and settings, and the member
/// directories the globs expand to (with what the expansion looked at).
pub(crate) struct Rooted {
    root_files: Files,
    pub(crate) settings: WorkspaceConfig,
    template_facts: BTreeMap<String, crate::task_config::TaskFacts>,
    /// In expansion order.
    pub(crate) dirs: Vec<String>,
    pub(crate) discovered_from: Vec<String>,
    /// Member globs that match no directory.
    pub(crate) warnings: Vec<Diagnostic>,
}

/// `vx.toml` and `package.json` texts by root-relative path, read instead of the files there
/// (what `vx init` would write, checked before it writes anything; what an editor holds unsaved,
/// for `vx lsp`).
pub(crate) type Planned<'a> = Option<&'a BTreeMap<String, String>>;

/// A `package.json` as parsed, or its problems.
type ParsedManifest = Result<Manifest, Vec<Diagnostic>>;

/// Files parsed by earlier loads, by root-relative path, each with the text it was parsed
/// from: `vx lsp` loads the workspace again after every edit, and a file whose text did not
/// change is not parsed again (what its parse gave, problems included, is cloned).
#[derive(Default)]
pub struct Parsed {
    configs: Mutex<HashMap<String, (String, LoadedConfig)>>,
    manifests: Mutex<HashMap<String, (String, ParsedManifest)>>,
    parses: std::sync::atomic::AtomicUsize,
}

impl Parsed {
    /// How many files were parsed through this memo (not served from it).
    pub fn parses(&self) -> usize {
        self.parses.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn config(&self, rel: &str, text: String, is_root: bool) -> LoadedConfig {
        if let Some((seen, loaded)) = lock(&self.configs).get(rel) {
            if *seen == text {
                return loaded.clone();
            }
        }
        // Parsed outside the lock: the members are read on several threads.
        let loaded = load_config(&text, rel, is_root);
        self.parses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.configs).insert(rel.to_string(), (text, loaded.clone()));
        loaded
    }

    fn manifest(&self, rel: &str, text: String) -> Result<Manifest, Vec<Diagnostic>> {
        if let Some((seen, parsed)) = lock(&self.manifests).get(rel) {
            if *seen == text {
                return parsed.clone();
            }
        }
        let parsed = parse_manifest(&text, rel);
        self.parses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.manifests).insert(rel.to_string(), (text, parsed.clone()));
        parsed
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn read_root(
    root: &Path,
    planned: Planned<'_>,
    parsed: Option<&Parsed>,
    errors: &mut Vec<Diagnostic>,
) -> Result<Rooted, LoadError> {
    let root_files = read_files(root, "", true, planned, parsed, errors)?;
    let settings = root_files
        .config
        .as_ref()
        .and_then(|c| c.config.workspace.clone())
        .unwrap_or_default();
    let template_facts = root_files
        .config
        .as_ref()
        .map(|c| c.template_facts.clone())
        .unwrap_or_default();

    let globs = match &settings.members {
        // Problems with these were reported while walking the root `vx.toml`.
        Some(members) => MemberGlobs::new(members, &mut Vec::new()),
        None => MemberGlobs::new(&package_manager_globs(root, &root_files, errors)?, errors),
    };
    let mut warnings = Vec::new();
    let (dirs, discovered_from) = globs.expand_seeing(root, errors, &mut warnings)?;
    Ok(Rooted {
        root_files,
        settings,
        template_facts,
        dirs,
        discovered_from,
        warnings,
    })
}

pub(crate) fn load_workspace(
    root: &Path,
    planned: Planned<'_>,
    parsed: Option<&Parsed>,
) -> Result<Workspace, LoadError> {
    let mut errors = Vec::new();
    let Rooted {
        root_files,
        settings,
        template_facts,
        dirs,
        discovered_from,
        warnings,
    } = read_root(root, planned, parsed, &mut errors)?;
    // Read and parsed on several threads (most of a warm run's loading); the results, their
    // problems and the first hard error are taken in member order, as one thread would.
    let mut named = Vec::with_capacity(dirs.len() + 1);
    let read = crate::par::map(&dirs, |dir| {
        let mut problems = Vec::new();
        let files = read_files(&root.join(dir), dir, false, planned, parsed, &mut problems);
        (files, problems)
    });
    for (files, mut problems) in read {
        errors.append(&mut problems);
        let files = files?;
        if files.config.is_some() || files.has_package_json {
            named.push(name_project(files, &mut errors));
        }
    }
    if root_files
        .config
        .as_ref()
        .is_some_and(|c| c.has_tasks_table)
    {
        named.push(Named {
            name: ROOT_PROJECT.to_string(),
            files: root_files,
        });
    }
    let mut named = drop_duplicates(named, &mut errors);
    let templates = Templates {
        tasks: &settings.tasks,
        facts: &template_facts,
        input_sets: &settings.input_sets,
    };
    let tasks: Vec<BTreeMap<String, Box<TaskConfig>>> = named
        .iter_mut()
        .map(|p| project_tasks(p, templates, &mut errors))
        .collect();

    let sources: Vec<EdgeSource> = named
        .iter()
        .map(|p| {
            let manifest = p.files.manifest.as_ref();
            let config = p.files.config.as_ref().map(|c| &c.config.project);
            EdgeSource {
                name: &p.name,
                dir: &p.files.dir,
                manifest_path: file_path(&p.files.dir, "package.json"),
                package_name: manifest
                    .and_then(|m| m.name.as_ref())
                    .map(|n| n.value.as_str()),
                version: manifest.and_then(|m| m.version.as_deref()),
                dependencies: manifest
                    .map(|m| m.dependencies.as_slice())
                    .unwrap_or_default(),
                deps: config.map(|c| c.deps.as_slice()).unwrap_or_default(),
            }
        })
        .collect();
    let edges = resolve_edges(&sources, &mut errors);

    if !errors.is_empty() {
        return Err(LoadError::Config(Diagnostics(errors).into_sorted()));
    }
    let outside_all = OutsideAll::new(&settings);
    let projects: Vec<Project> = named
        .into_iter()
        .zip(edges)
        .zip(tasks)
        .map(|((p, deps), tasks)| Project {
            outside_all: outside_all.claims(&p.files.dir),
            name: p.name,
            dir: p.files.dir,
            version: p.files.manifest.as_ref().and_then(|m| m.version.clone()),
            has_vx_toml: p.files.config.is_some(),
            has_package_json: p.files.has_package_json,
            config: ProjectConfig {
                tasks,
                ..p.files.config.map(|c| c.config.project).unwrap_or_default()
            },
            deps,
        })
        .collect();
    finish(root, settings, projects, discovered_from, warnings)
}

/// `[workspace] exclude-from-all`: which project directories `--all` leaves out.
pub(crate) struct OutsideAll(Option<MemberGlobs>);

impl OutsideAll {
    pub(crate) fn new(settings: &WorkspaceConfig) -> OutsideAll {
        OutsideAll(
            (!settings.exclude_from_all.is_empty())
                .then(|| MemberGlobs::new(&settings.exclude_from_all, &mut Vec::new())),
        )
    }

    pub(crate) fn claims(&self, dir: &str) -> bool {
        !dir.is_empty() && self.0.as_ref().is_some_and(|g| g.claims(dir))
    }
}

/// The workspace from its projects, sorted by name, once the declared outputs of every cached
/// task pass their checks (GRAPH-8, GRAPH-9), which read git's ignore rules.
pub(crate) fn finish(
    root: &Path,
    settings: WorkspaceConfig,
    mut projects: Vec<Project>,
    discovered_from: Vec<String>,
    warnings: Vec<Diagnostic>,
) -> Result<Workspace, LoadError> {
    projects.sort_by(|a, b| a.name.cmp(&b.name));
    // Collected in place from the loader's larger per-project records, the vector keeps their
    // capacity (10.8 MB at 10,000 projects) for the whole run unless shrunk.
    projects.shrink_to_fit();
    let by_name = projects
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let workspace = Workspace {
        root: root.to_path_buf(),
        settings,
        projects,
        by_name,
        discovered_from,
        warnings,
    };
    // Git's ignore rules are read only when a check needs them.
    let rules = std::cell::OnceCell::new();
    let is_ignored = |dir: &str| {
        rules
            .get_or_init(|| crate::tree::IgnoreRules::new(root))
            .is_ignored(dir, true)
    };
    let problems = vx_core::outputs::check_outputs(&workspace, &is_ignored);
    if !problems.is_empty() {
        return Err(LoadError::Config(problems));
    }
    Ok(workspace)
}

/// The project's tasks with the workspace templates laid under them, each checked (CFG-13,
/// CFG-9); its declared tasks are taken out of `project`.
fn project_tasks(
    project: &mut Named,
    templates: Templates<'_>,
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Box<TaskConfig>> {
    let no_facts = BTreeMap::new();
    let (tasks, facts) = match project.files.config.as_mut() {
        Some(c) => (std::mem::take(&mut c.config.project.tasks), &c.task_facts),
        None => (BTreeMap::new(), &no_facts),
    };
    let tasks = ProjectTasks {
        name: &project.name,
        dir: &project.files.dir,
        is_root: project.name == ROOT_PROJECT,
        tasks,
        facts,
        scripts: project.files.manifest.as_ref().map(|m| &m.scripts),
    };
    resolve_tasks(tasks, templates, errors)
}

fn file_path(dir: &str, file: &str) -> String {
    if dir.is_empty() {
        file.to_string()
    } else {
        format!("{dir}/{file}")
    }
}

/// Reads a file that must be UTF-8 (CFG-1); a file that is not is reported and skipped.
fn read_text(
    path: &Path,
    rel: &str,
    errors: &mut Vec<Diagnostic>,
) -> Result<Option<String>, LoadError> {
    let Some(bytes) = disk::read(path)? else {
        // A directory where a configuration file belongs is named, never taken for nothing
        // (the project would vanish, and `vx run` would say `unknown project`).
        if path.is_dir() {
            errors.push(
                Diagnostic::at(
                    Location::new(rel, 1, 1),
                    format!("`{rel}` is a directory, not a file"),
                )
                .hint(
                    "vx reads its configuration from a file here; rename or remove the directory",
                ),
            );
        }
        return Ok(None);
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(text)),
        Err(e) => {
            let at = invalid_utf8(rel, e.as_bytes(), &e.utf8_error());
            errors.push(Diagnostic::at(at, format!("`{rel}` is not valid UTF-8")));
            Ok(Some(String::new()))
        }
    }
}

fn read_files(
    abs: &Path,
    dir: &str,
    is_root: bool,
    planned: Planned<'_>,
    parsed: Option<&Parsed>,
    errors: &mut Vec<Diagnostic>,
) -> Result<Files, LoadError> {
    let config_rel = file_path(dir, CONFIG_FILE);
    let text = match planned.and_then(|p| p.get(&config_rel)) {
        Some(text) => Some(text.clone()),
        None => read_text(&abs.join(CONFIG_FILE), &config_rel, errors)?,
    };
    let config = text.map(|text| {
        let mut loaded = match parsed {
            Some(parsed) => parsed.config(&config_rel, text, is_root),
            None => load_config(&text, &config_rel, is_root),
        };
        errors.append(&mut loaded.errors);
        loaded
    });
    let manifest_rel = file_path(dir, "package.json");
    let manifest_text = match planned.and_then(|p| p.get(&manifest_rel)) {
        Some(text) => Some(text.clone()),
        None => read_text(&abs.join("package.json"), &manifest_rel, errors)?,
    };
    let has_package_json = manifest_text.is_some();
    let manifest = manifest_text.map(|text| match parsed {
        Some(parsed) => parsed.manifest(&manifest_rel, text),
        None => parse_manifest(&text, &manifest_rel),
    });
    let manifest = manifest.and_then(|parsed| match parsed {
        Ok(manifest) => Some(manifest),
        Err(mut problems) => {
            errors.append(&mut problems);
            None
        }
    });
    Ok(Files {
        dir: dir.to_string(),
        config,
        manifest,
        has_package_json,
    })
}

/// Member globs when `[workspace] members` is absent: `pnpm-workspace.yaml` `packages`, else
/// the root `package.json` `workspaces` (DISC-2).
fn package_manager_globs(
    root: &Path,
    root_files: &Files,
    errors: &mut Vec<Diagnostic>,
) -> Result<Vec<Spanned<String>>, LoadError> {
    let pnpm = "pnpm-workspace.yaml";
    if let Some(text) = read_text(&root.join(pnpm), pnpm, errors)? {
        return Ok(pnpm_packages(&text, pnpm).unwrap_or_else(|problem| {
            errors.push(problem);
            Vec::new()
        }));
    }
    Ok(root_files
        .manifest
        .as_ref()
        .and_then(|m| m.workspaces.clone())
        .unwrap_or_default())
}

/// DISC-4: `package.json` `name`, else `vx.toml` `name`, else the directory.
fn name_project(files: Files, errors: &mut Vec<Diagnostic>) -> Named {
    let package_name = files.manifest.as_ref().and_then(|m| m.name.clone());
    let config_name = files
        .config
        .as_ref()
        .and_then(|c| c.config.project.name.clone());
    if let Some(package_name) = &package_name {
        if let Some(problem) = project_name_problem(&package_name.value) {
            errors.push(Diagnostic::at(package_name.at.clone(), problem));
        }
    }
    if let (Some(package_name), Some(config_name)) = (&package_name, &config_name) {
        if package_name.value != config_name.value {
            errors.push(Diagnostic::at(
                config_name.at.clone(),
                format!(
                    "name `{}` disagrees with package.json name `{}`; remove one",
                    config_name.value, package_name.value
                ),
            ));
        }
    }
    let name = match package_name.or(config_name) {
        Some(name) => name.value,
        None => {
            if let Some(problem) = project_name_problem(&files.dir) {
                errors.push(Diagnostic::new(format!(
                    "{problem}; the project in `{}` is named after its directory: set `name` in its `vx.toml`",
                    files.dir
                )));
            }
            files.dir.clone()
        }
    };
    Named { name, files }
}

/// DISC-4: two projects with one name are an error; the later one is left out.
fn drop_duplicates(named: Vec<Named>, errors: &mut Vec<Diagnostic>) -> Vec<Named> {
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    let mut kept = Vec::with_capacity(named.len());
    for project in named {
        if let Some(dir) = first.get(&project.name) {
            let message = format!(
                "two projects are named `{}`: {} and {}",
                project.name,
                shown(dir),
                shown(&project.files.dir)
            );
            errors.push(match name_location(&project) {
                Some(at) => Diagnostic::at(at, message),
                None => Diagnostic::new(message),
            });
            continue;
        }
        first.insert(project.name.clone(), project.files.dir.clone());
        kept.push(project);
    }
    kept
}

fn shown(dir: &str) -> &str {
    if dir.is_empty() {
        "the workspace root"
    } else {
        dir
    }
}

/// Where a project's name was written, if it was.
fn name_location(project: &Named) -> Option<Location> {
    let files = &project.files;
    files
        .manifest
        .as_ref()
        .and_then(|m| m.name.as_ref())
        .or_else(|| {
            files
                .config
                .as_ref()
                .and_then(|c| c.config.project.name.as_ref())
        })
        .map(|n| n.at.clone())
}
