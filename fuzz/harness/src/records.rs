//! The traces of earlier edits a pod template may carry: records
//! `istio-job-sidecar/applied` of every form `src/record.rs` reads (a move
//! with or without the nativeSidecar annotation it wrote), records
//! that are nearly valid (a member of the wrong type, an unknown member, a
//! huge `from`, `added` naming a member the move never adds, an inserted
//! text that is or is not in the config), garbage, the legacy
//! `istio-job-sidecar/quit-wrapped`, and commands already wrapped by
//! quitEndpoint.

use crate::{Key, Text, Tree};
use arbitrary::{Arbitrary, Unstructured};
use istio_job_sidecar_policy::modes::quit_endpoint::{
    ALWAYS, NAME as WRAPPER_NAME, ON_SUCCESS, SCRIPT, SHELL,
};
use istio_job_sidecar_policy::record::{Annotated, Applied, Move};
use policy_testkit::names::{APPLIED, EXIT_KEY, QUIT_WRAPPED};
use serde_json::{Map, Value};

/// A container name a record may name: mostly the ones the generated
/// workloads have.
#[derive(Debug, Clone)]
pub struct Name(pub String);

const NAMES: &[&str] = &["istio-proxy", "envoy", "app", "pi", "istio-init", ""];

impl<'a> Arbitrary<'a> for Name {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Name(if u.ratio(3, 4)? {
            u.choose(NAMES)?.to_string()
        } else {
            Text::arbitrary(u)?.0
        }))
    }
}

/// A record annotation on the pod template.
#[derive(Debug, Arbitrary)]
pub enum RecordAnnotation {
    Applied(RecordText),
    /// The legacy form: `istio-job-sidecar/quit-wrapped: <container>`.
    QuitWrapped(Name),
}

impl RecordAnnotation {
    /// The annotation as a member of the template's annotations.
    pub fn member(&self) -> (Key, Text) {
        match self {
            RecordAnnotation::Applied(text) => (Key(APPLIED.into()), Text(text.text())),
            RecordAnnotation::QuitWrapped(name) => (Key(QUIT_WRAPPED.into()), Text(name.0.clone())),
        }
    }
}

/// The value of `istio-job-sidecar/applied`.
#[derive(Debug, Arbitrary)]
pub enum RecordText {
    Valid(ValidRecord),
    Near(NearRecord),
    /// Any JSON, an object or not.
    Json(Tree),
    /// Any text.
    Text(Text),
}

impl RecordText {
    pub fn text(&self) -> String {
        match self {
            RecordText::Valid(r) => r.text(),
            RecordText::Near(r) => r.text(),
            RecordText::Json(tree) => {
                let mut out = String::new();
                tree.write(&mut out, 1);
                out
            }
            RecordText::Text(t) => t.0.clone(),
        }
    }
}

/// Texts exitOnJobCompletion inserts (in each form it merges into), and
/// some it never does; every one holds the key, as a readable record must.
const INSERTED: &[&str] = &[
    "\nexitOnJobCompletion: true",
    "exitOnJobCompletion: true",
    "\n  exitOnJobCompletion: true",
    ", \"exitOnJobCompletion\": true",
    "\"exitOnJobCompletion\": true",
    "exitOnJobCompletion: true\n",
    "\n\"exitOnJobCompletion\": true",
    "exitOnJobCompletion",
    "\nexitOnJobCompletion: false",
    "exitOnJobCompletion: true\nexitOnJobCompletion: true",
    "\u{2028}exitOnJobCompletion: true",
];

/// A record `src/record.rs` reads.
#[derive(Debug, Arbitrary, Clone)]
pub enum ValidRecord {
    NativeAnnotation {
        /// The user's value the annotation replaced.
        was: Option<Text>,
    },
    Move {
        container: Name,
        from: u8,
        /// Which of restartPolicy, startupProbe, lifecycle were added
        /// (bits 0-2); bit 3 lists them in reverse.
        added: u8,
        restart_policy: Option<Text>,
        status: Option<Text>,
        /// Where `istio-init` was before the move put it first.
        init_from: Option<u8>,
        /// The move wrote `sidecar.istio.io/nativeSidecar: "true"`, in
        /// place of the user's value when there is one.
        annotation: Option<Option<Text>>,
    },
    Exit {
        inserted: Inserted,
        created: bool,
        annotation: Option<Option<Text>>,
    },
    Quit {
        container: Name,
        annotation: Option<Option<Text>>,
    },
}

