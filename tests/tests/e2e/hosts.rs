//! sluice across hosts, end to end: PostgreSQL, s3s-fs and one `sluice
//! api` in a hub namespace, and two `sluice worker`s each in a namespace of
//! its own joined to the hub by a veth pair, so the API reaches a host's
//! executors only through its worker's advertised address. Executors are
//! placed on both hosts and every call into them is routed there; a worker
//! killed outright leaves its host unreachable (503 naming it, then its
//! executors retained as `host-unreachable`, nothing removed); started
//! again, it adopts them, and a stop drains them as on one host.

use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use sluice_tests::broker::{Answer, Broker};
use sluice_tests::capture::{session, sh_ok, workspace_body};
use sluice_tests::hosts::{HubObjects, HubPostgres, Network};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{read_until, wait_for};

const GRACE_SECONDS: &str = "3";
const WITHIN: Duration = Duration::from_secs(90);

struct Host {
    n: u8,
    namespace: String,
    dir: DataDir,
}

fn worker(network: &Network, objects: &HubObjects, db: &HubPostgres, seal_key: &str, host: &Host) -> Options {
    let hub = network.hub_address(host.n);
    let options = Options::command("worker")
        .database(Some(&db.url(&hub)))
        .netns(&host.namespace, &network.host_address(host.n))
        .arg("--seal-key-file")
        .arg(seal_key)
        .arg("--runtime")
        .arg("local")
        .arg("--host-name")
        .arg(format!("host-{}", host.n))
        .arg("--internal-listen")
        .arg(format!("{}:7421", network.host_address(host.n)))
        .arg("--host-grace-seconds")
        .arg(GRACE_SECONDS)
        .arg("--lease-seconds")
        .arg("3");
    objects.options(options, &hub)
}

async fn fleet(api: &Server) -> Value {
    let (status, fleet) = api.get("/v1/workers").await;
    assert_eq!(status, 200, "{fleet}");
    fleet
}

async fn wait_for_workers(api: &Server, healthy: usize) -> Value {
    let joined = wait_for(WITHIN, || async {
        let fleet = fleet(api).await;
        let live = fleet["items"].as_array().unwrap().iter().filter(|w| w["health"] == "healthy").count();
        (live == healthy).then_some(fleet)
    })
    .await;
    joined.unwrap_or_else(|| panic!("{healthy} workers never joined"))
}

/// The broker of the API in the hub: its self-signed certificate names
/// `localhost`, which the client resolves to the hub's address.
fn broker_client(dir: &DataDir, hub: &str, port: u16) -> (reqwest::Client, String) {
    let cert = std::fs::read(dir.path().join("broker-tls/cert.pem")).expect("the broker wrote its certificate");
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
        .resolve("localhost", format!("{hub}:{port}").parse().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(sluice_tests::CLIENT_IDLE)
        .build()
        .unwrap();
    (client, format!("https://localhost:{port}/broker"))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text.as_str().unwrap_or_default()).unwrap()
}

/// Every broker call into the workspace, routed to its host: exec, a file
/// written and read back, a durable command, a snapshot.
async fn broker_calls(broker: &Broker, token: &str, id: &str, tag: &str) {
    let call = |method: Method, path: String, body: Value| async move {
        broker.call(method, &format!("/v1/workspaces/{id}{path}"), Some(token), Some(&body)).await
    };
    let pwd = call(Method::POST, "/exec".into(), json!({"argv": ["pwd"]})).await;
    assert_eq!(pwd.status, 200, "{pwd:?}");
    let root = String::from_utf8(unb64(&pwd.body["stdout_b64"])).unwrap().trim().to_owned();
    let path = format!("{root}/proj/{tag}.txt");
    let written =
        call(Method::POST, "/files/write".into(), json!({"path": path, "contents_b64": b64(tag.as_bytes())})).await;
    assert_eq!(written.status, 204, "{written:?}");
    let read = call(Method::POST, "/files/read".into(), json!({"path": path})).await;
    assert_eq!((read.status, unb64(&read.body["contents_b64"])), (200, tag.as_bytes().to_vec()), "{read:?}");
    let started = call(Method::PUT, format!("/commands/{tag}.1"), json!({"argv": ["sh", "-c", "echo durable"]})).await;
    assert_eq!(started.status, 202, "{started:?}");
    let command = format!("/v1/workspaces/{id}/commands/{tag}.1");
    let done = broker.get_until(&command, token, Duration::from_secs(10), |c| c["state"] == "completed").await;
    assert_eq!(
        (done["state"].as_str(), unb64(&done["stdout_b64"])),
        (Some("completed"), b"durable\n".to_vec()),
        "{done}"
    );
    let snapshot = broker
        .client
        .post(format!("{}/v1/workspaces/{id}/snapshots", broker.base))
        .bearer_auth(token)
        .header("idempotency-key", format!("snap-{tag}"))
        .json(&json!({"dir": format!("{root}/proj")}))
        .send()
        .await
        .unwrap();
    let snapshot = Answer::of(snapshot).await;
    assert!(snapshot.status == 200 || snapshot.status == 201, "{snapshot:?}");
}

