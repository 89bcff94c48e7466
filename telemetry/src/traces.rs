//! Logs and traces: tracing's spans and events go to stderr (text or one
//! JSON object a line) and, with an OTLP endpoint, out as OpenTelemetry
//! spans over OTLP/HTTP (protobuf), batched. A request continues its
//! caller's W3C `traceparent`.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Keeps the trace exporter; dropping it sends the spans still batched.
pub struct Tracing {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown();
        }
    }
}

/// The OTLP/HTTP traces URL of an endpoint given as its base
/// (`http://collector:4318`) or in full (`…/v1/traces`).
pub fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") { base.to_owned() } else { format!("{base}/v1/traces") }
}

/// Starts logging (filtered by `SLUICE_LOG`, else `default_filter`) and,
/// with `otlp_endpoint`, the span exporter of `service`.
pub fn init(
    default_filter: &str,
    format: LogFormat,
    otlp_endpoint: Option<&str>,
    service: &str,
) -> Result<Tracing, String> {
    let filter = EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| default_filter.into());
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        LogFormat::Json => lines.json().with_current_span(true).with_span_list(false).boxed(),
        LogFormat::Text => lines.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).boxed(),
    };
    let provider = match otlp_endpoint {
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(traces_url(endpoint))
                .build()
                .map_err(|e| format!("--otlp-endpoint: {e}"))?;
            let resource = Resource::builder().with_service_name(service.to_owned()).build();
            Some(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
        }
        None => None,
    };
    let spans = provider.as_ref().map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("sluice")));
    tracing_subscriber::registry().with(filter).with(lines).with(spans).init();
    Ok(Tracing { provider })
}

struct Headers<'a>(&'a [(&'a str, &'a str)]);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| *v)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| *k).collect()
    }
}

/// The W3C `traceparent` of the current span, for a call to another
/// sluice process to go on with; `None` outside a traced span.
pub fn traceparent() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = std::collections::HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove("traceparent")
}

/// Makes `span` a child of the caller's trace, named by its W3C
/// `traceparent` (and `tracestate`); a malformed one is ignored.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent else { return };
    let mut headers = vec![("traceparent", traceparent)];
    if let Some(state) = tracestate {
        headers.push(("tracestate", state));
    }
    let parent = TraceContextPropagator::new().extract(&Headers(&headers));
    span.set_parent(parent);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_name_the_traces_path_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
    }

    #[test]
    fn a_continued_trace_is_handed_on_with_its_trace_id() {
        let provider = SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            assert_eq!(traceparent(), None, "outside any span");
            let span = tracing::info_span!("request");
            let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            continue_trace(&span, Some(caller), None);
            let _in = span.enter();
            let handed = traceparent().expect("a traceparent inside the span");
            assert!(handed.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"), "{handed}");
            assert!(!handed.contains("00f067aa0ba902b7"), "the child's own span id: {handed}");
            let bad = tracing::info_span!("other");
            continue_trace(&bad, Some("not a traceparent"), None);
            let _in = bad.enter();
            assert!(!traceparent().unwrap().contains("4bf92f3577b34da6a3ce929d0e0e4736"), "a malformed one is ignored");
        });
    }
}
