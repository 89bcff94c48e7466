//! The workspaces API over HTTP, on SQLite and PostgreSQL.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use sluice_tests::*;

#[tokio::test]
async fn create_answers_202_with_a_queued_run_and_records_events() {
    for app in App::each().await {
        let mut body = create_body("alice");
        body["launchId"] = json!("launch-7");
        body["name"] = json!("my-dev");
        let (status, created) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 202, "{}: {created}", app.label);
        assert_eq!(created["status"], "queued");
        assert_eq!(created["name"], "my-dev");
        assert_eq!(created["launchId"], "launch-7");
        assert_eq!(created["replayed"], false);
        assert!(created.get("runtime").is_none(), "no executor exists yet");
        let id = created["workspaceId"].as_str().unwrap();
        let run_id = created["runId"].as_str().unwrap();

        let (status, details) = app.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
        assert_eq!(status, 200);
        assert_eq!(details["spec"], json!({"resources": {"cpus": 1}}));
        assert_eq!(details["ownerUserId"], "alice");

        let (_, attempts) = app.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
        assert_eq!(attempts["items"][0]["attemptId"], run_id);
        assert_eq!(attempts["items"][0]["status"], "queued");
        assert_eq!(attempts["items"][0]["relation"], "launch");
        assert_eq!(attempts["items"][0]["triggerType"], "api");

        let (_, events) = app.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice")).await;
        let types: Vec<&str> =
            events["items"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["workspace.created", "attempt.queued"], "{}", app.label);
        assert_eq!(events["items"][1]["attemptId"], run_id);
        assert_eq!(events["items"][1]["data"]["launchId"], "launch-7");
        let (_, first) = app.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=1")).await;
        assert_eq!(first["items"].as_array().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_replay_returns_the_first_ids_with_replayed_true() {
    for app in App::each().await {
        let mut body = create_body("alice");
        body["idempotencyKey"] = json!("order-1");
        let (s1, first) = app.post("/v1/workspaces", &body).await;
        let (s2, again) = app.post("/v1/workspaces", &body).await;
        assert_eq!((s1, s2), (202, 202), "{}", app.label);
        assert_eq!(first["replayed"], false);
        assert_eq!(again["replayed"], true);
        assert_eq!(again["workspaceId"], first["workspaceId"]);
        assert_eq!(again["runId"], first["runId"]);

        let (_, state) = app.get("/v1/workspaces/idempotency-keys/order-1?ownerUserId=alice").await;
        assert_eq!(state["state"], "found");
        assert_eq!(state["workspaceId"], first["workspaceId"]);
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice&idempotencyKey=order-1").await;
        assert_eq!(listed["items"].as_array().unwrap().len(), 1);
        // Another owner's key space is separate.
        let (_, other) = app.get("/v1/workspaces/idempotency-keys/order-1?ownerUserId=bob").await;
        assert_eq!(other["state"], "none");
    }
}

#[tokio::test]
async fn the_header_key_works_and_the_body_field_wins() {
    for app in App::each().await {
        let send = |key_header: Option<&str>, body: Value| {
            let mut req = app.client.post(app.url("/v1/workspaces")).bearer_auth(TOKEN).json(&body);
            if let Some(k) = key_header {
                req = req.header("idempotency-key", k);
            }
            async move { read(req.send().await.unwrap()).await }
        };
        let (_, a) = send(Some("hdr-1"), create_body("alice")).await;
        let (_, b) = send(Some("hdr-1"), create_body("alice")).await;
        assert_eq!(b["replayed"], true, "{}", app.label);
        assert_eq!(a["workspaceId"], b["workspaceId"]);
        let mut with_field = create_body("alice");
        with_field["idempotencyKey"] = json!("field-1");
        let (_, c) = send(Some("hdr-1"), with_field).await;
        assert_eq!(c["replayed"], false, "the body's key names a new create");
        let (_, state) = app.get("/v1/workspaces/idempotency-keys/field-1?ownerUserId=alice").await;
        assert_eq!(state["workspaceId"], c["workspaceId"]);
        let (status, bad) = send(Some("has space"), create_body("alice")).await;
        assert_eq!(status, 400);
        assert!(bad["message"].as_str().unwrap().contains("idempotency-key"));
    }
}

#[tokio::test]
async fn fifty_concurrent_creates_with_one_key_make_one_workspace() {
    for app in App::each().await {
        let mut body = create_body("alice");
        body["idempotencyKey"] = json!("burst");
        let requests = (0..50).map(|_| {
            let (client, url, body) = (app.client.clone(), app.url("/v1/workspaces"), body.clone());
            tokio::spawn(
                async move { read(client.post(url).bearer_auth(TOKEN).json(&body).send().await.unwrap()).await },
            )
        });
        let mut ids = BTreeSet::new();
        let mut fresh = 0;
        for r in futures::future::join_all(requests).await {
            let (status, answer) = r.unwrap();
            assert_eq!(status, 202, "{}: {answer}", app.label);
            ids.insert(answer["workspaceId"].as_str().unwrap().to_owned());
            if answer["replayed"] == false {
                fresh += 1;
            }
        }
        assert_eq!((ids.len(), fresh), (1, 1), "{}", app.label);
        let (_, all) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(all["items"].as_array().unwrap().len(), 1, "{}", app.label);
    }
}

#[tokio::test]
async fn a_different_request_under_a_used_key_is_refused() {
    for app in App::each().await {
        let mut body = create_body("alice");
        body["idempotencyKey"] = json!("k");
        assert_eq!(app.post("/v1/workspaces", &body).await.0, 202);
        body["tag"] = json!("2");
        let (status, err) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 409, "{}", app.label);
        assert_eq!(err["code"], "idempotency-key-reused");
        assert_eq!(err["_tag"], "WorkspaceConflictError");
        // A different secret is a different request too.
        body["tag"] = json!("1");
        body["secretEnv"] = json!({"TOKEN": "one"});
        assert_eq!(app.post("/v1/workspaces", &body).await.1["code"], "idempotency-key-reused");
    }
}

#[tokio::test]
async fn cancel_then_create_is_refused_and_leaves_nothing() {
    for app in App::each().await {
        let (status, cancelled) =
            app.post("/v1/workspaces/idempotency-keys/never/cancel", &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 200, "{}: {cancelled}", app.label);
        assert_eq!(cancelled["state"], "cancelled");
        let mut body = create_body("alice");
        body["idempotencyKey"] = json!("never");
        let (status, err) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 409);
        assert_eq!(err["code"], "create-cancelled");
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(listed["items"], json!([]), "{}", app.label);
        let (_, state) = app.get("/v1/workspaces/idempotency-keys/never?ownerUserId=alice").await;
        assert_eq!(state["state"], "cancelled");

        // Cancelling a committed create answers found and changes nothing.
        let mut body = create_body("alice");
        body["idempotencyKey"] = json!("done");
        let (_, made) = app.post("/v1/workspaces", &body).await;
        let (_, state) =
            app.post("/v1/workspaces/idempotency-keys/done/cancel", &json!({"ownerUserId": "alice"})).await;
        assert_eq!(state["state"], "found");
        assert_eq!(state["workspaceId"], made["workspaceId"]);
    }
}

