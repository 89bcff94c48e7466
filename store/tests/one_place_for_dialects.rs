//! Every difference between SQLite and PostgreSQL is in `db.rs`: no other
//! file of the store branches on the backend, reaches into a backend's pool
//! or names a backend's own sqlx types, so a query elsewhere is written once.

#[test]
fn only_db_rs_knows_there_are_two_backends() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let marks = [
        "BackendKind::",
        "Conns::Sqlite",
        "Conns::Postgres",
        "Tx::Sqlite",
        "Tx::Postgres",
        "sqlx::postgres",
        "sqlx::sqlite",
        "pg_",
        "PRAGMA",
    ];
    let mut seen = 0;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "db.rs" {
            assert!(marks.iter().all(|m| text.contains(m)), "db.rs holds the branches this test looks for");
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if let Some(mark) = marks.iter().find(|m| line.contains(*m)) {
                found.push(format!("{name}:{}: {mark}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(seen > 10, "the store's files were read: {seen}");
    assert!(found.is_empty(), "dialect branches outside db.rs:\n{}", found.join("\n"));
}
