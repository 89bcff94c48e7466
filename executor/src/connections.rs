//! Kept connections to daemons' control sockets: one HTTP/1.1 client for
//! every daemon this process talks to, holding a few idle connections per
//! socket for a little while, so a call does not open (and a daemon does
//! not accept) a connection of its own. A kept connection a daemon closed
//! is noticed before a request goes on it, and the request opens another.

use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::Full;
use hyper::Uri;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// How long an idle connection is kept: long enough for a burst of calls,
/// short enough that an idle executor holds no connection of this kind.
const IDLE_FOR: Duration = Duration::from_secs(10);
/// The most idle connections kept per socket.
const IDLE_PER_SOCKET: usize = 4;

pub(crate) static CLIENT: LazyLock<Client<UnixConnector, Full<Bytes>>> = LazyLock::new(|| {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(IDLE_FOR)
        .pool_max_idle_per_host(IDLE_PER_SOCKET)
        .build(UnixConnector)
});

/// The URI of `path_and_query` on the daemon at `socket`: the socket's
/// path, hex-encoded, is the host (so connections are kept per socket).
pub(crate) fn uri(socket: &str, path_and_query: &str) -> Result<Uri, hyper::http::Error> {
    let host: String = socket.bytes().map(|b| format!("{b:02x}")).collect();
    Uri::builder().scheme("http").authority(host).path_and_query(path_and_query).build()
}

fn socket_of(uri: &Uri) -> std::io::Result<String> {
    let bad = || std::io::Error::other("not a daemon socket's URI");
    let host = uri.host().ok_or_else(bad)?;
    let bytes = (0..host.len())
        .step_by(2)
        .map(|i| host.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    String::from_utf8(bytes).map_err(|_| bad())
}

/// Opens connections to the socket a URI names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UnixConnector;

impl tower_service::Service<Uri> for UnixConnector {
    type Response = UnixIo;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<UnixIo>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(async move {
            let socket = socket_of(&uri)?;
            Ok(UnixIo(TokioIo::new(connect(&socket).await?)))
        })
    }
}

/// A connection to a daemon's socket.
pub(crate) struct UnixIo(TokioIo<tokio::net::UnixStream>);

impl Connection for UnixIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for UnixIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for UnixIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The longest socket path `connect(2)` takes as it is.
pub(crate) const SUN_PATH_MAX: usize = 107;

/// Connects to a unix socket, also when its path is longer than a socket
/// address can hold: then through the socket's directory, opened and named
/// by its short `/proc/self/fd/N` path.
pub(crate) async fn connect(path: &str) -> std::io::Result<tokio::net::UnixStream> {
    if path.len() <= SUN_PATH_MAX {
        return tokio::net::UnixStream::connect(path).await;
    }
    let path = std::path::Path::new(path);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other("the socket path has no directory"));
    };
    let dir = std::fs::File::open(dir)?;
    let short = format!("/proc/self/fd/{}/{}", std::os::fd::AsRawFd::as_raw_fd(&dir), name.to_string_lossy());
    let stream = tokio::net::UnixStream::connect(short).await;
    drop(dir);
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_path_travels_as_the_host_and_back() {
        let socket = "/var/tmp/sluice data/executors/run_01/run/control.sock";
        let uri = uri(socket, "/exec?x=1").unwrap();
        assert_eq!(uri.path_and_query().unwrap().as_str(), "/exec?x=1");
        assert_eq!(socket_of(&uri).unwrap(), socket);
    }
}