#[tokio::test]
async fn every_single_workspace_route_answers_404_to_another_owner() {
    for app in App::each().await {
        let id = app.create("alice").await;
        let missing = "ws_doesnotexist";
        for target in [id.as_str(), missing] {
            let owner = json!({"ownerUserId": "mallory"});
            let answers = vec![
                ("get", app.get(&format!("/v1/workspaces/{target}?ownerUserId=mallory")).await),
                ("get without owner", app.get(&format!("/v1/workspaces/{target}")).await),
                (
                    "rename",
                    app.patch(
                        &format!("/v1/workspaces/{target}/name"),
                        &json!({"name": "x", "ownerUserId": "mallory"}),
                    )
                    .await,
                ),
                (
                    "rename without owner",
                    app.patch(&format!("/v1/workspaces/{target}/name"), &json!({"name": "x"})).await,
                ),
                ("expire", app.post(&format!("/v1/workspaces/{target}/expire"), &owner).await),
                ("attempts", app.get(&format!("/v1/workspaces/{target}/attempts?ownerUserId=mallory")).await),
                ("events", app.get(&format!("/v1/workspaces/{target}/events?ownerUserId=mallory")).await),
                (
                    "bind",
                    app.post(
                        &format!("/v1/workspaces/{target}/bind"),
                        &json!({"ownerUserId": "mallory", "subpath": "a"}),
                    )
                    .await,
                ),
                ("capture", app.get(&format!("/v1/workspaces/{target}/capture?ownerUserId=mallory")).await),
                ("flush", app.post(&format!("/v1/workspaces/{target}/capture/flush"), &owner).await),
                ("replan", app.post(&format!("/v1/workspaces/{target}/capture/replan"), &owner).await),
                (
                    "exec",
                    app.post(
                        &format!("/v1/workspaces/{target}/exec"),
                        &json!({"ownerUserId": "mallory", "commands": [{"argv": ["true"]}]}),
                    )
                    .await,
                ),
                ("stop", app.post(&format!("/v1/workspaces/{target}/stop"), &owner).await),
                ("recover", app.post(&format!("/v1/workspaces/{target}/recover"), &owner).await),
                ("restart", app.post(&format!("/v1/workspaces/{target}/restart"), &owner).await),
            ];
            let mut bodies = BTreeSet::new();
            for (route, (status, body)) in answers {
                assert_eq!(status, 404, "{} {route} on {target}: {body}", app.label);
                bodies.insert(body.to_string());
            }
            // Uniform: nothing tells an existing workspace from a missing one.
            assert_eq!(bodies.len(), 1, "{bodies:?}");
            assert_eq!(
                bodies.into_iter().next().unwrap(),
                json!({"_tag": "WorkspaceNotFoundError", "message": "workspace not found"}).to_string()
            );
        }
        // The owner still sees it unchanged.
        let (status, details) = app.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
        assert_eq!(status, 200);
        assert!(details.get("expiresAt").is_none());
        assert_ne!(details["name"], "x");
    }
}

