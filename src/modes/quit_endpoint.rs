//! mode quitEndpoint: the application container's command is wrapped in a
//! POSIX `sh` script that runs the program and, once it has ended, POSTs
//! `quitUrl` (pilot-agent's `/quitquitquit` on 15020; 15000 would stop only
//! Envoy and leave the pod stuck), so the proxy exits and the pod completes.
//!
//! The wrapped command is
//! `["/bin/sh", "-c", SCRIPT, NAME, quitUrl, when, <original command...>]`
//! and `args` is not touched: the original argv reaches the script as
//! positional parameters and is run as `exec "$@"`, so nothing in it is
//! reparsed by a shell, and Kubernetes expands `$(VAR)` (and `$$`) in every
//! original element exactly as before, since each is still an element of
//! `command` or `args`. The elements the policy adds contain neither `$(`
//! nor `$$` (tested), so expansion leaves them alone.
//!
//! `when` says after which exits of the program the proxy is asked to
//! quit: only after one the kubelet does not restart the container after
//! (`restarts.rs`, the home of `When`): `on-success` for `restartPolicy:
//! OnFailure` (after a failure the kubelet restarts the program in the same
//! pod, which still needs its proxy), `always` for `Never`, and, for a
//! container with its own `restartPolicy` and `restartPolicyRules`,
//! `unless:CODES` or `only:CODES`. A container restarted after every exit,
//! with rules the policy cannot read, or whose own restart fields kubelets
//! before 1.35 read otherwise than later ones where the kubelets that may
//! run the Pod are not known (with `nodeVersionCheck`, the Node list says),
//! has no safe time to quit, and is not wrapped.
//!
//! The URL is `quitUrl` on the pod's own status port: pilot-agent serves
//! `/quitquitquit` on `status.sidecar.istio.io/port` when the pod sets it,
//! and has no status server at all when it is `"0"`, where nothing is
//! wrapped (docs/facts.md, "pilot-agent's quit endpoint"). It is written whole,
//! `http://HOST:PORT/PATH`, so that the script takes host, port and path
//! apart with parameter expansion alone.

use crate::json::{Node, ShapeError};
use crate::modes::restarts::{self, Kubelets};
use crate::modes::target::{ModeOutcome, RecordEdit, Target, Undone};
use crate::native_gate;
use crate::record::Applied;
use crate::settings::quit_url_parts;
use crate::warning;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The wrapper script (`sh -c` text). No `$(` and no `$$` in it, as
/// Kubernetes would expand those.
pub const SCRIPT: &str = include_str!("quit_wrapper.sh");
pub const SHELL: &str = "/bin/sh";
/// `$0` of the wrapper: what its messages are prefixed with, and the mark
/// by which a wrapped command is recognised.
pub const NAME: &str = "istio-job-sidecar-quit";
pub use crate::modes::restarts::{ALWAYS, ON_SUCCESS};
/// Elements the wrapper puts before the original command.
pub const PREFIX_LEN: usize = 6;
/// The most items a command can have and still start a process: Linux
/// takes argv and the environment in `ARG_MAX` bytes (2 MiB, a quarter of
/// the default 8 MiB stack), each item at least its pointer and its NUL
/// (9 bytes). A longer command is no command a container runs, and is not
/// read, so that a tenant's argv of hundreds of thousands of empty strings
/// costs a count, not a tree.
pub const MAX_ARGV: usize = (2 << 20) / 9;

