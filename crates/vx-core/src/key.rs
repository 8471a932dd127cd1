//! Cache keys (KEY-1 …): the versioned byte encoding of KEY-1 over the eleven fields of KEY-2.
//!
//! A key is `BLAKE3(F1 ‖ … ‖ F11)`; each field is `label ‖ 0x00 ‖ u64le(len) ‖ payload`. Inside
//! a payload an *item* is `u64le(len) ‖ bytes`, a pair or triple is its items in sequence, and
//! a *list* is `u64le(n)` followed by its elements. Nothing is ever omitted: an empty list is
//! `u64le(0)`. The caller gathers the facts (file identities, environment values, probe
//! outputs, upstream keys); this module only encodes them, so the encoding can be tested
//! byte for byte without a file system.
//!
//! | # | Label | What it folds | Why |
//! |---|---|---|---|
//! | 1 | `format` | `vx-key-4` | bumping it invalidates every key (ARCH-5) |
//! | 2 | `task` | `project#task` | two tasks never share an entry |
//! | 3 | `platform` | `linux-x86_64`, or `any` for `cache.portable` | native outputs differ per platform |
//! | 4 | `workspace` | (file, blob id) of each root lockfile/package-manager file present; a lockfile vx reads folds the digest of the project's own dependency set instead, `deps <hex>` (KEY-3) | installed dependencies change outputs |
//! | 5 | `manifest` | blob id of the project's `package.json`, or `absent` | scripts, dependencies |
//! | 6 | `config` | canonical JSON of the resolved task (KEY-5) | the command and its settings |
//! | 7 | `args` | forwarded arguments, requested tasks only (KEY-6) | they change what runs |
//! | 8 | `env` | `NAME=value` / `NAME` for `cache.env` (KEY-7) | unset, empty and set differ |
//! | 9 | `runtime` | (command, output) of each probe, then workspace probes (KEY-8) | tool versions |
//! | 10 | `upstream` | (id, value) of folded upstreams (KEY-9): an upstream with outputs folds [`outputs_fold`] of what it produced (early cutoff), any other (and one `cache.upstream-keys` names) its key | what they produced |
//! | 11 | `inputs` | (path, mode, blob id) of each input file (KEY-10, KEY-11) | the sources |
//!
//! Deliberately left out (KEY-13): pass-through values, the essential environment,
//! `description`, `timeout`, `retries`, `remote`, `tags`, run flags, absolute paths, host and
//! user names, timestamps and the vx version — none changes the bytes a successful run
//! produces, and leaving them out keeps keys equal across machines (KEY-4).

use std::fmt;

use serde_json::{Map, Value};

use crate::config::{Persistent, TaskConfig};

/// The key format version folded as field 1 (ARCH-5).
/// 2 since artifacts keep symlinks and directories (artifact format 2): a key of format 1
/// names an artifact that stored a link as its target's bytes, so none is looked up again.
/// 3 since field 4 folds a lockfile's per-project dependency set instead of its blob id.
/// 4 since field 10 folds the digest of an upstream's outputs instead of its key (early
/// cutoff): a key of format 3 that folded an upstream key would otherwise be read as folding
/// outputs.
pub const KEY_FORMAT: &str = "vx-key-4";

/// What a dependant's field 10 folds for an upstream with outputs (KEY-9's early cutoff):
/// `outputs ` and the BLAKE3 of `vx-cut-1`, the digest of the output tree the upstream produced
/// (`produced`, from its artifact), and the upstream's own field 10 (`upstream`, (id, value)
/// pairs). Folding the upstream's own upstreams keeps a dependant that also reads what they
/// produced (a type declaration re-exported through a library whose own outputs did not move)
/// from being cut off wrongly: the cutoff is where an edit left the outputs as they were, and
/// outputs that moved re-run everything above them, as key folding did.
pub fn outputs_fold(produced: &str, upstream: &[(String, String)]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&items(
        [b"vx-cut-1".as_slice(), produced.as_bytes()].into_iter(),
    ));
    hasher.update(&pairs(upstream));
    format!("outputs {}", hex(hasher.finalize().as_bytes()))
}

/// Whether a folded value of field 10 is an upstream's outputs ([`outputs_fold`]) rather
/// than its key.
pub fn is_outputs_fold(value: &str) -> bool {
    value.starts_with("outputs ")
}

