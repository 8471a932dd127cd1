//! The workspace's files as of one enumeration, and their identities (KEY-10, KEY-11, KEY-15,
//! DISC-7). Start at [`Tree::scan`].
//!
//! # How this works
//!
//! A run enumerates the workspace once. Inside a git work tree (the nearest `.git` from the
//! root upward; the root may be a subdirectory of the repository), [`Tree::scan`]:
//!
//! 1. reads the configuration files and the index in-process (`config`, `repo`); the index's
//!    file entries under the root are the tracked files, and their stat data, blob ids and
//!    flags are kept for the identity shortcut;
//! 2. walks the directory tree once (`walk`), in parallel, honouring `.gitignore` files at
//!    every level, `info/exclude` and `core.excludesFile` (`excludes`), to find untracked files
//!    that are not ignored. `.git`, `.vx`, the excluded directories and `node_modules` are not
//!    entered. Submodules and nested repositories are expanded with their own index and rules;
//!    their files are always hashed, never taken from the outer index;
//! 3. checks every attributes file that could apply for a conversion attribute (`attributes`);
//!    if any is found the index shortcut is off for the whole run.
//!
//! Outside git the same walk runs with `.gitignore` files only, and everything is untracked.
//!
//! [`Tree::identity`] is then one map lookup and one `lstat` for a clean tracked file
//! (`identity`). [`Tree::refresh`] re-walks the subtrees a finished task could have written,
//! with tracked status taken from the indexes already read.
//!
//! Invariant: this module never starts a process (vx's supervisor reaps every child) and reads
//! no `GIT_*` environment variable.

mod attributes;
mod blob_ids;
mod config;
mod error;
mod excludes;
mod identity;
mod ignore_rules;
mod names;
mod repo;
mod walk;

use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::TreeError;
pub use identity::{
    blob_id, identity_now, FileId, Identity, Mode, NoMemo, ObjectFormat, StampMemo, Stat,
};

use config::ConfigSet;
use excludes::Chain;
use excludes::Exclusions;
use identity::{Hashed, IndexStat, ShortcutRules};
use repo::Repo;
use walk::{Job, Walker};

pub use blob_ids::{blob_ids, BlobIds};
pub use ignore_rules::IgnoreRules;
use names::REPLACEMENT;
pub use names::{escape_name, shown_name, unescape_name};

/// What to enumerate.
#[derive(Debug, Clone)]
pub struct TreeOptions {
    /// The workspace root, canonical.
    pub root: PathBuf,
    /// Absolute directories never listed (the cache directory). `.git` and `.vx` at any level
    /// are always excluded.
    pub excluded: Vec<PathBuf>,
}

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Root-relative, `/`-separated.
    pub path: String,
    /// In the index of the repository the file belongs to.
    pub tracked: bool,
}

/// Work done so far, for tests and `VX_LOG=debug`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Files (and symlinks) whose bytes were hashed in-process.
    pub files_hashed: u64,
    /// Index files read: the outer repository's and each nested one's.
    pub index_reads: u64,
    /// Directory walks: one for the scan, one per path a [`Tree::refresh`] walks.
    pub walks: u64,
}

/// The workspace's files as of one enumeration (KEY-10), and their identities (KEY-11).
pub struct Tree {
    root: PathBuf,
    exclusions: Exclusions,
    global: ConfigSet,
    /// The outer repository; outside git, the plain walk's stand-in.
    outer: Arc<Repo>,
    in_git: bool,
    /// The `.gitignore` rules of the outer repository's directories above the root; `None`
    /// when the root itself is ignored (nothing untracked is listed then).
    root_chain: Option<Chain>,
    /// Nested repositories by root-relative work tree.
    nested: HashMap<Vec<u8>, Arc<Repo>>,
    files: Vec<TreeFile>,
    non_utf8: Vec<String>,
    /// Root-relative paths too long to open ([`Tree::too_long`]).
    too_long: Vec<String>,
    /// Outer index entries that may vouch for their file, by root-relative path.
    index: HashMap<String, IndexStat>,
    rules: ShortcutRules,
    format: ObjectFormat,
    counters: Counters,
    /// `lstat` results taken ahead by [`Tree::prefetch`] for [`Tree::identity`], kept until
    /// [`Tree::forget_prefetched`].
    prefetched: HashMap<String, std::io::Result<std::fs::Metadata>>,
    /// Every path the listing depends on besides its files; see [`Tree::consulted`].
    consulted: Vec<PathBuf>,
}

