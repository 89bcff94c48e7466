//! How far the pull of a launch's image is, as events on the global feed
//! (a pull can take minutes; its workspace is `starting` meanwhile).

use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;
use sluice_domain::ids::{RunId, WorkspaceId};

use crate::Store;
use crate::error::StoreError;
use crate::event_log::append_sluice_event;
use crate::jobs::{Lease, begin_fenced};
use crate::model::SluiceEventType;

impl Store {
    /// Records how far the pull of a launch's image is, on the global feed
    /// under the workspace and run, under the launch's lease.
    pub async fn record_image_pulling(
        &self,
        lease: &Lease,
        run_id: &RunId,
        image: &str,
        done_bytes: u64,
        total_bytes: u64,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let percent = (done_bytes * 100).checked_div(total_bytes).unwrap_or(0);
        let event = NewSluiceEvent {
            event_type: SluiceEventType::ImagePulling,
            workspace_id: Some(WorkspaceId::from(lease.subject.clone())),
            attempt_id: Some(run_id.clone()),
            message: format!("pulling image {image}: {percent}% of {total_bytes} bytes"),
            data: event_data::json(event_data::ImagePulling { image, done_bytes, total_bytes }),
        };
        append_sluice_event(&mut tx, &event, now).await?;
        tx.commit().await
    }
}
