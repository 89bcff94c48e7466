//! The trust boundary of executors, probed as an attacker would, through
//! the real `sluice serve` on each runtime: the local one in bubblewrap,
//! the local one without it (bubblewrap off the PATH), and Docker. An exec
//! command (the workload) tries to read the daemon's secrets, impersonate
//! or kill it, and reach another executor; an ordinary host user tries to
//! reach an executor; and the limits and the kill are shown to hold.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

const SECRET: &str = "kq7-boundary-secret-5531";
const READY_WITHIN: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Flavor {
    Bubblewrap,
    /// The local runtime where bubblewrap is not installed.
    Plain,
    Docker,
}

impl Flavor {
    fn options(self) -> Options {
        let options = Options::serve().arg("--orphan-schedule").arg("* * * * * *");
        match self {
            Flavor::Bubblewrap => options.arg("--runtime").arg("local"),
            // Nothing of the server's own needs the PATH but its sandbox probe.
            Flavor::Plain => options.arg("--runtime").arg("local").env("PATH", "/nonexistent"),
            Flavor::Docker => options.arg("--runtime").arg("docker"),
        }
    }

    /// Where the daemon's places are, as a workload command names them.
    fn daemon_paths(self) -> [&'static str; 4] {
        match self {
            Flavor::Plain => {
                ["../run/boot-secret.json", "../state/boot-secret.json", "../run/control.sock", "../state"]
            }
            _ => [
                "/run/sluice/boot-secret.json",
                "/var/lib/sluice/boot-secret.json",
                "/run/sluice/control.sock",
                "/var/lib/sluice",
            ],
        }
    }

    /// Whether this machine can run the flavor; under CI it must.
    fn usable(self) -> bool {
        match self {
            Flavor::Docker => docker_test_image().is_some(),
            Flavor::Bubblewrap => present("bubblewrap", std::path::Path::new("/usr/bin/bwrap").exists()),
            Flavor::Plain => true,
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

async fn create(server: &Server, flavor: Flavor, spec: Value) -> String {
    let (repository, tag) = match flavor {
        Flavor::Docker => docker_test_image().unwrap().split_once(':').unwrap(),
        _ => ("sluice/host", "1"),
    };
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag,
        "spec": spec, "secretEnv": {"BOUNDARY_SECRET": SECRET},
    });
    let (status, answer) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["workspaceId"].as_str().unwrap().to_owned();
    let ready =
        server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready" || w["status"] == "failed").await;
    assert_eq!(ready["status"], "ready", "{ready}\n{}", server.output());
    id
}

async fn run_id(server: &Server, id: &str) -> String {
    let (_, w) = server.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    w["runtime"]["runId"].as_str().unwrap().to_owned()
}

/// Runs one shell script through the exec API; returns (exit code, stdout + stderr).
async fn sh(server: &Server, id: &str, script: &str) -> (i64, String) {
    let run = exec(server, id, json!([{"argv": ["sh", "-c", script], "timeoutMs": 60_000}])).await;
    assert_eq!(run["status"], "completed", "{run}");
    let c = &run["commands"][0];
    (c["exitCode"].as_i64().unwrap(), format!("{}{}", c["stdout"].as_str().unwrap(), c["stderr"].as_str().unwrap()))
}

async fn exec(server: &Server, id: &str, commands: Value) -> Value {
    let (status, run) =
        server.post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": commands})).await;
    assert_eq!(status, 202, "{run}");
    server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(120)).await
}

