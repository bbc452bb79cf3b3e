//! The settings users write into a ClusterAdmissionPolicy, and their validation.
//!
//! Read member by member with a serde `Visitor` (each known key's value as
//! a `serde_json::Value`, checked by hand), not by the usual
//! `#[derive(Deserialize)] #[serde(deny_unknown_fields)]` struct with the
//! SDK's `Validatable`, because the derive's messages are worse where the
//! user needs them most, in `kubectl describe` of a policy that will not
//! load. Measured with serde 1 / serde_json 1 on the same four fields:
//!
//! | settings | derive says | we say |
//! |---|---|---|
//! | `{"workloadOverride": "true"}` | `invalid type: string "true", expected a boolean at line 1 column 27` | `workloadOverride: expected a boolean, got a string` |
//! | `{"quitUrl": 15020}` | `invalid type: integer 15020, expected a string at line 1 column 17` | `quitUrl: expected a string, got a number` |
//! | `{"mode": 1}` | `expected value at line 1 column 10` | `mode: expected a string, got a number` |
//! | `["mode"]` | `unknown variant mode, expected one of ...` (a list is read as the struct's fields in order) | `settings must be an object, got an array` |
//! | `{"sidecarContainerName": null}` | accepted (`Option` reads null as absent) | `sidecarContainerName: expected a string, got null` |
//!
//! Type errors do not name the key, positions point into JSON the user never
//! wrote (the controller serializes their YAML), and the derive cannot say
//! which setting a value was meant for. The messages for unknown keys and
//! modes are as good either way; this parser keeps them as well.
//!
//! The first error in document order is the one reported, and reading stops
//! there: an unknown key costs nothing of the members after it. (Settings
//! used to be parsed whole into a map and checked in alphabetical order.)

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

pub const DEFAULT_SIDECAR_CONTAINER_NAME: &str = "istio-proxy";
pub const DEFAULT_QUIT_URL: &str = "http://127.0.0.1:15020/quitquitquit";

/// Every key `validate_settings` accepts, in the order the docs list them.
pub const KEYS: [&str; 6] = [
    "mode",
    "sidecarContainerName",
    "workloadOverride",
    "quitUrl",
    "fallbackMode",
    "nodeVersionCheck",
];

/// How the sidecar is made to stop when the work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    NativeSidecar,
    ExitOnJobCompletion,
    QuitEndpoint,
}

impl Mode {
    pub const ALL: [Mode; 3] = [
        Mode::NativeSidecar,
        Mode::ExitOnJobCompletion,
        Mode::QuitEndpoint,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::NativeSidecar => "nativeSidecar",
            Mode::ExitOnJobCompletion => "exitOnJobCompletion",
            Mode::QuitEndpoint => "quitEndpoint",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// "nativeSidecar, exitOnJobCompletion, quitEndpoint", for messages.
    pub fn valid_values() -> String {
        Mode::ALL.map(Mode::as_str).join(", ")
    }
}

/// The modes `fallbackMode` may name: those that work without native
/// sidecars.
pub const FALLBACKS: [Mode; 2] = [Mode::QuitEndpoint, Mode::ExitOnJobCompletion];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub sidecar_container_name: String,
    pub workload_override: bool,
    pub quit_url: String,
    /// The mode applied where nativeSidecar is asked for but the Pod could
    /// not run it (custom injection templates; with `node_version_check`,
    /// a kubelet without native sidecars); `None`: nothing is applied there.
    pub fallback_mode: Option<Mode>,
    /// Read the cluster's Nodes (a context-aware policy) and keep nativeSidecar
    /// to where every kubelet that can run the Pod supports it.
    pub node_version_check: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::NativeSidecar,
            sidecar_container_name: DEFAULT_SIDECAR_CONTAINER_NAME.to_owned(),
            workload_override: true,
            quit_url: DEFAULT_QUIT_URL.to_owned(),
            fallback_mode: None,
            node_version_check: false,
        }
    }
}

