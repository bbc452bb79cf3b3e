//! `proxy.istio.io/config` past the reader's budget, through the policy's
//! own entry point: an alias bomb or deep nesting is answered at once,
//! allowed, with a warning, and nothing is changed, for the merge and for
//! the undo a (forged) record of an exitOnJobCompletion edit asks for under
//! another mode. Work is held to the budget by kube-yaml's own tests
//! (nodes counted); here, the answer.

use serde_json::{json, Value};

const CASE: &str = "test_data/cases/cronjob-yaml-proxy-config-exit/request.json";

fn request(config: &str, record: Option<&str>) -> Value {
    let text = std::fs::read_to_string(CASE).unwrap();
    let mut request: Value = serde_json::from_str(&text).unwrap();
    let annotations = request
        .pointer_mut("/object/spec/jobTemplate/spec/template/metadata/annotations")
        .unwrap();
    annotations["proxy.istio.io/config"] = json!(config);
    if let Some(record) = record {
        annotations["istio-job-sidecar/applied"] = json!(record);
    }
    request
}

fn answer(request: &Value, mode: &str) -> Value {
    let payload = json!({"request": request, "settings": {"mode": mode}});
    let out = istio_job_sidecar_policy::validate(&serde_json::to_vec(&payload).unwrap()).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn alias_bomb(bytes: usize) -> String {
    let k = bytes / 4;
    format!(
        "a: &a [{}]\nb: [{}]\n",
        vec!["1"; k].join(","),
        vec!["*a"; k / 2].join(",")
    )
}

fn hostile() -> Vec<String> {
    vec![
        alias_bomb(32 * 1024),
        format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("a:\n{}x\n", "- ".repeat(100_000)),
    ]
}

#[test]
fn the_merge_reads_nothing_past_the_budget() {
    for config in hostile() {
        let answer = answer(&request(&config, None), "exitOnJobCompletion");
        assert_eq!(answer["accepted"], true);
        assert_eq!(answer["mutated_object"], Value::Null, "{:.40}", config);
        let warnings = answer["warnings"].as_array().unwrap();
        let warning = warnings[0].as_str().unwrap();
        assert!(
            warning.contains("proxy.istio.io/config: too large to read (")
                && warning.ends_with("); left unchanged")
                && warning.chars().count() < 120,
            "{warning:?}"
        );
    }
}

#[test]
fn the_undo_reads_nothing_past_the_budget() {
    // A record as an exitOnJobCompletion edit writes it, forged onto a
    // config the policy never wrote: the undo under another mode refuses.
    let record = r#"{"mode":"exitOnJobCompletion","inserted":"\nexitOnJobCompletion: true"}"#;
    for config in hostile() {
        let config = format!("{config}\nexitOnJobCompletion: true");
        let request = request(&config, Some(record));
        let answer = answer(&request, "quitEndpoint");
        assert_eq!(answer["accepted"], true);
        let warnings: Vec<&str> = answer["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let warning = warnings
            .iter()
            .find(|w| w.contains("too large to read"))
            .unwrap_or_else(|| panic!("{warnings:?}"));
        assert!(
            warning.contains("edit kept: proxy.istio.io/config: too large to read"),
            "{warning}"
        );
        assert!(
            warning.chars().count() <= 120 && !warning.ends_with('…'),
            "{warning}"
        );
        // Whatever else the mode does, the config stays as it came.
        if let Some(patched) = answer["mutated_object"].as_object() {
            let now = &patched["spec"]["jobTemplate"]["spec"]["template"]["metadata"]
                ["annotations"]["proxy.istio.io/config"];
            assert_eq!(now, &json!(config));
        }
    }
}
