//! Opening a cache directory (STORE-1, STORE-3): the layout, the SQLite settings, schema
//! creation and upgrade, and the three modes (read-write, read-only, disabled).
//!
//! Concurrent first openers are safe: the schema is (re)built inside `BEGIN IMMEDIATE` after
//! reading `user_version` again, and the one step SQLite does not queue on the busy timeout
//! (switching a new file to WAL) is retried here.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use super::{Access, Meta, OpenError, Store, ARTIFACTS_DIR, DB_FILE, TMP_DIR};
use crate::fault::{self, Fault};
use crate::schema;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Enough for every distinct statement the store prepares, so none is prepared twice within a
/// write; the bulk writes of history empty it after themselves (`history.rs`,
/// `forget_bulk_statements`), so their large multi-row statements do not stay.
const STATEMENT_CACHE: usize = 64;

/// Creates `dir` with mode 0700 (and its parents). Returns whether this call created it.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<bool> {
    if dir.is_dir() {
        return Ok(false);
    }
    if let Some(parent) = dir.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates a vx-owned directory (the cache directory, `<root>/.vx`) with its `.gitignore`.
pub(crate) fn create_vx_dir(dir: &Path) -> io::Result<()> {
    if create_private_dir(dir)? {
        std::fs::write(dir.join(".gitignore"), "*\n")?;
    }
    Ok(())
}

fn random_salt() -> io::Result<[u8; 32]> {
    let mut salt = [0u8; 32];
    fs_err::File::open("/dev/urandom")?.read_exact(&mut salt)?;
    Ok(salt)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex32(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Counts every statement SQLite starts on `conn` (PERF-3), not the trigger sub-programs.
fn count_statements(conn: &mut Connection) -> rusqlite::Result<Arc<AtomicU64>> {
    let counter = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&counter);
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT,
        Some(move |event: TraceEvent<'_>| {
            if let TraceEvent::Stmt(_, sql) = event {
                if !sql.starts_with("--") {
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
        }),
    )?;
    Ok(counter)
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `step` again while it fails with `SQLITE_BUSY`, for up to the busy timeout.
fn retry_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = Instant::now();
    loop {
        match step() {
            Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

pub(crate) fn set_meta(conn: &Connection, name: &str, value: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    )?
    .execute([name, value])?;
    Ok(())
}

/// An SQLite failure at open, by what it is (STORE-12): only SQLite's verdict that the file
/// is not a database, or corrupt, makes the index "not valid".
fn open_failure(db: &Path) -> impl Fn(rusqlite::Error) -> OpenError + '_ {
    move |e| {
        let path = db.to_path_buf();
        let reason = e.to_string();
        if is_busy(&e) {
            return OpenError::Busy { path, reason };
        }
        match fault::of_sqlite_at(&e, &path) {
            Fault::Damaged => OpenError::Corrupt { path, reason },
            // A full disk leaves the index readable: it is read, and nothing is written.
            Fault::Full => OpenError::ReadOnly {
                reason: fault::full_text(path.parent().unwrap_or(&path)),
            },
            Fault::ReadOnly => OpenError::ReadOnly {
                reason: format!("`{}` is read-only", path.display()),
            },
            Fault::Other => OpenError::Failed { path, reason },
        }
    }
}

/// Why nothing can be written in `dir`, if so: a read-only file system, or no permission.
fn unwritable(dir: &Path) -> Option<String> {
    let existing = dir.ancestors().find(|d| d.exists())?;
    match nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK) {
        Ok(()) => None,
        Err(errno) => {
            let error = io::Error::from_raw_os_error(errno as i32);
            (fault::of_io(&error) == Fault::ReadOnly)
                .then(|| fault::read_only_text(existing, Some(&error)))
        }
    }
}

/// Whether the database holds no table at all.
fn is_empty_database(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|tables| tables == 0)
}

