//! Contributed labels (settings rows, sidebar sections, card designs, commands): one to
//! three plain words. A label that breaks the rule is rejected with the rule it broke —
//! never rewritten. Equal labels from different extensions are told apart by their
//! owner's name (`stats from git-stats`, `stats from timing`); one extension's equal labels
//! get a deterministic ordinal (`stats`, `stats 2`, … in registration order). Ids are
//! never shown.

/// Why a label was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("a label cannot be empty")]
    Empty,
    #[error("a label is one to three words; {0:?} has {1}")]
    TooManyWords(String, usize),
    #[error("a label is plain words; {0:?} contains {1:?}")]
    Forbidden(String, char),
    #[error("a label is plain words; {0:?} contains a control character")]
    Control(String),
}

/// Characters a label may not contain: arrows, colons, dots, pipes, slashes, brackets.
const FORBIDDEN: &[char] = &[
    ':', '.', '|', '/', '\\', '(', ')', '[', ']', '{', '}', '<', '>', '←', '→', '↑', '↓', '↔', '⇐',
    '⇒', '⇑', '⇓', '➜', '➔', '▶', '◀', '»', '«', '…',
];

/// Checks a contributed label.
pub fn validate(label: &str) -> Result<(), LabelError> {
    if label.chars().any(char::is_control) {
        return Err(LabelError::Control(label.to_string()));
    }
    let words: Vec<&str> = label.split_whitespace().collect();
    if words.is_empty() {
        return Err(LabelError::Empty);
    }
    if words.len() > 3 {
        return Err(LabelError::TooManyWords(label.to_string(), words.len()));
    }
    if let Some(c) = label
        .chars()
        .find(|c| FORBIDDEN.contains(c) || ('\u{2190}'..='\u{21ff}').contains(c))
    {
        return Err(LabelError::Forbidden(label.to_string(), c));
    }
    Ok(())
}

/// Display names for labels in registration order: equal labels (compared without case
/// and spacing differences) get ordinals from the second on.
pub fn with_ordinals<'a>(labels: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    labels
        .into_iter()
        .map(|l| {
            let norm = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let n = seen.entry(norm.to_lowercase()).or_insert(0);
            *n += 1;
            if *n == 1 { norm } else { format!("{norm} {n}") }
        })
        .collect()
}

/// Display names for `(label, owner)` pairs in registration order: a label that more than
/// one owner uses says whose it is (`One line from cards-a`); an owner's own equal labels
/// get ordinals ([`with_ordinals`]).
pub fn with_owners<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let labels: Vec<(&str, &str)> = labels.into_iter().collect();
    let key = |l: &str| {
        l.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let mut owners: HashMap<String, HashSet<&str>> = HashMap::new();
    for (l, o) in &labels {
        owners.entry(key(l)).or_default().insert(o);
    }
    // Ordinals counted per owner, in registration order.
    let mut seen: HashMap<(&str, String), usize> = HashMap::new();
    labels
        .iter()
        .map(|(l, o)| {
            let norm = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let k = key(l);
            let n = seen.entry((o, k.clone())).or_insert(0);
            *n += 1;
            let name = if *n == 1 { norm } else { format!("{norm} {n}") };
            if owners.get(&k).is_some_and(|s| s.len() > 1) {
                format!("{name} from {o}")
            } else {
                name
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(validate("stats").is_ok());
        assert!(validate("session stats view").is_ok());
        assert!(validate("日本 統計").is_ok());
        assert_eq!(validate(" "), Err(LabelError::Empty));
        assert!(matches!(
            validate("one two three four"),
            Err(LabelError::TooManyWords(_, 4))
        ));
        for bad in [
            "a: b",
            "v1.2",
            "a|b",
            "a/b",
            "[x]",
            "go →",
            "next ⇒",
            "a\tb\u{7}",
        ] {
            assert!(validate(bad).is_err(), "{bad}");
        }
        assert_eq!(
            validate("go →"),
            Err(LabelError::Forbidden("go →".into(), '→'))
        );
    }

    #[test]
    fn ordinals_are_deterministic() {
        assert_eq!(
            with_ordinals(["stats", "Stats", "cards", "stats", "  cards "]),
            vec!["stats", "Stats 2", "cards", "stats 3", "cards 2"]
        );
    }

    #[test]
    fn equal_labels_of_different_owners_name_them() {
        assert_eq!(
            with_owners([
                ("One line", "cards-a"),
                ("one  line", "cards-b"),
                ("Compact", "cards-a"),
                ("One line", "cards-b"),
                ("Compact", "cards-a"),
            ]),
            vec![
                "One line from cards-a",
                "one line from cards-b",
                "Compact",
                "One line 2 from cards-b",
                "Compact 2",
            ]
        );
    }
}
