//! What `turbo.json` and Nx give the packages: the templates, the names they define, and
//! each package's own tables for those names.

use std::collections::{BTreeMap, BTreeSet};

use vx_workspace::PackageJson;

use super::nx::{self, Nx};
use super::scripts::{script_text, Context, Mapping, TodoReason};
use super::toml::{self, InputSetTable, Table};
use super::turbo::{self, NotCarried, Turbo};

/// What `turbo.json` gives every package: its templates and the names it defines.
pub(super) struct Carried {
    pub(super) templates: Vec<Table>,
    /// `[workspace.input-sets]` (from Nx's `namedInputs`).
    pub(super) input_sets: Vec<InputSetTable>,
    /// Every task name turbo.json defines for packages (generic, `pkg#name`, package files).
    pub(super) names: BTreeSet<String>,
    /// How many task definitions were carried over.
    pub(super) count: usize,
    pub(super) not_carried: Vec<NotCarried>,
    /// Turborepo's aggregate tasks ([`Turbo::aggregates`]): a group in each package, no
    /// template.
    pub(super) aggregates: BTreeSet<String>,
    /// (task, package directory): a generic definition whose globs leaving the package
    /// (`../x`) resolve there otherwise than in the template, so the package gets the whole
    /// definition as its own table.
    pub(super) apart: BTreeSet<(String, String)>,
}

impl Carried {
    pub(super) fn new(
        turbo: Option<&Turbo>,
        members: &[(String, PackageJson)],
        root_has: &dyn Fn(&str) -> bool,
    ) -> Carried {
        let mut carried = Carried {
            templates: Vec::new(),
            input_sets: Vec::new(),
            names: BTreeSet::new(),
            count: 0,
            not_carried: Vec::new(),
            aggregates: BTreeSet::new(),
            apart: BTreeSet::new(),
        };
        let Some(turbo) = turbo else {
            return carried;
        };
        carried.aggregates = turbo.aggregates(&|name| {
            members.iter().any(|(_, p)| p.scripts.contains_key(name)) || root_has(name)
        });
        let outputs = turbo.outputs_for("", None);
        for (name, def) in &turbo.generic {
            let place = format!("tasks.{name}");
            if carried.aggregates.contains(name) {
                carried.names.insert(name.clone());
                continue;
            }
            if let Some(problem) = vx_workspace::task_name_problem(name) {
                carried.not_carried.push(NotCarried {
                    what: place,
                    at: def.at.clone().unwrap_or_default(),
                    why: problem,
                });
                continue;
            }
            // The template holds the resolution most of its packages share; the others get
            // their own table.
            let mut groups: BTreeMap<Vec<Option<String>>, Vec<&str>> = BTreeMap::new();
            for (dir, _) in members.iter().filter(|(_, p)| p.scripts.contains_key(name)) {
                groups
                    .entry(Turbo::leaving_globs(def, dir))
                    .or_default()
                    .push(dir);
            }
            let chosen = groups.values().max_by_key(|dirs| dirs.len()).cloned();
            for dirs in groups.values().filter(|d| Some(*d) != chosen.as_ref()) {
                carried
                    .apart
                    .extend(dirs.iter().map(|d| (name.clone(), d.to_string())));
            }
            let target = turbo::Target {
                template: true,
                dir: chosen.as_ref().map(|dirs| dirs[0]),
                outputs: &outputs,
            };
            let (table, left) = turbo.table(name, def, target, &place);
            carried.not_carried.extend(left);
            carried.templates.push(table);
            carried.names.insert(name.clone());
        }
        let package_names = turbo
            .by_package
            .values()
            .chain(turbo.package_files.values())
            .flat_map(|tasks| tasks.keys())
            .filter(|name| vx_workspace::task_name_problem(name).is_none());
        carried.names.extend(package_names.cloned());
        carried.count = turbo.generic.len()
            + turbo.root.len()
            + turbo.by_package.values().map(BTreeMap::len).sum::<usize>()
            + turbo
                .package_files
                .values()
                .map(BTreeMap::len)
                .sum::<usize>();
        carried
    }
}

