//! Executor identities: every executor gets a pair of host uids of its own
//! from a configured range, one for its daemon and one for its workload,
//! so no two executors, and no host account, share a uid with a workload.
//!
//! A pair is a slot `k` of the range (daemon `start + 2k`, workload
//! `start + 2k + 1`), taken by creating `k` (holding the run directory's
//! path) with `O_EXCL` in a registry shared by every install on the host
//! ([`HOST_REGISTRY`]), so no two executors of any install get one slot.
//! The run's directory records its slot; a slot whose run directory is gone
//! is free again (run directories are made before their slot and removed
//! before it is released).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::RuntimeError;

/// Where the slots of the host's executors are recorded, by every install.
pub const HOST_REGISTRY: &str = "/var/lib/sluice/executor-uid-slots";

/// A range of host uids (and the same gids) for executors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidRange {
    pub start: u32,
    pub count: u32,
}

impl UidRange {
    /// The default: far above the ids distributions hand out to accounts
    /// and to subordinate ranges (/etc/subuid starts at 100000).
    pub const DEFAULT: UidRange = UidRange { start: 2_000_000_000, count: 1 << 20 };

    /// Parses `START-END` (inclusive).
    pub fn parse(text: &str) -> Result<UidRange, String> {
        let (a, b) = text.split_once('-').ok_or("expected START-END")?;
        let start: u32 = a.trim().parse().map_err(|_| format!("{a:?} is not a uid"))?;
        let end: u32 = b.trim().parse().map_err(|_| format!("{b:?} is not a uid"))?;
        if start < 1000 || end <= start || end == u32::MAX {
            return Err("the range must start at 1000 or above and hold at least two ids".into());
        }
        Ok(UidRange { start, count: end - start + 1 })
    }

    pub fn slots(&self) -> u32 {
        self.count / 2
    }

    pub fn ids(&self, slot: u32) -> ExecutorIds {
        ExecutorIds { slot, daemon: self.start + 2 * slot, workload: self.start + 2 * slot + 1 }
    }

    /// Accounts or groups of this host whose id falls in the range: those
    /// ids would not be the executors' own.
    pub fn host_accounts_inside(&self) -> Vec<String> {
        let mut found = Vec::new();
        for file in ["/etc/passwd", "/etc/group"] {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            for line in text.lines() {
                let fields: Vec<&str> = line.split(':').collect();
                if let Some(id) = fields.get(2).and_then(|f| f.parse::<u32>().ok())
                    && id >= self.start
                    && id - self.start < self.count
                {
                    found.push(format!("{} {} ({id})", file.trim_start_matches("/etc/"), fields[0]));
                }
            }
        }
        found
    }
}

/// The host ids one executor runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorIds {
    pub slot: u32,
    pub daemon: u32,
    pub workload: u32,
}

/// Hands out slots of a range, recorded in a registry directory.
#[derive(Clone)]
pub struct Allocator {
    range: UidRange,
    dir: PathBuf,
}

fn transient(what: &str, e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Transient(format!("{what}: {e}"))
}

/// The file in a run directory naming its slot.
const SLOT_FILE: &str = "slot";

