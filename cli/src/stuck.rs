//! Pods stuck right now because of the sidecar, read from their status as
//! the Kubernetes API reference describes it (`PodStatus`):
//! `containerStatuses` has one `ContainerStatus` per regular container,
//! `initContainerStatuses` one per init container (a native sidecar among
//! them); each `state` holds exactly one of `waiting`, `running`
//! (`startedAt`) or `terminated` (`exitCode`, `finishedAt`, `reason`).
//!
//! A Pod is stuck when it is still `Running` (or has no phase yet), every
//! application container (every regular container but the sidecar) has
//! terminated for good, and the sidecar still runs. With `restartPolicy:
//! OnFailure` a container that failed is restarted by the kubelet, so it has
//! terminated for good only with exit code 0; with `Always` (the default)
//! every container is restarted: a long-running Pod between a crash and its
//! restart is never stuck.
//!
//! A stuck Pod is ended by asking its pilot-agent to quit, on the Pod's
//! status port (docs/facts.md, "The journey of a workload"):
//! `status.sidecar.istio.io/port` when the Pod sets it, else the proxy's
//! `PROXY_CONFIG` `statusPort`, else the port its drain hook names, else
//! the mesh default 15020; `"0"` means no status server.

pub use kube_model::time::{format_rfc3339, parse_rfc3339};
use serde_json::Value;

/// A Pod whose work is done while its sidecar runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// Where the running sidecar is: `containers` (classic) or
    /// `initContainers` (a native sidecar the kubelet should have stopped).
    pub sidecar_in: &'static str,
    /// The latest `finishedAt` of the application containers, as written.
    pub finished_at: String,
    /// Seconds from then to now (0 if the clock is behind).
    pub seconds: i64,
    /// pilot-agent's status port, where `/quitquitquit` is served (`None`:
    /// the Pod turned the status server off).
    pub status_port: Option<u16>,
}

/// The mesh's default status port.
pub const STATUS_PORT: u16 = 15020;

/// The command that ends a stuck Pod now: its pilot-agent asked to quit,
/// through `kubectl exec` in the sidecar (as docs/troubleshooting.md says).
pub fn quit_command(namespace: &str, pod: &str, sidecar: &str, port: u16) -> Vec<String> {
    [
        "kubectl",
        "exec",
        "-n",
        namespace,
        pod,
        "-c",
        sidecar,
        "--",
        "pilot-agent",
        "request",
        &format!("--debug-port={port}"),
        "POST",
        "quitquitquit",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The status port of `pod`, whose proxy is the container `sidecar`.
pub fn status_port(pod: &Value, sidecar: &str) -> Option<u16> {
    let annotation = &pod["metadata"]["annotations"]["status.sidecar.istio.io/port"];
    if let Some(text) = annotation.as_str() {
        return text.trim().parse::<u16>().ok().filter(|p| *p != 0);
    }
    let spec = &pod["spec"];
    let proxy = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| spec[*list].as_array())
        .flatten()
        .find(|c| c["name"] == sidecar);
    let Some(proxy) = proxy else {
        return Some(STATUS_PORT);
    };
    let config = proxy["env"]
        .as_array()
        .and_then(|env| env.iter().find(|e| e["name"] == "PROXY_CONFIG"))
        .and_then(|e| e["value"].as_str())
        .and_then(|text| crate::yaml::parse(text).ok().flatten())
        .map(|(_, value)| value);
    if let Some(port) = config.as_ref().map(|c| &c["statusPort"]) {
        match port {
            Value::Number(n) => {
                return n
                    .as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p != 0)
            }
            Value::String(s) => return s.parse::<u16>().ok().filter(|p| *p != 0),
            _ => {}
        }
    }
    let drain = proxy["lifecycle"]["preStop"]["exec"]["command"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|arg| arg.strip_prefix("--debug-port="))
        .and_then(|p| p.parse::<u16>().ok());
    Some(drain.unwrap_or(STATUS_PORT))
}