/// A derived key: 32 bytes, written as 64 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

impl Key {
    pub fn hex(&self) -> String {
        hex(&self.0)
    }

    /// The first 12 hex digits, as frames and `vx why` show a key.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// The mode of an input that folds as absent (KEY-2).
pub const ABSENT_MODE: &str = "000000";

/// KEY-3: the root files that fingerprint the installed dependencies, in the table's order.
/// Field 4 folds those present; a change to any of them seeds every task under `--affected`
/// (SEL-5).
pub const WORKSPACE_FILES: [&str; 10] = [
    "pnpm-lock.yaml",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "pnpm-workspace.yaml",
    ".yarnrc.yml",
    ".npmrc",
    "bunfig.toml",
];

/// The packages one project installs, as a lockfile resolves them (KEY-3): what field 4
/// folds for that lockfile instead of the whole file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DependencySet {
    /// The lockfile's name (`pnpm-lock.yaml`).
    pub file: String,
    /// `deps ` and the BLAKE3 of the list of items `name@version`, sorted bytewise (KEY-1's
    /// encoding of a list).
    pub digest: String,
    /// (name, version), sorted, without duplicates.
    pub packages: Vec<(String, String)>,
}

impl DependencySet {
    pub fn new(
        file: &str,
        packages: std::collections::BTreeSet<(String, String)>,
    ) -> DependencySet {
        let packages: Vec<(String, String)> = packages.into_iter().collect();
        let mut idents: Vec<String> = packages.iter().map(|(n, v)| format!("{n}@{v}")).collect();
        idents.sort_unstable();
        let digest = blake3::hash(&items(idents.iter().map(String::as_bytes)));
        DependencySet {
            file: file.to_string(),
            digest: format!("deps {}", hex(digest.as_bytes())),
            packages,
        }
    }
}

/// One input file of field 11.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Root-relative POSIX path.
    pub path: String,
    /// `100644`, `100755`, `120000`, or [`ABSENT_MODE`].
    pub mode: &'static str,
    /// Lowercase hex blob id, or `absent`.
    pub blob: String,
}

impl InputFile {
    pub fn absent(path: String) -> InputFile {
        InputFile {
            path,
            mode: ABSENT_MODE,
            blob: "absent".into(),
        }
    }
}

/// Everything field by field, as gathered by the caller. Lists are sorted here where KEY-2
/// says so, so callers cannot get the order wrong.
#[derive(Debug, Clone, Default)]
pub struct KeyInputs {
    pub task: String,
    pub platform: String,
    /// (file name, blob id) in the KEY-3 table's order.
    pub workspace: Vec<(String, String)>,
    /// Blob id of `package.json`; `None` folds `absent`.
    pub manifest: Option<String>,
    /// Canonical JSON of the resolved task ([`task_config_json`]).
    pub config: String,
    pub args: Vec<String>,
    /// (name, value) for every variable folded; `None` = unset.
    pub env: Vec<(String, Option<String>)>,
    pub runtime: Vec<(String, String)>,
    pub workspace_runtime: Vec<(String, String)>,
    /// (upstream id, upstream key hex).
    pub upstream: Vec<(String, String)>,
    pub inputs: Vec<InputFile>,
}

impl KeyInputs {
    /// Sorts and deduplicates what KEY-2 orders (env by name, upstream by id, inputs by path).
    pub fn normalise(&mut self) {
        self.env.sort_by(|a, b| a.0.cmp(&b.0));
        self.env.dedup_by(|a, b| a.0 == b.0);
        self.upstream.sort_by(|a, b| a.0.cmp(&b.0));
        self.upstream.dedup_by(|a, b| a.0 == b.0);
        self.inputs.sort_by(|a, b| a.path.cmp(&b.path));
        self.inputs.dedup_by(|a, b| a.path == b.path);
    }