impl Settings {
    /// Settings from the raw JSON `validate_settings` receives.
    pub fn from_json(bytes: &[u8]) -> Result<Settings, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("settings are not valid JSON: not UTF-8: {e}"))?;
        Settings::from_json_str(text)
    }

    /// Settings from JSON text (parsed from `str`, as every JSON in the
    /// module is, so the module carries one copy of the parser).
    ///
    /// Read member by member, stopping at the first error: an unknown or
    /// repeated key is refused as soon as it is read, before the rest of the
    /// document is parsed, so hostile settings of many members cost little.
    /// Where several errors exist, the first in document order is reported
    /// (a syntax error after a refused member is not reached). Repeated keys
    /// are refused (`duplicate setting "X"`): the controller never writes
    /// them, and a user who does cannot know which one would win.
    /// Characters after the settings are refused, as `serde_json::from_str`
    /// does.
    pub fn from_json_str(text: &str) -> Result<Settings, String> {
        // Our own messages travel beside serde's error: serde_json would
        // append a position to them.
        let mut ours = None;
        let mut de = serde_json::Deserializer::from_str(text);
        let read = SettingsSeed { error: &mut ours }
            .deserialize(&mut de)
            .and_then(|settings| de.end().map(|()| settings));
        read.map_err(|e| ours.unwrap_or_else(|| format!("settings are not valid JSON: {e}")))
    }
}

impl Settings {
    /// Settings from a parsed JSON value (the CLI's and the manifest tests'
    /// way in); `null` means all defaults. Written back to text and read by
    /// `from_json_str`, so every rule has one piece of code.
    pub fn from_value(value: &Value) -> Result<Settings, String> {
        Settings::from_json_str(&value.to_string())
    }
}

/// Reads the settings object; on a refusal it stores the message in `error`
/// and returns a bare serde error to stop the parse.
struct SettingsSeed<'e> {
    error: &'e mut Option<String>,
}

impl SettingsSeed<'_> {
    fn refuse<E: de::Error>(self, message: String) -> E {
        *self.error = Some(message);
        E::custom("refused")
    }

    fn not_object<E: de::Error>(self, got: &str) -> Result<Settings, E> {
        Err(self.refuse(format!("settings must be an object, got {got}")))
    }
}

