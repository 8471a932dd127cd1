//! vx's own environment as it reads it (ENV-1): the variables that are UTF-8, and what "truthy"
//! means. A leaf: it uses nothing of vx, so anything may use it.

use std::collections::BTreeMap;

/// vx's own environment, the variables whose names and values are UTF-8 (the others are
/// neither passed to tasks nor read by vx).
pub fn host_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// ENV-1: truthy means set and not `0`, `false` or empty.
pub fn truthy(value: &str) -> bool {
    !(value.is_empty() || value == "0" || value.eq_ignore_ascii_case("false"))
}
