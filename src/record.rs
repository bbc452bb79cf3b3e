//! The record of what the policy applied to a pod template: one
//! annotation, `istio-job-sidecar/applied`, whose value is a compact JSON
//! object naming the mode and what is needed to take its edit back exactly.
//! A CronJob outlives the mode it was first admitted under; with the record,
//! a later pass under another mode undoes the earlier edit before applying
//! its own, and only ever removes what the policy itself added.
//!
//! The four forms (docs/changing-modes.md, "The record"):
//!
//! ```text
//! {"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}
//! {"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","moved":"istio-proxy","from":1,"added":["restartPolicy","lifecycle"],"status":"<sidecar.istio.io/status before>"}
//! {"mode":"exitOnJobCompletion","inserted":"\nexitOnJobCompletion: true"}
//! {"mode":"quitEndpoint","container":"pi"}
//! ```
//!
//! `"annotation"` says that the policy made `sidecar.istio.io/nativeSidecar`
//! the exact `"true"`: nativeSidecar always asks Istio for it, and the
//! other modes beside a proxy Istio injected natively, whose re-injection
//! would otherwise render a second, classic proxy. It is recorded only
//! when the policy wrote it (a user's own value is theirs), with `"was"`,
//! the user's value it replaced, when it made a value that Istio 1.24-1.26
//! would not read as native (`"True"`, `"yes"`) exact; a move recorded by
//! an earlier version has none. A move that replaced a `restartPolicy` the
//! proxy already had records it as `"restartPolicy"`; a move that did not
//! rewrite the status has no `"status"`; a move that put Istio's own init
//! containers first records where they were as `"initFrom"`
//! (`{"istio-init":1}`); an exitOnJobCompletion that created the whole
//! annotation adds `"created":true`. The quitEndpoint record needs no copy
//! of the command: the wrapper carries the original argv after its fixed
//! prefix.
//!
//! The annotation `istio-job-sidecar/quit-wrapped: <container>` of earlier
//! versions is read as a quitEndpoint record and replaced on the next pass.

use crate::json::Node;
use crate::names::{ANNOTATION_NATIVE_SIDECAR, EXIT_ON_JOB_COMPLETION as KEY};
use crate::settings::Mode;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// What one mode changed, and what undoing it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// nativeSidecar made `sidecar.istio.io/nativeSidecar` `"true"`.
    NativeAnnotation(Annotated),
    /// nativeSidecar moved an injected proxy into `initContainers`.
    NativeMove(Move),
    /// exitOnJobCompletion inserted `inserted` into `proxy.istio.io/config`
    /// (and created the annotation when `created`).
    ExitOnJobCompletion {
        inserted: String,
        created: bool,
        annotation: Option<Annotated>,
    },
    /// quitEndpoint wrapped the command of `container`.
    QuitEndpoint {
        container: String,
        annotation: Option<Annotated>,
    },
}

/// The policy made `sidecar.istio.io/nativeSidecar` the exact `"true"`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Annotated {
    /// The user's value it replaced; `None`: the annotation was absent.
    pub was: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The proxy's name.
    pub container: String,
    /// Its index in `containers` before the move.
    pub from: usize,
    /// Its members the move created.
    pub added: Vec<String>,
    /// Its own `restartPolicy` before the move, when it had one.
    pub restart_policy: Option<String>,
    /// `sidecar.istio.io/status` before the move, when the move rewrote it.
    pub status: Option<String>,
    /// Where Istio's own init containers were in `initContainers` before
    /// the move put them first, by name; empty when it did not move them.
    pub init_from: Vec<(String, usize)>,
    /// The move made `sidecar.istio.io/nativeSidecar` `"true"`.
    pub annotation: Option<Annotated>,
}

/// The record as found on a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Absent,
    /// A record this policy wrote; `legacy` when it is the
    /// `istio-job-sidecar/quit-wrapped` annotation of earlier versions.
    Read {
        applied: Applied,
        legacy: bool,
    },
    /// Not a record this policy writes (edited by hand, or written by a
    /// newer version): nothing is undone by it, and it is left as it is.
    Unreadable(String),
}

