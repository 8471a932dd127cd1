//! The few git configuration values the tree needs, read in-process (KEY-11, DISC-7).
//!
//! vx never runs `git config`; it parses the configuration files itself: the system file
//! (`/etc/gitconfig`), the global ones (`~/.config/git/config`, `~/.gitconfig`), the
//! repository's `config` and, with `extensions.worktreeConfig`, `config.worktree`. `include.path`
//! is followed. `includeIf.<condition>.path` is followed too, but its values are only used to make
//! the index shortcut more cautious: a conditional `core.trustctime = false` turns the shortcut
//! off whether or not the condition holds. A file that cannot be parsed turns the shortcut off.
//! No environment variable other than `HOME` is read (ENV-1).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::identity::ObjectFormat;

/// One `section.key = value` line, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigEntry {
    /// Lowercase section name.
    pub(crate) section: String,
    /// Subsection, case preserved.
    pub(crate) subsection: Option<Vec<u8>>,
    /// Lowercase key.
    pub(crate) key: String,
    /// `None` for a key without `=` (boolean true).
    pub(crate) value: Option<Vec<u8>>,
    /// Came from an `includeIf` file, whose condition vx does not evaluate.
    pub(crate) conditional: bool,
}

/// Entries of several files, later ones overriding earlier ones; `broken` when a file could not
/// be parsed.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConfigSet {
    pub(crate) entries: Vec<ConfigEntry>,
    pub(crate) broken: bool,
    /// Every file read or looked for, includes too (for a run snapshot).
    pub(crate) files: Vec<PathBuf>,
}

/// The settings of one repository that the tree acts on.
#[derive(Debug, Clone)]
pub(crate) struct RepoSettings {
    /// `core.fileMode`; `false` only when certainly false.
    pub(crate) file_mode: bool,
    /// Everything KEY-11 requires of the configuration for the index shortcut holds.
    pub(crate) shortcut_allowed: bool,
    pub(crate) ignore_case: bool,
    pub(crate) object_format: ObjectFormat,
    /// `core.excludesFile`, or git's default location.
    pub(crate) excludes_file: Option<PathBuf>,
    /// Every attributes file that may apply: `core.attributesFile` (any of its values) or the
    /// default, and the system file.
    pub(crate) attribute_files: Vec<PathBuf>,
}

/// The user's home directory, the only environment variable the tree reads.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The system and global files, read once per scan.
pub(crate) fn global_config() -> ConfigSet {
    let mut set = ConfigSet::default();
    read_file_into(Path::new("/etc/gitconfig"), false, 0, &mut set);
    if let Some(home) = home() {
        read_file_into(&home.join(".config/git/config"), false, 0, &mut set);
        read_file_into(&home.join(".gitconfig"), false, 0, &mut set);
    }
    set
}

/// `global` plus the repository's own files under `common_dir` / `git_dir`.
pub(crate) fn repo_config(global: &ConfigSet, common_dir: &Path, git_dir: &Path) -> ConfigSet {
    let mut set = global.clone();
    read_file_into(&common_dir.join("config"), false, 0, &mut set);
    if set.bool_value("extensions", "worktreeconfig") == Some(true) {
        read_file_into(&git_dir.join("config.worktree"), false, 0, &mut set);
    }
    set
}

fn read_file_into(path: &Path, conditional: bool, depth: usize, set: &mut ConfigSet) {
    // Git refuses deeper include chains too; a loop must not hang the scan.
    if depth > 10 {
        set.broken = true;
        return;
    }
    set.files.push(path.to_path_buf());
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(_) => {
            set.broken = true;
            return;
        }
    };
    let parsed = match parse(&bytes) {
        Ok(parsed) => parsed,
        Err(()) => {
            set.broken = true;
            return;
        }
    };
    let base = path.parent().unwrap_or(Path::new("/"));
    for mut entry in parsed {
        entry.conditional = conditional;
        let include =
            entry.key == "path" && (entry.section == "include" || entry.section == "includeif");
        if include {
            let nested = conditional || entry.section == "includeif";
            if let Some(target) = entry.value.as_deref().and_then(|v| expand_path(v, base)) {
                read_file_into(&target, nested, depth + 1, set);
            }
        } else {
            set.entries.push(entry);
        }
    }
}

