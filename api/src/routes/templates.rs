//! `/v1/templates`: images built from a Dockerfile, with the command a
//! workspace of one starts and the command that says it is ready.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use sha2::Digest as _;
use sluice_domain::ids::BuildId;
use sluice_domain::templates::{MAX_DOCKERFILE_BYTES, name_ok};
use sluice_store::TemplateBuildState;
use sluice_store::templates::NewBuild;

use crate::AppState;
use crate::error::responses::{Internal, InvalidRequest, NotFound, Unauthenticated, Unprocessable};
use crate::error::{ApiError, Unsupported};
use crate::extract::{JsonBody, QueryOf};
use crate::wire::*;

/// The largest build request: a build's context comes in its body.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// How many builds a template's view shows.
const BUILDS_SHOWN: i64 = 20;
/// How often a followed build's log is read again.
const LOG_POLL: std::time::Duration = std::time::Duration::from_millis(200);
/// Lines read from the store at once.
const LOG_PAGE: i64 = 500;

pub(crate) fn template_name(field: &str, name: &str) -> Result<String, ApiError> {
    if name_ok(name) {
        Ok(name.to_owned())
    } else {
        Err(ApiError::bad_request(format!(
            "{field} must be 1 to 64 of a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
        )))
    }
}

fn shell_line(field: &str, line: Option<&str>) -> Result<Option<String>, ApiError> {
    match line {
        None => Ok(None),
        Some(line) if !line.trim().is_empty() && line.len() <= 4096 && !line.contains('\0') => {
            Ok(Some(line.to_owned()))
        }
        Some(_) => Err(ApiError::bad_request(format!("{field} must be a line of shell of 1 to 4096 bytes"))),
    }
}

/// Build a template (202): its image from the Dockerfile and context, through a host's builder.
#[utoipa::path(post, path = "/v1/templates", tag = "templates", operation_id = "createTemplateBuild",
    request_body = CreateTemplateRequest,
    responses((status = 202, description = "The build: queued, or succeeded at once (`cacheHit`) when the Dockerfile and context are those of an earlier successful build", body = TemplateBuildView),
        InvalidRequest, Unauthenticated, Unprocessable, Internal),
    security(("apiToken" = [])))]
pub async fn create_template_build(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<CreateTemplateRequest>,
) -> Result<(StatusCode, Json<TemplateBuildView>), ApiError> {
    use base64::Engine as _;
    let name = template_name("name", &req.name)?;
    if req.dockerfile.trim().is_empty() || req.dockerfile.len() > MAX_DOCKERFILE_BYTES {
        return Err(ApiError::bad_request(format!("dockerfile must be 1 to {MAX_DOCKERFILE_BYTES} bytes of text")));
    }
    let context = match &req.context {
        None => None,
        Some(text) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| ApiError::bad_request("context must be a tar archive, base64"))?;
            tar_readable(&bytes).map_err(|e| ApiError::bad_request(format!("context must be a tar archive: {e}")))?;
            Some(bytes)
        }
    };
    let start_command = shell_line("startCommand", req.start_command.as_deref())?;
    let ready_command = shell_line("readyCommand", req.ready_command.as_deref())?;
    let mut key = sha2::Sha256::new();
    key.update((req.dockerfile.len() as u64).to_le_bytes());
    key.update(req.dockerfile.as_bytes());
    key.update(context.as_deref().unwrap_or_default());
    let build_key = format!("{:x}", key.finalize());
    let can_build = app.store.can_build().await?;
    let new = NewBuild { template: name, dockerfile: req.dockerfile, context, build_key, start_command, ready_command };
    if !can_build {
        // An unchanged rebuild needs no builder; anything else would wait
        // for one forever.
        let hit = app.store.template_build_hit(&new.template, &new.build_key).await?;
        if !hit {
            return Err(ApiError::Unsupported {
                message: "no host here can build images (no Docker Engine or buildah, or --template-builder \
                          none; `sluice doctor` says which); the request was not applied"
                    .into(),
                code: Unsupported::TemplateBuilds,
            });
        }
    }
    let build = app.store.request_template_build(new).await?;
    if build.state == TemplateBuildState::Queued {
        app.work_enqueued();
    }
    tracing::info!(template = %build.template, build = %build.id, state = %build.state, cache_hit = build.cache_hit, "template build asked for");
    Ok((StatusCode::ACCEPTED, Json(build.into())))
}

