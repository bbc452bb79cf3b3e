//! A journey's golden file, `test_data/journeys/<name>.yaml`, as a reviewer
//! reads it (the way Istio's `pkg/kube/inject` keeps `X.yaml.injected`:
//! found when the test runs, a stale file failing, noise stripped):
//!
//! - `hops`: each admission request, and what the policy changed in it, a
//!   field each (`+ PATH: value` added, `- PATH` removed, `~ PATH: value`
//!   replaced, `order PATH: [names]` a list of named items in another
//!   order than its kept items then its new ones), derived from the object sent
//!   and the object the policy's patch made: the JSON Patch itself is the
//!   engine's and is not kept. Its warnings, and the API server's refusal.
//! - `pods`: the Pod each `Run` gave, whole, but for what kube-model's
//!   Istio rendered: an Istio container is `rendered:` (which release,
//!   template, form, status port, hold and proxy config Istio rendered it
//!   for) and the fields by which it differs from that rendering (a merge
//!   patch: `null` removes; lists of named items by name); Istio's volumes
//!   are one line; the quitEndpoint wrapper script is named, not copied.
//!
//! Every abbreviation is checked to expand back to the object it stands
//! for, so that two objects with the same text are the same object: the
//! file holds as much as the whole objects would. The text is YAML whose
//! strings are plain only where no YAML reader can take them for anything
//! else, and JSON-quoted otherwise; the test reads each file back and
//! requires the value it wrote.

use super::{Hop, Journey, Trip};
use crate::istio::{self, Mesh, Release};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// What stands for the policy's quitEndpoint wrapper script.
pub const WRAPPER_MARK: &str = "<the quitEndpoint wrapper script, src/modes/quit_wrapper.sh>";
const WRAPPER: &str = istio_job_sidecar_policy::modes::quit_endpoint::SCRIPT;

/// The golden file's value and its text, for the journey as written.
pub fn golden_form(case: &Journey, trip: &Trip) -> (Value, String) {
    let hops: Vec<Value> = trip.hops.iter().map(|h| hop_form(case, h)).collect();
    let pods: Vec<Value> = trip
        .pods
        .iter()
        .map(|p| abbreviate_pod(p, case.mesh))
        .collect();
    let value = json!({"hops": hops, "pods": pods});
    let header = format!(
        "# {}: {}\n# {}.\n# Written by `make golden` (tests/journeys.rs); see testkit/src/journey/golden.rs.\n",
        case.name,
        case.about,
        case.cluster()
    );
    let text = header + &to_yaml(&value);
    (value, text)
}

fn hop_form(case: &Journey, hop: &Hop) -> Value {
    let mut form = Map::new();
    form.insert("what".into(), Value::from(hop.what.as_str()));
    if !hop.sent {
        form.insert("sent".into(), Value::Bool(false));
    }
    if hop.patch.is_some() {
        let mut lines = Vec::new();
        changes(
            &hop.object,
            &hop.admitted,
            "",
            &hop.admitted,
            case.mesh,
            &mut lines,
        );
        if lines.is_empty() {
            lines.push(Value::from("(a patch that changes nothing)"));
        }
        form.insert("changes".into(), lines.into());
    }
    if !hop.warnings.is_empty() {
        form.insert("warnings".into(), hop.warnings.clone().into());
    }
    if let Some(why) = &hop.rejected {
        form.insert("rejected".into(), Value::from(why.as_str()));
    }
    Value::Object(form)
}

// --- what a hop changed --------------------------------------------------