/// Whether `pod` is stuck now (`now`: seconds since the epoch), with
/// `sidecar` the container name the policy's settings give the proxy.
pub fn stuck(pod: &Value, sidecar: &str, now: i64) -> Option<Stuck> {
    let status = &pod["status"];
    if pod["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    match status["phase"].as_str() {
        None | Some("Running") => {}
        Some(_) => return None,
    }
    let on_failure = match pod["spec"]["restartPolicy"].as_str() {
        Some("Never") => false,
        Some("OnFailure") => true,
        // Always, or unset (the API server's default): restarted, never stuck.
        _ => return None,
    };
    let statuses = |key: &str| {
        status[key]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let running = |list: &[Value]| {
        list.iter()
            .any(|s| s["name"] == sidecar && s["state"]["running"].is_object())
    };
    let sidecar_in = if running(statuses("containerStatuses")) {
        "containers"
    } else if running(statuses("initContainerStatuses")) {
        "initContainers"
    } else {
        return None;
    };
    let apps: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .filter(|name| *name != sidecar)
        .collect();
    if apps.is_empty() {
        return None;
    }
    let mut latest: Option<(i64, String)> = None;
    for app in apps {
        let state = statuses("containerStatuses")
            .iter()
            .find(|s| s["name"] == app)
            .map(|s| &s["state"]["terminated"])?;
        if !state.is_object() || (on_failure && state["exitCode"] != 0) {
            return None;
        }
        let text = state["finishedAt"].as_str().unwrap_or_default();
        let at = parse_rfc3339(text).unwrap_or(now);
        if latest.as_ref().is_none_or(|(t, _)| at > *t) {
            latest = Some((at, text.to_owned()));
        }
    }
    let (at, finished_at) = latest?;
    Some(Stuck {
        sidecar_in,
        finished_at,
        seconds: (now - at).max(0),
        status_port: status_port(pod, sidecar),
    })
}

/// A duration as people read it: `45s`, `12m`, `3h12m`, `4d2h`.
pub fn human(seconds: i64) -> String {
    let (d, h, m) = (
        seconds / 86_400,
        (seconds % 86_400) / 3600,
        (seconds % 3600) / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, 0) => format!("{h}h"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_read_as_people_read_them() {
        assert_eq!(human(3 * 3600 + 12 * 60 + 5), "3h12m");
        assert_eq!(human(2 * 86_400 + 3600), "2d1h");
        assert_eq!(human(59), "59s");
    }

    fn pod(phase: &str, app: Value, proxy_in: &str) -> Value {
        let proxy = json!({"name": "istio-proxy", "state": {"running": {"startedAt": "2025-12-08T13:00:00Z"}}});
        let app = json!({"name": "app", "state": app});
        let (containers, inits) = match proxy_in {
            "containers" => (json!([app, proxy]), json!([])),
            _ => (json!([app]), json!([proxy])),
        };
        json!({"kind": "Pod", "spec": {"restartPolicy": "Never", "containers": [{"name": "app"}, {"name": "istio-proxy"}]},
               "status": {"phase": phase, "containerStatuses": containers, "initContainerStatuses": inits}})
    }

    #[test]
    fn a_pod_is_stuck_when_its_apps_ended_and_the_sidecar_runs() {
        let done = json!({"terminated": {"exitCode": 0, "finishedAt": "2025-12-08T13:20:00Z"}});
        let now = parse_rfc3339("2025-12-08T16:32:00Z").unwrap();
        let stuck = stuck(
            &pod("Running", done.clone(), "containers"),
            "istio-proxy",
            now,
        )
        .unwrap();
        assert_eq!(
            (stuck.sidecar_in, stuck.seconds),
            ("containers", 3 * 3600 + 12 * 60)
        );
        assert!(super::stuck(
            &pod("Succeeded", done.clone(), "containers"),
            "istio-proxy",
            now
        )
        .is_none());
        let running = json!({"running": {"startedAt": "2025-12-08T13:20:00Z"}});
        assert!(super::stuck(&pod("Running", running, "containers"), "istio-proxy", now).is_none());
        let native = super::stuck(
            &pod("Running", done.clone(), "initContainers"),
            "istio-proxy",
            now,
        )
        .unwrap();
        assert_eq!(native.sidecar_in, "initContainers");
        let mut long_running = pod("Running", done, "containers");
        long_running["spec"]["restartPolicy"] = json!("Always");
        assert!(super::stuck(&long_running, "istio-proxy", now).is_none());
        long_running["spec"]
            .as_object_mut()
            .unwrap()
            .remove("restartPolicy");
        assert!(super::stuck(&long_running, "istio-proxy", now).is_none());
    }

    #[test]
    fn the_status_port_is_the_pods_own() {
        let mut pod = json!({"metadata": {}, "spec": {"containers": [{"name": "istio-proxy",
            "env": [{"name": "PROXY_CONFIG", "value": "{\"statusPort\": 15030}\n"}]}]}});
        assert_eq!(status_port(&pod, "istio-proxy"), Some(15030));
        pod["metadata"]["annotations"] = json!({"status.sidecar.istio.io/port": "15040"});
        assert_eq!(status_port(&pod, "istio-proxy"), Some(15040));
        pod["metadata"]["annotations"] = json!({"status.sidecar.istio.io/port": "0"});
        assert_eq!(status_port(&pod, "istio-proxy"), None);
        let native = json!({"spec": {"initContainers": [{"name": "istio-proxy", "lifecycle": {"preStop": {"exec":
            {"command": ["pilot-agent", "request", "--debug-port=15021", "POST", "drain"]}}}}]}});
        assert_eq!(status_port(&native, "istio-proxy"), Some(15021));
        assert_eq!(status_port(&json!({}), "istio-proxy"), Some(STATUS_PORT));
    }
}
