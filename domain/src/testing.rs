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
        sleep: None,
    }
}

/// A run record for unit tests of policy: `id` in `status`, with or without
/// a runtime resource (local, `res`/`ref`), perhaps removed.
pub fn run(id: &str, status: crate::model::WorkspaceStatus, runtime: bool, removed: bool) -> crate::model::Run {
    crate::model::Run {
        id: id.into(),
        workspace_id: "ws".into(),
        relation: crate::model::RunRelation::Launch,
        trigger_type: crate::model::TriggerType::Api,
        trigger_ref: None,
        status,
        launch_id: None,
        spec: crate::spec::Spec::default(),
        runtime: runtime.then(|| crate::model::RuntimeRecord {
            adapter: crate::model::RuntimeAdapter::Local,
            resource_id: "res".into(),
            reference: "ref".into(),
            status: crate::model::RuntimeStatus::Running,
            endpoint: None,
            deadline: None,
        }),
        published_image: None,
        error: None,
        queued_at: 0,
        created_at: 0,
        updated_at: 0,
        linked_at: 0,
        started_at: Some(1_000),
        finished_at: None,
        runtime_removed_at: removed.then_some(5),
        launch_attempt: 1,
        host: None,
    }
}
