//! The warm pool on the local runtime: started executors waiting for a
//! create of their image, taken by one rename, tended back to their level.

use super::*;

/// In a pooled executor's directory: the image it was started for.
pub(super) const POOL_IMAGE_FILE: &str = "pool-image";
/// In a pooled executor's directory: its daemon answered as pooled, so a
/// launch may take it.
pub(super) const POOL_READY_FILE: &str = "pool-ready";
/// In a pooled executor's directory, and the run's once taken: the pooled
/// executor's name (its daemon's command line names its directory, its
/// cgroup is named so).
pub(super) const ORIGIN_FILE: &str = "origin";
/// In a run's directory taken from the pool: its daemon has the run.
pub(super) const ASSIGNED_FILE: &str = "assigned";
/// Held by the one process that tends the executors directory's pool.
pub(super) const POOL_LOCK_FILE: &str = "pool.lock";
/// How long a pooled executor may take to answer before it is replaced.
pub(super) const POOL_START_LIMIT: Duration = Duration::from_secs(60);
/// How long a taken executor's daemon gets to answer its assign.
pub(super) const ASSIGN_WAIT: Duration = Duration::from_secs(10);

/// How many pooled executors one launch tries before it starts its own.
pub(super) const POOL_TAKE_TRIES: usize = 3;
/// A pooled executor being removed is renamed so first.
pub(super) const DISCARD_PREFIX: &str = "discard_";

/// Whether the directory was made more than `limit` ago.
pub(super) fn started_before(dir: &Path, limit: Duration) -> bool {
    std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|at| at.elapsed().unwrap_or_default() > limit)
}

/// The pooled executor a directory was started as, if it was.
pub(super) fn origin(dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(dir.join(ORIGIN_FILE)).ok()?;
    let name = name.trim();
    (name.starts_with(crate::pool::POOL_PREFIX) && !name.contains('/')).then(|| name.to_owned())
}

/// Renames `from` to `to` unless `to` exists (`renameat2` with
/// `RENAME_NOREPLACE`): of two takers of one pooled executor, exactly one
/// succeeds, and a run's directory is never replaced.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let to = std::ffi::CString::new(to.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: two NUL-terminated paths that outlive the call.
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::RENAME_NOREPLACE) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

impl LocalRuntime {
    /// The pool a launch may take from: its image's, when it has one and
    /// the launch fits.
    pub(super) fn pool_for(&self, request: &LaunchRequest) -> Option<&PoolSpec> {
        let image = PoolSpec::image_of(&request.registry_id, &request.repository, &request.tag);
        self.pool.iter().find(|p| p.image == image).filter(|_| crate::pool::unfit(request).is_none())
    }

    /// The image's pooled executors ready to be taken, by name.
    pub(super) fn ready_pooled(&self, image: &str) -> Vec<PathBuf> {
        let mut ready: Vec<PathBuf> = self
            .pooled_dirs()
            .into_iter()
            .filter(|dir| dir.join(POOL_READY_FILE).exists())
            .filter(|dir| std::fs::read_to_string(dir.join(POOL_IMAGE_FILE)).is_ok_and(|i| i == image))
            .collect();
        ready.sort();
        ready
    }

