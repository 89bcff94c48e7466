//! The warm pool: executors of an image started ahead of any run (uid,
//! cgroup, disk and daemon ready, no workload), so a create whose spec fits
//! takes one instead of waiting for a launch. A pooled executor's daemon
//! holds no secret and no session until it is assigned (see
//! [`sluice_protocol::ASSIGN`]); the runtime arbitrates each take so an
//! executor is taken exactly once, and refills the pool behind it.
//!
//! This module holds what the pool is and what fits it; the local runtime
//! keeps its executors.

use sluice_protocol::BootSecret;

use super::LaunchRequest;

/// A pooled executor's name starts so (its directory's and its cgroup's).
pub const POOL_PREFIX: &str = "pool_";

/// How many executors of an image are kept ready: `--warm-pool IMAGE=N`,
/// the image named as creates name it, `REGISTRY_ID/REPOSITORY:TAG`
/// (`host/…` for the host's own filesystem).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSpec {
    /// `REGISTRY_ID/REPOSITORY:TAG`.
    pub image: String,
    pub size: u32,
}

/// The most executors one image's pool keeps.
pub const MAX_POOL_SIZE: u32 = 256;

impl PoolSpec {
    /// Reads `REGISTRY_ID/REPOSITORY:TAG=N`.
    pub fn parse(text: &str) -> Result<PoolSpec, String> {
        const FORM: &str = "expected REGISTRY_ID/REPOSITORY:TAG=N (host/REPOSITORY:TAG for the host's filesystem)";
        let (image, size) = text.rsplit_once('=').ok_or(FORM)?;
        let (registry_id, rest) = image.split_once('/').ok_or(FORM)?;
        let (repository, tag) = rest.rsplit_once(':').ok_or(FORM)?;
        if registry_id.is_empty() || repository.is_empty() || tag.is_empty() {
            return Err(FORM.into());
        }
        if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(FORM.into());
        }
        if registry_id != sluice_images::HOST {
            sluice_images::ImageName::new(registry_id, repository, tag)?;
        }
        let size: u32 = size.parse().map_err(|_| format!("the size must be a number from 1 to {MAX_POOL_SIZE}"))?;
        if !(1..=MAX_POOL_SIZE).contains(&size) {
            return Err(format!("the size must be a number from 1 to {MAX_POOL_SIZE}"));
        }
        Ok(PoolSpec { image: image.to_owned(), size })
    }

    /// The pool image a create names.
    pub fn image_of(registry_id: &str, repository: &str, tag: &str) -> String {
        format!("{registry_id}/{repository}:{tag}")
    }

    /// The registry id, repository and tag of the pool's image.
    pub fn parts(&self) -> (&str, &str, &str) {
        let (registry_id, rest) = self.image.split_once('/').unwrap_or(("", &self.image));
        let (repository, tag) = rest.rsplit_once(':').unwrap_or((rest, ""));
        (registry_id, repository, tag)
    }
}

/// Why a launch does not take a pooled executor, or `None` when it may.
/// A pooled executor was started with the defaults (no network, no egress
/// proxy, the default disk); what can be set afterwards (the cgroup's
/// limits, the lifetime) is set at the take.
pub fn unfit(request: &LaunchRequest) -> Option<&'static str> {
    let spec = &request.spec;
    if request.boot_secret.is_none() {
        Some("a restart on the executor's own disk")
    } else if spec.network {
        Some("the spec asks for the network")
    } else if spec.egress.is_some() {
        Some("the spec names egress")
    } else if spec.resources.disk_mib.is_some() {
        Some("the spec names a disk size")
    } else {
        None
    }
}

/// The assign a taken executor's daemon gets: the run's launch, boot
/// secret, command and plain environment.
pub fn assignment(request: &LaunchRequest) -> Result<sluice_protocol::AssignRequest, String> {
    let text = request.boot_secret.as_ref().ok_or("no boot secret to assign")?;
    let boot_secret: BootSecret =
        serde_json::from_str(text.expose()).map_err(|_| "the boot secret is not one".to_owned())?;
    Ok(sluice_protocol::AssignRequest {
        launch: request.launch.clone(),
        boot_secret,
        command: request.spec.command.clone(),
        env: request.spec.env.clone(),
    })
}

pub use sluice_store::fleet::PoolLevel;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_specs_parse_and_refuse_by_name() {
        let spec = PoolSpec::parse("host/sluice-test/busybox:1=4").unwrap();
        assert_eq!(spec, PoolSpec { image: "host/sluice-test/busybox:1".into(), size: 4 });
        assert_eq!(spec.parts(), ("host", "sluice-test/busybox", "1"));
        let image = PoolSpec::parse("test/web/app:2=1").unwrap();
        assert_eq!(image.parts(), ("test", "web/app", "2"));
        assert_eq!(PoolSpec::image_of("test", "web/app", "2"), image.image);
        for bad in [
            "busybox=2",
            "host/busybox:1",
            "host/busybox:1=0",
            "host/busybox:1=x",
            "host/:1=2",
            "host/a:=2",
            "/a:1=2",
            "host/bus box:1=2",
            "host/a:1=257",
            "test/Upper:1=1",
            "busybox:1=2",
        ] {
            assert!(PoolSpec::parse(bad).is_err(), "{bad} parsed");
        }
    }

    fn request(spec: serde_json::Value, secret: bool) -> LaunchRequest {
        LaunchRequest {
            workspace_id: "ws".into(),
            run_id: "run_1".into(),
            launch: "launch-1".into(),
            registry_id: "local".into(),
            repository: "a".into(),
            tag: "1".into(),
            spec: sluice_store::spec::WorkspaceSpec::parse(&spec).unwrap(),
            boot_secret: secret.then(|| {
                sluice_store::Secret::new(r#"{"controlToken":"0123456789abcdef0123","secretEnv":{"K":"v"}}"#.into())
            }),
            capture_interval_ms: 1000,
            egress_authority: None,
            image_progress: None,
        }
    }

    #[test]
    fn what_fits_a_pooled_executor() {
        let table = [
            (serde_json::json!({}), true, None),
            (serde_json::json!({"command": ["sleep", "1"], "env": {"A": "b"}}), true, None),
            (serde_json::json!({"resources": {"cpus": 1, "memoryMiB": 64, "pids": 10}}), true, None),
            (serde_json::json!({}), false, Some("a restart on the executor's own disk")),
            (serde_json::json!({"network": true}), true, Some("the spec asks for the network")),
            (serde_json::json!({"network": {"egress": ["a.example"]}}), true, Some("the spec names egress")),
            (serde_json::json!({"resources": {"diskMiB": 64}}), true, Some("the spec names a disk size")),
        ];
        for (spec, secret, expected) in table {
            assert_eq!(unfit(&request(spec.clone(), secret)), expected, "{spec}");
        }
    }

    #[test]
    fn the_assignment_carries_the_run_and_its_secret() {
        let request = request(serde_json::json!({"command": ["sleep", "1"], "env": {"A": "b"}}), true);
        let assignment = assignment(&request).unwrap();
        assert_eq!(assignment.launch, "launch-1");
        assert_eq!(assignment.command, ["sleep", "1"]);
        assert_eq!(assignment.env.get("A").map(String::as_str), Some("b"));
        assert_eq!(assignment.boot_secret.secret_env.get("K").map(String::as_str), Some("v"));
    }
}
