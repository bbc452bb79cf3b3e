//! The model's reading of YAML (`go_yaml`) on every case of the corpus
//! (`test_data/yaml/`): what go-yaml v2's, sigs.k8s.io/yaml's and Istio's
//! own tests state, and the shapes users write in `proxy.istio.io/config`.

use kube_model::go_yaml::{self, Error};
use std::path::Path;

#[test]
fn the_model_reads_every_case_as_istio_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test_data/yaml");
    let cases = go_yaml::corpus(&dir).expect("the corpus");
    assert!(cases.len() > 200, "the corpus is read: {}", cases.len());
    let mut wrong = Vec::new();
    for case in &cases {
        let got = go_yaml::yaml_to_json(&case.yaml);
        let right = match (&got, &case.json) {
            (Err(Error::Yaml(_) | Error::Json(_)), None) => true,
            (Ok(value), Some(json)) => {
                go_yaml::as_istio_reads(value) == go_yaml::as_istio_reads(json)
            }
            _ => false,
        };
        if !right {
            wrong.push(format!(
                "{}: {:?}\n  expected {:?}\n  model    {got:?}",
                case.name, case.yaml, case.json
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
