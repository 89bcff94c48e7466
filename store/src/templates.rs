//! Templates and their builds. A build is asked for through the API and
//! built by a worker that can build (its `build` job, the build's id);
//! its output is kept in order, bounded; its end is one event on the
//! global feed. An unchanged rebuild (same Dockerfile and context as a
//! successful build of the same template) succeeds at once with that
//! build's image, and needs no worker.

use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;
use sluice_domain::templates::{BuildEvent, next};

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, Tx, args};
use crate::error::StoreError;
use crate::event_log::append_sluice_event;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::{JobKind, SluiceEventType, TemplateBuildState};
use sluice_domain::ids::BuildId;

/// The most output one build keeps; past it, a line says so and the rest
/// is not kept (the build goes on).
pub const MAX_BUILD_LOG_BYTES: i64 = 1 << 20;

/// A build asked for.
#[derive(Debug, Clone)]
pub struct NewBuild {
    pub template: String,
    pub dockerfile: String,
    /// A tar of the build's context (`None`: the Dockerfile alone).
    pub context: Option<Vec<u8>>,
    /// sha256 over the Dockerfile and the context.
    pub build_key: String,
    pub start_command: Option<String>,
    pub ready_command: Option<String>,
}

/// One build, as stored (without its inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateBuild {
    pub id: BuildId,
    pub template: String,
    pub state: TemplateBuildState,
    pub start_command: Option<String>,
    pub ready_command: Option<String>,
    /// The image's manifest digest, once built.
    pub digest: Option<String>,
    pub size_bytes: Option<i64>,
    /// Succeeded at once with an earlier build's image.
    pub cache_hit: bool,
    /// What built it (`docker`, `buildah`) and where.
    pub builder: Option<String>,
    pub host: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// What a worker needs to run a build.
#[derive(Debug, Clone)]
pub struct BuildWork {
    pub build: TemplateBuild,
    pub dockerfile: String,
    pub context: Option<Vec<u8>>,
}

/// A template: its name and builds, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub created_at: i64,
    pub builds: Vec<TemplateBuild>,
}

impl Template {
    /// The build workspaces of this template get: the newest successful one.
    pub fn current(&self) -> Option<&TemplateBuild> {
        self.builds.iter().find(|b| b.state == TemplateBuildState::Succeeded)
    }
}

const BUILD_COLUMNS: &str = "id, template_name, state, start_command, ready_command, digest, size_bytes, cache_hit, \
     builder, host, error, created_at, started_at, finished_at";

fn build_from_row(row: &DbRow) -> Result<TemplateBuild, StoreError> {
    Ok(TemplateBuild {
        id: row.id("id")?,
        template: row.text("template_name")?,
        state: row.parsed("state")?,
        start_command: row.opt_text("start_command")?,
        ready_command: row.opt_text("ready_command")?,
        digest: row.opt_text("digest")?,
        size_bytes: row.opt_int("size_bytes")?,
        cache_hit: row.int("cache_hit")? != 0,
        builder: row.opt_text("builder")?,
        host: row.opt_text("host")?,
        error: row.opt_text("error")?,
        created_at: row.int("created_at")?,
        started_at: row.opt_int("started_at")?,
        finished_at: row.opt_int("finished_at")?,
    })
}

async fn build_in(tx: &mut Tx, id: &BuildId) -> Result<Option<TemplateBuild>, StoreError> {
    let sql = format!("SELECT {BUILD_COLUMNS} FROM template_builds WHERE id = $1");
    tx.fetch_optional(&sql, args![id]).await?.as_ref().map(build_from_row).transpose()
}

