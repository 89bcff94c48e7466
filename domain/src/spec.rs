//! The workspace `spec`, parsed once: the keys the runtimes act on become a
//! typed [`WorkspaceSpec`] that the API's validation and every runtime share,
//! so a value is judged by one rule. Other keys are kept as given.

use std::collections::BTreeMap;

use serde_json::Value;

/// Limits a spec asks for (`spec.resources`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Resources {
    pub cpus: Option<f64>,
    pub memory_mib: Option<u64>,
    pub pids: Option<u64>,
    pub disk_mib: Option<u64>,
}

impl Resources {
    /// The `spec.resources` keys asked for, by their wire names.
    pub fn asked(&self) -> Vec<&'static str> {
        let mut asked = Vec::new();
        if self.cpus.is_some() {
            asked.push("cpus");
        }
        if self.memory_mib.is_some() {
            asked.push("memoryMiB");
        }
        if self.pids.is_some() {
            asked.push("pids");
        }
        if self.disk_mib.is_some() {
            asked.push("diskMiB");
        }
        asked
    }
}

/// What the runtimes do with a workspace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkspaceSpec {
    /// The managed process's argv (`spec.command`); empty: none.
    pub command: Vec<String>,
    /// The managed process's plain environment (`spec.env`).
    pub env: BTreeMap<String, String>,
    /// `spec.network: true`: the executor gets the host's (or Docker's
    /// default) network.
    pub network: bool,
    /// `spec.network: {"egress": [...]}`: the executor gets no network of
    /// its own, only its worker's egress proxy to the names listed.
    pub egress: Option<crate::egress::Allowlist>,
    pub resources: Resources,
    /// `spec.access.sshPrincipals`: who besides the owner may be a target.
    pub ssh_principals: Vec<String>,
    /// `spec.source = {"kind": "capture", "sessionId": …}`: the capture
    /// session the executor restores from and captures into.
    pub capture_session: Option<String>,
    /// `spec.source.captureN`: the session's capture the first executor
    /// restores instead of the head.
    pub capture_point: Option<u64>,
    /// `spec.idle.sleepAfterSeconds`: how long it may go unused before it
    /// sleeps (`0`: never, whatever the install's default).
    pub sleep_after_seconds: Option<u64>,
    /// `spec.readyCommand`: run in the executor until it exits 0 before the
    /// workspace reads `ready` (empty: ready once its daemon answers).
    pub ready_command: Vec<String>,
}

/// A workspace's spec, parsed once where it enters (the API, the broker, a
/// row read back): the document as it was given, kept and shown back
/// whole (keys sluice does not act on included), and what sluice reads
/// from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    document: Value,
    typed: WorkspaceSpec,
}

impl Spec {
    pub fn parse(document: Value) -> Result<Spec, SpecError> {
        let typed = WorkspaceSpec::parse(&document)?;
        Ok(Spec { document, typed })
    }

    /// The document as given.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// What the runtimes and the policy act on.
    pub fn typed(&self) -> &WorkspaceSpec {
        &self.typed
    }

    /// The capture session this workspace's executors restore from and
    /// capture into: its executors may hold work only capture can prove
    /// saved.
    pub fn capture_session(&self) -> Option<&str> {
        self.typed.capture_session.as_deref()
    }

    /// The earlier capture of [`Spec::capture_session`] the first executor
    /// restores (`None`: the head).
    pub fn capture_point(&self) -> Option<u64> {
        self.typed.capture_point
    }
}

impl Default for Spec {
    fn default() -> Self {
        Spec { document: Value::Object(Default::default()), typed: WorkspaceSpec::default() }
    }
}

/// A command given as one line of shell: run by the image's `sh` (found
/// on its PATH; a path in `spec.command` reads as a leaked secret to the
/// guard).
pub fn shell(line: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), line.to_owned()]
}

/// Why a spec cannot be run, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// An environment variable name: 1 to 128 of letters, digits and `_`, not
/// starting with a digit.
pub fn env_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn refuse<T>(message: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(message.into()))
}

impl WorkspaceSpec {
    /// What this spec asks a runtime to enforce, as keys under `spec`
    /// (`resources.cpus`, `network.egress`): a runtime that cannot
    /// enforce one refuses the spec rather than run it unbounded.
    pub fn enforced(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.resources.asked().iter().map(|r| format!("resources.{r}")).collect();
        if self.egress.is_some() {
            keys.push("network.egress".into());
        }
        keys
    }