/// A path value: `~/` is the home directory, a relative path is relative to `base`.
pub(crate) fn expand_path(value: &[u8], base: &Path) -> Option<PathBuf> {
    if value.is_empty() {
        return None;
    }
    if let Some(rest) = value.strip_prefix(b"~/") {
        return Some(home()?.join(PathBuf::from(OsString::from_vec(rest.to_vec()))));
    }
    let path = PathBuf::from(OsString::from_vec(value.to_vec()));
    Some(if path.is_absolute() {
        path
    } else {
        base.join(path)
    })
}

impl ConfigSet {
    fn matching(
        &self,
        section: &'static str,
        key: &'static str,
    ) -> impl DoubleEndedIterator<Item = &ConfigEntry> + '_ {
        self.entries
            .iter()
            .filter(move |e| e.section == section && e.subsection.is_none() && e.key == key)
    }

    /// The last unconditional value; `Some(None)` for a bare key.
    fn last(&self, section: &'static str, key: &'static str) -> Option<Option<&[u8]>> {
        self.matching(section, key)
            .rev()
            .find(|e| !e.conditional)
            .map(|e| e.value.as_deref())
    }

    /// The last unconditional boolean; `None` when unset or not a boolean.
    pub(crate) fn bool_value(&self, section: &'static str, key: &'static str) -> Option<bool> {
        self.last(section, key).and_then(parse_bool)
    }

    /// Whether every value of the key, conditional ones included, is `wanted` (or unset).
    fn all_bool(&self, section: &'static str, key: &'static str, wanted: bool) -> bool {
        self.matching(section, key)
            .all(|e| parse_bool(e.value.as_deref()) == Some(wanted))
    }

    /// The settings KEY-11 and the walk act on. Relative paths in values are relative to the
    /// work tree, where git runs.
    pub(crate) fn settings(&self, worktree: &Path) -> RepoSettings {
        let autocrlf_off = self.all_bool("core", "autocrlf", false);
        let trust_ctime = self.all_bool("core", "trustctime", true);
        let check_stat_default = self.matching("core", "checkstat").all(|e| {
            e.value
                .as_deref()
                .is_some_and(|v| v.eq_ignore_ascii_case(b"default"))
        });
        // `false` loosens the mode comparison, so it is taken only when no value says otherwise.
        let file_mode = !self.all_bool("core", "filemode", false)
            || self.matching("core", "filemode").next().is_none();
        let object_format = match self.last("extensions", "objectformat") {
            Some(Some(v)) if v.eq_ignore_ascii_case(b"sha256") => ObjectFormat::Sha256,
            _ => ObjectFormat::Sha1,
        };
        let unknown_format = matches!(
            self.last("extensions", "objectformat"),
            Some(Some(v)) if !v.eq_ignore_ascii_case(b"sha256") && !v.eq_ignore_ascii_case(b"sha1")
        );
        let excludes_file = match self.last("core", "excludesfile") {
            Some(Some(v)) => expand_path(v, worktree),
            _ => home().map(|h| h.join(".config/git/ignore")),
        };
        let mut attribute_files: Vec<PathBuf> = self
            .matching("core", "attributesfile")
            .filter_map(|e| expand_path(e.value.as_deref()?, worktree))
            .collect();
        if let Some(home) = home() {
            attribute_files.push(home.join(".config/git/attributes"));
        }
        attribute_files.push(PathBuf::from("/etc/gitattributes"));
        RepoSettings {
            file_mode,
            shortcut_allowed: !self.broken
                && !unknown_format
                && autocrlf_off
                && trust_ctime
                && check_stat_default,
            ignore_case: self.bool_value("core", "ignorecase") == Some(true),
            object_format,
            excludes_file,
            attribute_files,
        }
    }
}

/// Git's boolean spellings; a bare key is true; integers are true when non-zero.
fn parse_bool(value: Option<&[u8]>) -> Option<bool> {
    let Some(value) = value else {
        return Some(true);
    };
    let lower = value.to_ascii_lowercase();
    match lower.as_slice() {
        b"true" | b"yes" | b"on" => Some(true),
        b"false" | b"no" | b"off" | b"" => Some(false),
        digits if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) => {
            Some(digits.iter().any(|d| *d != b'0'))
        }
        _ => None,
    }
}

