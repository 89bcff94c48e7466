//! Deterministic exec runs: ordered commands run in a workspace's executor,
//! recorded as one run. Created by the API with its job in one transaction,
//! queued for a worker or taken at once by the process that created it;
//! whoever holds the job records each command's result under its fence.

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{Arg, DbRow, args};
use crate::error::StoreError;
use crate::exec_output::{OutputKind, append_output_in};
use crate::executors::owned_workspace;
use crate::jobs::{Lease, begin_fenced, enqueue, finish_in, insert_held};
use crate::model::*;
use crate::seal::Secret;
use sluice_domain::ids::{ExecRunId, OwnerId, WorkerId, WorkspaceId};
use sluice_domain::{exec_run, guard};

const EXEC_COLUMNS: &str = "id, workspace_id, owner_user_id, attempt_id, status, exit_code, commands, results, \
    error_message, error_code, created_at, started_at, finished_at";

fn exec_run_from_row(row: &DbRow) -> Result<ExecRun, StoreError> {
    let commands = serde_json::from_str(&row.text("commands")?)
        .map_err(|e| StoreError::Corrupt(format!("exec_runs.commands: {e}")))?;
    let results = serde_json::from_str(&row.text("results")?)
        .map_err(|e| StoreError::Corrupt(format!("exec_runs.results: {e}")))?;
    let error = match row.opt_text("error_message")? {
        None => None,
        Some(message) => Some(RunError { message, code: row.opt_text("error_code")? }),
    };
    Ok(ExecRun {
        id: row.id("id")?,
        workspace_id: row.id("workspace_id")?,
        owner_user_id: row.id("owner_user_id")?,
        attempt_id: row.id("attempt_id")?,
        status: row.parsed("status")?,
        exit_code: row.opt_int("exit_code")?,
        commands,
        results,
        error,
        created_at: row.int("created_at")?,
        started_at: row.opt_int("started_at")?,
        finished_at: row.opt_int("finished_at")?,
    })
}

