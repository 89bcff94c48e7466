//! The OpenAPI document, generated from the handlers and wire types. The
//! checked-in copy in `sdk-openapi/openapi.json` is tested against it.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::workspaces as ws;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "apiToken",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "gatewayToken",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new(crate::auth::GATEWAY_TOKEN_HEADER))),
        );
    }
}

/// Every route may answer 503 while the database cannot (down, locked,
/// its disk full), with `Retry-After`: declared on each operation, with
/// the header, where the handler's own list does not say more.
struct Unavailable;

impl Modify for Unavailable {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, header::HeaderBuilder};
        let retry_after = HeaderBuilder::new()
            .schema(utoipa::openapi::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::Integer))
            .description(Some("Seconds to wait before trying again."))
            .build();
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                let responses = &mut operation.responses.responses;
                let declared = responses.remove("503");
                let description = match &declared {
                    Some(RefOr::T(response)) => response.description.clone(),
                    _ => "The database (or another dependency) cannot answer now; try again after `Retry-After`."
                        .to_owned(),
                };
                let response = ResponseBuilder::new()
                    .description(description)
                    .header("Retry-After", retry_after.clone())
                    .content(
                        "application/json",
                        ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                    )
                    .build();
                responses.insert("503".to_owned(), RefOr::T(response));
            }
        }
    }
}

/// Every operation that takes a body may answer 413 when it is over
/// `--max-body-bytes` (the body is still read to its end first, within a
/// bound, so that a client uploading it reads the answer).
struct BodyTooLarge;

impl Modify for BodyTooLarge {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        for item in doc.paths.paths.values_mut() {
            let operations = [&mut item.put, &mut item.post, &mut item.patch, &mut item.delete];
            for operation in operations.into_iter().flatten().filter(|o| o.request_body.is_some()) {
                let response = ResponseBuilder::new()
                    .description("The request body is larger than this server accepts (`--max-body-bytes`).")
                    .content(
                        "application/json",
                        ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                    )
                    .build();
                operation.responses.responses.insert("413".to_owned(), RefOr::T(response));
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "sluice", description = "Workspace lifecycle, attempts, events, and runtime routing endpoints."),
    paths(
        ws::create_workspace,
        ws::get_workspace_create,
        ws::cancel_workspace_create,
        ws::list_workspaces,
        ws::get_workspace,
        ws::delete_workspace,
        ws::rename_workspace,
        ws::expire_workspace,
        ws::list_workspace_attempts,
        ws::list_workspace_events,
        crate::routes::events::stream_workspace_events,
        crate::routes::events::stream_events,
        ws::bind_workspace,
        ws::get_workspace_capture_status,
        ws::flush_workspace_capture,
        ws::replan_workspace_capture,
        ws::exec_workspace,
        ws::stop_workspace,
        ws::recover_workspace,
        ws::restart_workspace,
        ws::sleep_workspace,
        ws::wake_workspace,
        crate::routes::forks::fork_workspace,
        crate::routes::forks::fork_capture,
        ws::get_workspace_ssh_target,
        ws::get_run,
        crate::routes::runs::stream_run,
        crate::routes::files::write_file,
        crate::routes::files::read_file,
        crate::routes::files::list_files,
        crate::routes::files::make_directory,
        crate::routes::files::move_file,
        crate::routes::files::remove_file,
        crate::routes::files::pack_archive,
        crate::routes::files::unpack_archive,
        crate::routes::files::watch_files,
        crate::routes::processes::start_process,
        crate::routes::processes::list_processes,
        crate::routes::processes::signal_process,
        crate::routes::processes::write_stdin,
        crate::routes::processes::process_output,
        crate::routes::workspaces::list_retained_executors,
        crate::routes::jobs::list_failed_jobs,
        crate::routes::jobs::retry_job,
        crate::routes::metrics::metrics,
        crate::routes::fleet::list_workers,
        crate::routes::fleet::list_images,
        crate::routes::templates::create_template_build,
        crate::routes::templates::list_templates,
        crate::routes::templates::get_template,
        crate::routes::templates::get_template_build,
        crate::routes::templates::template_build_logs,
        crate::routes::fleet::cordon_host,
        crate::routes::fleet::uncordon_host,
        crate::routes::fleet::drain_host,
        crate::routes::fleet::forget_host,
        crate::routes::webhooks::create_webhook,
        crate::routes::webhooks::list_webhooks,
        crate::routes::webhooks::get_webhook,
        crate::routes::webhooks::delete_webhook,
        crate::routes::webhooks::enable_webhook,
        crate::routes::webhooks::list_webhook_deliveries,
        crate::routes::ssh_keys::register_ssh_key,
        crate::routes::ssh_keys::list_ssh_keys,
        crate::routes::ssh_keys::delete_ssh_key,
        crate::routes::ssh_keys::gateway_ssh_key,
        crate::routes::ssh_keys::list_workspace_sessions,
        crate::routes::previews::create_preview,
        crate::routes::previews::list_previews,
        crate::routes::previews::revoke_preview,
        crate::routes::capture_sessions::create_capture_session,
        crate::routes::capture_sessions::get_capture_session,
        crate::routes::capture_sessions::delete_capture_session,
        crate::routes::capture_sessions::list_captures,
        crate::routes::capture_sessions::diff_captures,
        crate::routes::capture_sessions::read_capture_file,
        crate::routes::capture_sessions::archive_capture,
        crate::health,
    ),
    components(schemas(crate::wire::RunStreamData)),
    modifiers(&SecuritySchemes, &Unavailable, &BodyTooLarge)
)]
struct ApiDoc;