pub fn apply(t: &mut Target) -> Result<ModeOutcome, ShapeError> {
    // A proxy already injected as a native sidecar is wrapped for all the
    // same: Istio's injector renders a Pod that carries its status again,
    // classic unless the Pod or the mesh asks for native, and then only
    // the wrapper ends it.
    let sidecar = t.settings.sidecar_container_name.as_str();
    let view = t.object.view()?;
    let apps: Vec<(usize, String)> = view
        .containers()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name.as_deref() != Some(sidecar))
        .map(|(i, c)| (i, c.name.as_deref().unwrap_or_default().to_owned()))
        .collect();
    let pod_restart_policy = view.spec.restart_policy.clone();
    let status_port = view.status_port();
    let (index, name) = match apps.as_slice() {
        [] => {
            return Ok(nothing_wrapped(
                t,
                "quitEndpoint: no application container to wrap".into(),
            ))
        }
        _ if status_port == Some(0) => return unwrap_all(t, &apps, NO_STATUS_SERVER.into()),
        [(index, name)] => (*index, name.as_str()),
        several => {
            let why = format!(
                "quitEndpoint wraps a single app container, this pod has {}: not wrapped; \
                 consider nativeSidecar",
                several.len()
            );
            return unwrap_all(t, several, why);
        }
    };
    let own_restart_policy = t.object.view()?.containers()[index].restart_policy.clone();
    // The rules are read only beside a container's own restartPolicy, and
    // only of the one container wrapped.
    let rules = match own_restart_policy {
        None => None,
        Some(_) => match t
            .object
            .item("containers", index)?
            .get_mut("restartPolicyRules")?
        {
            Some(rules) => Some(rules.to_value()?),
            None => None,
        },
    };
    let node_name = native_gate::node_name(t.object)?;
    let check = t.settings.node_version_check;
    let when = restarts::when(
        pod_restart_policy.as_deref(),
        own_restart_policy.as_deref(),
        rules.as_ref(),
        || kubelets(check, node_name.as_deref()),
    );
    let when = match when {
        Ok(when) => when,
        Err(none) => {
            return unwrap_all(t, &[(index, name.to_owned())], none.warning(name));
        }
    };
    let url = post_url(&t.settings.quit_url, status_port);
    let when = when.arg();
    let prefix = [SHELL, "-c", SCRIPT, NAME, url.as_ref(), when.as_ref()];
    let applied = Applied::QuitEndpoint {
        container: name.to_owned(),
        annotation: t.record.and_then(Applied::annotation).cloned(),
    };

    let Some(command) = read_command(t.object.item("containers", index)?)? else {
        return Ok(nothing_wrapped(t, no_command(name)));
    };
    let skip = wrapper_len(command);
    // Wrapped before, and up to date: only the record may be missing (a
    // wrapper from an earlier version, or a record taken off by hand).
    if skip > 0
        && command
            .iter()
            .zip(prefix)
            .all(|(item, part)| is_string(item, part))
    {
        return Ok(ModeOutcome {
            record: match t.record {
                Some(recorded) if *recorded == applied => RecordEdit::Keep,
                _ => RecordEdit::Set(applied),
            },
            ..ModeOutcome::unchanged()
        });
    }
    // Wrapped before, by other settings or an older script, only the
    // wrapper part is brought up to date; the original argv stays as it
    // came, item for item, and the script goes in as the JSON made once.
    let mut wrapper = Vec::with_capacity(PREFIX_LEN);
    for (i, part) in prefix.into_iter().enumerate() {
        wrapper.push(match i {
            2 => script_node(),
            _ => Node::from_string(part),
        });
    }
    command.splice(..skip, wrapper);
    Ok(ModeOutcome::applied(applied))
}

/// How the kubelets that may run the Pod on `node_name` read a container's
/// own restart fields: from the Node list with `nodeVersionCheck` (`check`),
/// else not known.
fn kubelets(check: bool, node_name: Option<&str>) -> Kubelets {
    if !check {
        return Kubelets::Unknown("nodeVersionCheck off".into());
    }
    let read = match native_gate::kubelets(node_name) {
        Ok(read) => read,
        Err(_) => return Kubelets::Unknown("Nodes not read".into()),
    };
    if read.all_from(restarts::FIRST_READING_MINOR) {
        Kubelets::ReadRules
    } else if read.all_before(restarts::FIRST_READING_MINOR - 1) {
        Kubelets::IgnoreRules
    } else {
        match read.oldest {
            Some(old) => Kubelets::Unknown(format!("node {}: {}", old.node, old.version)),
            None => Kubelets::Unknown("no Node listed".into()),
        }
    }
}

/// `SCRIPT` as a JSON string, written once per instance rather than
/// escaped again on every request; should serde_json ever refuse it, the
/// script is escaped on each write instead.
fn script_node() -> Node<'static> {
    static JSON: OnceLock<Option<Box<RawValue>>> = OnceLock::new();
    match JSON.get_or_init(|| serde_json::value::to_raw_value(SCRIPT).ok()) {
        Some(raw) => Node::Raw(raw),
        None => Node::from_string(SCRIPT),
    }
}

/// Take the wrapper off `container`'s command, back to the original argv
/// element for element. Nothing is left to take back when the container
/// is gone or its command is no wrapper (its owner wrote it back, by hand
/// or through an applier that owns `command`). Refused when the container
/// is there more than once, its wrapper holds no command, or it is the
/// proxy moved into the init containers with a wrapper: those are not
/// what this mode left.
pub fn undo(container: &str, t: &mut Target) -> Result<Undone, ShapeError> {
    let named: Vec<usize> = t
        .object
        .view()?
        .containers()
        .iter()
        .enumerate()
        // A nameless container is recorded as "", as `apply` names it.
        .filter(|(_, c)| c.name.as_deref().unwrap_or_default() == container)
        .map(|(i, _)| i)
        .collect();
    let index = match named[..] {
        [index] => index,
        [] => return Ok(in_init_containers(container, t)),
        _ => return Ok(Undone::Refused("container not in the pod once".into())),
    };
    let node = t.object.item("containers", index)?;
    match read_command(node)? {
        Some(command) if wrapper_len(command) == command.len() && !command.is_empty() => {
            Ok(Undone::Refused("the wrapper holds no command".into()))
        }
        Some(command) if wrapper_len(command) > 0 => {
            command.drain(..PREFIX_LEN);
            Ok(Undone::Done { changed: true })
        }
        _ => Ok(Undone::Done { changed: false }),
    }
}

