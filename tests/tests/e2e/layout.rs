//! The crates' dependencies as the architecture has them, read from
//! `cargo metadata`: the policy crate does no I/O, and the layer that
//! reaches executors owns the port the API and the broker call through, so
//! neither reaches into the other or into the worker.

use std::collections::{BTreeMap, BTreeSet};

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
    // The SSH gateway is outside the install's trust: it speaks to sluice
    // over the API and the workers' session protocol, nothing else.
    for inside in ["sluice-store", "sluice-api", "sluice-worker", "sluice-executor", "sluice-daemon", "sluice-domain"] {
        assert!(!of("sluice-gateway").iter().any(|d| d == inside), "sluice-gateway depends on {inside}");
    }
    for user in ["sluice-api", "sluice-broker", "sluice-worker"] {
        assert!(of(user).iter().any(|d| d == "sluice-executor"), "{user} calls executors through the port");
    }
    // The shipped binary composes the server and carries no benchmark.
    assert!(of("sluice-cli").iter().any(|d| d == "sluice-server"), "the binary starts sluice through the server crate");
    assert!(!of("sluice-cli").iter().any(|d| d == "sluice-bench"), "the binary carries the benchmarks");
    assert!(!of("sluice-server").iter().any(|d| d == "sluice-cli"), "the server crate knows no binary");
}

/// Every crate `package` builds with, however indirectly (its normal and
/// build dependencies, and theirs).
fn closure(package: &str) -> BTreeSet<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline", "--manifest-path", manifest])
        // The machine's own platform: others' dependencies are never fetched here.
        .args(["--filter-platform", "x86_64-unknown-linux-gnu"])
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: BTreeMap<&str, &Value> =
        metadata["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let root = name_of.iter().find(|(_, name)| **name == package).map(|(id, _)| *id).unwrap();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(id) = todo.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let not_dev = dep["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].as_str() != Some("dev"));
            let dep_id = dep["pkg"].as_str().unwrap();
            if not_dev && seen.insert(name_of[dep_id].to_owned()) {
                todo.push(dep_id);
            }
        }
    }
    seen
}

#[test]
fn the_policy_crate_builds_without_any_io_crate() {
    let built_with = closure("sluice-domain");
    for io in [
        "sqlx",
        "sqlx-core",
        "tokio",
        "mio",
        "axum",
        "hyper",
        "reqwest",
        "bollard",
        "object_store",
        "rustls",
        "socket2",
        "sluice-store",
        "sluice-executor",
        "sluice-worker",
        "sluice-api",
    ] {
        assert!(!built_with.contains(io), "sluice-domain builds with {io}: {built_with:?}");
    }
    assert!(built_with.contains("sluice-protocol"), "{built_with:?}");
    // And the crates that decide nothing themselves take their policy from it.
    let all = dependencies();
    for user in ["sluice-store", "sluice-worker", "sluice-api"] {
        assert!(all[user].iter().any(|d| d == "sluice-domain"), "{user} takes its policy from sluice-domain");
    }
}