    /// Every pooled executor's directory, taken or not yet.
    pub(super) fn pooled_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.executors_dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(crate::pool::POOL_PREFIX)))
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect()
    }

    /// Takes one of the image's ready executors for the run whose directory
    /// is `dir`, by renaming its directory to the run's: the kernel lets
    /// exactly one taker rename it, and never over a run's directory.
    pub(super) fn take_pooled(&self, image: &str, dir: &Path) -> std::io::Result<bool> {
        for candidate in self.ready_pooled(image) {
            match rename_no_replace(&candidate, dir) {
                Ok(()) => return Ok(true),
                // Another launch took it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                // The run has its directory already: it launches as it is.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// Makes a taken executor the run's: its uid slot follows the directory,
    /// its cgroup gets the spec's limits, its lifetime starts, and its daemon
    /// gets the run's launch, secret, command and environment.
    pub(super) async fn finish_take(&self, request: &LaunchRequest, dir: &Path) -> Result<(), RuntimeError> {
        if self.live_pid(&request.run_id).is_none() {
            return Err(transient("pooled executor", "its daemon ended before it was assigned"));
        }
        if let Some(allocator) = &self.identities {
            allocator.moved(dir).map_err(|e| transient("executor slot", e))?;
        }
        if self.cgroups.available() {
            let cgroup = self.cgroup_name(&request.run_id);
            self.cgroups.create(&cgroup, &limits(request)).map_err(|e| transient("executor cgroup", e))?;
        }
        crate::start_lifetime(dir, self.max_lifetime).map_err(|e| transient("executor lifetime", e))?;
        let mut assignment = crate::pool::assignment(request).map_err(|e| transient("pooled executor", e))?;
        if let Some((_, config)) = self.pooled_image(dir) {
            // As `docker run`: the image's entrypoint, then the spec's
            // command or else the image's.
            assignment.command = config.command(&request.spec.command);
        }
        let token = sluice_store::Secret::new(assignment.boot_secret.control_token.clone());
        let socket = control_socket(&self.executors_dir, &request.run_id);
        let client = DaemonClient::new(&format!("unix://{}", socket.display()), token)
            .map_err(|e| transient("pooled executor", e))?;
        client.assign(&assignment, ASSIGN_WAIT).await.map_err(|e| transient("assigning the pooled executor", e))?;
        std::fs::write(dir.join(ASSIGNED_FILE), b"").map_err(|e| transient("pooled executor", e))?;
        Ok(())
    }

    /// The image a pooled executor was started on (its digest, and how it
    /// runs), when it was started on one.
    pub(super) fn pooled_image(&self, dir: &Path) -> Option<(sluice_images::Digest, sluice_images::RunConfig)> {
        let text = std::fs::read_to_string(dir.join(rootfs::IMAGE_FILE)).ok()?;
        let digest = sluice_images::Digest::parse(text.trim())?;
        let record = self.images.as_ref()?.store().image(&digest)?;
        Some((digest, record.config))
    }

    /// What a run taken from the pool records as its image: as a fresh
    /// launch of it would.
    pub(super) fn pooled_published(&self, request: &LaunchRequest, dir: &Path) -> Option<sluice_store::PublishedImage> {
        let (digest, _) = self.pooled_image(dir)?;
        let name = sluice_images::ImageName::new(&request.registry_id, &request.repository, &request.tag).ok()?;
        Some(sluice_store::PublishedImage {
            reference: name.to_string(),
            digest_reference: format!("{}@{digest}", request.repository),
            digest: digest.to_string(),
        })
    }

    /// Removes a pooled executor, unless a launch takes it first: it is
    /// renamed out of the pool (the same arbitration as a take), then removed.
    pub(super) async fn discard(&self, pool_id: &str) -> Result<(), RuntimeError> {
        let discarded = format!("{DISCARD_PREFIX}{pool_id}");
        let from = run_dir(&self.executors_dir, pool_id);
        match rename_no_replace(&from, &run_dir(&self.executors_dir, &discarded)) {
            Ok(()) => self.remove(&discarded, "").await,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(transient("discarding a pooled executor", e)),
        }
    }

    /// Pooled executors renamed out of the pool, not yet removed.
    pub(super) fn discarded_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.executors_dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(DISCARD_PREFIX)))
            .map(|e| e.path())
            .collect()
    }

    /// Whether a pooled executor's daemon answers, as pooled.
    pub(super) async fn answers_pooled(&self, pool_id: &str) -> bool {
        let socket = control_socket(&self.executors_dir, pool_id);
        match DaemonClient::new(&format!("unix://{}", socket.display()), Secret::new(String::new())) {
            Ok(client) => client.pooled().await,
            Err(_) => false,
        }
    }

    /// Starts one pooled executor of `spec`'s image: a daemon with no run.
    pub(super) async fn start_pooled(&self, spec: &PoolSpec) -> Result<(), RuntimeError> {
        let pool_id = sluice_store::clock::new_id(crate::pool::POOL_PREFIX.trim_end_matches('_'));
        let dir = run_dir(&self.executors_dir, &pool_id);
        make_dir(&dir, 0o711, None)?;
        std::fs::write(dir.join(POOL_IMAGE_FILE), &spec.image).map_err(|e| transient("pooled executor", e))?;
        std::fs::write(dir.join(ORIGIN_FILE), &pool_id).map_err(|e| transient("pooled executor", e))?;
        let (registry_id, repository, tag) = spec.parts();
        let request = LaunchRequest {
            workspace_id: String::new(),
            run_id: pool_id,
            launch: String::new(),
            registry_id: registry_id.to_owned(),
            repository: repository.to_owned(),
            tag: tag.to_owned(),
            spec: Default::default(),
            boot_secret: None,
            capture_interval_ms: self.pool_capture_interval_ms,
            egress_authority: None,
            image_progress: None,
        };
        self.launch_fresh(&request).await.map(drop)
    }

    /// One pass over the pool: see [`Adapter::tend_pool`].
    pub(super) async fn tend(&self) -> Result<Vec<PoolLevel>, RuntimeError> {
        let mut levels: Vec<PoolLevel> = self
            .pool
            .iter()
            .map(|p| PoolLevel { image: p.image.clone(), target: p.size, ..Default::default() })
            .collect();
        // One tender per executors directory; another process's pool is left to it.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.executors_dir.join(POOL_LOCK_FILE))
            .map_err(|e| transient("pool lock", e))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(levels);
        }
        // Removals a tender died in the middle of.
        for dir in self.discarded_dirs() {
            if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
                self.remove(name, "").await?;
            }
        }
        for dir in self.pooled_dirs() {
            let Some(pool_id) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
            let image = std::fs::read_to_string(dir.join(POOL_IMAGE_FILE)).unwrap_or_default();
            let level = levels.iter_mut().find(|l| l.image == image);
            let live = self.live_pid(&pool_id).is_some();
            let kept = level.as_ref().is_some_and(|l| l.idle + l.starting < l.target);
            let (Some(level), true, true) = (level, live, kept) else {
                self.discard(&pool_id).await?;
                continue;
            };
            if dir.join(POOL_READY_FILE).exists() {
                level.idle += 1;
            } else if self.answers_pooled(&pool_id).await {
                std::fs::write(dir.join(POOL_READY_FILE), b"").map_err(|e| transient("pooled executor", e))?;
                level.idle += 1;
            } else if started_before(&dir, POOL_START_LIMIT) {
                tracing::warn!(pool = %pool_id, "a pooled executor never answered: replaced");
                self.discard(&pool_id).await?;
            } else {
                level.starting += 1;
            }
        }
        // A pooled executor's cgroup outlives its directory only if a removal
        // died half way; a taken one's is named in its run's directory.
        let taken: std::collections::HashSet<String> = std::fs::read_dir(&self.executors_dir)
            .map(|entries| entries.filter_map(Result::ok).filter_map(|e| origin(&e.path())).collect())
            .unwrap_or_default();
        for cgroup in self.cgroups.named(crate::pool::POOL_PREFIX) {
            if !taken.contains(&cgroup) && !run_dir(&self.executors_dir, &cgroup).exists() {
                self.cgroups.kill(&cgroup).await.map_err(|e| transient("pooled executor's cgroup", e))?;
            }
        }
        for (spec, level) in self.pool.iter().zip(levels.iter_mut()) {
            for _ in (level.idle + level.starting)..spec.size {
                self.start_pooled(spec).await?;
                level.starting += 1;
            }
        }
        drop(lock);
        Ok(levels)
    }
}
