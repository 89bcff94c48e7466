//! Webhooks through the real `sluice serve`, on SQLite and PostgreSQL: a
//! receiver checks every delivery's Standard Webhooks signature with its
//! own HMAC, answers 500 at first and sees the same event delivered again,
//! deduplicates by id, and gets every event once it counts each id once,
//! in order. An endpoint that keeps failing is disabled with an event
//! saying so; one that filters gets only its types; the server killed
//! mid-delivery delivers the event again when it comes back. Endpoints
//! inside the host are refused unless the install allows them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{poll_until, wait_for};

const WITHIN: Duration = Duration::from_secs(90);

/// How an endpoint of the receiver answers.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// 500 to its first `n` requests, then 200.
    FailFirst(usize),
    /// 500 always.
    Broken,
    /// Notes the request's id and never answers (the sender goes first).
    Hold,
}

#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    signed: bool,
    body: Value,
    answered: u16,
}

#[derive(Default)]
struct Receiver {
    /// Ids of requests held unanswered.
    held: Mutex<Vec<String>>,
    keys: Mutex<HashMap<String, Vec<u8>>>,
    modes: Mutex<HashMap<String, Mode>>,
    log: Mutex<BTreeMap<String, Vec<Delivery>>>,
}

impl Receiver {
    fn deliveries(&self, name: &str) -> Vec<Delivery> {
        self.log.lock().unwrap().get(name).cloned().unwrap_or_default()
    }

    /// The ids answered 2xx, each once, in the order first taken.
    fn taken(&self, name: &str) -> Vec<Delivery> {
        let mut seen = std::collections::HashSet::new();
        self.deliveries(name).into_iter().filter(|d| d.answered == 200 && seen.insert(d.id.clone())).collect()
    }
}

