//! A change of mode as a scenario: where each pass says its mode, and what
//! a user edits between two passes. One model for the properties' laws
//! (`tests/properties/laws.rs`) and the fuzz target `mode_change`, which
//! draw their scenarios each their own way and check them with `laws`.

use crate::names::MODE;
use serde_json::{json, Map, Value};

/// The metadata owner of a CronJob's Jobs, which may say a mode too.
const JOB_TEMPLATE: &str = "/spec/jobTemplate";

/// Where a pass says its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// The cluster's `mode` setting (`disabled`, which no setting can say,
    /// goes through the pod template's annotation).
    Settings,
    /// `istio-job-sidecar/mode` on the pod template.
    TemplateAnnotation,
    /// `istio-job-sidecar/mode` on the Job or CronJob itself (a Pod's own
    /// metadata is its template's); the policy carries it down to the
    /// template as `istio-job-sidecar/owner-mode`.
    ObjectAnnotation,
}

impl Carrier {
    pub const ALL: [Carrier; 3] = [
        Carrier::Settings,
        Carrier::TemplateAnnotation,
        Carrier::ObjectAnnotation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Carrier::Settings => "settings",
            Carrier::TemplateAnnotation => "templateAnnotation",
            Carrier::ObjectAnnotation => "objectAnnotation",
        }
    }

    pub fn parse(text: &str) -> Option<Carrier> {
        Carrier::ALL.into_iter().find(|c| c.as_str() == text)
    }

    /// The object and settings of a pass in `mode` (`None`: disabled) over
    /// `object`, whose pod template is at `template` ("" for a Pod), said
    /// by this carrier. Every mode annotation goes first (the template's,
    /// a CronJob's jobTemplate's, the object's own), and an `annotations`
    /// left empty with it, as kubectl sends it whichever pass took it off;
    /// then the `mode` setting is set, or the annotation with
    /// `workloadOverride: true` (a field the policy never writes). `None`
    /// where the annotation cannot be written: a `metadata` or
    /// `annotations` on the way that is neither a map nor `null`.
    pub fn say(
        self,
        template: &str,
        object: &Value,
        settings: &Map<String, Value>,
        mode: Option<&str>,
    ) -> Option<(Value, Value)> {
        let mut o = object.clone();
        for owner in [template, JOB_TEMPLATE, ""] {
            let Some(Value::Object(meta)) = o.pointer_mut(&format!("{owner}/metadata")) else {
                continue;
            };
            if let Some(Value::Object(a)) = meta.get_mut("annotations") {
                a.remove(MODE);
            }
            if meta
                .get("annotations")
                .is_some_and(|a| a.is_null() || a.as_object().is_some_and(Map::is_empty))
            {
                meta.remove("annotations");
            }
        }
        let mut settings = settings.clone();
        let owner = match (self, mode) {
            (Carrier::Settings, Some(mode)) => {
                settings.insert("mode".into(), mode.into());
                None
            }
            (Carrier::ObjectAnnotation, _) => Some(""),
            _ => Some(template),
        };
        if let Some(owner) = owner {
            settings.insert("workloadOverride".into(), true.into());
            put(
                o.pointer_mut(owner)?,
                "annotations",
                MODE,
                mode.unwrap_or("disabled"),
            )?;
        }
        Some((o, Value::Object(settings)))
    }
}

/// A user's edit, between two passes, of fields the policy never writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserEdit {
    /// `EDITED_BY_USER` added to the env of one container, the n-th by
    /// name (sorted, init containers and the proxy included) of the
    /// workload the scenario started from, or of every container (`None`).
    Env(Option<usize>),
    /// A new image for one container, as for `Env`, or for every one.
    Image(Option<usize>),
    /// `team.example.com/edited: "yes"` among the pod template's labels.
    TemplateLabel,
    /// `team.example.com/owner: batch` among the pod template's
    /// annotations.
    TemplateAnnotation,
    /// `team.example.com/owner: batch` among the object's annotations.
    ObjectAnnotation,
}

impl UserEdit {
    /// As a scenario is stored: `env`, `env:2`, `image`, `templateLabel`...
    pub fn name(self) -> String {
        let indexed = |what: &str, n: Option<usize>| match n {
            Some(n) => format!("{what}:{n}"),
            None => what.to_owned(),
        };
        match self {
            UserEdit::Env(n) => indexed("env", n),
            UserEdit::Image(n) => indexed("image", n),
            UserEdit::TemplateLabel => "templateLabel".into(),
            UserEdit::TemplateAnnotation => "templateAnnotation".into(),
            UserEdit::ObjectAnnotation => "objectAnnotation".into(),
        }
    }

    pub fn parse(text: &str) -> Option<UserEdit> {
        let (what, n) = match text.split_once(':') {
            Some((what, n)) => (what, Some(n.parse().ok()?)),
            None => (text, None),
        };
        Some(match (what, n) {
            ("env", n) => UserEdit::Env(n),
            ("image", n) => UserEdit::Image(n),
            ("templateLabel", None) => UserEdit::TemplateLabel,
            ("templateAnnotation", None) => UserEdit::TemplateAnnotation,
            ("objectAnnotation", None) => UserEdit::ObjectAnnotation,
            _ => return None,
        })
    }

