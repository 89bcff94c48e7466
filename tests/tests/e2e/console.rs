//! The operator console in a real browser: Debian's Chromium, driven
//! headless through Playwright (tests/browser/console.py), against the real
//! `sluice serve` with a real executor retained: sign in, see it with its
//! reason, recover it and watch the drain finish on the page without a
//! reload; see a sleeping workspace asleep and wake it. Screenshots are
//! kept under the target directory. The console's
//! refusals (no session, a forged form) are checked here over HTTP.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use sluice_tests::capture::*;
use sluice_tests::prometheus::tool;
use sluice_tests::server::{DataDir, Server};

const WITHIN: Duration = Duration::from_secs(90);

/// Whether Chromium and Playwright for Python are here; CI must have both.
fn browser_available() -> bool {
    let playwright = Command::new("python3").args(["-c", "import playwright.sync_api"]).output();
    let here = tool("chromium").is_some() && playwright.is_ok_and(|o| o.status.success());
    sluice_tests::present("Debian's chromium and pip's playwright (the console test; see .ci/run)", here)
}

fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots")
}

#[tokio::test]
async fn an_operator_recovers_a_retained_executor_from_the_console() {
    if !browser_available() {
        return;
    }
    let flavor = Flavor::Bubblewrap;
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.drain_options()).await;

    // Without a session: the pages send to sign-in, the forms refuse.
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answer = client.get(format!("{}/console", server.base)).send().await.unwrap();
    assert_eq!(answer.status(), 303);
    assert_eq!(answer.headers()["location"], "/console/login");
    let forged = client
        .post(format!("{}/console/workspaces/ws_x/recover", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=00")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    // The API token is not a console session.
    let with_token = client.get(format!("{}/console", server.base)).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(with_token.status(), 303);

    // A capture workspace whose work is not confirmed saved: its daemon
    // frozen through the stop's drain, then killed.
    let saved = session(&server, None).await;
    let (kept, kept_run) = launch(&server, &saved, "kept").await;
    sh_ok(&server, &kept, "cd /workspace; busybox echo work > notes.txt").await;
    silence(flavor, &dir, &kept_run, true);
    let (status, answer) = server.post(&format!("/v1/workspaces/{kept}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{answer}");
    server.wait_for("alice", &kept, WITHIN, |w| w["captureDrain"]["state"] == "kept").await;
    kill_executor(flavor, &dir, &kept_run);
    let retained = server.wait_for("alice", &kept, WITHIN, |w| w["status"] == "retained").await;
    let reason = retained["captureDrain"]["retained"]["reason"].as_str().expect("a retention reason").to_owned();

    // A workspace asleep: the console shows it so and wakes it.
    let (asleep, _) = launch(&server, &session(&server, None).await, "asleep").await;
    let (status, answer) =
        server.post(&format!("/v1/workspaces/{asleep}/sleep"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{answer}");
    server.wait_for("alice", &asleep, WITHIN, |w| w["sleeping"].is_object()).await;

    // The sign-in form comes with its own form token's cookie.
    let login = client.get(format!("{}/console/login", server.base)).send().await.unwrap();
    assert_eq!(login.status(), 200);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");

    let output = screenshots();
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser/console.py");
    let run = tokio::process::Command::new("python3")
        .arg(&driver)
        .arg(&server.base)
        .arg(dir.path().join("api-token"))
        .arg(&kept)
        .arg(&reason)
        .arg(&output)
        .arg(&asleep)
        .kill_on_drop(true)
        .output();
    let run = tokio::time::timeout(Duration::from_secs(300), run).await.expect("the browser run ends").unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the console run failed:\n{printed}\nserver:\n{}", server.output());
    eprintln!("console screenshots: {}", output.display());
    for shot in ["2-retained.png", "4-recovered.png", "4b-woken.png"] {
        assert!(std::fs::metadata(output.join(shot)).is_ok_and(|m| m.len() > 1000), "{shot} was kept");
    }

    // What the console did went through the store: the work was saved.
    let stopped = server.wait_for("alice", &kept, WITHIN, |w| w["status"] == "stopped").await;
    assert_ne!(stopped["captureDrain"]["state"], "kept", "{stopped}");
    let woken = server.wait_for("alice", &asleep, WITHIN, |w| w["status"] == "ready").await;
    assert!(woken.get("sleeping").is_none(), "{woken}");
    let token = std::fs::read_to_string(dir.path().join("api-token")).unwrap();
    assert!(!server.output().contains(token.trim()), "the token is in no log line");
    server.stop();
}
