//! The inputs a task rewrote with the bytes they held while it ran (KEY-16): kept
//! per workspace and task in `meta` (`rewrites:<workspace>\0<task>`, a JSON array of
//! root-relative paths), so the save guard can tell a build that regenerates its own input on
//! every run (tsdown's `package.json` `exports`) from an edit undone while it ran (A→B→A).

use rusqlite::OptionalExtension;

use super::{read, set_meta, write_tx, Store, StoreError};

fn name(workspace: &str, task: &str) -> String {
    format!("rewrites:{workspace}\0{task}")
}

impl Store {
    /// The paths `task` rewrote with the same bytes in its last checked execution.
    pub fn rewrites(&self, workspace: &str, task: &str) -> Result<Vec<String>, StoreError> {
        let text: Option<String> = read(self, |conn| {
            conn.prepare_cached("SELECT value FROM meta WHERE name = ?1")?
                .query_row([name(workspace, task)], |row| row.get(0))
                .optional()
        })?;
        Ok(text
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default())
    }

    /// Every task's record in `workspace`, by task id: one statement (a range of `meta`).
    pub fn all_rewrites(
        &self,
        workspace: &str,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StoreError> {
        let low = format!("rewrites:{workspace}\0");
        let high = format!("rewrites:{workspace}\u{1}");
        let rows: Vec<(String, String)> = read(self, |conn| {
            let mut stmt =
                conn.prepare_cached("SELECT name, value FROM meta WHERE name >= ?1 AND name < ?2")?;
            let rows = stmt.query_map([&low, &high], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(name, value)| {
                let task = name.strip_prefix(&low)?.to_string();
                Some((task, serde_json::from_str(&value).ok()?))
            })
            .collect())
    }

    /// Records what `task` rewrote with the same bytes this time (none: the row goes).
    pub fn set_rewrites(
        &mut self,
        workspace: &str,
        task: &str,
        paths: &[String],
    ) -> Result<(), StoreError> {
        let key = name(workspace, task);
        write_tx(self, |tx, _| {
            if paths.is_empty() {
                tx.prepare_cached("DELETE FROM meta WHERE name = ?1")?
                    .execute([&key])?;
                return Ok(());
            }
            let value = serde_json::to_string(paths).expect("paths serialize");
            set_meta(tx, &key, &value)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::index::{Access, Store};

    #[test]
    fn rewrites_round_trip_per_workspace_and_task_and_clear() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        assert!(store.rewrites("/ws", "lib#build").unwrap().is_empty());
        let paths = vec!["packages/lib/package.json".to_string()];
        store.set_rewrites("/ws", "lib#build", &paths).unwrap();
        store.set_rewrites("/ws2", "app#build", &paths).unwrap();
        assert_eq!(store.rewrites("/ws", "lib#build").unwrap(), paths);
        let all = store.all_rewrites("/ws").unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all["lib#build"], paths);
        assert!(store.rewrites("/other", "lib#build").unwrap().is_empty());
        store.set_rewrites("/ws", "lib#build", &[]).unwrap();
        assert!(store.rewrites("/ws", "lib#build").unwrap().is_empty());
    }
}
