//! Statuses are bound as parameters from their enums, never written into
//! the store's SQL: a renamed or added status then cannot leave a query
//! that silently matches nothing. Every stored name of every status enum
//! is looked for, quoted as SQL quotes it, in the store's source.

use sluice_store::model::*;

fn stored_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    names.extend(WorkspaceStatus::ALL.iter().map(|s| s.as_str()));
    names.extend(DesiredState::ALL.iter().map(|s| s.as_str()));
    names.extend(CreateKeyState::ALL.iter().map(|s| s.as_str()));
    names.extend(RuntimeStatus::ALL.iter().map(|s| s.as_str()));
    names.extend(ExecRunStatus::ALL.iter().map(|s| s.as_str()));
    names.extend(DrainState::ALL.iter().map(|s| s.as_str()));
    names.extend(AttestationOutcome::ALL.iter().map(|s| s.as_str()));
    names.extend(sluice_store::broker_snapshots::SnapshotState::ALL.iter().map(|s| s.as_str()));
    names.extend(sluice_store::packs::PackState::ALL.iter().map(|s| s.as_str()));
    names
}

#[test]
fn no_sql_string_in_the_store_names_a_status() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let names = stored_names();
    assert!(names.contains(&"queued") && names.contains(&"kept"), "{names:?}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in &names {
                if line.contains(&format!("'{name}'")) {
                    found.push(format!("{}:{}: '{name}'", path.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "status names written into SQL:\n{}", found.join("\n"));
}