    /// The key (KEY-1). Call [`KeyInputs::normalise`] first.
    pub fn derive(&self) -> Key {
        let mut hasher = blake3::Hasher::new();
        field(&mut hasher, "format", KEY_FORMAT.as_bytes());
        field(&mut hasher, "task", self.task.as_bytes());
        field(&mut hasher, "platform", self.platform.as_bytes());
        field(&mut hasher, "workspace", &pairs(&self.workspace));
        let manifest = self.manifest.as_deref().unwrap_or("absent");
        field(&mut hasher, "manifest", manifest.as_bytes());
        field(&mut hasher, "config", self.config.as_bytes());
        field(
            &mut hasher,
            "args",
            &items(self.args.iter().map(String::as_bytes)),
        );
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(n, v)| env_item(n, v.as_deref()))
            .collect();
        field(&mut hasher, "env", &items(env.iter().map(String::as_bytes)));
        let mut runtime = pairs(&self.runtime);
        runtime.extend(pairs(&self.workspace_runtime));
        field(&mut hasher, "runtime", &runtime);
        field(&mut hasher, "upstream", &pairs(&self.upstream));
        let mut inputs = Vec::new();
        inputs.extend((self.inputs.len() as u64).to_le_bytes());
        for input in &self.inputs {
            item(&mut inputs, input.path.as_bytes());
            item(&mut inputs, input.mode.as_bytes());
            item(&mut inputs, input.blob.as_bytes());
        }
        field(&mut hasher, "inputs", &inputs);
        Key(*hasher.finalize().as_bytes())
    }

    /// Per-component fingerprints for `vx why` (HIST-2). Value-bearing kinds (`args`, `env`,
    /// `runtime`, `ws-runtime`) carry a BLAKE3 hash keyed with the store's salt, never the
    /// value.
    pub fn components(&self, salt: &[u8; 32]) -> Vec<Component> {
        let salted = |bytes: &[u8]| hex(blake3::keyed_hash(salt, bytes).as_bytes());
        let plain = |kind: &str, name: &str, digest: String| Component {
            kind: kind.into(),
            name: name.into(),
            digest,
        };
        let mut out = vec![
            plain("format", "", KEY_FORMAT.into()),
            plain("platform", "", self.platform.clone()),
            plain(
                "manifest",
                "package.json",
                self.manifest.clone().unwrap_or_else(|| "absent".into()),
            ),
            plain(
                "config",
                "",
                hex(blake3::hash(self.config.as_bytes()).as_bytes()),
            ),
            plain(
                "args",
                "",
                salted(&items(self.args.iter().map(String::as_bytes))),
            ),
        ];
        for (file, blob) in &self.workspace {
            out.push(plain("workspace", file, blob.clone()));
        }
        for (name, value) in &self.env {
            out.push(plain(
                "env",
                name,
                salted(env_item(name, value.as_deref()).as_bytes()),
            ));
        }
        for (kind, list) in [
            ("runtime", &self.runtime),
            ("ws-runtime", &self.workspace_runtime),
        ] {
            for (command, output) in list {
                out.push(plain(kind, command, salted(output.as_bytes())));
            }
        }
        for (id, key) in &self.upstream {
            out.push(plain("upstream", id, key.clone()));
        }
        for input in &self.inputs {
            out.push(plain(
                "input",
                &input.path,
                format!("{} {}", input.mode, input.blob),
            ));
        }
        out
    }
}

/// One recorded component of a key (HIST-2).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Component {
    pub kind: String,
    pub name: String,
    pub digest: String,
}

/// A group's roll-up key (KEY-9): BLAKE3 over `vx-group-1` and the list of (member id,
/// member key) sorted by member id.
pub fn group_key(members: &[(String, String)]) -> Key {
    let mut members = members.to_vec();
    members.sort();
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"vx-group-1");
    hasher.update(&pairs(&members));
    Key(*hasher.finalize().as_bytes())
}

/// The default `cache.upstream`: every same-project and every cross-project upstream.
pub const DEFAULT_UPSTREAM: [&str; 2] = ["*", "^*"];

/// KEY-9: whether `cache.upstream` folds the upstream `project#task` into the key of a task
/// of `own_project`. Entries apply in order and the last match wins; `!` entries exclude. A
/// pass-through fingerprint counts as the cross-project upstream `project#name`: `^*`, a
/// matching `^name` and a matching `project#name` match it; `*` and same-project entries
/// never do.
pub fn folds_upstream(
    entries: &[String],
    own_project: &str,
    project: &str,
    task: &str,
    pass_through: bool,
) -> bool {
    let same = project == own_project && !pass_through;
    let mut folded = false;
    for entry in entries {
        let (include, body) = match entry.strip_prefix('!') {
            Some(body) => (false, body),
            None => (true, entry.as_str()),
        };
        let matches = if body == "*" {
            same
        } else if body == "^*" {
            !same
        } else if let Some(name) = body.strip_prefix('^') {
            !same && crate::graph::wildcard_match(name, task)
        } else if let Some((p, t)) = body.split_once('#') {
            crate::graph::wildcard_match(p, project) && crate::graph::wildcard_match(t, task)
        } else {
            same && crate::graph::wildcard_match(body, task)
        };
        if matches {
            folded = include;
        }
    }
    folded
}

