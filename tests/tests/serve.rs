//! The real `sluice serve` binary: zero-setup start, tokens on disk, and no
//! secret in any answer, event, log line or plain column.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::*;

#[derive(Clone, Copy)]
enum Via {
    Flags,
    Environment,
}

struct Server {
    child: Option<Child>,
    base: String,
    token: String,
}

impl Server {
    async fn start(data_dir: &std::path::Path, database_url: Option<&str>) -> Server {
        Self::start_command("serve", data_dir, database_url, Via::Flags).await
    }

    /// Starts `sluice serve` or `sluice api`, configured by flags or by
    /// `SLUICE_*` variables, and waits until it is healthy.
    async fn start_command(command: &str, data_dir: &std::path::Path, database_url: Option<&str>, via: Via) -> Server {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(sluice_binary());
        cmd.arg(command).env_remove("SLUICE_API_TOKENS").env_remove("SLUICE_DATABASE_URL").env("SLUICE_LOG", "debug");
        match via {
            Via::Flags => {
                cmd.arg("--data-dir").arg(data_dir).arg("--listen").arg(&listen);
                if let Some(url) = database_url {
                    cmd.arg("--database-url").arg(url);
                }
            }
            Via::Environment => {
                cmd.env("SLUICE_DATA_DIR", data_dir).env("SLUICE_LISTEN", &listen);
                if let Some(url) = database_url {
                    cmd.env("SLUICE_DATABASE_URL", url);
                }
            }
        }
        let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start sluice");
        // Owned by the Server from here, so a failed start still stops the process.
        let mut server = Server { child: Some(child), base: format!("http://127.0.0.1:{port}"), token: String::new() };
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if client.get(format!("{}/healthz", server.base)).send().await.is_ok_and(|r| r.status() == 200) {
                server.token = std::fs::read_to_string(data_dir.join("api-token")).unwrap().trim().to_owned();
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("sluice serve did not become healthy");
    }

    /// Stops the server with SIGTERM and returns everything it printed.
    fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let status = child.wait().unwrap();
        assert!(status.success(), "sluice serve exited with {status}");
        let mut out = String::new();
        child.stderr.take().unwrap().read_to_string(&mut out).unwrap();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        out
    }
}

impl Drop for Server {
    /// A test that fails midway leaves no server behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

const SECRET_ENV_VALUE: &str = "zq9-secret-env-value-5511";
const CAPTURE_TOKEN: &str = "zq9-capture-token-7733";

/// Drives every read path with a secret-bearing workspace; returns all the
/// answers as text.
async fn exercise(server: &Server) -> String {
    let client = reqwest::Client::new();
    let mut seen = String::new();
    let body = json!({
        "ownerUserId": "alice", "registryId": "local", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"resources": {"cpu": 1}},
        "secretEnv": {"API_KEY": SECRET_ENV_VALUE},
        "captureToken": CAPTURE_TOKEN,
        "idempotencyKey": "secret-run",
    });
    let mut answers: Vec<(u16, Value)> = Vec::new();
    for _ in 0..2 {
        let r = client
            .post(format!("{}/v1/workspaces", server.base))
            .bearer_auth(&server.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        answers.push(read(r).await);
    }
    assert_eq!(answers[0].0, 202, "{}", answers[0].1);
    assert_eq!(answers[1].1["replayed"], true);
    let id = answers[0].1["workspaceId"].as_str().unwrap().to_owned();
    // A refused create that carries the secret: the refusal must not echo it.
    let mut bad = body.clone();
    bad["secretEnv"] = json!({"1NOT_A_NAME": SECRET_ENV_VALUE});
    bad["idempotencyKey"] = json!("other");
    let r = client
        .post(format!("{}/v1/workspaces", server.base))
        .bearer_auth(&server.token)
        .json(&bad)
        .send()
        .await
        .unwrap();
    answers.push(read(r).await);
    assert_eq!(answers[2].0, 400);
    for path in [
        format!("/v1/workspaces/{id}?ownerUserId=alice"),
        "/v1/workspaces?ownerUserId=alice".to_owned(),
        format!("/v1/workspaces/{id}/events?ownerUserId=alice"),
        format!("/v1/workspaces/{id}/attempts?ownerUserId=alice"),
        "/v1/workspaces/idempotency-keys/secret-run?ownerUserId=alice".to_owned(),
    ] {
        let r = client.get(format!("{}{path}", server.base)).bearer_auth(&server.token).send().await.unwrap();
        let answer = read(r).await;
        assert_eq!(answer.0, 200, "{path}");
        answers.push(answer);
    }
    for (_, body) in &answers {
        seen.push_str(&body.to_string());
    }
    assert!(seen.contains(&id), "the answers must be about the workspace");
    seen
}

fn assert_secret_free(what: &str, text: &str, token: &str) {
    for secret in [SECRET_ENV_VALUE, CAPTURE_TOKEN, token] {
        assert!(!text.contains(secret), "{what} contains a secret");
    }
}

#[tokio::test]
async fn serve_starts_with_no_setup_and_keeps_secrets_out_of_everything() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let server = Server::start(&data_dir, None).await;
    let token_path = data_dir.join("api-token");
    assert_eq!(std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(data_dir.join("gateway-token")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(data_dir.join("seal-key")).unwrap().permissions().mode() & 0o777, 0o600);
    let token = server.token.clone();

    let answers = exercise(&server).await;
    assert_secret_free("an API answer", &answers, &token);
    let log = server.stop();
    assert!(log.contains("api-token"), "the log says where the token is");
    assert!(log.contains("answered"), "request logging was on");
    assert_secret_free("the server log", &log, &token);

    // Every byte SQLite wrote: the database, its WAL and shared memory.
    for entry in std::fs::read_dir(&data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("sluice.db") {
            let bytes = std::fs::read(&path).unwrap();
            for secret in [SECRET_ENV_VALUE, CAPTURE_TOKEN] {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{} holds a secret in plain text",
                    path.display()
                );
            }
        }
    }
    // And column by column, through the store with the server's own key.
    let sealer = sluice_store::Sealer::load_or_create(&data_dir.join("seal-key")).unwrap();
    let store =
        sluice_store::Store::open(&format!("sqlite:{}", data_dir.join("sluice.db").display()), sealer).await.unwrap();
    assert!(store.any_column_contains("sluice-test/busybox").await.unwrap(), "the scan reads the data");
    assert!(!store.any_column_contains(SECRET_ENV_VALUE).await.unwrap());
    assert!(!store.any_column_contains(CAPTURE_TOKEN).await.unwrap());
}

