//! Size-limited executor disks for the local runtime: the workspace is an
//! ext4 filesystem in a sparse image file, mounted through a loop device
//! over the run's `workspace/` directory. A write past the size fails with
//! ENOSPC inside the executor; the host's filesystem never holds more than
//! the image's size for it. Needs root, `mkfs.ext4` and loop devices.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

/// The image file in a run's directory.
const IMAGE: &str = "disk.img";

/// Whether this host can make executor disks, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskSupport {
    Loop { mkfs: PathBuf, mount: PathBuf, umount: PathBuf },
    None(String),
}

pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

impl DiskSupport {
    pub fn detect(root: bool) -> DiskSupport {
        if !root {
            return DiskSupport::None("mounting a disk image takes root".into());
        }
        if !Path::new("/dev/loop-control").exists() {
            return DiskSupport::None("this host has no loop devices".into());
        }
        match (find_program("mkfs.ext4"), find_program("mount"), find_program("umount")) {
            (Some(mkfs), Some(mount), Some(umount)) => DiskSupport::Loop { mkfs, mount, umount },
            (None, _, _) => DiskSupport::None("mkfs.ext4 is not installed (e2fsprogs)".into()),
            _ => DiskSupport::None("mount and umount are not installed (util-linux)".into()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            DiskSupport::Loop { .. } => "disk limits enforced (ext4 image on a loop device)".into(),
            DiskSupport::None(why) => format!("no disk limits ({why})"),
        }
    }
}

pub(crate) async fn run(command: &mut Command, what: &str) -> std::io::Result<()> {
    let out = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).output().await?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("{what}: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// The mount points of this process's mount namespace.
fn mount_points() -> Vec<PathBuf> {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else { return Vec::new() };
    // The fifth field is the mount point (spaces escaped as \040).
    mounts.lines().filter_map(|line| line.split(' ').nth(4)).map(|m| PathBuf::from(m.replace("\\040", " "))).collect()
}

/// Whether something is mounted on `dir`.
/// Whether the run's directory holds a disk image of its own.
pub fn has_image(run_dir: &Path) -> bool {
    run_dir.join(IMAGE).is_file()
}

pub fn is_mounted(dir: &Path) -> bool {
    mount_points().iter().any(|m| m == dir)
}

/// What is mounted below `dir` (executors' disks).
pub fn mounted_under(dir: &Path) -> Vec<PathBuf> {
    mount_points().into_iter().filter(|m| m.starts_with(dir) && m != dir).collect()
}

/// Makes (once) and mounts the run's disk of `mib` MiB over `workspace`,
/// owned by `owner`. Idempotent: a disk already mounted is kept.
pub async fn attach(
    (mkfs, mount): (&Path, &Path),
    run_dir: &Path,
    workspace: &Path,
    mib: u64,
    owner: Option<u32>,
) -> std::io::Result<()> {
    if is_mounted(workspace) {
        return Ok(());
    }
    let image = run_dir.join(IMAGE);
    if !image.exists() {
        let partial = run_dir.join(format!("{IMAGE}.new"));
        let file = std::fs::File::create(&partial)?;
        file.set_len(mib << 20)?;
        drop(file);
        let mut mkfs = Command::new(mkfs);
        mkfs.args(["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1"]).arg(&partial);
        run(&mut mkfs, "mkfs.ext4").await?;
        std::fs::rename(&partial, &image)?;
    }
    let mut mount = Command::new(mount);
    mount.args(["-o", "loop,nosuid,nodev"]).arg(&image).arg(workspace);
    run(&mut mount, "mount").await?;
    let _ = std::fs::remove_dir(workspace.join("lost+found"));
    if let Some(id) = owner {
        std::os::unix::fs::chown(workspace, Some(id), Some(id))?;
    }
    std::fs::set_permissions(workspace, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(())
}

/// Unmounts the run's disk, if mounted (lazily, should a process still
/// hold it: the loop device goes once the last user does).
pub async fn detach(umount: &Path, workspace: &Path) -> std::io::Result<()> {
    if !is_mounted(workspace) {
        return Ok(());
    }
    let mut umount = Command::new(umount);
    umount.arg("--lazy").arg(workspace);
    run(&mut umount, "umount").await
}
