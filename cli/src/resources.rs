//! `sluice previews …`, `sluice ssh-keys …` and `sluice webhooks …`: the
//! API's other resources from the command line, through the typed client.
//! Lists print a table by default; everything prints the API's answer as
//! it came with `--output json`.

use anyhow::Context;
use clap::Subcommand;
use serde_json::Value;

use crate::api_client::{Api, ApiClientArgs, failed, json};
use crate::workspaces::{Common, Output};

#[derive(Subcommand, Debug, Clone)]
pub enum PreviewsCommand {
    /// Grant a preview URL for PORT of the workspace (a signed, expiring link).
    Create {
        workspace_id: String,
        #[arg(long)]
        port: u16,
        /// How long the grant lasts, in seconds (the server's default otherwise).
        #[arg(long)]
        ttl_seconds: Option<i64>,
        /// Anyone with the URL may visit (no signed grant needed).
        #[arg(long)]
        public: bool,
        #[command(flatten)]
        common: Common,
    },
    /// The workspace's previews.
    List {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Revoke a preview.
    Revoke {
        workspace_id: String,
        preview_id: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum SshKeysCommand {
    /// Register a public key (an OpenSSH `.pub` file) for PRINCIPAL.
    Add {
        #[arg(long)]
        principal: String,
        #[arg(long)]
        key_file: std::path::PathBuf,
        #[command(flatten)]
        common: Plain,
    },
    /// The registered keys (of one principal with --principal).
    List {
        #[arg(long)]
        principal: Option<String>,
        #[command(flatten)]
        common: Plain,
    },
    /// Remove a key by its fingerprint (`SHA256:…`).
    Rm {
        fingerprint: String,
        #[command(flatten)]
        common: Plain,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum WebhooksCommand {
    /// Register an endpoint for the event feed (signed deliveries).
    Create {
        #[arg(long)]
        url: String,
        /// Only these event types (again for more; all by default).
        #[arg(long = "event")]
        events: Vec<String>,
        /// Read the signing secret from this file (the server makes one otherwise, shown once).
        #[arg(long)]
        secret_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Plain,
    },
    List {
        #[command(flatten)]
        common: Plain,
    },
    Get {
        webhook_id: String,
        #[command(flatten)]
        common: Plain,
    },
    Rm {
        webhook_id: String,
        #[command(flatten)]
        common: Plain,
    },
    /// Enable an endpoint disabled after failing too often.
    Enable {
        webhook_id: String,
        #[command(flatten)]
        common: Plain,
    },
    /// An endpoint's delivery log, newest first.
    Deliveries {
        webhook_id: String,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[command(flatten)]
        common: Plain,
    },
}

/// The API and the output, for resources that belong to no owner.
#[derive(clap::Args, Debug, Clone)]
pub struct Plain {
    #[arg(long, short, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

fn print(output: Output, answer: &Value, line: impl FnOnce(&Value) -> String) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(answer).expect("JSON prints")),
        Output::Table => println!("{}", line(answer)),
    }
}

fn table(output: Output, answer: &Value, header: &str, row: impl Fn(&Value) -> String) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(answer).expect("JSON prints")),
        Output::Table => {
            println!("{header}");
            for item in answer["items"].as_array().into_iter().flatten() {
                println!("{}", row(item));
            }
        }
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("-")
}

pub async fn previews(command: PreviewsCommand) -> anyhow::Result<()> {
    match command {
        PreviewsCommand::Create { workspace_id, port, ttl_seconds, public, common } => {
            let api = Api::new(&common.api)?;
            let body = serde_json::json!({
                "ownerUserId": common.owner_user_id, "port": port, "ttlSeconds": ttl_seconds, "public": public,
            });
            let body: sluice_client::types::CreatePreviewRequest =
                serde_json::from_value(body).map_err(|e| anyhow::anyhow!("the preview cannot be asked for: {e}"))?;
            let ask = api.client.create_preview().workspace_id(&workspace_id).body(body);
            let answer = json(ask.send().await.map_err(failed)?);
            print(common.output, &answer, |a| format!("{} {}", text(&a["previewId"]), text(&a["url"])));
        }
        PreviewsCommand::List { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let ask =
                api.client.list_previews().workspace_id(&workspace_id).owner_user_id(common.owner_user_id.as_str());
            let answer = json(ask.send().await.map_err(failed)?);
            table(
                common.output,
                &answer,
                "PREVIEW                                  PORT  EXPIRES                   URL",
                |p| {
                    format!(
                        "{:<40} {:<5} {:<25} {}",
                        text(&p["previewId"]),
                        p["port"],
                        text(&p["expiresAt"]),
                        text(&p["url"])
                    )
                },
            );
        }
        PreviewsCommand::Revoke { workspace_id, preview_id, common } => {
            let api = Api::new(&common.api)?;
            let ask = api.client.revoke_preview().workspace_id(&workspace_id).preview_id(&preview_id);
            ask.owner_user_id(common.owner_user_id.as_str()).send().await.map_err(failed)?;
            if let Output::Table = common.output {
                println!("{preview_id}: revoked");
            }
        }
    }
    Ok(())
}

pub async fn ssh_keys(command: SshKeysCommand) -> anyhow::Result<()> {
    match command {
        SshKeysCommand::Add { principal, key_file, common } => {
            let api = Api::new(&common.api)?;
            let key =
                std::fs::read_to_string(&key_file).with_context(|| format!("{} cannot be read", key_file.display()))?;
            let ask =
                api.client.register_ssh_key().body_map(|b| b.principal(principal).public_key(key.trim().to_owned()));
            let answer = json(ask.send().await.map_err(failed)?);
            print(common.output, &answer, |a| format!("{} {}", text(&a["fingerprint"]), text(&a["principal"])));
        }
        SshKeysCommand::List { principal, common } => {
            let api = Api::new(&common.api)?;
            let mut ask = api.client.list_ssh_keys();
            if let Some(principal) = principal {
                ask = ask.principal(principal);
            }
            let answer = json(ask.send().await.map_err(failed)?);
            table(common.output, &answer, "FINGERPRINT                                         PRINCIPAL", |k| {
                format!("{:<51} {}", text(&k["fingerprint"]), text(&k["principal"]))
            });
        }
        SshKeysCommand::Rm { fingerprint, common } => {
            let api = Api::new(&common.api)?;
            api.client.delete_ssh_key().fingerprint(&fingerprint).send().await.map_err(failed)?;
            if let Output::Table = common.output {
                println!("{fingerprint}: removed");
            }
        }
    }
    Ok(())
}

pub async fn webhooks(command: WebhooksCommand) -> anyhow::Result<()> {
    let line = |w: &Value| {
        let state = if w["enabled"] == true { "enabled" } else { "disabled" };
        format!("{:<40} {:<9} {}", text(&w["id"]), state, text(&w["url"]))
    };
    match command {
        WebhooksCommand::Create { url, events, secret_file, common } => {
            let api = Api::new(&common.api)?;
            let secret = secret_file
                .map(|f| std::fs::read_to_string(&f).with_context(|| format!("{} cannot be read", f.display())))
                .transpose()?
                .map(|s| s.trim().to_owned());
            let mut body = serde_json::json!({"url": url});
            if !events.is_empty() {
                body["events"] = serde_json::json!(events);
            }
            if let Some(secret) = secret {
                body["secret"] = serde_json::json!(secret);
            }
            let body: sluice_client::types::CreateWebhookRequest =
                serde_json::from_value(body).map_err(|e| anyhow::anyhow!("the webhook cannot be asked for: {e}"))?;
            let answer = json(api.client.create_webhook().body(body).send().await.map_err(failed)?);
            // The secret the server made is shown this once, in JSON only.
            println!("{}", serde_json::to_string_pretty(&answer)?);
        }
        WebhooksCommand::List { common } => {
            let api = Api::new(&common.api)?;
            let answer = json(api.client.list_webhooks().send().await.map_err(failed)?);
            table(common.output, &answer, "WEBHOOK                                  STATE     URL", line);
        }
        WebhooksCommand::Get { webhook_id, common } => {
            let api = Api::new(&common.api)?;
            let answer = json(api.client.get_webhook().webhook_id(&webhook_id).send().await.map_err(failed)?);
            print(common.output, &answer, line);
        }
        WebhooksCommand::Rm { webhook_id, common } => {
            let api = Api::new(&common.api)?;
            api.client.delete_webhook().webhook_id(&webhook_id).send().await.map_err(failed)?;
            if let Output::Table = common.output {
                println!("{webhook_id}: removed");
            }
        }
        WebhooksCommand::Enable { webhook_id, common } => {
            let api = Api::new(&common.api)?;
            let answer = json(api.client.enable_webhook().webhook_id(&webhook_id).send().await.map_err(failed)?);
            print(common.output, &answer, line);
        }
        WebhooksCommand::Deliveries { webhook_id, limit, common } => {
            let api = Api::new(&common.api)?;
            let ask = api.client.list_webhook_deliveries().webhook_id(&webhook_id).limit(limit.to_string());
            let answer = json(ask.send().await.map_err(failed)?);
            table(common.output, &answer, "WHEN                      STATUS  EVENT", |d| {
                let status = d["statusCode"].as_i64().map_or_else(|| text(&d["error"]).to_owned(), |c| c.to_string());
                format!("{:<25} {:<7} {}", text(&d["at"]), status, text(&d["eventType"]))
            });
        }
    }
    Ok(())
}
