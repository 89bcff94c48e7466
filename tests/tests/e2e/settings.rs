//! Settings from a file, through the real binary: `sluice config print`
//! shows defaults, then the file, then the environment, then flags, with
//! secrets redacted; an unknown key stops the start; a server started with
//! `--config` runs with the file's settings.

use std::process::Command;

use serde_json::json;
use sluice_tests::poll_until;
use sluice_tests::server::{DataDir, Options, Server};

const SECRET: &str = "s3cr3t-zq-token-4471";

fn sluice(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = Command::new(sluice_tests::sluice_binary());
    command.args(args).env("RUST_BACKTRACE", "0");
    for name in ["SLUICE_CONFIG", "SLUICE_MAX_CONNECTIONS", "SLUICE_API_TOKENS", "SLUICE_DATABASE_URL"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let out = command.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn line<'a>(printed: &'a str, key: &str) -> &'a str {
    printed
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")) || *l == format!("# {key} is not set"))
        .unwrap_or_else(|| panic!("no {key} in:\n{printed}"))
}

#[test]
fn the_file_then_the_environment_then_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(
        &file,
        format!(
            "default-ttl-seconds = 3600\nmax-connections = 100\nmax-body-bytes = 2000\n\
             registry = [\"ecr=registry.example:5000\", \"gh=ghcr.io\"]\napi-tokens = \"{SECRET}\"\n\
             database-url = \"postgres://sluice:{SECRET}@db.example/sluice\"\npreview-plaintext = true\n\
             # a gateway's key, in the same file, left to the gateway\nsign-in-seconds = 20\n"
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let env = [("SLUICE_MAX_CONNECTIONS", "200")];
    let (ok, printed, err) = sluice(&["config", "print", "--config", file, "serve", "--max-body-bytes", "3000"], &env);
    assert!(ok, "{err}");
    assert_eq!(line(&printed, "default-ttl-seconds"), "default-ttl-seconds = 3600  # file");
    assert_eq!(line(&printed, "max-connections"), "max-connections = 200  # environment");
    assert_eq!(line(&printed, "max-body-bytes"), "max-body-bytes = 3000  # flag");
    assert_eq!(line(&printed, "idle-timeout-ms"), "idle-timeout-ms = 60000  # default");
    assert_eq!(line(&printed, "preview-plaintext"), "preview-plaintext = true  # file");
    assert_eq!(line(&printed, "registry"), r#"registry = ["ecr=registry.example:5000", "gh=ghcr.io"]  # file"#);
    assert_eq!(line(&printed, "api-tokens"), r#"api-tokens = "<redacted>"  # file"#);
    assert_eq!(
        line(&printed, "database-url"),
        r#"database-url = "postgres://sluice:<redacted>@db.example/sluice"  # file"#
    );
    assert_eq!(line(&printed, "broker-listen"), "# broker-listen is not set");
    assert!(!printed.contains(SECRET), "{printed}");

    // The environment names the file too; a flag still wins over both.
    let env = [("SLUICE_CONFIG", file), ("SLUICE_MAX_CONNECTIONS", "200")];
    let (ok, printed, err) = sluice(&["config", "print", "worker", "--max-job-attempts", "7"], &env);
    assert!(ok, "{err}");
    assert_eq!(line(&printed, "max-job-attempts"), "max-job-attempts = 7  # flag");
    assert_eq!(line(&printed, "registry"), r#"registry = ["ecr=registry.example:5000", "gh=ghcr.io"]  # file"#);
    assert!(printed.starts_with("# sluice worker\n"), "{printed}");
}

#[test]
fn a_key_no_command_knows_is_refused_by_name_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(&file, format!("api-tokens = \"{SECRET}\"\nlisen = \"127.0.0.1:7420\"\n")).unwrap();
    let data = dir.path().join("data");
    let args = ["serve", "--config", file.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    let (ok, _, err) = sluice(&args, &[]);
    assert!(!ok, "{err}");
    assert!(err.contains("unknown key `lisen`"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    assert!(!data.exists(), "nothing was started");

    std::fs::write(&file, format!("api-tokens = \"{SECRET}\nlisten = 1\n")).unwrap();
    let (ok, _, err) = sluice(&args, &[]);
    assert!(!ok && err.contains("not valid TOML at line 1"), "{err}");
    assert!(!err.contains(SECRET), "the parser's quote of the line is not shown: {err}");

    std::fs::write(&file, "preview-plaintext = \"yes\"\n").unwrap();
    let (ok, _, err) = sluice(&args, &[]);
    assert!(!ok && err.contains("`preview-plaintext` is a switch"), "{err}");
}

#[tokio::test]
async fn a_server_started_with_a_file_runs_with_its_settings() {
    let dir = DataDir::new();
    let settings = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(settings.path(), "default-ttl-seconds = 3600\nmax-body-bytes = 2048\n").unwrap();
    let options = Options::serve().arg("--config").arg(settings.path().to_str().unwrap());
    let server = Server::start_with(&dir.path(), options).await;
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"]},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap();
    let (_, details) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    let expires = details["expiresAt"].as_str().unwrap_or_else(|| panic!("the file's default TTL applies: {details}"));
    let expires = time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339).unwrap();
    let ahead = expires - time::OffsetDateTime::now_utc();
    assert!(ahead > time::Duration::minutes(59) && ahead <= time::Duration::minutes(60), "{ahead}");
    let mut large = body.clone();
    large["name"] = json!("x".repeat(4096));
    let (status, refused) = server.post("/v1/workspaces", &large).await;
    assert_eq!(status, 413, "a body over the file's limit: {refused}");
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_with_the_request_span() {
    let dir = DataDir::new();
    let options = Options::serve().arg("--log-format").arg("json");
    let server = Server::start_with(&dir.path(), options).await;
    let (status, _) = server.get("/v1/workspaces?ownerUserId=alice").await;
    assert_eq!(status, 200);
    // The request's line is written as it ends, which may be just after the
    // client has its answer (lines of queries inside its span name its
    // route too: only the answer's own line ends the wait).
    let output = poll_until("the request's line is written", std::time::Duration::from_secs(10), || async {
        let output = server.output();
        output
            .lines()
            .any(|l| l.contains("\"answered\"") && l.contains("\"route\":\"/v1/workspaces\""))
            .then_some(output)
    })
    .await;
    let lines: Vec<serde_json::Value> = output
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(lines.iter().all(|l| l["level"].is_string() && l["timestamp"].is_string()), "{output}");
    let answered = lines
        .iter()
        .find(|l| l["fields"]["message"] == "answered" && l["span"]["route"] == "/v1/workspaces")
        .unwrap_or_else(|| panic!("no request line:\n{output}"));
    assert_eq!(answered["fields"]["status"], 200, "{answered}");
    assert_eq!(answered["span"]["method"], "GET", "{answered}");
    assert!(answered["span"]["request_id"].as_str().is_some_and(|id| id.len() == 32), "{answered}");
    assert!(!output.contains(&server.token), "the token is never logged");
}

#[test]
fn only_the_server_commands_read_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.toml");
    let missing = missing.to_str().unwrap();
    // An operator command with the variable set (to a file it cannot
    // read) is not stopped by it; a server command is.
    let (ok, out, err) = sluice(&["openapi"], &[("SLUICE_CONFIG", missing)]);
    assert!(ok && out.contains("\"openapi\""), "{err}");
    let data = dir.path().join("data");
    let (ok, _, err) = sluice(&["serve", "--data-dir", data.to_str().unwrap()], &[("SLUICE_CONFIG", missing)]);
    assert!(!ok && err.contains("cannot read") && err.contains("nowhere.toml"), "{err}");
}
