//! `package.json`: the few fields vx reads, with locations (DISC-2, DISC-4, DISC-5).
//!
//! vx only reads `name`, `version`, `workspaces`, the four dependency sections, `scripts`
//! (whose text is the command of a task a workspace template gives the project, CFG-13) and,
//! for `vx init` only, `packageManager` (INIT-2: yarn ≥ 2 runs no `pre`/`post` scripts);
//! everything else in a manifest is the package manager's business and is ignored. Each field vx reads is
//! type-checked, because a silently skipped dependency would change the order tasks run in.

use std::collections::BTreeMap;

use vx_core::{Diagnostic, Location, Spanned};

use crate::json::{self, Json, JsonKind};
use crate::source::SourceText;

/// The dependency sections that make project edges (DISC-5), `peerDependencies` last.
const SECTIONS: [&str; 4] = [
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
];

#[derive(Debug, Clone, Default)]
pub(crate) struct Manifest {
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) version: Option<String>,
    /// `workspaces` as an array, or the `packages` array of its object form.
    pub(crate) workspaces: Option<Vec<Spanned<String>>>,
    pub(crate) dependencies: Vec<DependencyEntry>,
    /// `scripts`: each script's text, located at its key.
    pub(crate) scripts: BTreeMap<String, Spanned<String>>,
    /// `packageManager` (`yarn@4.1.0`) when it is a string; never an error, since only
    /// `vx init` reads it.
    pub(crate) package_manager: Option<String>,
}

/// One `"<name>": "<specifier>"` line of a dependency section.
#[derive(Debug, Clone)]
pub(crate) struct DependencyEntry {
    pub(crate) name: String,
    pub(crate) specifier: String,
    pub(crate) peer: bool,
    /// The entry's key, which is what an error about the entry points at.
    pub(crate) at: Location,
}

/// Parses a `package.json`; `rel_path` is the root-relative path used in locations.
pub(crate) fn parse_manifest(text: &str, rel_path: &str) -> Result<Manifest, Vec<Diagnostic>> {
    let source = SourceText::new(rel_path, text);
    let root = json::parse(text).map_err(|e| {
        vec![Diagnostic::at(
            source.location(e.offset),
            format!("invalid JSON: {}", e.message),
        )]
    })?;
    let mut errors = Vec::new();
    let at = |value: &Json| source.location(value.offset);
    let JsonKind::Object(_) = root.kind else {
        return Err(vec![Diagnostic::at(
            at(&root),
            format!(
                "`package.json` must hold an object, not {}",
                root.type_name()
            ),
        )]);
    };
    let mut manifest = Manifest::default();

    if let Some(entry) = root.entry("name") {
        match entry.value.as_str() {
            Some(name) => manifest.name = Some(Spanned::new(name.to_string(), at(&entry.value))),
            None => errors.push(Diagnostic::at(at(&entry.value), "`name` must be a string")),
        }
    }
    if let Some(entry) = root.entry("version") {
        match entry.value.as_str() {
            Some(version) => manifest.version = Some(version.to_string()),
            None => errors.push(Diagnostic::at(
                at(&entry.value),
                "`version` must be a string",
            )),
        }
    }
    if let Some(entry) = root.entry("workspaces") {
        manifest.workspaces = Some(workspace_globs(&entry.value, &source, &mut errors));
    }
    if let Some(entry) = root.entry("scripts") {
        manifest.scripts = scripts(&entry.value, &source, &mut errors);
    }
    manifest.package_manager = root
        .entry("packageManager")
        .and_then(|entry| entry.value.as_str())
        .map(str::to_string);
    for section in SECTIONS {
        let Some(entry) = root.entry(section) else {
            continue;
        };
        let JsonKind::Object(deps) = &entry.value.kind else {
            errors.push(Diagnostic::at(
                at(&entry.value),
                format!("`{section}` must be an object"),
            ));
            continue;
        };
        for dep in deps {
            match dep.value.as_str() {
                Some(specifier) => manifest.dependencies.push(DependencyEntry {
                    name: dep.key.clone(),
                    specifier: specifier.to_string(),
                    peer: section == "peerDependencies",
                    at: source.location(dep.key_offset),
                }),
                None => errors.push(Diagnostic::at(
                    at(&dep.value),
                    format!("`{section}.{}` must be a version string", dep.key),
                )),
            }
        }
    }
    if errors.is_empty() {
        Ok(manifest)
    } else {
        Err(errors)
    }
}