/// The annotation edit of a record.
fn annotated(edit: &Option<Option<Text>>) -> Option<Annotated> {
    edit.as_ref().map(|was| Annotated {
        was: was.as_ref().map(|t| t.0.clone()),
    })
}

#[derive(Debug, Arbitrary, Clone)]
pub enum Inserted {
    Known(u8),
    /// Any text, with the key after it.
    Any(String),
}

impl ValidRecord {
    pub fn applied(&self) -> Applied {
        match self {
            ValidRecord::NativeAnnotation { was } => Applied::NativeAnnotation(Annotated {
                was: was.as_ref().map(|t| t.0.clone()),
            }),
            ValidRecord::Move {
                container,
                from,
                added,
                restart_policy,
                status,
                init_from,
                annotation,
            } => {
                let mut names: Vec<String> = ["restartPolicy", "startupProbe", "lifecycle"]
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| added & (1 << i) != 0)
                    .map(|(_, n)| (*n).to_owned())
                    .collect();
                if added & 8 != 0 {
                    names.reverse();
                }
                Applied::NativeMove(Move {
                    container: container.0.clone(),
                    from: usize::from(*from % 8),
                    added: names,
                    restart_policy: restart_policy.as_ref().map(|t| t.0.clone()),
                    status: status.as_ref().map(|t| t.0.clone()),
                    init_from: init_from
                        .map(|i| vec![("istio-init".to_owned(), usize::from(i % 8))])
                        .unwrap_or_default(),
                    annotation: annotated(annotation),
                })
            }
            ValidRecord::Exit {
                inserted,
                created,
                annotation,
            } => Applied::ExitOnJobCompletion {
                inserted: match inserted {
                    Inserted::Known(i) => INSERTED[usize::from(*i) % INSERTED.len()].to_owned(),
                    Inserted::Any(s) => format!("{s}{EXIT_KEY}: true"),
                },
                created: *created,
                annotation: annotated(annotation),
            },
            ValidRecord::Quit {
                container,
                annotation,
            } => Applied::QuitEndpoint {
                container: container.0.clone(),
                annotation: annotated(annotation),
            },
        }
    }

    /// As the policy writes it.
    pub fn text(&self) -> String {
        self.applied().to_text()
    }

    /// As a JSON object (members in any order: the reader does not care).
    fn members(&self) -> Map<String, Value> {
        match serde_json::from_str(&self.text()) {
            Ok(Value::Object(members)) => members,
            _ => unreachable!("the policy writes a record as a JSON object"),
        }
    }
}

/// `from` values that are no small index.
const FROMS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "99999999999999999999999999",
    "1e30",
    "-1",
    "1.0",
    "\"1\"",
    "null",
    "[1]",
];

/// Member names of the records.
const MEMBERS: &[&str] = &[
    "mode",
    "annotation",
    "moved",
    "from",
    "added",
    "restartPolicy",
    "status",
    "inserted",
    "created",
    "container",
];

/// A record close to one the policy writes.
#[derive(Debug, Arbitrary)]
pub enum NearRecord {
    /// One more member.
    UnknownMember(ValidRecord, Key, Tree),
    /// A member (of `MEMBERS`) set to any value: of the wrong type, or of
    /// the right one in a record of another form.
    Member(ValidRecord, u8, Tree),
    /// A member of the record left out.
    Missing(ValidRecord, u8),
    /// A move whose `from` is not a small index (`FROMS`).
    From(ValidRecord, u8),
    /// A move whose `added` names something else too.
    ForeignAdded(ValidRecord, Text),
    /// Another mode (any text: unknown, `disabled`, another case).
    Mode(ValidRecord, Text),
    /// An exitOnJobCompletion record whose inserted text lacks the key.
    InsertedWithoutKey(Text, bool),
    /// The record's text with a member repeated at the end.
    Duplicate(ValidRecord, u8, Tree),
    /// The record's text cut short.
    Truncated(ValidRecord, u8),
    /// The record pretty-printed (readable: JSON is JSON).
    Pretty(ValidRecord),
}

