//! Template builds: a worker that can build takes a build's job, runs the
//! Dockerfile through its host's builder with the output kept as it
//! comes, imports the image into the host's image cache (unpacked, so the
//! first workspace of it starts at once) and records the result. A worker
//! that dies mid-build leaves the job to the next claim, which builds
//! again from the start (the builder's own layer cache makes that short).

use std::sync::Arc;
use std::time::Duration;

use sluice_store::clock::now_ms;
use sluice_store::{Lease, StoreError};
use tokio::sync::mpsc;

use crate::{PassEnd, Worker};

/// How often the output gathered so far is written.
const LOG_FLUSH: Duration = Duration::from_millis(200);

/// A host's builder and the image cache built images go into.
pub struct TemplateBuilder {
    pub builder: sluice_images::Builder,
    pub cache: Arc<sluice_images::ImageCache>,
}

impl std::fmt::Debug for TemplateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateBuilder").field("builder", &self.builder).finish_non_exhaustive()
    }
}

/// The name a build's image has in the cache: `templates/NAME:BUILD`.
pub fn image_name(template: &str, build: &str) -> String {
    format!("{template}:{build}")
}

pub(crate) async fn build(worker: &Worker, lease: &Lease) -> Result<PassEnd, StoreError> {
    let Some(templates) = &worker.config.template_builder else {
        // Claimed by a worker that cannot build (it could when the job
        // was routed): left for one that can.
        return Ok(PassEnd::Again(now_ms() + 5_000));
    };
    let store = &worker.store;
    let Some(work) = store.start_template_build(lease, templates.builder.name(), &worker.config.host).await? else {
        return Ok(PassEnd::Done);
    };
    let build = &work.build;
    tracing::info!(template = %build.template, build = %build.id, builder = templates.builder.name(), "building a template");
    let started = std::time::Instant::now();
    let archive = templates.cache.store().temp_path("template");
    let tag = format!("sluice-template-{}", image_name(&build.template, build.id.as_str()));
    let request = sluice_images::BuildRequest {
        tag: &tag,
        dockerfile: &work.dockerfile,
        context: work.context.as_deref(),
        archive: &archive,
    };
    let (output, mut lines) = mpsc::channel::<String>(1024);
    let building = async {
        let result = templates.builder.build(&request, &output).await;
        drop(output);
        result
    };
    let logging = async {
        let mut batch = Vec::new();
        let mut flush_at = tokio::time::Instant::now() + LOG_FLUSH;
        loop {
            tokio::select! {
                line = lines.recv() => match line {
                    Some(line) => batch.push(line),
                    None => break,
                },
                _ = tokio::time::sleep_until(flush_at) => {
                    store.append_build_log(lease, &std::mem::take(&mut batch)).await?;
                    flush_at = tokio::time::Instant::now() + LOG_FLUSH;
                }
            }
        }
        store.append_build_log(lease, &batch).await
    };
    let (built, logged) = tokio::join!(building, logging);
    if let Err(e) = logged {
        let _ = std::fs::remove_file(&archive);
        return Err(e);
    }
    let outcome = match built {
        Ok(()) => import(templates, &archive, &build.template, build.id.as_str()).await,
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&archive);
    match &outcome {
        Ok((digest, _)) => {
            tracing::info!(template = %build.template, build = %build.id, %digest, seconds = started.elapsed().as_secs_f64(), "template built")
        }
        Err(e) => tracing::warn!(template = %build.template, build = %build.id, error = %e, "template build failed"),
    }
    store.finish_template_build(lease, outcome).await?;
    Ok(PassEnd::EndedItsJob)
}

/// Brings the built image into the cache under its build's name and the
/// template's `latest`, unpacked; answers its digest and size.
async fn import(
    templates: &TemplateBuilder,
    archive: &std::path::Path,
    template: &str,
    build: &str,
) -> Result<(String, i64), String> {
    let registry = sluice_domain::templates::REGISTRY_ID;
    let store = templates.cache.store();
    let imported = store
        .import(archive, registry, Some(&image_name(template, build)))
        .await
        .map_err(|e| format!("importing the built image: {e}"))?;
    let latest = sluice_images::ImageName::new(registry, template, "latest").map_err(|e| e.to_string())?;
    store.put_name(&latest.to_string(), &imported.digest).map_err(|e| e.to_string())?;
    let pinned =
        sluice_images::ImageName::new(registry, template, imported.digest.as_str()).map_err(|e| e.to_string())?;
    templates.cache.prepare(&pinned).await.map_err(|e| format!("unpacking the built image: {e}"))?;
    let size = store.image(&imported.digest).map_or(0, |r| r.size_bytes());
    Ok((imported.digest.to_string(), size as i64))
}