/// Finds the daemon's pid as the workload sees it: the process whose
/// command line names `--workload-uid`.
const FIND_DAEMON: &str = r#"daemon=; for p in /proc/[0-9]*; do
  case "$(cat $p/cmdline 2>/dev/null | tr '\0' ' ')" in *--workload-uid*) case "$(cat $p/cmdline | tr '\0' ' ')" in *setpriv*|*bwrap*) ;; *) daemon=${p#/proc/};; esac;; esac
done"#;

/// Every probe a workload makes against its daemon; each line it prints
/// starting with `REACHED` is a hole.
fn attack_script(flavor: Flavor) -> String {
    let [boot, kept, socket, state] = flavor.daemon_paths();
    format!(
        r#"{FIND_DAEMON}
[ -n "$daemon" ] || {{ echo "NO DAEMON FOUND"; exit 3; }}
echo "daemon pid $daemon, me $(id -u)"
cat {boot} 2>/dev/null && echo "REACHED boot secret"
cat {kept} 2>/dev/null && echo "REACHED kept boot secret"
ls {state}/ 2>/dev/null && echo "REACHED daemon state"
cat /proc/$daemon/environ 2>/dev/null && echo "REACHED daemon environ"
ls /proc/$daemon/root/ >/dev/null 2>&1 && echo "REACHED daemon root"
ls -l {socket} >/dev/null 2>&1 && echo "REACHED control socket"
mv {socket} {socket}.x 2>/dev/null && echo "REACHED socket replaced"
rm {socket} 2>/dev/null && echo "REACHED socket removed"
kill -STOP $daemon 2>/dev/null && echo "REACHED daemon stopped" && kill -CONT $daemon
kill -9 $daemon 2>/dev/null && echo "REACHED daemon killed"
echo probed"#
    )
}

/// Every process this workload can signal must be its own.
const FOREIGN_PROCESSES: &str = r#"me=$(id -u); for p in /proc/[0-9]*; do n=${p#/proc/}
  if kill -0 $n 2>/dev/null; then u=; while read k v rest; do [ "$k" = "Uid:" ] && u=$v; done < $p/status
    [ -z "$u" ] || [ "$u" = "$me" ] || echo "REACHED process $n of uid $u"; fi
done; echo listed"#;

/// Runs `script` as an ordinary host account (nobody), outside any executor.
fn as_host_user(script: &str) -> String {
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "sh", "-c", script])
        .output()
        .unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Host pids of a local executor: the processes of its cgroup.
fn executor_pids(run: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for controller in ["pids", "freezer", "memory"] {
        let Ok(groups) = std::fs::read_dir(format!("/sys/fs/cgroup/{controller}")) else { continue };
        for group in groups.filter_map(Result::ok).filter(|g| g.file_name().to_string_lossy().starts_with("sluice-")) {
            let procs = group.path().join(run).join("cgroup.procs");
            if let Ok(text) = std::fs::read_to_string(procs) {
                pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            }
        }
        if !pids.is_empty() {
            break;
        }
    }
    pids.sort();
    pids.dedup();
    pids
}

