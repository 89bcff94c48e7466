//! The execution broker protocol, as a client sees it: a conformance suite
//! from the protocol's client checklist, against `sluice serve
//! --broker-listen` over HTTPS.

use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde_json::json;
use sluice_tests::broker::{Broker, issue, operate, options};
use sluice_tests::server::DataDir;
use sluice_tests::{free_port, outwait, pace, poll_until, wait_for};

/// How long a test waits for a command or a workspace to get somewhere.
const WITHIN: Duration = Duration::from_secs(30);

async fn broker() -> (DataDir, Broker) {
    broker_on("local").await
}

async fn broker_on(runtime: &str) -> (DataDir, Broker) {
    let dir = DataDir::new();
    let port = free_port();
    let broker = Broker::start(&dir.path(), options(port).arg("--runtime").arg(runtime), port).await;
    (dir, broker)
}

/// The runtimes executors run on here: local, and Docker where the machine
/// has the engine and the test image.
fn runtimes() -> Vec<&'static str> {
    let mut all = vec!["local"];
    if sluice_tests::docker_test_image().is_some() {
        all.push("docker");
    }
    all
}

#[tokio::test]
async fn the_lease_reports_the_tokens_scope() {
    let (dir, broker) = broker().await;
    let token = issue(
        &dir.path(),
        "inst-a",
        &["--max-concurrency", "3", "--image", "img:1", "--image", "img:2", "--max-lifetime-seconds", "1200"],
    );
    assert!(token.starts_with("slbrk_") && !token.contains('\n'), "only the token is printed: {token:?}");
    let lease = broker.get("/v1/lease", &token).await;
    assert_eq!(lease.status, 200, "{lease:?}");
    let body = &lease.body;
    assert_eq!(body["api_version"], "execution-broker/v1");
    assert_eq!(body["lease"]["instance_id"], "inst-a");
    assert_eq!(body["lease"]["state"], "active");
    assert!(body["lease"]["id"].as_str().unwrap().starts_with("lse_"));
    assert_eq!(body["lease"]["expires_at"], json!(null));
    assert_eq!(body["admission"]["state"], "open");
    let capabilities = &body["capabilities"];
    for (name, value) in [
        ("shell", true),
        ("egress_control", true),
        ("resumable", false),
        ("idle_persistence", false),
        ("snapshots", true),
        ("durable_commands", true),
    ] {
        assert_eq!(capabilities[name], value, "{name}");
    }
    assert_eq!(body["limits"]["max_concurrent_workspaces"], 3);
    assert_eq!(body["limits"]["max_lifetime_seconds"], 1200);
    for field in [
        "idle_timeout_seconds",
        "max_exec_timeout_seconds",
        "default_exec_timeout_seconds",
        "max_snapshots",
        "snapshot_ttl_seconds",
        "max_file_bytes",
        "max_output_bytes",
        "max_env_entries",
        "max_egress_domains",
    ] {
        assert!(body["limits"][field].as_u64().is_some_and(|v| v > 0), "limits.{field}: {body}");
    }
    let sizes = body["sizes"].as_array().unwrap();
    let memory: Vec<u64> = sizes.iter().map(|s| s["memory_mib"].as_u64().unwrap()).collect();
    assert!(memory.windows(2).all(|w| w[0] < w[1]), "smallest first: {sizes:?}");
    assert!(sizes.iter().any(|s| s["name"] == body["default_size"]));
    assert_eq!(body["images"], json!({"default": "img:1", "allowed": ["img:1", "img:2"]}));
    assert_eq!(body["egress"]["ceiling"], json!([]), "issued without --egress-ceiling: no names");
    assert_eq!(lease.cache_control.as_deref(), Some("no-store"));
    assert!(lease.request_id.is_some());
    // The token never reaches a log line.
    assert!(!broker.server.output().contains(&token));
}

/// `allowed_domains` within the token's ceiling gets a workspace whose
/// only way out is its proxy; outside it, 422 `egress_not_allowed`; a
/// token with any egress reports a `null` ceiling.
#[tokio::test]
async fn egress_is_allowed_within_the_tokens_ceiling() {
    let (dir, broker) = broker().await;
    let ceiling = ["--egress-ceiling", "pypi.org", "--egress-ceiling", "*.example.test"];
    let token = issue(&dir.path(), "inst-g", &[&["--max-concurrency", "3"][..], &ceiling[..]].concat());
    let lease = broker.get("/v1/lease", &token).await;
    assert_eq!(lease.body["egress"]["ceiling"], json!(["pypi.org", "*.example.test"]), "{lease:?}");
    let asking = |domains: serde_json::Value| json!({"label": "g", "egress": {"allowed_domains": domains}});
    for (n, (domains, status, code)) in [
        (json!(["github.com"]), 422, "egress_not_allowed"),
        (json!(["pypi.org", "example.test"]), 422, "egress_not_allowed"),
        (json!(["*.test"]), 400, "invalid_request"),
        (json!(["pypi.org:8443"]), 400, "invalid_request"),
        (json!(["192.168.1.1"]), 400, "invalid_request"),
    ]
    .into_iter()
    .enumerate()
    {
        let refused = acquire(&broker, &token, Some(&format!("out-{n}")), &asking(domains.clone())).await;
        assert_eq!((refused.status, refused.code()), (status, code), "{domains}: {refused:?}");
    }
    let outside = acquire(&broker, &token, Some("out-x"), &asking(json!(["github.com"]))).await;
    assert!(outside.body["error"]["message"].as_str().unwrap().contains("github.com"), "names it: {outside:?}");

    let id =
        running(&broker, &token, "in-1", asking(json!(["pypi.org", "files.example.test", ".a.example.test"]))).await;
    let env = stdout_of(&broker, &token, &id, json!(["sh", "-c", "echo \"$HTTPS_PROXY $http_proxy\""])).await;
    assert_eq!(String::from_utf8_lossy(&env).trim(), "http://127.0.0.1:3128 http://127.0.0.1:3128");
    let closed = running(&broker, &token, "in-2", asking(json!([]))).await;
    let env = stdout_of(&broker, &token, &closed, json!(["sh", "-c", "echo \"[$HTTPS_PROXY]\""])).await;
    assert_eq!(String::from_utf8_lossy(&env).trim(), "[]", "no names: no proxy, no network");

    let open = issue(&dir.path(), "inst-o", &["--any-egress"]);
    assert_eq!(broker.get("/v1/lease", &open).await.body["egress"]["ceiling"], json!(null));
    let anything = acquire(&broker, &open, Some("any-1"), &asking(json!(["github.com", ".npmjs.org"]))).await;
    assert_eq!(anything.status, 201, "{anything:?}");
}

