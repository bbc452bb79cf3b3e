//! `render`: manifests in, the same manifests out with the policy's edit
//! applied, as a Helm post-renderer (all manifests on stdin, the result on
//! stdout, a non-zero exit fails the install) or a step of a kustomize or
//! GitOps pipeline.
//!
//! Each Job, CronJob and Pod is sent as the CREATE the API server would
//! send for it, and what comes out is that object with Kubewarden's patch
//! applied (`evaluate`), value for value. A document the policy leaves
//! alone, and every other document, is written back byte for byte. An
//! edited document keeps its leading comments and `---` line and the order
//! of its keys (new keys come after the old ones); its other comments and
//! its quoting style are lost. A second run changes nothing: the policy's
//! output is its own fixed point.

use std::io::{self, Read, Write};

use istio_job_sidecar_policy::view::Kind;
use serde_json::Value;

use crate::config::{Config, Sent};
use crate::evaluate::{evaluate, summary, At, Want};
use crate::input::{is_list, sniff, Format, Location, RawDocument, Source, YamlDocuments};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub objects: usize,
    pub changed: usize,
    /// Documents that do not parse, written back as they were.
    pub invalid: usize,
}

pub struct Renderer<'c> {
    pub config: &'c Config,
    pub default_namespace: String,
    /// Warnings and errors, kubectl style (`Warning: ...`), for stderr.
    pub messages: Vec<String>,
    pub rendered: Rendered,
    /// Namespace labels from the Namespace documents seen so far.
    namespaces: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
}

impl<'c> Renderer<'c> {
    pub fn new(config: &'c Config, default_namespace: &str) -> Self {
        Renderer {
            config,
            default_namespace: default_namespace.to_owned(),
            messages: Vec::new(),
            rendered: Rendered::default(),
            namespaces: Default::default(),
        }
    }

    pub fn source(&mut self, source: &Source, out: &mut dyn Write) -> io::Result<()> {
        let name = source.name();
        let reader = source
            .open()
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        self.stream(&name, reader, out)
    }

    pub fn stream(&mut self, name: &str, reader: impl Read, out: &mut dyn Write) -> io::Result<()> {
        let (format, mut reader) = sniff(reader)?;
        match format {
            Format::Yaml => {
                for document in YamlDocuments::new(reader) {
                    let document = document?;
                    let bytes = self.yaml_document(name, &document);
                    out.write_all(bytes.as_deref().unwrap_or(&document.bytes))?;
                }
                Ok(())
            }
            Format::Json => {
                let mut text = String::new();
                reader.read_to_string(&mut text)?;
                self.json(name, &text, out)
            }
        }
    }

    /// The document's new text, or `None` to write it back as it was.
    fn yaml_document(&mut self, name: &str, document: &RawDocument) -> Option<Vec<u8>> {
        if document.index == 0 {
            return None;
        }
        let at = Location {
            source: name.to_owned(),
            document: document.index,
            item: None,
            line: Some(document.line),
        };
        let original: serde_yaml::Value = match document.parse_as() {
            Ok(v) => v,
            Err((line, why)) => {
                self.invalid(Location { line, ..at }, &why);
                return None;
            }
        };
        // Only string keys make a Kubernetes object.
        let object: Value = serde_json::to_value(&original).ok()?;
        let edited = self.edit(&object, &at)?;
        let body = serde_yaml::to_string(&ordered(&edited, Some(&original))).ok()?;
        let mut text = leading_lines(&document.bytes);
        text.extend_from_slice(body.as_bytes());
        Some(text)
    }

