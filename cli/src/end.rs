//! `end-stuck`: today's stuck Pods ended on request. Each is asked to quit
//! through its own pilot-agent, `kubectl exec -n NS POD -c istio-proxy --
//! pilot-agent request --debug-port=<its status port> POST quitquitquit`
//! (the command of docs/troubleshooting.md), which ends the proxy and lets the Job complete.
//!
//! Every command is printed first, with the Pod's real namespace and name;
//! nothing runs without `--yes`. Before a command runs, the Pod is read
//! again (`kubectl get pod`): one that is no longer stuck (it ended, was
//! deleted, its app restarted) is left alone. Needs RBAC `create` on
//! `pods/exec` (and `get` on `pods`) in the Pods' namespaces.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stuck::{human, quit_command, stuck, Stuck};

/// A Pod found stuck in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub pod: String,
    pub stuck: Stuck,
}

/// `object` as a stuck Pod, if it is one.
pub fn target_of(
    object: &Value,
    sidecar: &str,
    now: i64,
    default_namespace: &str,
) -> Option<Target> {
    let is_pod = object["kind"] == "Pod" && object["apiVersion"] == "v1";
    if !is_pod {
        return None;
    }
    let stuck = stuck(object, sidecar, now)?;
    let metadata = &object["metadata"];
    Some(Target {
        namespace: metadata["namespace"]
            .as_str()
            .unwrap_or(default_namespace)
            .to_owned(),
        pod: metadata["name"].as_str()?.to_owned(),
        stuck,
    })
}

/// How the commands are run.
pub struct Ender {
    pub program: PathBuf,
    pub context: Option<String>,
    pub sidecar: String,
    pub now: i64,
    /// Seconds a command may take before it is stopped.
    pub timeout: u64,
}

/// What became of one stuck Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Printed, not run (no `--yes`).
    Shown,
    /// Run; pilot-agent answered.
    Ended,
    /// Read again, no longer stuck: left alone, and why.
    NoLongerStuck(String),
    /// No status server (`status.sidecar.istio.io/port: "0"`): no quit endpoint.
    NoStatusServer,
    Failed(String),
}

impl Ender {
    /// The command for `target`, as printed and as run (`kubectl` first).
    pub fn command(&self, target: &Target) -> Option<Vec<String>> {
        let port = target.stuck.status_port?;
        let mut command = quit_command(&target.namespace, &target.pod, &self.sidecar, port);
        if let Some(context) = &self.context {
            command.insert(1, format!("--context={context}"));
        }
        Some(command)
    }

    /// Ends `target` if it is still stuck (`run`), or only says how.
    pub fn end(&self, target: &Target, run: bool) -> Outcome {
        let Some(command) = self.command(target) else {
            return Outcome::NoStatusServer;
        };
        if !run {
            return Outcome::Shown;
        }
        match self.still_stuck(target) {
            Ok(Some(_)) => {}
            Ok(None) => return Outcome::NoLongerStuck("its status no longer says stuck".into()),
            // Deleted meanwhile.
            Err(why) if why.contains("(NotFound)") => return Outcome::NoLongerStuck(why),
            Err(why) => return Outcome::Failed(why),
        }
        match self.run(&command[1..]) {
            Ok(_) => Outcome::Ended,
            Err(why) => Outcome::Failed(why),
        }
    }

    /// The Pod as the cluster has it now: still stuck?
    fn still_stuck(&self, target: &Target) -> Result<Option<Stuck>, String> {
        let mut args = vec![
            "get".to_owned(),
            "pod".to_owned(),
            "-n".to_owned(),
            target.namespace.clone(),
            target.pod.clone(),
            "-o".to_owned(),
            "json".to_owned(),
        ];
        if let Some(context) = &self.context {
            args.insert(0, format!("--context={context}"));
        }
        let out = self
            .run(&args)
            .map_err(|why| format!("not read again ({why})"))?;
        let pod: Value = serde_json::from_str(&out)
            .map_err(|e| format!("kubectl get pod answered no Pod: {e}"))?;
        Ok(stuck(&pod, &self.sidecar, self.now))
    }

    /// `kubectl args...`, its stdout; stopped after `timeout` seconds.
    fn run(&self, args: &[String]) -> Result<String, String> {
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() > Duration::from_secs(self.timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no answer in {} s, stopped", self.timeout));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e.to_string()),
            }
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        Err(format!("kubectl failed ({}): {said}", out.status))
    }
}

/// The report's line for an outcome.
pub fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Shown => "not run (add --yes)".into(),
        Outcome::Ended => "ended: pilot-agent was asked to quit".into(),
        Outcome::NoLongerStuck(why) => format!("left alone: no longer stuck ({why})"),
        Outcome::NoStatusServer => {
            "no status server (status.sidecar.istio.io/port \"0\"): delete the Pod to end it".into()
        }
        Outcome::Failed(why) => format!("failed: {why}"),
    }
}

/// `2d14h`, for the listing.
pub fn stuck_for(target: &Target) -> String {
    human(target.stuck.seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_stuck_pods_are_targets_with_their_own_port() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "batch", "annotations": {"status.sidecar.istio.io/port": "15030"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "app"}, {"name": "istio-proxy"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "app", "state": {"terminated": {"exitCode": 0, "finishedAt": "2025-12-08T13:20:00Z"}}},
                {"name": "istio-proxy", "state": {"running": {}}}]}});
        let target = target_of(&pod, "istio-proxy", 0, "default").unwrap();
        let ender = Ender {
            program: "kubectl".into(),
            context: Some("prod".into()),
            sidecar: "istio-proxy".into(),
            now: 0,
            timeout: 5,
        };
        assert_eq!(
            ender.command(&target).unwrap().join(" "),
            "kubectl --context=prod exec -n batch p -c istio-proxy -- pilot-agent request --debug-port=15030 POST quitquitquit"
        );
        let mut job = pod.clone();
        job["kind"] = json!("Job");
        assert_eq!(target_of(&job, "istio-proxy", 0, "default"), None);
    }
}
