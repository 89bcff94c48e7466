//! `sluice gateway`: an SSH server that takes users into their workspaces.
//! `ssh WORKSPACE_ID@gateway` authenticates the user's key (registered
//! through the API for a principal), asks the API where that principal
//! reaches the workspace (`ssh-target`), and relays shells, commands, sftp
//! and forwarded ports to the workspace's daemon through its worker.

pub mod api;
mod refusals;
mod relay;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use russh::keys::ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey};
use russh::server::{Auth, Msg, Session};
use russh::{Channel, ChannelId, ChannelMsg, ChannelOpenFailure};
use sluice_protocol::session::{self, Exit, FrameKind, Open, Pty, WindowSize};
use tokio::io::AsyncWriteExt;

use crate::api::Api;

/// The host key's file in the gateway's data directory.
pub const HOST_KEY_FILE: &str = "ssh_host_ed25519_key";

/// What a gateway runs with.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub listen: std::net::SocketAddr,
    pub api_url: String,
    pub gateway_token: String,
    pub data_dir: PathBuf,
    /// How long a connection may take to sign in before it is ended.
    pub sign_in_within: Duration,
}

/// The gateway's host key: read from its data directory, or made there
/// (mode 0600) on first start.
pub fn host_key(data_dir: &Path) -> anyhow::Result<PrivateKey> {
    let path = data_dir.join(HOST_KEY_FILE);
    if path.exists() {
        return Ok(PrivateKey::read_openssh_file(&path)?);
    }
    std::fs::create_dir_all(data_dir)?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness for a host key: {e}"))?;
    let keypair = russh::keys::ssh_key::private::Ed25519Keypair::from_seed(&seed);
    let key = PrivateKey::from(keypair);
    let text = key.to_openssh(LineEnding::LF)?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(key)
}

/// Serves SSH on `config.listen` until `shutdown` resolves.
pub async fn serve(config: GatewayConfig, shutdown: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    let key = host_key(&config.data_dir)?;
    let ssh = russh::server::Config {
        server_id: russh::SshId::Standard("SSH-2.0-sluice-gateway".into()),
        methods: russh::MethodSet::from(&[russh::MethodKind::PublicKey][..]),
        auth_rejection_time: Duration::from_millis(300),
        auth_rejection_time_initial: Some(Duration::ZERO),
        keys: vec![key],
        inactivity_timeout: Some(Duration::from_secs(3600)),
        keepalive_interval: Some(Duration::from_secs(30)),
        max_auth_attempts: 6,
        nodelay: true,
        ..Default::default()
    };
    let api = Api::new(&config.api_url, config.gateway_token.clone())?;
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    tracing::info!(listen = %listener.local_addr()?, "the SSH gateway is listening");
    let (ssh, slots) = (Arc::new(ssh), Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)));
    let refusals = Arc::new(refusals::Refusals::default());
    let sign_in_within = config.sign_in_within;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        // Full: the connection is closed at once rather than queued.
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let _ = stream.set_nodelay(true);
        let connection = Connection::new(api.clone(), peer.ip(), refusals.clone());
        let signed_in = connection.signed_in.clone();
        let ssh = ssh.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let started = tokio::time::timeout(sign_in_within, russh::server::run_stream(ssh, stream, connection));
            let Ok(Ok(session)) = started.await else { return };
            let handle = session.handle();
            tokio::pin!(session);
            tokio::select! {
                _ = &mut session => {}
                _ = tokio::time::sleep(sign_in_within) => {
                    // Looked at when the time is up: a key may have signed
                    // in any time before.
                    if signed_in.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = session.await;
                    } else {
                        let reason = format!("sign in within {} s", sign_in_within.as_secs());
                        let _ = handle.disconnect(russh::Disconnect::ByApplication, reason, "en".into()).await;
                    }
                }
            }
        });
    }
}

/// Connections one gateway holds at once.
const MAX_CONNECTIONS: usize = 1024;

/// Who authenticated on a connection.
#[derive(Debug, Clone)]
struct User {
    workspace_id: String,
    principal: String,
    fingerprint: String,
}

struct Connection {
    api: Api,
    /// Where the connection comes from, and the refusals counted per source.
    source: std::net::IpAddr,
    refusals: Arc<refusals::Refusals>,
    user: Option<User>,
    /// Set once a key signed in (the accept loop ends connections that do not).
    signed_in: Arc<std::sync::atomic::AtomicBool>,
    /// Session channels open and not started yet.
    channels: BTreeMap<ChannelId, Channel<Msg>>,
    /// Terminals and environment asked for, by channel, before its shell or command.
    pty: BTreeMap<ChannelId, Pty>,
    env: BTreeMap<ChannelId, BTreeMap<String, String>>,
}

fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// `ALGORITHM BASE64`, as the API keeps a key.
fn bare(key: &PublicKey) -> Option<String> {
    let mut key = key.clone();
    key.set_comment("");
    key.to_openssh().ok().map(|line| line.trim().to_owned())
}

impl Connection {
    fn new(api: Api, source: std::net::IpAddr, refusals: Arc<refusals::Refusals>) -> Connection {
        Connection {
            api,
            source,
            refusals,
            user: None,
            signed_in: Arc::default(),
            channels: BTreeMap::new(),
            pty: BTreeMap::new(),
            env: BTreeMap::new(),
        }
    }

    /// Refuses a key: logged with its source and fingerprint (never the
    /// key), answered later the more this source failed lately.
    async fn refuse(&self, user: &str, key: &PublicKey) -> Auth {
        let (failures, delay) = self.refusals.refused(self.source);
        let workspace: String = user.chars().take(64).collect();
        tracing::warn!(
            source = %self.source,
            fingerprint = %fingerprint(key),
            workspace = %workspace,
            failures,
            delay_ms = delay.as_millis() as u64,
            "a sign-in was refused"
        );
        tokio::time::sleep(delay).await;
        Auth::reject()
    }

    /// The key's principal, when the key is registered as it is.
    async fn principal_of(&self, key: &PublicKey) -> Option<String> {
        match self.api.key(&fingerprint(key)).await {
            Ok(Some(registered)) if Some(registered.public_key.trim()) == bare(key).as_deref() => {
                Some(registered.principal)
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "a key could not be looked up");
                None
            }
        }
    }
}

impl russh::server::Handler for Connection {
    type Error = anyhow::Error;

    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: russh::server::PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(match self.principal_of(offer.public_key).await {
            Some(_) => Auth::Accept,
            None => self.refuse(user, offer.public_key).await,
        })
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: russh::server::VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        let Some(principal) = self.principal_of(key.public_key).await else {
            return Ok(self.refuse(user, key.public_key).await);
        };
        let fingerprint = fingerprint(key.public_key);
        self.refusals.signed_in(self.source);
        tracing::info!(%fingerprint, source = %self.source, "a key authenticated");
        self.user = Some(User { workspace_id: user.to_owned(), principal, fingerprint });
        self.signed_in.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(Auth::Accept)
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        term: &str,
        col_width: u32,
        row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let size = WindowSize { cols: clamp(col_width), rows: clamp(row_height) };
        self.pty.insert(channel, Pty { term: term.chars().take(64).collect(), size });
        session.channel_success(channel)?;
        Ok(())
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if session::env_accepted(name) && value.len() <= 256 {
            self.env.entry(channel).or_default().insert(name.to_owned(), value.to_owned());
            session.channel_success(channel)?;
        } else {
            session.channel_failure(channel)?;
        }
        Ok(())
    }

    async fn shell_request(&mut self, channel: ChannelId, session: &mut Session) -> Result<(), Self::Error> {
        let open = Open::Shell { pty: self.pty.remove(&channel), env: self.env.remove(&channel).unwrap_or_default() };
        self.start(channel, open, session)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let command = String::from_utf8_lossy(data).into_owned();
        let open =
            Open::Exec { command, pty: self.pty.remove(&channel), env: self.env.remove(&channel).unwrap_or_default() };
        self.start(channel, open, session)
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if name != "sftp" {
            session.channel_failure(channel)?;
            return Ok(());
        }
        self.start(channel, Open::Sftp, session)
    }

    async fn channel_open_direct_tcpip(
        &mut self,
        channel: Channel<Msg>,
        host_to_connect: &str,
        port_to_connect: u32,
        _originator_address: &str,
        _originator_port: u32,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        let prohibited = |reason: &str| ChannelOpenFailure::Other { code: 1, reason: reason.to_owned() };
        let loopback = matches!(host_to_connect, "localhost" | "127.0.0.1" | "::1" | "[::1]");
        let (Some(user), Ok(port)) = (self.user.clone(), u16::try_from(port_to_connect)) else {
            reply.reject(prohibited("not signed in")).await;
            return Ok(());
        };
        if !loopback {
            reply.reject(prohibited("only ports on the workspace's own loopback (localhost) can be reached")).await;
            return Ok(());
        }
        match open_for(&self.api, Some(user), &Open::Connect { port }).await {
            Ok(stream) => {
                reply.accept().await;
                tokio::spawn(pump(channel, stream, false));
            }
            Err(message) => reply.reject(prohibited(&message)).await,
        }
        Ok(())
    }
}

