//! Credentials added at the egress proxy, against a real `serve` and an
//! HTTPS API the test runs (named through `--egress-hosts`, its own
//! authority trusted through `--egress-trust`): curl inside a workspace
//! reaches it with `authorization: Bearer <secret>` it never saw, a header
//! it forged replaced; from inside, the secret is in no variable and no
//! file it can read; a host without a credential is tunnelled (the
//! workload sees the server's own certificate); each brokered request is
//! logged and counted, and the secret is in no log line, event, metric or
//! span.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::origin::https_echo_server;
use sluice_tests::server::{DataDir, Options, Server};

const WITHIN: Duration = Duration::from_secs(60);

/// The managed process's environment, as it wrote it once it started.
const MANAGED_ENV: &str =
    "i=0; while [ ! -s managed-env ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat managed-env";

/// Runs `script` with `sh`, given as its input (sealed, as a forged
/// credential in it must be: argv refuses anything that looks like one).
async fn run_in(server: &Server, id: &str, script: &str) -> (i64, String, String) {
    let body = json!({"ownerUserId": "alice", "commands": [{"argv": ["sh"], "stdin": script, "timeoutMs": 120_000}]});
    let (status, run) = server.post(&format!("/v1/workspaces/{id}/exec"), &body).await;
    assert_eq!(status, 202, "{run}");
    let run = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(150)).await;
    let command = &run["commands"][0];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (command["exitCode"].as_i64().unwrap_or(-1), text(&command["stdout"]), text(&command["stderr"]))
}

