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
    // The executor port knows executors and their daemons, not the store.
    assert!(!of("sluice-executor").iter().any(|d| d == "sluice-store"), "sluice-executor depends on the store");
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

/// The modules of the crate whose sources are in `src`, by path
/// (`internal::server`), each with the modules of the crate it names
/// (`crate::…` and `super::…`, outside its tests and comments).
fn module_references(src: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    files(src, &mut paths);
    let name_of = |path: &std::path::Path| {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let rel = rel.to_string_lossy().replace('/', "::");
        let rel = rel.strip_suffix("::mod").unwrap_or(&rel).to_owned();
        if rel == "lib" || rel == "main" { String::new() } else { rel }
    };
    let modules: BTreeSet<String> = paths.iter().map(|p| name_of(p)).collect();
    let mut references = BTreeMap::new();
    for path in &paths {
        let name = name_of(path);
        let text = std::fs::read_to_string(path).unwrap();
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let parent = name.rsplit_once("::").map(|(p, _)| p.to_owned()).unwrap_or_default();
        let mut named = BTreeSet::new();
        for line in text.lines().map(|l| l.split("//").next().unwrap()) {
            for (root, base) in [("crate::", String::new()), ("super::", parent.clone())] {
                for (at, _) in line.match_indices(root) {
                    let rest = &line[at + root.len()..];
                    let mut candidates: Vec<&str> = Vec::new();
                    if let Some(list) = rest.strip_prefix('{') {
                        candidates.extend(list.split('}').next().unwrap().split(',').map(|i| i.trim()));
                    } else {
                        candidates.push(rest);
                    }
                    for candidate in candidates {
                        let segments: Vec<&str> = candidate
                            .split("::")
                            .map(|s| s.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap())
                            .take_while(|s| !s.is_empty())
                            .collect();
                        // The longest module the path names.
                        for k in (1..=segments.len()).rev() {
                            let joined = segments[..k].join("::");
                            let module = if base.is_empty() { joined } else { format!("{base}::{joined}") };
                            if modules.contains(&module) {
                                if module != name && !module.starts_with(&format!("{name}::")) {
                                    named.insert(module);
                                }
                                break;
                            }
                        }
                    }
                }
            }
        }
        references.insert(name, named);
    }
    references
}

/// A loop of modules in `references`, if there is one: the modules along it.
fn a_loop(references: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        references: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            return Some(path[at..].to_vec());
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in references.get(module).into_iter().flatten() {
            if let Some(found) = visit(next, references, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    references.keys().find_map(|module| visit(module, references, &mut Vec::new(), &mut done))
}

/// No module of a crate imports one that imports it back, however far
/// round: each crate's files depend on each other one way.
#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut crates = 0;
    let mut loops = Vec::new();
    for package in dependencies().keys() {
        let dir = package.strip_prefix("sluice-").unwrap_or(package);
        let dir = match dir {
            "client" => "sdk-openapi",
            other => other,
        };
        let src = root.join(dir).join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        if let Some(found) = a_loop(&module_references(&src)) {
            loops.push(format!("{package}: {}", found.join(" -> ")));
        }
    }
    assert!(crates > 15, "every crate was read: {crates}");
    assert!(loops.is_empty(), "modules that import each other round a loop:\n{}", loops.join("\n"));
}
