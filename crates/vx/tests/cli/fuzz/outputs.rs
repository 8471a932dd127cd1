//! What the fuzz reference takes a build to produce (KEY-9's early cutoff): the digest of its
//! `out/` tree, in the fixed encoding of `vx_store::artifact::produced_digest`.

use std::collections::BTreeMap;
use std::process::Command;

use super::Fuzz;

impl Fuzz {
    /// What a build executed now would produce: its `ls -R src`, as `out/list.txt`.
    pub(super) fn produced_now(&self, dir: &str) -> String {
        let out = Command::new("sh")
            .args(["-c", "LC_ALL=C ls -R src 2>&1 || true"])
            .current_dir(self.f.path(dir))
            .output()
            .expect("run ls");
        out_digest(&out.stdout)
    }
}

/// The digest of a build's output tree, `out/list.txt` with these bytes, in the
/// fixed encoding of `vx_store::artifact::produced_digest`.
pub(super) fn out_digest(list: &[u8]) -> String {
    use vx_store::artifact::{produced_digest, ArtifactMeta, ExecMeta, FileMeta, Producer};
    let file = |mode: u32, size: u64| FileMeta {
        mode,
        mtime_ns: 0,
        size,
    };
    let meta = ArtifactMeta {
        format: vx_store::artifact::FORMAT,
        key: String::new(),
        task: String::new(),
        command: String::new(),
        // `out/**` matches what is below `out`, not `out` itself.
        files: [(
            "outputs/out/list.txt".to_string(),
            file(0o100644, list.len() as u64),
        )]
        .into_iter()
        .collect(),
        links: BTreeMap::new(),
        unread: Default::default(),
        exec: ExecMeta::default(),
        producer: Producer::default(),
        produced: None,
    };
    let blobs = [(
        "outputs/out/list.txt".to_string(),
        *blake3::hash(list).as_bytes(),
    )]
    .into_iter()
    .collect();
    produced_digest(&meta, &blobs)
}