/// Parses one configuration file's text. `Err` for anything git would refuse.
pub(crate) fn parse(text: &[u8]) -> Result<Vec<ConfigEntry>, ()> {
    let mut p = Parser { s: text, i: 0 };
    let mut out = Vec::new();
    let mut section: Option<(String, Option<Vec<u8>>)> = None;
    loop {
        p.skip_while(|c| c.is_ascii_whitespace());
        let Some(c) = p.peek() else { break };
        match c {
            b'#' | b';' => p.skip_while(|c| c != b'\n'),
            b'[' => {
                p.i += 1;
                section = Some(p.section_header()?);
                // A key may follow the header on the same line.
            }
            c if c.is_ascii_alphabetic() => {
                let (name, sub) = section.clone().ok_or(())?;
                let key = p.take_while(|c| c.is_ascii_alphanumeric() || c == b'-');
                p.skip_while(|c| c == b' ' || c == b'\t');
                let value = match p.peek() {
                    Some(b'=') => {
                        p.i += 1;
                        Some(p.value()?)
                    }
                    None | Some(b'\n') | Some(b'\r') | Some(b'#') | Some(b';') => None,
                    Some(_) => return Err(()),
                };
                out.push(ConfigEntry {
                    section: name,
                    subsection: sub,
                    key: String::from_utf8_lossy(key).to_ascii_lowercase(),
                    value,
                    conditional: false,
                });
            }
            _ => return Err(()),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_while(&mut self, f: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a [u8] {
        let start = self.i;
        self.skip_while(f);
        &self.s[start..self.i]
    }

    /// After `[`: `name]`, `name "sub"]` or the old `name.sub]`.
    fn section_header(&mut self) -> Result<(String, Option<Vec<u8>>), ()> {
        let name = self.take_while(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.');
        if name.is_empty() {
            return Err(());
        }
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.skip_while(|c| c == b' ' || c == b'\t');
        match self.peek() {
            Some(b']') => {
                self.i += 1;
                Ok(match name.split_once('.') {
                    Some((section, sub)) => (section.to_string(), Some(sub.as_bytes().to_vec())),
                    None => (name, None),
                })
            }
            Some(b'"') => {
                self.i += 1;
                let mut sub = Vec::new();
                loop {
                    match self.peek().ok_or(())? {
                        b'"' => break,
                        b'\n' => return Err(()),
                        b'\\' => {
                            self.i += 1;
                            sub.push(self.peek().ok_or(())?);
                        }
                        c => sub.push(c),
                    }
                    self.i += 1;
                }
                self.i += 1;
                if self.peek() != Some(b']') {
                    return Err(());
                }
                self.i += 1;
                Ok((name, Some(sub)))
            }
            _ => Err(()),
        }
    }

    /// After `=`: up to the end of the line, with quotes, escapes, comments and `\` line
    /// continuations; unquoted trailing blanks dropped.
    fn value(&mut self) -> Result<Vec<u8>, ()> {
        self.skip_while(|c| c == b' ' || c == b'\t');
        let mut out = Vec::new();
        let mut quoted = false;
        // Length of `out` up to the last byte that is not an unquoted blank.
        let mut keep = 0;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'\n' if !quoted => break,
                b'\n' => return Err(()),
                b'"' => {
                    quoted = !quoted;
                    keep = out.len();
                }
                b'#' | b';' if !quoted => {
                    self.skip_while(|c| c != b'\n');
                    break;
                }
                b'\\' => {
                    let escaped = self.peek().ok_or(())?;
                    self.i += 1;
                    match escaped {
                        b'\n' => continue,
                        b'\r' if self.peek() == Some(b'\n') => {
                            self.i += 1;
                            continue;
                        }
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'\\' | b'"' => out.push(escaped),
                        _ => return Err(()),
                    }
                    keep = out.len();
                }
                b' ' | b'\t' | b'\r' if !quoted => out.push(c),
                c => {
                    out.push(c);
                    keep = out.len();
                }
            }
        }
        if quoted {
            return Err(());
        }
        out.truncate(keep);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, Option<String>, String, Option<String>)> {
        parse(text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|e| {
                (
                    e.section,
                    e.subsection.map(|s| String::from_utf8(s).unwrap()),
                    e.key,
                    e.value.map(|v| String::from_utf8(v).unwrap()),
                )
            })
            .collect()
    }

    #[test]
    fn parses_sections_keys_and_values() {
        let text = "# comment\n[core]\n\tfileMode = false ; trailing\n\tbare\n[remote \"ori gin\"]\n  url = \"a b\" \\\n  c  \n[Core.Sub]\nX=1\n[core] trustctime=no\n";
        assert_eq!(
            entries(text),
            vec![
                ("core".into(), None, "filemode".into(), Some("false".into())),
                ("core".into(), None, "bare".into(), None),
                (
                    "remote".into(),
                    Some("ori gin".into()),
                    "url".into(),
                    Some("a b   c".into())
                ),
                // The old `[section.sub]` syntax lowercases the subsection, as git does.
                (
                    "core".into(),
                    Some("sub".into()),
                    "x".into(),
                    Some("1".into())
                ),
                ("core".into(), None, "trustctime".into(), Some("no".into())),
            ]
        );
    }

    #[test]
    fn refuses_what_git_refuses() {
        assert!(parse(b"key = 1\n").is_err());
        assert!(parse(b"[core]\nx = \"open\n").is_err());
        assert!(parse(b"[core]\nx = a\\qb\n").is_err());
        assert!(parse(b"[core\n").is_err());
    }

    fn settings(text: &str) -> RepoSettings {
        let set = ConfigSet {
            entries: parse(text.as_bytes()).unwrap(),
            broken: false,
            files: Vec::new(),
        };
        set.settings(Path::new("/repo"))
    }

    #[test]
    fn shortcut_needs_default_stat_settings() {
        assert!(settings("[core]\nfilemode = true\n").shortcut_allowed);
        assert!(settings("[core]\nautocrlf = false\ntrustctime\n").shortcut_allowed);
        assert!(!settings("[core]\nautocrlf = input\n").shortcut_allowed);
        assert!(!settings("[core]\nautocrlf\n").shortcut_allowed);
        assert!(!settings("[core]\ntrustctime = 0\n").shortcut_allowed);
        assert!(!settings("[core]\ncheckstat = minimal\n").shortcut_allowed);
        assert!(settings("[core]\ncheckstat = default\n").shortcut_allowed);
        assert!(!settings("[extensions]\nobjectformat = sha512\n").shortcut_allowed);
    }

    #[test]
    fn conditional_values_only_make_the_shortcut_more_cautious() {
        let mut set = ConfigSet {
            entries: parse(b"[core]\nfilemode = false\n").unwrap(),
            broken: false,
            files: Vec::new(),
        };
        let mut conditional = parse(b"[core]\nautocrlf = true\nignorecase = true\n").unwrap();
        for e in &mut conditional {
            e.conditional = true;
        }
        set.entries.extend(conditional);
        let s = set.settings(Path::new("/repo"));
        assert!(!s.shortcut_allowed);
        assert!(!s.file_mode);
        assert!(!s.ignore_case);
    }

    #[test]
    fn object_format_and_paths() {
        let s = settings("[extensions]\n\tobjectFormat = sha256\n[core]\nexcludesFile = ig\n");
        assert_eq!(s.object_format, ObjectFormat::Sha256);
        assert_eq!(s.excludes_file, Some(PathBuf::from("/repo/ig")));
    }

    #[test]
    fn includes_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("extra"), "[core]\n\ttrustctime = false\n").unwrap();
        std::fs::write(
            dir.path().join("config"),
            "[include]\n\tpath = extra\n[core]\n\tfilemode = false\n",
        )
        .unwrap();
        let set = repo_config(&ConfigSet::default(), dir.path(), dir.path());
        let s = set.settings(dir.path());
        assert!(!s.shortcut_allowed);
        assert!(!s.file_mode);
    }
}
