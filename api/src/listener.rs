//! The API's accept loop: HTTP/1.1 through hyper with the limits a public
//! listener needs and `axum::serve` does not set. A client gets
//! `header_read_timeout` to send a request's head, a connection with no
//! traffic for `idle_timeout` is closed (after the response in flight, if
//! any), at most `max_connections` are served at once (more wait in the
//! kernel's backlog), and bodies are capped by the router. A body that a
//! handler refused before reading it all is still taken in (within a
//! bound) so that its client reads the answer instead of a reset.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, watch};

/// Limits on the API listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// How long a client may take to send a request's line and headers.
    pub header_read_timeout: Duration,
    /// How long a connection may go without a byte either way.
    pub idle_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_body_bytes: 1 << 20,
        }
    }
}

/// A stream that remembers when it last moved a byte.
struct Tracked {
    stream: TcpStream,
    started: tokio::time::Instant,
    last_activity_ms: Arc<AtomicU64>,
}

impl Tracked {
    fn touch(&self) {
        self.last_activity_ms.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

impl AsyncRead for Tracked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops
/// accepting, lets every connection finish its request in flight, and
/// returns once all have closed.
pub async fn serve(
    app: Router,
    listener: tokio::net::TcpListener,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_over(app, listener, limits, None, shutdown).await
}

/// Whether the client of a TLS connection presented a certificate its
/// acceptor verified (in every request's extensions over TLS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientCertified(pub bool);

/// As [`serve`], over TLS when `tls` is given: a connection that does not
/// complete its handshake within the header read timeout (plaintext HTTP
/// among them) is closed without an answer.
pub async fn serve_over(
    app: Router,
    listener: tokio::net::TcpListener,
    limits: HttpLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let in_flight = Arc::new(());
    let app = {
        let in_flight = in_flight.clone();
        app.layer(axum::middleware::from_fn(move |request, next| run_to_completion(in_flight.clone(), request, next)))
    };
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors and the like: pause rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let limits = limits.clone();
        let stopping = stopping.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = permit;
            let last_activity_ms = Arc::new(AtomicU64::new(0));
            let started = tokio::time::Instant::now();
            let io = Tracked { stream, started, last_activity_ms: last_activity_ms.clone() };
            let activity = Activity { started, last_activity_ms };
            match tls {
                None => {
                    drive(TokioIo::new(io), TowerToHyperService::new(app), &limits, stopping, activity, false).await
                }
                Some(acceptor) => match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(io)).await {
                    Ok(Ok(stream)) => {
                        // A certificate the acceptor's verifier let through.
                        let certified = stream.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                        // HTTP/2 only where the acceptor offered it (ALPN) and the client chose it.
                        let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                        let service = TowerToHyperService::new(app.layer(axum::Extension(ClientCertified(certified))));
                        drive(TokioIo::new(stream), service, &limits, stopping, activity, http2).await
                    }
                    Ok(Err(e)) => tracing::debug!(error = %e, "a TLS handshake failed"),
                    Err(_) => tracing::debug!("a TLS handshake timed out"),
                },
            }
        });
    }
    let _ = stop.send(true);
    // The router holds a count of its own: only requests' counts are waited for.
    drop(app);
    // Every connection holds a slot until it has closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    // And every request whose client left before its answer has ended
    // (within a bound: a request stuck on a dependency does not hold the
    // shutdown for ever).
    let until = tokio::time::Instant::now() + limits.idle_timeout;
    while Arc::strong_count(&in_flight) > 1 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Runs each request to its end on a task of its own. A client that goes
/// away (or a connection dropped on a timeout) abandons only its wait for
/// the answer, never the work under way: a store transaction is never cut
/// off between its statements and left open on a pooled connection.
async fn run_to_completion(
    in_flight: Arc<()>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let request = drained_when_dropped(request);
    let task = tokio::spawn(async move {
        let _counted = in_flight;
        next.run(request).await
    });
    match task.await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "a request's task ended without an answer");
            crate::error::ApiError::Internal(Box::new(e)).into_response()
        }
    }
}

/// How much of a body nobody read is still taken in, and for how long.
const DRAIN_AT_MOST: u64 = 64 << 20;
const DRAIN_WITHIN: Duration = Duration::from_secs(10);