#[tokio::test]
async fn endpoints_that_need_an_executor_answer_409_to_the_owner() {
    // No worker runs here: the workspaces stay queued.
    for app in App::each().await {
        let id = app.create("alice").await;
        let owner = json!({"ownerUserId": "alice"});
        let (status, session) = app.post("/v1/capture-sessions", &owner).await;
        assert_eq!(status, 201);
        let mut body = create_body("alice");
        body["spec"]["source"] = json!({"kind": "capture", "sessionId": session["sessionId"]});
        body["captureToken"] = session["token"].clone();
        let (status, created) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 202, "{created}");
        let capture_id = created["workspaceId"].as_str().unwrap().to_owned();
        let capture_calls = |id: String| {
            let app = &app;
            let owner = owner.clone();
            async move {
                vec![
                    ("capture", app.get(&format!("/v1/workspaces/{id}/capture?ownerUserId=alice")).await),
                    (
                        "flush",
                        app.post(
                            &format!("/v1/workspaces/{id}/capture/flush"),
                            &json!({"ownerUserId": "alice", "kind": "final"}),
                        )
                        .await,
                    ),
                    ("replan", app.post(&format!("/v1/workspaces/{id}/capture/replan"), &owner).await),
                ]
            }
        };
        for (route, (status, body)) in capture_calls(id.clone()).await {
            assert_eq!(status, 400, "{} {route} of a workspace without a capture source: {body}", app.label);
            assert!(body["message"].as_str().unwrap().contains("not capture-sourced"), "{body}");
        }
        let bind =
            app.post(&format!("/v1/workspaces/{id}/bind"), &json!({"ownerUserId": "alice", "subpath": "a"})).await;
        for (route, (status, body)) in capture_calls(capture_id.clone()).await.into_iter().chain([("bind", bind)]) {
            assert_eq!(
                (status, body["code"].as_str()),
                (409, Some("no-live-runtime")),
                "{} {route}: {body}",
                app.label
            );
        }
        let (status, body) = app
            .post(
                &format!("/v1/workspaces/{id}/exec"),
                &json!({"ownerUserId": "alice", "commands": [{"argv": ["true"]}]}),
            )
            .await;
        assert_eq!((status, body["code"].as_str()), (409, Some("no-live-runtime")), "{}: {body}", app.label);
        let (status, body) = app.post(&format!("/v1/workspaces/{id}/restart"), &owner).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("mid-launch")), "{}: {body}", app.label);
        let (status, body) = app.post(&format!("/v1/workspaces/{id}/recover"), &owner).await;
        assert_eq!((status, body["state"].as_str()), (202, Some("not-retained")));
        // Nothing launched yet: nothing to stop, and nothing changes.
        for _ in 0..2 {
            let (status, body) = app.post(&format!("/v1/workspaces/{id}/stop"), &owner).await;
            assert_eq!((status, body["code"].as_str()), (409, Some("never-launched")), "{}: {body}", app.label);
        }
        let (_, details) = app.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
        assert_eq!(details["status"], "queued", "{}: a refused stop writes nothing", app.label);
        // A stop's attestation is validated, naming the field.
        let bad = json!({"ownerUserId": "alice", "completion": {"captureN": 1, "epoch": 1, "executorId": "x", "sealedAt": "yesterday"}});
        let (status, body) = app.post(&format!("/v1/workspaces/{id}/stop"), &bad).await;
        assert_eq!(status, 400, "{body}");
        assert!(body["message"].as_str().unwrap().contains("completion.sealedAt"), "{body}");
        // Bodies are validated before anything else.
        let (status, body) =
            app.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": []})).await;
        assert_eq!(status, 400);
        assert!(body["message"].as_str().unwrap().contains("commands"));
        let (status, body) = app
            .post(
                &format!("/v1/workspaces/{id}/exec"),
                &json!({"ownerUserId": "alice", "commands": [{"argv": ["x"], "timeoutMs": 0}]}),
            )
            .await;
        assert_eq!(status, 400);
        assert!(body["message"].as_str().unwrap().contains("commands[0].timeoutMs"), "{body}");
        // Runs are owner-scoped: unknown or someone else's read 404.
        assert_eq!(app.get("/v1/runs/run_nope?ownerUserId=alice").await.0, 404);
        assert_eq!(app.get("/v1/runs/run_nope").await.0, 404);
    }
}

#[tokio::test]
async fn rename_and_expire() {
    for app in App::each().await {
        let id = app.create("alice").await;
        let (status, renamed) =
            app.patch(&format!("/v1/workspaces/{id}/name"), &json!({"name": "renamed", "ownerUserId": "alice"})).await;
        assert_eq!((status, renamed["name"].as_str()), (200, Some("renamed")), "{}", app.label);
        let (status, expiring) = app
            .post(&format!("/v1/workspaces/{id}/expire"), &json!({"ownerUserId": "alice", "ttlSeconds": 3600}))
            .await;
        assert_eq!(status, 200);
        assert!(expiring["expiresAt"].as_str().unwrap().starts_with("20"));
        let (_, cleared) = app
            .post(&format!("/v1/workspaces/{id}/expire"), &json!({"ownerUserId": "alice", "ttlSeconds": null}))
            .await;
        assert_eq!(cleared["expiresAt"], Value::Null);
        let (_, now) = app.post(&format!("/v1/workspaces/{id}/expire"), &json!({"ownerUserId": "alice"})).await;
        assert!(now["expiresAt"].is_string());
        let (status, bad) =
            app.post(&format!("/v1/workspaces/{id}/expire"), &json!({"ownerUserId": "alice", "ttlSeconds": 0})).await;
        assert_eq!(status, 400);
        assert!(bad["message"].as_str().unwrap().contains("ttlSeconds"));
        let (_, details) = app.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
        assert_eq!(details["name"], "renamed");
    }
}