/// The workspaces API's streamed exec and its files, into an executor on
/// another host: the output streams, the bytes go and come back.
async fn workspace_calls_reach_the_executors_host(api: &Server, id: &str) {
    let exec = api
        .client
        .post(format!("{}/v1/workspaces/{id}/exec", api.base))
        .bearer_auth(&api.token)
        .header("accept", "text/event-stream")
        .json(&json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", "echo one; echo two"]}]}))
        .send()
        .await
        .unwrap();
    let mut events = sluice_tests::server::SseReader::new(exec);
    let mut out = String::new();
    while let Some(event) = events.next(Duration::from_secs(30)).await {
        if event.event == "stdout" {
            out.push_str(event.data["text"].as_str().unwrap());
        }
        if event.event == "end" {
            assert_eq!(event.data["status"], "completed", "{:?}", event.data);
            break;
        }
    }
    assert_eq!(out, "one\ntwo\n");
    let url = format!("{}/v1/workspaces/{id}/files?ownerUserId=alice&path=routed/file.bin&parents=true", api.base);
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let put = api.client.put(&url).bearer_auth(&api.token).body(bytes.clone()).send().await.unwrap();
    assert_eq!(put.status(), 200, "{:?}", put.text().await);
    let got = api.client.get(&url).bearer_auth(&api.token).send().await.unwrap();
    assert_eq!(got.bytes().await.unwrap()[..], bytes[..], "the file came back from the executor's host");
    let start = json!({"ownerUserId": "alice", "argv": ["sh", "-c", "echo from-the-host; exec sleep 600"]});
    let (status, process) = api.post(&format!("/v1/workspaces/{id}/processes"), &start).await;
    assert_eq!(status, 201, "{process}");
    let process_id = process["processId"].as_str().unwrap();
    let output = format!("/v1/workspaces/{id}/processes/{process_id}/output?ownerUserId=alice");
    let said = sluice_tests::read_until(
        WITHIN,
        || api.read_stream(&output, None, 10, Duration::from_secs(2)),
        |(_, seen)| seen.iter().any(|e| e.data["text"] == "from-the-host\n"),
    )
    .await;
    assert!(said.is_ok(), "the process's output came from its host: {said:?}");
    let signal = json!({"ownerUserId": "alice", "signal": "KILL"});
    let (status, _) = api.post(&format!("/v1/workspaces/{id}/processes/{process_id}/signal"), &signal).await;
    assert_eq!(status, 200);
}

/// curl from the hub: the HTTP status and the body.
fn curl_from_hub(network: &Network, args: &[&str]) -> (u16, String) {
    let out = network
        .command_in(&network.hub(), "curl")
        .args(["-s", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.trim().parse().unwrap_or(0), body.to_owned())
}

/// The SSH target of each workspace is its worker's address, naming the
/// executor; a gateway gets through with the ticket the API gave it, and
/// with nothing else (and never to the executor calls of members).
async fn gateways_reach_executors_only_with_their_ticket(
    network: &Network,
    api_dir: &DataDir,
    api: &Server,
    ids: &[String],
    hosts: &[Host],
) {
    let gateway_token = std::fs::read_to_string(api_dir.path().join("gateway-token")).unwrap().trim().to_owned();
    let mut targets = Vec::new();
    for (id, host) in ids.iter().zip(hosts) {
        let answer = api
            .client
            .get(format!("{}/v1/workspaces/{id}/ssh-target", api.base))
            .header("x-sealant-gateway-token", &gateway_token)
            .header("x-sealant-principal-id", "alice")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let target: Value = answer.json().await.unwrap();
        let endpoint = target["runtime"]["endpoint"].as_str().unwrap().to_owned();
        let expected = format!(
            "https://{}:7421/gateway/v1/executors/{}",
            network.host_address(host.n),
            target["attemptId"].as_str().unwrap()
        );
        assert_eq!(endpoint, expected, "the executor's worker, naming the executor: {target}");
        targets.push((endpoint, target["gateway"].clone()));
    }
    let authority = api_dir.root().join("cluster-authority.pem");
    std::fs::write(&authority, targets[0].1["certificateAuthority"].as_str().unwrap()).unwrap();
    let authority = authority.display().to_string();
    let bearer = |ticket: &Value| format!("Authorization: Bearer {}", ticket.as_str().unwrap());
    for (i, (endpoint, gateway)) in targets.iter().enumerate() {
        let (status, body) =
            curl_from_hub(network, &["--cacert", &authority, "-H", &bearer(&gateway["ticket"]), endpoint]);
        assert_eq!(status, 200, "{body}");
        let reached: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((reached["workspaceId"].as_str(), reached["ready"].as_bool()), (Some(ids[i].as_str()), Some(true)));
        // No ticket, another executor's ticket, a ticket changed: refused.
        let (status, _) = curl_from_hub(network, &["--cacert", &authority, endpoint]);
        assert_eq!(status, 401);
        let other = &targets[1 - i].1["ticket"];
        let (status, _) = curl_from_hub(network, &["--cacert", &authority, "-H", &bearer(other), endpoint]);
        assert_eq!(status, 401);
        let forged = gateway["ticket"].as_str().unwrap().replacen("slgt1.7b", "slgt1.7c", 1);
        let (status, _) = curl_from_hub(
            network,
            &["--cacert", &authority, "-H", &format!("Authorization: Bearer {forged}"), endpoint],
        );
        assert_eq!(status, 401);
        // A ticket is no way into the members' executor calls.
        let calls = endpoint.replace(
            &format!("/gateway/v1/executors/{}", reached["runId"].as_str().unwrap()),
            "/internal/v1/executor-calls",
        );
        let call = json!({"runId": reached["runId"], "call": {"call": "exec", "request": {"argv": ["id"]}, "timeout_ms": 1000}}).to_string();
        let (status, body) = curl_from_hub(
            network,
            &[
                "--cacert",
                &authority,
                "-H",
                &bearer(&gateway["ticket"]),
                "-H",
                "content-type: application/json",
                "-d",
                &call,
                &calls,
            ],
        );
        assert_eq!(status, 401, "{body}");
        // Nor into the members' sessions.
        let sessions = endpoint.replace(
            &format!("/gateway/v1/executors/{}", reached["runId"].as_str().unwrap()),
            &format!("/internal/v1/executor-sessions/{}", reached["runId"].as_str().unwrap()),
        );
        let (status, body) = curl_from_hub(
            network,
            &[
                "--cacert",
                &authority,
                "-H",
                &bearer(&gateway["ticket"]),
                "-H",
                "connection: upgrade",
                "-H",
                "upgrade: sluice-session/1",
                &sessions,
            ],
        );
        assert_eq!(status, 401, "{body}");
    }
}

/// The host a workspace's current executor was placed on.
async fn host_of(api: &Server, id: &str) -> String {
    let (_, workspace) = api.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    let run_id = workspace["runtime"]["runId"].as_str().unwrap().to_owned();
    let (_, attempts) = api.get(&format!("/v1/workspaces/{id}/attempts?ownerUserId=alice")).await;
    let attempt = attempts["items"].as_array().unwrap().iter().find(|a| a["attemptId"] == run_id.as_str());
    attempt.and_then(|a| a["host"].as_str()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn executors_on_two_hosts_are_reached_through_their_workers_and_a_dead_host_loses_nothing() {
    let Some(mut network) = Network::new() else { return };
    let db = HubPostgres::start(&network);
    let Some(objects) = HubObjects::start(&network) else {
        sluice_tests::present("s3s-fs (the multi-host object store)", false);
        return;
    };
    let api_dir = DataDir::new();
    let seal_key = api_dir.root().join("seal-key");
    std::fs::write(&seal_key, format!("{}\n", "5a".repeat(32))).unwrap();
    let seal_key = seal_key.display().to_string();
    let hosts: Vec<Host> = (0..2)
        .map(|_| {
            let (n, namespace) = network.add_host();
            Host { n, namespace, dir: DataDir::new() }
        })
        .collect();
    let broker_port = sluice_tests::free_port();
    let preview_port = sluice_tests::free_port();
    let server = Server::start_with(
        &api_dir.path(),
        objects
            .options(Options::command("api"), &network.hub_address(0))
            .database(Some(&db.url(&network.hub_address(0))))
            .netns(&network.hub(), &network.hub_address(0))
            .arg("--seal-key-file")
            .arg(&seal_key)
            .arg("--broker-listen")
            .arg(format!("0.0.0.0:{broker_port}"))
            .arg("--preview-listen")
            .arg(format!("0.0.0.0:{preview_port}"))
            .arg("--preview-domain")
            .arg("preview.test")
            .arg("--preview-plaintext")
            // The executors' sockets are files on their hosts: the API
            // sees none of them.
            .hide(hosts[0].dir.root())
            .hide(hosts[1].dir.root()),
    )
    .await;
    let (client, base) = broker_client(&api_dir, &network.hub_address(0), broker_port);
    let broker = Broker { server, base, client };
    let api = &broker.server;
    let mut workers: Vec<Option<Server>> = Vec::new();
    for host in &hosts {
        let options = worker(&network, &objects, &db, &seal_key, host);
        workers.push(Some(Server::start_with(&host.dir.path(), options).await));
    }
    let joined = wait_for_workers(api, 2).await;
    for (worker, host) in joined["items"].as_array().unwrap().iter().zip(&hosts) {
        let advertised = format!("https://{}:7421", network.host_address(host.n));
        assert_eq!(worker["internalUrl"], advertised.as_str(), "{joined}");
    }

    // Two capture-sourced workspaces: one on each host (least loaded first).
    let mut ids = Vec::new();
    let mut sessions = Vec::new();
    for launch in ["one", "two"] {
        let session = session(api, None).await;
        let (status, created) = api.post("/v1/workspaces", &workspace_body(&session, launch, None)).await;
        assert_eq!(status, 202, "{created}");
        let id = created["workspaceId"].as_str().unwrap().to_owned();
        let ready = api.wait_for("alice", &id, WITHIN, |w| w["status"] == "ready" || w["status"] == "failed").await;
        assert_eq!(ready["status"], "ready", "{ready}\n{}", workers[0].as_ref().unwrap().output());
        ids.push(id);
        sessions.push(session);
    }
    let placed = [host_of(api, &ids[0]).await, host_of(api, &ids[1]).await];
    assert_eq!(placed, ["host-1", "host-2"], "one executor on each host");
    for id in &ids {
        workspace_calls_reach_the_executors_host(api, id).await;
    }
    gateways_reach_executors_only_with_their_ticket(&network, &api_dir, api, &ids, &hosts).await;
    for host in &hosts {
        let sockets = format!("/proc/{}/root{}", api.pid(), host.dir.executors().display());
        assert!(!host.dir.live_local_executors().is_empty(), "host {} runs executors", host.n);
        assert!(std::fs::read_dir(&sockets).is_err(), "the API cannot see {sockets}");
    }

    // Two broker workspaces, one more on each host; every broker call into
    // them is made on their host.
    let store = ["--database-url", &db.url(&network.hub_address(0)), "--seal-key-file", &seal_key];
    let token =
        sluice_tests::broker::operate_with(&["token", "issue", "--instance", "fleet"], &store).trim().to_owned();
    for tag in ["b1", "b2"] {
        let acquired = broker
            .client
            .post(format!("{}/v1/workspaces", broker.base))
            .bearer_auth(&token)
            .header("idempotency-key", tag)
            .json(&json!({"label": tag, "egress": {"allowed_domains": []}}))
            .send()
            .await
            .unwrap();
        let acquired = Answer::of(acquired).await;
        assert_eq!(acquired.status, 201, "{acquired:?}");
        let id = acquired.body["workspace_id"].as_str().unwrap().to_owned();
        let running = wait_for(Duration::from_secs(90), || async {
            let state = broker.get(&format!("/v1/workspaces/{id}"), &token).await.body;
            (state["state"] == "running").then_some(())
        })
        .await;
        if running.is_none() {
            let state = broker.get(&format!("/v1/workspaces/{id}"), &token).await.body;
            let logs: Vec<String> = workers.iter().flatten().map(|w| w.output()).collect();
            let tail: Vec<&str> =
                logs.iter().flat_map(|l| l.lines().filter(|l| l.contains("WARN") || l.contains("ERROR"))).collect();
            panic!("{state}\n{}", tail.join("\n"));
        }
        broker_calls(&broker, &token, &id, tag).await;
    }
    let loads: Vec<i64> =
        fleet(api).await["hosts"].as_array().unwrap().iter().map(|h| h["load"].as_i64().unwrap()).collect();
    assert_eq!(loads, [2, 2], "the broker's workspaces went one to each host");

    // Every call is routed to the executor's host: exec (a job of its
    // host's worker), capture status, flush and re-plan, bind (the API's
    // own calls, through the worker's internal API).
    for (i, id) in ids.iter().enumerate() {
        let written =
            sh_ok(api, id, &format!("mkdir -p /workspace/w && echo from-{i} > /workspace/w/f && cat /workspace/w/f"))
                .await;
        assert_eq!(written.trim(), format!("from-{i}"));
        let (status, capture) = api.get(&format!("/v1/workspaces/{id}/capture?ownerUserId=alice")).await;
        assert_eq!(status, 200, "{capture}");
        let (status, flushed) = api
            .post(&format!("/v1/workspaces/{id}/capture/flush"), &json!({"ownerUserId": "alice", "kind": "suspend"}))
            .await;
        assert_eq!(status, 200, "{flushed}");
        // The API reads the capture back out of the object store itself.
        let head = flushed["headN"].as_u64().expect("the flush shipped a capture");
        let file = format!(
            "{}/v1/capture-sessions/{}/captures/{head}/files?ownerUserId=alice&path=tree/w/f",
            api.base, sessions[i].0
        );
        let read = api.client.get(file).bearer_auth(&api.token).send().await.unwrap();
        assert_eq!(read.status(), 200);
        assert_eq!(read.bytes().await.unwrap().as_ref(), format!("from-{i}\n").as_bytes());
        let (status, replanned) =
            api.post(&format!("/v1/workspaces/{id}/capture/replan"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 200, "{replanned}");
        let (status, bound) =
            api.post(&format!("/v1/workspaces/{id}/bind"), &json!({"ownerUserId": "alice", "subpath": "w"})).await;
        assert_eq!(status, 200, "{bound}");
        let (status, unbound) =
            api.post(&format!("/v1/workspaces/{id}/bind"), &json!({"ownerUserId": "alice", "subpath": ""})).await;
        assert_eq!(status, 200, "{unbound}");
    }

    // A preview of a port in each executor, served by the API through the
    // executor's worker.
    for (i, id) in ids.iter().enumerate() {
        let serve =
            ["timeout", "8", "python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "-d", "/workspace/w"];
        let (status, run) = api
            .post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": [{"argv": serve}]}))
            .await;
        assert_eq!(status, 202, "{run}");
        let (status, grant) = api
            .post(
                &format!("/v1/workspaces/{id}/previews"),
                &json!({"ownerUserId": "alice", "port": 8000, "public": true}),
            )
            .await;
        assert_eq!(status, 201, "{grant}");
        let host = format!("Host: 8000-{id}.preview.test");
        let url = format!("http://{}:{preview_port}/f", network.hub_address(0));
        let read = || std::future::ready(curl_from_hub(&network, &["-H", &host, &url]));
        let answer = read_until(Duration::from_secs(6), read, |a| a.0 == 200).await.unwrap_or_else(|last| last);
        assert_eq!(answer, (200, format!("from-{i}\n")), "through host-{}'s worker", i + 1);
    }

    // Host 1's worker is killed outright: calls into its executor answer
    // 503 naming the host, never hang.
    workers[0].take().unwrap().kill();
    let started = tokio::time::Instant::now();
    let response = api
        .client
        .get(format!("{}/v1/workspaces/{}/capture?ownerUserId=alice", api.base, ids[0]))
        .bearer_auth(&api.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("host-1"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(20), "answered in {:?}", started.elapsed());
    // Host 2 goes on.
    assert_eq!(sh_ok(api, &ids[1], "cat /workspace/w/f").await.trim(), "from-1");

    // After the grace, its executor is retained for the host, not removed.
    let retained = api.wait_for("alice", &ids[0], WITHIN, |w| w["status"] == "retained").await;
    assert_eq!(retained["captureDrain"]["retained"]["reason"], "host-unreachable", "{retained}");
    let fleet_now = fleet(api).await;
    let host_one = fleet_now["hosts"].as_array().unwrap().iter().find(|h| h["name"] == "host-1").unwrap().clone();
    assert_eq!(host_one["state"], "unreachable", "{fleet_now}");
    assert!(!hosts[0].dir.live_local_executors().is_empty(), "its executor still runs on its host");

    // Started again, the worker adopts it: ready, and its files are there.
    let options = worker(&network, &objects, &db, &seal_key, &hosts[0]);
    workers[0] = Some(Server::start_with(&hosts[0].dir.path(), options).await);
    let ready = api.wait_for("alice", &ids[0], WITHIN, |w| w["status"] == "ready").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(sh_ok(api, &ids[0], "cat /workspace/w/f").await.trim(), "from-0");

    // Host 2's workspace was never touched by any of it.
    let (_, untouched) = api.get(&format!("/v1/workspaces/{}?ownerUserId=alice", ids[1])).await;
    assert_eq!(untouched["status"], "ready", "{untouched}");
    let (_, events) = api.get(&format!("/v1/workspaces/{}/events?ownerUserId=alice&limit=500", ids[1])).await;
    let failed = events["items"].as_array().unwrap().iter().filter(|e| e["type"] == "runtime.failed").count();
    assert_eq!(failed, 0, "{events}");

    // A stop drains each as on one host: saved, then removed; the next
    // executor of each session holds its files.
    let (status, stopped) =
        api.post(&format!("/v1/workspaces/{}/stop", ids[0]), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{stopped}");
    let gone = api.wait_for("alice", &ids[0], WITHIN, |w| w["status"] == "stopped").await;
    assert_eq!(gone["captureDrain"]["state"], "stopped", "{gone}");
    let (status, created) = api.post("/v1/workspaces", &workspace_body(&sessions[0], "one-again", None)).await;
    assert_eq!(status, 202, "{created}");
    let next = created["workspaceId"].as_str().unwrap().to_owned();
    api.wait_for("alice", &next, WITHIN, |w| w["status"] == "ready").await;
    assert_eq!(sh_ok(api, &next, "cat /workspace/w/f").await.trim(), "from-0");

    // A workspace asleep wakes wherever there is room: its host cordoned,
    // the exec that wakes it is served on the other, from the session's head.
    let (status, slept) = api.post(&format!("/v1/workspaces/{}/sleep", ids[1]), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{slept}");
    let asleep = api.wait_for("alice", &ids[1], WITHIN, |w| w["sleeping"].is_object()).await;
    assert_eq!(asleep["captureDrain"]["state"], "stopped", "{asleep}");
    let (status, cordoned) = api.post("/v1/hosts/host-2/cordon", &json!({"by": "ops"})).await;
    assert!((200..300).contains(&status), "{cordoned}");
    assert_eq!(sh_ok(api, &ids[1], "cat /workspace/w/f").await.trim(), "from-1", "woken with its files");
    assert_eq!(host_of(api, &ids[1]).await, "host-1", "woken on the host with room");

    for worker in workers.into_iter().flatten() {
        worker.stop();
    }
    broker.server.stop();
    drop(hosts);
}
