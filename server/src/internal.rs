//! The worker's internal API (its host's executors, served to the rest of
//! sluice), and the executor port of a process that routes its calls to
//! the executors' hosts.

use std::sync::Arc;

use anyhow::Context;
use sluice_store::Store;
use sluice_worker::internal::credential::ClusterTls;
use sluice_worker::internal::{routed::RoutedExecutors, server::Serving};

use crate::config::WorkerArgs;

/// The name a process that only calls out puts in its certificate.
const CALLER_NAME: &str = "sluice-caller";

/// Serves the worker's internal API when it is asked for: answers its URL,
/// and the task serving it until `shutdown` resolves.
pub async fn serve(
    args: &WorkerArgs,
    store: &Store,
    host: &str,
    local: Arc<dyn sluice_executor::Executors>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Option<(String, tokio::task::JoinHandle<std::io::Result<()>>)>> {
    serve_on(args, None, store, host, local, shutdown).await
}

/// [`serve`], on a listener already bound at `--internal-listen` when one
/// is given (the embedded default's loopback port).
pub async fn serve_on(
    args: &WorkerArgs,
    bound: Option<std::net::TcpListener>,
    store: &Store,
    host: &str,
    local: Arc<dyn sluice_executor::Executors>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Option<(String, tokio::task::JoinHandle<std::io::Result<()>>)>> {
    let (Some(listen), Some((url, name))) = (&args.internal_listen, args.advertised()?) else { return Ok(None) };
    let tls = ClusterTls::new(store.sealer(), &[name]).context("the internal API's certificate")?;
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config()?);
    let listener = match bound {
        Some(bound) => {
            bound.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(bound)?
        }
        None => tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?,
    };
    tracing::info!(address = %listener.local_addr()?, advertised = %url, "internal API listening (cluster credential)");
    let router = router(Serving { store: store.clone(), host: host.to_owned(), local });
    let limits = sluice_api::listener::HttpLimits {
        idle_timeout: std::time::Duration::from_secs(16 * 60),
        max_body_bytes: sluice_worker::internal::server::MAX_CALL_BYTES,
        ..Default::default()
    };
    let serving = sluice_api::listener::serve_over(router, listener, limits, Some(acceptor), shutdown);
    Ok(Some((url, tokio::spawn(serving))))
}

/// The worker's internal API: executor calls only from members of the
/// install (a client certificate of its authority, verified in the
/// handshake); gateways with their tickets.
pub fn router(serving: Serving) -> axum::Router {
    sluice_worker::internal::router(serving).layer(axum::middleware::from_fn(members_only))
}

async fn members_only(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    use sluice_worker::internal::refusal::Refusal;
    let member = request.extensions().get::<sluice_api::listener::ClientCertified>().is_some_and(|c| c.0);
    let path = request.uri().path();
    let for_members = path == sluice_worker::internal::server::CALL_PATH
        || path.starts_with(sluice_worker::internal::server::SESSION_PATH);
    if for_members && !member {
        let refusal = Refusal::Unauthenticated("executor calls need the install's cluster credential");
        return refusal.into_response();
    }
    next.run(request).await
}

/// The install's cluster authority (PEM), for the gateways' tickets.
pub fn authority(store: &Store) -> anyhow::Result<String> {
    let tls = ClusterTls::new(store.sealer(), &[CALLER_NAME.to_owned()]).context("the cluster credential")?;
    Ok(tls.authority_pem().to_owned())
}

/// The executor port of an API or broker: calls for executors of `here`
/// (this process's own worker's host) or of no recorded host go through
/// `local`; the others to a worker of their host.
pub fn routed(
    store: &Store,
    here: Option<String>,
    local: Arc<dyn sluice_executor::Executors>,
) -> anyhow::Result<Arc<RoutedExecutors>> {
    let tls = ClusterTls::new(store.sealer(), &[CALLER_NAME.to_owned()]).context("the cluster credential")?;
    Ok(Arc::new(RoutedExecutors::new(store.clone(), here, local, &tls)?))
}