#[tokio::test]
async fn list_filters_by_status_and_limit() {
    for app in App::each().await {
        for _ in 0..3 {
            app.create("alice").await;
        }
        let (_, two) = app.get("/v1/workspaces?ownerUserId=alice&limit=2").await;
        assert_eq!(two["items"].as_array().unwrap().len(), 2, "{}", app.label);
        let (_, queued) = app.get("/v1/workspaces?ownerUserId=alice&status=queued").await;
        assert_eq!(queued["items"].as_array().unwrap().len(), 3);
        let (_, stopped) = app.get("/v1/workspaces?ownerUserId=alice&status=stopped").await;
        assert_eq!(stopped["items"], json!([]));
        for (query, field) in [("status=sleeping", "status"), ("limit=0", "limit"), ("limit=abc", "limit")] {
            let (status, err) = app.get(&format!("/v1/workspaces?ownerUserId=alice&{query}")).await;
            assert_eq!(status, 400, "{query}");
            assert!(err["message"].as_str().unwrap().contains(field), "{query}: {err}");
        }
        let (status, err) = app.get("/v1/workspaces").await;
        assert_eq!(status, 400);
        assert!(err["message"].as_str().unwrap().contains("ownerUserId"));
    }
}

#[tokio::test]
async fn bad_input_names_the_field_and_writes_nothing() {
    for app in App::each().await {
        let cases: Vec<(Value, &str)> = vec![
            (json!({"registryId": "r", "repository": "a", "tag": "1", "spec": {}}), "ownerUserId"),
            (json!({"ownerUserId": "", "registryId": "r", "repository": "a", "tag": "1", "spec": {}}), "ownerUserId"),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "Bad Repo", "tag": "1", "spec": {}}),
                "repository",
            ),
            (json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "-x", "spec": {}}), "tag"),
            (json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": []}), "spec"),
            (json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1"}), "spec"),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "ttlSeconds": 0}),
                "ttlSeconds",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "ttlSeconds": "1"}),
                "ttlSeconds",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "secretEnv": {"1BAD": "v"}}),
                "secretEnv",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "secretEnv": {"A": 1}}),
                "secretEnv",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "unknownField": 1}),
                "unknownField",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "idempotencyKey": "a b"}),
                "idempotencyKey",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "name": " padded"}),
                "name",
            ),
            // A secret sent where it does not fit: the refusal names the
            // field, never the value.
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "secretEnv": "MySecretValue-91f3"}),
                "secretEnv",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "ttlSeconds": "MySecretValue-91f3"}),
                "ttlSeconds",
            ),
            // Owner ids that would look like another's.
            (
                json!({"ownerUserId": "ali\u{feff}ce", "registryId": "r", "repository": "a", "tag": "1", "spec": {}}),
                "ownerUserId",
            ),
            (
                json!({"ownerUserId": "alice\u{ffff}", "registryId": "r", "repository": "a", "tag": "1", "spec": {}}),
                "ownerUserId",
            ),
            (
                json!({"ownerUserId": "\u{ff41}lice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}}),
                "ownerUserId",
            ),
            (
                json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": {}, "name": "x\u{200b}y"}),
                "name",
            ),
        ];
        // What the runtimes act on is checked before anything is written.
        let specs: Vec<(Value, &str)> = vec![
            (json!({"command": "sleep"}), "spec.command"),
            (json!({"command": []}), "spec.command"),
            (json!({"command": ["sleep", 5]}), "spec.command"),
            (json!({"env": ["A"]}), "spec.env"),
            (json!({"env": {"1A": "v"}}), "spec.env.1A"),
            (json!({"env": {"A": 1}}), "spec.env.A"),
            (json!({"network": "yes"}), "spec.network"),
            (json!({"resources": {"cpu": 1}}), "spec.resources.cpu"),
            (json!({"resources": {"cpus": 0}}), "spec.resources.cpus"),
            (json!({"resources": {"memoryMiB": 1}}), "spec.resources.memoryMiB"),
            (json!({"resources": {"pids": -1}}), "spec.resources.pids"),
            (json!({"access": {"sshPrincipals": "bob"}}), "spec.access.sshPrincipals"),
        ];
        let cases = cases.into_iter().chain(specs.into_iter().map(|(spec, field)| {
            (json!({"ownerUserId": "alice", "registryId": "r", "repository": "a", "tag": "1", "spec": spec}), field)
        }));
        for (body, field) in cases {
            let (status, err) = app.post("/v1/workspaces", &body).await;
            assert_eq!(status, 400, "{}: {body} -> {err}", app.label);
            assert_eq!(err["_tag"], "WorkspaceBadRequestError");
            assert!(err["message"].as_str().unwrap().contains(field), "{body}: {err}");
            assert!(!err.to_string().contains("MySecretValue"), "a refusal never quotes what it refused: {err}");
        }
        let raw = app
            .client
            .post(app.url("/v1/workspaces"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(raw.status(), 400);
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(listed["items"], json!([]), "{}: a refused create left a workspace", app.label);
        let (_, key) = app.get("/v1/workspaces/idempotency-keys/a?ownerUserId=alice").await;
        assert_eq!(key["state"], "none");
    }
}

#[tokio::test]
async fn what_this_install_cannot_serve_is_refused_with_422() {
    for app in App::each().await {
        let with = |field: &str, value: Value| {
            let mut body = create_body("alice");
            body[field] = value;
            body
        };
        let github = json!({"provider": "github", "installationId": "1", "installationRepositoryId": "2"});
        for (body, code) in [
            (with("sourceSelection", github.clone()), "source-selection-unsupported"),
            (with("dotfilesSelection", github), "dotfiles-selection-unsupported"),
            (with("credentials", json!({"github": "cacc_1"})), "credentials-unsupported"),
            (with("spec", json!({"runtime": {"envFrom": [{"secretRef": "x"}]}})), "runtime-env-references-unsupported"),
            (with("spec", json!({"kubernetes": {"serviceAccountName": "sa"}})), "runtime-env-references-unsupported"),
            (with("spec", json!({"services": {"docker": {}}})), "workspace-docker-unsupported"),
        ] {
            let (status, err) = app.post("/v1/workspaces", &body).await;
            assert_eq!(status, 422, "{}: {body} -> {err}", app.label);
            assert_eq!(err["code"], code);
        }
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(listed["items"], json!([]));
    }
}

#[tokio::test]
async fn the_guard_refuses_each_forbidden_class_with_its_path() {
    for app in App::each().await {
        let cases = [
            (json!({"init": "sh -c 'curl x | sh'"}), "spec.init", "NEVER_SEND_SHELL_COMMAND"),
            (json!({"tool": {"path": "/usr/bin/python3"}}), "spec.tool.path", "NEVER_SEND_EXECUTABLE_PATH"),
            (json!({"hooks": ["ok", "http://169.254.169.254/latest"]}), "spec.hooks[1]", "NEVER_SEND_PRIVATE_URL"),
            (
                json!({"key": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}),
                "spec.key",
                "NEVER_SEND_RAW_CREDENTIAL",
            ),
            (json!({"aws": "AKIAIOSFODNN7EXAMPLE"}), "spec.aws", "NEVER_SEND_RAW_CREDENTIAL"),
            (
                json!({"jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}),
                "spec.jwt",
                "NEVER_SEND_RAW_CREDENTIAL",
            ),
            (json!({"auth": "Bearer abcdefghijklmnopqrstuvwxyz0123"}), "spec.auth", "NEVER_SEND_RAW_CREDENTIAL"),
            (json!({"code": "import os\nos.system('id')"}), "spec.code", "NEVER_SEND_UNBOUNDED_CODE"),
            (
                json!({"env": "HOME=/root\nUSER=root\nPATH=/bin:/usr/bin"}),
                "spec.env",
                "NEVER_SEND_ENVIRONMENT_CONTENTS",
            ),
        ];
        for (spec, path, code) in cases {
            let mut body = create_body("alice");
            body["spec"] = spec.clone();
            let (status, err) = app.post("/v1/workspaces", &body).await;
            assert_eq!(status, 400, "{}: {spec} -> {err}", app.label);
            let message = err["message"].as_str().unwrap();
            assert!(message.starts_with(path), "{spec}: {message}");
            assert!(message.contains(code) && message.contains("secretEnv"), "{message}");
        }
        // Plain fields are guarded too, each under its own name.
        let mut body = create_body("alice");
        body["launchId"] = json!("AKIAIOSFODNN7EXAMPLE");
        let (status, err) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 400);
        assert!(err["message"].as_str().unwrap().starts_with("launchId"), "{err}");
        let mut body = create_body("alice");
        body["repository"] = json!("tools/run.sh");
        let (status, err) = app.post("/v1/workspaces", &body).await;
        assert_eq!(status, 400);
        assert!(err["message"].as_str().unwrap().starts_with("repository"), "{err}");
        let mut ok = create_body("alice");
        ok["spec"] = json!({"image": "ubuntu:22.04", "commit": "da39a3ee5e6b4b0d3255bfef95601890afd80709", "repo": "https://example.com/a.git"});
        assert_eq!(app.post("/v1/workspaces", &ok).await.0, 202, "values that must pass");
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(listed["items"].as_array().unwrap().len(), 1, "only the clean create was written");
    }
}

#[tokio::test]
async fn api_tokens_are_required() {
    for app in App::each().await {
        let none = app.client.get(app.url("/v1/workspaces?ownerUserId=alice")).send().await.unwrap();
        assert_eq!(none.status(), 401);
        let wrong =
            app.client.get(app.url("/v1/workspaces?ownerUserId=alice")).bearer_auth("nope").send().await.unwrap();
        assert_eq!(wrong.status(), 401);
        let (_, body) = read(wrong).await;
        assert_eq!(body["_tag"], "WorkspaceUnauthorizedError");
        let create = app.client.post(app.url("/v1/workspaces")).json(&create_body("alice")).send().await.unwrap();
        assert_eq!(create.status(), 401);
        let (_, listed) = app.get("/v1/workspaces?ownerUserId=alice").await;
        assert_eq!(listed["items"], json!([]), "{}", app.label);
    }
}

#[tokio::test]
async fn ssh_target_authenticates_the_gateway_and_authorizes_the_principal() {
    for app in App::each().await {
        let mut body = create_body("alice");
        body["spec"] = json!({"access": {"sshPrincipals": ["carol"]}});
        let (_, made) = app.post("/v1/workspaces", &body).await;
        let id = made["workspaceId"].as_str().unwrap();
        let ask = |token: Option<&str>, principal: Option<&str>| {
            let mut req = app.client.get(app.url(&format!("/v1/workspaces/{id}/ssh-target")));
            if let Some(t) = token {
                req = req.header("x-sealant-gateway-token", t);
            }
            if let Some(p) = principal {
                req = req.header("x-sealant-principal-id", p);
            }
            async move { read(req.send().await.unwrap()).await.0 }
        };
        assert_eq!(ask(None, Some("alice")).await, 401, "{}", app.label);
        assert_eq!(ask(Some("wrong"), Some("alice")).await, 401);
        assert_eq!(ask(Some(TOKEN), Some("alice")).await, 401, "an API token is not a gateway token");
        assert_eq!(ask(Some(GATEWAY_TOKEN), None).await, 401);
        assert_eq!(ask(Some(GATEWAY_TOKEN), Some("mallory")).await, 404);
        assert_eq!(ask(Some(GATEWAY_TOKEN), Some("alice")).await, 409, "no live runtime");
        assert_eq!(ask(Some(GATEWAY_TOKEN), Some("carol")).await, 409, "a listed principal is authorized");
    }
}

#[tokio::test]
async fn answers_carry_a_request_id_and_health_reports_the_backend() {
    for app in App::each().await {
        let r = app.client.get(app.url("/healthz")).header("x-request-id", "trace-me.1").send().await.unwrap();
        assert_eq!(r.headers()["x-request-id"], "trace-me.1");
        let (status, health) = read(r).await;
        assert_eq!((status, health["backend"].as_str()), (200, Some(app.label)));
        let r = app.client.get(app.url("/nope")).header("x-request-id", "bad id with spaces").send().await.unwrap();
        assert_eq!(r.status(), 404);
        assert_ne!(r.headers()["x-request-id"], "bad id with spaces");
        let (_, body) = read(r).await;
        assert_eq!(body["_tag"], "RouteNotFoundError");
        assert!(body["message"].as_str().unwrap().contains("/nope"));
        let r = app.client.delete(app.url("/v1/workspaces")).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(r.status(), 405);
        assert_eq!(read(r).await.1["_tag"], "MethodNotAllowedError");
    }
}

#[tokio::test]
async fn the_openapi_document_is_served() {
    let app = App::start(sluice_store::testing::sqlite()).await;
    let r = app.client.get(app.url("/openapi.json")).send().await.unwrap();
    let (status, doc) = read(r).await;
    assert_eq!(status, 200);
    assert_eq!(doc, sluice_api::openapi::document());
    assert!(doc["paths"]["/v1/workspaces/{workspaceId}/ssh-target"]["get"].is_object());
}

#[tokio::test]
async fn the_server_default_ttl_applies_when_a_create_names_none() {
    let db = sluice_store::testing::sqlite();
    let app = App::start_with(db, |config| config.default_ttl_seconds = Some(600)).await;
    let (_, made) = app.post("/v1/workspaces", &create_body("alice")).await;
    let id = made["workspaceId"].as_str().unwrap();
    let (_, details) = app.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    let (created, expires) = (details["createdAt"].as_str().unwrap(), details["expiresAt"].as_str().unwrap());
    let seconds = |t: &str| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).unwrap();
    assert_eq!((seconds(expires) - seconds(created)).whole_seconds(), 600);
    let mut body = create_body("alice");
    body["ttlSeconds"] = json!(60);
    let (_, made) = app.post("/v1/workspaces", &body).await;
    let (_, details) =
        app.get(&format!("/v1/workspaces/{}?ownerUserId=alice", made["workspaceId"].as_str().unwrap())).await;
    let (created, expires) = (details["createdAt"].as_str().unwrap(), details["expiresAt"].as_str().unwrap());
    assert_eq!((seconds(expires) - seconds(created)).whole_seconds(), 60, "the create's own TTL wins");
}

#[tokio::test]
async fn capture_sessions_show_their_token_once_and_gate_capture_sourced_creates() {
    for app in App::each().await {
        let (status, session) =
            app.post("/v1/capture-sessions", &json!({"ownerUserId": "alice", "quotaBytes": 4096})).await;
        assert_eq!(status, 201, "{}: {session}", app.label);
        let (id, token) = (session["sessionId"].as_str().unwrap(), session["token"].as_str().unwrap());
        assert!(session["worktreeId"].as_str().is_some_and(|w| !w.is_empty()));

        let (status, read) = app.get(&format!("/v1/capture-sessions/{id}?ownerUserId=alice")).await;
        assert_eq!(status, 200, "{read}");
        assert_eq!(read["epoch"], 0);
        assert_eq!(read["quotaBytes"], 4096);
        assert_eq!(read["usedBytes"], 0);
        assert_eq!(read["captures"], json!([]));
        assert!(read.get("headN").is_none() && read.get("finalSeal").is_none(), "{read}");
        assert!(!read.to_string().contains(token), "the token is shown once");
        let (status, other) = app.get(&format!("/v1/capture-sessions/{id}?ownerUserId=bob")).await;
        let (status_unknown, unknown) = app.get("/v1/capture-sessions/cs_unknown?ownerUserId=alice").await;
        assert_eq!((status, status_unknown), (404, 404), "owner-scoped");
        assert_eq!(other, unknown, "the same answer whether it exists or not");
        let (status, bad) = app.post("/v1/capture-sessions", &json!({"ownerUserId": "alice", "quotaBytes": 0})).await;
        assert_eq!(status, 400, "{bad}");
        assert!(bad["message"].as_str().unwrap().contains("quotaBytes"));
        // The install's policy when none is named; a named one as given.
        assert_eq!(read["retention"], json!({"keepLast": 20, "keepWithinSeconds": 604_800}), "{read}");
        let named = json!({"keepLast": 5, "keepWithinSeconds": 3600});
        let (status, own) =
            app.post("/v1/capture-sessions", &json!({"ownerUserId": "alice", "retention": named})).await;
        assert_eq!(status, 201, "{own}");
        let own_id = own["sessionId"].as_str().unwrap();
        let (_, own_read) = app.get(&format!("/v1/capture-sessions/{own_id}?ownerUserId=alice")).await;
        assert_eq!(own_read["retention"], named, "{own_read}");
        assert_eq!(own_read["storedBytes"], 0);
        for (retention, field) in [
            (json!({"keepLast": 0}), "retention.keepLast"),
            (json!({"keepWithinSeconds": -1}), "retention.keepWithinSeconds"),
            (json!({"keepWithinSeconds": i64::MAX}), "retention.keepWithinSeconds"),
            (json!({"keepEverything": true}), "keepEverything"),
        ] {
            let body = json!({"ownerUserId": "alice", "retention": retention});
            let (status, bad) = app.post("/v1/capture-sessions", &body).await;
            assert_eq!(status, 400, "{}: {retention}: {bad}", app.label);
            assert!(bad["message"].as_str().unwrap().contains(field), "{retention}: {bad}");
        }
        let (status, page) = app.get(&format!("/v1/capture-sessions/{id}/captures?ownerUserId=alice")).await;
        assert_eq!((status, page["captures"].clone()), (200, json!([])), "{page}");
        assert!(page.get("nextAfter").is_none(), "{page}");

        let source = json!({"kind": "capture", "sessionId": id});
        let capture_create = |token: Option<&str>, source: Option<&Value>, owner: &str| {
            let mut body = create_body(owner);
            if let Some(source) = source {
                body["spec"]["source"] = source.clone();
            }
            if let Some(token) = token {
                body["captureToken"] = json!(token);
            }
            body
        };
        for (body, field) in [
            (capture_create(None, Some(&source), "alice"), "captureToken"),
            (capture_create(Some(token), None, "alice"), "captureToken"),
            (capture_create(Some("slcap_not-the-token"), Some(&source), "alice"), "captureToken"),
            (capture_create(Some(token), Some(&source), "bob"), "captureToken"),
            (capture_create(Some(token), Some(&json!({"kind": "git"})), "alice"), "spec.source.kind"),
        ] {
            let (status, refused) = app.post("/v1/workspaces", &body).await;
            assert_eq!(status, 400, "{}: {body}: {refused}", app.label);
            assert!(refused["message"].as_str().unwrap().contains(field), "{refused}");
            assert!(!refused.to_string().contains(token), "a refusal does not echo the token");
        }
        let (status, created) = app.post("/v1/workspaces", &capture_create(Some(token), Some(&source), "alice")).await;
        assert_eq!(status, 202, "{created}");
        let workspace = created["workspaceId"].as_str().unwrap();
        let (status, refused) =
            app.post(&format!("/v1/workspaces/{workspace}/restart"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!((status, refused["code"].as_str()), (409, Some("capture-restart-unsupported")), "{refused}");
    }
}

/// A fresh key pair made by `ssh-keygen`: (public key line, fingerprint as
/// `ssh-keygen -lf` prints it).
fn keygen(dir: &std::path::Path, name: &str) -> (String, String) {
    let path = dir.join(name);
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "someone@laptop", "-f"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap().trim().to_owned();
    let listed = std::process::Command::new("ssh-keygen").arg("-lf").arg(path.with_extension("pub")).output().unwrap();
    let fingerprint = String::from_utf8(listed.stdout).unwrap().split_whitespace().nth(1).unwrap().to_owned();
    (public, fingerprint)
}

#[tokio::test]
async fn ssh_keys_are_registered_for_one_principal_and_looked_up_by_gateways() {
    let dir = tempfile::tempdir().unwrap();
    for app in App::each().await {
        let (public, fingerprint) = keygen(dir.path(), &format!("key-{}", app.label));
        let (status, made) = app.post("/v1/ssh-keys", &json!({"principal": "alice", "publicKey": public})).await;
        assert_eq!(status, 201, "{}: {made}", app.label);
        assert_eq!(made["fingerprint"], fingerprint.as_str(), "the id is the fingerprint ssh-keygen prints");
        assert_eq!(made["principal"], "alice");
        assert!(!made["publicKey"].as_str().unwrap().contains("laptop"), "the comment is not kept: {made}");
        assert!(made["createdAt"].is_string());
        let (again, _) = app.post("/v1/ssh-keys", &json!({"principal": "alice", "publicKey": public})).await;
        assert_eq!(again, 200, "registering it again changes nothing");
        let (taken, body) = app.post("/v1/ssh-keys", &json!({"principal": "bob", "publicKey": public})).await;
        assert_eq!((taken, body["code"].as_str()), (409, Some("ssh-key-in-use")), "{body}");
        assert!(!body.to_string().contains("alice"), "whose key it is stays unsaid: {body}");

        // Bad input names the field and never quotes a private key.
        let private = std::fs::read_to_string(dir.path().join(format!("key-{}", app.label))).unwrap();
        let (status, body) = app.post("/v1/ssh-keys", &json!({"principal": "alice", "publicKey": private})).await;
        assert_eq!(status, 400);
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with("publicKey ") && !message.contains(&private[40..80]), "{message}");
        let (status, body) = app.post("/v1/ssh-keys", &json!({"publicKey": public})).await;
        assert_eq!(status, 400, "{body}");
        let (status, body) = app.post("/v1/ssh-keys", &json!({"principal": " ", "publicKey": public})).await;
        assert!(status == 400 && body["message"].as_str().unwrap().starts_with("principal"), "{body}");
        let (status, body) = app.get("/v1/ssh-keys").await;
        assert!(status == 400 && body["message"].as_str().unwrap().contains("principal"), "{body}");

        let (_, listed) = app.get("/v1/ssh-keys?principal=alice").await;
        assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
        let (_, none) = app.get("/v1/ssh-keys?principal=bob").await;
        assert_eq!(none["items"], json!([]));

        // A gateway learns the key's principal with its own token only.
        let escaped = fingerprint.replace('/', "%2F").replace('+', "%2B");
        let lookup = |token: &'static str, header: &'static str| {
            app.client.get(app.url(&format!("/v1/gateway/ssh-keys/{escaped}"))).header(header, token).send()
        };
        let (status, found) = read(lookup(GATEWAY_TOKEN, "x-sealant-gateway-token").await.unwrap()).await;
        assert_eq!((status, found["principal"].as_str()), (200, Some("alice")), "{found}");
        let (status, _) = read(lookup(TOKEN, "x-sealant-gateway-token").await.unwrap()).await;
        assert_eq!(status, 401, "an API token is not a gateway token");

        // Deleted by its URL-safe form; gone for gateways too.
        let url_safe = fingerprint.replace('/', "_").replace('+', "-");
        let deleted =
            app.client.delete(app.url(&format!("/v1/ssh-keys/{url_safe}"))).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(deleted.status(), 204);
        let again = app.client.delete(app.url(&format!("/v1/ssh-keys/{url_safe}"))).bearer_auth(TOKEN).send().await;
        assert_eq!(again.unwrap().status(), 404);
        let (status, _) = read(lookup(GATEWAY_TOKEN, "x-sealant-gateway-token").await.unwrap()).await;
        assert_eq!(status, 404);
        let (_, listed) = app.get("/v1/ssh-keys?principal=alice").await;
        assert_eq!(listed["items"], json!([]), "{}", app.label);
    }
}

#[tokio::test]
async fn previews_are_refused_where_none_are_served() {
    for app in App::each().await {
        let id = app.create("alice").await;
        let (status, body) =
            app.post(&format!("/v1/workspaces/{id}/previews"), &json!({"ownerUserId": "alice", "port": 8080})).await;
        assert_eq!(status, 422, "{}: {body}", app.label);
        assert!(body["message"].as_str().unwrap().contains("--preview-listen"), "{body}");
        let (status, _) = app.get(&format!("/v1/workspaces/{id}/previews?ownerUserId=alice")).await;
        assert_eq!(status, 422, "{}", app.label);
    }
}

/// A preview listener whose store cannot be read answers 503 (try again),
/// never a refusal that would read as "no grant".
#[tokio::test]
async fn a_preview_listener_without_its_store_answers_503_not_a_refusal() {
    for app in App::each().await {
        let config = sluice_api::ApiConfig {
            previews: Some(sluice_api::PreviewSettings {
                domain: "preview.test".into(),
                scheme: "http",
                url_port: None,
            }),
            ..Default::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let state = sluice_api::AppState::new(app.store.clone(), config);
        let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(sluice_api::preview_proxy::serve(state, listener, None, async {
            let _ = stopped.await;
        }));
        let visit = |path: &'static str| {
            let client = app.client.clone();
            async move {
                let url = format!("http://{address}{path}");
                let answer = client.get(url).header("host", "3000-ws_nope.preview.test").send().await.unwrap();
                answer.status().as_u16()
            }
        };
        assert_eq!(visit("/").await, 403, "{}: no grant", app.label);
        assert_eq!(visit("/?sluice_preview_token=not-a-token").await, 403, "{}", app.label);
        app.store.close().await;
        assert_eq!(visit("/").await, 503, "{}: the store is gone", app.label);
        assert_eq!(visit("/?sluice_preview_token=not-a-token").await, 503, "{}", app.label);
    }
}