#[tokio::test]
async fn rotation_grace_revocation_and_expiry_answer_their_codes() {
    let (dir, broker) = broker().await;
    let first = issue(&dir.path(), "inst-r", &[]);
    let second = operate(&dir.path(), &["token", "rotate", "--instance", "inst-r", "--grace-seconds", "2"]);
    let second = second.trim();
    let during = broker.get("/v1/lease", &first).await;
    assert_eq!((during.status, during.body["lease"]["state"].as_str()), (200, Some("superseded")), "{during:?}");
    assert!(during.body["lease"]["superseded_at"].is_string());
    assert_eq!(broker.get("/v1/lease", second).await.body["lease"]["state"], "active");
    let after = poll_until("the grace ran out", Duration::from_secs(10), || async {
        let after = broker.get("/v1/lease", &first).await;
        (after.status != 200).then_some(after)
    })
    .await;
    assert_eq!((after.status, after.code()), (401, "lease_superseded"), "{after:?}");
    assert_eq!(broker.get("/v1/lease", second).await.status, 200, "the new token works on");

    operate(&dir.path(), &["token", "revoke", "--instance", "inst-r"]);
    let revoked = broker.get("/v1/lease", second).await;
    assert_eq!((revoked.status, revoked.code()), (401, "lease_revoked"));

    let mortal = issue(&dir.path(), "inst-e", &["--token-ttl-seconds", "5"]);
    let lease = broker.get("/v1/lease", &mortal).await;
    assert!(lease.body["lease"]["expires_at"].as_str().unwrap().ends_with('Z'), "{lease:?}");
    let expired = poll_until("the token expired", Duration::from_secs(15), || async {
        let expired = broker.get("/v1/lease", &mortal).await;
        (expired.status != 200).then_some(expired)
    })
    .await;
    assert_eq!((expired.status, expired.code()), (401, "lease_expired"));

    for token in [None, Some("slbrk_unknown"), Some("")] {
        let answer = broker.call(Method::GET, "/v1/lease", token, None).await;
        assert_eq!((answer.status, answer.code()), (401, "unauthenticated"), "{token:?}");
    }
}

#[tokio::test]
async fn admission_is_paused_and_stopped_per_instance_or_for_all() {
    let (dir, broker) = broker().await;
    let a = issue(&dir.path(), "inst-1", &[]);
    let b = issue(&dir.path(), "inst-2", &[]);
    let state = |answer: &sluice_tests::broker::Answer| answer.body["admission"].clone();
    operate(&dir.path(), &["admission", "pause", "--instance", "inst-1", "--reason", "payment"]);
    assert_eq!(state(&broker.get("/v1/lease", &a).await), json!({"state": "paused", "reason": "payment"}));
    assert_eq!(state(&broker.get("/v1/lease", &b).await)["state"], "open");
    operate(&dir.path(), &["admission", "emergency-stop"]);
    assert_eq!(state(&broker.get("/v1/lease", &a).await)["state"], "emergency_stopped");
    assert_eq!(state(&broker.get("/v1/lease", &b).await)["state"], "emergency_stopped");
    operate(&dir.path(), &["admission", "open"]);
    operate(&dir.path(), &["admission", "open", "--instance", "inst-1"]);
    assert_eq!(state(&broker.get("/v1/lease", &a).await)["state"], "open");
}