impl<'de> DeserializeSeed<'de> for SettingsSeed<'_> {
    type Value = Settings;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Settings, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SettingsSeed<'_> {
    type Value = Settings;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the settings object")
    }

    /// `null` settings are the defaults.
    fn visit_unit<E: de::Error>(self) -> Result<Settings, E> {
        Ok(Settings::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Settings, E> {
        self.not_object("a boolean")
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Settings, E> {
        self.not_object("a number")
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Settings, E> {
        self.not_object("a number")
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Settings, E> {
        self.not_object("a number")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Settings, E> {
        self.not_object("a string")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Settings, A::Error> {
        self.not_object("an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Settings, A::Error> {
        let mut settings = Settings::default();
        let mut seen = [false; KEYS.len()];
        loop {
            let key = match map.next_key_seed(KeySeed)? {
                None => return Ok(settings),
                Some(Ok(index)) => index,
                Some(Err(message)) => return Err(self.refuse(message)),
            };
            if std::mem::replace(&mut seen[key], true) {
                return Err(self.refuse(format!("duplicate setting {:?}", KEYS[key])));
            }
            let value: Value = map.next_value()?;
            if let Err(message) = settings.apply(KEYS[key], &value) {
                return Err(self.refuse(message));
            }
        }
    }
}

/// A settings key: its index in `KEYS`, or the message refusing it. Read
/// from the borrowed text where it holds no escapes, so no key is copied.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Result<usize, String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Result<usize, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a setting name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(KEYS
            .iter()
            .position(|k| *k == key)
            .ok_or_else(|| unknown_setting(key)))
    }
}

fn unknown_setting(key: &str) -> String {
    format!(
        "unknown setting {key:?}; valid settings are {}",
        KEYS.join(", ")
    )
}

impl Settings {
    /// Checks one setting's value and stores it.
    fn apply(&mut self, key: &str, v: &Value) -> Result<(), String> {
        let settings = self;
        match key {
            "mode" => {
                let s = expect_str(key, v)?;
                settings.mode = Mode::parse(s).ok_or_else(|| {
                    format!(
                        "mode: unknown value {s:?}; valid values are {}",
                        Mode::valid_values()
                    )
                })?;
            }
            "sidecarContainerName" => {
                let s = expect_str(key, v)?;
                validate_container_name(s).map_err(|why| format!("sidecarContainerName: {why}"))?;
                settings.sidecar_container_name = s.to_owned();
            }
            "workloadOverride" => {
                settings.workload_override = v.as_bool().ok_or_else(|| {
                    format!("workloadOverride: expected a boolean, got {}", type_name(v))
                })?;
            }
            "quitUrl" => {
                let s = expect_str(key, v)?;
                settings.quit_url =
                    validate_quit_url(s).map_err(|why| format!("quitUrl: {why}"))?;
            }
            "fallbackMode" => {
                let s = expect_str(key, v)?;
                // "": none (what Rancher's form submits when left empty).
                settings.fallback_mode = match Mode::parse(s) {
                    None if s.is_empty() => None,
                    Some(Mode::NativeSidecar) => {
                        return Err(format!(
                            "fallbackMode: {s:?} is the mode it stands in for; valid values are {}",
                            FALLBACKS.map(Mode::as_str).join(", ")
                        ))
                    }
                    Some(mode) => Some(mode),
                    None => {
                        return Err(format!(
                            "fallbackMode: unknown value {s:?}; valid values are {}",
                            FALLBACKS.map(Mode::as_str).join(", ")
                        ))
                    }
                };
            }
            "nodeVersionCheck" => {
                settings.node_version_check = v.as_bool().ok_or_else(|| {
                    format!("nodeVersionCheck: expected a boolean, got {}", type_name(v))
                })?;
            }
            unknown => return Err(unknown_setting(unknown)),
        }
        Ok(())
    }
}

fn expect_str<'v>(key: &str, v: &'v Value) -> Result<&'v str, String> {
    v.as_str()
        .ok_or_else(|| format!("{key}: expected a string, got {}", type_name(v)))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Kubernetes container names are DNS-1123 labels.
fn validate_container_name(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    let label_ok = s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if label_ok {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a valid container name (a DNS-1123 label: at most 63 \
             lowercase letters, digits and '-', starting and ending with a letter or digit)"
        ))
    }
}

/// An http URL on a loopback host: the quit request must reach the pod's own
/// pilot-agent, never leave the pod. Returns the URL as it will be called.
///
/// Checked by hand rather than with the `url` crate: its IDNA tables would
/// weigh more than the rest of the module's settings code many times over
/// (its size budget: the Makefile's `size-check`), for URLs that may only
/// name 127.0.0.0/8, localhost or [::1].
fn validate_quit_url(s: &str) -> Result<String, String> {
    let rest = s
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &s[7..])
        .ok_or_else(|| {
            format!("{s:?} must be an http:// URL (pilot-agent's status port speaks plain http)")
        })?;
    if let Some(bad) = rest.chars().find(|c| !url_char(*c)) {
        return Err(format!("{s:?} has a character a URL cannot carry: {bad:?}"));
    }
    if authority(rest).contains('@') {
        return Err(format!("{s:?} must not carry credentials"));
    }
    let (host, port, _) =
        quit_url_parts(s).ok_or_else(|| format!("{s:?} has no valid host and port"))?;
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
            .is_some_and(|ip| ip.is_loopback());
    if !loopback {
        return Err(format!(
            "{s:?} must name a loopback host (127.0.0.1, localhost or [::1]): \
             the pod's own pilot-agent"
        ));
    }
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return Err(format!("{s:?} has an invalid port"));
    }
    Ok(s.to_owned())
}

/// Characters allowed in a quit URL: RFC 3986 unreserved and the few
/// delimiters a path and query need (no fragment, quotes or spaces).
fn url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?&=%+,;[]@".contains(c)
}

/// A quit URL's host (an IPv6 address in its brackets), its port when it
/// names one, and the rest (path and query, as written).
pub fn quit_url_parts(url: &str) -> Option<(&str, Option<&str>, &str)> {
    let rest = url.get(7..)?;
    let authority = authority(rest);
    let (host, port) = split_host_port(authority)?;
    Some((host, port, &rest[authority.len()..]))
}

/// What follows `http://` up to the path or the query.
fn authority(rest: &str) -> &str {
    &rest[..rest.find(['/', '?']).unwrap_or(rest.len())]
}

/// `host` and optional `port` of an authority; `[v6]:port` aware.
fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, rest) = authority.split_at(close + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    (!host.is_empty()).then_some((host, port))
}