/// An HTTP/1.1 request whose body, if dropped before its end, is read to
/// the end and discarded (see [`DrainRest`]). HTTP/2 ends a stream on its
/// own without touching the connection.
fn drained_when_dropped(request: axum::extract::Request) -> axum::extract::Request {
    if request.version() >= axum::http::Version::HTTP_2 {
        return request;
    }
    let (parts, body) = request.into_parts();
    let expects_continue = parts
        .headers
        .get(axum::http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let body = DrainRest { inner: Some(body), ended: false, polled: false, expects_continue };
    axum::extract::Request::from_parts(parts, axum::body::Body::new(body))
}

/// A request body that, dropped before its end (a body over the limit, a
/// refusal before the body was read), hands the rest to a task that reads
/// and discards it, up to [`DRAIN_AT_MOST`] within [`DRAIN_WITHIN`]. A
/// socket closed with unread bytes in it is reset, and a client still
/// uploading would lose the answer with it: a 413 it never reads.
struct DrainRest {
    inner: Option<axum::body::Body>,
    ended: bool,
    polled: bool,
    /// A client waiting for `100 Continue` has sent nothing yet: if the
    /// body was never asked for, it gets the answer without sending it.
    expects_continue: bool,
}

impl hyper::body::Body for DrainRest {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, axum::Error>>> {
        self.polled = true;
        let Some(inner) = self.inner.as_mut() else { return Poll::Ready(None) };
        let polled = Pin::new(inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.as_ref().map(|b| b.size_hint()).unwrap_or_default()
    }
}

impl Drop for DrainRest {
    fn drop(&mut self) {
        use http_body_util::BodyExt;
        use hyper::body::Body;
        let Some(mut rest) = self.inner.take() else { return };
        if self.ended || rest.is_end_stream() || (self.expects_continue && !self.polled) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            let mut taken = 0u64;
            let _ = tokio::time::timeout(DRAIN_WITHIN, async {
                while let Some(Ok(frame)) = rest.frame().await {
                    taken += frame.data_ref().map_or(0, |d| d.len() as u64);
                    if taken > DRAIN_AT_MOST {
                        break;
                    }
                }
            })
            .await;
        });
    }
}

/// When a connection started, and when it last moved a byte.
struct Activity {
    started: tokio::time::Instant,
    last_activity_ms: Arc<AtomicU64>,
}

/// A connection being served (HTTP/1.1 or HTTP/2) that can be asked to
/// finish what it has in flight and close.
trait Served: Future<Output = Result<(), hyper::Error>> {
    fn close_gracefully(self: Pin<&mut Self>);
}

impl<I, S> Served for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S> Served for hyper::server::conn::http2::Connection<I, S, hyper_util::rt::TokioExecutor>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Future: Send + 'static,
    S::ResBody: Send + 'static,
    <S::ResBody as hyper::body::Body>::Data: Send,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Serves one connection until it ends, it idles out, or the server
/// stops: HTTP/2 where the TLS handshake agreed on it, HTTP/1.1 otherwise.
async fn drive<I>(
    io: I,
    service: TowerToHyperService<Router>,
    limits: &HttpLimits,
    stopping: watch::Receiver<bool>,
    activity: Activity,
    http2: bool,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    if http2 {
        let connection = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(100)
            .serve_connection(io, service);
        supervise(connection, limits, stopping, activity).await
    } else {
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            // An upgraded connection (a gateway's session) leaves this loop
            // and its slot: its handler bounds it from then on.
            .serve_connection(io, service)
            .with_upgrades();
        supervise(connection, limits, stopping, activity).await
    }
}

/// Runs a connection to its end, closing it once it idles out or the
/// server stops.
async fn supervise(
    connection: impl Served,
    limits: &HttpLimits,
    mut stopping: watch::Receiver<bool>,
    activity: Activity,
) {
    let Activity { started, last_activity_ms } = activity;
    tokio::pin!(connection);
    let check_every = (limits.idle_timeout / 4).max(Duration::from_millis(10));
    let mut idle_check = tokio::time::interval(check_every);
    let mut closing = false;
    // A closing connection whose client will not take its last
    // response is dropped once this runs out.
    let drop_at = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drop_at);
    loop {
        tokio::select! {
            _ = &mut drop_at, if closing => break,
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            changed = stopping.changed(), if !closing => {
                if changed.is_err() || *stopping.borrow() {
                    closing = true;
                    drop_at.as_mut().reset(tokio::time::Instant::now() + limits.idle_timeout);
                    connection.as_mut().close_gracefully();
                }
            }
            _ = idle_check.tick(), if !closing => {
                let idle_ms = started.elapsed().as_millis() as u64 - last_activity_ms.load(Ordering::Relaxed);
                if idle_ms >= limits.idle_timeout.as_millis() as u64 {
                    closing = true;
                    drop_at.as_mut().reset(tokio::time::Instant::now() + limits.idle_timeout);
                    connection.as_mut().close_gracefully();
                }
            }
        }
    }
}
