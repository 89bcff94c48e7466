//! Command-line and environment configuration (`SLUICE_*`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use sluice_api::TokenSet;
use sluice_store::seal::{new_token, write_private_file};
use sluice_store::{Sealer, Store};

#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// Where sluice keeps its files: the SQLite database, keys and tokens.
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
    /// PostgreSQL instead of the embedded SQLite: postgres://user@host:port/db
    #[arg(long, env = "SLUICE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The 32-byte key (64 hex characters) that seals secrets at rest;
    /// generated into DATA_DIR/seal-key when not given.
    #[arg(long, env = "SLUICE_SEAL_KEY_FILE")]
    pub seal_key_file: Option<PathBuf>,
}

impl StoreArgs {
    /// Creates the data directory, private to its owner, when it does not exist.
    pub fn ensure_data_dir(&self) -> anyhow::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if self.data_dir.is_dir() {
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.data_dir)
            .with_context(|| format!("cannot create {}", self.data_dir.display()))
    }

    pub async fn open(&self) -> anyhow::Result<Store> {
        self.ensure_data_dir()?;
        let key_path = self.seal_key_file.clone().unwrap_or_else(|| self.data_dir.join("seal-key"));
        let sealer = Sealer::load_or_create(&key_path).with_context(|| format!("seal key {}", key_path.display()))?;
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite:{}", self.data_dir.join("sluice.db").display()),
        };
        Store::open(&url, sealer).await.context("cannot open the database")
    }
}

#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// Address the HTTP API listens on.
    #[arg(long, env = "SLUICE_LISTEN", default_value = "127.0.0.1:7420")]
    pub listen: String,
    /// A file of accepted API tokens, one per line.
    #[arg(long, env = "SLUICE_API_TOKENS_FILE")]
    pub api_tokens_file: Option<PathBuf>,
    /// Accepted API tokens, comma-separated.
    #[arg(long, env = "SLUICE_API_TOKENS", hide_env_values = true, value_delimiter = ',')]
    pub api_tokens: Vec<String>,
    /// A file of accepted SSH gateway tokens, one per line.
    #[arg(long, env = "SLUICE_GATEWAY_TOKENS_FILE")]
    pub gateway_tokens_file: Option<PathBuf>,
    /// Accepted SSH gateway tokens, comma-separated.
    #[arg(long, env = "SLUICE_GATEWAY_TOKENS", hide_env_values = true, value_delimiter = ',')]
    pub gateway_tokens: Vec<String>,
    /// Lifetime of workspaces whose create names no ttlSeconds.
    #[arg(long, env = "SLUICE_DEFAULT_TTL_SECONDS", value_parser = clap::value_parser!(i64).range(1..))]
    pub default_ttl_seconds: Option<i64>,
}

impl ApiArgs {
    pub fn api_tokens(&self, data_dir: &Path) -> anyhow::Result<TokenSet> {
        tokens("API", self.api_tokens_file.as_deref(), &self.api_tokens, &data_dir.join("api-token"))
    }

    pub fn gateway_tokens(&self, data_dir: &Path) -> anyhow::Result<TokenSet> {
        tokens(
            "SSH gateway",
            self.gateway_tokens_file.as_deref(),
            &self.gateway_tokens,
            &data_dir.join("gateway-token"),
        )
    }
}

/// Tokens from a file or a list; with neither, the data directory's token
/// file, generated (mode 0600) on first start.
fn tokens(what: &str, file: Option<&Path>, list: &[String], default_file: &Path) -> anyhow::Result<TokenSet> {
    let mut accepted: Vec<String> = list.iter().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect();
    let file = match (file, accepted.is_empty()) {
        (Some(f), _) => Some(f.to_path_buf()),
        (None, true) => {
            if !default_file.exists() {
                write_private_file(default_file, new_token().expose())
                    .with_context(|| format!("cannot write {}", default_file.display()))?;
            }
            Some(default_file.to_path_buf())
        }
        (None, false) => None,
    };
    if let Some(file) = file {
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        accepted
            .extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned));
        tracing::info!(file = %file.display(), "{what} tokens are read from this file");
    }
    let set = TokenSet::new(accepted.iter().map(String::as_str));
    anyhow::ensure!(!set.is_empty(), "no {what} token is configured");
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_token_file_is_generated_private_when_nothing_is_configured() {
        let dir = tempfile::tempdir().unwrap();
        let default_file = dir.path().join("api-token");
        let set = tokens("API", None, &[], &default_file).unwrap();
        let token = std::fs::read_to_string(&default_file).unwrap();
        assert_eq!(token.trim().len(), 64);
        assert!(set.accepts(token.trim()));
        assert_eq!(std::fs::metadata(&default_file).unwrap().permissions().mode() & 0o777, 0o600);
        // A second start reads the same token.
        assert!(tokens("API", None, &[], &default_file).unwrap().accepts(token.trim()));
    }

    #[test]
    fn listed_tokens_and_token_files_are_used_instead() {
        let dir = tempfile::tempdir().unwrap();
        let default_file = dir.path().join("api-token");
        let set = tokens("API", None, &["one".into(), " two ".into()], &default_file).unwrap();
        assert!(set.accepts("one") && set.accepts("two") && !set.accepts("three"));
        assert!(!default_file.exists(), "no token file is generated when tokens are given");
        let file = dir.path().join("tokens");
        std::fs::write(&file, "# comment\nalpha\n\nbeta\n").unwrap();
        let set = tokens("API", Some(&file), &[], &default_file).unwrap();
        assert!(set.accepts("alpha") && set.accepts("beta") && !set.accepts("# comment"));
        std::fs::write(&file, "\n").unwrap();
        assert!(tokens("API", Some(&file), &[], &default_file).is_err(), "an empty token file is refused");
    }
}
