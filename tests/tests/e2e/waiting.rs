//! Requests that wait for a workspace: a create with `waitFor` answers
//! ready, so an exec follows it with no poll and no sleep; a read with
//! `waitFor` long-polls; an exec with `waitFor` waits out a launch instead
//! of answering 409. Across processes (an API apart from its worker, on
//! PostgreSQL) the waiter is woken by what the worker records.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

fn sleeper(wait: Option<Value>) -> Value {
    let mut body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"]},
    });
    if let Some(Value::Object(wait)) = wait {
        body.as_object_mut().unwrap().extend(wait);
    }
    body
}

async fn exec_echo(server: &Server, path: &str) -> (u16, Value) {
    server.post(path, &json!({"ownerUserId": "alice", "commands": [{"argv": ["echo", "hello"]}]})).await
}

#[tokio::test]
async fn a_create_that_waits_answers_ready_and_an_exec_follows_at_once() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local"])).await;

    let (status, created) = server.post("/v1/workspaces", &sleeper(Some(json!({"waitFor": "ready"})))).await;
    assert_eq!(status, 202, "{created}");
    assert_eq!(created["status"], "ready", "the create waited: {created}");
    let id = created["workspaceId"].as_str().unwrap();
    let (status, run) = exec_echo(&server, &format!("/v1/workspaces/{id}/exec")).await;
    assert_eq!(status, 202, "no poll, no sleep, no 409: {run}");
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(ended["commands"][0]["stdout"], "hello\n", "{ended}");

    // A read that waits on a ready workspace answers at once with it.
    let (status, read) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice&waitFor=ready")).await;
    assert_eq!((status, read["status"].as_str()), (200, Some("ready")), "{read}");

    // An exec straight after a create that did not wait waits for the launch.
    let (status, created) = server.post("/v1/workspaces", &sleeper(None)).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap();
    let (status, run) = exec_echo(&server, &format!("/v1/workspaces/{id}/exec?waitFor=ready&timeoutMs=60000")).await;
    assert_eq!(status, 202, "{run}");
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(ended["status"], "completed", "{ended}");

    // So does a file call, and a process start.
    let (status, created) = server.post("/v1/workspaces", &sleeper(None)).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap();
    let url = format!("{}/v1/workspaces/{id}/files?ownerUserId=alice&path=early.txt&waitFor=ready", server.base);
    let put = server.client.put(&url).bearer_auth(&server.token).body("early").send().await.unwrap();
    assert_eq!(put.status(), 200, "{:?}", put.text().await);
    let (status, created) = server.post("/v1/workspaces", &sleeper(None)).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap();
    let start = json!({"ownerUserId": "alice", "argv": ["sleep", "60"]});
    let (status, process) = server.post(&format!("/v1/workspaces/{id}/processes?waitFor=ready"), &start).await;
    assert_eq!(status, 201, "{process}");

    // A replay of a create that waits is the same create: `waitFor` is not
    // part of what its key stands for.
    let keyed = |wait: Option<Value>| {
        let mut body = sleeper(wait);
        body["idempotencyKey"] = json!("wait-key");
        body
    };
    let (status, first) = server.post("/v1/workspaces", &keyed(None)).await;
    assert_eq!(status, 202, "{first}");
    let (status, replay) = server.post("/v1/workspaces", &keyed(Some(json!({"waitFor": "ready"})))).await;
    assert_eq!(status, 202, "{replay}");
    assert_eq!(
        (replay["workspaceId"].clone(), replay["replayed"].clone()),
        (first["workspaceId"].clone(), json!(true))
    );
    assert_eq!(replay["status"], "ready", "{replay}");

    // Bad waits are refused by name, and nothing is created.
    let (_, before) = server.get("/v1/workspaces?ownerUserId=alice").await;
    for (body, field) in [
        (sleeper(Some(json!({"timeoutMs": 1000}))), "timeoutMs"),
        (sleeper(Some(json!({"waitFor": "ready", "timeoutMs": 60001}))), "timeoutMs"),
        (sleeper(Some(json!({"waitFor": "stopped"}))), "waitFor"),
    ] {
        let (status, refused) = server.post("/v1/workspaces", &body).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains(field), "{refused}");
    }
    let (_, after) = server.get("/v1/workspaces?ownerUserId=alice").await;
    assert_eq!(before["items"].as_array().unwrap().len(), after["items"].as_array().unwrap().len());
    for query in ["waitFor=soon", "timeoutMs=5", "waitFor=ready&timeoutMs=-1", "waitFor=ready&timeoutMs=99999"] {
        let (status, refused) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice&{query}")).await;
        assert_eq!(status, 400, "{query}: {refused}");
        let (status, refused) = exec_echo(&server, &format!("/v1/workspaces/{id}/exec?{query}")).await;
        assert_eq!(status, 400, "exec {query}: {refused}");
    }
    server.stop();
}

#[tokio::test]
async fn a_waiter_on_an_api_apart_from_its_worker_is_woken_by_what_the_worker_records() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = DataDir::new();
    let api = Server::start_with(&dir.path(), Options::command("api").database(Some(&db.url))).await;
    let (status, created) = api.post("/v1/workspaces", &sleeper(None)).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();

    // No worker runs: a wait runs out and answers the state then.
    let asked = Instant::now();
    let (status, waited) =
        api.get(&format!("/v1/workspaces/{id}?ownerUserId=alice&waitFor=ready&timeoutMs=1500")).await;
    assert_eq!((status, waited["status"].as_str()), (200, Some("queued")), "{waited}");
    assert!(asked.elapsed() >= Duration::from_millis(1500), "answered before its timeout");

    // Waiters already waiting when a worker starts hear it bring the
    // workspace up: a read and an exec.
    let path = format!("/v1/workspaces/{id}?ownerUserId=alice&waitFor=ready&timeoutMs=60000");
    let reading = tokio::spawn({
        let (client, url, token) = (api.client.clone(), format!("{}{path}", api.base), api.token.clone());
        async move { read(client.get(url).bearer_auth(token).send().await.unwrap()).await }
    });
    let execing = tokio::spawn({
        let body = json!({"ownerUserId": "alice", "commands": [{"argv": ["echo", "woken"]}]});
        let url = format!("{}/v1/workspaces/{id}/exec?waitFor=ready", api.base);
        let (client, token) = (api.client.clone(), api.token.clone());
        async move { read(client.post(url).bearer_auth(token).json(&body).send().await.unwrap()).await }
    });
    let worker = Server::start_with(
        &dir.path(),
        Options::command("worker")
            .database(Some(&db.url))
            .args(["--runtime", "local", "--internal-listen"])
            .arg(format!("127.0.0.1:{}", free_port())),
    )
    .await;
    let (status, woken) = reading.await.unwrap();
    assert_eq!((status, woken["status"].as_str()), (200, Some("ready")), "{woken}\n{}", worker.output());
    let (status, run) = execing.await.unwrap();
    assert_eq!(status, 202, "{run}");
    let ended = api.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(ended["commands"][0]["stdout"], "woken\n", "{ended}");
    worker.stop();
    api.stop();
}
