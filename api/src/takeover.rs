//! Whether a new executor may claim a capture session: a create, a restart
//! or a wake of a sleeping workspace makes one, and none may fence another
//! executor's work that is not confirmed saved unless a create asks to take
//! the session over (discarding that work, recorded first).

use sluice_domain::ids::{IdempotencyKey, OwnerId, SessionId};
use sluice_domain::transition::Request;
use sluice_store::ConflictCode;

use crate::AppState;
use crate::error::{ApiError, Code};
use crate::wire::TakeOver;

/// A create on a session whose newest executor holds work not confirmed
/// saved would fence that executor and leave its work on its disk alone:
/// refused (409 `session-has-unsaved-work`, naming the executor and its
/// workspace) unless the caller takes the session over with
/// `discard-unsaved`, which records that workspace's discard first. A
/// replay of a create already made is not weighed again.
/// Whether a new executor may claim `session`: not over another's work not
/// confirmed saved, unless a create asks to take it over. `creating`: a
/// create (which may ask) rather than a restart (which may not).
pub(crate) async fn check_takeover(
    app: &AppState,
    owner: &OwnerId,
    session: &SessionId,
    take_over: Option<TakeOver>,
    key: Option<&IdempotencyKey>,
    creating: bool,
) -> Result<(), ApiError> {
    if let Some(key) = key
        && app.store.get_create_key(owner, key).await?.workspace_id.is_some()
    {
        return Ok(());
    }
    let holder = app.store.session_holder(session).await?;
    let Some(unsaved) = sluice_domain::drain::unsaved_holder(holder.as_ref().map(|(run, drain)| (run, drain.as_ref())))
    else {
        return Ok(());
    };
    match take_over {
        Some(TakeOver::DiscardUnsaved) => {
            let intent = sluice_store::StopIntent { discard: true, attestation: None };
            let request = Request::Stop { by: owner.to_owned().to_string(), intent };
            app.store.request(owner, &unsaved.workspace_id, request).await?.ok_or(ApiError::NotFound)?;
            app.work_enqueued();
            Ok(())
        }
        None => Err(session_has_unsaved_work(
            &unsaved,
            &format!(
                "a new executor would fence it: let it drain, or discard it (POST /v1/workspaces/{}/stop with \
                 discardUnsaved){}",
                unsaved.workspace_id,
                if creating { ", or create with takeOver \"discard-unsaved\"" } else { "" }
            ),
        )),
    }
}

/// 409 `session-has-unsaved-work`: the holder, its state, and what to do.
pub(crate) fn session_has_unsaved_work(unsaved: &sluice_domain::drain::UnsavedHolder, what_to_do: &str) -> ApiError {
    ApiError::conflict(
        format!(
            "the capture session's newest executor (run {} of workspace {}) is {} with work not confirmed saved; \
             {what_to_do}",
            unsaved.run_id, unsaved.workspace_id, unsaved.state
        ),
        Some(Code::Stored(ConflictCode::SessionHasUnsavedWork)),
    )
}
