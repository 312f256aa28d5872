//! This process's environment, pruned of what no process it starts may inherit.

/// Removes every variable whose name starts with one of `prefixes` from this process's
/// environment, so that no process it starts (an agent, its commands, a plugin, a hook)
/// inherits it; what was removed (names and values). Call it first thing in `main`, before any thread
/// starts: the environment may not be changed while another thread could read it.
pub fn forget(prefixes: &[&str]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    forget_where(|k| prefixes.iter().any(|p| k.starts_with(p)))
}

/// [`forget`] of the variables named `names` exactly (secrets the config takes from the
/// environment); the same rule: first thing in `main`.
pub fn forget_names(names: &[String]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    forget_where(|k| names.iter().any(|n| n == k))
}

#[allow(unsafe_code)]
fn forget_where(drop: impl Fn(&str) -> bool) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let vars: Vec<_> = std::env::vars_os()
        .filter(|(k, _)| drop(&k.to_string_lossy()))
        .collect();
    for (k, _) in &vars {
        // SAFETY: called before any other thread of this process exists (see above).
        unsafe { std::env::remove_var(k) };
    }
    vars
}
