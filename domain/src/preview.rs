//! Preview URLs: a workspace's port served at
//! `PORT-WORKSPACEID.DOMAIN`, private unless its owner made it public.
//! What a host name means, how long a grant may last, and whether a grant
//! lets a request through, decided here; the store keeps the grants and
//! the proxy carries the bytes.

use crate::ids::{RunId, WorkspaceId};

/// The shortest and longest life of a preview grant.
pub const MIN_TTL_SECONDS: u64 = 60;
pub const MAX_TTL_SECONDS: u64 = 7 * 24 * 3600;
pub const DEFAULT_TTL_SECONDS: u64 = 3600;

/// The cookie a signed visit leaves, for that preview's host only.
pub const COOKIE: &str = "sluice_preview";
/// The query parameter a signed URL carries on its first visit.
pub const VISIT_PARAM: &str = "sluice_preview_token";

/// The port and workspace a preview host names, when `host` (as a Host
/// header has it, with or without a port) is `PORT-WORKSPACEID.` followed
/// by `domain`.
pub fn parse_host(host: &str, domain: &str) -> Option<(u16, WorkspaceId)> {
    let host = host.to_ascii_lowercase();
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_owned(),
        _ => host,
    };
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let label = name.trim_end_matches('.').strip_suffix(&domain)?.strip_suffix('.')?;
    let (port, workspace) = label.split_once('-')?;
    let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
    let id_ok = !workspace.is_empty()
        && workspace.len() <= 64
        && workspace.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    id_ok.then(|| (port, WorkspaceId::from(workspace)))
}

/// The host a preview of `port` of `workspace_id` is served at.
pub fn host_of(port: u16, workspace_id: &WorkspaceId, domain: &str) -> String {
    format!("{port}-{}.{}", workspace_id.to_ascii_lowercase(), domain.trim_end_matches('.'))
}

/// What a stored grant is, as far as letting a request through goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub workspace_id: WorkspaceId,
    pub port: u16,
    /// The run it was granted on: a stop or restart ends it.
    pub run_id: RunId,
    pub public: bool,
    pub expires_at: i64,
    pub revoked: bool,
}

/// The workspace as the proxy finds it when a request comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serving {
    /// Its current run, if its executor is up (ready).
    pub live_run: Option<RunId>,
    /// The run it sleeps on (or is going to sleep on), if it sleeps: a
    /// visit wakes it, and its grants go on with the run that resumes it.
    pub sleeping_run: Option<RunId>,
}

/// Why a request is not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No grant, or one for another host.
    NoGrant,
    Expired,
    Revoked,
    /// The run it was granted on is over (the workspace stopped or restarted).
    RunEnded,
    /// The workspace sleeps on the grant's run: wake it, then look again.
    Asleep,
}

/// Whether `grant` lets a request for `port` of `workspace_id` through now.
pub fn admits(
    grant: &Grant,
    workspace_id: &WorkspaceId,
    port: u16,
    serving: &Serving,
    now: i64,
) -> Result<(), Refusal> {
    if grant.workspace_id != *workspace_id || grant.port != port {
        return Err(Refusal::NoGrant);
    }
    if grant.revoked {
        return Err(Refusal::Revoked);
    }
    if now >= grant.expires_at {
        return Err(Refusal::Expired);
    }
    if serving.sleeping_run.as_deref() == Some(grant.run_id.as_str()) {
        return Err(Refusal::Asleep);
    }
    if serving.live_run.as_deref() != Some(grant.run_id.as_str()) {
        return Err(Refusal::RunEnded);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_name_a_port_and_a_workspace_under_the_domain() {
        let domain = "preview.test";
        for (host, expected) in [
            ("8080-ws_0abc.preview.test", Some((8080, "ws_0abc"))),
            ("8080-WS_0ABC.Preview.Test", Some((8080, "ws_0abc"))),
            ("8080-ws_0abc.preview.test:8443", Some((8080, "ws_0abc"))),
            ("8080-ws_0abc.preview.test.", Some((8080, "ws_0abc"))),
            ("0-ws_0abc.preview.test", None),
            ("70000-ws_0abc.preview.test", None),
            ("ws_0abc.preview.test", None),
            ("8080-.preview.test", None),
            ("8080-ws.0abc.preview.test", None),
            ("8080-ws_0abc.other.test", None),
            ("8080-ws_0abcpreview.test", None),
            ("preview.test", None),
        ] {
            let parsed = parse_host(host, domain);
            assert_eq!(parsed, expected.map(|(p, w)| (p, WorkspaceId::from(w))), "{host}");
        }
        assert_eq!(host_of(3000, &"ws_1".into(), "preview.test."), "3000-ws_1.preview.test");
        assert_eq!(parse_host(&host_of(3000, &"ws_1".into(), domain), domain), Some((3000, "ws_1".into())));
    }

    #[test]
    fn a_grant_admits_its_own_port_until_it_ends() {
        let grant = Grant {
            workspace_id: "ws_1".into(),
            port: 3000,
            run_id: "run_1".into(),
            public: false,
            expires_at: 1_000,
            revoked: false,
        };
        let live = Serving { live_run: Some("run_1".into()), sleeping_run: None };
        let asleep = Serving { live_run: None, sleeping_run: Some("run_1".into()) };
        let gone = Serving { live_run: None, sleeping_run: None };
        let revoked = Grant { revoked: true, ..grant.clone() };
        for (grant, workspace, port, serving, now, expected) in [
            (&grant, "ws_1", 3000, &live, 999, Ok(())),
            (&grant, "ws_1", 3000, &live, 1_000, Err(Refusal::Expired)),
            (&grant, "ws_1", 3001, &live, 0, Err(Refusal::NoGrant)),
            (&grant, "ws_2", 3000, &live, 0, Err(Refusal::NoGrant)),
            (&revoked, "ws_1", 3000, &live, 0, Err(Refusal::Revoked)),
            (&grant, "ws_1", 3000, &gone, 0, Err(Refusal::RunEnded)),
            (
                &grant,
                "ws_1",
                3000,
                &Serving { live_run: Some("run_2".into()), sleeping_run: None },
                0,
                Err(Refusal::RunEnded),
            ),
            (&grant, "ws_1", 3000, &asleep, 0, Err(Refusal::Asleep)),
            // Only a grant that still holds wakes it.
            (&grant, "ws_1", 3000, &asleep, 1_000, Err(Refusal::Expired)),
            (&revoked, "ws_1", 3000, &asleep, 0, Err(Refusal::Revoked)),
            (&grant, "ws_1", 3001, &asleep, 0, Err(Refusal::NoGrant)),
        ] {
            assert_eq!(admits(grant, &workspace.into(), port, serving, now), expected, "{workspace}:{port} at {now}");
        }
    }
}