    /// `object` (its pod template at `template`) with the edit made; a
    /// container counted by `Env(Some(n))` or `Image(Some(n))` is named
    /// after `start`'s (the workload before any pass: a pass may move a
    /// container, never rename one), and an edit of a container none of
    /// them is leaves `object` as it is. `None` where the edit cannot be
    /// made: a member of another type on the way.
    pub fn apply(self, template: &str, object: &Value, start: &Value) -> Option<Value> {
        let mut o = object.clone();
        let one = match self {
            UserEdit::TemplateLabel => {
                put(
                    o.pointer_mut(template)?,
                    "labels",
                    "team.example.com/edited",
                    "yes",
                )?;
                return Some(o);
            }
            UserEdit::TemplateAnnotation | UserEdit::ObjectAnnotation => {
                let owner = match self {
                    UserEdit::ObjectAnnotation => "",
                    _ => template,
                };
                put(
                    o.pointer_mut(owner)?,
                    "annotations",
                    "team.example.com/owner",
                    "batch",
                )?;
                return Some(o);
            }
            UserEdit::Env(n) | UserEdit::Image(n) => n,
        };
        let name = match one {
            None => None,
            Some(n) => {
                let mut names: Vec<&str> = LISTS
                    .iter()
                    .filter_map(|list| start.pointer(&format!("{template}/spec/{list}")))
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter_map(|c| c["name"].as_str())
                    .collect();
                names.sort_unstable();
                match names.get(n % names.len().max(1)) {
                    Some(name) => Some(name.to_string()),
                    None => return Some(o),
                }
            }
        };
        for list in LISTS {
            let list = match o.pointer_mut(&format!("{template}/spec/{list}")) {
                None | Some(Value::Null) => continue,
                Some(list) => list.as_array_mut()?,
            };
            for c in list {
                if name.as_ref().is_some_and(|name| c["name"] != json!(name)) {
                    continue;
                }
                let c = c.as_object_mut()?;
                if let UserEdit::Image(_) = self {
                    c.insert("image".into(), "registry.example/edited:2".into());
                    continue;
                }
                let var = json!({"name": "EDITED_BY_USER", "value": "$(POD_NAME) 'x'"});
                match c.entry("env").or_insert(Value::Null) {
                    Value::Array(env) => env.push(var),
                    env @ Value::Null => *env = json!([var]),
                    _ => return None,
                }
            }
        }
        Some(o)
    }
}

/// The container lists of a pod spec.
const LISTS: [&str; 2] = ["containers", "initContainers"];

/// `key: value` in `owner`'s `metadata.<map>`, made where absent or
/// `null`; `None` where a member on the way is of another type.
fn put(owner: &mut Value, map: &str, key: &str, value: &str) -> Option<()> {
    let meta = owner
        .as_object_mut()?
        .entry("metadata")
        .or_insert(Value::Null);
    if meta.is_null() {
        *meta = json!({});
    }
    let map = meta.as_object_mut()?.entry(map).or_insert(Value::Null);
    if map.is_null() {
        *map = json!({});
    }
    map.as_object_mut()?.insert(key.into(), value.into());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "/spec/template";

    #[test]
    fn a_carrier_says_the_mode_where_it_says_it_and_nowhere_else() {
        let job = json!({"metadata": {"annotations": {MODE: "quitEndpoint"}},
            "spec": {"template": {"metadata": {"annotations": {MODE: "x", "a": "b"}}}}});
        let settings = Map::new();
        let (o, s) = Carrier::Settings
            .say(T, &job, &settings, Some("nativeSidecar"))
            .unwrap();
        assert_eq!(
            o,
            json!({"metadata": {}, "spec": {"template": {"metadata": {"annotations": {"a": "b"}}}}})
        );
        assert_eq!(s, json!({"mode": "nativeSidecar"}));
        let (o, s) = Carrier::Settings.say(T, &job, &settings, None).unwrap();
        assert_eq!(
            o["spec"]["template"]["metadata"]["annotations"][MODE],
            "disabled"
        );
        assert_eq!(s, json!({"workloadOverride": true}));
        let (o, _) = Carrier::ObjectAnnotation
            .say(T, &job, &settings, Some("exitOnJobCompletion"))
            .unwrap();
        assert_eq!(
            o["metadata"]["annotations"],
            json!({MODE: "exitOnJobCompletion"})
        );
        assert_eq!(
            o["spec"]["template"]["metadata"]["annotations"],
            json!({"a": "b"})
        );
        let odd = json!({"spec": {"template": {"metadata": "x"}}});
        assert_eq!(
            Carrier::TemplateAnnotation.say(T, &odd, &settings, None),
            None
        );
        for c in Carrier::ALL {
            assert_eq!(Carrier::parse(c.as_str()), Some(c));
        }
    }

    #[test]
    fn an_edit_touches_the_container_it_names_or_every_one() {
        let start = json!({"spec": {"template": {"spec": {
            "initContainers": [{"name": "istio-proxy"}],
            "containers": [{"name": "app", "env": [{"name": "A"}]}]}}}});
        let one = UserEdit::Env(Some(0)).apply(T, &start, &start).unwrap();
        assert_eq!(
            one["spec"]["template"]["spec"]["containers"][0]["env"][1]["name"],
            "EDITED_BY_USER"
        );
        assert!(one["spec"]["template"]["spec"]["initContainers"][0]
            .get("env")
            .is_none());
        let every = UserEdit::Image(None).apply(T, &start, &start).unwrap();
        for list in LISTS {
            assert_eq!(
                every["spec"]["template"]["spec"][list][0]["image"],
                "registry.example/edited:2"
            );
        }
        let bad =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": "x"}]}}}});
        assert_eq!(UserEdit::Env(None).apply(T, &bad, &bad), None);
        for e in [
            UserEdit::Env(Some(3)),
            UserEdit::Image(None),
            UserEdit::TemplateLabel,
            UserEdit::TemplateAnnotation,
            UserEdit::ObjectAnnotation,
        ] {
            assert_eq!(UserEdit::parse(&e.name()), Some(e));
        }
    }
}
