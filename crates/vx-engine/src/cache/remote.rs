//! The run's remote cache layer, made from `[workspace.remote-cache]`, the environment and
//! `--cache` (REM-1, REM-2, CLI-14).
//!
//! `VX_REMOTE_CACHE_URL` replaces `url` and `VX_REMOTE_CACHE_TEAM` replaces the team (sent as
//! `slug`); the token is read from the variable `token-env` names, never from a file. Reads are
//! on unless `--cache` turns them off; writes follow `write` (`ci`: when `CI` is truthy) unless
//! `--cache` sets them. An `http(s)://` URL makes an HTTP layer (REM-3), a `grpc(s)://` one a REAPI
//! layer (REM-4); everything else about them is the same.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use vx_core::config::RemoteCacheConfig;
use vx_core::units::{parse_duration, parse_size};
use vx_reapi::{ClientConfig, ReapiLayer};
use vx_store::layer::http::{HttpConfig, HttpLayer, Team};
use vx_store::{CacheLayer, RemoteUse};

use crate::options::CachePolicy;
use crate::outcome::Notice;

/// REM-2's defaults.
pub const DEFAULT_TOKEN_ENV: &str = "VX_REMOTE_CACHE_TOKEN";
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_MAX_DOWNLOAD: u64 = 1 << 30;
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Network work is not CPU work: requests in flight wait on the round trip, not on a core.
const DEFAULT_UPLOAD_CONCURRENCY: usize = 32;
/// A `grpc://` upload costs two round trips (blobs, then the action result) where an HTTP one
/// costs one, and its calls share one connection: twice as many at once.
const DEFAULT_GRPC_UPLOAD_CONCURRENCY: usize = 64;
const DEFAULT_DOWNLOAD_CONCURRENCY: usize = 64;

/// A remote layer ready to add behind the local store.
pub struct Remote {
    pub layer: Arc<dyn CacheLayer>,
    pub usage: RemoteUse,
    pub upload_concurrency: usize,
    /// A warning about a layer that works (a short signing key).
    pub notice: Option<Notice>,
}

/// The shortest signing key an HMAC-SHA256 should have (its output size; turbo warns below it).
const SIGNING_KEY_MIN: usize = 32;

/// Where the remote cache is and how it is reached, with the environment applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub url: String,
    pub team: Option<Team>,
    pub token_env: String,
    /// Whether the token variable is set (its value is never shown).
    pub has_token: bool,
    pub read: bool,
    pub write: bool,
}

/// `[workspace.remote-cache]` with the environment and `--cache` applied; `None` when no URL
/// is configured.
pub fn resolve(
    config: Option<&RemoteCacheConfig>,
    env: &BTreeMap<String, String>,
    policy: &CachePolicy,
) -> Option<Resolved> {
    let url = env
        .get("VX_REMOTE_CACHE_URL")
        .filter(|u| !u.is_empty())
        .cloned()
        .or_else(|| config.and_then(|c| c.url.clone()))?;
    let team = match env.get("VX_REMOTE_CACHE_TEAM").filter(|t| !t.is_empty()) {
        Some(team) => Some(Team::Slug(team.clone())),
        None => config.and_then(|c| {
            c.team
                .clone()
                .map(Team::Slug)
                .or_else(|| c.team_id.clone().map(Team::Id))
        }),
    };
    let token_env = config
        .and_then(|c| c.token_env.clone())
        .unwrap_or_else(|| DEFAULT_TOKEN_ENV.to_string());
    let has_token = env.get(&token_env).is_some_and(|t| !t.is_empty());
    let ci = env.get("CI").is_some_and(|v| crate::host::env::truthy(v));
    let write_default = match config.and_then(|c| c.write.as_deref()).unwrap_or("ci") {
        "always" => true,
        "never" => false,
        _ => ci,
    };
    Some(Resolved {
        url,
        team,
        token_env,
        has_token,
        read: policy.remote_read.unwrap_or(true),
        write: policy.remote_write.unwrap_or(write_default),
    })
}