#[tokio::test]
async fn every_answer_keeps_the_conventions_and_nothing_redirects() {
    let (dir, broker) = broker().await;
    let token = issue(&dir.path(), "inst-c", &[]);
    // Unknown paths, trailing slashes and doubled slashes: the envelope, never a redirect.
    for path in ["/v1/nothing", "/v1/lease/", "//v1/lease", "/v2/lease", "/v1//lease"] {
        let answer = broker.get(path, &token).await;
        assert_eq!((answer.status, answer.code()), (404, "not_found"), "{path}: {answer:?}");
        assert_eq!(answer.cache_control.as_deref(), Some("no-store"), "{path}");
    }
    let wrong_method = broker.call(Method::DELETE, "/v1/lease", Some(&token), None).await;
    assert_eq!((wrong_method.status, wrong_method.code()), (405, "invalid_request"), "{wrong_method:?}");
    // The request id: echoed when valid, minted otherwise.
    let mut request = broker.client.get(format!("{}/v1/lease", broker.base)).bearer_auth(&token);
    request = request.header("x-request-id", "client.req-42");
    let echoed = sluice_tests::broker::Answer::of(request.send().await.unwrap()).await;
    assert_eq!(echoed.request_id.as_deref(), Some("client.req-42"));
    let bad = broker.client.get(format!("{}/v1/lease", broker.base)).header("x-request-id", "has space").send();
    let minted = sluice_tests::broker::Answer::of(bad.await.unwrap()).await;
    assert!(minted.request_id.is_some_and(|id| id != "has space"));
    // A body over 12 MiB: refused from its length, before it is read.
    let stalled =
        futures::stream::once(async { Ok::<_, std::io::Error>(bytes_of(b"{")) }).chain(futures::stream::pending());
    let response = broker
        .client
        .post(format!("{}/v1/lease", broker.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("content-length", (13u64 << 20).to_string())
        .body(reqwest::Body::wrap_stream(stalled))
        .send()
        .await
        .unwrap();
    let too_large = sluice_tests::broker::Answer::of(response).await;
    assert_eq!((too_large.status, too_large.code()), (413, "payload_too_large"), "{too_large:?}");

    // Plaintext is refused on the broker port; the broker is not on the API listener.
    let port = broker.base.trim_start_matches("https://127.0.0.1:").trim_end_matches("/broker");
    let plain = sluice_tests::http_client().get(format!("http://127.0.0.1:{port}/broker/v1/lease")).send().await;
    assert!(plain.is_err() || plain.is_ok_and(|r| !r.status().is_success()), "plaintext is never served");
    let (status, _) = broker.server.get("/broker/v1/lease").await;
    assert_eq!(status, 404, "the broker's routes are not on the API listener");
}

fn bytes_of(b: &'static [u8]) -> Vec<u8> {
    b.to_vec()
}

async fn acquire(
    broker: &Broker,
    token: &str,
    key: Option<&str>,
    body: &serde_json::Value,
) -> sluice_tests::broker::Answer {
    let mut request = broker.client.post(format!("{}/v1/workspaces", broker.base)).bearer_auth(token).json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    sluice_tests::broker::Answer::of(request.send().await.unwrap()).await
}

/// Runs `argv` in the workspace; answers its stdout.
async fn stdout_of(broker: &Broker, token: &str, id: &str, argv: serde_json::Value) -> Vec<u8> {
    let path = format!("/v1/workspaces/{id}/exec");
    let ran = broker.call(Method::POST, &path, Some(token), Some(&json!({"argv": argv}))).await;
    assert_eq!(ran.status, 200, "{ran:?}");
    unb64(&ran.body["stdout_b64"])
}

/// Acquires a workspace with `key` and waits until it runs; answers its id.
async fn running(broker: &Broker, token: &str, key: &str, body: serde_json::Value) -> String {
    let created = acquire(broker, token, Some(key), &body).await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["workspace_id"].as_str().unwrap().to_owned();
    wait_state(broker, token, &id, "running").await;
    id
}

async fn wait_state(broker: &Broker, token: &str, id: &str, state: &str) -> serde_json::Value {
    let reached = wait_for(Duration::from_secs(60), || async {
        let answer = broker.get(&format!("/v1/workspaces/{id}"), token).await;
        (answer.body["state"] == state).then_some(answer.body)
    })
    .await;
    reached.unwrap_or_else(|| panic!("workspace {id} never reached {state}\n{}", broker.server.output()))
}

#[tokio::test]
async fn acquire_validates_replays_limits_and_releases() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-w", &["--max-concurrency", "1", "--image", "sluice-test/busybox:1"]);
        let other = issue(&dir.path(), "inst-x", &[]);
        let good = json!({"label": "mesh-ws-1", "egress": {"allowed_domains": []}, "env": {"HOME": "/root"},
            "agent": "ops-bot", "run_id": "6f1e0d4c-2b7a-4e3f-9c1d-8a5b6c7d8e9f"});

        // Refusals, each creating nothing and consuming no key.
        let no_key = acquire(&broker, &token, None, &good).await;
        assert_eq!((no_key.status, no_key.code()), (400, "invalid_request"));
        for (body, status, code) in [
            (json!({"label": "a", "egress": {"allowed_domains": []}, "colour": "red"}), 400, "invalid_request"),
            (json!({"label": "a", "egress": {"allowed_domains": [], "extra": 1}}), 400, "invalid_request"),
            (json!({"label": "a"}), 422, "egress_required"),
            (json!({"label": "a", "egress": null}), 422, "egress_required"),
            (json!({"label": "a", "egress": {"allowed_domains": ["github.com"]}}), 422, "egress_not_allowed"),
            (json!({"label": "a", "egress": {"allowed_domains": ["*.github.com"]}}), 422, "egress_not_allowed"),
            (json!({"label": "a", "egress": {"allowed_domains": ["10.0.0.1"]}}), 400, "invalid_request"),
            (json!({"label": "a", "egress": {"allowed_domains": []}, "size": "xlarge"}), 422, "size_not_allowed"),
            (json!({"label": "a", "egress": {"allowed_domains": []}, "image": "evil:1"}), 422, "image_not_allowed"),
            (json!({"label": "a", "egress": {"allowed_domains": []}, "snapshot_id": "snap_x"}), 404, "not_found"),
            (
                json!({"label": "a", "egress": {"allowed_domains": []}, "snapshot_id": "bad~snap"}),
                400,
                "invalid_request",
            ),
            (json!({"label": "bad label!", "egress": {"allowed_domains": []}}), 400, "invalid_request"),
            (json!({"label": "a", "egress": {"allowed_domains": []}, "env": {"1BAD": "x"}}), 400, "invalid_request"),
        ] {
            let answer = acquire(&broker, &token, Some("k-1"), &body).await;
            assert_eq!((answer.status, answer.code()), (status, code), "{body}: {answer:?}");
        }
        let unknown = acquire(
            &broker,
            &token,
            Some("k-0"),
            &json!({"label": "a", "egress": {"allowed_domains": []}, "colour": 1}),
        )
        .await;
        assert!(unknown.body["error"]["message"].as_str().unwrap().contains("colour"), "names the field: {unknown:?}");

        // The key refused above still works; a replay answers the same workspace.
        let created = acquire(&broker, &token, Some("k-1"), &good).await;
        assert_eq!(created.status, 201, "{created:?}");
        let id = created.body["workspace_id"].as_str().unwrap().to_owned();
        assert!(matches!(created.body["state"].as_str(), Some("starting" | "running")), "{created:?}");
        assert_eq!(created.body["size"], "standard");
        assert!(created.body["expires_at"].as_str().unwrap().ends_with('Z'));
        let replay = acquire(&broker, &token, Some("k-1"), &good).await;
        assert_eq!((replay.status, replay.body["workspace_id"].as_str()), (200, Some(id.as_str())), "{replay:?}");
        let mut changed = good.clone();
        changed["env"]["HOME"] = json!("/elsewhere");
        let conflict = acquire(&broker, &token, Some("k-1"), &changed).await;
        assert_eq!((conflict.status, conflict.code()), (409, "idempotency_conflict"));
        let limited = acquire(&broker, &token, Some("k-2"), &good).await;
        assert_eq!((limited.status, limited.code()), (429, "concurrency_limit"), "{limited:?}");

        let running = wait_state(&broker, &token, &id, "running").await;
        assert_eq!(running["termination_reason"], json!(null));
        let listed = broker.get("/v1/workspaces?state=live", &token).await;
        assert_eq!(listed.body["workspaces"][0]["workspace_id"], id.as_str(), "{listed:?}");
        assert_eq!(listed.body["next_cursor"], json!(null));
        // Another instance, and an unknown id, get the same 404.
        let theirs = broker.get(&format!("/v1/workspaces/{id}"), &other).await;
        let unknown = broker.get("/v1/workspaces/ws_nope", &other).await;
        assert_eq!((theirs.status, theirs.code()), (404, "not_found"));
        assert_eq!(theirs.body, unknown.body, "indistinguishable");
        // An id outside the protocol's rule is a bad request on every path
        // that takes one, not an unknown workspace.
        let long = "w".repeat(65);
        for bad in [long.as_str(), "bad~id", "bad%21id", "bad%20id"] {
            for (method, path, body) in [
                (Method::GET, format!("/v1/workspaces/{bad}"), None),
                (Method::DELETE, format!("/v1/workspaces/{bad}"), None),
                (Method::POST, format!("/v1/workspaces/{bad}/exec"), Some(json!({"argv": ["true"]}))),
                (Method::GET, format!("/v1/workspaces/{bad}/commands/c-1"), None),
                (Method::POST, format!("/v1/workspaces/{bad}/files/read"), Some(json!({"path": "a"}))),
                (Method::DELETE, format!("/v1/snapshots/{bad}"), None),
            ] {
                let answer = broker.call(method.clone(), &path, Some(&token), body.as_ref()).await;
                assert_eq!((answer.status, answer.code()), (400, "invalid_request"), "{method} {path}: {answer:?}");
            }
        }
        assert!(
            broker.get("/v1/workspaces?state=live", &other).await.body["workspaces"].as_array().unwrap().is_empty()
        );

        // Admission refuses new work, never a release; a superseded token past its grace still releases.
        operate(&dir.path(), &["admission", "pause", "--instance", "inst-w", "--reason", "payment"]);
        let paused = acquire(&broker, &token, Some("k-3"), &good).await;
        assert_eq!((paused.status, paused.code()), (403, "paused"));
        let replayed = acquire(&broker, &token, Some("k-1"), &good).await;
        assert_eq!(
            (replayed.status, replayed.body["workspace_id"].as_str()),
            (200, Some(id.as_str())),
            "replayed first"
        );
        assert_eq!(paused.body["error"]["details"]["reason"], "payment");
        let rotated = operate(&dir.path(), &["token", "rotate", "--instance", "inst-w", "--grace-seconds", "0"]);
        let stale = broker.get("/v1/lease", &token).await;
        assert_eq!(stale.code(), "lease_superseded");
        let released = broker.call(Method::DELETE, &format!("/v1/workspaces/{id}"), Some(&token), None).await;
        assert_eq!(released.status, 200, "{released:?}");
        assert!(matches!(released.body["state"].as_str(), Some("terminating" | "terminated")), "{released:?}");
        let done = wait_state(&broker, rotated.trim(), &id, "terminated").await;
        // The reaper ends a paused instance's workspaces too: whichever came first.
        assert!(matches!(done["termination_reason"].as_str(), Some("released" | "paused")), "{done}");
        assert!(done["terminated_at"].as_str().unwrap().ends_with('Z'));
        let again = broker.call(Method::DELETE, &format!("/v1/workspaces/{id}"), Some(rotated.trim()), None).await;
        assert_eq!((again.status, again.body["state"].as_str()), (200, Some("terminated")));
        operate(&dir.path(), &["admission", "emergency-stop"]);
        let stopped = acquire(&broker, rotated.trim(), Some("k-4"), &good).await;
        assert_eq!((stopped.status, stopped.code()), (403, "emergency_stopped"));
        operate(&dir.path(), &["admission", "open"]);
        operate(&dir.path(), &["admission", "open", "--instance", "inst-w"]);
        let after = acquire(&broker, rotated.trim(), Some("k-4"), &good).await;
        assert_eq!(after.status, 201, "released, the limit admits another: {after:?}");
    }
}

