//! A job that cannot succeed is parked, not retried for ever: end to end
//! against the real `sluice serve`, whose reconcile job for one workspace
//! fails on every pass because its stored spec was broken under it. After
//! `--max-job-attempts` it is parked and listed (`sluice jobs failed`, the
//! API); once the row is mended, `sluice jobs retry` brings it back and the
//! workspace comes up.

use std::time::Duration;

use serde_json::json;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{create_body, holds_for, wait_for};

async fn set_spec(dir: &DataDir, id: &str, spec: &str) {
    let url = format!("sqlite:{}", dir.path().join("sluice.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let changed = sqlx::query("UPDATE workspaces SET spec = ?1 WHERE id = ?2")
        .bind(spec)
        .bind(id)
        .execute(&pool)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(changed, 1);
    pool.close().await;
}

#[tokio::test]
async fn a_job_that_keeps_failing_is_parked_shown_and_retried() {
    let dir = DataDir::new();
    // The API alone first: the create's job waits for a worker.
    let api = Server::start_with(&dir.path(), Options::command("api")).await;
    let mut body = create_body("alice");
    body["spec"] = json!({"command": ["sleep", "600"]});
    let (status, created) = api.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    api.stop();
    set_spec(&dir, &id, "{this is not json").await;

    let server = Server::start_with(
        &dir.path(),
        Options::serve().arg("--runtime").arg("local").arg("--max-job-attempts").arg("3"),
    )
    .await;
    let parked = wait_for(Duration::from_secs(60), || async {
        let (status, list) = server.get("/v1/jobs/failed").await;
        assert_eq!(status, 200, "{list}");
        list["items"].as_array().unwrap().first().cloned()
    })
    .await
    .unwrap_or_else(|| panic!("never parked:\n{}", server.output()));
    assert_eq!(
        (parked["kind"].as_str(), parked["subject"].as_str()),
        (Some("reconcile"), Some(id.as_str())),
        "{parked}"
    );
    assert_eq!(parked["attempts"], 3, "{parked}");
    assert!(parked["lastError"].as_str().unwrap().contains("inconsistent"), "{parked}");
    // Parked means no further attempt is made.
    holds_for("a parked job is not attempted again", Duration::from_secs(3), || async {
        let (_, list) = server.get("/v1/jobs/failed").await;
        assert_eq!(list["items"][0]["attempts"], 3, "{list}");
        true
    })
    .await;

    let (ok, listed) = server.operate(&dir, &["jobs", "failed"]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&id) && listed.contains("reconcile") && listed.contains("inconsistent"), "{listed}");

    set_spec(&dir, &id, r#"{"command":["sleep","600"]}"#).await;
    let (ok, retried) = server.operate(&dir, &["jobs", "retry", "reconcile", &id]);
    assert!(ok, "{retried}");
    let (ok, again) = server.operate(&dir, &["jobs", "retry", "reconcile", &id]);
    assert!(!ok && again.contains("no parked reconcile job"), "only a parked job is retried: {again}");
    let ready = server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let (_, list) = server.get("/v1/jobs/failed").await;
    assert_eq!(list["items"], json!([]), "{list}");
    let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
    server.stop();
}