/// Where the git repository whose work tree holds a root keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirs {
    /// The work tree (the root or one of its ancestors).
    pub worktree: PathBuf,
    /// The shared git directory (`config`, `shallow`, refs).
    pub common_dir: PathBuf,
    /// The work tree's own git directory (`index`, `HEAD`): `common_dir` in a main checkout,
    /// `<common>/worktrees/<name>` in a linked worktree.
    pub git_dir: PathBuf,
}

impl GitDirs {
    /// Whether the repository is a shallow clone (its history is cut off).
    pub fn is_shallow(&self) -> bool {
        self.common_dir.join("shallow").exists()
    }
}

/// Where `HEAD` points, for history (HIST-1): the branch, and the commit it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// `None` on an unborn branch (no commit yet).
    pub commit: Option<String>,
}

/// `HEAD` of the repository containing `root`, read from its files (`HEAD`, the loose ref,
/// `packed-refs`) without running git; `None` outside git or when `HEAD` cannot be read.
pub fn head(root: &Path) -> Option<Head> {
    let layout = repo::find_outer(root).ok()??;
    let text = std::fs::read_to_string(layout.git_dir.join("HEAD")).ok()?;
    let text = text.trim();
    let Some(reference) = text.strip_prefix("ref: ") else {
        return Some(Head {
            branch: None,
            commit: Some(text.to_string()),
        });
    };
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(reference);
    let loose = [&layout.git_dir, &layout.common_dir]
        .iter()
        .find_map(|dir| std::fs::read_to_string(dir.join(reference)).ok())
        .map(|id| id.trim().to_string());
    let packed = || {
        let text = std::fs::read_to_string(layout.common_dir.join("packed-refs")).ok()?;
        text.lines().find_map(|line| {
            let (id, name) = line.split_once(' ')?;
            (name == reference).then(|| id.to_string())
        })
    };
    Some(Head {
        branch: Some(branch.to_string()),
        commit: loose.or_else(packed),
    })
}

/// The repository whose work tree contains `root`, found as [`Tree::scan`] finds it (the
/// nearest `.git` upward, DISC-7) without reading an index; `None` outside git.
pub fn find_repository(root: &Path) -> Result<Option<GitDirs>, TreeError> {
    Ok(repo::find_outer(root)?.map(|layout| GitDirs {
        worktree: layout.worktree,
        common_dir: layout.common_dir,
        git_dir: layout.git_dir,
    }))
}

