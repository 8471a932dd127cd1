//! What a call to the server could not do ([`Error`]): a status with its code and a short
//! message, a transport failure said in words, a cancelled call; and gRPC codes by name.

use std::error::Error as _;
use std::io;

use tonic::{Code, Status};

/// What a call could not do. The text names no credential.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with this status, or the transport failed (then `UNAVAILABLE`).
    #[error("{}", describe(*code, message))]
    Status { code: Code, message: String },
    /// No answer, or no progress, within the idle timeout.
    #[error("no progress within the idle timeout")]
    Timeout,
    /// The whole call took longer than the request timeout (its total deadline), answering or
    /// not: a server that drips.
    #[error("no answer within the request timeout ({} s)", .0.as_secs_f64())]
    Deadline(std::time::Duration),
    /// A local file could not be read or written.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The bytes the server sent do not hash to the digest asked for.
    #[error("the blob's bytes do not match its digest")]
    DigestMismatch,
    /// A blob over the caller's size cap.
    #[error("the blob is {size} bytes, over the cap of {cap}")]
    TooLarge { size: u64, cap: u64 },
    /// The caller stopped an execution (and the server was asked to cancel it).
    #[error("cancelled")]
    Cancelled,
    /// A result named an output path outside the workspace, or through a symbolic link.
    #[error("the server named an output path that leaves the workspace: `{0}`")]
    UnsafePath(String),
}

impl Error {
    /// The gRPC code, when the failure was a status.
    pub fn code(&self) -> Option<Code> {
        match self {
            Error::Status { code, .. } => Some(*code),
            Error::Timeout | Error::Deadline(_) => Some(Code::DeadlineExceeded),
            _ => None,
        }
    }
}

fn describe(code: Code, message: &str) -> String {
    let name = code_name(code);
    if message.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {message}")
    }
}

/// The status code as REAPI servers and their logs spell it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A status from tonic as an [`Error`]: a transport failure says what broke (connection
/// refused, the host name, TLS) instead of tonic's wording; a server's message is kept short.
pub(crate) fn from_status(status: Status) -> Error {
    let mut code = status.code();
    let mut message = status.message().to_string();
    if code != Code::Ok {
        let mut source = status.source();
        while let Some(error) = source {
            if let Some(io) = error.downcast_ref::<io::Error>() {
                // A transport failure, whatever code tonic gave it (a stream cut mid-way comes
                // as UNKNOWN or INTERNAL): the connection, as REM-7 counts it.
                code = Code::Unavailable;
                message = match io.kind() {
                    io::ErrorKind::ConnectionRefused => "connection refused".into(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                        "the connection broke".into()
                    }
                    io::ErrorKind::TimedOut => "connection timed out".into(),
                    _ => io.to_string(),
                };
                break;
            }
            source = error.source();
        }
    }
    if message.chars().count() > 160 {
        message = message.chars().take(160).collect::<String>() + "…";
    }
    Error::Status { code, message }
}
