//! The paths a run snapshot records, gathered from every source with the class each source
//! gives them (`Class`), merged per path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::stat::Class;

/// The paths a snapshot records, each with its [`Class`]. Given absolute or relative to the
/// root; kept relative when inside the root (one spelling per path, and a run of tens of
/// thousands of tasks keeps these until its end).
#[derive(Debug)]
pub struct Paths {
    root: PathBuf,
    classes: HashMap<PathBuf, Class>,
}

impl Paths {
    pub fn new(root: &Path) -> Paths {
        Paths {
            root: root.to_path_buf(),
            classes: HashMap::new(),
        }
    }

    fn add(&mut self, path: PathBuf, class: Class) {
        let path = match path.strip_prefix(&self.root) {
            Ok(inside) => inside.to_path_buf(),
            Err(_) => path,
        };
        match self.classes.entry(path) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let was = std::mem::replace(e.get_mut(), Class::Whole);
                *e.get_mut() = was.and(class);
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(class);
            }
        }
    }

    /// A path any change of which means the whole way.
    pub fn insert(&mut self, path: PathBuf) {
        self.add(path, Class::Whole);
    }

    pub fn extend(&mut self, paths: impl IntoIterator<Item = PathBuf>) {
        for path in paths {
            self.insert(path);
        }
    }

    /// A file the tree listed.
    pub fn listed(&mut self, path: PathBuf) {
        self.add(path, Class::Listed);
    }

    /// A path a key folded with this (mode, blob id); `None`: any change means the whole way.
    pub fn folded(&mut self, path: String, identity: Option<(&'static str, String)>) {
        let class = match identity {
            Some((mode, blob)) => Class::Content { mode, blob },
            None => Class::Whole,
        };
        self.add(PathBuf::from(path), class);
    }

    /// Absolute and sorted, each with its class ([`Class::Listed`] alone is [`Class::Whole`]).
    pub(super) fn into_sorted(self) -> (Vec<PathBuf>, Vec<Class>) {
        let root = self.root;
        let mut all: Vec<(PathBuf, Class)> = self
            .classes
            .into_iter()
            .map(|(path, class)| {
                let path = if path.is_absolute() {
                    path
                } else {
                    root.join(path)
                };
                match class {
                    Class::Listed => (path, Class::Whole),
                    class => (path, class),
                }
            })
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        all.into_iter().unzip()
    }
}
