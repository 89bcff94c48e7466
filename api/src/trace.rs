//! One span per request, named by its route; every answer carries a request
//! id (the caller's `x-request-id` when it is well-formed, else a new one).
//! Nothing from the body, query or headers but the request id is logged.
//! Each answer is counted by route pattern (never the path), method and
//! status.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::AppState;

/// Methods named in the request metrics; any other reads `other`, so a
/// client cannot mint label values.
const KNOWN_METHODS: [Method; 5] = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];

pub const REQUEST_ID_HEADER: &str = "x-request-id";

fn well_formed(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The path's segment where the route pattern has `parameter`.
fn path_parameter(route: &str, path: &str, parameter: &str) -> Option<String> {
    let at = route.split('/').position(|segment| segment == parameter)?;
    path.split('/').nth(at).map(str::to_owned)
}

pub async fn request_span(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let request_id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|id| well_formed(id))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_owned();
    let method = request.method().clone();
    let method_label = if KNOWN_METHODS.contains(&method) { method.as_str() } else { "other" }.to_owned();
    let workspace = path_parameter(&route, request.uri().path(), "{workspaceId}").filter(|id| well_formed(id));
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{method_label} {route}"),
        otel.kind = "server",
        %method,
        route = %route,
        request_id = %request_id,
        workspace = workspace.as_deref(),
        status = tracing::field::Empty,
    );
    // A caller's trace goes on through this request (W3C trace context).
    {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        sluice_telemetry::traces::continue_trace(&span, header("traceparent"), header("tracestate"));
    }
    let started = std::time::Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "answered"
        );
    });
    let status = response.status();
    span.record("status", status.as_u16());
    app.config
        .metrics
        .request_seconds
        .with_label_values(&[route.as_str(), method_label.as_str(), status.as_str()])
        .observe(started.elapsed().as_secs_f64());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}
