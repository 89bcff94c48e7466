//! The never-send guard: a fail-closed content check over every string leaf
//! of a JSON document (a workspace `spec`, an event's `data`). Six forbidden
//! classes are detected by their canonical shapes, always in the same order,
//! so a value matching several is always reported under the same class.
//! The guard names where it found something, never what it found.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

/// The forbidden classes, in detection order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenClass {
    ShellCommand,
    ExecutablePath,
    PrivateUrl,
    RawCredential,
    UnboundedCode,
    EnvironmentContents,
    /// The document is too large or too deep to check: refused, not waved through.
    Uncheckable,
}

impl ForbiddenClass {
    pub fn reason_code(self) -> &'static str {
        match self {
            ForbiddenClass::ShellCommand => "NEVER_SEND_SHELL_COMMAND",
            ForbiddenClass::ExecutablePath => "NEVER_SEND_EXECUTABLE_PATH",
            ForbiddenClass::PrivateUrl => "NEVER_SEND_PRIVATE_URL",
            ForbiddenClass::RawCredential => "NEVER_SEND_RAW_CREDENTIAL",
            ForbiddenClass::UnboundedCode => "NEVER_SEND_UNBOUNDED_CODE",
            ForbiddenClass::EnvironmentContents => "NEVER_SEND_ENVIRONMENT_CONTENTS",
            ForbiddenClass::Uncheckable => "NEVER_SEND_UNCHECKABLE",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ForbiddenClass::ShellCommand => "a shell command",
            ForbiddenClass::ExecutablePath => "an executable path",
            ForbiddenClass::PrivateUrl => "a private URL",
            ForbiddenClass::RawCredential => "a raw credential",
            ForbiddenClass::UnboundedCode => "a block of code",
            ForbiddenClass::EnvironmentContents => "environment contents (KEY=value lines)",
            ForbiddenClass::Uncheckable => "a document too large or too deep to check",
        }
    }
}

/// Where the guard refused a document, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardViolation {
    pub class: ForbiddenClass,
    /// JSON path of the offending leaf, rooted at the document's name: `spec.env.TOKEN`.
    pub path: String,
}

impl fmt::Display for GuardViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} holds {} ({}); sluice refuses to store it there. Secrets belong in secretEnv, commands in the exec API",
            self.path,
            self.class.describe(),
            self.class.reason_code()
        )
    }
}

impl std::error::Error for GuardViolation {}

const MAX_DEPTH: usize = 64;
const MAX_LEAVES: usize = 20_000;

/// Checks every string leaf (and object key) of `doc`, reporting the first
/// forbidden value in document order. `root` names the document in paths.
pub fn check(root: &str, doc: &Value) -> Result<(), GuardViolation> {
    let mut leaves = 0usize;
    walk(doc, &mut root.to_owned(), 0, &mut leaves)
}

fn walk(value: &Value, path: &mut String, depth: usize, leaves: &mut usize) -> Result<(), GuardViolation> {
    *leaves += 1;
    if depth > MAX_DEPTH || *leaves > MAX_LEAVES {
        return Err(GuardViolation { class: ForbiddenClass::Uncheckable, path: path.clone() });
    }
    match value {
        Value::String(s) => match classify(s) {
            Some(class) => Err(GuardViolation { class, path: path.clone() }),
            None => Ok(()),
        },
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, depth + 1, leaves)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            // Sorted, so the first violation reported does not depend on how the map was built.
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (key, item) in entries {
                let len = path.len();
                push_key(path, key);
                if let Some(class) = classify(key) {
                    return Err(GuardViolation { class, path: path.clone() });
                }
                walk(item, path, depth + 1, leaves)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str(&format!("[{}]", serde_json::Value::String(key.to_owned())));
    }
}

type Detector = fn(&str) -> bool;

/// The first forbidden class `text` shows, in the fixed detector order.
pub fn classify(text: &str) -> Option<ForbiddenClass> {
    let detectors: [(ForbiddenClass, Detector); 6] = [
        (ForbiddenClass::ShellCommand, is_shell_command),
        (ForbiddenClass::ExecutablePath, has_executable_path),
        (ForbiddenClass::PrivateUrl, has_private_url),
        (ForbiddenClass::RawCredential, has_raw_credential),
        (ForbiddenClass::UnboundedCode, is_unbounded_code),
        (ForbiddenClass::EnvironmentContents, is_environment_dump),
    ];
    detectors.into_iter().find(|(_, detect)| detect(text)).map(|(class, _)| class)
}

