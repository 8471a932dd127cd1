//! The fuzzer's edits (see the parent module's list): each picks a path, changes it the way a
//! user or git would, and returns the line the edit log keeps.

use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::time::{Duration, SystemTime};

use super::*;

impl Fuzz {
    /// Applies one random edit and logs it. Edits that the file system refuses (a parent that
    /// is a dangling symlink) are logged as such; the reference reads whatever state remains.
    pub(super) fn edit(&mut self) {
        self.stats.edits += 1;
        let what = match self.rng.below(100) {
            0..=13 => self.write(),
            14..=21 => self.rewrite_keeping_mtime(false),
            22..=25 => self.rewrite_keeping_mtime(true),
            26..=28 => self.touch(),
            29..=30 => self.same_bytes_new_inode(),
            31..=38 => self.chmod(),
            39..=44 => self.swap_for_a_symlink(),
            45..=50 => self.rename(),
            51..=58 => self.add(false),
            59..=63 => self.add(true),
            64..=71 => self.delete(),
            72..=73 => self.ignore_rules(),
            74 => self.swap_directory(),
            75..=78 => Ok(self.git(&["add", "-A"])),
            79..=82 => {
                self.git(&["add", "-A"]);
                Ok(self.git(&["commit", "-q", "--allow-empty", "-m", "fuzz"]))
            }
            83..=85 => self.git_on_a_file(),
            86..=93 => self.git_on_the_index(),
            94..=97 => {
                let dir = format!("packages/{}/out", self.project());
                let _ = std::fs::remove_dir_all(self.f.path(&dir));
                Ok(format!("delete {dir}/"))
            }
            _ => self.npmrc(),
        };
        let what = what.unwrap_or_else(|e| format!("an edit failed part-way: {e}"));
        self.log.push(format!("edit {}: {what}", self.stats.edits));
    }

