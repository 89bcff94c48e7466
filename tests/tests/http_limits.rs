//! The API listener's limits against real sockets: a client that sends its
//! headers too slowly, or nothing at all, is dropped, others are still
//! served, and connections past the limit wait instead of being served.

use std::time::Duration;

use sluice_store::testing;
use sluice_tests::App;
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
            tokio::time::sleep(Duration::from_millis(100)).await;
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
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!request.is_finished(), "a connection past the limit is not served while the slots are held");
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
    assert_eq!(status, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("larger than this server accepts"), "{answer}");
    let (status, list) = app.get("/v1/workspaces?ownerUserId=alice").await;
    assert_eq!(status, 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{list}");
}