impl Carried {
    /// Nx's `targetDefaults` as templates, `namedInputs` as input sets, and every target
    /// name a project defines.
    pub(super) fn add_nx(&mut self, nx: &Nx) {
        let (sets, left) = nx.input_sets();
        self.input_sets = sets;
        self.not_carried.extend(left);
        for (name, def) in &nx.defaults {
            if let Some(problem) = vx_workspace::task_name_problem(name) {
                self.not_carried.push(NotCarried {
                    what: format!("targetDefaults.{name}"),
                    at: def.at.clone(),
                    why: problem,
                });
                continue;
            }
            let (table, left) = nx.template(name, def);
            self.not_carried.extend(left);
            self.templates.push(table);
            self.names.insert(name.clone());
        }
        let targets = nx.projects.values().flat_map(|p| p.targets.keys());
        self.names.extend(
            targets
                .filter(|name| vx_workspace::task_name_problem(name).is_none())
                .cloned(),
        );
        self.count +=
            nx.defaults.len() + nx.projects.values().map(|p| p.targets.len()).sum::<usize>();
    }
}

/// A project's tables for the names Nx defines (`targetDefaults` and its own targets): only
/// what differs from the template (a folded hook, the project's own target keys), or a whole
/// table where the project's target is all there is.
/// `...`: the template's entries, in a package's list over its template's.
pub(super) fn vx_splice() -> String {
    "...".to_string()
}

pub(super) fn nx_tables(
    nx: &Nx,
    carried: &Carried,
    dir: &str,
    package: &PackageJson,
    mapping: &Mapping,
    context: &Context,
    ignore: &vx_workspace::tree::IgnoreRules,
) -> (Vec<Table>, Vec<NotCarried>) {
    let mut tables = Vec::new();
    let mut left = Vec::new();
    let project = nx.projects.get(dir);
    let names: BTreeSet<String> = carried
        .names
        .iter()
        .filter(|n| {
            package.scripts.contains_key(*n) || project.is_some_and(|p| p.targets.contains_key(*n))
        })
        .cloned()
        .collect();
    let outputs = nx.project_outputs(dir, &names);
    let take_back = nx.outputs_to_take_back(dir, &names, &|path| ignore.is_ignored(path, true));
    for name in &names {
        let text = script_text(name, &package.scripts, context);
        let script = (!text.is_empty()).then_some(text.as_str());
        let own = project.and_then(|p| p.targets.get(name));
        let file = if own.is_some() && project.is_some_and(|p| p.name.is_some()) {
            format!("{dir}/project.json")
        } else {
            format!("{dir}/package.json")
        };
        let place = nx::Place {
            dir,
            project: project
                .and_then(|p| p.name.as_ref().map(|(n, _)| n.as_str()))
                .or(package.name.as_deref())
                .unwrap_or(dir),
            what: format!("{file}: targets.{name}"),
        };
        let (table, not) = nx.project_table(name, own, script, &place, &outputs);
        left.extend(not);
        let mapped = mapping.tasks.iter().find(|t| &t.name == name);
        let raw = package.scripts.get(name).map(|s| s.trim());
        let mut table = match table {
            Some(table) => table,
            None if nx.defaults.contains_key(name) && script.is_some() && script != raw => Table {
                name: name.clone(),
                command: script.map(str::to_string),
                ..Table::default()
            },
            // The script alone, with no template to apply it: the task the script maps to
            // (a project target that only names inputs Nx does not cache over, say).
            None if !nx.defaults.contains_key(name) => match mapped {
                // (Its notes are added below, with every mapped task's.)
                Some(task) => Table {
                    todos: Vec::new(),
                    ..super::layout::full_table(task, &BTreeSet::new())
                },
                None => Table {
                    name: name.clone(),
                    ..Table::default()
                },
            },
            None => Table {
                name: name.clone(),
                ..Table::default()
            },
        };
        // Under a template, a command equal to the script needs no restating.
        if nx.defaults.contains_key(name) && !table.no_template && table.command.as_deref() == raw {
            table.command = None;
        }
        table.define = mapped.map(|t| t.define.clone()).unwrap_or_default();
        table.todos.extend(
            mapped
                .iter()
                .flat_map(|t| &t.notes)
                .map(|n| (TodoReason::NpmVariable, n.clone())),
        );
        if let Some(negations) = take_back.get(name) {
            let cache = table.cache.get_or_insert_with(|| toml::Cache {
                partial: true,
                ..toml::Cache::default()
            });
            let mut inputs = vec![vx_splice()];
            inputs.extend(cache.inputs.take().unwrap_or_default());
            for negation in negations {
                if !inputs.contains(negation) {
                    inputs.push(negation.clone());
                }
            }
            cache.inputs = Some(inputs);
        }
        if let Some(from) = nx.inferred.get(&(dir.to_string(), name.clone())) {
            table.todos.push((
                TodoReason::Uncached,
                format!(
                    "inferred without Nx from {from}: check the command and give it a cache, or \
                     install Nx and run `vx init --force` to carry over what Nx resolves"
                ),
            ));
        }
        let runnable = table.command.is_some()
            || table.depends_on.as_ref().is_some_and(|d| !d.is_empty())
            || (nx.defaults.contains_key(name) && !table.no_template && raw.is_some());
        if !table.is_empty() && runnable {
            tables.push(table);
        }
    }
    (tables, left)
}

