//! The watch stream: the control plane holds one open on each ready
//! executor rather than asking it on a timer. Its head goes out at once and
//! then nothing does (an idle executor costs one open socket) until the
//! daemon begins to end, when the stream says so and closes. A daemon that
//! dies closes it too: either way the control plane looks at once.

use std::convert::Infallible;
use std::sync::LazyLock;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// Set once, when the daemon begins to end.
static ENDING: LazyLock<tokio::sync::watch::Sender<bool>> = LazyLock::new(|| tokio::sync::watch::channel(false).0);

/// Tells every open watch stream that the daemon is ending, and closes them
/// (so a graceful stop does not wait on them).
pub fn begin_ending() {
    ENDING.send_replace(true);
}

pub async fn watch() -> Response {
    let mut ending = ENDING.subscribe();
    let said = futures::stream::once(async move {
        let _ = ending.wait_for(|ending| *ending).await;
        Ok::<_, Infallible>(Bytes::from_static(sluice_protocol::WATCH_ENDING.as_bytes()))
    });
    ([(axum::http::header::CONTENT_TYPE, "text/plain")], Body::from_stream(said)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_stream_says_ending_and_closes_once_the_daemon_ends() {
        let response = watch().await;
        assert_eq!(response.status(), axum::http::StatusCode::OK);
        let mut body = response.into_body();
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), body.frame()).await;
        assert!(early.is_err(), "the stream stays quiet while the daemon serves");
        begin_ending();
        let frame = body.frame().await.expect("a frame").expect("no error");
        assert_eq!(frame.into_data().unwrap(), sluice_protocol::WATCH_ENDING.as_bytes());
        assert!(body.frame().await.is_none(), "and then it ends");
        // A watch opened after the end closes at once.
        let late = watch().await.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(late, sluice_protocol::WATCH_ENDING.as_bytes());
    }
}