impl Applied {
    pub fn mode(&self) -> Mode {
        match self {
            Applied::NativeAnnotation(_) | Applied::NativeMove(_) => Mode::NativeSidecar,
            Applied::ExitOnJobCompletion { .. } => Mode::ExitOnJobCompletion,
            Applied::QuitEndpoint { .. } => Mode::QuitEndpoint,
        }
    }

    /// What the record says the policy did to `sidecar.istio.io/nativeSidecar`.
    pub fn annotation(&self) -> Option<&Annotated> {
        match self {
            Applied::NativeAnnotation(a) => Some(a),
            Applied::NativeMove(m) => m.annotation.as_ref(),
            Applied::ExitOnJobCompletion { annotation, .. }
            | Applied::QuitEndpoint { annotation, .. } => annotation.as_ref(),
        }
    }

    /// The same record, saying `annotation` of `sidecar.istio.io/nativeSidecar`.
    pub fn with_annotation(mut self, edit: Option<Annotated>) -> Applied {
        match &mut self {
            Applied::NativeAnnotation(a) => *a = edit.unwrap_or_default(),
            Applied::NativeMove(m) => m.annotation = edit,
            Applied::ExitOnJobCompletion { annotation, .. }
            | Applied::QuitEndpoint { annotation, .. } => *annotation = edit,
        }
        self
    }

    /// The annotation value.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read an annotation value; the error says what is wrong with it.
    /// Read through the policy's own JSON tree (not `serde_json::Value`),
    /// which the module already carries: a map type's code would cost
    /// kilobytes of the module for a few members.
    pub fn parse(text: &str) -> Result<Applied, String> {
        let raw: &RawValue = serde_json::from_str(text).map_err(|_| "it is not JSON")?;
        let mut node = Node::raw(raw);
        let mut fields = Fields(node.members_mut().map_err(|_| "it is not a JSON object")?);
        let mode = fields.string("mode")?.ok_or("it names no mode")?;
        let annotation = match fields.string("annotation")? {
            Some(name) if name == ANNOTATION_NATIVE_SIDECAR => Some(Annotated {
                was: fields.string("was")?,
            }),
            Some(_) => return Err("it names another annotation".into()),
            None => None,
        };
        let (applied, members): (Applied, &[&str]) = match Mode::parse(&mode) {
            Some(Mode::NativeSidecar) => match fields.string("moved")? {
                None => match annotation {
                    Some(a) => (Applied::NativeAnnotation(a), &[]),
                    None => return Err("it names no proxy".into()),
                },
                Some(container) => (
                    Applied::NativeMove(Move {
                        container,
                        from: fields.index("from")?,
                        added: fields.added()?,
                        restart_policy: fields.string("restartPolicy")?,
                        status: fields.string("status")?,
                        init_from: fields.init_from()?,
                        annotation,
                    }),
                    &[
                        "moved",
                        "from",
                        "added",
                        "restartPolicy",
                        "status",
                        "initFrom",
                    ],
                ),
            },
            Some(Mode::ExitOnJobCompletion) => (
                Applied::ExitOnJobCompletion {
                    // Every merge inserts the key: any other text is not one.
                    inserted: fields
                        .string("inserted")?
                        .filter(|text| text.contains(KEY))
                        .ok_or("it has no inserted key")?,
                    created: fields.flag("created")?,
                    annotation,
                },
                &["inserted", "created"],
            ),
            Some(Mode::QuitEndpoint) => (
                Applied::QuitEndpoint {
                    container: fields.string("container")?.ok_or("it names no container")?,
                    annotation,
                },
                &["container"],
            ),
            None => return Err("it names an unknown mode".into()),
        };
        let annotated: &[&str] = match applied.annotation() {
            Some(Annotated { was: Some(_) }) => &["annotation", "was"],
            Some(_) => &["annotation"],
            None => &[],
        };
        fields.only(members, annotated)?;
        Ok(applied)
    }
}

