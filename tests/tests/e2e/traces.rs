//! Traces out of the real `sluice serve` over OTLP/HTTP, received by a
//! receiver that decodes the protobuf as a collector would: request spans
//! continue the caller's `traceparent`, job passes carry the workspace,
//! and nothing a client sent as argv, env, a secret or a file name appears
//! in a span, a log line or a metric.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::json;
use sluice_tests::capture::sh_ok;
use sluice_tests::server::{DataDir, Options, Server};

const MARKER: &str = "tr4c3-m4rk3r-zq";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// A span as received: its name, ids (hex) and attributes as text.
#[derive(Debug, Clone)]
struct Received {
    name: String,
    trace_id: String,
    parent: String,
    attributes: Vec<(String, String)>,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type Spans = Arc<Mutex<Vec<Received>>>;

async fn receive(State(spans): State<Spans>, body: Bytes) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
    let mut received = spans.lock().unwrap();
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            for span in scope.spans {
                let attributes = span
                    .attributes
                    .iter()
                    .map(|kv| {
                        let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                            Some(AnyValue::StringValue(s)) => s.clone(),
                            Some(AnyValue::IntValue(n)) => n.to_string(),
                            Some(AnyValue::BoolValue(b)) => b.to_string(),
                            Some(AnyValue::DoubleValue(d)) => d.to_string(),
                            other => format!("{other:?}"),
                        };
                        (kv.key.clone(), value)
                    })
                    .collect();
                received.push(Received {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    parent: hex(&span.parent_span_id),
                    attributes,
                });
            }
        }
    }
    ([("content-type", "application/x-protobuf")], ExportTraceServiceResponse::default().encode_to_vec())
}

/// An OTLP/HTTP receiver on loopback for another test's server.
pub(crate) struct Collector {
    pub url: String,
    spans: Spans,
}

impl Collector {
    pub async fn start() -> Collector {
        let spans: Spans = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().route("/v1/traces", post(receive)).with_state(spans.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Collector { url, spans }
    }

    /// Every span received (once there are any, and the batch in flight
    /// has had time to come), names and attributes as text.
    pub async fn everything(&self) -> String {
        let spans = self.spans.clone();
        sluice_tests::wait_for(Duration::from_secs(30), || {
            let any = !spans.lock().unwrap().is_empty();
            async move { any.then_some(()) }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        format!("{:?}", self.spans.lock().unwrap())
    }
}

async fn wait_for_span(spans: &Spans, what: &str, found: impl Fn(&Received) -> bool) -> Received {
    let span = sluice_tests::wait_for(Duration::from_secs(30), || {
        let span = spans.lock().unwrap().iter().find(|s| found(s)).cloned();
        async move { span }
    })
    .await;
    span.unwrap_or_else(|| {
        let names: Vec<String> = spans.lock().unwrap().iter().map(|s| s.name.clone()).collect();
        panic!("no span {what} among {names:?}")
    })
}

#[tokio::test]
async fn spans_continue_the_callers_trace_and_carry_no_client_content() {
    let spans: Spans = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/traces", post(receive)).with_state(spans.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = DataDir::new();
    let options = Options::serve().arg("--otlp-endpoint").arg(&collector).env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let server = Server::start_with(&dir.path(), options).await;

    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600", MARKER], "env": {"NOTE": MARKER}},
        "secretEnv": {"TOKEN": MARKER},
    });
    let answer = server
        .client
        .post(format!("{}/v1/workspaces", server.base))
        .bearer_auth(&server.token)
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let request_id = answer.headers()["x-request-id"].to_str().unwrap().to_owned();
    let created: serde_json::Value = answer.json().await.unwrap();
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    let script = format!("busybox touch /tmp/{MARKER}; NOTE={MARKER} busybox env >/dev/null; busybox echo {MARKER}");
    sh_ok(&server, &id, &script).await;

    let create = wait_for_span(&spans, "POST /v1/workspaces", |s| s.name == "POST /v1/workspaces").await;
    assert_eq!((create.trace_id.as_str(), create.parent.as_str()), (TRACE_ID, CALLER_SPAN), "the caller's trace");
    assert_eq!(create.attribute("request_id"), Some(request_id.as_str()), "{create:?}");
    assert_eq!(create.attribute("status"), Some("202"), "{create:?}");
    let read = wait_for_span(&spans, "a read of the workspace", |s| {
        s.name == "GET /v1/workspaces/{workspaceId}" && s.attribute("workspace") == Some(id.as_str())
    })
    .await;
    assert_ne!(read.trace_id, TRACE_ID, "a request without traceparent starts a trace of its own");
    let job = wait_for_span(&spans, "a job pass of the workspace", |s| {
        s.name == "job reconcile" && s.attribute("workspace") == Some(id.as_str())
    })
    .await;
    assert_eq!(job.attribute("job.kind"), Some("reconcile"), "{job:?}");
    let exec = wait_for_span(&spans, "an exec job pass", |s| s.name == "job exec").await;
    let asked = wait_for_span(&spans, "the exec request", |s| s.name == "POST /v1/workspaces/{workspaceId}/exec").await;
    assert_eq!(exec.trace_id, asked.trace_id, "run in the trace of the request that asked: {exec:?}");
    assert_eq!(exec.attribute("workspace"), Some(id.as_str()), "{exec:?}");

    // No client content anywhere an operator's tools read.
    let (_, metrics) = {
        let r = server.client.get(format!("{}/metrics", server.base)).bearer_auth(&server.token).send().await.unwrap();
        (r.status(), r.text().await.unwrap())
    };
    assert!(!metrics.contains(MARKER), "in a metric");
    for span in spans.lock().unwrap().iter() {
        let text = format!("{} {:?}", span.name, span.attributes);
        assert!(!text.contains(MARKER), "in a span: {text}");
    }
    let log = server.kill();
    assert!(!log.contains(MARKER), "in the server's log");
    let mut read = 0;
    for run in std::fs::read_dir(dir.executors()).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(run.path().join("daemon.log")) else { continue };
        assert!(!text.contains(MARKER), "in the daemon's log of {}", run.path().display());
        read += 1;
    }
    assert!(read >= 1, "a daemon's log was read");
}
