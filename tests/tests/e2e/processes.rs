//! Processes that keep running, against a real `serve`: a web server
//! started through the API keeps serving after the call and the execs that
//! followed it end, is reached through a preview URL (curl), and serves on
//! after the server itself is restarted; its output is read from a position
//! and followed; input reaches a process; a signal ends one.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server, SseReader};

use crate::previews::DOMAIN;

const WITHIN: Duration = Duration::from_secs(60);

/// curl through the preview listener on loopback's `listen`, trusting the
/// server's certificate: (HTTP status, body).
fn through_preview(dir: &DataDir, listen: u16, url: &str) -> (u16, String) {
    let ca = dir.path().join("preview-tls").join(DOMAIN).join("cert.pem");
    let (status, _, body) = crate::previews::curl(listen, &ca, &dir.root().join("jar"), url, &[]);
    (status, body)
}

async fn exec(server: &Server, id: &str, script: &str) -> Value {
    let body = json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", script]}]});
    let (status, run) = server.post(&format!("/v1/workspaces/{id}/exec"), &body).await;
    assert_eq!(status, 202, "{run}");
    server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await
}

async fn listed(server: &Server, id: &str, process: &str) -> Value {
    let (status, list) = server.get(&format!("/v1/workspaces/{id}/processes?ownerUserId=alice")).await;
    assert_eq!(status, 200, "{list}");
    list["items"].as_array().unwrap().iter().find(|p| p["processId"] == process).cloned().unwrap_or(Value::Null)
}

fn output(server: &Server, id: &str, process: &str, follow: bool, after: Option<&str>) -> reqwest::RequestBuilder {
    let url =
        format!("{}/v1/workspaces/{id}/processes/{process}/output?ownerUserId=alice&follow={follow}", server.base);
    let mut request = server.client.get(url).bearer_auth(&server.token);
    if let Some(after) = after {
        request = request.header("last-event-id", after);
    }
    request
}

