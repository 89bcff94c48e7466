//! Metrics as operators read them: the real `sluice serve`, real executors
//! and daemons, scraped by Debian's real Prometheus, whose query API the
//! test reads the values back through. The shipped alert rules and
//! dashboard are checked against the same server.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::capture::*;
use sluice_tests::poll_until;
use sluice_tests::prometheus::{Prometheus, promtool};
use sluice_tests::server::{DataDir, Server};

const WITHIN: Duration = Duration::from_secs(90);
/// In argv, env, secrets and file names: never in a metric.
const MARKER: &str = "m4rk3r-zq";

fn deploy() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The scrape configuration: the API listener with its token, and the
/// token-free metrics listener.
fn scrape_config(api: &str, token_file: &std::path::Path, open: &str) -> String {
    format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {rules}\n\
         scrape_configs:\n\
         \x20 - job_name: sluice\n    authorization:\n      credentials_file: {token}\n    static_configs:\n      - targets: ['{api}']\n\
         \x20 - job_name: sluice-open\n    static_configs:\n      - targets: ['{open}']\n",
        rules = deploy().join("prometheus/alerts.yml").display(),
        token = token_file.display(),
    )
}

async fn scrape(client: &reqwest::Client, url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = request.send().await.unwrap();
    (answer.status().as_u16(), answer.text().await.unwrap())
}

async fn stop(server: &Server, id: &str, discard: bool) {
    let body = json!({"ownerUserId": "alice", "discardUnsaved": discard});
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/stop"), &body).await;
    assert_eq!(status, 202, "{answer}");
}