/// `undo` of a container that is not among the containers. This mode only
/// wraps containers, but a record may name the proxy (a hand-made or
/// hostile one), and a pass whose undo was refused then still moves the
/// proxy, wrapper and all, into the init containers (nativeSidecar). That
/// edit is kept there too, so the next pass answers as the one that moved
/// it; any other container that is gone, or a proxy without a wrapper,
/// leaves nothing to take back.
fn in_init_containers(container: &str, t: &mut Target) -> Undone {
    if container != t.settings.sidecar_container_name {
        return Undone::Done { changed: false };
    }
    let Ok(view) = t.object.view() else {
        return Undone::Done { changed: false };
    };
    let Some(index) = view
        .init_containers()
        .iter()
        .position(|c| c.name.as_deref() == Some(container))
    else {
        return Undone::Done { changed: false };
    };
    let wrapped = t
        .object
        .item("initContainers", index)
        .and_then(read_command)
        .is_ok_and(|command| command.is_some_and(|c| wrapper_len(c) > 0));
    if wrapped {
        Undone::Refused("the wrapped proxy is a native sidecar".into())
    } else {
        Undone::Done { changed: false }
    }
}

/// Nothing to wrap, and the user is told why; a record of this mode then
/// describes nothing and goes.
fn nothing_wrapped(t: &Target, why: String) -> ModeOutcome {
    ModeOutcome {
        record: match t.record {
            Some(_) => RecordEdit::Remove,
            None => RecordEdit::Keep,
        },
        ..ModeOutcome::unchanged_because(why)
    }
}

/// Said when the pod turns pilot-agent's status server off (`"0"`, or a
/// value that is no port number).
const NO_STATUS_SERVER: &str =
    "quitEndpoint: no status server (status.sidecar.istio.io/port): not wrapped; use nativeSidecar";

/// The URL the wrapper posts: `quitUrl` on the pod's status port when it
/// names one (not 0), else on `quitUrl`'s own port (80 when it names none),
/// written `http://HOST:PORT/PATH`.
pub fn post_url(quit_url: &str, status_port: Option<u16>) -> Cow<'_, str> {
    let Some((host, port, rest)) = quit_url_parts(quit_url) else {
        return quit_url.into();
    };
    let port: Cow<str> = match status_port {
        Some(port) => port.to_string().into(),
        None => port.unwrap_or("80").into(),
    };
    let slash = if rest.starts_with('/') { "" } else { "/" };
    let url = format!("http://{host}:{port}{slash}{rest}");
    if url == quit_url {
        quit_url.into()
    } else {
        url.into()
    }
}

/// Nothing can be wrapped (several application containers: the first to
/// end would stop the proxy under the others; or no quit endpoint), so none
/// is, a wrapper left from an earlier pass (a container added to a CronJob
/// later, a status port turned off) is taken off again, and a record of
/// this mode goes.
fn unwrap_all(
    t: &mut Target,
    apps: &[(usize, String)],
    why: String,
) -> Result<ModeOutcome, ShapeError> {
    let mut outcome = ModeOutcome::unchanged_because(why);
    for &(index, _) in apps {
        let container = t.object.item("containers", index)?;
        let Some(command) = read_command(container)? else {
            continue;
        };
        if wrapper_len(command) > 0 {
            command.drain(..PREFIX_LEN);
            outcome.changed = true;
        }
    }
    if t.record.is_some() {
        outcome.record = RecordEdit::Remove;
    }
    Ok(outcome)
}

/// The container's `command`, each item a string left as it came; `None`
/// when absent, null or empty (the image's entrypoint runs, which
/// admission cannot see).
fn read_command<'n, 'a>(
    container: &'n mut Node<'a>,
) -> Result<Option<&'n mut Vec<Node<'a>>>, ShapeError> {
    let Some(node) = container.get_mut("command")? else {
        return Ok(None);
    };
    if let Some(items) = node.item_count().filter(|&n| n > MAX_ARGV) {
        return Err(ShapeError(format!(
            "command: {items} items, more than the {MAX_ARGV} a process can be started with"
        )));
    }
    let shape = |e: ShapeError| ShapeError(format!("command: {e}"));
    let items = node.items_mut().map_err(shape)?;
    for item in items.iter() {
        if item.read_string().map_err(shape)?.is_none() {
            return Err(ShapeError("command: expected a string, not null".into()));
        }
    }
    Ok((!items.is_empty()).then_some(items))
}

/// `item` is the JSON string `want`.
fn is_string(item: &Node, want: &str) -> bool {
    item.read_string().ok().flatten().is_some_and(|s| s == want)
}