/// The Standard Webhooks check, written here from the scheme: HMAC-SHA256
/// of `id.timestamp.body` under the secret's key, in any `v1,` entry of
/// the header, with a timestamp near now.
fn verify(key: &[u8], headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (id, timestamp, signatures) = (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
    let Ok(seconds) = timestamp.parse::<u64>() else { return false };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    if now.abs_diff(seconds) > 300 {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    let expected = STANDARD.encode(mac.finalize().into_bytes());
    signatures.split(' ').any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let key = receiver.keys.lock().unwrap().get(&name).cloned().unwrap_or_default();
    let signed = verify(&key, &headers, &body);
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mode = receiver.modes.lock().unwrap().get(&name).copied().unwrap_or(Mode::Broken);
    let before = receiver.deliveries(&name).len();
    let answered = match mode {
        Mode::FailFirst(n) if before < n => 500,
        Mode::FailFirst(_) => 200,
        Mode::Broken => 500,
        Mode::Hold => {
            receiver.held.lock().unwrap().push(id);
            return std::future::pending().await;
        }
    };
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    receiver.log.lock().unwrap().entry(name).or_default().push(Delivery { id, signed, body, answered });
    StatusCode::from_u16(answered).unwrap()
}

async fn start_receiver() -> (Arc<Receiver>, String) {
    let receiver = Arc::new(Receiver::default());
    let app = axum::Router::new().route("/{name}", axum::routing::post(receive)).with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (receiver, base)
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    poll_until(what, WITHIN, || {
        let done = done().then_some(());
        async move { done }
    })
    .await;
}

async fn register(server: &Server, body: Value) -> Value {
    let (status, created) = server.post("/v1/webhooks", &body).await;
    assert_eq!(status, 201, "{created}");
    created
}

async fn delete(server: &Server, path: &str) -> u16 {
    let url = format!("{}{path}", server.base);
    server.client.delete(url).bearer_auth(&server.token).send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn signed_deliveries_are_retried_deduplicated_by_id_and_complete() {
    let postgres = sluice_store::testing::postgres().await;
    for database in [None, postgres.as_ref().map(|db| db.url.clone())] {
        eprintln!("{}", if database.is_some() { "postgresql" } else { "sqlite" });
        let (receiver, base) = start_receiver().await;
        let dir = DataDir::new();
        let options = || {
            Options::serve()
                .database(database.as_deref())
                .arg("--webhook-allow-private")
                .arg("--webhook-failure-limit")
                .arg("3")
                // A killed server's leases lapse soon: its successor takes
                // the delivery over.
                .arg("--lease-seconds")
                .arg("5")
        };
        let server = Server::start_with(&dir.path(), options()).await;

        // Refusals name the field, quote no secret and register nothing.
        let secret_text = format!("whsec_{}", STANDARD.encode([0x5au8; 12]));
        for (body, field) in [
            (json!({"url": "ftp://example.com/"}), "url"),
            (json!({"url": "https://user:hunter2@example.com/"}), "url"),
            (json!({"url": format!("{base}/x"), "events": ["runtime.nope"]}), "events"),
            (json!({"url": format!("{base}/x"), "secret": secret_text}), "secret"),
            (json!({"url": format!("{base}/x"), "colour": "red"}), "colour"),
        ] {
            let (status, answer) = server.post("/v1/webhooks", &body).await;
            assert_eq!(status, 400, "{body}: {answer}");
            assert!(answer.to_string().contains(field), "{field}: {answer}");
            assert!(!answer.to_string().contains("hunter2") && !answer.to_string().contains(&secret_text[6..]));
        }
        assert_eq!(server.get("/v1/webhooks").await.1["items"], json!([]));

        // "good" fails its first two requests (one short of disabling);
        // "broken" fails them all;
        // "ready" takes only runtime.ready.
        let key = [0x42u8; 32];
        let good = register(
            &server,
            json!({"url": format!("{base}/good"), "secret": format!("whsec_{}", STANDARD.encode(key))}),
        )
        .await;
        assert!(good.get("secret").is_none(), "a secret the caller gave is not echoed: {good}");
        receiver.keys.lock().unwrap().insert("good".into(), key.to_vec());
        receiver.modes.lock().unwrap().insert("good".into(), Mode::FailFirst(2));
        let broken = register(&server, json!({"url": format!("{base}/broken")})).await;
        let made = broken["secret"].as_str().expect("a secret sluice made is answered once");
        let made_key = STANDARD.decode(made.strip_prefix("whsec_").unwrap()).unwrap();
        receiver.keys.lock().unwrap().insert("broken".into(), made_key);
        let ready = register(&server, json!({"url": format!("{base}/ready"), "events": ["runtime.ready"], "secret": format!("whsec_{}", STANDARD.encode(key))})).await;
        receiver.keys.lock().unwrap().insert("ready".into(), key.to_vec());
        receiver.modes.lock().unwrap().insert("ready".into(), Mode::FailFirst(0));
        let (_, listed) = server.get("/v1/webhooks").await;
        assert_eq!(listed["items"].as_array().unwrap().len(), 3);
        let (_, one) = server.get(&format!("/v1/webhooks/{}", broken["id"].as_str().unwrap())).await;
        assert!(!one.to_string().contains(made) && !listed.to_string().contains(made), "the secret is shown once");

        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(server.create_sleeper().await);
        }
        for id in &ids {
            server.wait_for("alice", id, WITHIN, |w| w["status"] == "ready").await;
        }

        // The broken endpoint is disabled after three failures in a row,
        // and the feed says so (the good endpoint takes every type).
        let broken_id = broken["id"].as_str().unwrap().to_owned();
        let broken_path = format!("/v1/webhooks/{broken_id}");
        let disabled = poll_until("the broken endpoint disabled", WITHIN, || async {
            let (_, hook) = server.get(&broken_path).await;
            (hook["enabled"] == false).then_some(hook)
        })
        .await;
        assert_eq!(disabled["failures"], 3, "{disabled}");
        assert!(disabled["disabledReason"].as_str().unwrap().contains("500"), "{disabled}");
        let (_, log) = server.get(&format!("{broken_path}/deliveries")).await;
        let log = log["items"].as_array().unwrap().clone();
        assert_eq!(log.len(), 3, "{log:?}");
        assert!(log.iter().all(|d| d["delivered"] == false && d["statusCode"] == 500), "{log:?}");
        assert_eq!(log.iter().map(|d| d["attempt"].as_i64().unwrap()).collect::<Vec<_>>(), [3, 2, 1], "newest first");
        assert!(log.iter().all(|d| d["eventId"] == log[0]["eventId"]), "the same event each time: {log:?}");
        assert_eq!(receiver.deliveries("broken").len(), 3, "nothing more once disabled");
        assert!(receiver.deliveries("broken").iter().all(|d| d.signed), "signed with the secret sluice made");

        for id in &ids {
            let (status, body) =
                server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
            assert_eq!(status, 202, "{body}");
        }
        for id in &ids {
            server.wait_for("alice", id, WITHIN, |w| w["status"] == "stopped").await;
        }

        // Killed while a delivery is in flight, the server delivers that
        // event again when it comes back: at least once.
        receiver.modes.lock().unwrap().insert("good".into(), Mode::Hold);
        let held = server.create_sleeper().await;
        let held_one = wait_for(WITHIN, || {
            let held = (!receiver.held.lock().unwrap().is_empty()).then_some(());
            async move { held }
        })
        .await;
        if held_one.is_none() {
            let good_path = format!("/v1/webhooks/{}", good["id"].as_str().unwrap());
            let (_, hook) = server.get(&good_path).await;
            let (_, log) = server.get(&format!("{good_path}/deliveries?limit=5")).await;
            let output = server.output();
            panic!("no delivery was held: {hook}\n{log}\n{}", &output[output.len().saturating_sub(6000)..]);
        }
        server.kill();
        receiver.modes.lock().unwrap().insert("good".into(), Mode::FailFirst(0));
        let server = Server::start_with(&dir.path(), options()).await;
        server.wait_for("alice", &held, WITHIN, |w| w["status"] == "ready").await;
        let (status, body) =
            server.post(&format!("/v1/workspaces/{held}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202, "{body}");
        server.wait_for("alice", &held, WITHIN, |w| w["status"] == "stopped").await;
        ids.push(held);

        // Every contract event of every workspace reaches "good", each
        // once by id and in its workspace's order, every request signed.
        let mut stored: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for id in &ids {
            stored.insert(id.clone(), server.stored_events(id).await);
        }
        let total: usize = stored.values().map(Vec::len).sum();
        let contract = |d: &Delivery| !d.body["type"].as_str().unwrap_or_default().starts_with("sluice.");
        eventually("every event to reach the good endpoint", || {
            receiver.taken("good").iter().filter(|d| contract(d)).count() >= total
        })
        .await;
        let all = receiver.deliveries("good");
        assert!(all.iter().all(|d| d.signed), "every delivery verifies");
        assert!(all[..2].iter().all(|d| d.answered == 500 && d.id == all[0].id), "the first event, refused twice");
        assert_eq!((all[2].id.as_str(), all[2].answered), (all[0].id.as_str(), 200), "then delivered, the same id");
        let repeats = all.len() - receiver.taken("good").len();
        assert!(repeats >= 2, "redeliveries: {repeats}");
        let mut per_workspace: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for d in receiver.taken("good") {
            assert_eq!(d.body["data"]["eventId"].as_str(), Some(d.id.as_str()), "webhook-id is the event's id");
            assert!(d.body["timestamp"].is_string() && d.body["type"] == d.body["data"]["type"], "{:?}", d.body);
            if contract(&d) {
                let workspace = d.body["data"]["workspaceId"].as_str().unwrap().to_owned();
                per_workspace.entry(workspace).or_default().push(d.body["data"].clone());
            }
        }
        assert_eq!(per_workspace, stored, "every event once, in order, as the API lists it");
        let held = receiver.held.lock().unwrap()[0].clone();
        assert!(receiver.taken("good").iter().any(|d| d.id == held), "the event held at the kill came again");
        let disabled_event = receiver
            .taken("good")
            .into_iter()
            .find(|d| d.body["type"] == "sluice.webhook.disabled")
            .expect("the good endpoint heard of the broken one's disabling");
        assert_eq!(disabled_event.body["data"]["data"]["webhookId"], broken_id.as_str());

        // The filtering endpoint took runtime.ready and nothing else. Its
        // deliveries go on their own, and may trail the good endpoint's.
        let launched = stored.values().flatten().filter(|e| e["type"] == "runtime.ready").count();
        eventually("every runtime.ready to reach the filtering endpoint", || receiver.taken("ready").len() >= launched)
            .await;
        let readies: Vec<String> = receiver.taken("ready").iter().map(|d| d.body["type"].to_string()).collect();
        assert_eq!(readies.len(), launched, "one per runtime.ready: {readies:?}");
        assert!(readies.iter().all(|t| t == "\"runtime.ready\""), "{readies:?}");

        // Enabled again it goes on from the event that failed; removed, it is gone.
        let (status, enabled) = server.post(&format!("{broken_path}/enable"), &json!({})).await;
        assert_eq!((status, &enabled["enabled"], &enabled["failures"]), (200, &json!(true), &json!(0)), "{enabled}");
        assert_eq!(delete(&server, &broken_path).await, 204);
        assert_eq!(server.get(&broken_path).await.0, 404);
        assert_eq!(delete(&server, &broken_path).await, 404);
        assert_eq!(server.get(&format!("/v1/webhooks/{}", ready["id"].as_str().unwrap())).await.1["enabled"], true);
        server.stop();
    }
}

#[tokio::test]
async fn endpoints_inside_the_host_are_refused_unless_the_install_allows_them() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve()).await;
    for url in [
        "http://127.0.0.1:9/in",
        "http://[::1]/in",
        "http://localhost:8080/in",
        "http://169.254.169.254/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[64:ff9b::7f00:1]/",
    ] {
        let (status, answer) = server.post("/v1/webhooks", &json!({ "url": url })).await;
        assert_eq!(status, 400, "{url}: {answer}");
        assert!(answer["message"].as_str().unwrap().starts_with("url:"), "{answer}");
        assert!(answer.to_string().contains("--webhook-allow-private"), "{answer}");
    }
    assert_eq!(server.get("/v1/webhooks").await.1["items"], json!([]));
    server.stop();
}
