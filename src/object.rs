//! The object being edited, through one handle: its pod template (and the
//! metadata that holds Istio's injection status, where that is elsewhere)
//! edited in place,
//! and the view of it (`Workload`) read again after every edit before it
//! is used, so that no decision ever reads a view older than the object.
//!
//! Every write of the policy goes through here; `workload.rs` only reads.

use crate::json::{Node, ShapeError};
use crate::names::Kind;
use crate::workload::{StatusAt, Workload};

pub struct Object<'t, 'a> {
    kind: Kind,
    object: &'t mut Node<'a>,
    view: Workload<'a>,
    /// Edited since `view` was read.
    stale: bool,
}

impl<'t, 'a> Object<'t, 'a> {
    /// The handle on `object`, a handled object of `kind`. `Ok(None)` when
    /// it has no pod template; an error names the field of the wrong type.
    pub fn read(kind: Kind, object: &'t mut Node<'a>) -> Result<Option<Self>, String> {
        Ok(Workload::read(kind, object)?.map(|view| Object {
            kind,
            object,
            view,
            stale: false,
        }))
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The view of the object as it is now.
    pub fn view(&mut self) -> Result<&Workload<'a>, ShapeError> {
        if self.stale {
            self.view = Workload::read(self.kind, self.object)
                .map_err(ShapeError)?
                .ok_or_else(|| ShapeError("no pod template".into()))?;
            self.stale = false;
        }
        Ok(&self.view)
    }

    /// The pod template (`{metadata, spec}`; for a Pod, the Pod), to be
    /// edited.
    pub fn node(&mut self) -> Result<&mut Node<'a>, ShapeError> {
        self.stale = true;
        let kind = self.kind;
        self.object
            .path_mut(kind.template_path())?
            .ok_or_else(|| ShapeError(format!("{} has no pod template", kind.as_str())))
    }

    /// The template's `spec`, to be edited.
    pub fn spec(&mut self) -> Result<&mut Node<'a>, ShapeError> {
        self.node()?
            .get_mut("spec")?
            .ok_or_else(|| ShapeError("pod template has no spec".into()))
    }

    /// The node whose metadata holds the injection status, to be edited.
    pub fn status_holder(&mut self, at: StatusAt) -> Result<&mut Node<'a>, ShapeError> {
        match at {
            StatusAt::Template => self.node(),
            StatusAt::JobTemplate => {
                self.stale = true;
                self.object
                    .path_mut(&["spec", "jobTemplate"])?
                    .ok_or_else(|| ShapeError("CronJob has no jobTemplate".into()))
            }
            StatusAt::Object => {
                self.stale = true;
                Ok(&mut *self.object)
            }
        }
    }

    /// Set annotation `key` of the pod template.
    pub fn set_annotation(&mut self, key: &str, value: Node<'a>) -> Result<(), ShapeError> {
        annotations_mut(self.node()?)?.set(key, value)
    }

    /// Set annotation `key` of the metadata at `at`.
    pub fn set_annotation_at(
        &mut self,
        at: StatusAt,
        key: &str,
        value: Node<'a>,
    ) -> Result<(), ShapeError> {
        annotations_mut(self.status_holder(at)?)?.set(key, value)
    }

    /// Remove the annotations `keys` of the pod template; an emptied
    /// `annotations`, then an emptied `metadata`, go too, as the API server
    /// drops empty maps. True when one was removed.
    pub fn remove_annotations(&mut self, keys: &[&str]) -> Result<bool, ShapeError> {
        let template = self.node()?;
        let Some(metadata) = template.get_mut("metadata")? else {
            return Ok(false);
        };
        let Some(annotations) = metadata.get_mut("annotations")? else {
            return Ok(false);
        };
        let members = annotations.members_mut()?;
        let before = members.len();
        members.retain(|(k, _)| !keys.contains(&k.as_ref()));
        if members.len() == before {
            return Ok(false);
        }
        if members.is_empty() {
            let members = metadata.members_mut()?;
            members.retain(|(k, _)| k != "annotations");
            if members.is_empty() {
                template.members_mut()?.retain(|(k, _)| k != "metadata");
            }
        }
        Ok(true)
    }

    /// Container `index` of the template's `list` (`containers`,
    /// `initContainers`), to be edited.
    pub fn item(&mut self, list: &str, index: usize) -> Result<&mut Node<'a>, ShapeError> {
        self.spec()?
            .get_mut(list)?
            .ok_or_else(|| ShapeError(format!("pod template has no {list}")))?
            .items_mut()?
            .get_mut(index)
            .ok_or_else(|| ShapeError(format!("{list} changed under the view")))
    }

    /// Item `index` taken out of the template's `list`.
    pub fn take_item(&mut self, list: &str, index: usize) -> Result<Node<'a>, ShapeError> {
        let items = self.spec()?.array_entry(list)?.items_mut()?;
        if index >= items.len() {
            return Err(ShapeError(format!("{list} changed under the view")));
        }
        Ok(items.remove(index))
    }

    /// `item` put into the template's `list` (created when absent) at
    /// `index`, or at its end when the list is shorter.
    pub fn insert_item(
        &mut self,
        list: &str,
        index: usize,
        item: Node<'a>,
    ) -> Result<(), ShapeError> {
        let items = self.spec()?.array_entry(list)?.items_mut()?;
        items.insert(index.min(items.len()), item);
        Ok(())
    }

    /// Remove the template's `list` when it is empty: Kubernetes drops an
    /// empty list, and one an edit created goes again.
    pub fn drop_empty_list(&mut self, list: &str) -> Result<(), ShapeError> {
        let spec = self.spec()?;
        let empty = match spec.get_mut(list)? {
            Some(items) => items.items_mut()?.is_empty(),
            None => false,
        };
        if empty {
            spec.members_mut()?.retain(|(k, _)| k != list);
        }
        Ok(())
    }
}

/// `metadata.annotations` of `node` (a template, the jobTemplate, a Job),
/// created when absent.
fn annotations_mut<'n, 'a>(node: &'n mut Node<'a>) -> Result<&'n mut Node<'a>, ShapeError> {
    node.object_entry("metadata")?.object_entry("annotations")
}