impl Store {
    /// Records a build: a cache hit (succeeded now, with the earlier
    /// build's image) when a successful build of the template had the
    /// same key, else queued with its job.
    pub async fn request_template_build(&self, new: NewBuild) -> Result<TemplateBuild, StoreError> {
        let now = now_ms();
        let id = BuildId::from(new_id("bld"));
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "INSERT INTO templates (name, created_at, updated_at) VALUES ($1, $2, $2) \
             ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at",
            args![&new.template, now],
        )
        .await?;
        let hit = tx
            .fetch_optional(
                "SELECT digest, size_bytes, builder, host FROM template_builds WHERE template_name = $1 \
                 AND build_key = $2 AND state = $3 ORDER BY created_at DESC, id DESC LIMIT 1",
                args![&new.template, &new.build_key, TemplateBuildState::Succeeded.as_str()],
            )
            .await?;
        let (state, digest, size, builder, host) = match &hit {
            Some(row) => (
                TemplateBuildState::Succeeded,
                row.opt_text("digest")?,
                row.opt_int("size_bytes")?,
                row.opt_text("builder")?,
                row.opt_text("host")?,
            ),
            None => (TemplateBuildState::Queued, None, None, None, None),
        };
        let finished = hit.is_some().then_some(now);
        tx.execute(
            "INSERT INTO template_builds (id, template_name, state, build_key, dockerfile, context, start_command, \
             ready_command, digest, size_bytes, cache_hit, builder, host, created_at, started_at, finished_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)",
            args![
                &id,
                &new.template,
                state.as_str(),
                &new.build_key,
                &new.dockerfile,
                crate::db::Arg::Bytes(new.context),
                new.start_command.clone(),
                new.ready_command.clone(),
                digest,
                size,
                i64::from(hit.is_some()),
                builder,
                host,
                now,
                finished
            ],
        )
        .await?;
        if hit.is_some() {
            append_built(&mut tx, &id, &new.template, state, now).await?;
        } else {
            enqueue(&mut tx, JobKind::Build, id.as_str(), now, now).await?;
        }
        let build = build_in(&mut tx, &id).await?.ok_or_else(|| StoreError::Corrupt("a build just written".into()))?;
        tx.commit().await?;
        Ok(build)
    }

    /// Whether a successful build of `template` had this key: asking
    /// again would be a cache hit, needing no builder.
    pub async fn template_build_hit(&self, template: &str, build_key: &str) -> Result<bool, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT id FROM template_builds WHERE template_name = $1 AND build_key = $2 AND state = $3 LIMIT 1",
                args![template, build_key, TemplateBuildState::Succeeded.as_str()],
            )
            .await?;
        Ok(row.is_some())
    }

    /// Every template, each with its newest `builds_each` builds.
    pub async fn templates(&self, builds_each: i64) -> Result<Vec<Template>, StoreError> {
        let rows = self.pool.fetch_all("SELECT name, created_at FROM templates ORDER BY name", args![]).await?;
        let mut templates = Vec::with_capacity(rows.len());
        for row in rows {
            let name = row.text("name")?;
            let builds = self.builds_of(&name, builds_each).await?;
            templates.push(Template { name, created_at: row.int("created_at")?, builds });
        }
        Ok(templates)
    }

    /// A template with its newest `limit` builds; `None` if there is none
    /// of that name.
    pub async fn template(&self, name: &str, limit: i64) -> Result<Option<Template>, StoreError> {
        let Some(row) =
            self.pool.fetch_optional("SELECT name, created_at FROM templates WHERE name = $1", args![name]).await?
        else {
            return Ok(None);
        };
        let builds = self.builds_of(name, limit).await?;
        Ok(Some(Template { name: row.text("name")?, created_at: row.int("created_at")?, builds }))
    }

    /// The newest successful build of a template (what its workspaces run).
    pub async fn current_template_build(&self, name: &str) -> Result<Option<TemplateBuild>, StoreError> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM template_builds WHERE template_name = $1 AND state = $2 \
             ORDER BY created_at DESC, id DESC LIMIT 1"
        );
        let row = self.pool.fetch_optional(&sql, args![name, TemplateBuildState::Succeeded.as_str()]).await?;
        row.as_ref().map(build_from_row).transpose()
    }

    async fn builds_of(&self, name: &str, limit: i64) -> Result<Vec<TemplateBuild>, StoreError> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM template_builds WHERE template_name = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        self.pool.fetch_all(&sql, args![name, limit]).await?.iter().map(build_from_row).collect()
    }

    pub async fn template_build(&self, id: &BuildId) -> Result<Option<TemplateBuild>, StoreError> {
        let sql = format!("SELECT {BUILD_COLUMNS} FROM template_builds WHERE id = $1");
        self.pool.fetch_optional(&sql, args![id]).await?.as_ref().map(build_from_row).transpose()
    }

    /// Whether a worker that can build has beaten recently.
    pub async fn can_build(&self) -> Result<bool, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT id FROM workers WHERE builder IS NOT NULL AND fresh_until >= $1 LIMIT 1",
                args![now_ms()],
            )
            .await?;
        Ok(row.is_some())
    }

    /// A build's output from line `after` on (lines are numbered from 1),
    /// at most `limit` lines.
    pub async fn build_log_after(
        &self,
        id: &BuildId,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT seq, text FROM template_build_logs WHERE build_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                args![id, after, limit],
            )
            .await?;
        rows.iter().map(|r| Ok((r.int("seq")?, r.text("text")?))).collect()
    }

    /// Takes the build up under its job's lease: `building`, by `builder`
    /// on `host`, its output from any earlier try cleared. `None` when it
    /// has finished already.
    pub async fn start_template_build(
        &self,
        lease: &Lease,
        builder: &str,
        host: &str,
    ) -> Result<Option<BuildWork>, StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let id = BuildId::from(lease.subject.clone());
        let Some(build) = build_in(&mut tx, &id).await? else { return Ok(None) };
        let Some(state) = next(build.state, BuildEvent::Start) else { return Ok(None) };
        tx.execute(
            "UPDATE template_builds SET state = $2, builder = $3, host = $4, started_at = $5, log_bytes = 0 \
             WHERE id = $1",
            args![&id, state.as_str(), builder, host, now],
        )
        .await?;
        tx.execute("DELETE FROM template_build_logs WHERE build_id = $1", args![&id]).await?;
        let inputs = tx.fetch_one("SELECT dockerfile, context FROM template_builds WHERE id = $1", args![&id]).await?;
        let context = inputs.bytes("context").ok().filter(|c| !c.is_empty());
        let dockerfile = inputs.text("dockerfile")?;
        let build = build_in(&mut tx, &id).await?.ok_or_else(|| StoreError::Corrupt("a build just updated".into()))?;
        tx.commit().await?;
        Ok(Some(BuildWork { build, dockerfile, context }))
    }

    /// Keeps lines of a build's output, under its job's lease, up to
    /// [`MAX_BUILD_LOG_BYTES`] (then one line saying the rest is not kept).
    pub async fn append_build_log(&self, lease: &Lease, lines: &[String]) -> Result<(), StoreError> {
        if lines.is_empty() {
            return Ok(());
        }
        let (mut tx, _) = begin_fenced(&self.pool, lease).await?;
        let id = BuildId::from(lease.subject.clone());
        let row = tx
            .fetch_one(
                "SELECT b.log_bytes, COALESCE((SELECT MAX(seq) FROM template_build_logs l WHERE l.build_id = b.id), 0) \
                 AS last FROM template_builds b WHERE b.id = $1",
                args![&id],
            )
            .await?;
        let (mut kept, mut seq) = (row.int("log_bytes")?, row.int("last")?);
        for line in lines {
            if kept >= MAX_BUILD_LOG_BYTES {
                break;
            }
            let size = line.len() as i64;
            let text = if kept + size > MAX_BUILD_LOG_BYTES {
                format!("[sluice: the build's output past {MAX_BUILD_LOG_BYTES} bytes is not kept]\n")
            } else {
                line.clone()
            };
            kept += size;
            seq += 1;
            tx.execute(
                "INSERT INTO template_build_logs (build_id, seq, text) VALUES ($1, $2, $3)",
                args![&id, seq, text],
            )
            .await?;
        }
        tx.execute("UPDATE template_builds SET log_bytes = $2 WHERE id = $1", args![&id, kept]).await?;
        tx.commit().await
    }

    /// Ends the build under its job's lease: its image (digest and size)
    /// or why it failed, with its event, and its job done.
    pub async fn finish_template_build(
        &self,
        lease: &Lease,
        outcome: Result<(String, i64), String>,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let id = BuildId::from(lease.subject.clone());
        if let Some(build) = build_in(&mut tx, &id).await? {
            let event = if outcome.is_ok() { BuildEvent::Succeed } else { BuildEvent::Fail };
            if let Some(state) = next(build.state, event) {
                let (digest, size, error) = match &outcome {
                    Ok((digest, size)) => (Some(digest.clone()), Some(*size), None),
                    Err(error) => (None, None, Some(error.clone())),
                };
                tx.execute(
                    "UPDATE template_builds SET state = $2, digest = $3, size_bytes = $4, error = $5, \
                     finished_at = $6 WHERE id = $1",
                    args![&id, state.as_str(), digest, size, error.clone(), now],
                )
                .await?;
                append_built(&mut tx, &id, &build.template, state, now).await?;
            }
        }
        crate::jobs::finish_in(&mut tx, lease, None, None, now).await?;
        tx.commit().await
    }
}

async fn append_built(
    tx: &mut Tx,
    id: &BuildId,
    template: &str,
    state: TemplateBuildState,
    now: i64,
) -> Result<(), StoreError> {
    // Why a build failed stays on the build (it is the build's output,
    // the Dockerfile author's), not on the feed.
    let message = format!("template {template}: build {id} {state}");
    let event = NewSluiceEvent {
        event_type: SluiceEventType::TemplateBuilt,
        workspace_id: None,
        attempt_id: None,
        message,
        data: event_data::json(event_data::TemplateBuilt { template, build_id: id.as_str(), state: state.as_str() }),
    };
    append_sluice_event(tx, &event, now).await
}