    fn project(&mut self) -> &'static str {
        self.rng.pick(&PROJECTS).0
    }

    /// A directory edits happen in (root-relative).
    fn area(&mut self) -> String {
        if self.rng.below(12) == 0 {
            return "shared".to_string();
        }
        let project = self.project();
        match self.rng.pick(&["src", "src", "src/sub", "test", ""]) {
            "" => format!("packages/{project}"),
            sub => format!("packages/{project}/{sub}"),
        }
    }

    /// An existing editable file or symlink, if one turns up in a few areas.
    fn existing(&mut self) -> Option<String> {
        for _ in 0..6 {
            let area = self.area();
            let mut files: Vec<String> = std::fs::read_dir(self.f.path(&area))
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !PROTECTED.contains(&name.as_str()) && !name.starts_with(".fuzz"))
                .map(|name| format!("{area}/{name}"))
                .collect();
            files.sort();
            if !files.is_empty() {
                return Some(files.swap_remove(self.rng.below(files.len())));
            }
        }
        None
    }

    fn existing_regular(&mut self) -> Option<String> {
        (0..4).find_map(|_| {
            let path = self.existing()?;
            let meta = std::fs::symlink_metadata(self.f.path(&path)).ok()?;
            meta.is_file().then_some(path)
        })
    }

    fn new_path(&mut self) -> String {
        let area = self.area();
        format!("{area}/{}", self.rng.pick(&NAMES))
    }

    /// Writes `bytes` to `rel`, replacing a symlink rather than writing through it.
    fn put(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.f.path(rel);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&path)?;
        }
        std::fs::create_dir_all(path.parent().expect("a parent"))?;
        std::fs::write(&path, bytes)
    }

    fn write(&mut self) -> io::Result<String> {
        let path = match self.existing() {
            Some(path) if self.rng.below(4) != 0 => path,
            _ => self.new_path(),
        };
        let bytes = self.rng.bytes(24);
        self.put(&path, &bytes)?;
        Ok(format!("write {path} ({} bytes)", bytes.len()))
    }

    /// Same size, different bytes, mtime put back: only ctime (and for `new_inode` the inode)
    /// tells the change.
    fn rewrite_keeping_mtime(&mut self, new_inode: bool) -> io::Result<String> {
        let Some(path) = self.existing_regular() else {
            return self.write();
        };
        let abs = self.f.path(&path);
        let meta = std::fs::metadata(&abs)?;
        let mut bytes = std::fs::read(&abs)?;
        if bytes.is_empty() {
            return self.write();
        }
        wait_past_ctime(&meta);
        let at = self.rng.below(bytes.len());
        bytes[at] ^= 1 + self.rng.below(255) as u8;
        if new_inode {
            let tmp = abs.with_file_name(".fuzz-tmp");
            std::fs::write(&tmp, &bytes)?;
            std::fs::set_permissions(&tmp, meta.permissions())?;
            set_mtime(&tmp, meta.modified()?)?;
            std::fs::rename(&tmp, &abs)?;
        } else {
            std::fs::write(&abs, &bytes)?;
            set_mtime(&abs, meta.modified()?)?;
        }
        let how = if new_inode { "new inode" } else { "in place" };
        Ok(format!("rewrite {path} keeping size and mtime ({how})"))
    }

    /// A new mtime, the same bytes: no key moves.
    fn touch(&mut self) -> io::Result<String> {
        let Some(path) = self.existing_regular() else {
            return self.write();
        };
        let back = Duration::from_secs(self.rng.below(100_000) as u64);
        set_mtime(&self.f.path(&path), SystemTime::now() - back)?;
        Ok(format!("touch {path} (mtime -{}s)", back.as_secs()))
    }

    /// The same bytes and mode through a new inode: no key moves.
    fn same_bytes_new_inode(&mut self) -> io::Result<String> {
        let Some(path) = self.existing_regular() else {
            return self.write();
        };
        let abs = self.f.path(&path);
        let tmp = abs.with_file_name(".fuzz-tmp");
        std::fs::copy(&abs, &tmp)?;
        std::fs::rename(&tmp, &abs)?;
        Ok(format!("rewrite {path} with the same bytes (new inode)"))
    }

    /// Owner `x` moves the key; group or other `x` alone does not.
    fn chmod(&mut self) -> io::Result<String> {
        let Some(path) = self.existing_regular() else {
            return self.write();
        };
        let mode = self.rng.pick(&[0o644, 0o755, 0o744, 0o654, 0o645, 0o600]);
        std::fs::set_permissions(self.f.path(&path), std::fs::Permissions::from_mode(mode))?;
        Ok(format!("chmod {mode:o} {path}"))
    }

    fn swap_for_a_symlink(&mut self) -> io::Result<String> {
        let Some(path) = self.existing() else {
            return self.write();
        };
        let target = match self.rng.below(4) {
            0 => format!("sub/{}", self.rng.pick(&NAMES)),
            1 => "../README.md".to_string(),
            _ => self.rng.pick(&NAMES).to_string(),
        };
        let abs = self.f.path(&path);
        std::fs::remove_file(&abs)?;
        symlink(&target, &abs)?;
        Ok(format!("replace {path} with a symlink to {target}"))
    }

    fn rename(&mut self) -> io::Result<String> {
        let Some(from) = self.existing() else {
            return self.write();
        };
        let to = match from.split_once("/src") {
            Some((dir, _)) => {
                let sub = self.rng.pick(&["src", "src/sub"]);
                format!("{dir}/{sub}/{}", self.rng.pick(&NAMES))
            }
            None => self.new_path(),
        };
        let dest = self.f.path(&to);
        std::fs::create_dir_all(dest.parent().expect("a parent"))?;
        std::fs::rename(self.f.path(&from), &dest)?;
        Ok(format!("rename {from} to {to}"))
    }

    /// An untracked file, or one git ignores: the latter moves no key but `p0#build`'s, through
    /// the literal `local.env` (which this also deletes at times).
    fn add(&mut self, ignored: bool) -> io::Result<String> {
        let local = self.f.path("packages/p0/local.env");
        let path = match (ignored, self.rng.below(4)) {
            (false, _) => self.new_path(),
            (true, 0) => format!("packages/{}/out/stray.txt", self.project()),
            (true, 1) if local.exists() && self.rng.below(2) == 0 => {
                std::fs::remove_file(&local)?;
                return Ok("delete packages/p0/local.env".to_string());
            }
            (true, 1) => "packages/p0/local.env".to_string(),
            (true, _) => format!("{}/junk.log", self.area()),
        };
        let bytes = self.rng.bytes(16);
        self.put(&path, &bytes)?;
        let what = if ignored { "ignored " } else { "" };
        Ok(format!("add {what}{path} ({} bytes)", bytes.len()))
    }

    fn delete(&mut self) -> io::Result<String> {
        let Some(path) = self.existing() else {
            return self.write();
        };
        std::fs::remove_file(self.f.path(&path))?;
        Ok(format!("delete {path}"))
    }

    fn ignore_rules(&mut self) -> io::Result<String> {
        let project = self.project();
        let path = match self.rng.below(5) {
            0 => ".git/info/exclude".to_string(),
            1 | 2 => format!("packages/{project}/.gitignore"),
            _ => format!("packages/{project}/src/.gitignore"),
        };
        if self.rng.below(4) == 0 {
            let _ = std::fs::remove_file(self.f.path(&path));
            return Ok(format!("delete {path}"));
        }
        let rules = self.rng.pick(&[
            "",
            "*.tmp\n",
            "b.txt\n",
            "!*.log\n",
            "sub/\n",
            "*.sh\n!d.sh\n",
            "/a.txt\n",
            "i\n",
        ]);
        self.put(&path, rules.as_bytes())?;
        Ok(format!("write {path}: {rules:?}"))
    }

    /// `src/sub` becomes a symlink to a directory (`.` and `..` make loops for a walker that
    /// would follow it), or a directory again. Half the time its files leave the index first;
    /// otherwise they stay tracked and are deleted from the work tree as git sees it (see
    /// `a_tracked_path_below_a_symlinked_directory_is_deleted`).
    fn swap_directory(&mut self) -> io::Result<String> {
        let path = format!("packages/{}/src/sub", self.project());
        let abs = self.f.path(&path);
        if std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&abs)?;
            self.put(&format!("{path}/c.txt"), b"ccc\n")?;
            return Ok(format!("replace {path} with a directory holding c.txt"));
        }
        let untrack = self.rng.below(2) == 0;
        if untrack {
            // `--force-remove`, as `git rm` leaves skip-worktree entries alone.
            let tracked = git(self.f.root(), &["ls-files", "-z", "--", &path]);
            let mut args = vec!["update-index", "--force-remove", "--"];
            args.extend(
                tracked
                    .split(|b| *b == 0)
                    .filter_map(|p| std::str::from_utf8(p).ok()),
            );
            args.retain(|a| !a.is_empty());
            self.git(&args);
        }
        let _ = std::fs::remove_dir_all(&abs);
        let _ = std::fs::remove_file(&abs);
        let target = self.rng.pick(&["../test", ".", "..", "nowhere"]);
        std::fs::create_dir_all(abs.parent().expect("a parent"))?;
        symlink(target, &abs)?;
        let how = if untrack {
            "untrack {path}, then make"
        } else {
            "make"
        };
        Ok(format!(
            "{} it a symlink to {target}",
            how.replace("{path}", &path)
        ))
    }

    /// `git add` or `git rm --cached` of one path.
    fn git_on_a_file(&mut self) -> io::Result<String> {
        let path = if self.rng.below(2) == 0 {
            self.existing()
        } else {
            self.tracked()
        };
        let Some(path) = path else {
            return Ok(self.git(&["add", "-A"]));
        };
        if self.rng.below(3) == 0 {
            Ok(self.git(&["rm", "-q", "-f", "--cached", "--", &path]))
        } else {
            Ok(self.git(&["add", "--", &path]))
        }
    }

    /// The index changes, the work tree does not: no key moves.
    fn git_on_the_index(&mut self) -> io::Result<String> {
        let Some(path) = self.tracked() else {
            return Ok(self.git(&["add", "-A"]));
        };
        let flag = self.rng.pick(&[
            "--chmod=+x",
            "--chmod=-x",
            "--skip-worktree",
            "--no-skip-worktree",
            "--assume-unchanged",
            "--no-assume-unchanged",
        ]);
        Ok(self.git(&["update-index", flag, "--", &path]))
    }

    /// A tracked, editable path.
    fn tracked(&mut self) -> Option<String> {
        self.stats.git += 1;
        let out = git(self.f.root(), &["ls-files", "-z"]);
        let mut paths: Vec<String> = out
            .split(|b| *b == 0)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.is_empty() && !PROTECTED.iter().any(|name| p.ends_with(name)))
            .collect();
        (!paths.is_empty()).then(|| paths.swap_remove(self.rng.below(paths.len())))
    }

    /// Runs git; a refusal (`git add` of an ignored path) is logged, not fatal.
    fn git(&mut self, args: &[&str]) -> String {
        self.stats.git += 1;
        let ok = Command::new("git")
            .args(args)
            .current_dir(self.f.root())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run git")
            .success();
        let refused = if ok { "" } else { " (git refused)" };
        format!("git {}{refused}", args.join(" "))
    }

    /// A KEY-3 file at the root: every key moves.
    fn npmrc(&mut self) -> io::Result<String> {
        if self.rng.below(2) == 0 {
            let _ = std::fs::remove_file(self.f.path(".npmrc"));
            return Ok("delete .npmrc".to_string());
        }
        let bytes = self.rng.bytes(8);
        self.put(".npmrc", &bytes)?;
        Ok(format!("write .npmrc ({} bytes)", bytes.len()))
    }
}