#[tokio::test]
async fn a_workspace_past_its_lifetime_is_gone() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-t", &["--max-lifetime-seconds", "5"]);
        let created =
            acquire(&broker, &token, Some("t-1"), &json!({"label": "brief", "egress": {"allowed_domains": []}})).await;
        let id = created.body["workspace_id"].as_str().unwrap().to_owned();
        let ended = wait_state(&broker, &token, &id, "terminated").await;
        assert_eq!(ended["termination_reason"], "expired", "{ended}");
    }
}

#[tokio::test]
async fn exec_runs_argv_without_a_shell_with_exit_codes_signals_timeouts_and_truncation() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-x", &[]);
        let created = acquire(
            &broker,
            &token,
            Some("x-1"),
            &json!({"label": "exec", "egress": {"allowed_domains": []}, "env": {"GREETING": "hello from env"}}),
        )
        .await;
        let id = created.body["workspace_id"].as_str().unwrap().to_owned();
        let exec = |body: serde_json::Value| {
            let broker = &broker;
            let token = token.clone();
            let id = id.clone();
            async move { broker.call(Method::POST, &format!("/v1/workspaces/{id}/exec"), Some(&token), Some(&body)).await }
        };
        // Starting: not ready yet, or already running.
        let early = exec(json!({"argv": ["true"]})).await;
        assert!(early.status == 200 || (early.status == 409 && early.code() == "workspace_not_ready"), "{early:?}");
        wait_state(&broker, &token, &id, "running").await;

        let binary: Vec<u8> = (0..=255u8).collect();
        let echoed = exec(json!({"argv": ["cat"], "stdin_b64": b64(&binary)})).await;
        assert_eq!(echoed.status, 200, "{echoed:?}");
        assert_eq!(unb64(&echoed.body["stdout_b64"]), binary, "bytes in, bytes out");
        assert_eq!(
            (echoed.body["exit_code"].as_i64(), echoed.body["timeout_clamped"].as_bool()),
            (Some(0), Some(false))
        );
        let env = exec(json!({"argv": ["sh", "-c", "echo $GREETING"]})).await;
        assert_eq!(unb64(&env.body["stdout_b64"]), b"hello from env\n", "the acquisition's env: {env:?}");
        let no_shell = exec(json!({"argv": ["echo", "$HOME", ";", "true"]})).await;
        assert_eq!(unb64(&no_shell.body["stdout_b64"]), b"$HOME ; true\n");
        let failed = exec(json!({"argv": ["sh", "-c", "echo oops >&2; exit 3"]})).await;
        assert_eq!(
            (failed.body["exit_code"].as_i64(), unb64(&failed.body["stderr_b64"])),
            (Some(3), b"oops\n".to_vec())
        );
        let killed = exec(json!({"argv": ["sh", "-c", "kill -TERM $$"]})).await;
        assert_eq!(killed.body["exit_code"], 128 + 15, "signals fold to 128+n: {killed:?}");
        let slow = exec(json!({"argv": ["sh", "-c", "sleep 30 & sleep 30"], "timeout_seconds": 1})).await;
        assert_eq!(slow.body["exit_code"], 128 + 9, "the group is killed at the timeout: {slow:?}");
        let loud = exec(json!({"argv": ["sh", "-c", "head -c 3000000 /dev/zero"]})).await;
        assert_eq!(loud.body["stdout_truncated"], true);
        assert_eq!(unb64(&loud.body["stdout_b64"]).len(), 1 << 20, "cut at max_output_bytes");
        let clamped = exec(json!({"argv": ["true"], "timeout_seconds": 100000})).await;
        assert_eq!(clamped.body["timeout_clamped"], true);
        let missing = exec(json!({"argv": ["no-such-program"]})).await;
        assert_eq!(missing.body["exit_code"], 127);
        for (body, status, code) in [
            (json!({"argv": []}), 400, "invalid_request"),
            (json!({"argv": ["true"], "dir": "relative"}), 400, "invalid_request"),
            (json!({"argv": ["true"], "stdin_b64": "not base64!"}), 400, "invalid_request"),
            (json!({"argv": ["true"], "shell": true}), 400, "invalid_request"),
            (json!({"argv": ["cat"], "stdin_b64": b64(&vec![0u8; (8 << 20) + 1])}), 413, "payload_too_large"),
        ] {
            let answer = exec(body.clone()).await;
            assert_eq!((answer.status, answer.code()), (status, code), "{answer:?}");
        }
        let other = issue(&dir.path(), "inst-y", &[]);
        let theirs = broker
            .call(Method::POST, &format!("/v1/workspaces/{id}/exec"), Some(&other), Some(&json!({"argv": ["true"]})))
            .await;
        assert_eq!((theirs.status, theirs.code()), (404, "not_found"));
        broker.call(Method::DELETE, &format!("/v1/workspaces/{id}"), Some(&token), None).await;
        let gone = exec(json!({"argv": ["true"]})).await;
        assert_eq!((gone.status, gone.code()), (410, "workspace_gone"));
    }
}

#[tokio::test]
async fn an_idle_workspace_is_gone() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-i", &["--idle-timeout-seconds", "3"]);
        let id = running(&broker, &token, "i-1", json!({"label": "idle", "egress": {"allowed_domains": []}})).await;
        // Reading the workspace is not using it: it ends once idle.
        let ended = wait_state(&broker, &token, &id, "terminated").await;
        assert_eq!(ended["termination_reason"], "idle");
        let gone = broker
            .call(Method::POST, &format!("/v1/workspaces/{id}/exec"), Some(&token), Some(&json!({"argv": ["true"]})))
            .await;
        assert_eq!((gone.status, gone.code()), (410, "workspace_gone"));
    }
}