/// The run's remote layer, or why there is none (one warning). `None` without a URL or with
/// both switches off.
pub fn layer(
    config: Option<&RemoteCacheConfig>,
    env: &BTreeMap<String, String>,
    policy: &CachePolicy,
) -> Result<Option<Remote>, Notice> {
    let Some(resolved) = resolve(config, env, policy) else {
        return Ok(None);
    };
    if !resolved.read && !resolved.write {
        return Ok(None);
    }
    let shown = vx_store::layer::http::shown_url(&resolved.url);
    let grpc = resolved.url.starts_with("grpc://") || resolved.url.starts_with("grpcs://");
    if !grpc && !resolved.url.starts_with("http://") && !resolved.url.starts_with("https://") {
        return Err(Notice::warning(format!(
            "remote cache `{shown}`: the URL must start with `http://`, `https://`, `grpc://` or `grpcs://`; continuing with the local cache only"
        )));
    }
    let duration =
        |text: Option<&String>, default| text.and_then(|t| parse_duration(t)).unwrap_or(default);
    let connect_timeout = duration(
        config.and_then(|c| c.connect_timeout.as_ref()),
        DEFAULT_CONNECT_TIMEOUT,
    );
    let idle_timeout = duration(
        config.and_then(|c| c.idle_timeout.as_ref()),
        DEFAULT_IDLE_TIMEOUT,
    );
    let max_download = config
        .and_then(|c| c.max_download_size.as_deref())
        .and_then(parse_size)
        .unwrap_or(DEFAULT_MAX_DOWNLOAD);
    let request_timeout = duration(
        config.and_then(|c| c.request_timeout.as_ref()),
        DEFAULT_REQUEST_TIMEOUT,
    );
    let upload_concurrency = config.and_then(|c| c.upload_concurrency).map_or(
        if grpc {
            DEFAULT_GRPC_UPLOAD_CONCURRENCY
        } else {
            DEFAULT_UPLOAD_CONCURRENCY
        },
        |n| n as usize,
    );
    let download_concurrency = config
        .and_then(|c| c.download_concurrency)
        .map_or(DEFAULT_DOWNLOAD_CONCURRENCY, |n| n as usize);
    let token = env
        .get(&resolved.token_env)
        .filter(|t| !t.is_empty())
        .cloned();
    let mut notice = None;
    let layer: Arc<dyn CacheLayer> = if grpc {
        // The file cannot say both (a configuration error); `VX_REMOTE_CACHE_URL` can. Signed
        // entries are promised, and REAPI cannot sign: no remote rather than unsigned ones.
        if config.is_some_and(|c| c.signature_key_env.is_some()) {
            return Err(Notice::warning(format!(
                "remote cache {shown}: `signature-key-env` signs HTTP artifacts, and a `grpc://` server cannot check them; the remote cache is off"
            )));
        }
        let client = ClientConfig {
            url: resolved.url.clone(),
            instance_name: config
                .and_then(|c| c.instance_name.clone())
                .unwrap_or_default(),
            token,
            connect_timeout,
            idle_timeout,
            request_timeout: Some(request_timeout),
        };
        match ReapiLayer::new(&client) {
            Ok(layer) => Arc::new(layer),
            Err(problem) => {
                return Err(Notice::warning(format!(
                    "remote cache {shown}: {problem}; continuing with the local cache only"
                )))
            }
        }
    } else {
        let Some(team) = resolved.team.clone() else {
            return Err(Notice::warning(format!(
                "remote cache {shown}: set `team` or `team-id` in [workspace.remote-cache] (or VX_REMOTE_CACHE_TEAM); continuing with the local cache only"
            )));
        };
        let signing_key = match config.and_then(|c| c.signature_key_env.as_deref()) {
            None => None,
            Some(name) => match env.get(name).filter(|v| !v.is_empty()) {
                Some(value) => {
                    if value.len() < SIGNING_KEY_MIN {
                        notice = Some(Notice::warning(format!(
                            "remote cache: the signing key in ${name} is {} bytes; a key of at least {SIGNING_KEY_MIN} random bytes is hard to guess",
                            value.len()
                        )));
                    }
                    Some(value.as_bytes().to_vec())
                }
                None => {
                    return Err(Notice::warning(format!(
                        "remote cache: ${name} is not set, and signing is configured; the remote cache is off"
                    )))
                }
            },
        };
        Arc::new(HttpLayer::new(HttpConfig {
            url: resolved.url.clone(),
            team,
            token,
            connect_timeout,
            idle_timeout,
            request_timeout,
            connections: upload_concurrency + download_concurrency,
            signing_key,
        }))
    };
    Ok(Some(Remote {
        layer,
        usage: RemoteUse {
            read: resolved.read,
            write: resolved.write,
            token_env: resolved.token_env,
            max_download,
            downloads: download_concurrency,
        },
        upload_concurrency,
        notice,
    }))
}