impl Tree {
    /// Enumerates the workspace once; see the module documentation.
    pub fn scan(options: &TreeOptions) -> Result<Tree, TreeError> {
        let root = options.root.clone();
        let exclusions = Exclusions::new(&root, &options.excluded);
        let global = config::global_config();
        let mut counters = Counters::default();
        let Some(layout) = repo::find_outer(&root)? else {
            return Tree::scan_plain(root, exclusions, global);
        };
        let repo_config = config::repo_config(&global, &layout.common_dir, &layout.git_dir);
        let settings = repo_config.settings(&layout.worktree);
        let index = repo::read_index(&layout, settings.object_format)?;
        counters.index_reads += 1;
        // The root's path inside the repository, as a prefix of index paths ("" or "a/b/").
        let mut prefix = root
            .strip_prefix(&layout.worktree)
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .unwrap_or_default();
        if !prefix.is_empty() {
            prefix.push(b'/');
        }
        let to_root = |p: &[u8]| p.strip_prefix(prefix.as_slice()).map(<[u8]>::to_vec);
        let outer = Arc::new(Repo::new(
            &layout,
            &settings,
            Vec::new(),
            &index,
            &exclusions,
            to_root,
        ));
        let root_chain = chain_above_root(&outer, &root);
        let mut index_map = HashMap::with_capacity(index.files.len());
        for file in index.files {
            let Some(rel) = to_root(&file.path) else {
                continue;
            };
            if !file.vouches || exclusions.excludes(&rel) {
                continue;
            }
            if let Ok(path) = String::from_utf8(rel) {
                let entry = IndexStat {
                    stat: file.stat,
                    id: file.id,
                    mode: file.mode,
                };
                index_map.insert(path, entry);
            }
        }
        let mut tree = Tree {
            root,
            exclusions,
            global,
            outer,
            in_git: true,
            root_chain,
            nested: HashMap::new(),
            files: Vec::new(),
            non_utf8: Vec::new(),
            too_long: Vec::new(),
            index: index_map,
            rules: ShortcutRules {
                allowed: settings.shortcut_allowed,
                file_mode: settings.file_mode,
                index_time: index.timestamp,
            },
            format: settings.object_format,
            counters,
            prefetched: HashMap::new(),
            consulted: Vec::new(),
        };
        let mut found = tree.walk(b"")?;
        let mut consulted = std::mem::take(&mut found.consulted);
        consulted.extend(repo_config.files.iter().cloned());
        consulted.push(layout.git_dir.join("index"));
        consulted.push(layout.common_dir.join("info/exclude"));
        consulted.extend(settings.excludes_file.iter().cloned());
        let mut attribute_files = settings.attribute_files.clone();
        attribute_files.push(layout.common_dir.join("info/attributes"));
        attribute_files.extend(found.attributes.iter().cloned());
        attribute_files.extend(attributes::tracked_and_ancestor_files(
            &layout.worktree,
            &tree.root,
            &tree.outer.tracked,
        ));
        if attributes::any_conversion(&attribute_files) {
            tree.rules.allowed = false;
        }
        consulted.extend(attribute_files);
        tree.consulted = consulted;
        tree.install(b"", found);
        Ok(tree)
    }

    /// Outside git: a walk honouring `.gitignore` files; everything is untracked.
    fn scan_plain(
        root: PathBuf,
        exclusions: Exclusions,
        global: ConfigSet,
    ) -> Result<Tree, TreeError> {
        let outer = Arc::new(Repo::plain(&root));
        let mut tree = Tree {
            root,
            exclusions,
            global,
            outer,
            in_git: false,
            root_chain: Some(None),
            nested: HashMap::new(),
            files: Vec::new(),
            non_utf8: Vec::new(),
            too_long: Vec::new(),
            index: HashMap::new(),
            rules: ShortcutRules {
                allowed: false,
                file_mode: true,
                index_time: (0, 0),
            },
            format: ObjectFormat::Sha1,
            counters: Counters::default(),
            prefetched: HashMap::new(),
            consulted: Vec::new(),
        };
        let mut found = tree.walk(b"")?;
        tree.consulted = std::mem::take(&mut found.consulted);
        tree.consulted.extend(tree.global.files.iter().cloned());
        tree.install(b"", found);
        Ok(tree)
    }

    /// What the listing depends on besides the files it lists, as absolute paths, sorted:
    /// every directory listed, the `.gitignore` and attributes files, the git configuration
    /// files (those looked for and absent too), the index and the exclude files. With the
    /// listed files, stat data of these proves the listing unchanged (a run snapshot); `None`
    /// when the tree holds nested repositories or submodules, whose indexes it does not name.
    pub fn consulted(&self) -> Option<Vec<PathBuf>> {
        if !self.nested.is_empty() || !self.outer.gitlinks.is_empty() {
            return None;
        }
        let mut paths = self.consulted.clone();
        paths.sort_unstable();
        paths.dedup();
        Some(paths)
    }

    /// Whether the root is inside a git work tree.
    pub fn in_git(&self) -> bool {
        self.in_git
    }