#[tokio::test]
async fn prometheus_reads_workspaces_retention_recovery_and_work_at_risk() {
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let open_port = sluice_tests::free_port();
    let options = flavor.drain_options().arg("--metrics-listen").arg(format!("127.0.0.1:{open_port}"));
    let server = Server::start_with(&dir.path(), options).await;
    let client = sluice_tests::http_client();
    let api_metrics = format!("{}/metrics", server.base);
    let open_metrics = format!("http://127.0.0.1:{open_port}/metrics");

    // The API listener wants the token; the metrics listener does not.
    assert_eq!(scrape(&client, &api_metrics, None).await.0, 401);
    assert_eq!(scrape(&client, &api_metrics, Some("not-the-token")).await.0, 401);
    let (status, text) = scrape(&client, &open_metrics, None).await;
    assert_eq!(status, 200, "{text}");
    let (ok, lint) = promtool(&["check", "metrics"], Some(text.as_bytes()), &deploy());
    assert!(ok, "promtool check metrics: {lint}\n{text}");

    let api = server.base.trim_start_matches("http://").to_owned();
    let config = scrape_config(&api, &dir.path().join("api-token"), &format!("127.0.0.1:{open_port}"));
    let Some(prometheus) = Prometheus::start(&config).await else { return };
    for job in ["sluice", "sluice-open"] {
        prometheus.wait_for(&format!("up{{job=\"{job}\"}}"), WITHIN, |v| v == Some(1.0)).await;
    }

    // A plain workspace, carrying the marker everywhere a client can put it.
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"], "env": {"NOTE": MARKER}},
        "secretEnv": {"TOKEN": MARKER},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let plain = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &plain, WITHIN, |w| w["status"] == "ready").await;
    sh_ok(&server, &plain, &format!("busybox touch /tmp/{MARKER}; busybox echo {MARKER}")).await;
    stop(&server, &plain, false).await;
    server.wait_for("alice", &plain, WITHIN, |w| w["status"] == "stopped").await;

    // A capture workspace that ends with its work not confirmed saved:
    // its daemon frozen through the stop's drain, then killed.
    let saved = session(&server, None).await;
    let (kept, kept_run) = launch(&server, &saved, "kept").await;
    sh_ok(&server, &kept, &format!("cd /workspace; busybox echo {MARKER} > {MARKER}.txt")).await;
    // A capture registers before the daemon is frozen (its final flush
    // never can, so the work is still not confirmed saved).
    poll_until("the kept workspace registered a capture", WITHIN, || async {
        (capture_status(&server, &kept).await["headN"].as_u64().unwrap_or(0) >= 1).then_some(())
    })
    .await;
    silence(flavor, &dir, &kept_run, true);
    stop(&server, &kept, false).await;
    server.wait_for("alice", &kept, WITHIN, |w| w["captureDrain"]["state"] == "kept").await;
    kill_executor(flavor, &dir, &kept_run);
    server.wait_for("alice", &kept, WITHIN, |w| w["status"] == "retained").await;

    // A capture workspace whose work cannot be saved: over its quota.
    let small = session(&server, Some(64 << 10)).await;
    let (over, _) = launch(&server, &small, "over").await;
    sh_ok(&server, &over, "cd /workspace; busybox dd if=/dev/urandom of=big bs=1024 count=512 2>/dev/null").await;

    let retained = r#"sum(sluice_retained_executors{job="sluice"})"#;
    prometheus.wait_for(retained, WITHIN, |v| v == Some(1.0)).await;
    let age = format!(r#"sluice_retained_executor_age_seconds{{job="sluice",workspace="{kept}"}}"#);
    prometheus.wait_for(&age, WITHIN, |v| v.is_some_and(|s| s >= 0.0)).await;
    let status_of = |status: &str| format!(r#"sluice_workspaces{{job="sluice",status="{status}"}}"#);
    assert_eq!(prometheus.value(&status_of("retained")).await, Some(1.0));
    assert_eq!(prometheus.value(&status_of("stopped")).await, Some(1.0));
    assert_eq!(prometheus.value(&status_of("ready")).await, Some(1.0));
    assert_eq!(prometheus.value(&status_of("failed")).await, Some(0.0), "a status nobody has reads 0");

    let at_risk = format!(r#"sluice_work_at_risk_seconds{{job="sluice",workspace="{over}"}}"#);
    prometheus.wait_for(&at_risk, WITHIN, |v| v.is_some()).await;
    prometheus.wait_for(r#"sluice_work_at_risk_executors{job="sluice"}"#, WITHIN, |v| v == Some(1.0)).await;
    assert_eq!(prometheus.value(r#"sluice_capture_executors{job="sluice"}"#).await, Some(1.0));
    // A scrape with every family present: something retained, something at risk.
    let (_, busy) = scrape(&client, &api_metrics, Some(&server.token)).await;

    let launched = r#"sum(sluice_launches_total{job="sluice",runtime="local",outcome="answered"})"#;
    assert_eq!(prometheus.value(launched).await, Some(3.0));
    assert_eq!(prometheus.value(r#"sum(sluice_launch_duration_seconds_count{job="sluice"})"#).await, Some(3.0));
    let creates =
        r#"sluice_http_request_duration_seconds_count{job="sluice",route="/v1/workspaces",method="POST",status="202"}"#;
    assert_eq!(prometheus.value(creates).await, Some(3.0));
    let refused = r#"sum(sluice_http_request_duration_seconds_count{job="sluice",route="/metrics",status="401"})"#;
    assert_eq!(prometheus.value(refused).await, Some(2.0), "the two scrapes without the token");
    // Captures register on the daemons' own schedule, not the test's: waited for.
    let registered = r#"sluice_captures_registered_total{job="sluice"}"#;
    prometheus.wait_for(registered, WITHIN, |v| v.is_some_and(|n| n >= 1.0)).await;
    let shipped = r#"sluice_capture_shipped_bytes_total{job="sluice"}"#;
    prometheus.wait_for(shipped, WITHIN, |v| v.is_some_and(|n| n > 0.0)).await;
    assert!(prometheus.value(r#"sum(sluice_job_passes_total{job="sluice",kind="reconcile"})"#).await.unwrap() > 0.0);
    assert_eq!(prometheus.value(r#"sluice_workers{job="sluice"}"#).await, Some(1.0));
    assert!(prometheus.value(r#"max(sluice_worker_heartbeat_age_seconds{job="sluice"})"#).await.unwrap() < 60.0);

    // Recovery: the retained executor starts again on its own disk, its
    // drain completes, and it leaves the gauges.
    let (status, asked) =
        server.post(&format!("/v1/workspaces/{kept}/recover"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!((status, asked["state"].as_str()), (202, Some("requested")), "{asked}");
    server.wait_for("alice", &kept, WITHIN, |w| w["status"] == "stopped").await;
    // No reason has a retained executor left: the family is empty.
    prometheus.wait_for(retained, WITHIN, |v| v.is_none()).await;
    prometheus.wait_for(&status_of("stopped"), WITHIN, |v| v == Some(2.0)).await;
    prometheus.wait_for(&age, WITHIN, |v| v.is_none()).await;

    // Nothing a client sent (argv, env, secrets, file names) is in a metric.
    let (_, text) = scrape(&client, &api_metrics, Some(&server.token)).await;
    for text in [&busy, &text] {
        assert!(!text.contains(MARKER), "a marker reached the metrics:\n{text}");
    }
    assert!(busy.contains(&format!("workspace=\"{over}\"")), "{busy}");

    // The shipped rules load and are healthy; their unit tests pass.
    let groups = prometheus.rule_groups().await;
    let rules: Vec<&Value> = groups.iter().flat_map(|g| g["rules"].as_array().unwrap()).collect();
    assert_eq!(rules.len(), 6, "{groups:?}");
    assert!(rules.iter().all(|r| r["health"] == "ok"), "{rules:?}");
    for (args, what) in [
        (&["check", "rules", "prometheus/alerts.yml"][..], "check rules"),
        (&["test", "rules", "prometheus/alerts.test.yml"][..], "test rules"),
    ] {
        let (ok, out) = promtool(args, None, &deploy());
        assert!(ok, "promtool {what}: {out}");
    }

    // Every query of the dashboard runs, and names only metrics sluice serves.
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(deploy().join("grafana/sluice.json")).unwrap()).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_owned()))
        .collect();
    assert!(exprs.len() >= 20, "{exprs:?}");
    for expr in &exprs {
        prometheus.query(expr).await.unwrap_or_else(|e| panic!("{expr}: {e}"));
        for name in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("sluice_"))
        {
            let family =
                ["_bucket", "_count", "_sum"].iter().fold(name, |n, suffix| n.strip_suffix(suffix).unwrap_or(n));
            assert!(busy.contains(&format!("# TYPE {family} ")), "the dashboard names {name}, which is not served");
        }
    }

    stop(&server, &over, true).await;
    server.wait_for("alice", &over, WITHIN, |w| w["status"] == "stopped").await;
    server.stop();
}