/// A package's tables for the names turbo.json defines: its whole table where `pkg#name` or
/// its own `turbo.json` defines the task, else only what differs from the template (a folded
/// hook, an npm variable).
pub(super) fn carried_tables(
    turbo: &Turbo,
    carried: &Carried,
    dir: &str,
    package: &PackageJson,
    mapping: &Mapping,
    context: &Context,
    templates: &BTreeSet<String>,
) -> (Vec<Table>, Vec<NotCarried>) {
    let mut tables = Vec::new();
    let mut left = Vec::new();
    let by_name = package
        .name
        .as_deref()
        .and_then(|n| turbo.by_package.get(n));
    let file = turbo.package_files.get(dir);
    let outputs = turbo.outputs_for(dir, package.name.as_deref());
    for name in &carried.names {
        if carried.aggregates.contains(name) {
            let has = |task: &str| !script_text(task, &package.scripts, context).is_empty();
            let depends_on = turbo.aggregate_deps(name, &has);
            if !depends_on.is_empty() {
                tables.push(Table {
                    name: name.clone(),
                    description: turbo.generic[name].description.clone(),
                    depends_on: Some(depends_on),
                    ..Table::default()
                });
            }
            continue;
        }
        let own = by_name
            .and_then(|tasks| {
                tasks.get(name).map(|d| {
                    (
                        d,
                        format!("tasks.{}#{name}", package.name.as_deref().unwrap_or(dir)),
                    )
                })
            })
            .or_else(|| {
                file.and_then(|tasks| {
                    tasks
                        .get(name)
                        .map(|d| (d, format!("{dir}/turbo.json: tasks.{name}")))
                })
            })
            .or_else(|| {
                let apart = carried.apart.contains(&(name.clone(), dir.to_string()));
                let generic = turbo.generic.get(name).filter(|_| apart);
                generic.map(|d| (d, format!("tasks.{name}")))
            });
        let text = script_text(name, &package.scripts, context);
        if text.is_empty() {
            if let Some((def, place)) = own {
                left.push(no_script(&place, def, &format!("{dir}/package.json")));
            }
            continue;
        }
        let mapped = mapping.tasks.iter().find(|t| &t.name == name);
        let define = mapped.map(|t| t.define.clone()).unwrap_or_default();
        let todos = mapped
            .map(|t| {
                t.notes
                    .iter()
                    .map(|n| (TodoReason::NpmVariable, n.clone()))
                    .collect()
            })
            .unwrap_or_default();
        match own {
            Some((def, place)) => {
                let target = turbo::Target {
                    template: false,
                    dir: Some(dir),
                    outputs: &outputs,
                };
                let (mut table, not) = turbo.table(name, def, target, &place);
                left.extend(not);
                table.command = Some(text);
                table.no_template = templates.contains(name);
                table.define = define;
                table.todos.extend(todos);
                tables.push(table);
            }
            None if turbo.generic.contains_key(name) => {
                let raw = package.scripts.get(name).map(|s| s.trim());
                let table = Table {
                    name: name.clone(),
                    command: (Some(text.as_str()) != raw).then_some(text),
                    define,
                    todos,
                    ..Table::default()
                };
                if !table.is_empty() {
                    tables.push(table);
                }
            }
            None => {}
        }
    }
    (tables, left)
}

pub(super) fn no_script(place: &str, def: &turbo::TurboTask, manifest: &str) -> NotCarried {
    let name = place.rsplit(['.', '#']).next().unwrap_or(place);
    NotCarried {
        what: place.to_string(),
        at: def.at.clone().unwrap_or_default(),
        why: format!("{manifest} has no `{name}` script, so Turborepo runs nothing"),
    }
}