#[tokio::test]
async fn files_are_written_with_their_parents_read_back_and_refused_by_kind() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-f", &[]);
        let id = running(&broker, &token, "f-1", json!({"label": "files", "egress": {"allowed_domains": []}})).await;
        let call = |op: &'static str, body: serde_json::Value| {
            let (broker, token, id) = (&broker, token.clone(), id.clone());
            async move {
                broker.call(Method::POST, &format!("/v1/workspaces/{id}/files/{op}"), Some(&token), Some(&body)).await
            }
        };
        // Where the workload may write: its own working directory.
        let home = call("read", json!({"path": "/"})).await;
        assert_eq!((home.status, home.code()), (422, "not_a_file"), "{home:?}");
        let pwd = broker
            .call(Method::POST, &format!("/v1/workspaces/{id}/exec"), Some(&token), Some(&json!({"argv": ["pwd"]})))
            .await;
        let root = String::from_utf8(unb64(&pwd.body["stdout_b64"])).unwrap().trim().to_owned();
        let path = format!("{root}/deep/er/file.bin");
        let bytes: Vec<u8> = (0..=255u8).rev().collect();
        let written = call("write", json!({"path": path, "contents_b64": b64(&bytes)})).await;
        assert_eq!(written.status, 204, "{written:?}");
        let read = call("read", json!({"path": path})).await;
        assert_eq!((read.status, read.body["size_bytes"].as_u64()), (200, Some(256)), "{read:?}");
        assert_eq!(unb64(&read.body["contents_b64"]), bytes);
        assert_eq!(call("write", json!({"path": path, "contents_b64": b64(b"x")})).await.status, 204, "replaced");
        assert_eq!(unb64(&call("read", json!({"path": path})).await.body["contents_b64"]), b"x");
        // The workload sees what was written.
        let seen = broker
            .call(
                Method::POST,
                &format!("/v1/workspaces/{id}/exec"),
                Some(&token),
                Some(&json!({"argv": ["cat", path]})),
            )
            .await;
        assert_eq!(unb64(&seen.body["stdout_b64"]), b"x");

        let missing = call("read", json!({"path": format!("{root}/nope")})).await;
        assert_eq!((missing.status, missing.code()), (404, "file_not_found"));
        let gone_ws = broker
            .call(Method::POST, "/v1/workspaces/ws_unknown/files/read", Some(&token), Some(&json!({"path": "/x"})))
            .await;
        assert_eq!((gone_ws.status, gone_ws.code()), (404, "not_found"), "told apart by code only");
        let onto_dir = call("write", json!({"path": format!("{root}/deep"), "contents_b64": b64(b"x")})).await;
        assert_eq!((onto_dir.status, onto_dir.code()), (422, "not_a_file"));
        let big = format!("{root}/big");
        let made = broker
            .call(
                Method::POST,
                &format!("/v1/workspaces/{id}/exec"),
                Some(&token),
                Some(&json!({"argv": ["sh", "-c", format!("head -c 9000000 /dev/zero > {big}")]})),
            )
            .await;
        assert_eq!(made.body["exit_code"], 0, "{made:?}");
        let too_big = call("read", json!({"path": big})).await;
        assert_eq!((too_big.status, too_big.code()), (413, "file_too_large"));
        let relative = call("read", json!({"path": "relative"})).await;
        assert_eq!((relative.status, relative.code()), (400, "invalid_request"));
        let climbing = call("read", json!({"path": format!("{root}/deep/../deep/er/file.bin")})).await;
        assert_eq!((climbing.status, climbing.code()), (400, "invalid_request"), "no `..` in a path");
        // An absolute symlink is followed as the workload's own path would be.
        let link = format!("ln -s {root}/deep {root}/linked");
        let linked = broker
            .call(
                Method::POST,
                &format!("/v1/workspaces/{id}/exec"),
                Some(&token),
                Some(&json!({"argv": ["sh", "-c", link]})),
            )
            .await;
        assert_eq!(linked.body["exit_code"], 0, "{linked:?}");
        let through = call("read", json!({"path": format!("{root}/linked/er/file.bin")})).await;
        assert_eq!(unb64(&through.body["contents_b64"]), b"x", "{through:?}");
        // Nothing of the path or the contents reaches the log.
        assert!(!broker.server.output().contains("deep/er/file.bin"));
    }
}

#[tokio::test]
async fn durable_commands_start_once_read_back_and_cancel_with_a_fence() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-d", &[]);
        let id = running(&broker, &token, "d-1", json!({"label": "durable", "egress": {"allowed_domains": []}})).await;
        let path = |identity: &str| format!("/v1/workspaces/{id}/commands/{identity}");
        let counter = "sh -c 'echo run >> launches; echo out; echo err >&2; exit 4'";
        let body = json!({"argv": ["sh", "-c", counter]});

        let unknown = broker.get(&path("tool-call.1"), &token).await;
        assert_eq!((unknown.status, unknown.body["state"].as_str()), (200, Some("unknown")));
        let first = broker.call(Method::PUT, &path("tool-call.1"), Some(&token), Some(&body)).await;
        assert_eq!(first.status, 202, "{first:?}");
        // Whatever the body, a second PUT answers the status and launches nothing.
        let again = broker
            .call(
                Method::PUT,
                &path("tool-call.1"),
                Some(&token),
                Some(&json!({"argv": ["sh", "-c", "echo second >> launches"]})),
            )
            .await;
        assert_eq!(again.status, 200, "{again:?}");
        let done = broker.get_until(&path("tool-call.1"), &token, WITHIN, |c| c["state"] == "completed").await;
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(done["exit_code"], 4);
        assert_eq!(unb64(&done["stdout_b64"]), b"out\n");
        assert_eq!((done["stdout_bytes"].as_u64(), done["stderr_bytes"].as_u64()), (Some(4), Some(4)));
        assert_eq!(done["output_truncated"], false);
        assert_eq!(stdout_of(&broker, &token, &id, json!(["cat", "launches"])).await, b"run\n", "one process, ever");
        // A cancel of a finished command keeps its result.
        let kept = broker.call(Method::POST, &format!("{}/cancel", path("tool-call.1")), Some(&token), None).await;
        assert_eq!((kept.status, kept.body["state"].as_str()), (202, Some("completed")));

        // Cancel before the start: the start is fenced and launches nothing.
        let fenced = broker.call(Method::POST, &format!("{}/cancel", path("late")), Some(&token), None).await;
        assert_eq!((fenced.status, fenced.body["state"].as_str()), (202, Some("canceled")));
        let late = broker
            .call(
                Method::PUT,
                &path("late"),
                Some(&token),
                Some(&json!({"argv": ["sh", "-c", "echo late >> launches"]})),
            )
            .await;
        assert_eq!((late.status, late.body["state"].as_str()), (200, Some("canceled")), "{late:?}");
        // A running command is cancelled.
        let slow = broker.call(Method::PUT, &path("slow"), Some(&token), Some(&json!({"argv": ["sleep", "30"]}))).await;
        assert_eq!(slow.status, 202);
        assert_eq!(broker.get(&path("slow"), &token).await.body["state"], "running");
        broker.call(Method::POST, &format!("{}/cancel", path("slow")), Some(&token), None).await;
        let canceled = broker.get_until(&path("slow"), &token, WITHIN, |c| c["exit_code"].is_i64()).await;
        assert_eq!(
            (canceled["state"].as_str(), canceled["exit_code"].as_i64()),
            (Some("canceled"), Some(128 + 9)),
            "{canceled}"
        );
        assert_eq!(
            stdout_of(&broker, &token, &id, json!(["cat", "launches"])).await,
            b"run\n",
            "the fenced start launched nothing"
        );

        // A start whose answer was lost, at any point, is recovered through
        // GET: it ran once, or never ran and a repeat starts it once.
        let cuts = [1u64, 3, 10, 30, 100];
        for cut in cuts {
            let started = broker
                .client
                .put(format!("{}{}", broker.base, path(&format!("dropped-{cut}"))))
                .bearer_auth(&token)
                .timeout(Duration::from_millis(cut))
                .json(&json!({"argv": ["sh", "-c", format!("echo {cut} >> dropped")]}))
                .send()
                .await;
            if let Ok(answer) = started {
                drop(answer);
            }
        }
        // A request whose client left runs on to its end in the server;
        // nothing answers when the last has, so give them time.
        outwait("the server ends the abandoned starts", Duration::from_secs(2)).await;
        for cut in cuts {
            let identity = format!("dropped-{cut}");
            let mut state = broker.get(&path(&identity), &token).await.body;
            if state["state"] == "unknown" {
                let again = broker
                    .call(
                        Method::PUT,
                        &path(&identity),
                        Some(&token),
                        Some(&json!({"argv": ["sh", "-c", format!("echo {cut} >> dropped")]})),
                    )
                    .await;
                assert_eq!(again.status, 202, "never claimed, so this start launches it: {again:?}");
            }
            state = broker.get_until(&path(&identity), &token, WITHIN, |c| c["state"] == "completed").await;
            assert_eq!(
                (state["state"].as_str(), state["exit_code"].as_i64()),
                (Some("completed"), Some(0)),
                "{cut} ms: {state}"
            );
        }
        let mut ran = String::from_utf8(stdout_of(&broker, &token, &id, json!(["cat", "dropped"])).await).unwrap();
        ran = ran
            .lines()
            .map(|l| format!("{l:0>3}"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(ran.split(',').count(), cuts.len(), "each started exactly once: {ran}");
        let lines = stdout_of(&broker, &token, &id, json!(["sh", "-c", "wc -l < dropped"])).await;
        assert_eq!(String::from_utf8(lines).unwrap().trim(), cuts.len().to_string(), "and never twice");

        let bad = broker.call(Method::PUT, &path("bad identity"), Some(&token), Some(&body)).await;
        assert_eq!((bad.status, bad.code()), (400, "invalid_request"));
        broker.call(Method::DELETE, &format!("/v1/workspaces/{id}"), Some(&token), None).await;
        let gone = broker.get(&path("tool-call.1"), &token).await;
        assert_eq!((gone.status, gone.code()), (410, "workspace_gone"));
    }
}

