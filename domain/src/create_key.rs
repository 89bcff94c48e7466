//! The idempotent-create decision: what a create (or a broker snapshot
//! take) with a request may do, given its key's stored record. The store
//! reads the record and carries the decision out.

use crate::ids::WorkspaceId;
use crate::model::CreateKeyState;

/// What a create does next, given its key's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is pending with this request: go on and commit.
    Proceed,
    /// The key already made this workspace (or snapshot) for this request.
    Replay(WorkspaceId),
}

/// The stored state of a key, as far as a create needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub state: CreateKeyState,
    pub request_hash: Option<String>,
    pub workspace_id: Option<WorkspaceId>,
}

/// Why a create may not go on with its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRefusal {
    /// The key was cancelled: no create with it ever commits.
    #[error("the create with this idempotency key was cancelled")]
    Cancelled,
    /// The key was used before with a different request.
    #[error("the idempotency key was already used with a different request")]
    Reused,
    /// The record cannot be what was stored.
    #[error("{0}")]
    Inconsistent(&'static str),
}

/// The one decision: what a create with `request_hash` may do with `record`.
pub fn decide(record: &KeyRecord, request_hash: &str) -> Result<Claim, KeyRefusal> {
    let same_request = record.request_hash.as_deref() == Some(request_hash);
    match record.state {
        CreateKeyState::Cancelled => Err(KeyRefusal::Cancelled),
        _ if !same_request => Err(KeyRefusal::Reused),
        CreateKeyState::Pending => Ok(Claim::Proceed),
        CreateKeyState::Found => match &record.workspace_id {
            Some(id) => Ok(Claim::Replay(id.clone())),
            None => Err(KeyRefusal::Inconsistent("a found idempotency key names no workspace")),
        },
        CreateKeyState::None => Err(KeyRefusal::Inconsistent("a stored key cannot be in state none")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(state: CreateKeyState, hash: Option<&str>, ws: Option<&str>) -> KeyRecord {
        KeyRecord { state, request_hash: hash.map(str::to_owned), workspace_id: ws.map(Into::into) }
    }

    #[test]
    fn decide_covers_every_state() {
        use CreateKeyState::{Cancelled, Found, None as Unknown, Pending};
        let table = [
            (record(Pending, Some("h"), None), "h", Ok(Claim::Proceed)),
            (record(Pending, Some("h"), None), "x", Err(KeyRefusal::Reused)),
            (record(Found, Some("h"), Some("ws_1")), "h", Ok(Claim::Replay("ws_1".into()))),
            (record(Found, Some("h"), Some("ws_1")), "x", Err(KeyRefusal::Reused)),
            (
                record(Found, Some("h"), None),
                "h",
                Err(KeyRefusal::Inconsistent("a found idempotency key names no workspace")),
            ),
            (record(Cancelled, None, None), "h", Err(KeyRefusal::Cancelled)),
            (record(Cancelled, Some("h"), None), "h", Err(KeyRefusal::Cancelled)),
            (
                record(Unknown, Some("h"), None),
                "h",
                Err(KeyRefusal::Inconsistent("a stored key cannot be in state none")),
            ),
        ];
        for (record, hash, want) in table {
            assert_eq!(decide(&record, hash), want, "{record:?} with {hash}");
        }
    }
}