/// How many items of `command` are this mode's wrapper before the
/// original command: `PREFIX_LEN` when it is one of its wrappers, else 0.
pub fn wrapper_len(command: &[Node]) -> usize {
    let is = command.len() >= PREFIX_LEN
        && is_string(&command[0], SHELL)
        && is_string(&command[1], "-c")
        && is_string(&command[3], NAME);
    if is {
        PREFIX_LEN
    } else {
        0
    }
}

fn no_command(name: &str) -> String {
    const TAIL: &str =
        "no command, not wrapped; set command to use quitEndpoint, or use another mode";
    let full = format!("container {name}: {TAIL}");
    if warning::fits(&full) {
        full
    } else {
        TAIL.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{Kind, ANNOTATION_APPLIED, ANNOTATION_QUIT_WRAPPED};
    use crate::object::Object;
    use crate::settings::{Mode, Settings};
    use rstest::rstest;
    use serde_json::{json, Value};

    const URL: &str = crate::settings::DEFAULT_QUIT_URL;
    /// The record of a wrapped container named `app`.
    const RECORD_APP: &str = r#"{"mode":"quitEndpoint","container":"app"}"#;

    fn changed() -> ModeOutcome {
        ModeOutcome {
            changed: true,
            ..ModeOutcome::default()
        }
    }

    fn job(containers: Value) -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "report"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": containers}}}
        })
    }

    fn app(command: Value) -> Value {
        json!({"name": "app", "image": "registry.example/app:1", "command": command})
    }

    /// The mode as the policy applies it, record included.
    fn run_with(kind: Kind, object: &Value, settings: &Settings) -> (ModeOutcome, Value) {
        let text = object.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let mut template = Object::read(kind, &mut node).unwrap().unwrap();
        let (changed, warnings) = crate::modes::change::undo_then_apply(
            &mut template,
            settings,
            Some(Mode::QuitEndpoint),
        )
        .unwrap();
        let outcome = ModeOutcome {
            changed,
            warnings,
            ..ModeOutcome::default()
        };
        (outcome, node.to_value().unwrap())
    }

    fn run(kind: Kind, object: &Value) -> (ModeOutcome, Value) {
        run_with(kind, object, &Settings::default())
    }

    fn wrapped_command(when: &str, original: &[&str]) -> Value {
        let mut v = vec![SHELL, "-c", SCRIPT, NAME, URL, when];
        v.extend_from_slice(original);
        json!(v)
    }

    fn template(kind: Kind, object: &Value) -> &Value {
        kind.template_path().iter().fold(object, |v, k| &v[*k])
    }

    #[rstest]
    #[case::one_app(job(json!([app(json!(["perl", "-e", "print 1"]))])), &["perl", "-e", "print 1"], None)]
    #[case::command_and_args(
        job(json!([{"name": "app", "command": ["python3", "-m"], "args": ["job", "--all"]}])),
        &["python3", "-m"], Some(json!(["job", "--all"]))
    )]
    #[case::variables_stay_data(
        job(json!([{"name": "app", "command": ["/bin/echo", "$(HOME)", "$$(HOME)", "$$", "a b"], "args": ["$(POD_NAME)", "$$(X)", "'\"\\"]}])),
        &["/bin/echo", "$(HOME)", "$$(HOME)", "$$", "a b"], Some(json!(["$(POD_NAME)", "$$(X)", "'\"\\"]))
    )]
    #[case::kube_injected(
        job(json!([app(json!(["run"])), {"name": "istio-proxy", "image": "proxyv2", "args": ["proxy", "sidecar"]}])),
        &["run"], None
    )]
    fn wraps_the_app_container(
        #[case] object: Value,
        #[case] original: &[&str],
        #[case] args: Option<Value>,
    ) {
        let (outcome, out) = run(Kind::Job, &object);
        assert_eq!(outcome, changed());
        let t = template(Kind::Job, &out);
        let c = &t["spec"]["containers"][0];
        assert_eq!(c["command"], wrapped_command(ALWAYS, original));
        assert_eq!(c["args"], args.unwrap_or(Value::Null));
        assert_eq!(t["metadata"]["annotations"][ANNOTATION_APPLIED], RECORD_APP);
        // Everything else as it was; a sidecar is never wrapped.
        let mut back = out.clone();
        back["spec"]["template"]["spec"]["containers"][0]["command"] = json!(original);
        back["spec"]["template"]["metadata"] = Value::Null;
        let mut object = object;
        object["spec"]["template"]["metadata"] = Value::Null;
        assert_eq!(back, object);
        // A second pass changes nothing.
        assert_eq!(run(Kind::Job, &out), (ModeOutcome::unchanged(), out));
    }

    #[rstest]
    #[case::several(
        job(json!([app(json!(["a"])), {"name": "b", "command": ["b"]}])),
        "this pod has 2: not wrapped"
    )]
    #[case::several_beside_sidecar(
        job(json!([app(json!(["a"])), {"name": "istio-proxy"}, {"name": "b", "command": ["b"]}])),
        "this pod has 2"
    )]
    #[case::no_command(job(json!([{"name": "app", "args": ["--all"]}])), "container app: no command, not wrapped; set command")]
    #[case::null_command(job(json!([app(Value::Null)])), "set command to use quitEndpoint, or use another mode")]
    #[case::empty_command(job(json!([app(json!([]))])), "set command to use quitEndpoint")]
    #[case::only_the_sidecar(job(json!([{"name": "istio-proxy", "command": ["x"]}])), "no application container")]
    fn left_unchanged_with_a_warning(#[case] object: Value, #[case] warning: &str) {
        let (outcome, out) = left_with(&object, warning);
        let text = crate::warning::format(&outcome.warnings[0]);
        assert!(!text.ends_with('…'), "{text}");
        assert_eq!(out, object);
    }

    /// The mode run on `object`: nothing changed, one warning, which says
    /// `warning`.
    fn left_with(object: &Value, warning: &str) -> (ModeOutcome, Value) {
        let (outcome, out) = run(Kind::Job, object);
        assert!(!outcome.changed);
        assert_eq!(outcome.warnings.len(), 1);
        assert!(
            outcome.warnings[0].contains(warning),
            "{:?}",
            outcome.warnings
        );
        (outcome, out)
    }

    /// `container` with the members of `own` set.
    fn with_own(mut container: Value, own: &Value) -> Value {
        for (k, v) in own.as_object().into_iter().flatten() {
            container[k] = v.clone();
        }
        container
    }

    #[test]
    fn long_container_name_keeps_the_advice() {
        let name = "a".repeat(63);
        let object = job(json!([{"name": name}]));
        let (outcome, _) = run(Kind::Job, &object);
        let text = crate::warning::format(&outcome.warnings[0]);
        assert!(text.ends_with("or use another mode"), "{text}");
    }

    #[test]
    fn an_app_beside_a_native_sidecar_is_wrapped_all_the_same() {
        let mut object = job(json!([app(json!(["run"]))]));
        object["spec"]["template"]["spec"]["initContainers"] =
            json!([{"name": "istio-init"}, {"name": "istio-proxy", "restartPolicy": "Always"}]);
        let (outcome, out) = run(Kind::Job, &object);
        assert_eq!(outcome, changed());
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["command"],
            wrapped_command(ALWAYS, &["run"])
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["initContainers"],
            object["spec"]["template"]["spec"]["initContainers"]
        );
    }

    #[test]
    fn pod_on_failure_quits_only_after_success() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"team": "a"}},
            "spec": {"restartPolicy": "OnFailure", "containers": [app(json!(["run", "--once"]))]}
        });
        let (outcome, out) = run(Kind::Pod, &object);
        assert_eq!(outcome, changed());
        assert_eq!(
            out["spec"]["containers"][0]["command"],
            wrapped_command(ON_SUCCESS, &["run", "--once"])
        );
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"team": "a", ANNOTATION_APPLIED: RECORD_APP})
        );
        assert_eq!(run(Kind::Pod, &out), (ModeOutcome::unchanged(), out));
    }

    /// `f` run with the host answering the Node list with `nodes` (`None`:
    /// no host, as where the Nodes are not granted).
    fn with_nodes<T>(nodes: Option<&[(&str, &str)]>, f: impl FnOnce() -> T) -> T {
        let list = nodes.map(crate::native_gate::node_list);
        let host: Option<crate::host::NativeHost> = list.map(|list| {
            std::rc::Rc::new(move |_: &str, _: &str, _: &str, _: &[u8]| Ok(list.clone()))
                as crate::host::NativeHost
        });
        let before = crate::host::set_native(host);
        let out = f();
        crate::host::set_native(before);
        out
    }

    const RETRY_42: &str = r#"{"restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}"#;
    const NEW: &[(&str, &str)] = &[("a", "v1.35.0"), ("b", "v1.36.2-eks-1")];
    const OLD: &[(&str, &str)] = &[("a", "v1.33.6"), ("b", "v1.32.9+k3s1")];
    const MIXED: &[(&str, &str)] = &[("a", "v1.35.0"), ("old-1", "v1.34.2")];
    const NONE: &[(&str, &str)] = &[];

    /// A container's own restartPolicy and restartPolicyRules decide when
    /// to quit (`restarts.rs`) where every kubelet reads them alike: a
    /// kubelet before 1.35 reads the Pod's restartPolicy alone, so where
    /// the two readings differ the Node list decides (`nodeVersionCheck`),
    /// and without one nothing is wrapped. Pod `Never`, retried in place on
    /// 42; Pod `OnFailure`, the container `Never`.
    #[rstest]
    #[case::retried_42_new("Never", RETRY_42, true, Some(NEW), Ok("unless:42"))]
    #[case::retried_42_old("Never", RETRY_42, true, Some(OLD), Ok(ALWAYS))]
    #[case::retried_42_mixed("Never", RETRY_42, true, Some(MIXED), Err("(node old-1: v1.34.2)"))]
    #[case::retried_42_unchecked(
        "Never",
        RETRY_42,
        false,
        Some(NEW),
        Err("(nodeVersionCheck off)")
    )]
    #[case::retried_42_not_granted("Never", RETRY_42, true, None, Err("(Nodes not read)"))]
    #[case::retried_42_no_node("Never", RETRY_42, true, Some(NONE), Err("(no Node listed)"))]
    #[case::never_in_on_failure_new(
        "OnFailure",
        r#"{"restartPolicy": "Never"}"#,
        true,
        Some(NEW),
        Ok(ALWAYS)
    )]
    #[case::never_in_on_failure_old(
        "OnFailure",
        r#"{"restartPolicy": "Never"}"#,
        true,
        Some(OLD),
        Ok(ON_SUCCESS)
    )]
    #[case::never_in_on_failure_unchecked(
        "OnFailure",
        r#"{"restartPolicy": "Never"}"#,
        false,
        None,
        Err("ignore app's restartPolicy: not wrapped")
    )]
    #[case::on_failure_in_never_new(
        "Never",
        r#"{"restartPolicy": "OnFailure"}"#,
        true,
        Some(NEW),
        Ok(ON_SUCCESS)
    )]
    #[case::on_failure_in_never_mixed(
        "Never",
        r#"{"restartPolicy": "OnFailure"}"#,
        true,
        Some(MIXED),
        Err("old-1")
    )]
    // One reading: the Node list is not needed.
    #[case::never_in_never("Never", r#"{"restartPolicy": "Never"}"#, false, None, Ok(ALWAYS))]
    fn the_containers_own_restart_rules_decide(
        #[case] pod: &str,
        #[case] own: &str,
        #[case] check: bool,
        #[case] nodes: Option<&[(&str, &str)]>,
        #[case] expected: Result<&str, &str>,
    ) {
        let own: Value = serde_json::from_str(own).unwrap();
        let mut object = job(json!([with_own(app(json!(["run"])), &own)]));
        object["spec"]["template"]["spec"]["restartPolicy"] = json!(pod);
        let settings = Settings {
            node_version_check: check,
            ..Settings::default()
        };
        let (outcome, out) = with_nodes(nodes, || run_with(Kind::Job, &object, &settings));
        match expected {
            Ok(when) => {
                assert_eq!(outcome, changed());
                let c = &out["spec"]["template"]["spec"]["containers"][0];
                assert_eq!(c["command"], wrapped_command(when, &["run"]));
                assert_eq!(c["restartPolicyRules"], own["restartPolicyRules"]);
                let again = with_nodes(nodes, || run_with(Kind::Job, &out, &settings));
                assert_eq!(again, (ModeOutcome::unchanged(), out));
            }
            Err(warning) => {
                assert!(!outcome.changed);
                assert_eq!(out, object);
                assert_eq!(outcome.warnings.len(), 1);
                let text = &outcome.warnings[0];
                assert!(text.contains(warning), "{text}");
                assert!(
                    text.contains("kubelets < 1.35 ignore app's restartPolicy"),
                    "{text}"
                );
                assert!(crate::warning::fits(text), "{text}");
            }
        }
    }

    /// On a Pod of its own node (`spec.nodeName`), that node's kubelet
    /// alone decides, as for nativeSidecar.
    #[test]
    fn a_pod_on_its_own_node_is_read_by_that_kubelet() {
        let own: Value = serde_json::from_str(RETRY_42).unwrap();
        let mut object = job(json!([with_own(app(json!(["run"])), &own)]));
        let settings = Settings {
            node_version_check: true,
            ..Settings::default()
        };
        for (node, when) in [("a", Some("unless:42")), ("old-1", None)] {
            object["spec"]["template"]["spec"]["nodeName"] = json!(node);
            let (outcome, out) =
                with_nodes(Some(MIXED), || run_with(Kind::Job, &object, &settings));
            let command = &out["spec"]["template"]["spec"]["containers"][0]["command"];
            match when {
                Some(when) => assert_eq!(*command, wrapped_command(when, &["run"])),
                None => {
                    assert_eq!(*command, json!(["run"]));
                    assert!(
                        outcome.warnings[0].contains("old-1: v1.34.2"),
                        "{outcome:?}"
                    );
                }
            }
        }
    }

    /// Restarted after every exit, or by rules the policy cannot read: no
    /// exit is a safe time to quit, so nothing is wrapped and a wrapper an
    /// earlier pass left comes off.
    #[rstest]
    #[case::always(json!({"restartPolicy": "Always"}), "is restarted after every exit")]
    #[case::unknown_action(
        json!({"restartPolicy": "Never", "restartPolicyRules": [
            {"action": "Pause", "exitCodes": {"operator": "In", "values": [1]}}]}),
        "has restartPolicyRules it cannot read"
    )]
    fn no_safe_time_to_quit_wraps_nothing(#[case] own: Value, #[case] warning: &str) {
        let mut container = with_own(app(json!(["run", "$(X)"])), &own);
        let object = job(json!([container.clone()]));
        let (outcome, out) = left_with(&object, warning);
        assert!(
            outcome.warnings[0].contains("container app "),
            "{:?}",
            outcome.warnings
        );
        assert_eq!(out, object);

        container["command"] = wrapped_command(ALWAYS, &["run", "$(X)"]);
        let mut wrapped = job(json!([container]));
        wrapped["spec"]["template"]["metadata"] =
            json!({"annotations": {ANNOTATION_APPLIED: RECORD_APP}});
        let (outcome, out) = run(Kind::Job, &wrapped);
        assert!(outcome.changed);
        assert_eq!(out, object);
    }

    #[test]
    fn cronjob_template_is_wrapped() {
        let object = json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [app(json!(["run"]))]
            }}}}}
        });
        let (outcome, out) = run(Kind::CronJob, &object);
        assert!(outcome.changed);
        let t = template(Kind::CronJob, &out);
        assert_eq!(
            t["spec"]["containers"][0]["command"],
            wrapped_command(ON_SUCCESS, &["run"])
        );
        assert_eq!(t["metadata"]["annotations"][ANNOTATION_APPLIED], RECORD_APP);
    }

    #[test]
    fn an_old_wrapper_is_refreshed_not_wrapped_twice() {
        let mut old = wrapped_command(ALWAYS, &["run", "x"]);
        old[2] = json!("# an older script");
        old[4] = json!("http://localhost:15020/quitquitquit");
        let mut object = job(json!([app(old)]));
        object["spec"]["template"]["metadata"] =
            json!({"annotations": {ANNOTATION_QUIT_WRAPPED: "app"}});
        let (outcome, out) = run(Kind::Job, &object);
        assert!(outcome.changed);
        let c = &out["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"], wrapped_command(ALWAYS, &["run", "x"]));
    }

    #[test]
    fn missing_annotation_is_added_to_a_wrapped_container() {
        let object = job(json!([app(wrapped_command(ALWAYS, &["run"]))]));
        let (outcome, out) = run(Kind::Job, &object);
        assert!(outcome.changed);
        assert_eq!(
            out["spec"]["template"]["metadata"]["annotations"],
            json!({ANNOTATION_APPLIED: RECORD_APP})
        );
        assert_eq!(
            out["spec"]["template"]["spec"],
            object["spec"]["template"]["spec"]
        );
    }

    #[test]
    fn quit_url_comes_from_the_settings() {
        let settings = Settings {
            quit_url: "http://[::1]:15020/quitquitquit".into(),
            ..Settings::default()
        };
        let (_, out) = run_with(Kind::Job, &job(json!([app(json!(["run"]))])), &settings);
        let c = &out["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"][4], "http://[::1]:15020/quitquitquit");
    }

    /// pilot-agent listens on the pod's own status port; the policy writes
    /// the URL whole, port and path included.
    #[rstest]
    #[case::default(URL, None, URL)]
    #[case::status_port(URL, Some(15120), "http://127.0.0.1:15120/quitquitquit")]
    #[case::no_port(
        "http://localhost/quitquitquit",
        None,
        "http://localhost:80/quitquitquit"
    )]
    #[case::no_port_status(
        "http://localhost/quitquitquit",
        Some(15021),
        "http://localhost:15021/quitquitquit"
    )]
    #[case::v6(
        "http://[::1]:15020/quitquitquit",
        Some(15121),
        "http://[::1]:15121/quitquitquit"
    )]
    #[case::no_path("http://127.0.0.1:15020", None, "http://127.0.0.1:15020/")]
    #[case::query_only("http://127.0.0.6:15020?x=1", None, "http://127.0.0.6:15020/?x=1")]
    #[case::scheme_case("HTTP://127.0.0.1:15020/q", None, "http://127.0.0.1:15020/q")]
    fn the_url_is_the_pods_status_port(
        #[case] quit_url: &str,
        #[case] status_port: Option<u16>,
        #[case] posted: &str,
    ) {
        assert_eq!(post_url(quit_url, status_port), posted);
    }

    /// `status.sidecar.istio.io/port` where Istio reads it: on the
    /// template, else (kube-injected) on the Job's own metadata.
    #[rstest]
    #[case::template(&["spec", "template", "metadata"])]
    #[case::jobs_own(&["metadata"])]
    fn wraps_with_the_pods_status_port(#[case] at: &[&str]) {
        let mut object = job(json!([app(json!(["run"]))]));
        let meta = at.iter().fold(&mut object, |v, k| &mut v[*k]);
        meta["annotations"] = json!({"status.sidecar.istio.io/port": "15120"});
        let (outcome, out) = run(Kind::Job, &object);
        assert_eq!(outcome, changed());
        let c = &out["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["command"][4], "http://127.0.0.1:15120/quitquitquit");
        assert_eq!(run(Kind::Job, &out), (ModeOutcome::unchanged(), out));
    }

    /// Port "0": pilot-agent has no status server, so nothing can end the
    /// proxy this way: nothing is wrapped, an earlier wrapper comes off and
    /// the record goes.
    #[test]
    fn status_port_zero_wraps_nothing_and_takes_a_wrapper_off() {
        let annotations = json!({"status.sidecar.istio.io/port": "0"});
        let mut object = job(json!([app(json!(["run", "$(X)"]))]));
        object["spec"]["template"]["metadata"] = json!({"annotations": annotations});
        let (outcome, out) = run(Kind::Job, &object);
        assert!(!outcome.changed);
        assert_eq!(outcome.warnings, [NO_STATUS_SERVER]);
        assert!(crate::warning::fits(NO_STATUS_SERVER));
        assert_eq!(out, object);

        let mut wrapped = job(json!([app(wrapped_command(ALWAYS, &["run", "$(X)"]))]));
        wrapped["spec"]["template"]["metadata"] = json!({"annotations": {
            "status.sidecar.istio.io/port": "0", ANNOTATION_APPLIED: RECORD_APP
        }});
        let (outcome, out) = run(Kind::Job, &wrapped);
        assert!(outcome.changed);
        assert_eq!(outcome.warnings, [NO_STATUS_SERVER]);
        assert_eq!(out, object);
    }

    #[test]
    fn a_second_app_container_takes_an_old_wrapper_off() {
        let mut object = job(json!([
            app(wrapped_command(ALWAYS, &["run", "$(X)"])),
            {"name": "b", "command": ["b"]}
        ]));
        object["spec"]["template"]["metadata"] =
            json!({"annotations": {ANNOTATION_QUIT_WRAPPED: "app", "keep": "me"}});
        let (outcome, out) = run(Kind::Job, &object);
        assert!(outcome.changed);
        assert_eq!(outcome.warnings.len(), 1);
        let t = &out["spec"]["template"];
        assert_eq!(
            t["spec"]["containers"][0]["command"],
            json!(["run", "$(X)"])
        );
        assert_eq!(t["spec"]["containers"][1]["command"], json!(["b"]));
        assert_eq!(t["metadata"]["annotations"], json!({"keep": "me"}));
        assert!(!run(Kind::Job, &out).0.changed);
    }

    /// `apply` on `object` (a Job) with the default settings and no record.
    fn apply_to(object: &serde_json::Value) -> Result<ModeOutcome, ShapeError> {
        let text = object.to_string();
        let raw: &serde_json::value::RawValue = serde_json::from_str(&text).unwrap();
        let mut node = Node::raw(raw);
        let mut template = Object::read(Kind::Job, &mut node).unwrap().unwrap();
        let settings = Settings::default();
        let mut target = Target {
            object: &mut template,
            settings: &settings,
            record: None,
        };
        apply(&mut target)
    }

    #[test]
    fn wrong_command_type_is_a_shape_error() {
        assert!(apply_to(&job(json!([app(json!("run"))]))).is_err());
    }

    /// A command no process could be started with is refused before its
    /// items are read; one item fewer is wrapped.
    #[test]
    fn a_command_longer_than_a_process_takes_is_a_shape_error() {
        let too_long = app(json!(vec![""; MAX_ARGV + 1]));
        let err = apply_to(&job(json!([too_long]))).unwrap_err();
        assert!(err.0.contains("more than the"), "{err}");
        let longest = app(json!(vec![""; MAX_ARGV]));
        assert!(apply_to(&job(json!([longest]))).unwrap().changed);
    }

    /// Kubernetes expands `$(NAME)` and turns `$$` into `$` in command and
    /// args: the elements the policy adds must hold neither.
    #[test]
    fn added_elements_survive_kubernetes_expansion() {
        for s in [
            SHELL,
            "-c",
            SCRIPT,
            NAME,
            URL,
            ALWAYS,
            ON_SUCCESS,
            "unless:1,2",
            "only:0",
        ] {
            assert!(!s.contains("$(") && !s.contains("$$"), "{s}");
        }
        assert!(SCRIPT.is_ascii());
    }

    #[rstest]
    #[case::ours(&["/bin/sh", "-c", "x", NAME, URL, ALWAYS, "run"], Some(1))]
    #[case::user_shell(&["/bin/sh", "-c", "run", "name", "a", "b", "c"], None)]
    #[case::short(&["/bin/sh", "-c", "x", NAME], None)]
    #[case::plain(&["run"], None)]
    fn recognises_its_own_wrapper(#[case] command: &[&str], #[case] original: Option<usize>) {
        let command: Vec<Node> = command.iter().map(|s| Node::from_string(*s)).collect();
        let skip = wrapper_len(&command);
        assert_eq!((skip > 0).then(|| command.len() - skip), original);
    }
}
