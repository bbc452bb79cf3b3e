//! The node tree go-yaml v2's `parser` (decode.go) builds from libyaml's
//! events: one document, the first; anchors recorded in the document as
//! each node starts (so an alias inside its own anchor's node finds it,
//! and a redefined anchor points at its latest node from there on); an
//! alias resolved when it is read, an unknown one an error.

use super::Error;
use libyaml_safer::{EventData, MappingStyle, Parser, SequenceStyle};
use std::collections::HashMap;

/// go-yaml's scanner refuses more than 10,000 flow levels
/// (`max_flow_level`) or indents (`max_indents`, scannerc.go): "exceeded
/// max depth of 10000". Counted here as nested flow and block collections,
/// the levels each of those opens.
const MAX_DEPTH: usize = 10_000;

pub(super) enum Kind {
    Scalar {
        value: String,
        /// The tag as libyaml resolved it (`tag:yaml.org,2002:int`), "" for none.
        tag: String,
        /// libyaml's `plain_implicit` (go-yaml's `node.implicit`): an
        /// untagged plain scalar, or one tagged `!`.
        implicit: bool,
    },
    Sequence(Vec<usize>),
    /// Keys and values in turn, as written.
    Mapping(Vec<usize>),
    Alias {
        name: String,
        target: usize,
    },
}

pub(super) struct Tree {
    pub nodes: Vec<Kind>,
    /// The document's root; `None` for a stream with no document (an empty
    /// text, or comments only): `Unmarshal` then leaves `nil`.
    pub root: Option<usize>,
}

pub(super) fn parse(text: &str) -> Result<Tree, Error> {
    // `newParser`: an empty input is read as "\n".
    let bytes: &[u8] = if text.is_empty() {
        b"\n"
    } else {
        text.as_bytes()
    };
    let mut parser = Parser::new();
    parser.set_input(bytes);
    let mut next = || {
        parser
            .parse()
            .map(|event| event.data)
            .map_err(|e| Error::Yaml(e.to_string()))
    };
    // `parser.init`: the stream start.
    next()?;
    let mut tree = Tree {
        nodes: Vec::new(),
        root: None,
    };
    match next()? {
        EventData::DocumentStart { .. } => {}
        // `parse`: the end of the stream before a document reads as nil.
        _ => return Ok(tree),
    }
    let mut anchors: HashMap<String, usize> = HashMap::new();
    // Open collections: the node and whether it is a flow collection.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let (mut flow, mut block) = (0usize, 0usize);
    loop {
        let event = next()?;
        let node = match event {
            EventData::Scalar {
                anchor,
                tag,
                value,
                plain_implicit,
                ..
            } => {
                let id = tree.nodes.len();
                tree.nodes.push(Kind::Scalar {
                    value,
                    tag: tag.unwrap_or_default(),
                    implicit: plain_implicit,
                });
                if let Some(anchor) = anchor {
                    anchors.insert(anchor, id);
                }
                Some(id)
            }
            EventData::Alias { anchor } => {
                let Some(&target) = anchors.get(&anchor) else {
                    return Err(Error::Yaml(format!("unknown anchor '{anchor}' referenced")));
                };
                tree.nodes.push(Kind::Alias {
                    name: anchor,
                    target,
                });
                Some(tree.nodes.len() - 1)
            }
            event @ (EventData::SequenceStart { .. } | EventData::MappingStart { .. }) => {
                let (anchor, is_flow, kind) = match event {
                    EventData::SequenceStart { anchor, style, .. } => (
                        anchor,
                        style == SequenceStyle::Flow,
                        Kind::Sequence(Vec::new()),
                    ),
                    EventData::MappingStart { anchor, style, .. } => (
                        anchor,
                        style == MappingStyle::Flow,
                        Kind::Mapping(Vec::new()),
                    ),
                    _ => unreachable!("matched above"),
                };
                let id = tree.nodes.len();
                tree.nodes.push(kind);
                if let Some(anchor) = anchor {
                    anchors.insert(anchor, id);
                }
                open.push((id, is_flow));
                let level = if is_flow { &mut flow } else { &mut block };
                *level += 1;
                if *level > MAX_DEPTH {
                    return Err(Error::Yaml(format!("exceeded max depth of {MAX_DEPTH}")));
                }
                None
            }
            EventData::SequenceEnd | EventData::MappingEnd => {
                let Some((id, is_flow)) = open.pop() else {
                    return Err(Error::Yaml("unbalanced collection end".into()));
                };
                if is_flow {
                    flow -= 1;
                } else {
                    block -= 1;
                }
                Some(id)
            }
            EventData::DocumentEnd { .. } => {
                // `document`: one node, then the document's end; the rest of
                // the stream is never read.
                return Ok(tree);
            }
            _ => return Err(Error::Yaml("unexpected event".into())),
        };
        if let Some(id) = node {
            // A finished node: a child of the innermost open collection,
            // else the document's root.
            match open.last() {
                Some(&(parent, _)) => match &mut tree.nodes[parent] {
                    Kind::Sequence(children) | Kind::Mapping(children) => children.push(id),
                    _ => unreachable!("only collections are open"),
                },
                None => tree.root = Some(id),
            }
        }
    }
}