/// The document as JSON.
pub fn document() -> serde_json::Value {
    serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serializes")
}

/// The document as the pretty JSON that is checked in.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).expect("the OpenAPI document serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use sluice_store::{
        CreateKeyState, EventType, RunRelation, RuntimeAdapter, RuntimeStatus, TriggerType, WorkspaceStatus,
    };

    fn documented(name: &str) -> Value {
        document()["components"]["schemas"][name]["enum"].clone()
    }

    fn wire<T: serde::Serialize>(values: &[T]) -> Value {
        json!(values.iter().map(|v| serde_json::to_value(v).unwrap()).collect::<Vec<_>>())
    }

    #[test]
    fn documented_enums_are_the_names_on_the_wire() {
        assert_eq!(documented("WorkspaceStatus"), wire(WorkspaceStatus::ALL));
        assert_eq!(documented("CreateKeyState"), wire(CreateKeyState::ALL));
        assert_eq!(documented("EventType"), wire(EventType::ALL));
        assert_eq!(documented("RunRelation"), wire(RunRelation::ALL));
        assert_eq!(documented("TriggerType"), wire(TriggerType::ALL));
        assert_eq!(documented("RuntimeAdapter"), wire(RuntimeAdapter::ALL));
        assert_eq!(documented("RuntimeStatus"), wire(RuntimeStatus::ALL));
        assert_eq!(documented("HostState"), wire(sluice_store::HostState::ALL));
        assert_eq!(documented("WorkspaceStatus")[0], "queued");
    }

    #[test]
    fn every_operation_declares_the_503_with_retry_after() {
        let doc = document();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let unavailable = &operation["responses"]["503"];
                assert!(unavailable["headers"]["Retry-After"].is_object(), "{method} {path}: {unavailable}");
                assert_eq!(
                    unavailable["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{method} {path}"
                );
                seen += 1;
            }
        }
        assert!(seen > 50, "every operation was looked at: {seen}");
    }

    #[test]
    fn every_operation_with_a_body_declares_the_413() {
        let doc = document();
        let mut with_body = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let too_large = &operation["responses"]["413"];
                if operation.get("requestBody").is_some() {
                    assert_eq!(
                        too_large["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                        "{method} {path}"
                    );
                    with_body += 1;
                } else {
                    assert!(too_large.is_null(), "{method} {path} takes no body: {too_large}");
                }
            }
        }
        assert!(with_body > 10, "the operations with a body were looked at: {with_body}");
    }

    #[test]
    fn every_route_is_documented_with_its_security() {
        let doc = document();
        let paths = doc["paths"].as_object().unwrap();
        assert_eq!(
            paths.len(),
            67,
            "20 workspace paths, 7 file paths, 4 process paths, 6 capture-session paths, 2 run paths, /v1/retained-executors, 2 job paths, \
             /v1/workers, /v1/images, 4 template paths, 4 host paths, 3 ssh-key paths, workspace sessions, 2 preview paths, 2 event streams, 4 webhook paths, \
             /metrics and /healthz"
        );
        assert_eq!(paths["/v1/events/stream"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/metrics"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/workspaces/{workspaceId}/previews"]["post"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/retained-executors"]["get"]["security"], json!([{"apiToken": []}]));
        let captures = &paths["/v1/capture-sessions/{sessionId}/captures"]["get"];
        assert_eq!(captures["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/jobs/failed"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/jobs/retry"]["post"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/workers"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/images"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/templates"]["post"]["security"], json!([{"apiToken": []}]));
        let logs = &paths["/v1/templates/{name}/builds/{buildId}/logs"]["get"];
        assert_eq!(logs["security"], json!([{"apiToken": []}]));
        for action in ["cordon", "uncordon", "drain", "forget"] {
            let host = &paths[&format!("/v1/hosts/{{host}}/{action}")]["post"];
            assert_eq!(host["security"], json!([{"apiToken": []}]), "{action}");
        }
        assert_eq!(paths["/v1/capture-sessions"]["post"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/capture-sessions/{sessionId}"]["get"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/runs/{runId}"]["get"]["security"], json!([{"apiToken": []}]));
        let ssh = &paths["/v1/workspaces/{workspaceId}/ssh-target"]["get"];
        assert_eq!(ssh["security"], json!([{"gatewayToken": []}]));
        assert_eq!(paths["/v1/ssh-keys"]["post"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/ssh-keys/{fingerprint}"]["delete"]["security"], json!([{"apiToken": []}]));
        assert_eq!(paths["/v1/gateway/ssh-keys/{fingerprint}"]["get"]["security"], json!([{"gatewayToken": []}]));
        assert_eq!(paths["/v1/workspaces"]["post"]["security"], json!([{"apiToken": []}]));
    }
}