    fn json(&mut self, name: &str, text: &str, out: &mut dyn Write) -> io::Result<()> {
        let values =
            serde_json::Deserializer::from_str(text).into_iter::<&serde_json::value::RawValue>();
        let mut written = 0;
        for (index, next) in values.enumerate() {
            let at = Location {
                source: name.to_owned(),
                document: index + 1,
                item: None,
                line: None,
            };
            let raw = match next {
                Ok(raw) => raw,
                Err(e) => {
                    let line = Some(e.line()).filter(|l| *l > 0);
                    self.invalid(Location { line, ..at }, &e.to_string());
                    break;
                }
            };
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            let end = start + raw.get().len();
            out.write_all(&text.as_bytes()[written..start])?;
            written = start;
            let Ok(object) = serde_json::from_str::<Value>(raw.get()) else {
                continue;
            };
            let Some(edited) = self.edit(&object, &at) else {
                continue;
            };
            let original: Option<serde_yaml::Value> = serde_json::from_str(raw.get()).ok();
            let layout = ordered(&edited, original.as_ref());
            let mut bytes = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
            let mut ser = serde_json::Serializer::with_formatter(&mut bytes, formatter);
            serde::Serialize::serialize(&layout, &mut ser).map_err(io::Error::other)?;
            out.write_all(&bytes)?;
            written = end;
        }
        out.write_all(&text.as_bytes()[written..])
    }

    fn invalid(&mut self, at: Location, why: &str) {
        self.rendered.invalid += 1;
        self.messages
            .push(format!("error: {at}: {why} (written back unchanged)"));
    }

    /// The document with the policy's edit of each object (a `List`: of
    /// each item) applied, or `None` when nothing changes.
    fn edit(&mut self, document: &Value, at: &Location) -> Option<Value> {
        if is_list(document) {
            let mut edited = document.clone();
            let mut changed = false;
            for (i, item) in document["items"].as_array()?.iter().enumerate() {
                let at = Location {
                    item: Some(i),
                    ..at.clone()
                };
                if let Some(new) = self.object(item, &at) {
                    edited["items"][i] = new;
                    changed = true;
                }
            }
            return changed.then_some(edited);
        }
        self.object(document, at)
    }

    fn object(&mut self, object: &Value, at: &Location) -> Option<Value> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let kind_name = object["kind"].as_str()?;
        let metadata = &object["metadata"];
        if group.is_empty() && kind_name == "Namespace" {
            if let Some(name) = metadata["name"].as_str() {
                let labels = metadata["labels"].as_object().cloned().unwrap_or_default();
                self.namespaces.insert(name.to_owned(), labels);
            }
            return None;
        }
        let kind = Kind::from_group_kind(group, kind_name)?;
        self.rendered.objects += 1;
        let namespace = metadata["namespace"]
            .as_str()
            .unwrap_or(&self.default_namespace)
            .to_owned();
        let resource = match kind {
            Kind::Job => "jobs",
            Kind::CronJob => "cronjobs",
            Kind::Pod => "pods",
        };
        let sent = self
            .config
            .sent_for_object(resource, group, "CREATE", object, &namespace)
            .and(
                self.config
                    .sent_for_namespace(&namespace, self.namespaces.get(&namespace)),
            );
        if let Sent::No(_) = sent {
            return None;
        }
        let want = Want {
            patch: false,
            admitted: true,
        };
        let (evaluation, admitted) = evaluate(
            At::Create,
            kind,
            object,
            "CREATE",
            &namespace,
            &self.config.settings,
            want,
        );
        let who = format!("{kind_name}/{}", metadata["name"].as_str().unwrap_or("?"));
        for warning in &evaluation.warnings {
            self.messages.push(format!("Warning: {who}: {warning}"));
        }
        if let Some(broken) = &evaluation.broken {
            self.messages.push(format!("error: {at}: {who}: {broken}"));
        }
        let admitted = admitted?;
        self.rendered.changed += 1;
        self.messages
            .push(format!("{who}: {}", summary(&evaluation)));
        Some(admitted)
    }
}

/// The document's first lines up to its content: comments, blank lines and
/// a bare `---` line, written back as they were.
fn leading_lines(bytes: &[u8]) -> Vec<u8> {
    let mut kept = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let trimmed = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let text = String::from_utf8_lossy(trimmed);
        let text = text.trim();
        let bare_marker = text == "---" || text.starts_with("--- #");
        if text.is_empty() || text.starts_with('#') || bare_marker {
            kept.extend_from_slice(line);
        } else {
            break;
        }
    }
    kept
}