/// The lines that take `from` to `to`, each a field: maps member by
/// member, lists of named items item by item (and their order when it is
/// not the kept items in their order, then the added ones), any other
/// value whole. `object` is the object admitted, whose pod template tells
/// what Istio rendered a container for.
fn changes(from: &Value, to: &Value, path: &str, object: &Value, mesh: Mesh, out: &mut Vec<Value>) {
    let shown = |v: &Value| abbreviate_value(v, object, mesh);
    let change = |line: String, v: Value| json!({ line: v });
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let at = format!("{path}{}", key_segment(key, path.is_empty()));
                match (a.get(key), b.get(key)) {
                    (Some(_), None) => out.push(Value::from(format!("- {at}"))),
                    (None, Some(v)) => out.push(change(format!("+ {at}"), shown(v))),
                    (Some(x), Some(y)) => changes(x, y, &at, object, mesh, out),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if named(a) && named(b) && a != b => {
            let name = |v: &Value| v["name"].as_str().unwrap_or_default().to_owned();
            let find = |list: &[Value], n: &str| list.iter().find(|v| v["name"] == n).cloned();
            for item in a {
                if find(b, &name(item)).is_none() {
                    out.push(Value::from(format!("- {path}[{}]", name(item))));
                }
            }
            for item in b {
                let at = format!("{path}[{}]", name(item));
                match find(a, &name(item)) {
                    None => out.push(change(format!("+ {at}"), shown(item))),
                    Some(old) => changes(&old, item, &at, object, mesh, out),
                }
            }
            let order: Vec<String> = b.iter().map(name).collect();
            let mut kept: Vec<String> = a.iter().map(name).filter(|n| order.contains(n)).collect();
            kept.extend(order.iter().filter(|n| find(a, n).is_none()).cloned());
            if kept != order {
                out.push(change(format!("order {path}"), json!(order)));
            }
        }
        (a, b) if a != b => out.push(change(format!("~ {path}"), shown(b))),
        _ => {}
    }
}

/// A list every item of which is a map with a name no other item has.
fn named(items: &[Value]) -> bool {
    let mut names: Vec<&str> = items.iter().filter_map(|i| i["name"].as_str()).collect();
    let all = names.len() == items.len();
    names.sort_unstable();
    names.dedup();
    all && names.len() == items.len()
}

fn key_segment(key: &str, first: bool) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match (plain, first) {
        (true, true) => key.to_owned(),
        (true, false) => format!(".{key}"),
        (false, _) => format!("[{}]", compact(&Value::from(key))),
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

// --- what Istio rendered -------------------------------------------------

/// What kube-model's Istio renders for a Pod: its init container, its
/// proxy, its volumes.
#[derive(Clone)]
struct Rendering {
    init: Value,
    proxy: Value,
    volumes: Vec<Value>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Params {
    release: ReleaseKey,
    cni: bool,
    native: bool,
    hold: bool,
    status_port: String,
    proxy_config: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ReleaseKey {
    V1_24,
    V1_27,
}

impl Params {
    fn release(&self) -> &'static str {
        match self.release {
            ReleaseKey::V1_24 => "Istio 1.24-1.26",
            ReleaseKey::V1_27 => "Istio >= 1.27",
        }
    }

    fn proxy_mark(&self) -> String {
        let form = if self.native { "native" } else { "classic" };
        let hold = if self.hold { ", hold" } else { "" };
        let config = match &self.proxy_config {
            Some(c) => format!(", proxy config {}", c.trim()),
            None => String::new(),
        };
        format!(
            "{}, sidecar template, {form}, status port {}{hold}{config}",
            self.release(),
            self.status_port
        )
    }

    fn init_mark(&self) -> String {
        let cni = if self.cni { ", CNI" } else { "" };
        format!(
            "{}, sidecar template{cni}, status port {}",
            self.release(),
            self.status_port
        )
    }

    fn mesh(&self) -> Mesh {
        let release = match self.release {
            ReleaseKey::V1_24 => Release::V1_24,
            ReleaseKey::V1_27 => Release::V1_27,
        };
        Mesh {
            native_flag: false,
            cni: self.cni,
            release,
            hold_application: self.hold,
            default_templates: istio::DEFAULT_TEMPLATES,
        }
    }
}

/// kube-model's Istio injecting a Pod of one container that asks for
/// exactly `params`.
fn render(params: &Params) -> Option<Rendering> {
    static CACHE: Mutex<Option<HashMap<Params, Option<Rendering>>>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(found) = cache.get(params) {
        return found.clone();
    }
    let mut annotations = json!({
        istio::NATIVE_SIDECAR: if params.native { "true" } else { "false" },
        istio::STATUS_PORT: params.status_port,
    });
    if let Some(config) = &params.proxy_config {
        annotations[istio::PROXY_CONFIG] = Value::from(config.as_str());
    }
    let probe = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": "probe", "annotations": annotations},
        "spec": {"containers": [{"name": "probe", "image": "probe"}]},
    });
    // As the journeys' Pods are stored: defaulted by the API server.
    let rendering = istio::inject(&probe, istio::Namespace::Enabled, params.mesh())
        .ok()
        .map(|pod| crate::kube::decode(&pod))
        .and_then(|pod| {
            let all: Vec<&Value> = ["initContainers", "containers"]
                .iter()
                .flat_map(|l| pod["spec"][*l].as_array().into_iter().flatten())
                .collect();
            let by = |n: &str| all.iter().find(|c| c["name"] == n).map(|c| (*c).clone());
            Some(Rendering {
                init: by(istio::INIT).or_else(|| by(istio::VALIDATION))?,
                proxy: by(istio::PROXY)?,
                volumes: pod["spec"]["volumes"].as_array()?.clone(),
            })
        });
    cache.insert(params.clone(), rendering.clone());
    rendering
}

