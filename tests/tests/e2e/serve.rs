//! The real `sluice serve` binary: zero-setup start, tokens on disk, and no
//! secret in any answer, event, log line or plain column.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::{Value, json};
use sluice_domain::ids::{IdempotencyKey, OwnerId};
use sluice_tests::server::{DataDir, Options, Server, Via};
use sluice_tests::*;

const SECRET_ENV_VALUE: &str = "zq9-secret-env-value-5511";

/// Drives every read path with a secret-bearing workspace (a capture
/// session's token and a secret environment); returns all the answers as
/// text and the session's token.
async fn exercise(server: &Server) -> (String, String) {
    let client = sluice_tests::http_client();
    let mut seen = String::new();
    let (status, session) = server.post("/v1/capture-sessions", &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 201, "{session}");
    let capture_token = session["token"].as_str().unwrap().to_owned();
    let session_id = session["sessionId"].as_str().unwrap().to_owned();
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"resources": {"cpus": 1}, "source": {"kind": "capture", "sessionId": session_id}},
        "secretEnv": {"API_KEY": SECRET_ENV_VALUE},
        "captureToken": capture_token,
        "idempotencyKey": "secret-run",
    });
    let create = |body: Value| {
        let request = client.post(format!("{}/v1/workspaces", server.base)).bearer_auth(&server.token).json(&body);
        async move { read(request.send().await.unwrap()).await }
    };
    let mut answers: Vec<(u16, Value)> = vec![create(body.clone()).await, create(body.clone()).await];
    assert_eq!(answers[0].0, 202, "{}", answers[0].1);
    assert_eq!(answers[1].1["replayed"], true);
    let id = answers[0].1["workspaceId"].as_str().unwrap().to_owned();
    // A refused create that carries the secret: the refusal must not echo it.
    let mut bad = body.clone();
    bad["secretEnv"] = json!({"1NOT_A_NAME": SECRET_ENV_VALUE});
    bad["idempotencyKey"] = json!("other");
    answers.push(create(bad).await);
    assert_eq!(answers[2].0, 400);
    for path in [
        format!("/v1/workspaces/{id}?ownerUserId=alice"),
        "/v1/workspaces?ownerUserId=alice".to_owned(),
        format!("/v1/workspaces/{id}/events?ownerUserId=alice"),
        format!("/v1/workspaces/{id}/attempts?ownerUserId=alice"),
        "/v1/workspaces/idempotency-keys/secret-run?ownerUserId=alice".to_owned(),
        format!("/v1/capture-sessions/{session_id}?ownerUserId=alice"),
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
    (seen, capture_token)
}

fn assert_secret_free(what: &str, text: &str, token: &str, capture_token: &str) {
    for secret in [SECRET_ENV_VALUE, capture_token, token] {
        assert!(!text.contains(secret), "{what} contains a secret");
    }
}