    /// Reads the keys runtimes act on; a mistyped or impossible value is
    /// refused, naming the key.
    pub fn parse(spec: &Value) -> Result<WorkspaceSpec, SpecError> {
        let mut parsed = WorkspaceSpec::default();
        if let Some(command) = spec.get("command") {
            let argv = command.as_array().filter(|a| !a.is_empty() && a.len() <= 256);
            let argv: Option<Vec<String>> = argv.and_then(|a| {
                a.iter().map(|v| v.as_str().filter(|s| !s.is_empty() && s.len() <= 4096).map(str::to_owned)).collect()
            });
            match argv {
                Some(argv) => parsed.command = argv,
                None => return refuse("spec.command must be an argv: 1 to 256 non-empty strings"),
            }
        }
        match spec.get("readyCommand") {
            None => {}
            Some(Value::String(line)) if !line.trim().is_empty() && line.len() <= 4096 => {
                parsed.ready_command = shell(line);
            }
            Some(Value::Array(items)) if !items.is_empty() && items.len() <= 256 => {
                let argv: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().filter(|s| !s.is_empty() && s.len() <= 4096).map(str::to_owned))
                    .collect();
                match argv {
                    Some(argv) => parsed.ready_command = argv,
                    None => return refuse("spec.readyCommand must be a line of shell or an argv of non-empty strings"),
                }
            }
            Some(_) => return refuse("spec.readyCommand must be a line of shell or an argv of 1 to 256 strings"),
        }
        if let Some(env) = spec.get("env") {
            let Some(env) = env.as_object() else {
                return refuse("spec.env must be an object of names to string values");
            };
            for (name, value) in env {
                if !env_name_ok(name) || name.starts_with("SLUICE") {
                    return refuse(format!(
                        "spec.env.{name}: names are 1 to 128 of A-Z, a-z, 0-9 or '_', not starting with a digit or SLUICE"
                    ));
                }
                let Some(value) = value.as_str() else { return refuse(format!("spec.env.{name} must be a string")) };
                parsed.env.insert(name.clone(), value.to_owned());
            }
        }
        match spec.get("network") {
            None => {}
            Some(Value::Bool(network)) => parsed.network = *network,
            Some(Value::Object(policy)) => parsed.egress = Some(parse_egress(policy)?),
            Some(_) => return refuse("spec.network must be true, false or {\"egress\": [names]}"),
        }
        if let Some(resources) = spec.get("resources") {
            parsed.resources = parse_resources(resources)?;
        }
        if let Some(principals) = spec.pointer("/access/sshPrincipals") {
            let names: Option<Vec<String>> = principals.as_array().and_then(|a| {
                a.iter().map(|p| p.as_str().filter(|s| !s.trim().is_empty()).map(str::to_owned)).collect()
            });
            match names {
                Some(names) => parsed.ssh_principals = names,
                None => return refuse("spec.access.sshPrincipals must be an array of non-empty strings"),
            }
        }
        if let Some(source) = spec.get("source") {
            let (session, point) = parse_source(source)?;
            parsed.capture_session = Some(session);
            parsed.capture_point = point;
        }
        if let Some(idle) = spec.get("idle") {
            parsed.sleep_after_seconds = Some(parse_idle(idle)?);
            if parsed.capture_session.is_none() {
                return refuse(
                    "spec.idle needs spec.source: only a capture-sourced workspace sleeps (its capture session \
                     holds its work while its runtime is gone)",
                );
            }
        }
        Ok(parsed)
    }
}