/// `scripts`: an object of strings.
fn scripts(
    value: &Json,
    source: &SourceText,
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Spanned<String>> {
    let mut scripts = BTreeMap::new();
    let JsonKind::Object(entries) = &value.kind else {
        errors.push(Diagnostic::at(
            source.location(value.offset),
            "`scripts` must be an object",
        ));
        return scripts;
    };
    for entry in entries {
        match entry.value.as_str() {
            Some(text) => {
                let at = source.location(entry.key_offset);
                scripts.insert(entry.key.clone(), Spanned::new(text.to_string(), at));
            }
            None => errors.push(Diagnostic::at(
                source.location(entry.value.offset),
                format!("`scripts.{}` must be a string", entry.key),
            )),
        }
    }
    scripts
}

/// `workspaces`: an array of globs, or an object whose `packages` array holds them (an object
/// without `packages`, such as `{ "nohoist": [...] }`, declares no members).
fn workspace_globs(
    value: &Json,
    source: &SourceText,
    errors: &mut Vec<Diagnostic>,
) -> Vec<Spanned<String>> {
    let list = match &value.kind {
        JsonKind::Object(_) => match value.entry("packages") {
            Some(packages) => &packages.value,
            None => return Vec::new(),
        },
        _ => value,
    };
    let JsonKind::Array(items) = &list.kind else {
        errors.push(Diagnostic::at(
            source.location(list.offset),
            "`workspaces` must be an array of globs or an object with a `packages` array",
        ));
        return Vec::new();
    };
    let mut globs = Vec::new();
    for item in items {
        match item.as_str() {
            Some(glob) => globs.push(Spanned::new(glob.to_string(), source.location(item.offset))),
            None => errors.push(Diagnostic::at(
                source.location(item.offset),
                "`workspaces` entries must be strings",
            )),
        }
    }
    globs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_version_workspaces_and_dependencies() {
        let text = r#"{
  "name": "@acme/web",
  "version": "1.4.0",
  "workspaces": { "packages": ["apps/*"] },
  "dependencies": { "@acme/ui": "workspace:*" },
  "peerDependencies": { "react": "^18" },
  "scripts": { "build": "tsc -b" }
}"#;
        let manifest = parse_manifest(text, "apps/web/package.json").unwrap();
        let name = manifest.name.unwrap();
        assert_eq!(name.value, "@acme/web");
        assert_eq!(name.at.to_string(), "apps/web/package.json:2:11");
        assert_eq!(manifest.version.as_deref(), Some("1.4.0"));
        assert_eq!(manifest.workspaces.unwrap()[0].value, "apps/*");
        let deps = &manifest.dependencies;
        assert_eq!((deps[0].name.as_str(), deps[0].peer), ("@acme/ui", false));
        assert_eq!(deps[0].at.to_string(), "apps/web/package.json:5:21");
        assert_eq!((deps[1].name.as_str(), deps[1].peer), ("react", true));
        let build = &manifest.scripts["build"];
        assert_eq!(build.value, "tsc -b");
        assert_eq!(build.at.to_string(), "apps/web/package.json:7:16");
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let text = "{\"name\": 3, \"dependencies\": {\"a\": true}, \"workspaces\": \"x\"}";
        let errors = parse_manifest(text, "package.json").unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "package.json:1:10: `name` must be a string",
                "package.json:1:56: `workspaces` must be an array of globs or an object with a `packages` array",
                "package.json:1:35: `dependencies.a` must be a version string",
            ]
        );
    }

    #[test]
    fn syntax_errors_carry_a_location() {
        let errors = parse_manifest("{\n  \"name\": \"x\",\n}", "package.json").unwrap_err();
        assert_eq!(
            errors[0].to_string(),
            "package.json:2:14: invalid JSON: trailing commas are not allowed"
        );
    }
}