/// The members of a record.
struct Fields<'m, 'a>(&'m mut Vec<(Cow<'a, str>, Node<'a>)>);

impl<'a> Fields<'_, 'a> {
    /// Member `key`; a key given twice is refused, as no writer of the
    /// record repeats one.
    fn get(&mut self, key: &str) -> Result<Option<&mut Node<'a>>, String> {
        let mut found = self.0.iter_mut().filter(|(k, _)| k == key);
        let first = found.next().map(|(_, v)| v);
        match found.next() {
            None => Ok(first.filter(|v| !v.is_null())),
            Some(_) => Err(format!("it repeats {key}")),
        }
    }

    fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) => match v.read_string() {
                Ok(s) => Ok(s.map(Cow::into_owned)),
                Err(_) => Err(format!("{key} is not a string")),
            },
        }
    }

    /// An index of at most 32 bits, read alike in the module and natively.
    fn index(&mut self, key: &str) -> Result<usize, String> {
        match self.get(key)? {
            Some(Node::Raw(raw)) => raw.get().parse::<u32>().ok(),
            _ => None,
        }
        .map(|i| i as usize)
        .ok_or_else(|| format!("{key} is not an index"))
    }

    fn flag(&mut self, key: &str) -> Result<bool, String> {
        match self.get(key)? {
            None => Ok(false),
            Some(Node::Raw(raw)) if raw.get() == "true" => Ok(true),
            Some(Node::Raw(raw)) if raw.get() == "false" => Ok(false),
            Some(_) => Err(format!("{key} is not a boolean")),
        }
    }

    /// `added`: only members a move adds.
    fn added(&mut self) -> Result<Vec<String>, String> {
        let not_ours = || "added names a member the move never adds".to_owned();
        let Some(list) = self.get("added")? else {
            return Ok(Vec::new());
        };
        let items = list.items_mut().map_err(|_| not_ours())?;
        items
            .iter()
            .map(|item| match item.read_string() {
                Ok(Some(s)) if MOVE_ADDS.contains(&s.as_ref()) => Ok(s.into_owned()),
                _ => Err(not_ours()),
            })
            .collect()
    }

    /// `initFrom`: Istio's init containers by name, each with its index.
    fn init_from(&mut self) -> Result<Vec<(String, usize)>, String> {
        let not_ours = || "initFrom names a container the move never puts first".to_owned();
        let Some(map) = self.get("initFrom")? else {
            return Ok(Vec::new());
        };
        let members = map.members_mut().map_err(|_| not_ours())?;
        let mut init_from = Vec::with_capacity(members.len());
        for (name, index) in members.iter_mut() {
            if !ISTIO_INIT_CONTAINERS.contains(&name.as_ref())
                || init_from.iter().any(|(n, _)| n == name)
            {
                return Err(not_ours());
            }
            let index = match index {
                Node::Raw(raw) => raw.get().parse::<u32>().ok(),
                _ => None,
            }
            .ok_or("initFrom is not a map of indexes")?;
            init_from.push((name.clone().into_owned(), index as usize));
        }
        Ok(init_from)
    }

    /// No member but `mode` and those of `allowed` and `annotated`.
    fn only(&self, allowed: &[&str], annotated: &[&str]) -> Result<(), String> {
        match self.0.iter().find(|(k, _)| {
            k != "mode" && !allowed.contains(&k.as_ref()) && !annotated.contains(&k.as_ref())
        }) {
            None => Ok(()),
            Some((key, _)) => Err(format!("it has an unknown member {key:?}")),
        }
    }
}

/// The members a move may add (`startupProbe` by earlier versions); any
/// other name is not the policy's.
const MOVE_ADDS: [&str; 3] = ["restartPolicy", "startupProbe", "lifecycle"];

/// Istio's init containers, which a move puts first
/// (`native_sidecar::ISTIO_FIRST`).
const ISTIO_INIT_CONTAINERS: [&str; 3] = ["istio-init", "istio-validation", "enable-core-dump"];