/// The renderings a container of `pod` may stand for: each form and hold,
/// the status ports and proxy configs the Pod or the container names.
fn candidates(container: &Value, pod: &Value, mesh: Mesh) -> Vec<Params> {
    let annotation = |key: &str| {
        pod["metadata"]["annotations"][key]
            .as_str()
            .map(str::to_owned)
    };
    let mut ports = vec![];
    ports.extend(annotation(istio::STATUS_PORT));
    let drain = &container["lifecycle"]["preStop"]["exec"]["command"][2];
    ports.extend(
        drain
            .as_str()
            .and_then(|a| a.strip_prefix("--debug-port="))
            .map(str::to_owned),
    );
    ports.push(istio::DEFAULT_STATUS_PORT.to_string());
    dedup(&mut ports);
    let env = container["env"].as_array().into_iter().flatten();
    let own = env
        .filter(|v| v["name"] == "PROXY_CONFIG")
        .find_map(|v| v["value"].as_str())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty() && t != "{}");
    let mut configs: Vec<Option<String>> = vec![own, annotation(istio::PROXY_CONFIG), None];
    configs.retain(|c| c.as_deref().is_none_or(|t| !t.trim().is_empty()));
    dedup(&mut configs);
    let native_first = container["restartPolicy"] == "Always";
    let release = match mesh.release {
        Release::V1_24 => ReleaseKey::V1_24,
        Release::V1_27 => ReleaseKey::V1_27,
    };
    let mut all = Vec::new();
    for native in [native_first, !native_first] {
        for hold in [mesh.hold_application, !mesh.hold_application] {
            for status_port in &ports {
                for proxy_config in &configs {
                    all.push(Params {
                        release,
                        cni: mesh.cni,
                        native,
                        hold,
                        status_port: status_port.clone(),
                        proxy_config: proxy_config.clone(),
                    });
                }
            }
        }
    }
    all
}

