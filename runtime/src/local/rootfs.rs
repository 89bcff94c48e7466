//! An executor's root filesystem when its workspace names an image: the
//! image's unpacked tree (shared by every executor of the image, never
//! written) is the lower layer of an overlay whose upper is the run's own;
//! where the host cannot mount an overlay (not root, no overlayfs), the
//! run gets a copy of the tree, and the posture says so.
//!
//! The run's directory holds `root/` (what the executor sees as `/`) and,
//! with an overlay, `upper/` and `work/`; `image` names the image's digest.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::disk::{self, find_program, run};

/// The file in a run's directory naming the image it runs (its digest).
pub(super) const IMAGE_FILE: &str = "image";

/// How this host gives executors an image's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootSupport {
    Overlay {
        mount: PathBuf,
        umount: PathBuf,
    },
    /// A copy of the tree per executor, and why no overlay.
    Copy(String),
}

impl RootSupport {
    pub fn detect(root: bool) -> RootSupport {
        if !root {
            return RootSupport::Copy("mounting an overlay takes root".into());
        }
        let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !filesystems.lines().any(|l| l.split_whitespace().last() == Some("overlay")) {
            return RootSupport::Copy("this kernel has no overlayfs".into());
        }
        match (find_program("mount"), find_program("umount")) {
            (Some(mount), Some(umount)) => RootSupport::Overlay { mount, umount },
            _ => RootSupport::Copy("mount and umount are not installed (util-linux)".into()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            RootSupport::Overlay { .. } => "image roots: overlay of the cached image (nothing copied)".into(),
            RootSupport::Copy(why) => format!("image roots: a copy of the image per executor ({why})"),
        }
    }
}

/// Makes `run_dir/root` the image's root for the executor. Idempotent: a
/// mounted overlay or a finished copy is kept (a restart on the run's own
/// disk mounts its upper again).
pub(super) async fn attach(
    support: &RootSupport,
    run_dir: &Path,
    image: &Path,
    owners: bool,
) -> std::io::Result<PathBuf> {
    let root = run_dir.join("root");
    match support {
        RootSupport::Overlay { mount, .. } => {
            if disk::is_mounted(&root) {
                return Ok(root);
            }
            for dir in ["upper", "work", "root"] {
                std::fs::create_dir_all(run_dir.join(dir))?;
            }
            // The merged root takes the upper's mode: the image's, not the umask's.
            let mode = std::fs::metadata(image)?.permissions();
            std::fs::set_permissions(run_dir.join("upper"), mode)?;
            let options = format!(
                "lowerdir={},upperdir={},workdir={}",
                image.display(),
                run_dir.join("upper").display(),
                run_dir.join("work").display()
            );
            let mut command = Command::new(mount);
            command.args(["-t", "overlay", "overlay", "-o"]).arg(format!("{options},nosuid,nodev")).arg(&root);
            run(&mut command, "mounting the image's overlay").await?;
        }
        RootSupport::Copy(_) => {
            if root.is_dir() {
                return Ok(root);
            }
            let partial = run_dir.join("root.partial");
            let (image, target) = (image.to_path_buf(), partial.clone());
            tokio::task::spawn_blocking(move || {
                let _ = sluice_images::remove_tree(&target);
                sluice_images::copy_tree(&image, &target, owners)
            })
            .await
            .map_err(std::io::Error::other)??;
            std::fs::rename(&partial, &root)?;
        }
    }
    Ok(root)
}

/// Unmounts the run's overlay, if mounted (lazily: a process still inside
/// keeps it until it ends).
pub(super) async fn detach(support: &RootSupport, run_dir: &Path) -> std::io::Result<()> {
    let root = run_dir.join("root");
    if let RootSupport::Overlay { umount, .. } = support
        && disk::is_mounted(&root)
    {
        run(Command::new(umount).arg("--lazy").arg(&root), "unmounting the image's overlay").await?;
    }
    Ok(())
}