/// Files under `dir` (recursively).
fn count_files(dir: &std::path::Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(_) => count += 1,
                Err(_) => {}
            }
        }
    }
    count
}

async fn snapshot(
    broker: &Broker,
    token: &str,
    id: &str,
    key: Option<&str>,
    dir: &str,
) -> sluice_tests::broker::Answer {
    let mut request = broker
        .client
        .post(format!("{}/v1/workspaces/{id}/snapshots", broker.base))
        .bearer_auth(token)
        .json(&json!({"dir": dir}));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    sluice_tests::broker::Answer::of(request.send().await.unwrap()).await
}

#[tokio::test]
async fn snapshots_warm_start_deduplicate_hold_the_quota_and_expire() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let ttl = 15;
        let token = issue(&dir.path(), "inst-s", &["--max-snapshots", "2", "--snapshot-ttl-seconds", &ttl.to_string()]);
        let other = issue(&dir.path(), "inst-o", &[]);
        let cold = json!({"label": "cold", "egress": {"allowed_domains": []}});
        let id = running(&broker, &token, "s-ws", cold.clone()).await;
        let root = String::from_utf8(stdout_of(&broker, &token, &id, json!(["pwd"])).await).unwrap().trim().to_owned();
        let project = format!("{root}/proj");
        let made = stdout_of(
            &broker,
            &token,
            &id,
            json!([
                "sh",
                "-c",
                format!(
                    "mkdir -p {project}/src/empty {project}/.git && printf alpha > {project}/src/a.txt && \
                 head -c 3000000 /dev/urandom > {project}/big.bin && ln -s src/a.txt {project}/link && \
                 printf 'ref: main' > {project}/.git/HEAD && chmod 750 {project}/src/a.txt && echo made"
                )
            ]),
        )
        .await;
        assert_eq!(made, b"made\n");
        let describe = json!([
            "sh",
            "-c",
            format!(
                "cd {project} && find . | sort && md5sum big.bin src/a.txt .git/HEAD && stat -c %a src/a.txt && readlink link"
            )
        ]);
        let before = stdout_of(&broker, &token, &id, describe.clone()).await;

        // Refusals take no snapshot and consume no key.
        for (key, dir, status, code) in [
            (None, project.as_str(), 400, "invalid_request"),
            (Some("s-1"), "relative/dir", 400, "invalid_request"),
            (Some("s-1"), "/no/such/dir", 400, "invalid_request"),
        ] {
            let answer = snapshot(&broker, &token, &id, key, dir).await;
            assert_eq!((answer.status, answer.code()), (status, code), "{dir}: {answer:?}");
        }
        let unknown = snapshot(&broker, &token, "ws_nope", Some("s-1"), &project).await;
        let theirs = snapshot(&broker, &other, &id, Some("s-1"), &project).await;
        assert_eq!((unknown.status, unknown.code()), (404, "not_found"));
        assert_eq!(unknown.body, theirs.body, "another instance's workspace is unknown");

        let objects_dir = dir.path().join("objects");
        let first = snapshot(&broker, &token, &id, Some("s-1"), &project).await;
        assert_eq!(first.status, 201, "{first:?}");
        let first_id = first.body["snapshot_id"].as_str().unwrap().to_owned();
        assert!(first.body["expires_at"].as_str().unwrap().ends_with('Z'));
        let replay = snapshot(&broker, &token, &id, Some("s-1"), &project).await;
        assert_eq!((replay.status, &replay.body), (200, &first.body), "a replay answers the same snapshot");
        let conflict = snapshot(&broker, &token, &id, Some("s-1"), &format!("{project}/src")).await;
        assert_eq!((conflict.status, conflict.code()), (409, "idempotency_conflict"));

        // A second snapshot of the same files stores only its own manifests.
        let stored = count_files(&objects_dir);
        let second = snapshot(&broker, &token, &id, Some("s-2"), &project).await;
        assert_eq!(second.status, 201, "{second:?}");
        let second_id = second.body["snapshot_id"].as_str().unwrap().to_owned();
        assert_ne!(second_id, first_id);
        assert_eq!(count_files(&objects_dir), stored + 2, "the objects are deduplicated");
        let full = snapshot(&broker, &token, &id, Some("s-3"), &project).await;
        assert_eq!((full.status, full.code()), (422, "snapshot_quota_exceeded"), "{full:?}");

        // A warm start holds exactly the directory, modes and links included.
        let mut warm_body = json!({"label": "warm", "egress": {"allowed_domains": []}, "snapshot_id": first_id});
        let warm = running(&broker, &token, "s-warm", warm_body.clone()).await;
        assert_eq!(stdout_of(&broker, &token, &warm, describe.clone()).await, before, "restored byte for byte");
        let foreign = acquire(&broker, &other, Some("o-1"), &warm_body).await;
        assert_eq!((foreign.status, foreign.code()), (404, "not_found"), "{foreign:?}");

        // Deleted: 204 (again too), 404 for ids never owned, then gone for a warm start.
        let delete = |id: String, token: String| {
            let broker = &broker;
            async move { broker.call(Method::DELETE, &format!("/v1/snapshots/{id}"), Some(&token), None).await }
        };
        assert_eq!(delete(first_id.clone(), token.clone()).await.status, 204);
        assert_eq!(delete(first_id.clone(), token.clone()).await.status, 204);
        let never = delete("snap_never".into(), token.clone()).await;
        assert_eq!((never.status, never.code()), (404, "not_found"));
        assert_eq!(delete(second_id.clone(), other.clone()).await.code(), "not_found");
        let gone = acquire(&broker, &token, Some("s-cold-1"), &warm_body).await;
        assert_eq!((gone.status, gone.code()), (410, "snapshot_gone"), "{gone:?}");
        let replayed = acquire(&broker, &token, Some("s-warm"), &warm_body).await;
        assert_eq!((replayed.status, replayed.body["workspace_id"].as_str()), (200, Some(warm.as_str())));
        let third = snapshot(&broker, &token, &id, Some("s-3"), &project).await;
        assert_eq!(third.status, 201, "a deletion frees its place in the quota: {third:?}");

        // Past its TTL the sweep deletes it from the store. (Paused, the
        // instance checks a warm start's snapshot and then refuses.)
        operate(&dir.path(), &["admission", "pause", "--instance", "inst-s"]);
        warm_body["snapshot_id"] = json!(second_id);
        poll_until("the snapshot's TTL ran out", Duration::from_secs(ttl as u64 + 10), || async {
            let answer = acquire(&broker, &token, Some("s-cold-2"), &warm_body).await;
            if answer.status == 410 {
                return Some(());
            }
            assert_eq!((answer.status, answer.code()), (403, "paused"), "{answer:?}");
            None
        })
        .await;
        // Every snapshot's own manifests are gone; the shared objects stay.
        let swept =
            wait_for(Duration::from_secs(40), || async { (count_files(&objects_dir) == stored - 2).then_some(()) })
                .await;
        assert!(
            swept.is_some(),
            "the snapshots' manifests were deleted: {} files, {stored} before",
            count_files(&objects_dir)
        );
        // The paused instance's workspace ends; a retried take still answers
        // the snapshot its key made, a new one that the workspace is gone.
        wait_state(&broker, &token, &id, "terminated").await;
        let late = snapshot(&broker, &token, &id, Some("s-1"), &project).await;
        assert_eq!((late.status, &late.body), (200, &first.body), "{late:?}");
        let ended = snapshot(&broker, &token, &id, Some("s-9"), &project).await;
        assert_eq!((ended.status, ended.code()), (410, "workspace_gone"), "{ended:?}");
        assert!(!broker.server.output().contains(&project), "the directory is never logged");
    }
}

