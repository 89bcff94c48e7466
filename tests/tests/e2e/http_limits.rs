//! The API listener's limits against real sockets: a client that sends its
//! headers too slowly, or nothing at all, is dropped, others are still
//! served, and connections past the limit wait instead of being served.

use std::time::Duration;

use sluice_store::testing;
use sluice_tests::{App, holds_for, pace};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn app() -> App {
    let db = testing::databases().await.remove(0);
    App::start_with(db, |config| {
        config.http.header_read_timeout = Duration::from_millis(500);
        config.http.idle_timeout = Duration::from_millis(1500);
        config.http.max_connections = 4;
    })
    .await
}

fn address(app: &App) -> String {
    app.base.trim_start_matches("http://").to_owned()
}

/// Waits for the server to close `stream`; returns whether it did within `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A 408 or similar may come first; the close is what counts.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn a_slow_header_client_is_dropped_and_others_are_still_answered() {
    let app = app().await;
    let mut slow = TcpStream::connect(address(&app)).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: sluice\r\nX-Slow: ").await.unwrap();
    // Trickling a byte now and then does not extend the header deadline.
    let trickle = async {
        for _ in 0..3 {
            pace(Duration::from_millis(100)).await;
            let _ = slow.write_all(b"a").await;
        }
    };
    trickle.await;
    let (status, _) = app.get("/healthz").await;
    assert_eq!(status, 200, "the server answers others meanwhile");
    assert!(closed_within(&mut slow, Duration::from_secs(5)).await, "the slow client was dropped");
    let (status, _) = app.get("/healthz").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn idle_connections_are_closed_and_the_limit_makes_others_wait() {
    let app = app().await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(address(&app)).await.unwrap());
    }
    // All four slots are held: a fifth request waits in the backlog until
    // the idle ones are closed, then it is served.
    let started = tokio::time::Instant::now();
    let request = tokio::spawn({
        let url = app.url("/healthz");
        async move { reqwest::get(url).await.map(|r| r.status().as_u16()) }
    });
    holds_for("a connection past the limit is not served while the slots are held", Duration::from_millis(300), || {
        let waiting = !request.is_finished();
        async move { waiting }
    })
    .await;
    for stream in &mut idle {
        assert!(closed_within(stream, Duration::from_secs(10)).await, "an idle connection was closed");
    }
    assert_eq!(request.await.unwrap().unwrap(), 200, "served once a slot was free");
    // A connection that never sends a request head is dropped at the
    // header deadline (500 ms here), before the idle timeout.
    assert!(started.elapsed() >= Duration::from_millis(400), "not before a slot was freed");
}

#[tokio::test]
async fn a_body_past_the_limit_is_refused_and_nothing_is_written() {
    let db = testing::databases().await.remove(0);
    let app = App::start_with(db, |config| config.http.max_body_bytes = 4096).await;
    let mut body = sluice_tests::create_body("alice");
    body["spec"]["padding"] = serde_json::Value::String("x".repeat(8192));
    let (status, answer) = app.post("/v1/workspaces", &body).await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["_tag"], "WorkspacePayloadTooLargeError", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("larger than this server accepts"), "{answer}");
    let (status, list) = app.get("/v1/workspaces?ownerUserId=alice").await;
    assert_eq!(status, 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{list}");
}

/// Reads one HTTP/1.1 response (head and a `content-length` body) from
/// `stream`: its status and body.
async fn read_response(stream: &mut TcpStream) -> (u16, serde_json::Value) {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf))
            .await
            .expect("the answer came")
            .expect("the connection was not reset");
        assert!(n > 0, "the connection closed before an answer: {}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&received[..head_end]).to_ascii_lowercase();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("a content-length");
    while received.len() < head_end + length {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the body was cut short");
        received.extend_from_slice(&buf[..n]);
    }
    (status, serde_json::from_slice(&received[head_end..head_end + length]).unwrap())
}

/// A client that sends a whole 5 MB exec body before reading anything, as
/// simple HTTP clients do, reads a 413 (not a reset), and the connection
/// still serves its next request; one refused before its body was read
/// (no token) reads its 401 the same way.
#[tokio::test]
async fn a_client_uploading_a_body_past_the_limit_reads_the_413() {
    let app = App::start(testing::databases().await.remove(0)).await;
    let workspace = app.create("alice").await;
    let events = format!("/v1/workspaces/{workspace}/events?ownerUserId=alice");
    let (_, before) = app.get(&events).await;
    let oversized = format!(r#"{{"command":["true"],"stdin":"{}"}}"#, "x".repeat(5_000_000));
    for (authorization, expected) in [(format!("Bearer {}", sluice_tests::TOKEN), 413), (String::new(), 401)] {
        let mut stream = TcpStream::connect(address(&app)).await.unwrap();
        let mut request = format!(
            "POST /v1/workspaces/{workspace}/exec HTTP/1.1\r\nhost: sluice\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            oversized.len()
        );
        if !authorization.is_empty() {
            request.push_str(&format!("authorization: {authorization}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        tokio::time::timeout(Duration::from_secs(20), stream.write_all(oversized.as_bytes()))
            .await
            .expect("the body was taken in")
            .expect("the upload was not reset");
        let (status, answer) = read_response(&mut stream).await;
        assert_eq!(status, expected, "{answer}");
        if expected == 413 {
            assert!(answer["message"].as_str().unwrap().contains("--max-body-bytes"), "{answer}");
        }
        // The body was read to its end: the connection is still good.
        stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: sluice\r\n\r\n").await.unwrap();
        let (status, health) = read_response(&mut stream).await;
        assert_eq!(status, 200, "{health}");
    }
    let (_, after) = app.get(&events).await;
    assert_eq!(after["items"], before["items"], "nothing was written for a refused exec");
    assert!(before["items"].as_array().is_some_and(|e| !e.is_empty()), "{before}");
}