fn dedup<T: PartialEq>(items: &mut Vec<T>) {
    let mut kept: Vec<T> = Vec::new();
    for item in items.drain(..) {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    *items = kept;
}

/// `container` as the rendering closest to it and what differs, when that
/// is shorter than the container and expands back to it.
fn abbreviate_container(container: &Value, pod: &Value, mesh: Mesh) -> Option<Value> {
    let name = container["name"].as_str()?;
    let proxy = name == istio::PROXY;
    if !proxy && name != istio::INIT && name != istio::VALIDATION {
        return None;
    }
    let mut best: Option<(usize, Value)> = None;
    for params in candidates(container, pod, mesh) {
        let Some(rendering) = render(&params) else {
            continue;
        };
        let base = if proxy {
            &rendering.proxy
        } else {
            &rendering.init
        };
        if base["name"] != container["name"] {
            continue;
        }
        let delta = merge_delta(base, container);
        if expand(base, delta.as_ref()) != *container {
            continue;
        }
        let mark = if proxy {
            params.proxy_mark()
        } else {
            params.init_mark()
        };
        let mut form = Map::new();
        form.insert("name".into(), Value::from(name));
        form.insert("rendered".into(), Value::from(mark));
        if let Some(Value::Object(delta)) = delta {
            if delta.contains_key("rendered") {
                continue;
            }
            form.extend(delta);
        }
        let size = compact(&Value::Object(form.clone())).len();
        if best.as_ref().is_none_or(|(s, _)| size < *s) {
            best = Some((size, Value::Object(form)));
        }
    }
    let (size, form) = best?;
    (size < compact(container).len()).then_some(form)
}

/// A merge patch from `base` to `actual` (`None`: equal): maps member by
/// member, `null` for a member removed; a list of named items as a map
/// from name to its item's patch (`null`: removed; a new item whole);
/// any other value whole. A list whose order this cannot say is whole.
fn merge_delta(base: &Value, actual: &Value) -> Option<Value> {
    if base == actual {
        return None;
    }
    match (base, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let mut delta = Map::new();
            for (key, was) in a {
                match b.get(key) {
                    None => {
                        delta.insert(key.clone(), Value::Null);
                    }
                    Some(now) => {
                        if let Some(d) = merge_delta(was, now) {
                            delta.insert(key.clone(), d);
                        }
                    }
                }
            }
            for (key, now) in b {
                if !a.contains_key(key) {
                    delta.insert(key.clone(), now.clone());
                }
            }
            Some(Value::Object(delta))
        }
        (Value::Array(a), Value::Array(b)) if named(a) && named(b) => {
            let mut delta = Map::new();
            for was in a {
                let n = was["name"].as_str().unwrap_or_default();
                match b.iter().find(|v| v["name"] == n) {
                    None => {
                        delta.insert(n.to_owned(), Value::Null);
                    }
                    Some(now) => {
                        if let Some(d) = merge_delta(was, now) {
                            delta.insert(n.to_owned(), d);
                        }
                    }
                }
            }
            for now in b {
                let n = now["name"].as_str().unwrap_or_default();
                if !a.iter().any(|v| v["name"] == n) {
                    delta.insert(n.to_owned(), now.clone());
                }
            }
            let delta = Value::Object(delta);
            if expand(base, Some(&delta)) == *actual {
                Some(delta)
            } else {
                Some(actual.clone())
            }
        }
        _ => Some(actual.clone()),
    }
}

/// `base` with the merge patch `delta` applied (`merge_delta`'s inverse).
fn expand(base: &Value, delta: Option<&Value>) -> Value {
    let Some(delta) = delta else {
        return base.clone();
    };
    match (base, delta) {
        (Value::Object(a), Value::Object(d)) => {
            let mut out = a.clone();
            for (key, change) in d {
                match (change, a.get(key)) {
                    (Value::Null, _) => {
                        out.remove(key);
                    }
                    (change, Some(was)) => {
                        out.insert(key.clone(), expand(was, Some(change)));
                    }
                    (change, None) => {
                        out.insert(key.clone(), change.clone());
                    }
                }
            }
            Value::Object(out)
        }
        (Value::Array(a), Value::Object(d)) => {
            let mut out = Vec::new();
            for was in a {
                let n = was["name"].as_str().unwrap_or_default();
                match d.get(n) {
                    Some(Value::Null) => {}
                    Some(change) => out.push(expand(was, Some(change))),
                    None => out.push(was.clone()),
                }
            }
            for (n, item) in d {
                if !a.iter().any(|v| v["name"] == *n.as_str()) && !item.is_null() {
                    out.push(item.clone());
                }
            }
            Value::Array(out)
        }
        (_, d) => d.clone(),
    }
}

