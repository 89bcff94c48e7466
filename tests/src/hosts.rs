//! Several hosts on one machine: network namespaces the test makes, a hub
//! that serves PostgreSQL, the object store and the API, and one namespace
//! per executor host joined to the hub by a veth pair. Traffic goes only
//! between these namespaces (the test reaches the hub over a pair of its
//! own). Dropping the network deletes every namespace and what runs there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The namespaces of one test, and the address block they use.
pub struct Network {
    prefix: String,
    /// The second octet of 10.X.0.0/16.
    block: u8,
    hosts: u8,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

impl Network {
    /// Makes the hub, joined to the test's own namespace; `None` (skipped)
    /// where namespaces cannot be made here, a failure under CI.
    pub fn new() -> Option<Network> {
        let root = unsafe { libc::geteuid() } == 0;
        let has_ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
        if !crate::present("root and iproute2 for network namespaces (the multi-host tests)", root && has_ip) {
            return None;
        }
        let pid = std::process::id();
        let network = Network { prefix: format!("sl{}", pid % 100_000), block: 200 + (pid % 50) as u8, hosts: 0 };
        let hub = network.hub();
        ip(&["netns", "add", &hub]);
        ip(&["-n", &hub, "link", "set", "lo", "up"]);
        let (outside, inside) = (format!("{}t", network.prefix), format!("{}th", network.prefix));
        ip(&["link", "add", &outside, "type", "veth", "peer", "name", &inside]);
        ip(&["link", "set", &inside, "netns", &hub]);
        ip(&["addr", "add", &format!("{}/24", network.test_address()), "dev", &outside]);
        ip(&["link", "set", &outside, "up"]);
        ip(&["-n", &hub, "addr", "add", &format!("{}/24", network.hub_address(0)), "dev", &inside]);
        ip(&["-n", &hub, "link", "set", &inside, "up"]);
        Some(network)
    }

    /// The hub's namespace.
    pub fn hub(&self) -> String {
        format!("{}h", self.prefix)
    }

    /// The test's own address, on its pair with the hub.
    fn test_address(&self) -> String {
        format!("10.{}.0.1", self.block)
    }

    /// The hub's address on its pair with host `n` (0: with the test).
    pub fn hub_address(&self, n: u8) -> String {
        format!("10.{}.{n}.{}", self.block, if n == 0 { 2 } else { 1 })
    }

    /// Host `n`'s own address.
    pub fn host_address(&self, n: u8) -> String {
        format!("10.{}.{n}.2", self.block)
    }