/// Checks that `bytes` read as a tar archive to the end.
fn tar_readable(bytes: &[u8]) -> Result<(), String> {
    let mut archive = tar::Archive::new(bytes);
    for entry in archive.entries().map_err(|e| e.to_string())? {
        entry.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Every template with its newest builds.
#[utoipa::path(get, path = "/v1/templates", tag = "templates", operation_id = "listTemplates",
    responses((status = 200, body = ListTemplatesResponse), Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_templates(State(app): State<AppState>) -> Result<Json<ListTemplatesResponse>, ApiError> {
    let items = app.store.templates(BUILDS_SHOWN).await?.into_iter().map(TemplateView::from).collect();
    Ok(Json(ListTemplatesResponse { items }))
}

/// A template: the build its workspaces get and its newest builds (state, digest, size, timings).
#[utoipa::path(get, path = "/v1/templates/{name}", tag = "templates", operation_id = "getTemplate",
    params(("name" = String, Path)),
    responses((status = 200, body = TemplateView), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_template(
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<TemplateView>, ApiError> {
    let name = template_name("name", &name)?;
    let template = app.store.template(&name, BUILDS_SHOWN).await?.ok_or(ApiError::TemplateNotFound)?;
    Ok(Json(template.into()))
}

async fn build_of(app: &AppState, name: &str, id: &str) -> Result<sluice_store::templates::TemplateBuild, ApiError> {
    let name = template_name("name", name)?;
    let build = app.store.template_build(&BuildId::from(id.to_owned())).await?;
    build.filter(|b| b.template == name).ok_or(ApiError::TemplateNotFound)
}

/// One build of a template.
#[utoipa::path(get, path = "/v1/templates/{name}/builds/{buildId}", tag = "templates", operation_id = "getTemplateBuild",
    params(("name" = String, Path), ("buildId" = String, Path)),
    responses((status = 200, body = TemplateBuildView), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_template_build(
    State(app): State<AppState>,
    Path((name, id)): Path<(String, String)>,
) -> Result<Json<TemplateBuildView>, ApiError> {
    Ok(Json(build_of(&app, &name, &id).await?.into()))
}

/// A build's output (Server-Sent Events).
#[utoipa::path(get, path = "/v1/templates/{name}/builds/{buildId}/logs", tag = "templates", operation_id = "templateBuildLogs",
    description = "The build's output after `Last-Event-ID` (a line number; from the first line when absent) as Server-Sent Events: `event: log` with `data: {\"text\"}` and `id:` the line's number; with `follow=true` each new line as it comes, then `event: ended` (`data:` the build) once it has ended, and the stream closes. Without `follow` the stream closes once what is kept was sent. Each build keeps up to 1 MiB of output.",
    params(("name" = String, Path), ("buildId" = String, Path), BuildLogQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The last line received")),
    responses((status = 200, content_type = "text/event-stream", body = BuildLogLine),
        InvalidRequest, Unauthenticated, NotFound, (status = 503, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn template_build_logs(
    State(app): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    QueryOf(q): QueryOf<BuildLogQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let follow = match q.follow.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::bad_request("follow must be true or false")),
    };
    let build = build_of(&app, &name, &id).await?;
    let after = crate::extract::last_position(&headers, "the build's log")?.unwrap_or(0) as i64;
    let slot = app
        .streams
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::ServiceUnavailable("too many streams are open here; reconnect shortly".into()))?;
    struct Reading {
        app: AppState,
        id: BuildId,
        after: i64,
        pending: std::collections::VecDeque<Event>,
        done: bool,
        _slot: tokio::sync::OwnedSemaphorePermit,
    }
    let reading = Reading { app, id: build.id, after, pending: Default::default(), done: false, _slot: slot };
    let events = futures::stream::unfold(reading, move |mut r| async move {
        loop {
            if let Some(event) = r.pending.pop_front() {
                return Some((Ok(event), r));
            }
            if r.done {
                return None;
            }
            // Whether it had ended is read before its lines: a line kept
            // before the end is never missed.
            let ended = match r.app.store.template_build(&r.id).await {
                Ok(Some(b)) if matches!(b.state, TemplateBuildState::Succeeded | TemplateBuildState::Failed) => Some(b),
                Ok(Some(_)) => None,
                Ok(None) | Err(_) => return None,
            };
            let lines = r.app.store.build_log_after(&r.id, r.after, LOG_PAGE).await.ok()?;
            let full_page = lines.len() as i64 == LOG_PAGE;
            for (seq, text) in lines {
                r.after = seq;
                let data = serde_json::json!({ "text": text }).to_string();
                r.pending.push_back(Event::default().id(seq.to_string()).event("log").data(data));
            }
            if full_page {
                continue;
            }
            match ended {
                Some(build) => {
                    if follow {
                        let view = TemplateBuildView::from(build);
                        r.pending.push_back(Event::default().event("ended").data(serde_json::to_string(&view).ok()?));
                    }
                    r.done = true;
                }
                None if !follow => r.done = true,
                None if r.pending.is_empty() => tokio::time::sleep(LOG_POLL).await,
                None => {}
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)).text("heartbeat")))
}