/// `new` laid out as `old` was: a mapping's keys in `old`'s order, then the
/// new ones; a list's items matched by `name` (or by position); a scalar
/// that did not change keeps its original form. The result reads back as
/// `new`, or `new` is laid out as it is.
pub fn ordered(new: &Value, old: Option<&serde_yaml::Value>) -> serde_yaml::Value {
    let laid = lay_out(new, old);
    match serde_json::to_value(&laid) {
        Ok(back) if &back == new => laid,
        _ => serde_yaml::to_value(new).unwrap_or(serde_yaml::Value::Null),
    }
}

fn lay_out(new: &Value, old: Option<&serde_yaml::Value>) -> serde_yaml::Value {
    use serde_yaml::Value as Y;
    match (new, old) {
        (Value::Object(members), Some(Y::Mapping(before))) => {
            let mut out = serde_yaml::Mapping::new();
            for (key, value) in before {
                if let Some(k) = key.as_str() {
                    if let Some(v) = members.get(k) {
                        out.insert(key.clone(), lay_out(v, Some(value)));
                    }
                }
            }
            for (k, v) in members {
                let key = Y::String(k.clone());
                if !out.contains_key(&key) {
                    out.insert(key, lay_out(v, None));
                }
            }
            Y::Mapping(out)
        }
        (Value::Array(items), Some(Y::Sequence(before))) => Y::Sequence(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let named = item["name"].as_str().and_then(|n| {
                        before
                            .iter()
                            .find(|b| b.get("name").and_then(Y::as_str) == Some(n))
                    });
                    let counterpart = match item["name"] {
                        Value::String(_) => named,
                        _ => before.get(i),
                    };
                    lay_out(item, counterpart)
                })
                .collect(),
        ),
        // New parts come in serde_json's order: its maps are sorted.
        (Value::Object(_) | Value::Array(_), _) => serde_yaml::to_value(new).unwrap_or(Y::Null),
        (scalar, Some(before)) if serde_json::to_value(before).ok().as_ref() == Some(scalar) => {
            before.clone()
        }
        (scalar, _) => serde_yaml::to_value(scalar).unwrap_or(Y::Null),
    }
}

/// Reads every source and writes the result to `out`; the messages for
/// stderr are in the renderer.
pub fn render_all(
    renderer: &mut Renderer,
    sources: &[Source],
    out: &mut dyn Write,
) -> io::Result<()> {
    for source in sources {
        renderer.source(source, out)?;
    }
    out.flush()
}

/// For tests: render `text` (one stream) and return the output.
pub fn render_text<'c>(config: &'c Config, text: &str) -> (String, Renderer<'c>) {
    let mut renderer = Renderer::new(config, "default");
    let mut out = Vec::new();
    let _ = renderer.stream("-", text.as_bytes(), &mut out);
    (String::from_utf8_lossy(&out).into_owned(), renderer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edited_document_keeps_its_key_order_and_reads_back_as_the_object() {
        let before: serde_yaml::Value = serde_yaml::from_str(
            "kind: Job\nmetadata: {name: j}\nspec:\n  z: 1\n  a: [{name: x, b: 2, a: 1}]\n",
        )
        .unwrap();
        let after = json!({"kind": "Job", "metadata": {"name": "j", "annotations": {"k": "v"}},
                           "spec": {"a": [{"a": 1, "b": 3, "name": "x"}], "z": 1}});
        let laid = ordered(&after, Some(&before));
        assert_eq!(
            serde_yaml::to_string(&laid).unwrap(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    k: v\nspec:\n  z: 1\n  a:\n  - name: x\n    b: 3\n    a: 1\n"
        );
        assert_eq!(serde_json::to_value(&laid).unwrap(), after);
    }

    #[test]
    fn the_leading_comments_and_marker_stay() {
        let doc = b"---\n# Source: chart/templates/job.yaml\n\napiVersion: batch/v1\n# inner\n";
        assert_eq!(
            leading_lines(doc),
            b"---\n# Source: chart/templates/job.yaml\n\n".to_vec()
        );
        assert_eq!(leading_lines(b"--- {a: 1}\n"), Vec::<u8>::new());
    }
}
