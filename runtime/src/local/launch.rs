//! A fresh launch: the run's directory, its uids, cgroup and disk, the
//! daemon started in its sandbox, and adoption of an executor a first
//! launcher already started.

use super::*;

/// The daemon's launch argument: `--pooled` for a pooled executor (its
/// launch comes with its assign). `=` joins the value, so no launch id can
/// be read as an option.
pub(super) fn launch_arg(request: &LaunchRequest) -> String {
    if request.launch.is_empty() { "--pooled".into() } else { format!("--launch={}", request.launch) }
}

impl LocalRuntime {
    /// Starts the run's executor from nothing (or adopts the one a
    /// launcher of the same run started).
    pub(super) async fn launch_fresh(&self, request: &LaunchRequest) -> Result<Launched, RuntimeError> {
        let mut phases = Vec::new();
        let mut clock = std::time::Instant::now();
        let mut lap = |name: &'static str| {
            phases.push((name, clock.elapsed()));
            clock = std::time::Instant::now();
        };
        let dir = run_dir(&self.executors_dir, &request.run_id);
        // Searchable by the executor's uids (the plain fallback reaches its
        // places through it), listable by no one but root.
        make_dir(&dir, 0o711, None)?;
        // Held until the pid file is written: a second launcher of the same
        // run waits here, then adopts. The kernel drops it if we die.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("launch.lock"))
            .map_err(|e| transient("launch lock", e))?;
        let lock = tokio::task::spawn_blocking(move || {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own.
            let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
            (rc, lock)
        })
        .await
        .map_err(|e| transient("launch lock", e))?;
        if lock.0 != 0 {
            return Err(transient("launch lock", std::io::Error::last_os_error()));
        }
        if self.live_pid(&request.run_id).is_some() {
            let record = self.record(&request.run_id);
            return Ok(Launched { record, published: None, phases, pool: None, image_pull: None });
        }
        lap("launch_lock");
        let limits = limits(request);
        let ids = match &self.identities {
            Some(allocator) => Some(allocator.assign(&dir)?),
            None => None,
        };
        lap("uid_slot");
        let (image, published, image_pull) = match self.image_root(request, &dir).await? {
            Some((image, published, pull)) => (Some(image), Some(published), pull),
            None => (None, None, None),
        };
        lap("image");
        make_dir(&dir.join("workspace"), 0o700, ids.map(|i| i.workload))?;
        if let (Some(mib), DiskSupport::Loop { mkfs, mount, .. }) = (self.disk_mib(request), &self.disk) {
            disk::attach((mkfs, mount), &dir, &dir.join("workspace"), mib, ids.map(|i| i.workload))
                .await
                .map_err(|e| transient("executor disk", e))?;
        }
        make_dir(&dir.join("state"), 0o700, ids.map(|i| i.daemon))?;
        make_dir(&dir.join("run"), 0o700, ids.map(|i| i.daemon))?;
        if let Some(secret) = &request.boot_secret {
            let secret_file = dir.join("run").join("boot-secret.json");
            crate::write_secret_file(&secret_file, secret.expose()).map_err(|e| transient("boot secret", e))?;
            if let Some(ids) = ids {
                std::os::unix::fs::chown(&secret_file, Some(ids.daemon), Some(ids.daemon))
                    .map_err(|e| transient("boot secret owner", e))?;
            }
        }
        if let Some(pem) = &request.egress_authority {
            crate::write_public_file(&dir.join("run").join(sluice_protocol::egress::AUTHORITY_NAME), pem)
                .map_err(|e| transient("egress authority", e))?;
        }
        crate::start_lifetime(&dir, self.max_lifetime).map_err(|e| transient("executor lifetime", e))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("daemon.log"))
            .map_err(|e| transient("daemon log", e))?;
        let log_err = log.try_clone().map_err(|e| transient("daemon log", e))?;
        lap("directories");
        let cgroup_handles = if self.cgroups.available() {
            self.cgroups
                .create(&self.cgroup_name(&request.run_id), &limits)
                .map_err(|e| transient("executor cgroup", e))?
        } else {
            Vec::new()
        };
        lap("cgroup");
        let cgroup_fds = cgroup::raw(&cgroup_handles);
        let binary = std::fs::File::open(&self.daemon_binary).map_err(|e| RuntimeError::Permanent {
            message: format!("cannot open the daemon {}: {e}", self.daemon_binary.display()),
            code: "runtime-config",
        })?;
        let binary_fd = std::os::fd::AsRawFd::as_raw_fd(&binary);

        // As `docker run`: the image's entrypoint, then the spec's command
        // or else the image's.
        let workload_command = match &image {
            Some(image) => image.config.command(&request.spec.command),
            None => request.spec.command.clone(),
        };
        let command_json = serde_json::to_string(&workload_command).unwrap_or_else(|_| "[]".into());
        let mut command = self.daemon_command(request, &dir, ids, Some(binary_fd), image.as_ref());
        command.env_clear().env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        if let Some(image) = &image {
            command.envs(image.config.env_pairs());
        }
        if !request.launch.is_empty() {
            // A pooled daemon gets its command with its assign.
            command.env("SLUICED_COMMAND", command_json);
        }
        command
            .envs(if request.spec.egress.is_some() { sluice_protocol::egress::proxy_env() } else { Vec::new() })
            .envs(if request.egress_authority.is_some() { sluice_protocol::egress::trust_env() } else { Vec::new() })
            .envs(&request.spec.env)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .process_group(0);
        let exec_by_fd = matches!(self.sandbox, Sandbox::None(_)) && ids.is_some();
        let isolate_network = !request.spec.network;
        let tmp_options = std::ffi::CString::new(format!("size={TMP_BYTES},mode=1777")).expect("no NUL inside");
        let own_disk = dir.join("workspace");
        let other_disks: Vec<std::ffi::CString> = disk::mounted_under(&self.executors_dir)
            .into_iter()
            .filter(|m| *m != own_disk)
            .filter_map(|m| std::ffi::CString::new(m.into_os_string().into_encoded_bytes()).ok())
            .collect();
        // SAFETY: only async-signal-safe calls (write, fcntl) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // Inside the executor's cgroup before it runs anything.
                cgroup::join(&cgroup_fds)?;
                // The OOM killer spares the daemon over its workload (which
                // the daemon puts back to the ordinary score), where the host
                // lets root lower a score (it takes CAP_SYS_RESOURCE).
                let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"-500".as_ptr().cast(), 4);
                    libc::close(fd);
                }
                if exec_by_fd {
                    if libc::fcntl(binary_fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // Without bubblewrap, root still gives the executor
                    // namespaces of its own for what needs no setup.
                    plain_namespaces(isolate_network, &tmp_options, &other_disks)?;
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| RuntimeError::Permanent {
            message: format!("cannot start the daemon {}: {e}", self.daemon_binary.display()),
            code: "runtime-config",
        })?;
        drop((binary, cgroup_handles));
        let pid = child.id().unwrap_or_default();
        // Not waited for: the executor outlives this worker. Tokio reaps it
        // if it ends while this process still runs.
        drop(child);
        std::fs::write(dir.join("daemon.pid"), pid.to_string()).map_err(|e| transient("pid file", e))?;
        drop(lock);
        lap("spawn");
        Ok(Launched { record: self.record(&request.run_id), published, phases, pool: None, image_pull })
    }

    /// For a workspace that names an image: the image made ready (pulled
    /// and unpacked once per host) and the run's root made from it. `None`
    /// for `registryId: "host"`, which runs on the host's own filesystem.
    async fn image_root(
        &self,
        request: &LaunchRequest,
        dir: &Path,
    ) -> Result<Option<(ImageRoot, sluice_store::PublishedImage, Option<crate::ImagePull>)>, RuntimeError> {
        if request.registry_id == sluice_images::HOST {
            return Ok(None);
        }
        let unsupported = |message: String| RuntimeError::Permanent { message, code: "image-unsupported" };
        let name =
            sluice_images::ImageName::new(&request.registry_id, &request.repository, &request.tag).map_err(|e| {
                unsupported(format!("image {}/{}:{}: {e}", request.registry_id, request.repository, request.tag))
            })?;
        let Some(cache) = &self.images else {
            return Err(unsupported(format!(
                "image {name}: this runtime has no image cache; registryId \"host\" runs on the host's filesystem"
            )));
        };
        if let Sandbox::None(why) = &self.sandbox {
            return Err(unsupported(format!(
                "image {name}: an image's root needs bubblewrap ({why}); registryId \"host\" runs on the host's \
                 filesystem"
            )));
        }
        let unmapped = cache.registries().get(&name.registry_id).is_none();
        let prepared = match cache.prepare_tracked(&name, request.image_progress.clone()).await {
            // Not in the cache and no registry to ask: the host's Docker
            // Engine may have it.
            Err(sluice_images::ImageError::NotFound { .. })
                if unmapped
                    && matches!(name.reference, sluice_images::TagOrDigest::Tag(_))
                    && self.take_from_docker_engine(cache, &name).await? =>
            {
                cache.prepare(&name).await?
            }
            prepared => prepared?,
        };
        std::fs::write(dir.join(rootfs::IMAGE_FILE), prepared.digest.as_str())
            .map_err(|e| transient("run directory", e))?;
        let root = rootfs::attach(&self.roots, dir, &prepared.rootfs, self.identities.is_some())
            .await
            .map_err(|e| transient("executor root", e))?;
        if prepared.pulled.is_some() {
            // This run's image is named in its directory by now: spared.
            self.bound_image_cache().await;
        }
        let published = sluice_store::PublishedImage {
            reference: name.to_string(),
            digest_reference: format!("{}@{}", request.repository, prepared.digest),
            digest: prepared.digest.to_string(),
        };
        let pull = prepared.pulled.map(|p| crate::ImagePull { bytes: p.bytes, seconds: p.seconds });
        Ok(Some((ImageRoot { root, config: prepared.config }, published, pull)))
    }
}
