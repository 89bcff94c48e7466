//! The crates' dependencies as the architecture has them, read from
//! `cargo metadata`: the layer that reaches executors owns the port the
//! API and the broker call through, so neither reaches into the other or
//! into the worker.

use std::collections::BTreeMap;

use serde_json::Value;

/// Each workspace crate and the crates it depends on (normal and build
/// dependencies; dev-dependencies are only tests').
fn dependencies() -> BTreeMap<String, Vec<String>> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path", manifest])
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

#[test]
fn the_api_and_the_broker_reach_executors_only_through_the_port() {
    let all = dependencies();
    let of = |name: &str| all.get(name).unwrap_or_else(|| panic!("{name} is a workspace crate"));
    for (crate_name, must_not) in [
        ("sluice-broker", ["sluice-api", "sluice-worker", "sluice-daemon"]),
        ("sluice-api", ["sluice-broker", "sluice-worker", "sluice-daemon"]),
        ("sluice-executor", ["sluice-api", "sluice-broker", "sluice-worker"]),
    ] {
        for forbidden in must_not {
            assert!(!of(crate_name).iter().any(|d| d == forbidden), "{crate_name} depends on {forbidden}");
        }
    }
    for user in ["sluice-api", "sluice-broker", "sluice-worker"] {
        assert!(of(user).iter().any(|d| d == "sluice-executor"), "{user} calls executors through the port");
    }
}