/// Ends the executor of workspace `id` under the broker's feet: its
/// container, or every process of its run directory.
fn kill_executor(runtime: &str, data_dir: &std::path::Path, id: &str) {
    if runtime == "docker" {
        let filter = format!("label=sluice.workspace={id}");
        let listed = std::process::Command::new("docker").args(["ps", "-q", "--filter", &filter]).output().unwrap();
        let container = String::from_utf8(listed.stdout).unwrap().trim().to_owned();
        assert!(!container.is_empty(), "the workspace has a container");
        assert!(std::process::Command::new("docker").args(["kill", &container]).output().unwrap().status.success());
        return;
    }
    let needle = data_dir.display().to_string();
    let mut killed = 0;
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("--launch=") && cmdline.contains(&needle) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed += 1;
        }
    }
    assert!(killed > 0, "the executor's processes were found");
}

/// The codes of things going wrong: a stop state the broker cannot read,
/// a command that cannot start, a snapshot key in use, a sandbox that died.
#[tokio::test]
async fn failures_answer_their_codes() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-e", &["--max-concurrency", "4"]);
        let body = json!({"label": "fail", "egress": {"allowed_domains": []}});
        let id = running(&broker, &token, "e-1", body.clone()).await;

        // A durable command whose program is missing never starts, and its
        // identity stays free.
        let path = format!("/v1/workspaces/{id}/commands/tool-1");
        let missing = json!({"argv": ["no-such-program-7c2"]});
        let refused = broker.call(Method::PUT, &path, Some(&token), Some(&missing)).await;
        assert_eq!((refused.status, refused.code()), (422, "command_not_started"), "{refused:?}");
        assert_eq!(broker.get(&path, &token).await.body["state"], "unknown");
        let started = broker.call(Method::PUT, &path, Some(&token), Some(&json!({"argv": ["true"]}))).await;
        assert_eq!(started.status, 202, "{started:?}");

        // Two takes of one snapshot key at once: one takes it, the other is
        // told it is in progress, and a replay then answers the snapshot.
        let root = String::from_utf8(stdout_of(&broker, &token, &id, json!(["pwd"])).await).unwrap().trim().to_owned();
        let big = format!("{root}/big");
        let made = stdout_of(
            &broker,
            &token,
            &id,
            json!(["sh", "-c", format!("mkdir {big} && head -c 100000000 /dev/urandom > {big}/blob && echo ok")]),
        )
        .await;
        assert_eq!(made, b"ok\n");
        let (first, second) = tokio::join!(snapshot(&broker, &token, &id, Some("e-snap"), &big), async {
            pace(Duration::from_millis(150)).await;
            snapshot(&broker, &token, &id, Some("e-snap"), &big).await
        });
        let mut statuses = [first.status, second.status];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "{first:?} {second:?}");
        let busy = if first.status == 409 { &first } else { &second };
        assert_eq!(busy.code(), "idempotency_in_progress");
        assert!(busy.retry_after.is_some(), "{busy:?}");
        let taken = if first.status == 201 { &first } else { &second };
        let replay = snapshot(&broker, &token, &id, Some("e-snap"), &big).await;
        assert_eq!((replay.status, &replay.body), (200, &taken.body));

        // A sandbox that died under the broker: the provider failed.
        kill_executor(runtime, &dir.path(), &id);
        let failed = broker
            .call(Method::POST, &format!("/v1/workspaces/{id}/exec"), Some(&token), Some(&json!({"argv": ["true"]})))
            .await;
        // `docker kill` returns once the engine saw the container end, by
        // when the daemon's closed watch may have had the workspace recorded
        // ended already: then it is gone.
        if runtime == "docker" && failed.status == 410 {
            assert_eq!(failed.code(), "workspace_gone", "{failed:?}");
        } else {
            assert_eq!((failed.status, failed.code()), (502, "upstream_error"), "{failed:?}");
            assert_eq!(failed.body["error"]["retryable"], true);
        }

        // A stop state the broker cannot read: it admits nothing.
        let db = format!("sqlite:{}", dir.path().join("sluice.db").display());
        let rename = |from: &'static str, to: &'static str| {
            let db = db.clone();
            async move {
                use sqlx::Connection as _;
                let mut connection = sqlx::SqliteConnection::connect(&db).await.unwrap();
                sqlx::query(&format!("ALTER TABLE {from} RENAME TO {to}")).execute(&mut connection).await.unwrap();
                connection.close().await.unwrap();
            }
        };
        rename("broker_admission", "broker_admission_away").await;
        let closed = acquire(&broker, &token, Some("e-2"), &body).await;
        assert_eq!((closed.status, closed.code()), (503, "admission_unavailable"), "{closed:?}");
        assert!(closed.retry_after.is_some());
        let lease = broker.get("/v1/lease", &token).await;
        assert_eq!(lease.body["admission"]["reason"], "unavailable", "{lease:?}");
        rename("broker_admission_away", "broker_admission").await;
        let open = acquire(&broker, &token, Some("e-2"), &body).await;
        assert_eq!(open.status, 201, "the key refused above was not consumed: {open:?}");
    }
}