#[tokio::test]
async fn serve_starts_with_no_setup_and_keeps_secrets_out_of_everything() {
    let dir = DataDir::new();
    let data_dir = dir.path();
    let server = Server::start(&data_dir, None).await;
    let token_path = data_dir.join("api-token");
    // Others may at most pass through it (only when executors run without
    // a sandbox as another user); no one else reads it.
    assert_eq!(
        std::fs::metadata(&data_dir).unwrap().permissions().mode() & 0o066,
        0,
        "a new data directory is private"
    );
    assert_eq!(std::fs::metadata(data_dir.join("sluice.db")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(data_dir.join("gateway-token")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(data_dir.join("seal-key")).unwrap().permissions().mode() & 0o777, 0o600);
    let token = server.token.clone();

    let (answers, capture_token) = exercise(&server).await;
    assert_secret_free("an API answer", &answers, &token, &capture_token);
    let log = server.stop();
    assert!(log.contains("api-token"), "the log says where the token is");
    assert!(log.contains("answered"), "request logging was on");
    assert_secret_free("the server log", &log, &token, &capture_token);

    // Every byte SQLite wrote: the database, its WAL and shared memory.
    for entry in std::fs::read_dir(&data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("sluice.db") {
            let bytes = std::fs::read(&path).unwrap();
            for secret in [SECRET_ENV_VALUE, capture_token.as_str()] {
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
    assert!(!store.any_column_contains(&capture_token).await.unwrap());
}

#[tokio::test]
async fn serve_on_postgres_keeps_secrets_out_of_every_column() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve().database(Some(&db.url)).via(Via::Environment)).await;
    let token = server.token.clone();
    let (answers, capture_token) = exercise(&server).await;
    assert_secret_free("an API answer", &answers, &token, &capture_token);
    let log = server.stop();
    assert_secret_free("the server log", &log, &token, &capture_token);
    let store =
        sluice_store::Store::open(&db.url, sluice_store::Sealer::load_or_create(&dir.path().join("seal-key")).unwrap())
            .await
            .unwrap();
    assert!(store.any_column_contains("sluice-test/busybox").await.unwrap(), "the scan reads the data");
    assert!(!store.any_column_contains(SECRET_ENV_VALUE).await.unwrap());
    assert!(!store.any_column_contains(&capture_token).await.unwrap());
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
    let dir = DataDir::new();
    let migrate = Command::new(sluice_binary())
        .args(["migrate", "--database-url", &db.url, "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
    let worker = Server::start_with(&dir.path(), Options::command("worker").database(Some(&db.url))).await;
    let first = Server::start_with(&dir.path(), Options::command("api").database(Some(&db.url))).await;
    let second =
        Server::start_with(&dir.path(), Options::command("api").database(Some(&db.url)).via(Via::Environment)).await;
    let mut body = create_body("alice");
    body["idempotencyKey"] = json!("across-processes");
    let mut ids = Vec::new();
    for server in [&first, &second] {
        let (status, answer) = server.post("/v1/workspaces", &body).await;
        assert_eq!(status, 202, "{answer}");
        ids.push((answer["workspaceId"].clone(), answer["replayed"].clone()));
    }
    assert_eq!(ids[0].0, ids[1].0, "both API processes answer for the same workspace");
    assert_eq!((ids[0].1.clone(), ids[1].1.clone()), (json!(false), json!(true)));
    // The worker process, not the API, brings it up.
    let id = ids[0].0.as_str().unwrap();
    second.wait_for("alice", id, std::time::Duration::from_secs(30), |w| w["status"] == "ready").await;
    first.stop();
    second.stop();
    let log = worker.stop();
    assert!(log.contains("worker stopped"), "the worker stops cleanly on SIGTERM: {log}");
}

/// Creates for `keys` concurrently; returns the answers that arrived. Each
/// 202 is also announced on `progress`.
async fn create_burst(
    base: &str,
    token: &str,
    keys: std::ops::Range<usize>,
    progress: Option<tokio::sync::mpsc::UnboundedSender<usize>>,
) -> Vec<(usize, u16, Value)> {
    let client = sluice_tests::http_client();
    let requests = keys.map(|i| {
        let (client, url, token, progress) =
            (client.clone(), format!("{base}/v1/workspaces"), token.to_owned(), progress.clone());
        tokio::spawn(async move {
            let mut body = create_body("alice");
            body["idempotencyKey"] = json!(format!("crash-{i}"));
            let r = client.post(url).bearer_auth(token).json(&body).send().await.ok()?;
            let (status, answer) = read(r).await;
            if let (202, Some(progress)) = (status, progress) {
                let _ = progress.send(i);
            }
            Some((i, status, answer))
        })
    });
    futures::future::join_all(requests).await.into_iter().filter_map(|r| r.ok().flatten()).collect()
}

async fn crash_mid_burst_then_repeat(data_dir: &std::path::Path, database_url: Option<&str>, store_url: &str) {
    const CREATES: usize = 150;
    // The API alone: this is about the create path, not about executors.
    let api = || Options::command("api").database(database_url);
    let server = Server::start_with(data_dir, api()).await;
    let (base, token) = (server.base.clone(), server.token.clone());
    let (progress, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let burst = tokio::spawn(async move { create_burst(&base, &token, 0..CREATES, Some(progress)).await });
    // Kill once some creates have committed, while the rest are in flight.
    for _ in 0..10 {
        answered.recv().await.expect("creates are answered");
    }
    server.kill(); // SIGKILL: no shutdown path runs
    let before = burst.await.unwrap();
    let committed_before: Vec<_> = before.iter().filter(|(_, s, _)| *s == 202).collect();
    assert!(committed_before.len() < CREATES, "the kill must land inside the burst to test anything");

    // The caller repeats every create after the crash.
    let server = Server::start_with(data_dir, api()).await;
    let after = create_burst(&server.base, &server.token, 0..CREATES, None).await;
    assert_eq!(after.len(), CREATES);
    for (i, status, answer) in &after {
        assert_eq!(*status, 202, "crash-{i}: {answer}");
        if let Some((_, _, first)) = committed_before.iter().find(|(j, _, _)| j == i) {
            assert_eq!(answer["workspaceId"], first["workspaceId"], "crash-{i}: an answered create must replay");
            assert_eq!(answer["replayed"], true);
        }
    }
    server.stop();

    let sealer = sluice_store::Sealer::load_or_create(&data_dir.join("seal-key")).unwrap();
    let store = sluice_store::Store::open(store_url, sealer).await.unwrap();
    let all = store
        .list_workspaces(&OwnerId::from("alice"), &sluice_store::WorkspaceFilter { limit: 1000, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(all.len(), CREATES, "exactly one workspace per key, none lost, none doubled");
    for view in &all {
        let events = store.list_events(&OwnerId::from("alice"), &view.workspace.id, 10).await.unwrap().unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2], "every workspace has its two events");
        assert_eq!(store.list_runs(&OwnerId::from("alice"), &view.workspace.id, 10).await.unwrap().unwrap().len(), 1);
        let key = view.workspace.idempotency_key.as_deref().unwrap();
        let record = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from(key)).await.unwrap();
        assert_eq!(record.workspace_id.as_deref(), Some(view.workspace.id.as_str()));
    }
}

#[tokio::test]
async fn a_server_killed_mid_burst_loses_and_doubles_nothing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let url = format!("sqlite:{}", data_dir.join("sluice.db").display());
    crash_mid_burst_then_repeat(&data_dir, None, &url).await;
}

#[tokio::test]
async fn a_server_killed_mid_burst_loses_and_doubles_nothing_on_postgres() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = tempfile::tempdir().unwrap();
    crash_mid_burst_then_repeat(dir.path(), Some(&db.url), &db.url).await;
}

/// The whole server (API, worker, its internal listener) started in process
/// through the library the binary calls, on port 0: a workspace comes up on
/// the local runtime, runs a command and stops; cancelling the token ends
/// the server, which returns cleanly.
#[tokio::test]
async fn the_whole_server_runs_in_process_on_port_zero() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let daemon = sluice_tests::sluice_binary().with_file_name("sluiced");
    let flags =
        [std::ffi::OsStr::new("--data-dir"), dir.path().as_os_str(), "--daemon-binary".as_ref(), daemon.as_os_str()];
    let (settings, beside) = sluice_server::serve_settings(flags).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = sluice_server::CancellationToken::new();
    let serving = tokio::spawn(sluice_server::serve_api(settings, beside, listener, stop.clone()));
    let client = sluice_tests::http_client();
    let token = poll_until("the API token is written", Duration::from_secs(10), || async {
        std::fs::read_to_string(dir.path().join("api-token")).ok().filter(|t| !t.trim().is_empty())
    })
    .await;
    let token = token.trim();
    let post = |path: String, body: Value| {
        let request = client.post(format!("{base}{path}")).bearer_auth(token).json(&body);
        async move { request.send().await.unwrap() }
    };
    let created: Value = post("/v1/workspaces".into(), create_body("alice")).await.json().await.unwrap();
    let id = created["workspaceId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let workspace = format!("{base}/v1/workspaces/{id}?ownerUserId=alice");
    let status_is = |wanted: &'static str| {
        let (client, workspace) = (client.clone(), workspace.clone());
        move || {
            let (client, workspace) = (client.clone(), workspace.clone());
            async move {
                let body: Value = client.get(&workspace).bearer_auth(token).send().await.ok()?.json().await.ok()?;
                (body["status"] == wanted).then_some(body)
            }
        }
    };
    poll_until("the workspace is ready", Duration::from_secs(60), status_is("ready")).await;
    let exec = json!({"ownerUserId": "alice", "commands": [{"argv": ["echo", "in process"]}]});
    let run: Value = post(format!("/v1/workspaces/{id}/exec"), exec).await.json().await.unwrap();
    let run_url = format!("{base}/v1/runs/{}?ownerUserId=alice", run["runId"].as_str().unwrap());
    let finished = poll_until("the exec run ends", Duration::from_secs(30), || {
        let (client, run_url) = (client.clone(), run_url.clone());
        async move {
            let body: Value = client.get(&run_url).bearer_auth(token).send().await.ok()?.json().await.ok()?;
            (body["status"] == "completed").then_some(body)
        }
    })
    .await;
    assert_eq!(finished["commands"][0]["stdout"], "in process\n", "{finished}");
    let stopping = post(format!("/v1/workspaces/{id}/stop"), json!({"ownerUserId": "alice"})).await;
    assert_eq!(stopping.status(), 202);
    poll_until("the workspace is stopped", Duration::from_secs(60), status_is("stopped")).await;
    stop.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(40), serving).await.expect("the server ends once cancelled");
    ended.unwrap().expect("the server returns cleanly");
    assert!(client.get(format!("{base}/healthz")).send().await.is_err(), "nothing listens once it has ended");
}

/// The docker runtime mounts a statically linked daemon into each
/// container: given a dynamically linked one, or finding none, `doctor`
/// (and `serve`) refuse it and say exactly what is missing and how to
/// build it, with or without a Docker Engine here.
#[test]
fn the_docker_runtime_says_what_daemon_it_is_missing() {
    let dir = DataDir::new();
    let doctor = |daemon: &std::path::Path| {
        let mut command = Command::new(sluice_binary());
        command.args(["doctor", "--runtime", "docker", "--docker-daemon-binary"]).arg(daemon);
        command.arg("--data-dir").arg(dir.path()).output().unwrap()
    };
    let out = doctor(&sluice_binary());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("is dynamically linked") && said.contains("scripts/build-static-daemon --release"), "{said}");
    let out = doctor(&dir.root().join("no-such-daemon"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && said.contains("cannot read the daemon binary"), "{said}");
}
