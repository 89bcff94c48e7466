//! Ended workspaces can go: `DELETE /v1/workspaces/{id}` of a stopped one
//! takes it out of every read and list (404 afterwards, for the owner and
//! through every route), while its events stay on the global feed with the
//! deletion's own; a live one is refused with 409 and left as it was (a
//! retained one is refused in the drain tests, on a real retained executor).

use std::time::Duration;

use serde_json::json;
use sluice_tests::server::{DataDir, Options, Server};

const WITHIN: Duration = Duration::from_secs(90);

#[tokio::test]
async fn a_stopped_workspace_is_deleted_and_its_events_stay_on_the_feed() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local"])).await;
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"]}, "idempotencyKey": "to-delete", "waitFor": "ready",
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!((status, created["status"].as_str()), (202, Some("ready")), "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    let delete = |owner: &str| {
        let url = format!("{}/v1/workspaces/{id}?ownerUserId={owner}", server.base);
        let request = server.client.delete(url).bearer_auth(&server.token);
        async move { sluice_tests::read(request.send().await.unwrap()).await }
    };

    // Ready: refused, and nothing changes.
    let (status, refused) = delete("alice").await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("not-ended")), "{refused}");
    let (status, still) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!((status, still["status"].as_str()), (200, Some("ready")), "{still}");

    // Stopped: another owner finds nothing to delete; the owner deletes it.
    let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", &id, WITHIN, |w| w["status"] == "stopped").await;
    let events_before = server.stored_events(&id).await;
    assert_eq!(delete("bob").await.0, 404);
    let (status, deleted) = delete("alice").await;
    assert_eq!((status, deleted["workspaceId"].as_str()), (200, Some(id.as_str())), "{deleted}");
    assert!(deleted["deletedAt"].is_string(), "{deleted}");

    // Gone from every read and list, and from every route that names it.
    for path in [
        format!("/v1/workspaces/{id}?ownerUserId=alice"),
        format!("/v1/workspaces/{id}?ownerUserId=alice&waitFor=ready"),
        format!("/v1/workspaces/{id}/events?ownerUserId=alice"),
        format!("/v1/workspaces/{id}/attempts?ownerUserId=alice"),
    ] {
        let (status, answer) = server.get(&path).await;
        assert_eq!(status, 404, "{path}: {answer}");
    }
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/restart"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 404, "{answer}");
    let (_, list) = server.get("/v1/workspaces?ownerUserId=alice").await;
    assert!(list["items"].as_array().unwrap().iter().all(|w| w["workspaceId"] != id.as_str()), "{list}");
    assert_eq!(delete("alice").await.0, 404, "deleted once");
    // Its idempotency key still names it, and a replay of its create
    // answers its ids as it ended.
    let (status, key) = server.get("/v1/workspaces/idempotency-keys/to-delete?ownerUserId=alice").await;
    assert_eq!((status, key["state"].as_str(), key["workspaceId"].as_str()), (200, Some("found"), Some(id.as_str())));
    let (status, replay) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{replay}");
    assert_eq!((replay["workspaceId"].as_str(), replay["replayed"].as_bool()), (Some(id.as_str()), Some(true)));
    assert_eq!(replay["status"], "stopped", "{replay}");

    // The feed keeps every event it had, then the deletion.
    let (status, fed) = server.read_stream("/v1/events/stream", None, 1000, Duration::from_secs(2)).await;
    assert_eq!(status, 200);
    let of_it: Vec<_> = fed.iter().filter(|e| e.data["workspaceId"] == id.as_str()).collect();
    let contract: Vec<_> = of_it.iter().filter(|e| !e.event.starts_with("sluice.")).map(|e| &e.data).collect();
    assert_eq!(contract, events_before.iter().collect::<Vec<_>>(), "every event of it, as it was listed");
    assert_eq!(of_it.last().map(|e| e.event.as_str()), Some("sluice.workspace.deleted"), "{of_it:?}");
    assert_eq!(of_it.last().unwrap().data["data"]["by"], "owner");
    server.stop();
}
