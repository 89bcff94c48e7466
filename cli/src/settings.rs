//! Settings from a file: `--config FILE` (or `SLUICE_CONFIG`) names a TOML
//! file whose keys are the command's flags without their dashes
//! (`listen = "…"`, `default-ttl-seconds = 3600`, `registry = ["a=b"]`).
//! The layers are defaults, then the file, then the environment, then
//! flags: a file's key becomes a flag only where neither a flag nor the
//! environment set it. Only the server commands read it. One file may serve `serve`, `api`, `worker` and
//! `gateway`: a key of another of them is left alone; a key that names a
//! flag of none is refused with its name, and nothing starts.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// The flag and variable that name the file.
pub const CONFIG_FLAG: &str = "config";
pub const CONFIG_ENV: &str = "SLUICE_CONFIG";

/// The commands one settings file may serve together.
const SHARING: [&str; 4] = ["serve", "api", "worker", "gateway"];

/// The arguments with the file's settings added, and the flags they set.
pub struct Layered {
    pub argv: Vec<OsString>,
    pub from_file: BTreeSet<String>,
}

/// Where `argv` (or the environment) says the file is.
fn config_path(argv: &[OsString]) -> Option<PathBuf> {
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            break;
        }
        if text == format!("--{CONFIG_FLAG}") {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = text.strip_prefix(&format!("--{CONFIG_FLAG}=")) {
            return Some(PathBuf::from(path));
        }
    }
    std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The subcommand `matches` chose, as clap describes it, and its matches.
fn chosen<'a>(root: &'a Command, matches: &'a ArgMatches) -> Option<(&'a Command, &'a ArgMatches)> {
    let (name, sub) = matches.subcommand()?;
    let command = root.find_subcommand(name)?;
    Some(chosen(command, sub).unwrap_or((command, sub)))
}

/// `argv` with the settings of the file it names (if any) added as flags.
pub fn layer(root: &Command, argv: Vec<OsString>) -> anyhow::Result<Layered> {
    let as_given = |argv| Ok(Layered { argv, from_file: BTreeSet::new() });
    let Some(path) = config_path(&argv) else { return as_given(argv) };
    // Parsed once as given, to learn the command and what flags and the
    // environment set already; a parse error is reported by the real parse.
    let Ok(matches) = root.clone().try_get_matches_from(&argv) else { return as_given(argv) };
    // Only the server commands read the file: an operator command, or a
    // daemon started with the variable in its environment, never does.
    let Some((command, sub)) = chosen(root, &matches).filter(|(c, _)| SHARING.contains(&c.get_name())) else {
        return as_given(argv);
    };
    let table = read_table(&path)?;
    let mut argv = argv;
    let mut from_file = BTreeSet::new();
    for (key, value) in &table {
        let flag_of = |command: &Command| {
            command.get_arguments().find(|a| a.get_long() == Some(key.as_str()) && key != CONFIG_FLAG).cloned()
        };
        let Some(arg) = flag_of(command) else {
            // One file may serve several commands: a key of another is
            // left for it; a key of none is a mistake.
            if SHARING.iter().filter_map(|name| root.find_subcommand(name)).any(|other| flag_of(other).is_some()) {
                continue;
            }
            bail!("{}: unknown key `{key}` (no flag --{key} of `sluice {}`)", path.display(), command.get_name());
        };
        let set_elsewhere = matches!(
            sub.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if set_elsewhere {
            continue;
        }
        let takes_value = !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count);
        let values: Vec<&toml::Value> = match value {
            toml::Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        for item in values {
            let text = match item {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) if !takes_value => {
                    if *b {
                        argv.push(format!("--{key}").into());
                    }
                    continue;
                }
                toml::Value::Boolean(b) => b.to_string(),
                _ => bail!("{}: `{key}` must be a string, a number, a boolean or a list of them", path.display()),
            };
            if !takes_value {
                bail!("{}: `{key}` is a switch: write `{key} = true` or `false`", path.display());
            }
            argv.push(format!("--{key}={text}").into());
        }
        from_file.insert(arg.get_id().to_string());
    }
    Ok(Layered { argv, from_file })
}

fn read_table(path: &Path) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The parser's message quotes the offending line, which may hold a
    // secret: only where it is.
    text.parse::<toml::Table>().map_err(|e| {
        let at = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        match at {
            Some(line) => anyhow::anyhow!("{}: not valid TOML at line {line}", path.display()),
            None => anyhow::anyhow!("{}: not valid TOML", path.display()),
        }
    })
}

/// Flags whose values are secrets: shown as `<redacted>`.
fn secret(name: &str) -> bool {
    !name.ends_with("-file")
        && ["token", "tokens", "secret", "password", "key"].iter().any(|word| name.split('-').any(|part| part == *word))
}

/// A URL with its password hidden.
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:<redacted>{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// The effective settings of the command `argv` runs, one per line as
/// `name = value  # where it came from`, secrets redacted: itself a
/// settings file.
pub fn print(root: &Command, argv: Vec<OsString>) -> anyhow::Result<String> {
    let layered = layer(root, argv)?;
    let matches = root.clone().try_get_matches_from(&layered.argv)?;
    let (command, sub) = chosen(root, &matches).context("name a command: serve, api, worker, gateway")?;
    let mut out = format!("# sluice {}\n", command.get_name());
    for arg in command.get_arguments() {
        let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else { continue };
        if long == CONFIG_FLAG || long == "help" || long == "version" {
            continue;
        }
        let values: Vec<String> =
            sub.get_raw(id).map(|raw| raw.map(|v| v.to_string_lossy().into_owned()).collect()).unwrap_or_default();
        let source = if layered.from_file.contains(id) {
            "file"
        } else {
            match sub.value_source(id) {
                Some(ValueSource::CommandLine) => "flag",
                Some(ValueSource::EnvVariable) => "environment",
                Some(ValueSource::DefaultValue) => "default",
                _ => "unset",
            }
        };
        let shown: Vec<String> = values
            .iter()
            .map(|v| if secret(long) { "<redacted>".to_owned() } else { without_password(v) })
            .map(|v| if v.parse::<i64>().is_ok() || v == "true" || v == "false" { v } else { format!("{v:?}") })
            .collect();
        let value = match shown.len() {
            0 => String::new(),
            1 => shown[0].clone(),
            _ => format!("[{}]", shown.join(", ")),
        };
        if shown.is_empty() {
            out.push_str(&format!("# {long} is not set\n"));
        } else {
            out.push_str(&format!("{long} = {value}  # {source}\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_named_by_their_flags_and_passwords_hidden_in_urls() {
        for (name, hidden) in [
            ("api-tokens", true),
            ("gateway-tokens", true),
            ("api-tokens-file", false),
            ("seal-key-file", false),
            ("tls-key", true),
            ("listen", false),
            ("keep-alive", false),
        ] {
            assert_eq!(secret(name), hidden, "{name}");
        }
        assert_eq!(without_password("postgres://sluice:hunter2@db:5432/s"), "postgres://sluice:<redacted>@db:5432/s");
        assert_eq!(without_password("postgres://db:5432/s"), "postgres://db:5432/s");
        assert_eq!(without_password("sqlite:/var/lib/sluice.db"), "sqlite:/var/lib/sluice.db");
    }
}
