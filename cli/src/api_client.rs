//! How the CLI reaches a running sluice API: the typed client
//! (`sluice-client`), pointed at `--api-url` with a token from
//! `--api-token`, `SLUICE_API_TOKEN`, a profile, or the embedded default's
//! data directory. A profile is a table of `~/.config/sluice/config.toml`
//! (`$XDG_CONFIG_HOME/sluice/config.toml`):
//!
//! ```toml
//! [profiles.default]
//! api-url = "http://127.0.0.1:7420"
//! api-token-file = "/var/lib/sluice/api-token"
//!
//! [profiles.staging]
//! api-url = "https://sluice.staging.example"
//! api-token-file = "~/.config/sluice/staging-token"
//! ```
//!
//! A flag or the environment wins over the profile, which wins over the
//! defaults. Tokens are read from files only: a profile holds no secret.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;
use sluice_client::types::ErrorBody;

const DEFAULT_API_URL: &str = "http://127.0.0.1:7420";

#[derive(Args, Debug, Clone)]
pub struct ApiClientArgs {
    /// The sluice API to talk to (default: the profile's, else
    /// http://127.0.0.1:7420).
    #[arg(long, env = "SLUICE_API_URL")]
    pub api_url: Option<String>,
    /// The API token (better given through the environment than a flag).
    #[arg(long, env = "SLUICE_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// A profile of ~/.config/sluice/config.toml (`default` when it has one).
    #[arg(long, env = "SLUICE_PROFILE")]
    pub profile: Option<String>,
    /// Where the token is read from when nothing else gives one: the
    /// embedded default's DATA_DIR/api-token.
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct Profile {
    api_url: Option<String>,
    api_token_file: Option<PathBuf>,
}

/// Where profiles are kept.
pub fn profile_path() -> Option<PathBuf> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some(config.join("sluice").join("config.toml"))
}

fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    }
}

/// The named profile (`None`: `default`, if the file has it).
fn profile(name: Option<&str>) -> anyhow::Result<Profile> {
    let Some(path) = profile_path() else { return Ok(Profile::default()) };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && name.is_none() => return Ok(Profile::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let file: ProfileFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        anyhow::anyhow!("{} (line {}): {}", path.display(), line.unwrap_or(0), e.message())
    })?;
    match name {
        Some(name) => {
            file.profiles.get(name).cloned().with_context(|| format!("{} has no profile {name:?}", path.display()))
        }
        None => Ok(file.profiles.get("default").cloned().unwrap_or_default()),
    }
}

/// A connection to the API, through the typed client.
pub struct Api {
    pub client: sluice_client::Client,
}

impl Api {
    pub fn new(args: &ApiClientArgs) -> anyhow::Result<Api> {
        let profile = profile(args.profile.as_deref())?;
        let base = args.api_url.clone().or(profile.api_url).unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        let token = match (&args.api_token, &profile.api_token_file) {
            (Some(token), _) => token.clone(),
            (None, Some(file)) => read_token(&expand_home(file))?,
            (None, None) => read_token(&args.data_dir.join("api-token"))
                .context("no --api-token, SLUICE_API_TOKEN or profile token file")?,
        };
        let client = sluice_client::with_token(&base, &token).map_err(anyhow::Error::msg)?;
        Ok(Api { client })
    }
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    Ok(token.to_owned())
}

/// The API's refusal as one line: its status and message.
pub fn failed(e: sluice_client::Error<ErrorBody>) -> anyhow::Error {
    match e {
        sluice_client::Error::ErrorResponse(answer) => match &answer.code {
            Some(code) => anyhow::anyhow!("the API answered {} ({code}): {}", answer.status(), answer.message),
            None => anyhow::anyhow!("the API answered {}: {}", answer.status(), answer.message),
        },
        sluice_client::Error::CommunicationError(e) => anyhow::anyhow!("the API cannot be reached: {e}"),
        other => anyhow::anyhow!("{other}"),
    }
}

/// The typed answer's body, as JSON.
pub fn json<T: serde::Serialize>(answer: sluice_client::ResponseValue<T>) -> serde_json::Value {
    serde_json::to_value(answer.into_inner()).expect("a typed answer serializes")
}
