//! What `vx init` (INIT-1) reads before any `vx.toml` exists: a `package.json` with its
//! scripts, and the package-manager member list with its directories expanded.
//!
//! Both reuse the loader's own parsers (`manifest`, `pnpm`) and glob expansion (`members`),
//! so `vx init` finds exactly the projects a later `vx run` will load, and reports a broken
//! manifest at the same `path:line:column` (ERR-2).

use std::collections::BTreeMap;
use std::path::Path;

use vx_core::Diagnostic;

use crate::disk;
use crate::manifest::parse_manifest;
use crate::members::MemberGlobs;
use crate::pnpm::pnpm_packages;
use crate::LoadError;

/// The fields of a `package.json` that `vx init` maps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageJson {
    pub name: Option<String>,
    pub version: Option<String>,
    /// Script name → script text, sorted by name.
    pub scripts: BTreeMap<String, String>,
    /// `packageManager`, such as `yarn@4.1.0`.
    pub package_manager: Option<String>,
    /// Whether it declares `workspaces` (an array, or an object with `packages`).
    pub has_workspaces: bool,
}

/// Parses a `package.json`; `rel_path` is the root-relative path used in locations. Problems
/// are what loading the workspace would report, sorted by location.
pub fn read_package_json(text: &str, rel_path: &str) -> Result<PackageJson, Vec<Diagnostic>> {
    let manifest = parse_manifest(text, rel_path)
        .map_err(|errors| vx_core::Diagnostics(errors).into_sorted())?;
    Ok(PackageJson {
        name: manifest.name.map(|n| n.value),
        version: manifest.version,
        scripts: manifest
            .scripts
            .into_iter()
            .map(|(name, text)| (name, text.value))
            .collect(),
        package_manager: manifest.package_manager,
        has_workspaces: manifest.workspaces.is_some(),
    })
}

/// A package-manager workspace at a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageWorkspace {
    /// The file that lists the members: `pnpm-workspace.yaml` or `package.json`.
    pub source: &'static str,
    /// Member directories, root-relative, in glob order (DISC-2), whether or not they hold a
    /// `package.json`.
    pub members: Vec<String>,
}

/// The package-manager member list at `root` (DISC-2 without `[workspace] members`):
/// `pnpm-workspace.yaml` `packages`, else the root `package.json` `workspaces`. `None` when
/// neither exists. A file that does not parse, or a refused glob, is a
/// [`LoadError::Config`] with its location.
pub fn package_workspace(root: &Path) -> Result<Option<PackageWorkspace>, LoadError> {
    let pnpm = "pnpm-workspace.yaml";
    let (source, globs) = if let Some(bytes) = disk::read(&root.join(pnpm))? {
        let text = String::from_utf8_lossy(&bytes);
        let globs = pnpm_packages(&text, pnpm).map_err(|d| LoadError::Config(vec![d]))?;
        (pnpm, globs)
    } else if let Some(bytes) = disk::read(&root.join("package.json"))? {
        let text = String::from_utf8_lossy(&bytes);
        let manifest = parse_manifest(&text, "package.json")
            .map_err(|errors| LoadError::Config(vx_core::Diagnostics(errors).into_sorted()))?;
        match manifest.workspaces {
            Some(globs) => ("package.json", globs),
            None => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let mut errors = Vec::new();
    let compiled = MemberGlobs::new(&globs, &mut errors);
    let members = compiled.expand(root, &mut errors)?;
    if !errors.is_empty() {
        return Err(LoadError::Config(
            vx_core::Diagnostics(errors).into_sorted(),
        ));
    }
    Ok(Some(PackageWorkspace { source, members }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_scripts_and_package_manager() {
        let text = r#"{"name": "app", "version": "1.0.0", "packageManager": "yarn@4.1.0",
            "scripts": {"build": "tsc", "dev": "vite"}}"#;
        let package = read_package_json(text, "package.json").unwrap();
        assert_eq!(package.name.as_deref(), Some("app"));
        assert_eq!(package.package_manager.as_deref(), Some("yarn@4.1.0"));
        assert_eq!(package.scripts["dev"], "vite");
        assert!(!package.has_workspaces);
        let errors = read_package_json("{\n  \"scripts\": {\n", "a/package.json").unwrap_err();
        assert!(
            errors[0].to_string().starts_with("a/package.json:"),
            "{errors:?}"
        );
    }

    #[test]
    fn expands_pnpm_members_before_package_json_workspaces() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(package_workspace(root).unwrap(), None);
        std::fs::write(root.join("package.json"), r#"{"workspaces": ["libs/*"]}"#).unwrap();
        for member in ["apps/web", "apps/api", "libs/ui", "apps/node_modules"] {
            std::fs::create_dir_all(root.join(member)).unwrap();
        }
        let found = package_workspace(root).unwrap().unwrap();
        assert_eq!(
            (found.source, found.members),
            ("package.json", vec!["libs/ui".into()])
        );
        std::fs::write(
            root.join("pnpm-workspace.yaml"),
            "packages:\n  - 'apps/*'\n",
        )
        .unwrap();
        let found = package_workspace(root).unwrap().unwrap();
        assert_eq!(found.source, "pnpm-workspace.yaml");
        assert_eq!(found.members, ["apps/api", "apps/web"]);
        std::fs::write(root.join("pnpm-workspace.yaml"), "packages: [a\n").unwrap();
        assert!(matches!(package_workspace(root), Err(LoadError::Config(_))));
    }
}
