//! `docs/headless.md` agrees with the code and with itself: its exit-code table has every
//! code `trellis run` documents, and the Kubernetes and GitHub Actions examples (parsed as
//! YAML, no kubectl) retry exactly the codes the table marks worth a retry.

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

fn doc() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/headless.md"
    ))
    .unwrap()
}

/// The table's codes: (code, retry?).
fn table() -> Vec<(u8, Option<bool>)> {
    let text = doc();
    let start = text.find("| code | meaning | retry |").unwrap();
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let retry = match cells[3] {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            };
            (cells[1].parse().unwrap(), retry)
        })
        .collect()
}

fn yaml_blocks() -> Vec<Yaml> {
    let text = doc();
    text.split("```yaml\n")
        .skip(1)
        .map(|b| {
            let body = &b[..b.find("```").unwrap()];
            YamlLoader::load_from_str(body).unwrap().remove(0)
        })
        .collect()
}

#[test]
fn the_exit_code_table_is_complete_and_the_recipes_follow_it() {
    let t = table();
    let codes: BTreeSet<u8> = t.iter().map(|(c, _)| *c).collect();
    let expected: BTreeSet<u8> = [
        0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 129, 130, 141, 143,
    ]
    .into_iter()
    .collect();
    assert_eq!(codes, expected);
    let retry: BTreeSet<i64> = t
        .iter()
        .filter(|(_, r)| *r == Some(true))
        .map(|(c, _)| i64::from(*c))
        .collect();
    let fail: BTreeSet<i64> = t
        .iter()
        .filter(|(_, r)| *r == Some(false))
        .map(|(c, _)| i64::from(*c))
        .collect();
    let blocks = yaml_blocks();
    assert_eq!(blocks.len(), 2);
    // Kubernetes: Count the retryable codes, FailJob the others.
    let job = &blocks[0];
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let container = job["spec"]["template"]["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap();
    let mut seen = BTreeSet::new();
    for rule in job["spec"]["podFailurePolicy"]["rules"].as_vec().unwrap() {
        let Some(on) = rule["onExitCodes"].as_hash() else {
            continue;
        };
        let on = Yaml::Hash(on.clone());
        assert_eq!(on["containerName"].as_str(), Some(container));
        assert_eq!(on["operator"].as_str(), Some("In"));
        let values: BTreeSet<i64> = on["values"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        match rule["action"].as_str() {
            Some("Count") => assert_eq!(values, retry),
            Some("FailJob") => assert_eq!(values, fail),
            other => panic!("{other:?}"),
        }
        seen.insert(rule["action"].as_str().unwrap().to_string());
    }
    assert_eq!(seen.len(), 2);
    // GitHub Actions: the case that warns "worth a retry" names exactly those codes.
    let steps = blocks[1]["steps"].as_vec().unwrap();
    let script = steps[0]["run"].as_str().unwrap();
    let line = script
        .lines()
        .find(|l| l.contains("worth a retry"))
        .unwrap();
    let listed: BTreeSet<i64> = line
        .trim()
        .split(')')
        .next()
        .unwrap()
        .split('|')
        .map(|c| c.trim().parse().unwrap())
        .collect();
    assert_eq!(listed, retry);
    assert!(script.contains("$GITHUB_OUTPUT"));
}

#[test]
fn the_documented_codes_are_the_binarys() {
    // The run module's doc comment is the code's own list: every number it names is in
    // the table, and the other way round.
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/run/mod.rs")).unwrap();
    let named: BTreeSet<u8> = src
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .flat_map(|l| {
            l.split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse::<u8>().ok())
                .collect::<Vec<_>>()
        })
        // "128 + N" and the signals' own numbers are not codes.
        .filter(|&n| ![1, 15, 128].contains(&n))
        .collect();
    let table: BTreeSet<u8> = table().into_iter().map(|(c, _)| c).collect();
    assert_eq!(named, table);
}