    /// Makes the next host's namespace, joined to the hub; answers its
    /// number and namespace.
    pub fn add_host(&mut self) -> (u8, String) {
        self.hosts += 1;
        let n = self.hosts;
        let name = format!("{}w{n}", self.prefix);
        ip(&["netns", "add", &name]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        let (hub_side, host_side) = (format!("{}h{n}", self.prefix), format!("{}w{n}", self.prefix));
        ip(&["link", "add", &hub_side, "type", "veth", "peer", "name", &host_side]);
        ip(&["link", "set", &hub_side, "netns", &self.hub()]);
        ip(&["link", "set", &host_side, "netns", &name]);
        ip(&["-n", &self.hub(), "addr", "add", &format!("{}/24", self.hub_address(n)), "dev", &hub_side]);
        ip(&["-n", &self.hub(), "link", "set", &hub_side, "up"]);
        ip(&["-n", &name, "addr", "add", &format!("{}/24", self.host_address(n)), "dev", &host_side]);
        ip(&["-n", &name, "link", "set", &host_side, "up"]);
        (n, name)
    }

    /// A command run inside namespace `name` (its network only: the
    /// filesystem, /sys included, is the machine's).
    pub fn command_in(&self, name: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command.arg(format!("--net=/run/netns/{name}")).arg("--").arg(program);
        command
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // Whatever still runs in them is killed with them.
        for name in (1..=self.hosts).map(|n| format!("{}w{n}", self.prefix)).chain([self.hub()]) {
            let _ = Command::new("ip").args(["netns", "pids", &name]).output().map(|out| {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            });
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
        }
        let _ = Command::new("ip").args(["link", "del", &format!("{}t", self.prefix)]).status();
    }
}

/// A PostgreSQL cluster serving the hub's addresses.
pub struct HubPostgres {
    dir: tempfile::TempDir,
    bindir: PathBuf,
    pub port: u16,
}

fn as_postgres(command: &str) -> Command {
    let mut c = Command::new("su");
    c.args(["postgres", "-s", "/bin/sh", "-c", command]);
    c
}

impl HubPostgres {
    pub fn start(network: &Network) -> HubPostgres {
        let bindir = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL server binaries under /usr/lib/postgresql")
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|p| p.join("pg_ctl").is_file())
            .max()
            .expect("a PostgreSQL version with pg_ctl");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let _ = Command::new("chown").args(["postgres", &dir.path().display().to_string()]).status();
        let _ = Command::new("chmod").args(["755", &dir.path().display().to_string()]).status();
        let init = as_postgres(&format!(
            "{} -D {} -A trust -U postgres >/dev/null",
            bindir.join("initdb").display(),
            data.display()
        ))
        .status()
        .unwrap();
        assert!(init.success(), "initdb");
        let hba = data.join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).unwrap();
        rules.push_str(&format!("host all all 10.{}.0.0/16 trust\n", network.block));
        std::fs::write(&hba, rules).unwrap();
        let port = crate::free_port();
        let start = format!(
            "{} -D {} -l {}/server.log -w -o '-c listen_addresses=* -c port={port} -c unix_socket_directories={} \
             -c fsync=off -c max_connections=200' start >/dev/null",
            bindir.join("pg_ctl").display(),
            data.display(),
            dir.path().display(),
            dir.path().display(),
        );
        // Entering a namespace needs root: enter it, then become postgres.
        let status = network
            .command_in(&network.hub(), "su")
            .args(["postgres", "-s", "/bin/sh", "-c", &start])
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctl start in the hub");
        HubPostgres { dir, bindir, port }
    }

    /// The database URL at the hub's address `address`.
    pub fn url(&self, address: &str) -> String {
        format!("postgres://postgres@{address}:{}/postgres", self.port)
    }
}

impl Drop for HubPostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = as_postgres(&format!(
            "{} -D {} -m immediate stop >/dev/null 2>&1",
            self.bindir.join("pg_ctl").display(),
            data.display()
        ))
        .status();
    }
}

/// s3s-fs serving a bucket on the hub's addresses.
pub struct HubObjects {
    child: Child,
    root: tempfile::TempDir,
    pub port: u16,
}

impl HubObjects {
    /// `None` when s3s-fs is not here (a failure under CI).
    pub fn start(network: &Network) -> Option<HubObjects> {
        let binary = crate::s3::binary()?;
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(crate::s3::BUCKET)).unwrap();
        let port = crate::free_port();
        let child = network
            .command_in(&network.hub(), &binary)
            .args(["--host", "0.0.0.0", "--port", &port.to_string()])
            .args(["--access-key", crate::s3::ACCESS_KEY, "--secret-key", crate::s3::SECRET_KEY])
            .arg(root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        let objects = HubObjects { child, root, port };
        let reach = network.hub_address(0);
        let listening = crate::wait_for_blocking(Duration::from_secs(5), || {
            std::net::TcpStream::connect((reach.as_str(), port)).ok()
        });
        assert!(listening.is_some(), "s3s-fs did not listen in the hub");
        Some(objects)
    }

    /// The flags and environment a worker reaching the hub at `address`
    /// needs to use the bucket.
    pub fn options(&self, options: crate::server::Options, address: &str) -> crate::server::Options {
        let mut options = options.arg("--object-store").arg(format!("s3://{}/captures", crate::s3::BUCKET));
        for (name, value) in crate::s3::env_for(&format!("http://{address}:{}", self.port)) {
            options = options.env(name, value);
        }
        options
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

impl Drop for HubObjects {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