impl NearRecord {
    pub fn text(&self) -> String {
        let tree = |t: &Tree| {
            let mut out = String::new();
            t.write(&mut out, 1);
            serde_json::from_str::<Value>(&out).unwrap_or(Value::Null)
        };
        let member = |i: &u8| MEMBERS[usize::from(*i) % MEMBERS.len()];
        let object = |m: Map<String, Value>| Value::Object(m).to_string();
        match self {
            NearRecord::UnknownMember(r, k, v) => {
                let mut m = r.members();
                m.insert(k.0.clone(), tree(v));
                object(m)
            }
            NearRecord::Member(r, i, v) => {
                let mut m = r.members();
                m.insert(member(i).to_owned(), tree(v));
                object(m)
            }
            NearRecord::Missing(r, i) => {
                let mut m = r.members();
                let keys: Vec<String> = m.keys().cloned().collect();
                m.remove(&keys[usize::from(*i) % keys.len()]);
                object(m)
            }
            NearRecord::From(r, i) => {
                let mut m = as_move(r).members();
                m.remove("from");
                let text = object(m);
                let from = FROMS[usize::from(*i) % FROMS.len()];
                format!("{},\"from\":{from}}}", &text[..text.len() - 1])
            }
            NearRecord::ForeignAdded(r, name) => {
                let mut m = as_move(r).members();
                if let Some(Value::Array(added)) = m.get_mut("added") {
                    added.push(Value::String(name.0.clone()));
                }
                object(m)
            }
            NearRecord::Mode(r, mode) => {
                let mut m = r.members();
                m.insert("mode".into(), Value::String(mode.0.clone()));
                object(m)
            }
            NearRecord::InsertedWithoutKey(t, created) => {
                let mut m = Map::new();
                m.insert("mode".into(), "exitOnJobCompletion".into());
                m.insert("inserted".into(), t.0.replace(EXIT_KEY, "").into());
                if *created {
                    m.insert("created".into(), true.into());
                }
                object(m)
            }
            NearRecord::Duplicate(r, i, v) => {
                let text = r.text();
                let value = tree(v);
                format!(
                    "{},{}:{value}}}",
                    &text[..text.len() - 1],
                    Value::from(member(i))
                )
            }
            NearRecord::Truncated(r, cut) => {
                let text = r.text();
                let mut at = usize::from(*cut) % text.len().max(1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text[..at].to_owned()
            }
            NearRecord::Pretty(r) => {
                serde_json::to_string_pretty(&Value::Object(r.members())).unwrap_or_default()
            }
        }
    }
}

/// `r` if it is a move, else a move to the same container name.
fn as_move(r: &ValidRecord) -> ValidRecord {
    match r {
        ValidRecord::Move { .. } => r.clone(),
        ValidRecord::Quit { container, .. } => ValidRecord::Move {
            container: container.clone(),
            from: 1,
            added: 7,
            restart_policy: None,
            status: None,
            init_from: None,
            annotation: None,
        },
        _ => ValidRecord::Move {
            container: Name("istio-proxy".into()),
            from: 1,
            added: 3,
            restart_policy: None,
            status: None,
            init_from: Some(1),
            annotation: Some(None),
        },
    }
}

/// A command quitEndpoint wrapped, with these settings and this version of
/// the script or an older one.
#[derive(Debug, Arbitrary)]
pub struct Wrapper {
    pub other_url: bool,
    pub on_success: bool,
    pub old_script: bool,
}

impl Wrapper {
    pub fn prefix(&self) -> Vec<&'static str> {
        vec![
            SHELL,
            "-c",
            if self.old_script {
                "\"$@\"; wget -q -O- --post-data= \"$1\""
            } else {
                SCRIPT
            },
            WRAPPER_NAME,
            if self.other_url {
                "http://[::1]:15020/quitquitquit?x=1"
            } else {
                istio_job_sidecar_policy::settings::DEFAULT_QUIT_URL
            },
            if self.on_success { ON_SUCCESS } else { ALWAYS },
        ]
    }
}

/// Whether a command (a JSON value) is a quitEndpoint wrapper, as the
/// policy recognises one.
pub fn is_wrapped(command: &Value) -> bool {
    use istio_job_sidecar_policy::json::Node;
    let Ok(command) = serde_json::from_value::<Vec<String>>(command.clone()) else {
        return false;
    };
    let command: Vec<Node> = command.into_iter().map(Node::from_string).collect();
    istio_job_sidecar_policy::modes::quit_endpoint::wrapper_len(&command) > 0
}