impl Settings {
    /// The settings a `validate` payload carries: absent, `null` or `{}`
    /// mean the defaults. policy-server sends the same settings with every
    /// request to the same instance: they are parsed once, then recognised
    /// by their text.
    pub fn from_payload(raw: Option<&serde_json::value::RawValue>) -> Result<Settings, String> {
        let text = match raw.map(|r| r.get()) {
            None | Some("null") | Some("{}") => return Ok(Settings::default()),
            Some(text) => text,
        };
        LAST_SETTINGS.with(|last| {
            let mut last = last.borrow_mut();
            if let Some((seen, settings)) = last.as_ref() {
                if seen == text {
                    return Ok(settings.clone());
                }
            }
            let settings = Settings::from_json_str(text)?;
            *last = Some((text.to_owned(), settings.clone()));
            Ok(settings)
        })
    }
}

thread_local! {
    static LAST_SETTINGS: std::cell::RefCell<Option<(String, Settings)>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::empty(json!({}), Settings::default())]
    #[case::null(json!(null), Settings::default())]
    #[case::exit_mode(json!({"mode": "exitOnJobCompletion"}), Settings { mode: Mode::ExitOnJobCompletion, ..Settings::default() })]
    #[case::quit_mode(json!({"mode": "quitEndpoint"}), Settings { mode: Mode::QuitEndpoint, ..Settings::default() })]
    #[case::all_keys(
        json!({"mode": "nativeSidecar", "sidecarContainerName": "envoy", "workloadOverride": false, "quitUrl": "http://localhost:15020/quitquitquit"}),
        Settings { mode: Mode::NativeSidecar, sidecar_container_name: "envoy".into(), workload_override: false, quit_url: "http://localhost:15020/quitquitquit".into(), ..Settings::default() }
    )]
    #[case::fallback(
        json!({"fallbackMode": "quitEndpoint", "nodeVersionCheck": true}),
        Settings { fallback_mode: Some(Mode::QuitEndpoint), node_version_check: true, ..Settings::default() }
    )]
    #[case::fallback_exit(json!({"fallbackMode": "exitOnJobCompletion"}), Settings { fallback_mode: Some(Mode::ExitOnJobCompletion), ..Settings::default() })]
    #[case::fallback_none(json!({"fallbackMode": ""}), Settings::default())]
    #[case::ipv6_loopback(json!({"quitUrl": "http://[::1]:15020/quitquitquit"}), Settings { quit_url: "http://[::1]:15020/quitquitquit".into(), ..Settings::default() })]
    #[case::loopback_range(json!({"quitUrl": "http://127.0.0.6:15020/quitquitquit?x=1"}), Settings { quit_url: "http://127.0.0.6:15020/quitquitquit?x=1".into(), ..Settings::default() })]
    #[case::no_port(json!({"quitUrl": "http://localhost/quitquitquit"}), Settings { quit_url: "http://localhost/quitquitquit".into(), ..Settings::default() })]
    fn valid_settings(#[case] input: Value, #[case] expected: Settings) {
        assert_eq!(Settings::from_json_str(&input.to_string()), Ok(expected));
    }

    #[rstest]
    #[case::unknown_key(json!({"modes": "nativeSidecar"}), "unknown setting \"modes\"; valid settings are mode, sidecarContainerName, workloadOverride, quitUrl, fallbackMode, nodeVersionCheck")]
    #[case::fallback_native(json!({"fallbackMode": "nativeSidecar"}), "fallbackMode: \"nativeSidecar\" is the mode it stands in for; valid values are quitEndpoint, exitOnJobCompletion")]
    #[case::fallback_unknown(json!({"fallbackMode": "none"}), "fallbackMode: unknown value \"none\"")]
    #[case::fallback_type(json!({"fallbackMode": null}), "fallbackMode: expected a string, got null")]
    #[case::node_check_type(json!({"nodeVersionCheck": "yes"}), "nodeVersionCheck: expected a boolean, got a string")]
    #[case::unknown_mode(json!({"mode": "native"}), "mode: unknown value \"native\"; valid values are nativeSidecar, exitOnJobCompletion, quitEndpoint")]
    #[case::mode_case(json!({"mode": "NativeSidecar"}), "mode: unknown value \"NativeSidecar\"")]
    #[case::mode_type(json!({"mode": 1}), "mode: expected a string, got a number")]
    #[case::name_empty(json!({"sidecarContainerName": ""}), "sidecarContainerName: must not be empty")]
    #[case::name_type(json!({"sidecarContainerName": null}), "sidecarContainerName: expected a string, got null")]
    #[case::name_invalid(json!({"sidecarContainerName": "Istio_Proxy"}), "sidecarContainerName: \"Istio_Proxy\" is not a valid container name")]
    #[case::name_too_long(json!({"sidecarContainerName": "a".repeat(64)}), "is not a valid container name")]
    #[case::override_type(json!({"workloadOverride": "true"}), "workloadOverride: expected a boolean, got a string")]
    #[case::url_type(json!({"quitUrl": 15020}), "quitUrl: expected a string, got a number")]
    #[case::url_not_url(json!({"quitUrl": "quitquitquit"}), "quitUrl: \"quitquitquit\" must be an http:// URL")]
    #[case::url_https(json!({"quitUrl": "https://127.0.0.1:15020/quitquitquit"}), "must be an http:// URL")]
    #[case::url_space(json!({"quitUrl": "http://127.0.0.1:15020/quit quit"}), "has a character a URL cannot carry: ' '")]
    #[case::url_quote(json!({"quitUrl": "http://127.0.0.1:15020/'$(reboot)'"}), "has a character a URL cannot carry")]
    #[case::url_fragment(json!({"quitUrl": "http://127.0.0.1:15020/quit#x"}), "has a character a URL cannot carry: '#'")]
    #[case::url_port(json!({"quitUrl": "http://127.0.0.1:99999/quitquitquit"}), "has an invalid port")]
    #[case::url_port_text(json!({"quitUrl": "http://127.0.0.1:x/quitquitquit"}), "has an invalid port")]
    #[case::url_no_host(json!({"quitUrl": "http:///quitquitquit"}), "has no valid host and port")]
    #[case::url_v6_remote(json!({"quitUrl": "http://[2001:db8::1]:15020/quitquitquit"}), "must name a loopback host")]
    #[case::url_lookalike(json!({"quitUrl": "http://127.0.0.1.evil.example/quitquitquit"}), "must name a loopback host")]
    #[case::url_remote(json!({"quitUrl": "http://10.0.0.1:15020/quitquitquit"}), "must name a loopback host")]
    #[case::url_remote_name(json!({"quitUrl": "http://istiod:15020/quitquitquit"}), "must name a loopback host")]
    #[case::url_credentials(json!({"quitUrl": "http://a:b@127.0.0.1:15020/quitquitquit"}), "must not carry credentials")]
    #[case::not_object(json!(["mode"]), "settings must be an object, got an array")]
    #[case::string(json!("nativeSidecar"), "settings must be an object, got a string")]
    fn invalid_settings(#[case] input: Value, #[case] message_starts: &str) {
        let err = Settings::from_json_str(&input.to_string()).unwrap_err();
        assert!(
            err.starts_with(message_starts) || err.contains(message_starts),
            "{err:?} does not say {message_starts:?}"
        );
    }

    /// Cases JSON values cannot write: the text as it arrives.
    #[rstest]
    #[case::duplicate(
        r#"{"mode": "quitEndpoint", "mode": "nativeSidecar"}"#,
        "duplicate setting \"mode\""
    )]
    #[case::document_order(r#"{"zz": 1, "mode": 1}"#, "unknown setting \"zz\"")]
    #[case::unknown_before_bad_json(r#"{"modes": 1, }"#, "unknown setting \"modes\"; valid")]
    #[case::escaped_key(r#"{"mo\u0064e": 1}"#, "mode: expected a string, got a number")]
    #[case::trailing(
        r#"{} x"#,
        "settings are not valid JSON: trailing characters at line 1 column 4"
    )]
    #[case::unclosed(
        r#"{"mode": "quitEndpoint""#,
        "settings are not valid JSON: EOF while parsing an object"
    )]
    fn invalid_settings_text(#[case] text: &str, #[case] message_starts: &str) {
        let err = Settings::from_json_str(text).unwrap_err();
        assert!(
            err.starts_with(message_starts),
            "{err:?} does not say {message_starts:?}"
        );
    }

    #[test]
    fn messages_carry_no_position() {
        let err = Settings::from_json_str(r#"{"mode": 1}"#).unwrap_err();
        assert_eq!(err, "mode: expected a string, got a number");
    }

    #[test]
    fn not_json() {
        let err = Settings::from_json(b"{mode: x").unwrap_err();
        assert!(err.starts_with("settings are not valid JSON"), "{err}");
    }
}
