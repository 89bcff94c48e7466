//! Every process of the workload, and how a final flush ends them all.
//!
//! The daemon starts the workload's processes (the managed process, exec
//! commands, durable commands) through [`Processes::spawn`], and it is a
//! child subreaper: whatever those processes start and abandon (a
//! double fork, `setsid`, a daemonized server) is re-parented to the daemon
//! rather than to the executor's init, so it stays among the daemon's
//! descendants. Where the workload has a uid of its own, every process of
//! that uid counts too. [`Processes::stop_all`] closes the gate (nothing
//! of the workload starts again), then SIGTERMs, waits the grace, and
//! SIGKILLs until none is left: only then may a final snap be taken.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::workload::WorkloadIds;

/// How long the SIGKILL phase may take before the survivors are reported.
const KILL_WITHIN: Duration = Duration::from_secs(5);
/// How often the process table is read while waiting.
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A final flush stopped the workload: nothing of it starts again.
    #[error("a final flush ended this executor's work; it takes no new work")]
    Finalized,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

#[derive(Default)]
struct Registry {
    /// Children the daemon spawned itself: Tokio waits for those, so the
    /// orphan reaper leaves them alone.
    spawned: HashSet<u32>,
    /// Processes a stop signalled.
    stopped: HashSet<u32>,
    /// Set when a final flush began: spawning is refused from then on.
    closed: bool,
}

/// The workload's processes: the gate they start through and the means
/// to end them.
pub struct Processes {
    ids: Option<WorkloadIds>,
    /// Whether the whole process tree under this process is the
    /// workload's (a daemon), or only what it spawned itself (a capture
    /// engine embedded in another program).
    whole_tree: bool,
    registry: Mutex<Registry>,
}

impl Processes {
    /// A daemon's workload: everything under the daemon, and every
    /// process of the workload's own uid.
    pub fn new(ids: Option<WorkloadIds>) -> Processes {
        Processes { ids, whole_tree: true, registry: Mutex::new(Registry::default()) }
    }

    /// Only the processes spawned through this handle, for a program that
    /// runs other things of its own beside the capture engine.
    pub fn spawned_only() -> Processes {
        Processes { ids: None, whole_tree: false, registry: Mutex::new(Registry::default()) }
    }

    /// Who the workload runs as.
    pub fn ids(&self) -> Option<WorkloadIds> {
        self.ids
    }

    /// Spawns `command` (already confined to the workload) unless a final
    /// flush closed the gate. The gate and the spawn share one lock, so a
    /// stop that closed it sees every process started before.
    pub fn spawn(&self, command: &mut Command) -> Result<Child, SpawnError> {
        let mut registry = self.registry.lock().unwrap();
        if registry.closed {
            return Err(SpawnError::Finalized);
        }
        let child = command.spawn()?;
        if let Some(pid) = child.id() {
            registry.spawned.insert(pid);
        }
        Ok(child)
    }

    /// Whether a final flush closed the gate.
    pub fn closed(&self) -> bool {
        self.registry.lock().unwrap().closed
    }

    /// Whether a stop signalled the process `pid`.
    pub fn was_stopped(&self, pid: u32) -> bool {
        self.registry.lock().unwrap().stopped.contains(&pid)
    }

    /// The workload's live processes, as the process table reads now.
    fn live(&self) -> Vec<u32> {
        if !self.whole_tree {
            let spawned = self.registry.lock().unwrap().spawned.clone();
            return spawned.into_iter().filter(|pid| read_entry(*pid).is_some_and(|e| !e.zombie)).collect();
        }
        let table = read_table();
        workload_processes(&table, std::process::id(), self.workload_uid())
    }

    /// The uid whose every process is the workload's: only one that is not
    /// the daemon's own.
    fn workload_uid(&self) -> Option<u32> {
        // SAFETY: getuid cannot fail.
        let own = unsafe { libc::getuid() };
        self.ids.map(|ids| ids.uid).filter(|uid| *uid != own)
    }

    fn signal_all(&self, pids: &[u32], signal: i32) {
        let mut registry = self.registry.lock().unwrap();
        for pid in pids {
            registry.stopped.insert(*pid);
            if let Ok(pid) = i32::try_from(*pid) {
                // SAFETY: a signal to a process of the workload; one that
                // ended meanwhile fails harmlessly.
                unsafe {
                    libc::kill(pid, signal);
                }
            }
        }
    }

    /// Ends every process of the workload: the gate closes, SIGTERM goes
    /// to all, SIGKILL to whatever is left once `grace` has passed (or
    /// starts meanwhile, which only a process already running can do).
    /// Answers how many survived (0: nothing of the workload runs).
    pub async fn stop_all(&self, grace: Duration) -> usize {
        self.registry.lock().unwrap().closed = true;
        let mut termed: HashSet<u32> = HashSet::new();
        // Each process gets one SIGTERM (the ones started meanwhile too).
        let survivors = self
            .until_none_left(grace, |live| {
                let new: Vec<u32> = live.iter().copied().filter(|pid| termed.insert(*pid)).collect();
                self.signal_all(&new, libc::SIGTERM);
            })
            .await;
        if survivors == 0 {
            return 0;
        }
        // Stopped first, so none of them forks between the reading of the
        // table and its SIGKILL.
        self.until_none_left(KILL_WITHIN, |live| {
            self.signal_all(live, libc::SIGSTOP);
            self.signal_all(live, libc::SIGKILL);
        })
        .await
    }