/// `path` as an SQLite URI that opens it immutable: read without locks or the WAL's
/// shared memory, which a read-only directory cannot hold.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_bytes() {
        match byte {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{byte:02X}")),
            _ if byte.is_ascii() => uri.push(byte as char),
            _ => uri.push_str(&format!("%{byte:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

impl Store {
    /// Opens the cache directory `dir` (STORE-1, STORE-3). See [`Access`] and the module docs.
    pub fn open(dir: &Path, access: Access) -> Result<Store, OpenError> {
        let db = dir.join(DB_FILE);
        let mut store = Store {
            dir: dir.to_path_buf(),
            db: db.clone(),
            access,
            conn: None,
            disabled: None,
            read_only_reason: None,
            salt: [0; 32],
            meta: Meta::default(),
            touches: BTreeMap::new(),
            pending_rows: Vec::new(),
            preloaded: Default::default(),
            statements: Arc::new(AtomicU64::new(0)),
            aside_seq: 0,
        };
        match access {
            Access::ReadWrite => match store.open_read_write() {
                Ok(()) => {}
                // STORE-14: a cache vx cannot write is still read: hits are served.
                Err(OpenError::ReadOnly { reason }) => {
                    store.conn = None;
                    store.access = Access::ReadOnly;
                    store.open_read_only()?;
                    store.read_only_reason = Some(reason);
                }
                Err(other) => return Err(other),
            },
            Access::ReadOnly => store.open_read_only()?,
        }
        Ok(store)
    }

    fn open_read_write(&mut self) -> Result<(), OpenError> {
        let dir_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source: io::Error| match fault::of_io(&source) {
                Fault::ReadOnly => OpenError::ReadOnly {
                    reason: fault::read_only_text(&path, Some(&source)),
                },
                Fault::Full => OpenError::ReadOnly {
                    reason: fault::full_text(&path),
                },
                _ => OpenError::Io { path, source },
            }
        };
        if let Some(reason) = unwritable(&self.dir) {
            return Err(OpenError::ReadOnly { reason });
        }
        create_vx_dir(&self.dir).map_err(dir_err(&self.dir))?;
        for sub in [ARTIFACTS_DIR, TMP_DIR] {
            let path = self.dir.join(sub);
            create_private_dir(&path).map_err(dir_err(&path))?;
        }
        let db = self.db.clone();
        let failed = open_failure(&db);
        let mut conn = Connection::open(&db).map_err(&failed)?;
        self.statements = count_statements(&mut conn).map_err(&failed)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&failed)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // Switching a new database to WAL needs an exclusive lock, and SQLite does not call the
        // busy handler for it: concurrent first openers retry here.
        retry_busy(|| {
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
        })
        .map_err(&failed)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(&failed)?;
        let mut version = user_version(&conn).map_err(&failed)?;
        if version < schema::VERSION {
            version = retry_busy(|| Self::rebuild(&mut conn)).map_err(&failed)?;
        }
        if version > schema::VERSION {
            self.disabled = Some(version);
            return Ok(());
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(&failed)?;
        self.read_meta(&conn).map_err(&failed)?;
        self.conn = Some(conn);
        Ok(())
    }

    /// Rebuilds an older index; returns the version found inside the transaction (another
    /// process may have created or upgraded the schema meanwhile).
    fn rebuild(conn: &mut Connection) -> rusqlite::Result<u32> {
        // Foreign keys cannot change inside a transaction; an older schema is dropped without them.
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = user_version(&tx)?;
        if found >= schema::VERSION {
            tx.commit()?;
            return Ok(found);
        }
        if (4..=7).contains(&found) {
            schema::upgrade(&tx, found)?;
            set_meta(&tx, "key_format", schema::KEY_FORMAT)?;
            tx.commit()?;
            return Ok(schema::VERSION);
        }
        schema::rebuild(&tx)?;
        set_meta(&tx, "key_format", schema::KEY_FORMAT)?;
        let salt = random_salt().map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
        set_meta(&tx, "salt", &hex(&salt))?;
        tx.commit()?;
        Ok(schema::VERSION)
    }

    fn open_read_only(&mut self) -> Result<(), OpenError> {
        match std::fs::symlink_metadata(&self.db) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            _ => {}
        }
        let db = self.db.clone();
        let failed = open_failure(&db);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let opened = Connection::open_with_flags(&db, flags)
            .and_then(|conn| user_version(&conn).map(|found| (conn, found)));
        let (mut conn, found) = match opened {
            Ok(opened) => opened,
            // A WAL index in a directory vx cannot write: SQLite cannot create the shared
            // memory file next to it, so it is read as an immutable file instead.
            Err(e)
                if (unwritable(&self.dir).is_some() || fault::is_full(&self.dir))
                    && matches!(
                        e.sqlite_error_code(),
                        Some(
                            ErrorCode::CannotOpen
                                | ErrorCode::ReadOnly
                                | ErrorCode::SystemIoFailure
                                | ErrorCode::DiskFull
                        )
                    ) =>
            {
                let conn = Connection::open_with_flags(
                    immutable_uri(&db),
                    flags | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(&failed)?;
                let found = user_version(&conn).map_err(&failed)?;
                (conn, found)
            }
            Err(e) => return Err(failed(e)),
        };
        self.statements = count_statements(&mut conn).map_err(&failed)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&failed)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // An index never written (a fresh checkout whose first open met a full disk left an
        // empty file): an empty cache, as when there is no file at all.
        if found == 0 && is_empty_database(&conn).map_err(&failed)? {
            return Ok(());
        }
        if found != schema::VERSION {
            return Err(OpenError::Schema {
                found,
                expected: schema::VERSION,
            });
        }
        self.read_meta(&conn).map_err(&failed)?;
        self.conn = Some(conn);
        Ok(())
    }

    /// Loads `meta` once; a missing or malformed salt is replaced (read-write only).
    fn read_meta(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let mut salt = None;
        {
            let mut stmt = conn.prepare("SELECT name, value FROM meta")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let value: String = row.get(1)?;
                match row.get_ref(0)?.as_str()? {
                    "salt" => salt = unhex32(&value),
                    "orphans_swept_at" => self.meta.orphans_swept_at = value.parse().ok(),
                    "housekept_at" => self.meta.housekept_at = value.parse().ok(),
                    "generation" => self.meta.generation = value.parse().ok(),
                    _ => {}
                }
            }
        }
        if salt.is_none() && self.access == Access::ReadWrite {
            let fresh =
                random_salt().map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
            set_meta(conn, "salt", &hex(&fresh))?;
            salt = Some(fresh);
        }
        self.salt = salt.unwrap_or([0; 32]);
        Ok(())
    }
}
