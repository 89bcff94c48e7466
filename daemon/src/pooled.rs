//! A pooled daemon: started ahead of any run, for a warm pool, with no
//! secret, no workload and no session. Until it is assigned it answers
//! `health` (as pooled, without a token: nothing in the executor could ask,
//! there is no workload yet) and one `assign`; everything else is refused
//! `pooled`. The assign keeps the run's boot secret where a delivered one
//! would be kept, boots as a launched daemon would, and from then on every
//! call goes to that daemon's control API, token and all.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use sluice_protocol::{AssignRequest, RefusalCode};
use tower::ServiceExt;

use crate::{CaptureSetup, DaemonConfig, processes::Processes, refused, workload::WorkloadIds};

/// The most an assign body may hold (a boot secret with its environments).
const ASSIGN_BODY_LIMIT: usize = 1 << 20;

/// What a pooled daemon boots with once assigned: the launch's fixed parts.
pub struct Template {
    pub boot_secret_file: PathBuf,
    pub state_dir: PathBuf,
    pub workdir: PathBuf,
    /// Where commands run unless they say (the image's working directory).
    pub default_cwd: Option<PathBuf>,
    pub epoch: u64,
    pub workload: Option<WorkloadIds>,
    pub capture: Option<CaptureSetup>,
}

struct Pooled {
    template: Template,
    /// Held while assigning: a second assign waits, then reads the first.
    assigning: tokio::sync::Mutex<()>,
    assigned: OnceLock<Assigned>,
    processes: Arc<OnceLock<Arc<Processes>>>,
}

struct Assigned {
    router: Router,
}

/// The pooled daemon's control API, and where its workload's processes
/// appear once it is assigned (for the shutdown to stop them).
pub fn router(template: Template) -> (Router, Arc<OnceLock<Arc<Processes>>>) {
    let processes = Arc::new(OnceLock::new());
    let pooled = Arc::new(Pooled {
        template,
        assigning: tokio::sync::Mutex::new(()),
        assigned: OnceLock::new(),
        processes: processes.clone(),
    });
    (Router::new().fallback(dispatch).with_state(pooled), processes)
}

async fn dispatch(State(pooled): State<Arc<Pooled>>, request: Request) -> Response {
    if let Some(assigned) = pooled.assigned.get() {
        return forward(&assigned.router, request).await;
    }
    let path = request.uri().path();
    match (request.method(), path) {
        (&Method::GET, sluice_protocol::HEALTH) => axum::Json(serde_json::json!({"status": "pooled"})).into_response(),
        (&Method::POST, sluice_protocol::ASSIGN) => assign(&pooled, request).await,
        _ => refused(RefusalCode::Pooled, "this executor is pooled: it has no run yet".into()),
    }
}

