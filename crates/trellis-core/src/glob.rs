//! A small glob matcher: `*` (any run without `/`), `**` (any run), `?` (one char),
//! everything else literal. Used by permission rules; pure and allocation-free.

/// True when the path `text` matches `pattern` in full (`*` stops at `/`).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches_at(&p, &t, Some('/'))
}

/// True when free text (a title, a command line) matches `pattern`; `*` crosses `/`.
pub fn glob_match_text(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches_at(&p, &t, None)
}

fn matches_at(p: &[char], t: &[char], sep: Option<char>) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => {
            let double = p.get(1) == Some(&'*');
            let rest = if double { &p[2..] } else { &p[1..] };
            // `**/` also matches zero directories.
            if double && rest.first() == Some(&'/') && matches_at(&rest[1..], t, sep) {
                return true;
            }
            for i in 0..=t.len() {
                if matches_at(rest, &t[i..], sep) {
                    return true;
                }
                if i < t.len() && !double && Some(t[i]) == sep {
                    return false;
                }
            }
            false
        }
        Some('?') => !t.is_empty() && Some(t[0]) != sep && matches_at(&p[1..], &t[1..], sep),
        Some(c) => t.first() == Some(c) && matches_at(&p[1..], &t[1..], sep),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("git *", "git status"));
        assert!(!glob_match("git *", "rm -rf /"));
        assert!(glob_match("src/*.rs", "src/main.rs"));
        assert!(!glob_match("src/*.rs", "src/a/main.rs"));
        assert!(glob_match("src/**/*.rs", "src/a/b/main.rs"));
        assert!(glob_match("src/**/*.rs", "src/main.rs"));
        assert!(glob_match("**/.env", "/home/x/.env"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*", ""));
        assert!(super::glob_match_text("ls *", "ls /tmp/x"));
    }
}
