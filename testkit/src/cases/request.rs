//! What a case sends the policy: the AdmissionRequest of an object as the
//! API server writes it (a CREATE or an UPDATE, in a namespace), and the
//! policy's settings.

use super::json::{obj, strs, Json};

/// An AdmissionRequest of `obj`, as the API server writes it.
pub(super) fn request(object: Json, operation: &str, old: Option<Json>, namespace: &str) -> Json {
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    let (group, version, resource) = match kind.as_str() {
        "Job" => ("batch", "v1", "jobs"),
        "CronJob" => ("batch", "v1", "cronjobs"),
        "Pod" => ("", "v1", "pods"),
        "Deployment" => ("apps", "v1", "deployments"),
        other => panic!("no resource for kind {other}"),
    };
    let gvk = obj([
        ("group", group.into()),
        ("version", version.into()),
        ("kind", kind.as_str().into()),
    ]);
    let gvr = obj([
        ("group", group.into()),
        ("version", version.into()),
        ("resource", resource.into()),
    ]);
    let options = match operation {
        "CREATE" => Some("CreateOptions"),
        "UPDATE" => Some("UpdateOptions"),
        _ => None,
    };
    let name = object["metadata"]["name"].clone();
    obj([
        ("uid", "1299d386-525b-4032-98ae-1949f69f9cfc".into()),
        ("kind", gvk.clone()),
        ("resource", gvr.clone()),
        ("requestKind", gvk),
        ("requestResource", gvr),
        ("name", if name == Json::Null { "".into() } else { name }),
        ("namespace", namespace.into()),
        ("operation", operation.into()),
        (
            "userInfo",
            obj([
                ("username", "kubernetes-admin".into()),
                ("groups", strs(&["system:masters", "system:authenticated"])),
            ]),
        ),
        ("object", object),
        ("oldObject", old.unwrap_or(Json::Null)),
        ("dryRun", Json::Bool(false)),
        (
            "options",
            options.map_or(Json::Null, |kind| {
                obj([
                    ("kind", kind.into()),
                    ("apiVersion", "meta.k8s.io/v1".into()),
                ])
            }),
        ),
    ])
}

pub(super) fn create(obj: Json) -> Json {
    request(obj, "CREATE", None, "default")
}

pub(super) fn create_in(obj: Json, namespace: &str) -> Json {
    request(obj, "CREATE", None, namespace)
}

pub(super) fn update(obj: Json, old: Json) -> Json {
    request(obj, "UPDATE", Some(old), "default")
}

pub(super) fn settings(mode: &str) -> Json {
    obj([("mode", mode.into())])
}

pub(super) fn none() -> Json {
    Json::Obj(Vec::new())
}

pub(super) fn exit() -> Json {
    settings("exitOnJobCompletion")
}

pub(super) fn quit() -> Json {
    settings("quitEndpoint")
}