/// Written by hand so that `mode` comes first, as a reader expects.
impl Serialize for Applied {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("mode", self.mode().as_str())?;
        if let Some(annotation) = self.annotation() {
            map.serialize_entry("annotation", ANNOTATION_NATIVE_SIDECAR)?;
            if let Some(was) = &annotation.was {
                map.serialize_entry("was", was)?;
            }
        }
        match self {
            Applied::NativeAnnotation(_) => {}
            Applied::NativeMove(m) => {
                map.serialize_entry("moved", &m.container)?;
                map.serialize_entry("from", &m.from)?;
                map.serialize_entry("added", &m.added)?;
                if let Some(policy) = &m.restart_policy {
                    map.serialize_entry("restartPolicy", policy)?;
                }
                if let Some(status) = &m.status {
                    map.serialize_entry("status", status)?;
                }
                if !m.init_from.is_empty() {
                    map.serialize_entry("initFrom", &InitFrom(&m.init_from))?;
                }
            }
            Applied::ExitOnJobCompletion {
                inserted, created, ..
            } => {
                map.serialize_entry("inserted", inserted)?;
                if *created {
                    map.serialize_entry("created", &true)?;
                }
            }
            Applied::QuitEndpoint { container, .. } => {
                map.serialize_entry("container", container)?;
            }
        }
        map.end()
    }
}

/// `initFrom` as a JSON object, in the order it was recorded.
struct InitFrom<'m>(&'m [(String, usize)]);

impl Serialize for InitFrom<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, index) in self.0 {
            map.serialize_entry(name, index)?;
        }
        map.end()
    }
}

impl Record {
    /// The record of a template, from its `istio-job-sidecar/applied` and
    /// legacy `istio-job-sidecar/quit-wrapped` annotations.
    pub fn read(applied: Option<&str>, quit_wrapped: Option<&str>) -> Record {
        match (applied, quit_wrapped) {
            (Some(text), _) => match Applied::parse(text) {
                Ok(applied) => Record::Read {
                    applied,
                    legacy: false,
                },
                Err(why) => Record::Unreadable(why),
            },
            (None, Some(container)) => Record::Read {
                applied: Applied::QuitEndpoint {
                    container: container.to_owned(),
                    annotation: None,
                },
                legacy: true,
            },
            (None, None) => Record::Absent,
        }
    }

