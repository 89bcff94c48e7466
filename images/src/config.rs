//! The parts of an image's config that say how it runs.

use serde::{Deserialize, Serialize};

/// `config` of the image config blob: what `docker run` takes from it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunConfig {
    #[serde(rename = "Env", default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub env: Vec<String>,
    #[serde(
        rename = "WorkingDir",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub working_dir: String,
    #[serde(rename = "User", default, skip_serializing_if = "String::is_empty", deserialize_with = "null_as_empty")]
    pub user: String,
    #[serde(rename = "Entrypoint", default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub entrypoint: Vec<String>,
    #[serde(rename = "Cmd", default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub cmd: Vec<String>,
}

fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ImageConfigBlob {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub config: RunConfig,
}

impl RunConfig {
    /// The environment as pairs, in order (a later one of the same name wins).
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        self.env.iter().filter_map(|pair| pair.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect()
    }

    /// The command `docker run` would start: the entrypoint, then the
    /// given arguments or else the image's `Cmd`.
    pub fn command(&self, arguments: &[String]) -> Vec<String> {
        let rest = if arguments.is_empty() { &self.cmd } else { arguments };
        self.entrypoint.iter().chain(rest).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_docker_run_uses_and_treats_null_as_absent() {
        let blob: ImageConfigBlob = serde_json::from_str(
            r#"{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin","A=b=c"],"WorkingDir":"/app",
                "User":"1000","Entrypoint":null,"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":[]}}"#,
        )
        .unwrap();
        assert_eq!(blob.config.env_pairs(), vec![("PATH".into(), "/bin".into()), ("A".into(), "b=c".into())]);
        assert_eq!(blob.config.working_dir, "/app");
        assert_eq!(blob.config.command(&[]), vec!["sh".to_owned()]);
        let with_entrypoint = RunConfig { entrypoint: vec!["tini".into(), "--".into()], ..blob.config.clone() };
        assert_eq!(with_entrypoint.command(&["sleep".into(), "1".into()]), ["tini", "--", "sleep", "1"]);
        let bare: ImageConfigBlob = serde_json::from_str(r#"{"config":null}"#).unwrap();
        assert_eq!(bare.config, RunConfig::default());
    }
}