/// The values the remote cache's variables hold (the token, the signing key): masked in every
/// task's output like `env.secret` values (EXEC-5, REM-16).
pub fn secret_values(
    config: Option<&RemoteCacheConfig>,
    env: &BTreeMap<String, String>,
) -> Vec<String> {
    let Some(config) = config else {
        return Vec::new();
    };
    let token_env = config.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV);
    [Some(token_env), config.signature_key_env.as_deref()]
        .into_iter()
        .flatten()
        .filter_map(|name| env.get(name))
        .filter(|value| !value.is_empty())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn config(write: Option<&str>) -> RemoteCacheConfig {
        RemoteCacheConfig {
            url: Some("https://cache.example.com".into()),
            team: Some("team_vx".into()),
            write: write.map(str::to_string),
            ..RemoteCacheConfig::default()
        }
    }

    #[test]
    fn writes_follow_ci_unless_the_setting_or_the_command_line_says_otherwise() {
        let policy = CachePolicy::default();
        let on_ci = env(&[("CI", "true")]);
        let local = env(&[]);
        let write = |c: &RemoteCacheConfig, e: &BTreeMap<String, String>, p: &CachePolicy| {
            resolve(Some(c), e, p).unwrap().write
        };
        assert!(write(&config(None), &on_ci, &policy));
        assert!(!write(&config(None), &local, &policy));
        assert!(!write(&config(None), &env(&[("CI", "0")]), &policy));
        assert!(write(&config(Some("always")), &local, &policy));
        assert!(!write(&config(Some("never")), &on_ci, &policy));
        let forced = CachePolicy {
            remote_write: Some(true),
            ..CachePolicy::default()
        };
        assert!(write(&config(Some("never")), &local, &forced));
        assert!(resolve(Some(&config(None)), &local, &policy).unwrap().read);
    }

    #[test]
    fn the_environment_replaces_the_url_and_the_team() {
        let e = env(&[
            ("VX_REMOTE_CACHE_URL", "http://127.0.0.1:3033"),
            ("VX_REMOTE_CACHE_TEAM", "other"),
            ("MY_TOKEN", "s3cret"),
        ]);
        let c = RemoteCacheConfig {
            token_env: Some("MY_TOKEN".into()),
            team_id: Some("team_1".into()),
            ..config(None)
        };
        let r = resolve(Some(&c), &e, &CachePolicy::default()).unwrap();
        assert_eq!(r.url, "http://127.0.0.1:3033");
        assert_eq!(r.team, Some(Team::Slug("other".into())));
        assert!(r.has_token);
        assert_eq!(r.token_env, "MY_TOKEN");
        assert!(resolve(None, &env(&[]), &CachePolicy::default()).is_none());
    }

    #[test]
    fn an_http_layer_needs_a_team_and_a_grpc_one_cannot_sign() {
        let policy = CachePolicy::default();
        let no_team = RemoteCacheConfig {
            team: None,
            ..config(None)
        };
        let said = |c: &RemoteCacheConfig| match layer(Some(c), &env(&[]), &policy) {
            Err(Notice::Warning { line, .. }) => line,
            _ => String::new(),
        };
        assert!(said(&no_team).contains("set `team` or `team-id`"));
        let grpc = RemoteCacheConfig {
            url: Some("grpc://cache:8980".into()),
            ..config(None)
        };
        let made = layer(Some(&grpc), &env(&[]), &policy).unwrap().unwrap();
        assert_eq!(made.layer.name(), "grpc://cache:8980");
        // Two calls per upload on one connection: twice HTTP's uploads at once, unless set.
        assert_eq!(made.upload_concurrency, 64);
        let http = layer(Some(&config(None)), &env(&[]), &policy)
            .unwrap()
            .unwrap();
        assert_eq!(http.upload_concurrency, 32);
        let set = RemoteCacheConfig {
            upload_concurrency: Some(5),
            ..grpc.clone()
        };
        assert_eq!(
            layer(Some(&set), &env(&[]), &policy)
                .unwrap()
                .unwrap()
                .upload_concurrency,
            5
        );
        let grpc_signed = RemoteCacheConfig {
            signature_key_env: Some("VX_SIGNING_KEY".into()),
            ..grpc.clone()
        };
        assert!(said(&grpc_signed).contains("the remote cache is off"));
        let ftp = RemoteCacheConfig {
            url: Some("ftp://cache".into()),
            ..config(None)
        };
        assert!(said(&ftp).contains("must start with"));
        let signed = RemoteCacheConfig {
            signature_key_env: Some("VX_SIGNING_KEY".into()),
            ..config(None)
        };
        assert_eq!(
            said(&signed),
            "remote cache: $VX_SIGNING_KEY is not set, and signing is configured; the remote cache is off"
        );
        assert_eq!(
            secret_values(
                Some(&signed),
                &env(&[("VX_SIGNING_KEY", "k3y"), ("VX_REMOTE_CACHE_TOKEN", "t0k")])
            ),
            ["t0k", "k3y"]
        );
        assert!(layer(Some(&config(None)), &env(&[]), &policy)
            .unwrap()
            .is_some());
    }
}