#[tokio::test]
async fn a_credential_reaches_the_api_and_never_the_workload() {
    let bubblewrap = std::process::Command::new("bwrap").arg("--version").output().is_ok_and(|o| o.status.success());
    let root = unsafe { libc::geteuid() } == 0;
    if !sluice_tests::present("bubblewrap or root (an executor's own network namespace)", bubblewrap || root) {
        return;
    }
    let (port, authority, heads) = https_echo_server(&["api.broker.test", "plain.broker.test"]).await;
    let secret = format!("sk-brokered-{}", uuid::Uuid::new_v4().simple());
    let dir = DataDir::new();
    let hosts = dir.root().join("egress-hosts");
    std::fs::write(&hosts, "127.0.0.1 api.broker.test plain.broker.test\n").unwrap();
    let trust = dir.root().join("egress-trust.pem");
    std::fs::write(&trust, &authority).unwrap();
    let collector = crate::traces::Collector::start().await;
    let options = Options::serve()
        .args([
            "--runtime",
            "local",
            "--egress-hosts",
            hosts.to_str().unwrap(),
            "--egress-trust",
            trust.to_str().unwrap(),
        ])
        .arg("--otlp-endpoint")
        .arg(&collector.url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let server = Server::start_with(&dir.path(), options).await;

    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "r", "tag": "1", "waitFor": "ready",
        "secretEnv": {"API_TOKEN": secret, "VISIBLE_SECRET": "shown-to-the-workload"},
        // secretEnv is the managed process's: it keeps its environment.
        "spec": {"command": ["sh", "-c", "env > managed-env; exec sleep 600"], "network": {"egress": [
            {"host": format!("api.broker.test:{port}"),
             "inject": {"header": "Authorization", "valueFrom": "API_TOKEN", "format": "Bearer {}"}},
            format!("plain.broker.test:{port}"),
        ]}},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, WITHIN, |w| w["status"] == "ready").await;

    // The workload's own request, with a header of the credential's name it
    // made up: the API sees the credential, once, and not the forgery.
    let script = format!(
        "curl -sS --max-time 20 -H 'Authorization: Bearer forged-by-the-workload' \
         'https://api.broker.test:{port}/v1/things?page=2'"
    );
    let (code, out, err) = run_in(&server, &id, &script).await;
    assert_eq!(code, 0, "curl through the broker: {err}");
    assert!(out.starts_with("GET /v1/things?page=2 HTTP/1.1"), "{out}");
    let received = heads.lock().unwrap().last().cloned().unwrap_or_default();
    let authorizations: Vec<&str> =
        received.lines().filter(|l| l.to_ascii_lowercase().starts_with("authorization:")).collect();
    assert_eq!(authorizations, [format!("authorization: Bearer {secret}").as_str()], "{received}");
    assert!(!received.contains("forged-by-the-workload"), "{received}");
    // A request inside the tunnel that names another host (domain fronting
    // a CDN's other customer) is not sent on.
    let sent = heads.lock().unwrap().len();
    let fronted = format!(
        "curl -sS --max-time 20 -o /dev/null -w '%{{http_code}}' -H 'Host: plain.broker.test:{port}' \
         https://api.broker.test:{port}/"
    );
    let (_, out, err) = run_in(&server, &id, &fronted).await;
    assert_eq!(out, "421", "{err}");
    assert_eq!(heads.lock().unwrap().len(), sent, "nothing reached the API");
    // Python's TLS (OpenSSL, through SSL_CERT_FILE) trusts the broker too.
    let python = format!(
        "python3 -c \"import urllib.request; print(urllib.request.urlopen('https://api.broker.test:{port}/py').status)\""
    );
    let (code, out, err) = run_in(&server, &id, &python).await;
    assert_eq!((code, out.trim()), (0, "200"), "{err}");

    // From inside: the secret is in no variable, and in no file the
    // workload can read (the distribution's /usr aside: sluice writes
    // nothing there), nor in any process's environment or arguments.
    let (_, env, _) = run_in(&server, &id, MANAGED_ENV).await;
    assert!(env.contains("VISIBLE_SECRET=shown-to-the-workload"), "other secrets are still given: {env}");
    assert!(!env.contains("API_TOKEN") && env.contains("SSL_CERT_FILE=/tmp/.sluice-trust/ca-bundle.pem"), "{env}");
    let search = format!(
        "hits=$(grep -rsl -F '{secret}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr; \
         for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline /proc/self/environ; do grep -sl -F '{secret}' $f; done); \
         echo \"hits:[$hits]\"; ls /tmp/.sluice-trust"
    );
    let (_, out, err) = run_in(&server, &id, &search).await;
    assert!(out.contains("hits:[]"), "the secret was found from inside: {out} {err}");
    assert!(out.contains("ca-bundle.pem") && out.contains("egress-ca.pem"), "{out}");

    // A host without a credential is tunnelled: its own certificate, which
    // only its authority verifies; the brokered host's is the broker's.
    let (code, _, err) = run_in(&server, &id, &format!("cat > origin-ca.pem <<'PEM'\n{authority}PEM\n")).await;
    assert_eq!(code, 0, "{err}");
    let with_origin_ca = |name: &str| {
        format!("curl -sS --max-time 20 --cacert origin-ca.pem -o /dev/null -w '%{{http_code}}' https://{name}:{port}/")
    };
    let (code, out, err) = run_in(&server, &id, &with_origin_ca("plain.broker.test")).await;
    assert_eq!((code, out.as_str()), (0, "200"), "not intercepted: the server's own certificate: {err}");
    let (code, _, _) = run_in(&server, &id, &with_origin_ca("api.broker.test")).await;
    assert_ne!(code, 0, "intercepted: not the server's certificate");

    // Recorded and counted, without the path's query or any header.
    let log = server.output();
    let brokered: Vec<&str> = log.lines().filter(|l| l.contains("egress brokered")).collect();
    assert!(brokered.len() >= 2, "{log}");
    assert!(brokered[0].contains("api.broker.test") && brokered[0].contains("status=200"), "{}", brokered[0]);
    assert!(!log.contains("page=2") && !log.contains("forged-by-the-workload"), "no query, no header is logged");
    let metrics = server.client.get(format!("{}/metrics", server.base)).bearer_auth(&server.token).send().await;
    let metrics = metrics.unwrap().text().await.unwrap();
    let counted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("sluice_egress_brokered_requests_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(counted.is_some_and(|c| c >= 2.0), "{counted:?}");

    // The secret itself: in no log line, event, metric or span.
    let (_, events) = server.get(&format!("/v1/workspaces/{id}/events?ownerUserId=alice&limit=1000")).await;
    let spans = collector.everything().await;
    for (what, text) in [("log", log), ("events", events.to_string()), ("metrics", metrics), ("spans", spans)] {
        assert!(!text.contains(&secret), "the secret is in the {what}");
    }
    server.stop();
}

/// A Docker executor (`--network none`, busybox) gets the same: its daemon
/// installs the authority in the container's `/tmp`, its environment names
/// it, the key is not in the container, and a request from inside the
/// container's network, trusting only what was installed there, arrives
/// with the credential in place of the one it forged.
#[tokio::test]
async fn a_docker_executors_requests_get_the_credential_it_never_holds() {
    let Some(image) = sluice_tests::docker_test_image() else { return };
    if !sluice_tests::root_for("entering a container's network namespace") {
        return;
    }
    let (port, authority, heads) = https_echo_server(&["api.broker.test"]).await;
    let secret = format!("sk-brokered-{}", uuid::Uuid::new_v4().simple());
    let dir = DataDir::new();
    let hosts = dir.root().join("egress-hosts");
    std::fs::write(&hosts, "127.0.0.1 api.broker.test\n").unwrap();
    let trust = dir.root().join("egress-trust.pem");
    std::fs::write(&trust, &authority).unwrap();
    let options = Options::serve().args([
        "--runtime",
        "docker",
        "--egress-hosts",
        hosts.to_str().unwrap(),
        "--egress-trust",
        trust.to_str().unwrap(),
    ]);
    let server = Server::start_with(&dir.path(), options).await;
    let (repository, tag) = image.split_once(':').unwrap();
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag,
        "secretEnv": {"API_TOKEN": secret},
        "spec": {"command": ["sh", "-c", "env > managed-env; exec sleep 600"], "network": {"egress": [
            {"host": format!("api.broker.test:{port}"),
             "inject": {"header": "x-api-key", "valueFrom": "API_TOKEN"}},
        ]}},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, Duration::from_secs(90), |w| w["status"] == "ready").await;

    let (code, out, err) = run_in(&server, &id, &format!("{MANAGED_ENV}; ls -l /tmp/.sluice-trust")).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("SSL_CERT_FILE=/tmp/.sluice-trust/ca-bundle.pem") && !out.contains("API_TOKEN"), "{out}");
    assert!(out.contains("ca-bundle.pem") && out.contains("egress-ca.pem"), "{out}");
    let (_, installed, _) = run_in(&server, &id, "cat /tmp/.sluice-trust/egress-ca.pem").await;
    assert!(installed.contains("BEGIN CERTIFICATE"), "{installed}");

    // busybox has no TLS client rustls will talk to (its hello lacks the
    // signature algorithms), so the host's curl makes the workload's
    // request from inside the container's network namespace: to the
    // daemon's forwarder on the container's loopback, trusting what the
    // daemon installed in the container.
    let (_, bundle, _) = run_in(&server, &id, "cat /tmp/.sluice-trust/ca-bundle.pem").await;
    let bundle_file = dir.root().join("container-bundle.pem");
    std::fs::write(&bundle_file, &bundle).unwrap();
    let (_, details) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    let container = details["runtime"]["resourceId"].as_str().unwrap().to_owned();
    let pid =
        std::process::Command::new("docker").args(["inspect", "-f", "{{.State.Pid}}", &container]).output().unwrap();
    let pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
    // Awaited, not blocked on: the API it calls runs on this test's thread.
    let curl = tokio::process::Command::new("nsenter")
        .args(["-t", &pid, "-n", "curl", "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:3128"])
        .arg("--cacert")
        .arg(&bundle_file)
        .args(["-H", "X-Api-Key: forged", &format!("https://api.broker.test:{port}/from-docker")])
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&curl.stdout);
    assert!(
        curl.status.success() && out.starts_with("GET /from-docker") && out.contains("x-api-key"),
        "{out} {}\n{}",
        String::from_utf8_lossy(&curl.stderr),
        server.output().lines().filter(|l| l.contains("egress")).collect::<Vec<_>>().join("\n")
    );
    let received = heads.lock().unwrap().last().cloned().unwrap_or_default();
    let keys: Vec<&str> = received.lines().filter(|l| l.to_ascii_lowercase().starts_with("x-api-key:")).collect();
    assert_eq!(keys, [format!("x-api-key: {secret}").as_str()], "{received}");
    let (_, found, _) = run_in(&server, &id, &format!("grep -rsl -F '{secret}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; cat /proc/[0-9]*/environ | grep -c -F '{secret}'")).await;
    assert_eq!(found.trim(), "0", "the secret was found in the container: {found}");
    assert!(!server.output().contains(&secret), "the secret is in no log line");
    server.stop();
}