#[tokio::test]
async fn a_started_process_keeps_running_past_its_call_its_execs_and_a_server_restart() {
    let dir = DataDir::new();
    let listen = sluice_tests::free_port();
    let options = || {
        let preview = format!("127.0.0.1:{listen}");
        Options::serve().args(["--runtime", "local", "--preview-listen", &preview, "--preview-domain", DOMAIN])
    };
    let server = Server::start_with(&dir.path(), options()).await;
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"]}, "waitFor": "ready",
    });
    let (_, created) = server.post("/v1/workspaces", &body).await;
    let id = created["workspaceId"].as_str().unwrap().to_owned();

    let port = sluice_tests::free_port();
    let start = json!({"ownerUserId": "alice", "name": "web",
        "argv": ["python3", "-u", "-m", "http.server", port.to_string(), "--bind", "127.0.0.1"]});
    let (status, web) = server.post(&format!("/v1/workspaces/{id}/processes"), &start).await;
    assert_eq!((status, web["state"].as_str()), (201, Some("running")), "{web}");
    let web_id = web["processId"].as_str().unwrap().to_owned();

    // An exec after the call reaches it; the exec ends, the server does not.
    let fetch = format!("busybox wget -qO- http://127.0.0.1:{port}/ 2>/dev/null || true");
    let served = sluice_tests::read_until(
        WITHIN,
        || exec(&server, &id, &fetch),
        |ran| ran["commands"][0]["stdout"].as_str().is_some_and(|o| o.contains("Directory listing")),
    )
    .await;
    assert!(served.is_ok(), "the server answered an exec: {served:?}");
    assert_eq!(listed(&server, &id, &web_id).await["state"], "running");

    // Its port through a preview URL, from outside the workspace.
    let grant = json!({"ownerUserId": "alice", "port": port, "public": true});
    let (status, preview) = server.post(&format!("/v1/workspaces/{id}/previews"), &grant).await;
    assert_eq!(status, 201, "{preview}");
    let url = preview["url"].as_str().unwrap().to_owned();
    let (status, page) = through_preview(&dir, listen, &url);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Directory listing"), "{page}");

    // Its output, read whole, then followed from where that left off.
    let (status, kept) = server
        .read_stream(
            &format!("/v1/workspaces/{id}/processes/{web_id}/output?ownerUserId=alice"),
            None,
            100,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(status, 200);
    let last = kept.iter().rev().find(|e| !e.id.is_empty()).expect("output so far");
    assert!(
        kept.iter().any(|e| e.event == "stderr" && e.data["text"].as_str().unwrap().contains("GET / HTTP")),
        "{kept:?}"
    );
    let mut following = SseReader::new(output(&server, &id, &web_id, true, Some(&last.id)).send().await.unwrap());
    exec(&server, &id, &format!("busybox wget -qO- http://127.0.0.1:{port}/followed 2>/dev/null || true")).await;
    let mut came = Vec::new();
    while let Some(next) = following.next(Duration::from_secs(10)).await {
        came.push(next.data["text"].as_str().unwrap().to_owned());
        if came.last().unwrap().contains("GET /followed") {
            break;
        }
    }
    assert!(came.last().is_some_and(|l| l.contains("GET /followed")), "the next lines, as they came: {came:?}");
    assert!(!came.iter().any(|l| l.contains("GET / HTTP")), "only what came after the position: {came:?}");
    drop(following);

    // The server restarts; the process was the daemon's, and runs on.
    drop(server.kill());
    let server = Server::start_with(&dir.path(), options()).await;
    server.wait_for("alice", &id, WITHIN, |w| w["status"] == "ready").await;
    assert_eq!(listed(&server, &id, &web_id).await["state"], "running", "listed after the restart");
    let again = exec(&server, &id, &fetch).await;
    assert!(again["commands"][0]["stdout"].as_str().unwrap().contains("Directory listing"), "{again}");
    let (status, page) = through_preview(&dir, listen, &url);
    assert!(status == 200 && page.contains("Directory listing"), "the preview after the restart: {status} {page}");

    // Input reaches a process; a signal ends one.
    let reader = json!({"ownerUserId": "alice", "argv": ["sh", "-c", "read line; echo \"got $line\""]});
    let (_, reader) = server.post(&format!("/v1/workspaces/{id}/processes"), &reader).await;
    let reader_id = reader["processId"].as_str().unwrap();
    let url = format!("{}/v1/workspaces/{id}/processes/{reader_id}/stdin?ownerUserId=alice&eof=true", server.base);
    let fed = server.client.post(url).bearer_auth(&server.token).body("hello\n").send().await.unwrap();
    assert_eq!(fed.status(), 204);
    let mut read_back = SseReader::new(output(&server, &id, reader_id, true, None).send().await.unwrap());
    let (mut text, mut ended) = (String::new(), Value::Null);
    while let Some(event) = read_back.next(Duration::from_secs(10)).await {
        match event.event.as_str() {
            "stdout" => text.push_str(event.data["text"].as_str().unwrap()),
            "ended" => ended = event.data,
            _ => {}
        }
    }
    assert_eq!(text, "got hello\n");
    assert_eq!((ended["state"].as_str(), ended["exitCode"].as_i64()), (Some("exited"), Some(0)), "{ended}");

    let signal = json!({"ownerUserId": "alice", "signal": "TERM"});
    let (status, _) = server.post(&format!("/v1/workspaces/{id}/processes/{web_id}/signal"), &signal).await;
    assert_eq!(status, 200);
    let ended = sluice_tests::read_until(WITHIN, || listed(&server, &id, &web_id), |p| p["state"] != "running").await;
    let ended = ended.expect("the signal ended it");
    assert_eq!((ended["state"].as_str(), ended["signal"].as_str()), (Some("signalled"), Some("TERM")), "{ended}");
    let (status, unknown) = server.post(&format!("/v1/workspaces/{id}/processes/proc_nope/signal"), &signal).await;
    assert_eq!((status, unknown["_tag"].as_str()), (404, Some("ProcessNotFoundError")));
    server.stop();
}