/// Binds sealed stdin to its run, so it opens for no other.
fn stdin_aad(run_id: &ExecRunId) -> String {
    format!("exec/{run_id}/stdin")
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// An exec run created with its job already leased to the process that
/// runs it, and the executor's control endpoint it runs in.
#[derive(Debug)]
pub struct TakenExecRun {
    pub run: ExecRun,
    pub lease: Lease,
    pub endpoint: String,
}

/// What [`Store::create_taken_exec_run`] made of an exec run.
#[derive(Debug)]
pub enum CreatedExecRun {
    /// Running, its job held by the caller.
    Taken(TakenExecRun),
    /// Queued for a worker: the executor had no endpoint to run in.
    Queued(ExecRun),
}

impl Store {
    /// Queues an exec run in the owner's workspace, in its current run's
    /// executor. `stdin` holds each command's input (in order): it is
    /// sealed, and `commands` records only its digest. The lifecycle's rule
    /// judges the workspace as read in the same transaction; a refusal
    /// writes nothing. `None` when the workspace is
    /// not theirs.
    pub async fn create_exec_run(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        commands: Vec<ExecCommand>,
        stdin: Vec<Option<String>>,
    ) -> Result<Option<ExecRun>, StoreError> {
        let created = self.insert_exec_run(owner, workspace_id, commands, stdin, None).await?;
        Ok(created.map(|(run, _)| run))
    }

    /// As [`Store::create_exec_run`], for a caller that runs the commands
    /// itself at once: the run is created `running` with its job leased to
    /// `runner` for `lease_ms`, in the same transaction, so no worker's claim
    /// comes between. If the runner is lost, the lease runs out and the
    /// worker that claims the job ends the run as lost (its commands may
    /// have started). Queued instead when the executor has no endpoint to
    /// run in (a worker then judges it).
    pub async fn create_taken_exec_run(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        commands: Vec<ExecCommand>,
        stdin: Vec<Option<String>>,
        runner: &WorkerId,
        lease_ms: i64,
    ) -> Result<Option<CreatedExecRun>, StoreError> {
        let created = self.insert_exec_run(owner, workspace_id, commands, stdin, Some((runner, lease_ms))).await?;
        Ok(created.map(|(run, taken)| match taken {
            Some((lease, endpoint)) => CreatedExecRun::Taken(TakenExecRun { run, lease, endpoint }),
            None => CreatedExecRun::Queued(run),
        }))
    }

    async fn insert_exec_run(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        mut commands: Vec<ExecCommand>,
        stdin: Vec<Option<String>>,
        runner: Option<(&WorkerId, i64)>,
    ) -> Result<Option<(ExecRun, Option<(Lease, String)>)>, StoreError> {
        if stdin.len() != commands.len() {
            return Err(StoreError::Corrupt("one stdin entry per exec command is required".into()));
        }
        for (command, input) in commands.iter_mut().zip(&stdin) {
            command.stdin_digest = input.as_deref().map(StdinDigest::of);
        }
        for (i, command) in commands.iter().enumerate() {
            let texts = command
                .argv
                .iter()
                .map(|a| (format!("commands[{i}].argv"), a.as_str()))
                .chain(command.env.iter().flatten().map(|(k, v)| (format!("commands[{i}].env.{k}"), v.as_str())));
            for (path, text) in texts {
                if guard::holds_raw_credential(text) {
                    return Err(StoreError::Guard(guard::GuardViolation {
                        class: guard::ForbiddenClass::RawCredential,
                        path,
                    }));
                }
            }
        }
        let commands_json = serde_json::to_value(&commands).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let run_id = ExecRunId::from(new_id("run"));
        let sealed_stdin = if stdin.iter().any(Option::is_some) {
            Some(self.sealer.seal(&stdin_aad(&run_id), to_json(&stdin)?.as_bytes())?)
        } else {
            None
        };
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(workspace) = owned_workspace(&mut tx, owner, workspace_id).await? else { return Ok(None) };
        let attempt_id = exec_run::runs_in(&workspace)?.clone();
        let endpoint = match runner {
            None => None,
            Some(_) => tx
                .fetch_optional(
                    "SELECT runtime_endpoint FROM runs WHERE id = $1 AND status = $2 AND runtime_removed_at IS NULL",
                    args![&attempt_id, WorkspaceStatus::Ready.as_str()],
                )
                .await?
                .map(|row| row.opt_text("runtime_endpoint"))
                .transpose()?
                .flatten(),
        };
        let taken = runner.zip(endpoint);
        let status = exec_run::begins(taken.is_some());
        let run = ExecRun {
            id: run_id,
            workspace_id: workspace_id.clone(),
            owner_user_id: owner.clone(),
            attempt_id,
            status,
            exit_code: None,
            commands,
            results: Vec::new(),
            error: None,
            created_at: now,
            started_at: (status == ExecRunStatus::Running).then_some(now),
            finished_at: None,
        };
        tx.execute(
            "INSERT INTO exec_runs (id, workspace_id, owner_user_id, attempt_id, status, commands, results, created_at, \
             started_at, stdin_nonce, stdin_ciphertext) VALUES ($1, $2, $3, $4, $5, $6, '[]', $7, $8, $9, $10)",
            args![
                &run.id,
                workspace_id,
                owner,
                &run.attempt_id,
                run.status.as_str(),
                commands_json.to_string(),
                now,
                run.started_at,
                Arg::Bytes(sealed_stdin.as_ref().map(|s| s.nonce.clone())),
                Arg::Bytes(sealed_stdin.map(|s| s.ciphertext))
            ],
        )
        .await?;
        let taken = match taken {
            None => {
                enqueue(&mut tx, JobKind::Exec, &run.id, now, now).await?;
                None
            }
            Some(((runner, lease_ms), endpoint)) => {
                let lease = insert_held(&mut tx, JobKind::Exec, &run.id, runner, lease_ms, now).await?;
                Some((lease, endpoint))
            }
        };
        tx.commit().await?;
        Ok(Some((run, taken)))
    }

    /// The owner's exec run; `None` when it does not exist or is not theirs.
    pub async fn get_exec_run(&self, owner: &OwnerId, run_id: &ExecRunId) -> Result<Option<ExecRun>, StoreError> {
        self.pool
            .fetch_optional(
                &format!("SELECT {EXEC_COLUMNS} FROM exec_runs WHERE id = $1 AND owner_user_id = $2"),
                args![run_id, owner],
            )
            .await?
            .map(|r| exec_run_from_row(&r))
            .transpose()
    }

    /// An exec run by id, for the worker that runs it.
    pub async fn load_exec_run(&self, run_id: &ExecRunId) -> Result<Option<ExecRun>, StoreError> {
        self.pool
            .fetch_optional(&format!("SELECT {EXEC_COLUMNS} FROM exec_runs WHERE id = $1"), args![run_id])
            .await?
            .map(|r| exec_run_from_row(&r))
            .transpose()
    }

    /// Each command's stdin for the worker that feeds it: empty once the run
    /// has ended (it is dropped then).
    pub async fn open_exec_stdin(&self, run_id: &ExecRunId) -> Result<Vec<Option<Secret<String>>>, StoreError> {
        let Some(row) = self
            .pool
            .fetch_optional(
                "SELECT stdin_nonce, stdin_ciphertext FROM exec_runs WHERE id = $1 AND stdin_nonce IS NOT NULL",
                args![run_id],
            )
            .await?
        else {
            return Ok(Vec::new());
        };
        let sealed =
            crate::seal::Sealed { nonce: row.bytes("stdin_nonce")?, ciphertext: row.bytes("stdin_ciphertext")? };
        let plain = self.sealer.open(&stdin_aad(run_id), &sealed)?;
        let inputs: Vec<Option<String>> =
            serde_json::from_slice(plain.expose()).map_err(|e| StoreError::Corrupt(format!("exec_runs.stdin: {e}")))?;
        Ok(inputs.into_iter().map(|i| i.map(Secret::new)).collect())
    }

    /// Marks an exec run running.
    pub async fn start_exec_run(&self, lease: &Lease, run_id: &ExecRunId) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE exec_runs SET status = $1, started_at = $2 WHERE id = $3",
            args![ExecRunStatus::Running.as_str(), now, run_id],
        )
        .await?;
        tx.commit().await
    }

    /// Records the results so far, with the `output` records of how the
    /// last one ended: each command's result is durable once it finished,
    /// whatever happens to the rest.
    pub async fn record_exec_results(
        &self,
        lease: &Lease,
        run_id: &ExecRunId,
        results: &[ExecCommandResult],
        output: &[(i64, OutputKind, String)],
    ) -> Result<(), StoreError> {
        let (mut tx, _) = begin_fenced(&self.pool, lease).await?;
        tx.execute("UPDATE exec_runs SET results = $1 WHERE id = $2", args![to_json(&results)?, run_id]).await?;
        append_output_in(&mut tx, run_id, output).await?;
        tx.commit().await?;
        self.exec_written();
        Ok(())
    }

    /// Ends an exec run: `completed` with the last command's exit code, or
    /// `failed` with why the machinery broke; `results` (when given) are
    /// all of its results, else those recorded stand; `output` (how the
    /// last command ended) is appended and its job ends in the same
    /// transaction.
    pub async fn finish_exec_run(
        &self,
        lease: &Lease,
        run_id: &ExecRunId,
        results: Option<&[ExecCommandResult]>,
        error: Option<&RunError>,
        output: &[(i64, OutputKind, String)],
    ) -> Result<(), StoreError> {
        let status = exec_run::ends(error);
        let exit_code = results.and_then(|r| r.last()).map(|r| i64::from(r.outcome.exit_code));
        let results = results.map(|r| to_json(&r)).transpose()?;
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE exec_runs SET status = $1, exit_code = $2, error_message = $3, error_code = $4, finished_at = $5, \
             started_at = COALESCE(started_at, $5), results = COALESCE($6, results), stdin_nonce = NULL, \
             stdin_ciphertext = NULL WHERE id = $7",
            args![
                status.as_str(),
                exit_code,
                error.map(|e| e.message.clone()),
                error.and_then(|e| e.code.clone()),
                now,
                results,
                run_id
            ],
        )
        .await?;
        append_output_in(&mut tx, run_id, output).await?;
        finish_in(&mut tx, lease, None, None, now).await?;
        tx.commit().await?;
        self.exec_written();
        Ok(())
    }
}