/// The capture session a `spec.source` names, and the capture of it to
/// restore when it names one.
fn parse_source(source: &Value) -> Result<(String, Option<u64>), SpecError> {
    let Some(source) = source.as_object() else { return refuse("spec.source must be an object") };
    match source.get("kind").and_then(Value::as_str) {
        Some("capture") => {}
        _ => return refuse("spec.source.kind must be \"capture\" (the one source sluice materializes)"),
    }
    if let Some(key) = source.keys().find(|k| !matches!(k.as_str(), "kind" | "sessionId" | "captureN")) {
        return refuse(format!("spec.source.{key} is not a field of a capture source (kind, sessionId, captureN)"));
    }
    let point = match source.get("captureN") {
        None => None,
        Some(n) => match n.as_u64().filter(|n| (1..=i64::MAX as u64).contains(n)) {
            Some(n) => Some(n),
            None => return refuse("spec.source.captureN must be a capture's number (a whole number from 1)"),
        },
    };
    let id = source.get("sessionId").and_then(Value::as_str);
    match id.filter(|id| {
        !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }) {
        Some(id) => Ok((id.to_owned(), point)),
        None => refuse("spec.source.sessionId must name a capture session (1 to 128 of A-Z, a-z, 0-9, '_', '-')"),
    }
}

/// The longest `spec.idle.sleepAfterSeconds` (30 days).
pub const MAX_SLEEP_AFTER_SECONDS: u64 = 30 * 24 * 3600;

/// `{"sleepAfterSeconds": N}`, N from 0 (never) to 30 days.
fn parse_idle(idle: &Value) -> Result<u64, SpecError> {
    let Some(idle) = idle.as_object() else { return refuse("spec.idle must be an object") };
    if let Some(key) = idle.keys().find(|k| k.as_str() != "sleepAfterSeconds") {
        return refuse(format!("spec.idle.{key} is not a field of an idle policy (sleepAfterSeconds)"));
    }
    let max = MAX_SLEEP_AFTER_SECONDS;
    match idle.get("sleepAfterSeconds").map(|n| n.as_u64().filter(|n| *n <= max)) {
        Some(Some(seconds)) => Ok(seconds),
        _ => refuse(format!("spec.idle.sleepAfterSeconds must be a whole number of seconds from 0 (never) to {max}")),
    }
}

fn parse_egress(policy: &serde_json::Map<String, Value>) -> Result<crate::egress::Allowlist, SpecError> {
    if let Some(key) = policy.keys().find(|k| k.as_str() != "egress") {
        return refuse(format!("spec.network.{key} is not a field of a network policy (egress)"));
    }
    let Some(items) = policy.get("egress").and_then(Value::as_array) else {
        return refuse("spec.network.egress must be an array of host names (name, *.domain, name:port)");
    };
    let entries = items.iter().map(egress_entry).collect::<Result<Vec<_>, _>>()?;
    crate::egress::Allowlist::of(entries).map_err(|e| SpecError(format!("spec.network.egress: {e}")))
}

/// A name, or `{"host": name, "inject": {"header", "valueFrom", "format"}}`.
fn egress_entry(item: &Value) -> Result<crate::egress::Entry, SpecError> {
    use crate::egress::{Entry, Injection};
    let wrong = |e: crate::egress::EntryError| SpecError(format!("spec.network.egress: {e}"));
    match item {
        Value::String(name) => Entry::parse(name).map_err(wrong),
        Value::Object(entry) => {
            if let Some(key) = entry.keys().find(|k| !matches!(k.as_str(), "host" | "inject")) {
                return refuse(format!("spec.network.egress: {key} is not a field of an entry (host, inject)"));
            }
            let Some(host) = entry.get("host").and_then(Value::as_str) else {
                return refuse("spec.network.egress: an entry object needs host (a name)");
            };
            let parsed = Entry::parse(host).map_err(wrong)?;
            let Some(inject) = entry.get("inject") else { return Ok(parsed) };
            let text = |key: &str| inject.get(key).and_then(Value::as_str);
            let fields_ok = inject
                .as_object()
                .is_some_and(|o| o.keys().all(|k| matches!(k.as_str(), "header" | "valueFrom" | "format")));
            let (Some(header), Some(value_from), true) = (text("header"), text("valueFrom"), fields_ok) else {
                return refuse("spec.network.egress: inject is {\"header\", \"valueFrom\", \"format\"?} (strings)");
            };
            if inject.get("format").is_some_and(|f| !f.is_string()) {
                return refuse("spec.network.egress: inject.format must be a string holding `{}`");
            }
            parsed.injecting(Injection::parse(header, value_from, text("format")).map_err(wrong)?).map_err(wrong)
        }
        _ => refuse("spec.network.egress must be an array of host names (name, *.domain, name:port)"),
    }
}