/// The Pod (or pod template) with what Istio rendered and the wrapper
/// script abbreviated.
fn abbreviate_pod(pod: &Value, mesh: Mesh) -> Value {
    let mut out = unwrap_script(pod);
    for list in ["initContainers", "containers"] {
        if let Some(items) = out["spec"][list].as_array_mut() {
            for c in items.iter_mut() {
                if let Some(form) = abbreviate_container(c, pod, mesh) {
                    *c = form;
                }
            }
        }
    }
    let istio_volumes = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| pod["spec"][*l].as_array().into_iter().flatten())
        .find(|c| c["name"] == istio::PROXY)
        .and_then(|c| candidates(c, pod, mesh).first().and_then(render))
        .map(|r| r.volumes);
    if let (Some(volumes), Some(items)) = (istio_volumes, out["spec"]["volumes"].as_array_mut()) {
        let n = volumes.len();
        let at = (0..items.len()).find(|&i| n > 0 && items.get(i..i + n) == Some(&volumes[..]));
        if let Some(at) = at {
            let names: Vec<&str> = volumes.iter().filter_map(|v| v["name"].as_str()).collect();
            let mark = format!("<Istio's volumes: {}>", names.join(", "));
            items.splice(at..at + n, [Value::from(mark)]);
        }
    }
    out
}

/// A value shown in a hop's change: a container as `abbreviate_container`
/// gives it (read against the admitted object's pod template), the
/// wrapper script named.
fn abbreviate_value(value: &Value, object: &Value, mesh: Mesh) -> Value {
    let template = pod_of(object);
    let mut out = unwrap_script(value);
    let abbreviate = |c: &Value| abbreviate_container(c, &template, mesh);
    if let Some(form) = abbreviate(value) {
        out = form;
    } else if let Some(items) = out.as_array_mut() {
        for c in items.iter_mut() {
            if let Some(form) = abbreviate(c) {
                *c = form;
            }
        }
    }
    out
}

/// The Pod `object` is or makes: its own, or its pod template's metadata
/// and spec.
fn pod_of(object: &Value) -> Value {
    match object["kind"].as_str() {
        Some("CronJob") => object["spec"]["jobTemplate"]["spec"]["template"].clone(),
        Some("Job") => object["spec"]["template"].clone(),
        _ => object.clone(),
    }
}

