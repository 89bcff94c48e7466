//! Why a tool call failed, in words a model can act on: what went wrong,
//! and what to try next.

use rmcp::model::{CallToolResult, ContentBlock};
use sluice_client::types::ErrorBody;

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// An argument the tool cannot use, named.
    #[error("bad argument `{field}`: {reason}")]
    BadArgument { field: &'static str, reason: String },
    /// The API refused the call.
    #[error("{}", api_advice(*status, tag, code.as_deref(), message))]
    Refused { status: u16, tag: String, code: Option<String>, message: String },
    /// The API could not be reached or answered something unreadable.
    #[error("sluice's API did not answer ({0}); try again in a few seconds")]
    Unreachable(String),
    /// A wait ran out before what it waited for happened.
    #[error("{0}")]
    TimedOut(String),
    /// What the tool waited for ended badly.
    #[error("{0}")]
    Ended(String),
}

impl Failure {
    pub fn bad(field: &'static str, reason: impl Into<String>) -> Failure {
        Failure::BadArgument { field, reason: reason.into() }
    }

    /// The tool's answer: an error result the client shows the model.
    pub fn into_result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.to_string())])
    }
}

impl From<sluice_client::Error<ErrorBody>> for Failure {
    fn from(e: sluice_client::Error<ErrorBody>) -> Failure {
        match e {
            sluice_client::Error::ErrorResponse(answer) => Failure::Refused {
                status: answer.status().as_u16(),
                tag: answer.tag.clone(),
                code: answer.code.clone(),
                message: answer.message.clone(),
            },
            sluice_client::Error::CommunicationError(e) => Failure::Unreachable(without_url(&e.to_string())),
            sluice_client::Error::InvalidRequest(reason) => Failure::bad("arguments", reason),
            sluice_client::Error::UnexpectedResponse(answer) => {
                Failure::Unreachable(format!("an unexpected answer {}", answer.status().as_u16()))
            }
            other => Failure::Unreachable(without_url(&other.to_string())),
        }
    }
}

/// An error of the HTTP client names the URL it called; the model needs
/// none of it.
fn without_url(text: &str) -> String {
    match text.find(" for url (") {
        Some(at) => text[..at].to_owned(),
        None => text.to_owned(),
    }
}

fn api_advice(status: u16, tag: &str, code: Option<&str>, message: &str) -> String {
    let what = match code {
        Some(code) => format!("sluice refused the call ({status} {tag}, {code}): {message}"),
        None => format!("sluice refused the call ({status} {tag}): {message}"),
    };
    let next = match (status, code) {
        (401 | 403, _) => "this MCP server's API token is not accepted: the person who set it up must fix it",
        (404, _) => {
            "check the id: list_workspaces shows this owner's workspaces, list_processes a workspace's processes"
        }
        (409, Some("no-live-runtime")) => {
            "the workspace is not running (stopped, failed or still starting): create_workspace makes a new one"
        }
        (409, _) => "the workspace is not in a state that allows this now",
        (400 | 413 | 422, _) => "fix the argument the message names and call again",
        (429 | 503, _) => "sluice is busy or a part of it is down: try again in a few seconds",
        _ => "",
    };
    if next.is_empty() { what } else { format!("{what}. Next: {next}.") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_its_status_code_and_what_to_do() {
        let text = Failure::Refused {
            status: 409,
            tag: "Conflict".into(),
            code: Some("no-live-runtime".into()),
            message: "workspace w1 has no live runtime".into(),
        }
        .to_string();
        assert!(text.contains("409 Conflict, no-live-runtime"), "{text}");
        assert!(text.contains("create_workspace"), "{text}");
    }

    #[test]
    fn a_client_error_loses_the_url_it_called() {
        let text = without_url("error sending request for url (http://127.0.0.1:7420/v1/workspaces?x=1)");
        assert_eq!(text, "error sending request");
    }
}