impl Allocator {
    /// An allocator over `range`, recording slots in `registry` (made
    /// private to root when missing).
    pub fn new(range: UidRange, registry: &Path) -> std::io::Result<Allocator> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(registry)?;
        Ok(Allocator { range, dir: registry.to_path_buf() })
    }

    pub fn range(&self) -> UidRange {
        self.range
    }

    /// The run's ids: the slot its directory records, or a free one taken
    /// now. The run directory must exist, by its absolute path.
    pub fn assign(&self, run_dir: &Path) -> Result<ExecutorIds, RuntimeError> {
        if let Some(ids) = self.recorded(run_dir) {
            return Ok(ids);
        }
        let taken: std::collections::HashSet<u32> = std::fs::read_dir(&self.dir)
            .map_err(|e| transient("executor slots", e))?
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        for slot in (0..self.range.slots()).filter(|s| !taken.contains(s)) {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(self.dir.join(slot.to_string())) {
                Ok(mut file) => {
                    file.write_all(run_dir.as_os_str().as_encoded_bytes())
                        .map_err(|e| transient("executor slot", e))?;
                    std::fs::write(run_dir.join(SLOT_FILE), slot.to_string())
                        .map_err(|e| transient("executor slot", e))?;
                    return Ok(self.range.ids(slot));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(transient("executor slot", e)),
            }
        }
        // Slots of runs whose directories are gone are free again.
        if self.reclaim_stale() > 0 {
            return self.assign(run_dir);
        }
        Err(RuntimeError::Transient(format!("all {} executor uid slots are in use", self.range.slots())))
    }

    /// The ids a run directory records, if any.
    pub fn recorded(&self, run_dir: &Path) -> Option<ExecutorIds> {
        let slot: u32 = std::fs::read_to_string(run_dir.join(SLOT_FILE)).ok()?.trim().parse().ok()?;
        (slot < self.range.slots()).then(|| self.range.ids(slot))
    }

    /// Records that the run directory holding a slot is now `run_dir` (a
    /// pooled executor's, renamed to its run's).
    pub fn moved(&self, run_dir: &Path) -> std::io::Result<()> {
        let slot: u32 = std::fs::read_to_string(run_dir.join(SLOT_FILE))?
            .trim()
            .parse()
            .map_err(|_| std::io::Error::other("the slot file is not a number"))?;
        let tmp = self.dir.join(format!("{slot}.moving"));
        std::fs::write(&tmp, run_dir.as_os_str().as_encoded_bytes())?;
        std::fs::rename(tmp, self.dir.join(slot.to_string()))
    }

    /// Releases the slot of a run whose directory has been removed.
    pub fn release(&self, slot: u32) {
        let _ = std::fs::remove_file(self.dir.join(slot.to_string()));
    }

    /// Whether a directory beside `run_dir` records `slot`: a pooled
    /// executor renamed to its run's before the registry followed it.
    fn held_nearby(run_dir: &Path, slot: u32) -> bool {
        let Some(Ok(entries)) = run_dir.parent().map(std::fs::read_dir) else { return false };
        entries
            .filter_map(Result::ok)
            .any(|e| std::fs::read_to_string(e.path().join(SLOT_FILE)).is_ok_and(|s| s.trim().parse() == Ok(slot)))
    }

    /// Frees every slot whose run directory no longer exists; returns how many.
    pub fn reclaim_stale(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return 0 };
        let mut freed = 0;
        for entry in entries.filter_map(Result::ok) {
            let Ok(run_dir) = std::fs::read_to_string(entry.path()) else { continue };
            let Some(slot) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if run_dir.starts_with('/')
                && !Path::new(&run_dir).exists()
                && !Self::held_nearby(Path::new(&run_dir), slot)
            {
                let _ = std::fs::remove_file(entry.path());
                freed += 1;
            }
        }
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_pair_up() {
        let range = UidRange::parse("3000000-3000009").unwrap();
        assert_eq!(range, UidRange { start: 3_000_000, count: 10 });
        assert_eq!(range.slots(), 5);
        assert_eq!(range.ids(2), ExecutorIds { slot: 2, daemon: 3_000_004, workload: 3_000_005 });
        for bad in ["", "5-4", "0-100", "x-y", "3000000"] {
            assert!(UidRange::parse(bad).is_err(), "{bad}");
        }
        assert!(UidRange::parse("0-65535").unwrap_err().contains("1000"));
        let root_inside = UidRange { start: 0, count: 10 };
        assert!(root_inside.host_accounts_inside().iter().any(|a| a.contains("root")));
        assert!(UidRange::DEFAULT.host_accounts_inside().is_empty());
    }

    #[test]
    fn every_run_gets_its_own_slot_kept_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let alloc = Allocator::new(UidRange { start: 5000, count: 4 }, &dir.path().join("registry")).unwrap();
        let run = |id: &str| {
            let d = dir.path().join(id);
            std::fs::create_dir_all(&d).unwrap();
            d
        };
        let (a, b, c) = (run("run_a"), run("run_b"), run("run_c"));
        let ia = alloc.assign(&a).unwrap();
        let ib = alloc.assign(&b).unwrap();
        assert_ne!(ia.workload, ib.workload);
        assert_eq!(alloc.assign(&a).unwrap(), ia, "a run keeps its slot");
        assert!(alloc.assign(&c).is_err(), "two slots, both taken");
        // run_a's directory goes away: its slot is reclaimed for the next run.
        std::fs::remove_dir_all(&a).unwrap();
        assert_eq!(alloc.assign(&c).unwrap().slot, ia.slot);
        alloc.release(ib.slot);
        let d = run("run_d");
        assert_eq!(alloc.assign(&d).unwrap().slot, ib.slot);
        // Another install sharing the registry never gets a taken slot.
        let other = Allocator::new(UidRange { start: 5000, count: 4 }, &dir.path().join("registry")).unwrap();
        let e = run("run_e");
        assert!(other.assign(&e).is_err(), "both slots are taken by the first install");
    }

    #[test]
    fn a_renamed_directory_keeps_its_slot_before_and_after_the_registry_follows() {
        let dir = tempfile::tempdir().unwrap();
        let alloc = Allocator::new(UidRange { start: 5000, count: 2 }, &dir.path().join("registry")).unwrap();
        let pooled = dir.path().join("pool_p");
        std::fs::create_dir_all(&pooled).unwrap();
        let ids = alloc.assign(&pooled).unwrap();
        let run = dir.path().join("run_r");
        std::fs::rename(&pooled, &run).unwrap();
        assert_eq!(alloc.reclaim_stale(), 0, "the slot is held by the renamed directory");
        assert_eq!(alloc.recorded(&run), Some(ids));
        alloc.moved(&run).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("registry").join(ids.slot.to_string())).unwrap(),
            run.display().to_string()
        );
        std::fs::remove_dir_all(&run).unwrap();
        assert_eq!(alloc.reclaim_stale(), 1, "freed once the run's directory is gone");
    }
}