fn env_item(name: &str, value: Option<&str>) -> String {
    match value {
        Some(value) => format!("{name}={value}"),
        None => name.to_string(),
    }
}

fn field(hasher: &mut blake3::Hasher, label: &str, payload: &[u8]) {
    hasher.update(label.as_bytes());
    hasher.update(&[0]);
    hasher.update(&(payload.len() as u64).to_le_bytes());
    hasher.update(payload);
}

fn item(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend((bytes.len() as u64).to_le_bytes());
    out.extend(bytes);
}

fn items<'a>(list: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((list.len() as u64).to_le_bytes());
    for bytes in list {
        item(&mut out, bytes);
    }
    out
}

fn pairs(list: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((list.len() as u64).to_le_bytes());
    for (a, b) in list {
        item(&mut out, a.as_bytes());
        item(&mut out, b.as_bytes());
    }
    out
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The resolved task configuration of KEY-5 as canonical JSON (RFC 8785): every key the
/// table can hold is spelled out with its default, so writing a default explicitly never
/// moves a key. `description`, `timeout`, `retries`, `remote` and `extends` are left out.
pub fn task_config_json(task: &TaskConfig) -> String {
    let strings = |list: &[String]| Value::Array(list.iter().cloned().map(Value::String).collect());
    let sorted = |list: &[String]| {
        let mut list = list.to_vec();
        list.sort();
        list.dedup();
        strings(&list)
    };
    let mut object = Map::new();
    object.insert(
        "command".into(),
        task.command.clone().map_or(Value::Null, Value::String),
    );
    let depends_on: Vec<String> = task.depends_on.iter().map(|d| d.value.clone()).collect();
    object.insert("depends-on".into(), strings(&depends_on));
    let env = task.env.clone().unwrap_or_default();
    let mut env_object = Map::new();
    env_object.insert("pass-through".into(), sorted(&env.pass_through));
    env_object.insert(
        "define".into(),
        Value::Object(
            env.define
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
    );
    env_object.insert("secret".into(), sorted(&env.secret));
    object.insert("env".into(), Value::Object(env_object));
    object.insert(
        "persistent".into(),
        match &task.persistent {
            None | Some(Persistent::Plain(false)) => Value::Bool(false),
            Some(Persistent::Plain(true)) => Value::Bool(true),
            Some(Persistent::Ready(ready)) => {
                let mut m = Map::new();
                m.insert("ready-when".into(), Value::String(ready.ready_when.clone()));
                Value::Object(m)
            }
        },
    );
    object.insert(
        "interactive".into(),
        Value::Bool(task.interactive.unwrap_or(false)),
    );
    object.insert(
        "sandbox".into(),
        match &task.sandbox {
            None => Value::Null,
            Some(s) => {
                let mut m = Map::new();
                m.insert("read".into(), sorted(&s.read));
                m.insert("write".into(), sorted(&s.write));
                m.insert("network".into(), sorted(&s.network));
                Value::Object(m)
            }
        },
    );
    object.insert(
        "cache".into(),
        match &task.cache {
            None => Value::Null,
            Some(c) => {
                let mut m = Map::new();
                m.insert("inputs".into(), strings(c.inputs.as_deref().unwrap_or(&[])));
                m.insert("workspace-inputs".into(), strings(&c.workspace_inputs));
                // Only when there are some: keys of tasks without them stay as they were.
                if !c.dependency_inputs.is_empty() {
                    m.insert("dependency-inputs".into(), strings(&c.dependency_inputs));
                }
                m.insert("env".into(), strings(&c.env));
                m.insert("runtime".into(), strings(&c.runtime));
                m.insert("workspace-runtime".into(), strings(&c.workspace_runtime));
                let default_upstream = ["*".to_string(), "^*".to_string()];
                m.insert(
                    "upstream".into(),
                    strings(c.upstream.as_deref().unwrap_or(&default_upstream)),
                );
                // Only when there are some, as for `dependency-inputs`.
                if !c.upstream_keys.is_empty() {
                    m.insert("upstream-keys".into(), strings(&c.upstream_keys));
                }
                // Only when set: what a dependant folds of this task's outputs.
                if let Some(read) = &c.dependants_read {
                    m.insert("dependants-read".into(), strings(read));
                }
                m.insert(
                    "outputs".into(),
                    strings(c.outputs.as_deref().unwrap_or(&[])),
                );
                m.insert("workspace-outputs".into(), strings(&c.workspace_outputs));
                m.insert("portable".into(), Value::Bool(c.portable.unwrap_or(false)));
                Value::Object(m)
            }
        },
    );
    canonical_json(&Value::Object(object))
}

/// RFC 8785 serialisation: object keys sorted, no insignificant whitespace, minimal string
/// escapes (serde_json's string escaping is already the minimal form RFC 8785 asks for).
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(512);
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                leaf(out, key);
                out.push(b':');
                write_canonical(&map[key], out);
            }
            out.push(b'}');
        }
        Value::Array(list) => {
            out.push(b'[');
            for (i, v) in list.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        other => leaf(out, other),
    }
}