#[tokio::test]
async fn serve_on_postgres_keeps_secrets_out_of_every_column() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_command("serve", dir.path(), Some(&db.url), Via::Environment).await;
    let token = server.token.clone();
    let answers = exercise(&server).await;
    assert_secret_free("an API answer", &answers, &token);
    let log = server.stop();
    assert_secret_free("the server log", &log, &token);
    let store =
        sluice_store::Store::open(&db.url, sluice_store::Sealer::load_or_create(&dir.path().join("seal-key")).unwrap())
            .await
            .unwrap();
    assert!(store.any_column_contains("sluice-test/busybox").await.unwrap(), "the scan reads the data");
    assert!(!store.any_column_contains(SECRET_ENV_VALUE).await.unwrap());
    assert!(!store.any_column_contains(CAPTURE_TOKEN).await.unwrap());
}

#[test]
fn migrate_and_openapi_commands_work() {
    let dir = tempfile::tempdir().unwrap();
    let migrate = Command::new(sluice_binary()).arg("migrate").arg("--data-dir").arg(dir.path()).output().unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
    assert!(dir.path().join("sluice.db").exists());
    let openapi = Command::new(sluice_binary()).arg("openapi").output().unwrap();
    assert!(openapi.status.success());
    let doc: Value = serde_json::from_slice(&openapi.stdout).unwrap();
    assert_eq!(doc, sluice_api::openapi::document());
}

#[tokio::test]
async fn scale_out_api_processes_and_a_worker_share_one_postgres() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let migrate = Command::new(sluice_binary())
        .args(["migrate", "--database-url", &db.url, "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
    let mut worker = Command::new(sluice_binary())
        .args(["worker", "--database-url", &db.url, "--data-dir"])
        .arg(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = Server::start_command("api", dir.path(), Some(&db.url), Via::Flags).await;
    let second = Server::start_command("api", dir.path(), Some(&db.url), Via::Environment).await;
    let client = reqwest::Client::new();
    let mut body = create_body("alice");
    body["idempotencyKey"] = json!("across-processes");
    let mut ids = Vec::new();
    for server in [&first, &second] {
        let r = client
            .post(format!("{}/v1/workspaces", server.base))
            .bearer_auth(&server.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, answer) = read(r).await;
        assert_eq!(status, 202, "{answer}");
        ids.push((answer["workspaceId"].clone(), answer["replayed"].clone()));
    }
    assert_eq!(ids[0].0, ids[1].0, "both API processes answer for the same workspace");
    assert_eq!((ids[0].1.clone(), ids[1].1.clone()), (json!(false), json!(true)));
    first.stop();
    second.stop();
    let _ = Command::new("kill").arg("-TERM").arg(worker.id().to_string()).status();
    let status = worker.wait().unwrap();
    let mut log = String::new();
    worker.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(status.success(), "the worker stops cleanly on SIGTERM: {log}");
    assert!(log.contains("worker stopped"), "{log}");
}