/// Whether `text` holds a raw credential. Exec commands are checked with
/// this class alone: running programs is their purpose, but a credential
/// in them would be stored in plain text.
pub fn holds_raw_credential(text: &str) -> bool {
    has_raw_credential(text)
}

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '`' || c == ';' || c == '(' || c == ')')
        .filter(|t| !t.is_empty())
}

fn basename(token: &str) -> &str {
    token.rsplit(['/', '\\']).next().unwrap_or(token)
}

fn is_shell_command(text: &str) -> bool {
    if text.trim_start().starts_with("#!") {
        return true;
    }
    let words: Vec<String> = tokens(text).map(str::to_ascii_lowercase).collect();
    words.windows(2).any(|pair| {
        let program = basename(&pair[0]).trim_end_matches(".exe");
        let flag = pair[1].as_str();
        match program {
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "fish" | "busybox" => {
                flag == "-c"
                    || (flag.starts_with('-') && !flag.starts_with("--") && flag.ends_with('c') && flag.len() <= 4)
            }
            "cmd" => flag == "/c" || flag == "/k",
            "powershell" | "pwsh" => matches!(flag, "-command" | "-c" | "-encodedcommand" | "-enc" | "-e"),
            _ => false,
        }
    })
}

fn has_executable_path(text: &str) -> bool {
    const POSIX_DIRS: [&str; 6] = ["/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"];
    const WINDOWS_EXT: [&str; 5] = [".exe", ".bat", ".cmd", ".ps1", ".dll"];
    const POSIX_EXT: [&str; 4] = [".sh", ".exe", ".dylib", ".so"];
    tokens(text).any(|token| {
        if token.contains("://") {
            return false;
        }
        let lower = token.to_ascii_lowercase();
        let windows_path = lower.contains('\\') || lower.as_bytes().get(1) == Some(&b':');
        if windows_path && WINDOWS_EXT.iter().any(|e| lower.ends_with(e)) {
            return true;
        }
        if POSIX_DIRS.iter().any(|d| lower.starts_with(d)) {
            return true;
        }
        let name = basename(&lower);
        name.len() > 3 && POSIX_EXT.iter().any(|e| name.ends_with(e) && name.len() > e.len())
    })
}

/// Hosts named in `scheme://` URLs within the text, with the authority's
/// userinfo (if any) split off.
fn url_authorities(text: &str) -> Vec<(Option<&str>, &str)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme =
            rest[..at].rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')).next();
        let after = &rest[at + 3..];
        let end = after
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .unwrap_or(after.len());
        let authority = &after[..end];
        if scheme.is_some_and(|s| !s.is_empty()) {
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => found.push((Some(userinfo), host)),
                None => found.push((None, authority)),
            }
        }
        rest = &after[end..];
    }
    found
}

