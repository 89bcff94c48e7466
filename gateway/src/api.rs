//! What the gateway asks sluice's API, with its gateway token: whose key it
//! was offered, and where a principal's workspace is.

use std::time::Duration;

use serde::Deserialize;

const GATEWAY_TOKEN_HEADER: &str = "x-sealant-gateway-token";
const PRINCIPAL_HEADER: &str = "x-sealant-principal-id";
/// How long one API call may take before the user is told to retry.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("base", &self.base).finish_non_exhaustive()
    }
}

/// A registered key, as the API answers it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredKey {
    pub principal: String,
    /// `ALGORITHM BASE64`.
    pub public_key: String,
}

/// Where a session goes: the executor's worker, with a ticket for it.
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: String,
    pub ticket: String,
    pub authority_pem: String,
}

/// Why a workspace cannot be reached now, in words for the user.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unreachable {
    #[error("no workspace {0} is yours to reach")]
    NotYours(String),
    #[error("{0}")]
    NotRunning(String),
    #[error("workspace {0} is starting; try again shortly")]
    Starting(String),
    #[error("workspace {0} is reached through a host path only; run its worker with --internal-listen")]
    NoWorkerAddress(String),
    #[error("sluice did not answer ({0}); try again shortly")]
    ApiDown(String),
}

#[derive(Deserialize)]
struct TargetAnswer {
    runtime: TargetRuntime,
    gateway: Option<TargetGateway>,
}

#[derive(Deserialize)]
struct TargetRuntime {
    endpoint: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetGateway {
    ticket: String,
    certificate_authority: String,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    message: Option<String>,
}

impl Api {
    pub fn new(base: &str, token: String) -> anyhow::Result<Api> {
        let client = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            // Within the API's header read timeout, which closes idle connections.
            .pool_idle_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Api { base: base.trim_end_matches('/').to_owned(), token, client })
    }

    /// The key with this fingerprint, if one is registered.
    pub async fn key(&self, fingerprint: &str) -> Result<Option<RegisteredKey>, Unreachable> {
        let url_safe: String = fingerprint
            .chars()
            .map(|c| match c {
                '+' => '-',
                '/' => '_',
                c => c,
            })
            .collect();
        let answer = self
            .client
            .get(format!("{}/v1/gateway/ssh-keys/{url_safe}", self.base))
            .header(GATEWAY_TOKEN_HEADER, &self.token)
            .send()
            .await
            .map_err(|e| Unreachable::ApiDown(e.without_url().to_string()))?;
        match answer.status().as_u16() {
            200 => answer.json().await.map(Some).map_err(|e| Unreachable::ApiDown(e.without_url().to_string())),
            404 => Ok(None),
            status => Err(Unreachable::ApiDown(format!("the key lookup answered {status}"))),
        }
    }

    /// Where `principal` reaches `workspace_id` (the contract's ssh-target).
    pub async fn target(&self, workspace_id: &str, principal: &str) -> Result<Target, Unreachable> {
        let answer = self
            .client
            .get(format!("{}/v1/workspaces/{workspace_id}/ssh-target", self.base))
            .header(GATEWAY_TOKEN_HEADER, &self.token)
            .header(PRINCIPAL_HEADER, principal)
            .send()
            .await
            .map_err(|e| Unreachable::ApiDown(e.without_url().to_string()))?;
        let status = answer.status().as_u16();
        if status != 200 {
            let message = answer.json::<ErrorAnswer>().await.ok().and_then(|e| e.message).unwrap_or_default();
            return Err(match status {
                404 | 400 => Unreachable::NotYours(workspace_id.to_owned()),
                409 => Unreachable::NotRunning(message),
                503 => Unreachable::Starting(workspace_id.to_owned()),
                other => Unreachable::ApiDown(format!("the target lookup answered {other}")),
            });
        }
        let target: TargetAnswer =
            answer.json().await.map_err(|e| Unreachable::ApiDown(e.without_url().to_string()))?;
        match target.gateway {
            Some(gateway) if target.runtime.endpoint.starts_with("https://") => Ok(Target {
                endpoint: target.runtime.endpoint,
                ticket: gateway.ticket,
                authority_pem: gateway.certificate_authority,
            }),
            _ => Err(Unreachable::NoWorkerAddress(workspace_id.to_owned())),
        }
    }
}