fn clamp(n: u32) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

impl Connection {
    /// Starts the session of `open` on `channel`, on a task of its own:
    /// a refusal is written to the user's stderr with exit status 1.
    fn start(&mut self, id: ChannelId, open: Open, session: &mut Session) -> Result<(), anyhow::Error> {
        let Some(channel) = self.channels.remove(&id) else {
            // A second shell or command on one channel.
            session.channel_failure(id)?;
            return Ok(());
        };
        session.channel_success(id)?;
        let (api, user) = (self.api.clone(), self.user.clone());
        tokio::spawn(async move {
            match open_for(&api, user, &open).await {
                Ok(stream) => pump(channel, stream, true).await,
                Err(message) => {
                    let text = format!("sluice: {message}\r\n");
                    let _ = channel.extended_data(1, text.as_bytes()).await;
                    let _ = channel.exit_status(1).await;
                    let _ = channel.eof().await;
                    let _ = channel.close().await;
                }
            }
        });
        Ok(())
    }
}

/// Opens `open` on the signed-in user's workspace: where it is (the API's
/// ssh-target for the user's principal), then the session there; a failure
/// in words for the user.
async fn open_for(api: &Api, user: Option<User>, open: &Open) -> Result<relay::Stream, String> {
    let user = user.ok_or_else(|| "not signed in".to_owned())?;
    let target = api.target(&user.workspace_id, &user.principal).await.map_err(|e| e.to_string())?;
    relay::open(&target, &user.fingerprint, open).await.map_err(|e| e.to_string())
}

/// Pumps a session's frames and an SSH channel both ways until the session
/// exits (its status, for a session channel) or either side leaves.
async fn pump(mut channel: Channel<Msg>, stream: relay::Stream, session_channel: bool) {
    let (mut from_session, mut to_session) = tokio::io::split(stream);
    let (mut writer, mut stderr) = (channel.make_writer(), channel.make_writer_ext(Some(1)));
    let downstream = async {
        let mut status = None;
        while let Ok(Some((kind, payload))) = sluice_session::read_frame(&mut from_session).await {
            let written = match kind {
                FrameKind::Stdout => writer.write_all(&payload).await,
                FrameKind::Stderr => stderr.write_all(&payload).await,
                FrameKind::Exit => {
                    status = serde_json::from_slice::<Exit>(&payload).ok().map(|e| e.status());
                    break;
                }
                _ => Ok(()),
            };
            if written.is_err() {
                break;
            }
        }
        let _ = writer.flush().await;
        let _ = stderr.flush().await;
        status
    };
    tokio::pin!(downstream);
    let mut ping = tokio::time::interval(Duration::from_millis(session::PING_EVERY_MS));
    let status = loop {
        tokio::select! {
            status = &mut downstream => break status,
            _ = ping.tick() => {
                if sluice_session::write_frames(&mut to_session, FrameKind::Ping, &[]).await.is_err() {
                    break None;
                }
            }
            message = channel.wait() => {
                let sent = match message {
                    Some(ChannelMsg::Data { data }) => sluice_session::write_frames(&mut to_session, FrameKind::Stdin, &data).await,
                    Some(ChannelMsg::Eof) => sluice_session::write_frames(&mut to_session, FrameKind::StdinEof, &[]).await,
                    Some(ChannelMsg::WindowChange { col_width, row_height, .. }) => {
                        let size = WindowSize { cols: clamp(col_width), rows: clamp(row_height) };
                        let payload = serde_json::to_vec(&size).unwrap_or_default();
                        sluice_session::write_frames(&mut to_session, FrameKind::Resize, &payload).await
                    }
                    Some(ChannelMsg::Signal { signal }) => {
                        let name = format!("{signal:?}");
                        if session::signal_number(&name).is_some() {
                            sluice_session::write_frames(&mut to_session, FrameKind::Signal, name.as_bytes()).await
                        } else {
                            Ok(())
                        }
                    }
                    Some(ChannelMsg::Close) | None => break None,
                    Some(_) => Ok(()),
                };
                if sent.is_err() {
                    break None;
                }
            }
        }
    };
    if let (true, Some(status)) = (session_channel, status) {
        let _ = channel.exit_status(status).await;
    }
    let _ = channel.eof().await;
    let _ = channel.close().await;
}