/// Every string that is the wrapper script, named instead.
fn unwrap_script(value: &Value) -> Value {
    match value {
        Value::String(s) if s == WRAPPER => Value::from(WRAPPER_MARK),
        Value::Array(items) => Value::Array(items.iter().map(unwrap_script).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), unwrap_script(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

// --- YAML text ---------------------------------------------------------------

/// `value` as block YAML: maps and lists of maps in block style, lists of
/// scalars in flow style when they fit a line, strings plain only when
/// every YAML reader reads them as that string (`plain`), else
/// JSON-quoted (a JSON string is a YAML double-quoted string).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    block(value, 0, &mut out);
    out
}

fn block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, member) in ordered(map) {
                out.push_str(&pad);
                out.push_str(&scalar(&Value::from(key.as_str())));
                out.push(':');
                member_after_key(member, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                match item {
                    Value::Object(map) if !map.is_empty() => {
                        // The first member on the dash's line, the rest
                        // under it.
                        let mut text = String::new();
                        block(item, indent + 2, &mut text);
                        out.push(' ');
                        out.push_str(&text[indent + 2..]);
                    }
                    Value::Array(inner) if !inner.is_empty() && !flows(item) => {
                        out.push('\n');
                        block(item, indent + 2, out);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&inline(item));
                        out.push('\n');
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn member_after_key(member: &Value, indent: usize, out: &mut String) {
    match member {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            block(member, indent + 2, out);
        }
        Value::Array(items) if !items.is_empty() && !flows(member) => {
            out.push('\n');
            // A list under a key at the key's own indent, as kubectl writes it.
            block(member, indent, out);
        }
        _ => {
            out.push(' ');
            out.push_str(&inline(member));
            out.push('\n');
        }
    }
}

/// `name` and `what` first (what a reader looks for), then the rest as
/// they sort.
fn ordered(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let rank = |k: &str| match k {
        "what" | "name" => 0,
        "rendered" => 1,
        _ => 2,
    };
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    members
}

/// A list of scalars short enough for one line.
fn flows(value: &Value) -> bool {
    match value {
        Value::Array(items) => {
            items.iter().all(|i| !i.is_object() && !i.is_array()) && inline(value).len() <= 100
        }
        _ => false,
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Array(items) if items.is_empty() => "[]".into(),
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(_) => compact(value),
        other => scalar(other),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) if plain(s) => s.clone(),
        other => compact(other),
    }
}

/// A string every YAML reader (1.1 and 1.2) reads as itself when written
/// plain: it starts with a letter or `/`, holds only letters, digits and
/// `._/-`, and is none of YAML 1.1's booleans or null.
fn plain(s: &str) -> bool {
    let mut bytes = s.bytes();
    let first = bytes.next();
    let starts = first.is_some_and(|b| b.is_ascii_alphabetic() || b == b'/');
    let rest = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'));
    let words = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
    ];
    starts && rest && !words.contains(&s.to_ascii_lowercase().as_str())
}

/// The lines of `expected` and `actual` around where they first differ,
/// comment lines left out of both.
pub fn text_differences(expected: &str, actual: &str) -> String {
    let lines = |t: &'_ str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let (e, a) = (lines(expected), lines(actual));
    let head = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let tail = e[head..]
        .iter()
        .rev()
        .zip(a[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut out = vec![format!("@@ line {} (comments left out)", head + 1)];
    let from = head.saturating_sub(3);
    out.extend(e[from..head].iter().map(|l| format!("  {l}")));
    let cap = |v: &[String], sign: char| -> Vec<String> {
        let mut shown: Vec<String> = v.iter().take(40).map(|l| format!("{sign} {l}")).collect();
        if v.len() > 40 {
            shown.push(format!("{sign} ... {} more lines", v.len() - 40));
        }
        shown
    };
    out.extend(cap(&e[head..e.len() - tail], '-'));
    out.extend(cap(&a[head..a.len() - tail], '+'));
    out.join("\n")
}

/// The text a golden file is compared by: its lines but comments.
pub fn significant(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_reads_back_as_written() {
        let value = json!({
            "a": ["yes", "no", "On", "1.4", "", "/app/x", "a: b", "#c", "-d", "x y", null, true, 1.5],
            "b": {"nested": [{"name": "n", "list": [{"k": "v"}], "empty": {}, "none": []}]},
            "long": ["x".repeat(60), "y".repeat(60)],
            "key with space": "multi\nline",
            "n": [[1, 2], [{"a": 1}]],
        });
        let text = to_yaml(&value);
        let back: Value = serde_yaml::from_str(&text).expect("YAML");
        assert_eq!(back, value, "{text}");
    }

    #[test]
    fn a_merge_delta_expands_back() {
        let base =
            json!({"name": "p", "env": [{"name": "A", "value": "1"}, {"name": "B"}], "x": 1});
        let actual =
            json!({"name": "p", "env": [{"name": "A", "value": "2"}, {"name": "C"}], "y": 2});
        let delta = merge_delta(&base, &actual);
        assert_eq!(expand(&base, delta.as_ref()), actual);
        let reordered =
            json!({"name": "p", "env": [{"name": "B"}, {"name": "A", "value": "1"}], "x": 1});
        let delta = merge_delta(&base, &reordered);
        assert_eq!(expand(&base, delta.as_ref()), reordered);
    }

    #[test]
    fn changes_say_where_an_item_went() {
        let from = json!({"c": [{"name": "app"}, {"name": "p"}], "i": [{"name": "u"}]});
        let to = json!({"c": [{"name": "app"}], "i": [{"name": "p"}, {"name": "u"}]});
        let mut out = Vec::new();
        changes(
            &from,
            &to,
            "",
            &to,
            Mesh::default_of(Release::V1_27),
            &mut out,
        );
        assert_eq!(
            Value::from(out),
            json!(["- c[p]", {"+ i[p]": {"name": "p"}}, {"order i": ["p", "u"]}])
        );
    }
}