    /// What was applied, when the record can be trusted.
    pub fn applied(&self) -> Option<&Applied> {
        match self {
            Record::Read { applied, .. } => Some(applied),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn moved(restart_policy: Option<&str>, status: Option<&str>) -> Applied {
        Applied::NativeMove(Move {
            container: "istio-proxy".into(),
            from: 1,
            added: vec!["restartPolicy".into(), "startupProbe".into()],
            restart_policy: restart_policy.map(str::to_owned),
            status: status.map(str::to_owned),
            init_from: Vec::new(),
            annotation: None,
        })
    }

    fn ours() -> Option<Annotated> {
        Some(Annotated::default())
    }

    #[rstest]
    #[case::annotation(
        Applied::NativeAnnotation(Annotated::default()),
        r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#
    )]
    #[case::annotation_made_exact(
        Applied::NativeAnnotation(Annotated { was: Some("True".into()) }),
        r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","was":"True"}"#
    )]
    #[case::moved(
        moved(None, Some(r#"{"containers":["istio-proxy"]}"#)),
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":["restartPolicy","startupProbe"],"status":"{\"containers\":[\"istio-proxy\"]}"}"#
    )]
    #[case::moved_with_annotation(
        moved(None, None).with_annotation(ours()),
        r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar","moved":"istio-proxy","from":1,"added":["restartPolicy","startupProbe"]}"#
    )]
    #[case::moved_replacing(
        moved(Some("Never"), None),
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":["restartPolicy","startupProbe"],"restartPolicy":"Never"}"#
    )]
    #[case::moved_istio_init_first(
        Applied::NativeMove(Move {
            init_from: vec![("istio-init".into(), 1)],
            added: vec!["restartPolicy".into(), "lifecycle".into()],
            ..match moved(None, None) { Applied::NativeMove(m) => m, _ => unreachable!() }
        }),
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":["restartPolicy","lifecycle"],"initFrom":{"istio-init":1}}"#
    )]
    #[case::exit(
        Applied::ExitOnJobCompletion { inserted: "\nexitOnJobCompletion: true".into(), created: false, annotation: None },
        r#"{"mode":"exitOnJobCompletion","inserted":"\nexitOnJobCompletion: true"}"#
    )]
    #[case::exit_created(
        Applied::ExitOnJobCompletion { inserted: "exitOnJobCompletion: true".into(), created: true, annotation: None },
        r#"{"mode":"exitOnJobCompletion","inserted":"exitOnJobCompletion: true","created":true}"#
    )]
    #[case::quit(
        Applied::QuitEndpoint { container: "pi".into(), annotation: None },
        r#"{"mode":"quitEndpoint","container":"pi"}"#
    )]
    #[case::quit_beside_a_native_proxy(
        Applied::QuitEndpoint { container: "pi".into(), annotation: ours() },
        r#"{"mode":"quitEndpoint","annotation":"sidecar.istio.io/nativeSidecar","container":"pi"}"#
    )]
    fn written_as_the_readme_says_and_read_back(#[case] applied: Applied, #[case] text: &str) {
        assert_eq!(applied.to_text(), text);
        assert_eq!(Applied::parse(text), Ok(applied));
    }

    #[rstest]
    #[case::not_json("quitEndpoint", "it is not JSON")]
    #[case::not_object(r#"["quitEndpoint"]"#, "it is not a JSON object")]
    #[case::no_mode(r#"{"container":"pi"}"#, "it names no mode")]
    #[case::unknown_mode(r#"{"mode":"sidecarOff"}"#, "it names an unknown mode")]
    #[case::no_container(r#"{"mode":"quitEndpoint"}"#, "it names no container")]
    #[case::container_not_string(
        r#"{"mode":"quitEndpoint","container":1}"#,
        "container is not a string"
    )]
    #[case::extra(
        r#"{"mode":"quitEndpoint","container":"pi","command":["x"]}"#,
        "unknown member \"command\""
    )]
    #[case::other_annotation(r#"{"mode":"nativeSidecar","annotation":"x"}"#, "another annotation")]
    #[case::negative_index(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":-1}"#,
        "from is not an index"
    )]
    #[case::foreign_member(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"added":["image"]}"#,
        "never adds"
    )]
    #[case::no_text(r#"{"mode":"exitOnJobCompletion"}"#, "no inserted key")]
    #[case::empty_text(r#"{"mode":"exitOnJobCompletion","inserted":""}"#, "no inserted key")]
    #[case::other_text(r#"{"mode":"exitOnJobCompletion","inserted":"é"}"#, "no inserted key")]
    #[case::repeated(
        r#"{"mode":"quitEndpoint","container":"pi","container":"db"}"#,
        "it repeats container"
    )]
    #[case::big_index(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":4294967296}"#,
        "from is not an index"
    )]
    #[case::float_index(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1.0}"#,
        "from is not an index"
    )]
    #[case::was_without_annotation(
        r#"{"mode":"quitEndpoint","container":"pi","was":"True"}"#,
        "unknown member \"was\""
    )]
    #[case::init_from_other_container(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"initFrom":{"db":0}}"#,
        "never puts first"
    )]
    #[case::init_from_not_index(
        r#"{"mode":"nativeSidecar","moved":"istio-proxy","from":1,"initFrom":{"istio-init":"1"}}"#,
        "not a map of indexes"
    )]
    #[case::created_not_bool(
        r#"{"mode":"exitOnJobCompletion","inserted":"exitOnJobCompletion: true","created":"yes"}"#,
        "created is not a boolean"
    )]
    fn hand_edits_are_refused(#[case] text: &str, #[case] why: &str) {
        let err = Applied::parse(text).unwrap_err();
        assert!(err.contains(why), "{err:?}");
    }

    #[test]
    fn legacy_annotation_is_a_quit_record() {
        assert_eq!(
            Record::read(None, Some("pi")),
            Record::Read {
                applied: Applied::QuitEndpoint {
                    container: "pi".into(),
                    annotation: None,
                },
                legacy: true
            }
        );
        let new = r#"{"mode":"nativeSidecar","annotation":"sidecar.istio.io/nativeSidecar"}"#;
        assert_eq!(
            Record::read(Some(new), Some("pi")).applied(),
            Some(&Applied::NativeAnnotation(Annotated::default()))
        );
        assert!(matches!(
            Record::read(Some("{"), None),
            Record::Unreadable(_)
        ));
        assert_eq!(Record::read(None, None), Record::Absent);
    }
}