/// Host pids of a container's processes.
fn container_pids(name: &str) -> Vec<i32> {
    let out = std::process::Command::new("docker").args(["top", name, "-eo", "pid"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Pids of processes whose command line contains `needle`.
fn processes_named(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

async fn boundary_holds(flavor: Flavor) {
    if !flavor.usable() {
        return;
    }
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let first = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;
    let second = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;

    // The workload against its own daemon.
    let (code, out) = sh(&server, &first, &attack_script(flavor)).await;
    assert_eq!(code, 0, "{flavor:?}: {out}");
    assert!(out.contains("probed"), "{flavor:?}: {out}");
    if is_root() || flavor == Flavor::Docker {
        assert!(!out.contains("REACHED"), "{flavor:?}: the workload reached its daemon:\n{out}");
        assert!(!out.contains(SECRET) && !out.contains("controlToken"), "{flavor:?}: {out}");
    }
    // Nor the control plane over the network, nor another executor's /tmp.
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let (_, out) = sh(
        &server,
        &first,
        &format!(
            "busybox nc -w 2 127.0.0.1 {port} </dev/null >/dev/null 2>&1 && echo REACHED the API; \
             echo first > /tmp/first-was-here; echo probed"
        ),
    )
    .await;
    let (_, seen) =
        sh(&server, &second, "cat /tmp/first-was-here 2>/dev/null && echo REACHED the other /tmp; true").await;
    if is_root() || flavor == Flavor::Docker {
        assert!(out.contains("probed") && !out.contains("REACHED"), "{flavor:?}: {out}");
        assert!(!seen.contains("REACHED"), "{flavor:?}: {seen}");
    }
    // The daemon lives on and answers: the workload could neither kill nor replace it.
    let (code, out) = sh(&server, &first, "echo alive").await;
    assert_eq!((code, out.as_str()), (0, "alive\n"), "{flavor:?}");
    // Exec commands are not given secretEnv.
    let (_, env) = sh(&server, &first, "env").await;
    assert!(!env.contains(SECRET), "{flavor:?}: {env}");

    // The two executors cannot reach each other.
    let (_, marker) = sh(&server, &second, "echo second-executor-data > marker; pwd").await;
    let second_run = run_id(&server, &second).await;
    let (_, out) = sh(
        &server,
        &first,
        &format!(
            "cat ../../{second_run}/workspace/marker /tmp/sl*/d/executors/{second_run}/workspace/marker 2>/dev/null \
             && echo REACHED the other disk; {FOREIGN_PROCESSES}"
        ),
    )
    .await;
    if is_root() || flavor == Flavor::Docker {
        assert!(!out.contains("REACHED") && !out.contains("second-executor-data"), "{flavor:?} ({marker}): {out}");
        assert!(out.contains("listed"), "{out}");
    }

    // An ordinary host user reaches no executor: not its daemon's secrets,
    // socket or processes, not through /proc either.
    if is_root() {
        let run = run_id(&server, &first).await;
        let run_dir = dir.executors().join(&run);
        let pids = match flavor {
            Flavor::Docker => container_pids(&format!("sluice-{run}")),
            _ => executor_pids(&run),
        };
        assert!(pids.len() >= 2, "{flavor:?}: the executor's cgroup holds its processes: {pids:?}");
        let mut script = format!(
            "cat {d}/run/boot-secret.json {d}/state/boot-secret.json 2>/dev/null && echo REACHED secret; \
             ls {d}/workspace 2>/dev/null && echo REACHED disk; \
             python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
               {d}/run/control.sock 2>/dev/null && echo REACHED socket; ",
            d = run_dir.display()
        );
        for pid in &pids {
            script.push_str(&format!(
                "cat /proc/{pid}/environ 2>/dev/null && echo REACHED environ {pid}; \
                 ls /proc/{pid}/root/ >/dev/null 2>&1 && echo REACHED root {pid}; \
                 ls /proc/{pid}/cwd/ >/dev/null 2>&1 && echo REACHED cwd {pid}; \
                 kill -0 {pid} 2>/dev/null && echo REACHED signal {pid}; "
            ));
        }
        script.push_str("echo probed");
        let out = as_host_user(&script);
        assert!(out.contains("probed") && !out.contains("REACHED"), "{flavor:?}: a host user reached it:\n{out}");
    }
    drop(server);
}

#[tokio::test]
async fn the_workload_cannot_reach_its_daemon_other_executors_or_the_host_in_bubblewrap() {
    boundary_holds(Flavor::Bubblewrap).await;
}

#[tokio::test]
async fn the_workload_cannot_reach_its_daemon_other_executors_or_the_host_without_bubblewrap() {
    boundary_holds(Flavor::Plain).await;
}

#[tokio::test]
async fn the_workload_cannot_reach_its_daemon_other_executors_or_the_host_in_docker() {
    boundary_holds(Flavor::Docker).await;
}

/// A fake daemon that answers every request with 200 MB.
fn serve_oversized_answers(socket: &Path) {
    let _ = std::fs::remove_file(socket);
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = [0u8; 8192];
                let _ = stream.read(&mut request);
                let size = 200usize << 20;
                let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n").as_bytes());
                let chunk = vec![b'x'; 1 << 20];
                for _ in 0..200 {
                    if stream.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn database_bytes(data: &Path) -> u64 {
    ["sluice.db", "sluice.db-wal"].iter().filter_map(|f| std::fs::metadata(data.join(f)).ok()).map(|m| m.len()).sum()
}

/// The bound this test states: a 200 MB answer may cost the server at most
/// this much memory (the 12 MiB exec-answer cap and what is around it)...
const MEMORY_BOUND_KIB: u64 = 64 << 10;
/// ...and the database at most this much (the run's failure, no output).
const DATABASE_BOUND_BYTES: u64 = 1 << 20;

async fn a_fake_daemon_costs_a_bounded_amount(flavor: Flavor) {
    if !flavor.usable() {
        return;
    }
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let id = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;
    let run = run_id(&server, &id).await;
    // Warm the exec path once, so what is measured is the answer.
    sh(&server, &id, "true").await;
    let before_memory = status_kib(server.pid(), "VmHWM:");
    let before_db = database_bytes(&dir.path());
    serve_oversized_answers(&dir.executors().join(&run).join("run").join("control.sock"));
    // The server keeps its connection to the real daemon while it is in
    // use: the next call reaches the fake once that one has idled out.
    outwait("the server's idle daemon connection closes (after 10 s)", Duration::from_secs(11)).await;

    let result = exec(&server, &id, json!([{"argv": ["true"]}])).await;
    assert_eq!(result["status"], "failed", "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("larger than"), "the call fails with a clear error: {message}");
    let grown_memory = status_kib(server.pid(), "VmHWM:").saturating_sub(before_memory);
    let grown_db = database_bytes(&dir.path()).saturating_sub(before_db);
    assert!(grown_memory < MEMORY_BOUND_KIB, "peak memory grew {grown_memory} KiB");
    assert!(grown_db < DATABASE_BOUND_BYTES, "the database grew {grown_db} bytes");
    // The server goes on answering.
    assert_eq!(server.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn a_fake_daemon_answering_200_mb_costs_the_server_a_bounded_amount_in_bubblewrap() {
    a_fake_daemon_costs_a_bounded_amount(Flavor::Bubblewrap).await;
}

#[tokio::test]
async fn a_fake_daemon_answering_200_mb_costs_the_server_a_bounded_amount_without_bubblewrap() {
    a_fake_daemon_costs_a_bounded_amount(Flavor::Plain).await;
}

#[tokio::test]
async fn a_fake_daemon_answering_200_mb_costs_the_server_a_bounded_amount_in_docker() {
    a_fake_daemon_costs_a_bounded_amount(Flavor::Docker).await;
}

/// A stop after a server restart ends every process of the executor,
/// including one the workload detached into a session of its own.
async fn nothing_survives_a_stop_after_a_restart(flavor: Flavor) {
    if !flavor.usable() || !root_for("a detached process's uid and cgroup") {
        return;
    }
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let id = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;
    let run = run_id(&server, &id).await;
    let marker = format!("{}", 2900 + (std::process::id() % 97) + if flavor == Flavor::Plain { 100 } else { 0 });
    // The pause lets the child leave the command's process group before the
    // command ends (and its group is killed).
    sh(&server, &id, &format!("setsid sleep {marker} >/dev/null 2>&1 < /dev/null & sleep 0.3; echo started")).await;
    poll_until("the detached process runs", Duration::from_secs(10), || async {
        (!processes_named(&format!("sleep {marker}")).is_empty()).then_some(())
    })
    .await;
    drop(server.kill());

    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202, "{answer}");
    server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "stopped").await;
    assert!(processes_named(&format!("sleep {marker}")).is_empty(), "{flavor:?}: the detached process was killed");
    assert!(executor_pids(&run).is_empty(), "{flavor:?}: no process of the executor is left");
    assert!(!dir.executors().join(&run).exists());
}

#[tokio::test]
async fn nothing_survives_a_stop_after_a_restart_in_bubblewrap() {
    nothing_survives_a_stop_after_a_restart(Flavor::Bubblewrap).await;
}

#[tokio::test]
async fn nothing_survives_a_stop_after_a_restart_without_bubblewrap() {
    nothing_survives_a_stop_after_a_restart(Flavor::Plain).await;
}

/// An executor no record needs, found after a restart by what is on the
/// host, is ended by the orphan sweep with all its processes.
#[tokio::test]
async fn the_orphan_sweep_ends_an_executor_no_record_needs_after_a_restart() {
    let flavor = if Flavor::Bubblewrap.usable() { Flavor::Bubblewrap } else { Flavor::Plain };
    if !root_for("the orphan sweep's executors under uids of their own") {
        return;
    }
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let id = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;
    let run = run_id(&server, &id).await;
    sh(&server, &id, "setsid sleep 2777 >/dev/null 2>&1 < /dev/null & sleep 0.3; echo started").await;
    assert!(executor_pids(&run).len() >= 3);
    drop(server.kill());

    // The same executors directory under a database that never heard of it.
    let other: PathBuf = dir.root().join("other.db");
    let options = flavor.options().arg("--database-url").arg(format!("sqlite:{}", other.display()));
    let server = Server::start_with(&dir.path(), options).await;
    wait_for(Duration::from_secs(20), || async {
        (executor_pids(&run).is_empty() && !dir.executors().join(&run).exists()).then_some(())
    })
    .await;
    assert!(executor_pids(&run).is_empty(), "every process of the orphan ended:\n{}", server.output());
    assert!(!dir.executors().join(&run).exists(), "its directory is gone");
}

/// Limits hold: a fork bomb meets `pids`, a memory hog `memoryMiB`, and
/// the executor and the control plane carry on.
async fn limits_hold(flavor: Flavor) {
    if !flavor.usable() || (flavor != Flavor::Docker && !root_for("cgroup limits on the local runtime")) {
        return;
    }
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), flavor.options()).await;
    let mut spec = json!({"command": ["sleep", "3600"], "resources": {"pids": 24, "memoryMiB": 96}});
    if flavor == Flavor::Docker {
        // This engine's storage driver sets no quota: asked for, a disk
        // limit is refused at create, naming the resource.
        let mut asked = spec.clone();
        asked["resources"]["diskMiB"] = json!(64);
        let (repository, tag) = docker_test_image().unwrap().split_once(':').unwrap();
        let body = json!({"ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag,
            "spec": asked});
        let (status, answer) = server.post("/v1/workspaces", &body).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["code"], "limit-unenforceable");
        assert!(answer["message"].as_str().unwrap().contains("diskMiB"), "{answer}");
    } else {
        spec["resources"]["diskMiB"] = json!(32);
    }
    let id = create(&server, flavor, spec).await;

    let (_, out) = sh(
        &server,
        &id,
        // The bomb runs in a shell of its own, which dies when a fork fails;
        // this one then counts what the workload has (builtins only).
        "sh -c 'i=0; while [ $i -lt 500 ]; do sleep 30 & i=$((i+1)); done' 2>/dev/null; \
         c=0; for p in /proc/[0-9]*; do kill -0 ${p#/proc/} 2>/dev/null && c=$((c+1)); done; echo processes=$c",
    )
    .await;
    let count: usize = out.rsplit("processes=").next().unwrap().trim().parse().unwrap_or(usize::MAX);
    assert!((8..=24).contains(&count), "{flavor:?}: the fork bomb ran into the pids limit: {out}");

    let (code, out) = sh(&server, &id, "busybox dd if=/dev/zero of=/dev/null bs=400M count=1").await;
    assert_ne!(code, 0, "{flavor:?}: a 400 MiB buffer does not fit in 96 MiB: {out}");
    let (code, out) = sh(&server, &id, "echo still-here").await;
    assert_eq!((code, out.as_str()), (0, "still-here\n"), "{flavor:?}: the daemon outlived the hog");

    if flavor != Flavor::Docker {
        // A write past diskMiB fails inside; the host holds no more than the
        // disk's size for it, and the control plane is untouched.
        let db_before = database_bytes(&dir.path());
        let (code, out) = sh(&server, &id, "busybox dd if=/dev/zero of=big bs=1M count=64 2>&1; echo exit=$?").await;
        assert_eq!(code, 0);
        assert!(out.contains("No space left") && !out.contains("exit=0"), "{flavor:?}: {out}");
        let run = run_id(&server, &id).await;
        let image = dir.executors().join(&run).join("disk.img");
        let used = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&image).unwrap()) * 512;
        assert!(used <= 33 << 20, "{flavor:?}: the image holds {used} bytes on the host");
        let (code, out) = sh(&server, &id, "rm big; echo room > small; cat small").await;
        assert_eq!((code, out.as_str()), (0, "room\n"), "{flavor:?}: the disk works again once freed");
        assert!(database_bytes(&dir.path()) < db_before + (1 << 20), "{flavor:?}: the database did not grow");
        // An executor launched while this disk is mounted holds no copy of it.
        let other = create(&server, flavor, json!({"command": ["sleep", "3600"]})).await;
        let other_pids = executor_pids(&run_id(&server, &other).await);
        assert!(!other_pids.is_empty());
        let host_mounts = std::fs::read_link("/proc/self/ns/mnt").unwrap();
        // Those in a mount namespace of their own (bubblewrap's launcher runs in the host's).
        let inside = other_pids
            .iter()
            .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/mnt")).ok() != Some(host_mounts.clone()));
        for pid in inside {
            let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
            assert!(!mounts.contains(&run), "{flavor:?}: another executor holds this disk:\n{mounts}");
        }
        // Stopping unmounts and removes the disk with the executor.
        let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202);
        server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "stopped").await;
        assert!(!image.exists(), "{flavor:?}: the disk image is gone");
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(&run), "{flavor:?}: nothing of the executor stays mounted");
    }
    assert_eq!(server.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn limits_hold_in_bubblewrap() {
    limits_hold(Flavor::Bubblewrap).await;
}

#[tokio::test]
async fn limits_hold_without_bubblewrap() {
    limits_hold(Flavor::Plain).await;
}

#[tokio::test]
async fn limits_hold_in_docker() {
    limits_hold(Flavor::Docker).await;
}

/// The first run on a machine without bubblewrap (and with it), as an
/// ordinary user: a workspace comes to `ready` and runs commands, and the
/// log and `sluice doctor` say what is missing. An image runs there on a
/// copy of its tree (no overlay without root) with bubblewrap, and is
/// refused by name without it.
#[tokio::test]
async fn the_first_run_works_for_an_ordinary_user_and_says_what_is_missing() {
    if !is_root() {
        // Then every other test here already runs as an ordinary user.
        return;
    }
    const NOBODY: u32 = 65534;
    let images = tempfile::tempdir().unwrap();
    let registry = sluice_tests::registry::Registry::start(images.path());
    if let Some(registry) = &registry {
        sluice_tests::registry::push_test_images(images.path(), registry).await;
    }
    for with_bubblewrap in [false, true] {
        if with_bubblewrap && !Flavor::Bubblewrap.usable() {
            continue;
        }
        let dir = DataDir::new();
        std::os::unix::fs::chown(dir.root(), Some(NOBODY), Some(NOBODY)).unwrap();
        let mut options = Options::serve().arg("--runtime").arg("local").run_as(NOBODY);
        if let Some(registry) = &registry {
            options = options.arg("--registry").arg(format!("test=http://{}", registry.host()));
        }
        if !with_bubblewrap {
            options = options.env("PATH", "/nonexistent");
        }
        let server = Server::start_with(&dir.path(), options).await;
        let id = create(&server, Flavor::Plain, json!({"command": ["sleep", "3600"]})).await;
        let (code, out) = sh(&server, &id, "id -u; echo hello > f; cat f").await;
        assert_eq!((code, out.as_str()), (0, "65534\nhello\n"), "bubblewrap: {with_bubblewrap}");

        let log = server.output();
        assert!(log.contains("NO boundary"), "the log says the daemon and workload share a user:\n{log}");
        assert_eq!(log.contains("NO sandbox"), !with_bubblewrap, "{log}");
        // Limits this host cannot enforce for an ordinary user are refused.
        let (status, answer) = server
            .post(
                "/v1/workspaces",
                &json!({"ownerUserId": "alice", "registryId": "host", "repository": "sluice/host", "tag": "1",
                    "spec": {"resources": {"memoryMiB": 64}}}),
            )
            .await;
        assert_eq!(status, 422, "{answer}");
        assert!(answer["message"].as_str().unwrap().contains("memoryMiB"), "{answer}");

        let (status, _) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202);
        server.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "stopped").await;

        if registry.is_some() {
            let body = json!({"ownerUserId": "alice", "registryId": "test", "repository": "b", "tag": "1",
                "spec": {"command": ["sleep", "3600"]}});
            let (status, created) = server.post("/v1/workspaces", &body).await;
            assert_eq!(status, 202, "{created}");
            let image_id = created["workspaceId"].as_str().unwrap().to_owned();
            if with_bubblewrap {
                server.wait_for("alice", &image_id, READY_WITHIN, |w| w["status"] == "ready").await;
                let (code, out) = sh(&server, &image_id, "cat /etc/os-release; id -u").await;
                assert_eq!((code, out.as_str()), (0, "ID=image-b\n65534\n"));
                // Its copied root, read-only directories and all, goes with it.
                let run = created["runId"].clone();
                let (status, _) =
                    server.post(&format!("/v1/workspaces/{image_id}/stop"), &json!({"ownerUserId": "alice"})).await;
                assert_eq!(status, 202);
                server.wait_for("alice", &image_id, READY_WITHIN, |w| w["status"] == "stopped").await;
                let run_dir = dir.executors().join(run.as_str().expect("the create names its run"));
                assert!(wait_for_blocking(Duration::from_secs(30), || (!run_dir.exists()).then_some(())).is_some());
            } else {
                let failed = server.wait_for("alice", &image_id, READY_WITHIN, |w| w["status"] == "failed").await;
                assert!(failed["error"].to_string().contains("needs bubblewrap"), "{failed}");
            }
        }
        drop(server);

        let mut doctor = std::process::Command::new("/usr/bin/setpriv");
        doctor.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(sluice_binary());
        doctor.arg("doctor").arg("--data-dir").arg(dir.path());
        if !with_bubblewrap {
            doctor.env("PATH", "/nonexistent");
        }
        let out = doctor.output().unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{report}{}", String::from_utf8_lossy(&out.stderr));
        assert!(report.contains("NO boundary") && report.contains("no cgroups"), "{report}");
        assert!(report.contains("no disk limits"), "{report}");
        assert_eq!(report.contains("bwrap is not on the PATH"), !with_bubblewrap, "{report}");
        let images_line = if with_bubblewrap {
            "a copy of the image per executor (mounting an overlay takes root)"
        } else {
            "images: cannot run"
        };
        assert!(report.contains(images_line), "{report}");
    }
}