async fn forward(router: &Router, request: Request) -> Response {
    match router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

async fn assign(pooled: &Pooled, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, ASSIGN_BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(_) => return refused(RefusalCode::Invalid, "the assign body is unreadable or too large".into()),
    };
    let _held = pooled.assigning.lock().await;
    if let Some(assigned) = pooled.assigned.get() {
        // Assigned while this one waited: the daemon's own answer (its token, its launch).
        let again = Request::from_parts(parts, axum::body::Body::from(bytes));
        return forward(&assigned.router, again).await;
    }
    // Never quoted back: the body carries the boot secret.
    let Ok(assignment) = serde_json::from_slice::<AssignRequest>(&bytes) else {
        return refused(RefusalCode::Invalid, "the assign body is not an assign request".into());
    };
    let template = &pooled.template;
    if let Err(e) = crate::keep_boot_secret(&assignment.boot_secret, &template.state_dir) {
        return refused(RefusalCode::Internal, format!("cannot keep the boot secret: {e}"));
    }
    let booted = crate::boot(DaemonConfig {
        boot_secret_file: &template.boot_secret_file,
        state_dir: &template.state_dir,
        launch: assignment.launch,
        epoch: template.epoch,
        workdir: &template.workdir,
        default_cwd: template.default_cwd.clone(),
        command: assignment.command,
        env: assignment.env,
        workload: template.workload,
        capture: template.capture.clone(),
    });
    match booted {
        Ok(running) => {
            crate::processes::reap_in_background(running.processes.clone());
            let _ = pooled.processes.set(running.processes);
            let _ = pooled.assigned.set(Assigned { router: running.router });
            log_line!("sluiced: assigned; the workload starts");
            axum::http::StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => refused(RefusalCode::Internal, format!("the assigned boot failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::BootSecret;

    const TOKEN: &str = "control-token-0123456789";

    fn assignment(launch: &str) -> serde_json::Value {
        let secret = BootSecret {
            control_token: TOKEN.into(),
            secret_env: [("API_KEY".to_owned(), "k-42".to_owned())].into(),
            capture_token: None,
            exec_env: Default::default(),
            bounds: None,
        };
        serde_json::to_value(AssignRequest {
            launch: launch.into(),
            boot_secret: secret,
            command: Vec::new(),
            env: [("GREETING".to_owned(), "hello".to_owned())].into(),
        })
        .unwrap()
    }

    #[tokio::test]
    async fn a_pooled_daemon_holds_nothing_until_assigned_once() {
        let dir = tempfile::tempdir().unwrap();
        let state_dir = dir.path().join("state");
        let (router, processes) = router(Template {
            boot_secret_file: dir.path().join("boot-secret.json"),
            state_dir: state_dir.clone(),
            workdir: dir.path().to_path_buf(),
            default_cwd: None,
            epoch: 0,
            workload: None,
            capture: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(crate::serve(router, listener, std::future::pending()));
        let client = reqwest::Client::new();

        // Pooled: health answers as pooled, without a token; nothing else answers.
        let health = client.get(format!("{base}/health")).send().await.unwrap();
        assert_eq!(health.status(), 200);
        assert_eq!(health.json::<serde_json::Value>().await.unwrap()["status"], "pooled");
        let exec = client.post(format!("{base}/exec")).bearer_auth(TOKEN).json(&serde_json::json!({"argv": ["true"]}));
        let exec = exec.send().await.unwrap();
        assert_eq!(exec.status(), 409);
        assert_eq!(exec.json::<serde_json::Value>().await.unwrap()["code"], "pooled");
        assert!(std::fs::read_dir(&state_dir).map_or(true, |mut d| d.next().is_none()), "no state before the assign");
        assert!(processes.get().is_none());
        let bad = client.post(format!("{base}/assign")).body("{\"launch\": 1}").send().await.unwrap();
        assert_eq!(bad.status(), 400);
        assert!(!state_dir.join("boot-secret.json").exists(), "a refused assign keeps nothing");

        let assign = client.post(format!("{base}/assign")).json(&assignment("launch-1")).send().await.unwrap();
        assert_eq!(assign.status(), 204);
        assert!(processes.get().is_some());
        assert!(state_dir.join("boot-secret.json").exists(), "the secret is kept where a restart finds it");

        // Assigned: the token is needed now, for health too.
        assert_eq!(client.get(format!("{base}/health")).send().await.unwrap().status(), 401);
        let exec = client
            .post(format!("{base}/exec"))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({"argv": ["sh", "-c", "printf %s \"$GREETING\""]}))
            .send()
            .await
            .unwrap();
        assert_eq!(exec.status(), 200);
        assert_eq!(exec.json::<serde_json::Value>().await.unwrap()["stdout"], "hello", "the assigned env reaches exec");
        let status: serde_json::Value =
            client.get(format!("{base}/status")).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap();
        assert_eq!(status["origin"]["launch"], "launch-1");

        // Again without the token: refused; with it, the same launch is done
        // and another is refused.
        let again = client.post(format!("{base}/assign")).json(&assignment("launch-1")).send().await.unwrap();
        assert_eq!(again.status(), 401);
        let again = client.post(format!("{base}/assign")).bearer_auth(TOKEN).json(&assignment("launch-1"));
        assert_eq!(again.send().await.unwrap().status(), 204);
        let other = client.post(format!("{base}/assign")).bearer_auth(TOKEN).json(&assignment("launch-2"));
        let other = other.send().await.unwrap();
        assert_eq!(other.status(), 409);
        assert_eq!(other.json::<serde_json::Value>().await.unwrap()["code"], "assigned");
    }
}