fn host_of(authority: &str) -> String {
    let host = if let Some(inner) = authority.strip_prefix('[') {
        inner.split(']').next().unwrap_or(inner)
    } else {
        authority
            .rsplit_once(':')
            .map_or(authority, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { authority })
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn is_private_host(host: &str) -> bool {
    if host == "localhost" || [".localhost", ".local", ".internal"].iter().any(|s| host.ends_with(s)) {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => private_v4(ip),
        Ok(IpAddr::V6(ip)) => private_v6(ip),
        Err(_) => false,
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
}

fn private_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || ip.to_ipv4().is_some_and(private_v4)
}

fn has_private_url(text: &str) -> bool {
    url_authorities(text).into_iter().any(|(_, authority)| is_private_host(&host_of(authority)))
}

fn has_raw_credential(text: &str) -> bool {
    if text.contains("-----BEGIN") && text.contains("PRIVATE KEY") {
        return true;
    }
    if url_authorities(text)
        .into_iter()
        .any(|(userinfo, _)| userinfo.is_some_and(|u| u.split_once(':').is_some_and(|(_, p)| !p.is_empty())))
    {
        return true;
    }
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower.find("bearer ") {
        let token: String = text[at + 7..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "-._~+/=".contains(*c))
            .collect();
        if token.len() >= 20 {
            return true;
        }
    }
    tokens(text).any(|t| {
        let t = t.trim_matches(|c: char| c == ',' || c == '.' || c == ':' || c == '=');
        let t = t.rsplit('=').next().unwrap_or(t);
        is_cloud_key(t) || is_jwt(t) || is_vendor_key(t)
    })
}

fn all_in(text: &str, allowed: impl Fn(char) -> bool) -> bool {
    text.chars().all(allowed)
}

fn is_cloud_key(t: &str) -> bool {
    const AWS_PREFIXES: [&str; 10] = ["AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"];
    let aws_access_key = t.len() == 20
        && AWS_PREFIXES.iter().any(|p| t.starts_with(p))
        && all_in(t, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
    // A 40-character secret key mixes cases and digits; a hex digest never has upper and lower case both.
    let aws_secret_key = t.len() == 40
        && all_in(t, |c| c.is_ascii_alphanumeric() || c == '/' || c == '+')
        && t.chars().any(|c| c.is_ascii_uppercase())
        && t.chars().any(|c| c.is_ascii_lowercase())
        && t.chars().any(|c| c.is_ascii_digit());
    let google_api_key =
        t.len() == 39 && t.starts_with("AIza") && all_in(t, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    aws_access_key || aws_secret_key || google_api_key
}

fn is_jwt(t: &str) -> bool {
    let parts: Vec<&str> = t.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts[0].len() >= 10
        && parts.iter().all(|p| all_in(p, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
}

fn is_vendor_key(t: &str) -> bool {
    const PREFIXED: [(&str, usize); 16] = [
        ("ghp_", 30),
        ("gho_", 30),
        ("ghu_", 30),
        ("ghs_", 30),
        ("ghr_", 30),
        ("github_pat_", 20),
        ("glpat-", 20),
        ("xoxb-", 10),
        ("xoxp-", 10),
        ("xoxa-", 10),
        ("xapp-", 10),
        ("sk_live_", 16),
        ("rk_live_", 16),
        ("sk-ant-", 20),
        ("sk-", 20),
        ("npm_", 30),
    ];
    let key_chars = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if PREFIXED.iter().any(|(p, min)| t.starts_with(p) && t.len() - p.len() >= *min && all_in(t, key_chars)) {
        return true;
    }
    // A chat bot token: numeric bot id, a colon, a 35-character secret.
    if let Some((id, secret)) = t.split_once(':') {
        return (8..=12).contains(&id.len())
            && all_in(id, |c| c.is_ascii_digit())
            && secret.len() == 35
            && all_in(secret, key_chars);
    }
    false
}

fn is_unbounded_code(text: &str) -> bool {
    const STARTS: [&str; 16] = [
        "def ",
        "class ",
        "function ",
        "async function",
        "import ",
        "fn ",
        "pub fn ",
        "async fn ",
        "func ",
        "#include",
        "package ",
        "module.exports",
        "public class ",
        "public static ",
        "impl ",
        "lambda ",
    ];
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len() >= 2
        && lines.iter().any(|line| {
            let line = line.trim_start();
            STARTS.iter().any(|s| line.starts_with(s))
                || (line.starts_with("from ") && line.contains(" import "))
                || line.contains("=> {")
                || line.contains("require(")
        })
}

fn is_env_assignment(line: &str) -> bool {
    let line = line.trim();
    let line = line.strip_prefix("export ").unwrap_or(line);
    match line.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && all_in(name, |c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn is_environment_dump(text: &str) -> bool {
    let mut run = 0;
    for line in text.lines() {
        if is_env_assignment(line) {
            run += 1;
            if run >= 3 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class_of(text: &str) -> Option<ForbiddenClass> {
        classify(text)
    }

    #[test]
    fn shell_commands_are_refused() {
        for text in [
            "sh -c 'rm -rf /'",
            "bash -lc make",
            "/bin/sh -c x",
            "cmd /c dir",
            "powershell -Command Get-Item",
            "#!/usr/bin/env python",
        ] {
            assert_eq!(class_of(text), Some(ForbiddenClass::ShellCommand), "{text}");
        }
    }

    #[test]
    fn executable_paths_are_refused() {
        for text in [
            "/usr/bin/python3",
            "/bin/busybox",
            "C:\\Windows\\system32\\calc.exe",
            "run ./deploy.sh now",
            "libevil.so",
            "/sbin/init",
        ] {
            assert_eq!(class_of(text), Some(ForbiddenClass::ExecutablePath), "{text}");
        }
    }

    #[test]
    fn private_urls_are_refused() {
        for text in [
            "http://localhost:3000/x",
            "https://10.1.2.3/",
            "http://192.168.0.1",
            "http://169.254.169.254/latest/meta-data",
            "postgres://db.internal:5432/app",
            "http://printer.local",
            "http://[::1]:8080/",
            "http://[fd00::1]/",
            "http://127.0.0.1",
        ] {
            assert_eq!(class_of(text), Some(ForbiddenClass::PrivateUrl), "{text}");
        }
    }

    #[test]
    fn raw_credentials_are_refused() {
        for text in [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "AKIAIOSFODNN7EXAMPLE",
            "aws_secret=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "https://user:hunter2@example.com/repo.git",
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
            "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "xoxb-123456789012-abcdefghijkl",
            "sk-proj-abcdefghijklmnopqrstuvwxyz",
            "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        ] {
            assert_eq!(class_of(text), Some(ForbiddenClass::RawCredential), "{text}");
        }
    }

    #[test]
    fn unbounded_code_is_refused() {
        for text in [
            "import os\nos.system('x')",
            "def main():\n    pass",
            "function f() {\n return 1 }",
            "#include <stdio.h>\nint main(){}",
        ] {
            assert_eq!(class_of(text), Some(ForbiddenClass::UnboundedCode), "{text}");
        }
    }

    #[test]
    fn environment_dumps_are_refused() {
        assert_eq!(class_of("HOME=/root\nPATH=x\nUSER=root\n"), Some(ForbiddenClass::EnvironmentContents));
        assert_eq!(class_of("export A=1\nexport B=2\nexport C=3"), Some(ForbiddenClass::EnvironmentContents));
    }

    #[test]
    fn ordinary_values_pass() {
        for text in [
            "ubuntu:22.04",
            "make test",
            "hello world",
            "da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "https://example.com/org/repo.git",
            "sleep",
            "/workspace/src",
            "FOO=bar",
            "A=1\nB=2",
            "Bearer short",
            "A README line.\nAnother line about classes of things.",
            "python3",
            "node_modules/.bin",
            "sk-short",
            "10:30",
            "",
        ] {
            assert_eq!(class_of(text), None, "{text}");
        }
    }

    #[test]
    fn detector_order_is_fixed() {
        // A shell command that also names an executable path and a private URL is a shell command.
        assert_eq!(class_of("/bin/sh -c 'curl http://10.0.0.1'"), Some(ForbiddenClass::ShellCommand));
        // A private URL carrying a password is reported as a private URL.
        assert_eq!(class_of("http://u:p@localhost/"), Some(ForbiddenClass::PrivateUrl));
    }

    #[test]
    fn documents_report_the_json_path_of_the_first_violation() {
        let doc = json!({"image": "x", "env": {"TOKEN": "AKIAIOSFODNN7EXAMPLE"}, "args": ["ok", "sh -c x"]});
        let v = check("spec", &doc).unwrap_err();
        // Keys are walked in sorted order: "args" comes before "env".
        assert_eq!(v.path, "spec.args[1]");
        assert_eq!(v.class, ForbiddenClass::ShellCommand);
        let v = check("spec", &json!({"env": {"TOKEN": "AKIAIOSFODNN7EXAMPLE"}})).unwrap_err();
        assert_eq!((v.path.as_str(), v.class), ("spec.env.TOKEN", ForbiddenClass::RawCredential));
        assert!(!v.to_string().contains("AKIA"), "the message must not echo the value");
        assert!(v.to_string().contains("secretEnv"));
        assert!(check("spec", &json!({"cpu": 2, "name": "dev", "tags": ["a", "b"]})).is_ok());
    }

    #[test]
    fn keys_are_checked_too() {
        let v = check("spec", &json!({"sh -c reboot": 1})).unwrap_err();
        assert_eq!(v.class, ForbiddenClass::ShellCommand);
        assert_eq!(v.path, "spec[\"sh -c reboot\"]");
    }

    #[test]
    fn too_deep_documents_fail_closed() {
        let mut doc = json!("x");
        for _ in 0..100 {
            doc = json!([doc]);
        }
        assert_eq!(check("spec", &doc).unwrap_err().class, ForbiddenClass::Uncheckable);
    }
}

#[cfg(test)]
mod robustness {
    use super::*;

    /// A small deterministic generator, enough to vary inputs.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    #[test]
    fn arbitrary_text_never_panics_and_is_classified_the_same_twice() {
        let pieces = [
            "://",
            "@",
            ":",
            "/",
            "\\",
            "bearer ",
            "Bearer ",
            "-----BEGIN",
            "PRIVATE KEY",
            "eyJ",
            ".",
            "=",
            "\n",
            " ",
            "sh",
            "-c",
            "é",
            "日本",
            "🦀",
            "[",
            "]",
            "AKIA",
            "xoxb-",
            "ghp_",
            "0",
            "9",
            "a",
            "Z",
            "#!",
            "import ",
            "def ",
            "localhost",
            "10.0.0.1",
            "\u{0}",
            "\t",
            "'",
            "\"",
            "export ",
            ".sh",
            "/bin/",
        ];
        let mut rng = Lcg(7);
        for _ in 0..20_000 {
            let len = (rng.next() % 24) as usize;
            let text: String = (0..len).map(|_| pieces[(rng.next() as usize) % pieces.len()]).collect();
            assert_eq!(classify(&text), classify(&text), "{text:?}");
        }
    }
}