/// A key or a scalar, written by serde_json straight into `out` (no string per leaf).
fn leaf<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("writing JSON to memory cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> KeyInputs {
        let mut k = KeyInputs {
            task: "web#build".into(),
            platform: "linux-x86_64".into(),
            config: "{}".into(),
            ..KeyInputs::default()
        };
        k.normalise();
        k
    }

    #[test]
    fn encoding_matches_the_documented_bytes() {
        // Build F1..F11 by hand for an almost empty key and compare.
        let mut expected = Vec::new();
        let mut push = |label: &str, payload: &[u8]| {
            expected.extend(label.as_bytes());
            expected.push(0);
            expected.extend((payload.len() as u64).to_le_bytes());
            expected.extend(payload);
        };
        let empty_list = 0u64.to_le_bytes();
        push("format", b"vx-key-4");
        push("task", b"web#build");
        push("platform", b"linux-x86_64");
        push("workspace", &empty_list);
        push("manifest", b"absent");
        push("config", b"{}");
        push("args", &empty_list);
        push("env", &empty_list);
        let mut two = empty_list.to_vec();
        two.extend(empty_list);
        push("runtime", &two);
        push("upstream", &empty_list);
        push("inputs", &empty_list);
        assert_eq!(sample().derive(), Key(*blake3::hash(&expected).as_bytes()));
    }

    #[test]
    fn unset_empty_and_unlisted_env_are_three_keys() {
        let base = sample();
        let mut unset = sample();
        unset.env = vec![("MODE".into(), None)];
        let mut empty = sample();
        empty.env = vec![("MODE".into(), Some(String::new()))];
        let keys = [base.derive(), unset.derive(), empty.derive()];
        assert_ne!(keys[0], keys[1]);
        assert_ne!(keys[1], keys[2]);
        assert_ne!(keys[0], keys[2]);
    }

    #[test]
    fn every_field_moves_the_key() {
        let base = sample().derive();
        type Edit = Box<dyn Fn(&mut KeyInputs)>;
        let edits: Vec<Edit> = vec![
            Box::new(|k| k.task = "web#test".into()),
            Box::new(|k| k.platform = "any".into()),
            Box::new(|k| k.workspace = vec![("pnpm-lock.yaml".into(), "ab".into())]),
            Box::new(|k| k.manifest = Some("ab".into())),
            Box::new(|k| k.config = "{\"a\":1}".into()),
            Box::new(|k| k.args = vec![String::new()]),
            Box::new(|k| k.runtime = vec![("node -v".into(), "v20".into())]),
            Box::new(|k| k.workspace_runtime = vec![("node -v".into(), "v20".into())]),
            Box::new(|k| k.upstream = vec![("lib#build".into(), "00".into())]),
            Box::new(|k| k.inputs = vec![InputFile::absent("a".into())]),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for edit in edits {
            let mut k = sample();
            edit(&mut k);
            let key = k.derive();
            assert_ne!(key, base);
            assert!(seen.insert(key), "two edits gave the same key");
        }
    }

    #[test]
    fn probes_and_workspace_probes_are_distinct_lists() {
        let mut a = sample();
        a.runtime = vec![("p".into(), "1".into())];
        let mut b = sample();
        b.workspace_runtime = vec![("p".into(), "1".into())];
        assert_ne!(a.derive(), b.derive());
    }

    #[test]
    fn length_prefixes_keep_adjacent_items_apart() {
        let mut a = sample();
        a.args = vec!["ab".into(), "c".into()];
        let mut b = sample();
        b.args = vec!["a".into(), "bc".into()];
        assert_ne!(a.derive(), b.derive());
    }

    #[test]
    fn components_never_hold_env_values() {
        let mut k = sample();
        k.env = vec![("TOKEN".into(), Some("supersecret".into()))];
        let components = k.components(&[7; 32]);
        let env = components.iter().find(|c| c.kind == "env").unwrap();
        assert_eq!(env.name, "TOKEN");
        assert!(!env.digest.contains("supersecret"));
        let other_salt = k.components(&[8; 32]);
        assert_ne!(
            env.digest,
            other_salt.iter().find(|c| c.kind == "env").unwrap().digest
        );
    }

    #[test]
    fn canonical_json_sorts_keys_without_whitespace() {
        let value: Value =
            serde_json::from_str(r#"{"b": [1, "x\n"], "a": {"d": null, "c": true}}"#).unwrap();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":true,"d":null},"b":[1,"x\n"]}"#
        );
    }

    #[test]
    fn spelling_out_a_default_does_not_move_the_config() {
        let mut implicit = TaskConfig {
            command: Some("tsc".into()),
            ..TaskConfig::default()
        };
        implicit.cache = Some(Box::new(crate::config::CacheConfig {
            inputs: Some(vec!["src/**".into()]),
            outputs: Some(vec!["dist/**".into()]),
            ..Default::default()
        }));
        let mut explicit = implicit.clone();
        if let Some(c) = &mut explicit.cache {
            c.upstream = Some(vec!["*".into(), "^*".into()]);
            c.portable = Some(false);
        }
        explicit.interactive = Some(false);
        explicit.description = Some("not in the key".into());
        explicit.timeout = Some(std::time::Duration::from_secs(5));
        assert_eq!(task_config_json(&implicit), task_config_json(&explicit));
    }

    #[test]
    fn upstream_filter_last_match_wins() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let default = list(&DEFAULT_UPSTREAM);
        assert!(folds_upstream(&default, "web", "web", "gen", false));
        assert!(folds_upstream(&default, "web", "lib", "build", false));
        assert!(folds_upstream(&default, "web", "mid", "build", true));
        assert!(!folds_upstream(&[], "web", "lib", "build", false));
        let only_same = list(&["*"]);
        assert!(!folds_upstream(&only_same, "web", "lib", "build", false));
        assert!(
            !folds_upstream(&only_same, "web", "web", "build", true),
            "`*` never matches a pass-through"
        );
        let patterns = list(&["^*", "!@acme/*#build", "@acme/ui#build"]);
        assert!(!folds_upstream(
            &patterns,
            "web",
            "@acme/core",
            "build",
            false
        ));
        assert!(folds_upstream(&patterns, "web", "@acme/ui", "build", false));
        assert!(folds_upstream(
            &list(&["^bu*"]),
            "web",
            "mid",
            "build",
            true
        ));
    }

    #[test]
    fn group_keys_are_order_independent() {
        let a = group_key(&[("a#x".into(), "1".into()), ("b#x".into(), "2".into())]);
        let b = group_key(&[("b#x".into(), "2".into()), ("a#x".into(), "1".into())]);
        assert_eq!(a, b);
    }

    #[test]
    fn the_digest_is_the_list_encoding_of_sorted_idents() {
        let set = DependencySet::new(
            "x",
            [
                ("a-b".to_string(), "1".to_string()),
                ("a".into(), "1".into()),
            ]
            .into(),
        );
        // `a-b@1` sorts before `a@1` bytewise ('-' < '@').
        let mut payload = 2u64.to_le_bytes().to_vec();
        for ident in ["a-b@1", "a@1"] {
            payload.extend((ident.len() as u64).to_le_bytes());
            payload.extend(ident.as_bytes());
        }
        assert_eq!(
            set.digest,
            format!("deps {}", blake3::hash(&payload).to_hex())
        );
    }
}