    /// Reads the workload's processes and `signal`s them until none is
    /// left or `within` has passed; answers how many were left.
    async fn until_none_left(&self, within: Duration, mut signal: impl FnMut(&[u32])) -> usize {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            self.reap_orphans();
            let live = self.live();
            if live.is_empty() || tokio::time::Instant::now() >= deadline {
                return live.len();
            }
            signal(&live);
            tokio::time::sleep(POLL).await;
        }
    }

    /// Reaps the zombies the daemon inherited as subreaper (never a child
    /// it spawned itself, whose status Tokio collects).
    pub fn reap_orphans(&self) {
        if !self.whole_tree {
            // Not a subreaper: the zombies here are someone else's to wait for.
            return;
        }
        let own = std::process::id();
        let mut registry = self.registry.lock().unwrap();
        let children = read_children(own);
        registry.spawned.retain(|pid| children.iter().any(|c| c.pid == *pid));
        for child in children {
            if child.zombie && !registry.spawned.contains(&child.pid) {
                let mut status = 0;
                // SAFETY: waits for one zombie child; WNOHANG never blocks.
                unsafe {
                    libc::waitpid(child.pid as i32, &mut status, libc::WNOHANG);
                }
            }
        }
    }
}

/// Makes the daemon the subreaper of everything the workload starts.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl on the calling process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Reaps orphans as they end, for the daemon's life.
pub fn reap_in_background(processes: std::sync::Arc<Processes>) {
    tokio::spawn(async move {
        let Ok(mut children) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) else {
            return;
        };
        // A signal can stand for several exits, and each reading of the
        // table reaps every zombie there: one reading per signal misses
        // none (an exit after a reading raises a signal of its own). An
        // idle executor's daemon does not wake to look.
        loop {
            processes.reap_orphans();
            if children.recv().await.is_none() {
                return;
            }
        }
    });
}

/// One process as the table shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub pid: u32,
    pub ppid: u32,
    /// The real uid.
    pub uid: u32,
    pub zombie: bool,
}

/// Parses `/proc/PID/stat` (the command name may hold spaces and
/// parentheses: the fields follow its last `)`).
fn parse_stat(stat: &str) -> Option<(u32, bool)> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, matches!(state, "Z" | "X")))
}

/// The real uid from `/proc/PID/status`.
fn parse_uid(status: &str) -> Option<u32> {
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().next()?.parse().ok()
}

fn read_entry(pid: u32) -> Option<Entry> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (ppid, zombie) = parse_stat(&stat)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Entry { pid, ppid, uid: parse_uid(&status)?, zombie })
}

/// Every process this daemon can see.
fn read_table() -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok).filter_map(|e| e.file_name().to_str()?.parse().ok()).filter_map(read_entry).collect()
}

/// The daemon's own children, from its threads' `children` lists where
/// the kernel keeps them, else from the whole table.
fn read_children(own: u32) -> Vec<Entry> {
    let listed: Option<Vec<u32>> = (|| {
        let mut pids = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let text = std::fs::read_to_string(task.ok()?.path().join("children")).ok()?;
            pids.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
        Some(pids)
    })();
    match listed {
        Some(pids) => pids.into_iter().filter_map(read_entry).filter(|e| e.ppid == own).collect(),
        None => read_table().into_iter().filter(|e| e.ppid == own).collect(),
    }
}

/// The workload's live processes in `table`: the descendants of `daemon`
/// and, given a uid of the workload's own, every process of that uid;
/// never the daemon, and never a zombie (it runs no more).
pub fn workload_processes(table: &[Entry], daemon: u32, workload_uid: Option<u32>) -> Vec<u32> {
    let mut found: Vec<u32> = vec![daemon];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for entry in table {
            if entry.ppid == parent && !found.contains(&entry.pid) {
                found.push(entry.pid);
            }
        }
        i += 1;
    }
    if let Some(uid) = workload_uid {
        for entry in table {
            if entry.uid == uid && !found.contains(&entry.pid) {
                found.push(entry.pid);
            }
        }
    }
    let live = |pid: &u32| table.iter().any(|e| e.pid == *pid && !e.zombie);
    found.into_iter().filter(|pid| *pid != daemon).filter(live).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, ppid: u32, uid: u32, zombie: bool) -> Entry {
        Entry { pid, ppid, uid, zombie }
    }

    #[test]
    fn the_workload_is_the_daemons_descendants_and_its_uids_processes() {
        let table = [
            entry(1, 0, 0, false),
            entry(10, 1, 900, false),  // the daemon
            entry(11, 10, 901, false), // the managed process
            entry(12, 11, 901, false), // its child
            entry(13, 12, 901, true),  // a zombie grandchild
            entry(20, 1, 901, false),  // escaped to init, still the workload's uid
            entry(30, 1, 0, false),    // someone else's
            entry(31, 30, 902, false),
        ];
        let mut found = workload_processes(&table, 10, Some(901));
        found.sort();
        assert_eq!(found, [11, 12, 20]);
        // Without a uid of its own, only the tree: the subreaper keeps
        // orphans inside it.
        let mut found = workload_processes(&table, 10, None);
        found.sort();
        assert_eq!(found, [11, 12]);
        assert!(workload_processes(&table, 99, None).is_empty());
    }

    #[test]
    fn stat_lines_are_read_past_the_command_name() {
        let stat = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 0";
        assert_eq!(parse_stat(stat), Some((17, false)));
        assert_eq!(parse_stat("7 (zombie) Z 1 7 7"), Some((1, true)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_uid("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"), Some(1000));
    }

    #[tokio::test]
    async fn a_closed_gate_refuses_spawns() {
        let processes = Processes::new(None);
        let mut command = Command::new("true");
        let mut child = processes.spawn(&mut command).unwrap();
        child.wait().await.unwrap();
        processes.registry.lock().unwrap().closed = true;
        assert!(matches!(processes.spawn(&mut Command::new("true")), Err(SpawnError::Finalized)));
        assert!(processes.closed());
    }
}