    /// Every listed file, sorted bytewise by path.
    pub fn files(&self) -> &[TreeFile] {
        &self.files
    }

    /// The listed files under the root-relative directory `dir` (`""`: all).
    pub fn files_under(&self, dir: &str) -> &[TreeFile] {
        let dir = dir.trim_end_matches('/');
        if dir.is_empty() {
            return &self.files;
        }
        let (start, end) = subtree_range(&self.files, dir);
        &self.files[start..end]
    }

    /// Files whose names are not valid UTF-8 (root-relative, sorted), each written with every
    /// byte that is not UTF-8 as `U+FFFD` and two hex digits ([`escape_name`]): unique, so
    /// [`Tree::identity`] finds the file by it. They are not in [`Tree::files`].
    pub fn non_utf8(&self) -> &[String] {
        &self.non_utf8
    }

    /// Root-relative paths (sorted) whose absolute path is longer than the system opens
    /// (`PATH_MAX`): a file, or a directory the walk did not enter. They are not in
    /// [`Tree::files`]; a task whose inputs reach one fails, naming it.
    pub fn too_long(&self) -> &[String] {
        &self.too_long
    }

    /// Whether git would ignore the root-relative `path` (false for a tracked file): for
    /// literal inputs that name ignored files (KEY-10).
    pub fn is_ignored(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        if path.is_empty()
            || self
                .files
                .binary_search_by(|f| f.path.as_str().cmp(path))
                .is_ok()
        {
            return false;
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => ("", path),
        };
        let Some((repo, chain)) = self.descend(parent.as_bytes(), true) else {
            return true;
        };
        let rel = walk::join(parent.as_bytes(), name.as_bytes());
        if repo.tracked.contains(&rel) {
            return false;
        }
        let abs = self.root.join(path);
        let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir());
        excludes::is_ignored(&chain, &repo.excludes, &abs, is_dir)
    }

    /// The identity of the root-relative `path` (KEY-11); see the `identity` module. A path
    /// that does not exist (or is a directory, or a special file) is [`Identity::Absent`].
    pub fn identity(&mut self, path: &str, memo: &mut dyn StampMemo) -> Result<FileId, TreeError> {
        let abs = if path.contains(REPLACEMENT) && self.non_utf8.iter().any(|p| p == path) {
            self.root.join(unescape_name(path))
        } else {
            self.root.join(path)
        };
        // An error taken ahead is given again as the same OS error; any other is looked again.
        let stat = match self.prefetched.get(path) {
            Some(Ok(meta)) => Ok(meta.clone()),
            Some(Err(e)) => match e.raw_os_error() {
                Some(code) => Err(std::io::Error::from_raw_os_error(code)),
                None => std::fs::symlink_metadata(&abs),
            },
            None => std::fs::symlink_metadata(&abs),
        };
        let meta = match stat {
            Ok(meta) => meta,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(FileId::absent())
            }
            Err(source) => return Err(TreeError::Io { path: abs, source }),
        };
        let Some(mode) = Mode::from_metadata(&meta) else {
            return Ok(FileId::absent());
        };
        let stat = Stat::from_metadata(&meta);
        let present = |blob| FileId {
            identity: Identity::Present { mode, blob },
            stat: Some(stat),
        };
        if let Some(entry) = self.index.get(path) {
            if entry.vouches_for(&meta, mode, self.rules) {
                return Ok(present(entry.id.to_string()));
            }
        }
        // `lstat` follows symlinks in the leading components: a path whose parent directory
        // became a symlink names some other file, and this path, as git sees the work tree,
        // does not exist.
        if self.below_symlink(path) {
            return Ok(FileId::absent());
        }
        if let Some((remembered, blob)) = memo.recall(path) {
            if remembered == stat {
                return Ok(present(blob));
            }
        }
        self.counters.files_hashed += 1;
        match identity::hash_path(&abs, mode, &stat, self.format)? {
            Hashed::Gone => Ok(FileId::absent()),
            Hashed::Blob { blob, steady } => {
                if steady && !stat.is_too_recent(std::time::SystemTime::now()) {
                    memo.remember(path, stat, blob.clone());
                }
                Ok(present(blob))
            }
        }
    }

    /// Takes the `lstat` of these root-relative paths ahead, on several threads, for the
    /// next [`Tree::identity`] of each: the warm path asks for thousands at once, and the
    /// kernel's path walks are most of its cost. A result serves every identity of its path
    /// (a build and a test of one project fold the same sources) until
    /// [`Tree::forget_prefetched`].
    pub fn prefetch(&mut self, paths: Vec<String>) {
        let root = &self.root;
        let stats = crate::par::map(&paths, |path| std::fs::symlink_metadata(root.join(path)));
        self.prefetched.extend(paths.into_iter().zip(stats));
    }

    /// Drops what [`Tree::prefetch`] took and nobody used: once something may have changed the
    /// files, only a fresh `lstat` will do.
    pub fn forget_prefetched(&mut self) {
        self.prefetched.clear();
    }

    /// Whether a parent directory of the root-relative `path` (below the root) is a symlink.
    pub fn below_symlink(&self, path: &str) -> bool {
        self.below_symlink_seen(path, &mut HashMap::new())
    }

    /// [`Tree::below_symlink`], remembering each directory's answer in `seen`: one check of
    /// many paths at one moment (a task's inputs share their directories) asks each once.
    pub fn below_symlink_seen(&self, path: &str, seen: &mut HashMap<String, bool>) -> bool {
        let mut end = 0;
        while let Some(slash) = path[end..].find('/') {
            end += slash;
            let dir = &path[..end];
            let is_link = match seen.get(dir) {
                Some(&known) => known,
                None => {
                    let found = std::fs::symlink_metadata(self.root.join(dir))
                        .is_ok_and(|m| m.file_type().is_symlink());
                    seen.insert(dir.to_string(), found);
                    found
                }
            };
            if is_link {
                return true;
            }
            end += 1;
        }
        false
    }

    /// KEY-15: lists again every path under these root-relative directories or files, replacing
    /// what was listed there; tracked status comes from the indexes already read.
    pub fn refresh(&mut self, paths: &[String]) -> Result<(), TreeError> {
        let mut scopes: Vec<&str> = paths.iter().map(|p| p.trim_end_matches('/')).collect();
        scopes.sort_unstable();
        scopes.dedup();
        if scopes.contains(&"") {
            scopes = vec![""];
        }
        // A scope inside another one is walked with it.
        let mut kept: Vec<&str> = Vec::new();
        for scope in scopes {
            if !kept
                .iter()
                .any(|k| names::is_at_or_under(scope.as_bytes(), k.as_bytes()))
            {
                kept.push(scope);
            }
        }
        for scope in kept {
            let mut found = self.walk(scope.as_bytes())?;
            self.consulted.append(&mut found.consulted);
            if attributes::any_conversion(&found.attributes) {
                self.rules.allowed = false;
            }
            self.install(scope.as_bytes(), found);
        }
        Ok(())
    }

    /// Work done so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The object format of the outer repository (SHA-1 outside git).
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// Walks the root-relative `scope` (`""`: everything), a directory or a file.
    fn walk(&mut self, scope: &[u8]) -> Result<walk::Found, TreeError> {
        let mut found = walk::Found::default();
        // Submodules inside the scope have jobs of their own; those of repositories inside
        // the scope are queued when the walk enters them.
        let mut jobs = walk::submodule_jobs(&self.root, &self.outer, Some(scope));
        for repo in self.nested.values() {
            if repo.rel != scope && names::is_at_or_under(scope, &repo.rel) {
                jobs.extend(walk::submodule_jobs(&self.root, repo, Some(scope)));
            }
        }
        let abs = self.root.join(std::ffi::OsStr::from_bytes(scope));
        if scope.is_empty() {
            if let Some(chain) = self.root_chain.clone() {
                jobs.push(Job {
                    abs,
                    rel: Vec::new(),
                    repo: self.outer.clone(),
                    chain,
                    submodule: false,
                });
            }
        } else if !self.exclusions.excludes(scope) {
            let (parent, name) = split_parent(scope);
            if let Some((repo, chain)) = self.descend(parent, false) {
                match std::fs::symlink_metadata(&abs) {
                    Ok(meta) if meta.is_dir() => {
                        let enter = name != b"node_modules"
                            && !repo.gitlinks.contains(scope)
                            && (self.nested.contains_key(scope)
                                || !excludes::is_ignored(&chain, &repo.excludes, &abs, true));
                        if enter {
                            jobs.push(Job {
                                abs,
                                rel: scope.to_vec(),
                                repo,
                                chain,
                                submodule: false,
                            });
                        }
                    }
                    Ok(meta) if meta.is_file() || meta.is_symlink() => {
                        let listed = !repo.tracked.contains(scope)
                            && !excludes::is_ignored(&chain, &repo.excludes, &abs, false);
                        if listed {
                            found.untracked.push(scope.to_vec());
                        }
                    }
                    _ => {}
                }
            }
        }
        let walker = Walker {
            root: &self.root,
            exclusions: &self.exclusions,
            global: &self.global,
            known: &self.nested,
            outer: self.in_git.then_some(&self.outer),
        };
        found.merge(walker.run(jobs)?);
        self.counters.walks += 1;
        Ok(found)
    }

    /// The repository and ignore rules in force inside the root-relative directory `dir`, or
    /// `None` when the walk would never list anything there: `dir` or one of its parents is
    /// ignored or (unless `git_only`) excluded or a `node_modules`.
    fn descend(&self, dir: &[u8], git_only: bool) -> Option<(Arc<Repo>, Chain)> {
        let mut repo = self.outer.clone();
        let mut chain = self.root_chain.clone()?;
        let mut abs = self.root.clone();
        let mut rel: Vec<u8> = Vec::new();
        let mut parts = dir
            .split(|b| *b == b'/')
            .filter(|p| !p.is_empty())
            .peekable();
        loop {
            // `abs` is a directory the walk enters; switch repositories at a nested one.
            if !rel.is_empty() {
                if let Some(nested) = self.nested.get(&rel) {
                    repo = nested.clone();
                    chain = None;
                }
            }
            chain = excludes::push_if_present(&chain, &abs, repo.excludes.ignore_case);
            let Some(name) = parts.next() else {
                return Some((repo, chain));
            };
            rel = walk::join(&rel, name);
            abs.push(std::ffi::OsStr::from_bytes(name));
            let excluded = !git_only
                && (name == b"node_modules"
                    || self.exclusions.excludes(&rel)
                    || (repo.gitlinks.contains(&rel) && !self.nested.contains_key(&rel)));
            if excluded || name == b".git" {
                return None;
            }
            let entering_nested = self.nested.contains_key(&rel);
            if !entering_nested && excludes::is_ignored(&chain, &repo.excludes, &abs, true) {
                return None;
            }
        }
    }

    /// Replaces the listing under the root-relative `scope` with what a walk found there.
    fn install(&mut self, scope: &[u8], found: walk::Found) {
        // Files under a nested repository belong to it, whatever the outer index says.
        let new_repos = found.repos;
        let inside_new = |p: &[u8]| new_repos.iter().any(|r| names::is_at_or_under(p, &r.rel));
        if !new_repos.is_empty() {
            self.index.retain(|p, _| !inside_new(p.as_bytes()));
        }
        let mut paths: Vec<(Vec<u8>, bool)> = new_repos
            .iter()
            .flat_map(|repo| repo.tracked.iter().map(|p| (p.clone(), true)))
            .collect();
        for repo in new_repos {
            self.counters.index_reads += 1;
            self.nested.insert(repo.rel.clone(), repo);
        }
        if scope.is_empty() {
            // Everything is listed anew: repositories opened before (by an earlier walk) too.
            let nested = &self.nested;
            let inside_nested = |p: &[u8]| nested.keys().any(|n| names::is_at_or_under(p, n));
            paths.clear();
            paths.extend(
                self.outer
                    .tracked
                    .iter()
                    .filter(|p| nested.is_empty() || !inside_nested(p))
                    .map(|p| (p.clone(), true)),
            );
            for repo in nested.values() {
                paths.extend(repo.tracked.iter().map(|p| (p.clone(), true)));
            }
        }
        paths.extend(found.untracked.into_iter().map(|p| (p, false)));
        // Tracked first among equal paths, so `dedup` keeps it.
        paths.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        paths.dedup_by(|later, first| later.0 == first.0);
        let mut too_long: Vec<String> = found
            .too_long
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        too_long.sort_unstable();
        let mut files = Vec::with_capacity(paths.len());
        let mut non_utf8 = Vec::new();
        for (path, tracked) in paths {
            match String::from_utf8(path) {
                Ok(path) => files.push(TreeFile { path, tracked }),
                Err(e) => non_utf8.push(escape_name(e.as_bytes())),
            }
        }
        if scope.is_empty() {
            self.files = files;
            self.non_utf8 = non_utf8;
            self.too_long = too_long;
            return;
        }
        // Keep tracked files (the indexes are not read again) and splice in the walk's.
        let scope_str = String::from_utf8_lossy(scope).into_owned();
        let (start, end) = subtree_range(&self.files, &scope_str);
        let mut merged: Vec<TreeFile> = self.files[start..end]
            .iter()
            .filter(|f| f.tracked)
            .cloned()
            .chain(files.iter().filter(|f| f.path != scope_str).cloned())
            .collect();
        // Stable: a kept tracked file comes before a walked one of the same path.
        merged.sort_by(|a, b| a.path.cmp(&b.path));
        merged.dedup_by(|later, first| later.path == first.path);
        self.files.splice(start..end, merged);
        // The scope itself, when it names a file.
        let exact = self
            .files
            .binary_search_by(|f| f.path.as_str().cmp(&scope_str));
        let listed = files.into_iter().find(|f| f.path == scope_str);
        match (exact, listed) {
            (Ok(i), None) if !self.files[i].tracked => {
                self.files.remove(i);
            }
            (Err(i), Some(file)) => self.files.insert(i, file),
            _ => {}
        }
        let prefix = format!("{scope_str}/");
        self.non_utf8
            .retain(|p| *p != scope_str && !p.starts_with(&prefix));
        self.non_utf8.extend(non_utf8);
        self.non_utf8.sort_unstable();
        self.non_utf8.dedup();
        self.too_long
            .retain(|p| *p != scope_str && !p.starts_with(&prefix));
        self.too_long.extend(too_long);
        self.too_long.sort_unstable();
        self.too_long.dedup();
    }
}

/// The chain of `.gitignore` rules of the outer repository's directories from its work tree
/// down to (not including) the root; `None` when one of them ignores the next.
fn chain_above_root(outer: &Arc<Repo>, root: &Path) -> Option<Chain> {
    let rel = root.strip_prefix(&outer.worktree).ok()?;
    let mut chain: Chain = None;
    let mut abs = outer.worktree.clone();
    for part in rel.components() {
        chain = excludes::push_if_present(&chain, &abs, outer.excludes.ignore_case);
        abs.push(part);
        if excludes::is_ignored(&chain, &outer.excludes, &abs, true) {
            return None;
        }
    }
    Some(chain)
}

/// `(parent, name)` of a root-relative path; the parent of a top-level name is `""`.
fn split_parent(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (b"", path),
    }
}

/// The index range of the files strictly under `dir` in the sorted `files`.
fn subtree_range(files: &[TreeFile], dir: &str) -> (usize, usize) {
    let prefix = format!("{dir}/");
    let start = files.partition_point(|f| f.path.as_str() < prefix.as_str());
    let end = start + files[start..].partition_point(|f| f.path.starts_with(&prefix));
    (start, end)
}
