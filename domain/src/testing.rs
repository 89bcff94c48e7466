//! Records for unit tests of policy, here and in the crates that use it.

/// A workspace record for unit tests of policy: `status`, wanting
/// `desired`, with a current run `cur`.
pub fn workspace(
    status: crate::model::WorkspaceStatus,
    desired: crate::model::DesiredState,
) -> crate::model::Workspace {
    crate::model::Workspace {
        id: "ws".into(),
        owner_user_id: "o".into(),
        name: "n".into(),
        registry_id: "r".into(),
        repository: "x".into(),
        tag: "1".into(),
        spec: crate::spec::Spec::default(),
        status,
        desired_state: desired,
        current_run_id: Some("cur".into()),
        idempotency_key: None,
        expires_at: None,
        created_at: 0,
        updated_at: 0,
        started_at: None,
        finished_at: None,
    }
}