fn parse_resources(resources: &Value) -> Result<Resources, SpecError> {
    let Some(resources) = resources.as_object() else { return refuse("spec.resources must be an object") };
    let out_of_range = |key: &str| {
        SpecError(format!(
            "spec.resources.{key} is out of range (cpus: above 0 up to 1024; memoryMiB: 6 to 4194304; \
             pids: 1 to 1000000; diskMiB: 16 to 16777216)"
        ))
    };
    let whole = |key: &str, value: &Value, range: std::ops::RangeInclusive<u64>| {
        value.as_u64().filter(|v| range.contains(v)).ok_or_else(|| out_of_range(key))
    };
    let mut parsed = Resources::default();
    for (key, value) in resources {
        match key.as_str() {
            "cpus" => {
                let cpus = value.as_f64().filter(|c| *c > 0.0 && *c <= 1024.0).ok_or_else(|| out_of_range(key))?;
                parsed.cpus = Some(cpus);
            }
            "memoryMiB" => parsed.memory_mib = Some(whole(key, value, 6..=4 * 1024 * 1024)?),
            "pids" => parsed.pids = Some(whole(key, value, 1..=1_000_000)?),
            "diskMiB" => parsed.disk_mib = Some(whole(key, value, 16..=16 * 1024 * 1024)?),
            _ => {
                return refuse(format!(
                    "spec.resources.{key} is not a resource sluice sets (cpus, memoryMiB, pids, diskMiB)"
                ));
            }
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_keys_runtimes_act_on_are_typed() {
        let spec = WorkspaceSpec::parse(&json!({
            "command": ["sleep", "5"], "env": {"A": "1"}, "network": true,
            "resources": {"cpus": 0.5, "memoryMiB": 64, "pids": 10, "diskMiB": 32},
            "access": {"sshPrincipals": ["bob"]}, "other": {"kept": true},
            "source": {"kind": "capture", "sessionId": "cs_1"}
        }))
        .unwrap();
        assert_eq!(spec.command, ["sleep", "5"]);
        assert_eq!(spec.env.get("A").map(String::as_str), Some("1"));
        assert!(spec.network);
        assert_eq!(
            spec.resources,
            Resources { cpus: Some(0.5), memory_mib: Some(64), pids: Some(10), disk_mib: Some(32) }
        );
        assert_eq!(spec.resources.asked(), ["cpus", "memoryMiB", "pids", "diskMiB"]);
        assert_eq!(spec.ssh_principals, ["bob"]);
        assert_eq!(spec.capture_session.as_deref(), Some("cs_1"));
        assert_eq!(spec.capture_point, None);
        let at = WorkspaceSpec::parse(&json!({"source": {"kind": "capture", "sessionId": "cs_1", "captureN": 7}}));
        assert_eq!(at.unwrap().capture_point, Some(7));
        assert_eq!(WorkspaceSpec::parse(&json!({})).unwrap(), WorkspaceSpec::default());
        let limited = WorkspaceSpec::parse(&json!({"network": {"egress": ["pypi.org", "*.example.test:8443"]}}));
        let limited = limited.unwrap();
        assert!(!limited.network, "an allowlist is not the open network");
        let allowlist = limited.egress.expect("an allowlist");
        assert!(allowlist.allows("pypi.org", 443) && allowlist.allows("a.example.test", 8443));
        assert!(!allowlist.allows("a.example.test", 443));
        let injected = json!({"network": {"egress": ["pypi.org", {"host": "api.github.com", "inject":
            {"header": "authorization", "valueFrom": "GITHUB_TOKEN", "format": "Bearer {}"}}]}});
        let allowlist = WorkspaceSpec::parse(&injected).unwrap().egress.expect("an allowlist");
        assert_eq!(allowlist.injection("api.github.com", 443).map(|i| i.value("t")), Some("Bearer t".into()));
        assert!(allowlist.allows("pypi.org", 443) && allowlist.injection("pypi.org", 443).is_none());
        let none = WorkspaceSpec::parse(&json!({"network": {"egress": []}})).unwrap();
        assert_eq!(none.egress.map(|l| l.entries().len()), Some(0), "an empty list: a proxy that allows nothing");
        let line = WorkspaceSpec::parse(&json!({"readyCommand": "test -f /ready"})).unwrap();
        assert_eq!(line.ready_command, ["sh", "-c", "test -f /ready"]);
        let argv = WorkspaceSpec::parse(&json!({"readyCommand": ["curl", "-f", "localhost:8080"]})).unwrap();
        assert_eq!(argv.ready_command, ["curl", "-f", "localhost:8080"]);
    }

    #[test]
    fn impossible_values_are_refused_naming_the_key() {
        for (spec, key) in [
            (json!({"command": []}), "spec.command"),
            (json!({"command": ["a", 1]}), "spec.command"),
            (json!({"readyCommand": ""}), "spec.readyCommand"),
            (json!({"readyCommand": ["a", 1]}), "spec.readyCommand"),
            (json!({"readyCommand": 5}), "spec.readyCommand"),
            (json!({"env": {"1X": "v"}}), "spec.env.1X"),
            (json!({"env": {"SLUICE_X": "v"}}), "spec.env.SLUICE_X"),
            (json!({"env": {"A": 1}}), "spec.env.A"),
            (json!({"network": "yes"}), "spec.network"),
            (json!({"network": {"egress": "pypi.org"}}), "spec.network.egress"),
            (json!({"network": {"egress": ["10.0.0.1"]}}), "spec.network.egress"),
            (json!({"network": {"egress": [{"host": "a.test", "inject": {"header": "x"}}]}}), "spec.network.egress"),
            (json!({"network": {"egress": [{"host": "a.test", "port": 1}]}}), "spec.network.egress"),
            (
                json!({"network": {"egress": [{"host": "*.a.test", "inject": {"header": "x", "valueFrom": "K"}}]}}),
                "spec.network.egress",
            ),
            (json!({"network": {"egress": [1]}}), "spec.network.egress"),
            (json!({"network": {"ingress": []}}), "spec.network.ingress"),
            (json!({"resources": []}), "spec.resources"),
            (json!({"resources": {"cpus": 0}}), "spec.resources.cpus"),
            (json!({"resources": {"memoryMiB": 5}}), "spec.resources.memoryMiB"),
            (json!({"resources": {"pids": 0}}), "spec.resources.pids"),
            (json!({"resources": {"diskMiB": 15}}), "spec.resources.diskMiB"),
            (json!({"resources": {"gpus": 1}}), "spec.resources.gpus"),
            (json!({"access": {"sshPrincipals": [" "]}}), "spec.access.sshPrincipals"),
            (json!({"source": "capture"}), "spec.source"),
            (json!({"source": {"kind": "git"}}), "spec.source.kind"),
            (json!({"source": {"kind": "capture"}}), "spec.source.sessionId"),
            (json!({"source": {"kind": "capture", "sessionId": "../x"}}), "spec.source.sessionId"),
            (json!({"source": {"kind": "capture", "sessionId": "a", "ref": 1}}), "spec.source.ref"),
            (json!({"source": {"kind": "capture", "sessionId": "a", "captureN": 0}}), "spec.source.captureN"),
            (json!({"source": {"kind": "capture", "sessionId": "a", "captureN": -1}}), "spec.source.captureN"),
            (json!({"source": {"kind": "capture", "sessionId": "a", "captureN": 1.5}}), "spec.source.captureN"),
            (json!({"source": {"kind": "capture", "sessionId": "a", "captureN": "2"}}), "spec.source.captureN"),
            (json!({"idle": {"sleepAfterSeconds": 3}}), "spec.idle"),
            (json!({"source": {"kind": "capture", "sessionId": "a"}, "idle": 3}), "spec.idle"),
            (json!({"source": {"kind": "capture", "sessionId": "a"}, "idle": {}}), "spec.idle.sleepAfterSeconds"),
            (
                json!({"source": {"kind": "capture", "sessionId": "a"}, "idle": {"sleepAfterSeconds": -1}}),
                "spec.idle.sleepAfterSeconds",
            ),
            (
                json!({"source": {"kind": "capture", "sessionId": "a"}, "idle": {"sleepAfterSeconds": 2592001}}),
                "spec.idle.sleepAfterSeconds",
            ),
            (json!({"source": {"kind": "capture", "sessionId": "a"}, "idle": {"after": 3}}), "spec.idle.after"),
        ] {
            let err = WorkspaceSpec::parse(&spec).unwrap_err();
            assert!(err.0.starts_with(key), "{spec}: {err}");
        }
    }
}