/// A broker workspace's lifetime and idle timeout hold while sluice itself
/// is down: its executor ends itself past them.
#[tokio::test]
async fn executors_end_themselves_past_their_bounds_while_sluice_is_down() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let brief = issue(&dir.path(), "inst-b", &["--max-lifetime-seconds", "4"]);
        let idle = issue(&dir.path(), "inst-i", &["--idle-timeout-seconds", "3"]);
        let body = json!({"label": "bounded", "egress": {"allowed_domains": []}});
        running(&broker, &brief, "b-1", body.clone()).await;
        running(&broker, &idle, "i-1", body).await;
        let live = || if runtime == "docker" { dir.containers(false).len() } else { dir.live_local_executors().len() };
        assert_eq!(live(), 2, "both executors run");
        let Broker { server, .. } = broker;
        server.kill();
        let ended = wait_for(Duration::from_secs(40), || async { (live() == 0).then_some(()) }).await;
        assert!(ended.is_some(), "{} executors outlived their bounds", live());
    }
}

#[tokio::test]
async fn nothing_of_argv_env_stdin_output_paths_contents_or_the_token_is_kept_outside_the_executor() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-p", &[]);
        let env_marker = "ENVMARK7d1f0c";
        let id = running(
            &broker,
            &token,
            "p-1",
            json!({"label": "private", "egress": {"allowed_domains": []}, "env": {"SECRET_THING": env_marker}}),
        )
        .await;
        let call = |path: String, body: serde_json::Value| {
            let (broker, token) = (&broker, token.clone());
            async move { broker.call(Method::POST, &path, Some(&token), Some(&body)).await }
        };
        let pwd = call(format!("/v1/workspaces/{id}/exec"), json!({"argv": ["pwd"]})).await;
        let root = String::from_utf8(unb64(&pwd.body["stdout_b64"])).unwrap().trim().to_owned();
        let markers = [
            "ARGVMARK41c2",
            "STDINMARK9e3b",
            "OUTMARK58af",
            "PATHMARKd27e",
            "FILEMARK3c91",
            "CMDMARKb6f0",
            "SNAPDIRMARK5a0e",
        ];
        let [argv, stdin, output, path, contents, command, snapshot_dir] = markers;
        let ran = call(
            format!("/v1/workspaces/{id}/exec"),
            json!({"argv": ["sh", "-c", format!("cat >/dev/null; echo {argv} >/dev/null; printf '%s%s' OUT MARK58af")],
                   "stdin_b64": b64(stdin.as_bytes())}),
        )
        .await;
        assert_eq!(unb64(&ran.body["stdout_b64"]), output.as_bytes(), "{ran:?}");
        let file = format!("{root}/{path}/x");
        assert_eq!(
            call(
                format!("/v1/workspaces/{id}/files/write"),
                json!({"path": file, "contents_b64": b64(contents.as_bytes())})
            )
            .await
            .status,
            204
        );
        assert_eq!(
            unb64(&call(format!("/v1/workspaces/{id}/files/read"), json!({"path": file})).await.body["contents_b64"]),
            contents.as_bytes()
        );
        // A snapshot keeps its directory, sealed: never in plain anywhere.
        let snap_dir = format!("{root}/{snapshot_dir}");
        let plain =
            call(format!("/v1/workspaces/{id}/exec"), json!({"argv": ["sh", "-c", format!("mkdir -p {snap_dir}")]}))
                .await;
        assert_eq!(plain.body["exit_code"], 0, "{plain:?}");
        let taken = snapshot(&broker, &token, &id, Some("p-snap"), &snap_dir).await;
        assert_eq!(taken.status, 201, "{taken:?}");
        let started = broker
            .call(
                Method::PUT,
                &format!("/v1/workspaces/{id}/commands/c1"),
                Some(&token),
                Some(&json!({"argv": ["echo", command]})),
            )
            .await;
        assert_eq!(started.status, 202);
        let command = format!("/v1/workspaces/{id}/commands/c1");
        broker.get_until(&command, &token, WITHIN, |c| c["state"] == "completed").await;
        broker.call(Method::DELETE, &format!("/v1/workspaces/{id}"), Some(&token), None).await;
        wait_state(&broker, &token, &id, "terminated").await;

        let log = broker.server.output();
        let files = files_outside_executors(&dir.path());
        assert!(
            files.iter().any(|f| f.extension().is_some_and(|e| e == "db")),
            "the database is among them: {files:?}"
        );
        for marker in markers.iter().copied().chain([env_marker, token.as_str()]) {
            assert!(!log.contains(marker), "{marker} reached the log");
            for file in &files {
                let bytes = std::fs::read(file).unwrap_or_default();
                let found = bytes.windows(marker.len()).any(|w| w == marker.as_bytes());
                assert!(!found, "{marker} is kept in {}", file.display());
            }
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &serde_json::Value) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text.as_str().unwrap()).unwrap()
}

/// Every file under `root` except the executors' own directories.
fn files_outside_executors(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == "executors") {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => found.push(path),
                _ => {}
            }
        }
    }
    found
}

#[tokio::test]
async fn the_reaper_ends_the_workspaces_of_a_revoked_instance() {
    for runtime in runtimes() {
        eprintln!("{runtime}");
        let (dir, broker) = broker_on(runtime).await;
        let token = issue(&dir.path(), "inst-v", &[]);
        let id = running(&broker, &token, "v-1", json!({"label": "revoked", "egress": {"allowed_domains": []}})).await;
        operate(&dir.path(), &["token", "revoke", "--instance", "inst-v"]);
        // The token answers nothing now; the operator's API shows the workspace stop.
        broker.server.wait_for("broker:inst-v", &id, Duration::from_secs(30), |w| w["status"] == "stopped").await;
    }
}

#[tokio::test]
async fn tokens_are_operated_against_postgresql_while_the_server_runs() {
    let Some(db) = sluice_store::testing::postgres().await else { return };
    let dir = DataDir::new();
    let port = free_port();
    let broker = Broker::start(&dir.path(), options(port).database(Some(&db.url)), port).await;
    let key = dir.path().join("seal-key").display().to_string();
    let store = ["--database-url", db.url.as_str(), "--seal-key-file", key.as_str()];
    let token = sluice_tests::broker::operate_with(&["token", "issue", "--instance", "pg-inst"], &store);
    let lease = broker.get("/v1/lease", token.trim()).await;
    assert_eq!((lease.status, lease.body["lease"]["instance_id"].as_str()), (200, Some("pg-inst")), "{lease:?}");
    sluice_tests::broker::operate_with(&["admission", "pause", "--instance", "pg-inst"], &store);
    assert_eq!(broker.get("/v1/lease", token.trim()).await.body["admission"]["state"], "paused");
    sluice_tests::broker::operate_with(&["token", "revoke", "--instance", "pg-inst"], &store);
    assert_eq!(broker.get("/v1/lease", token.trim()).await.code(), "lease_revoked");
}
