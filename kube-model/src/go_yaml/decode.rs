//! decode.go's `decoder` of go-yaml v2 (v2.4.0 to go.yaml.in v2.4.4) for
//! the one target `YAMLToJSON` gives it, an `interface{}`: the Go values it
//! builds, merge keys (`<<`), duplicate keys (the later value wins: not
//! strict) and its alias budget.

use super::resolve::{self, BINARY, MERGE, TIMESTAMP};
use super::tree::{Kind, Tree};
use super::Error;

/// The Go values an `interface{}` receives.
#[derive(Debug, Clone)]
pub(super) enum Go {
    Nil,
    Bool(bool),
    /// `int` (64 bits) and `int64` alike.
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A Go string: bytes, not always UTF-8 (`!!binary`).
    Str(Vec<u8>),
    Seq(Vec<Go>),
    /// A `map[interface{}]interface{}`: its entries, each key once.
    Map(Vec<(Go, Go)>),
}

impl Go {
    /// Go's `==` on two map keys (the decoder refuses map and slice keys
    /// before they reach a map): NaN equals nothing, `-0` equals `0`, and
    /// values of two types differ (`int 1` is not `"1"`).
    fn same_key(&self, other: &Go) -> bool {
        match (self, other) {
            (Go::Nil, Go::Nil) => true,
            (Go::Bool(a), Go::Bool(b)) => a == b,
            (Go::Int(a), Go::Int(b)) => a == b,
            (Go::Uint(a), Go::Uint(b)) => a == b,
            (Go::Float(a), Go::Float(b)) => a == b,
            (Go::Str(a), Go::Str(b)) => a == b,
            _ => false,
        }
    }
}

/// `allowedAliasRatio`.
fn allowed_alias_ratio(decode_count: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

struct Decoder<'t> {
    tree: &'t Tree,
    /// The alias nodes being expanded (`d.aliases`).
    expanding: Vec<usize>,
    decode_count: usize,
    alias_count: usize,
    alias_depth: usize,
}

pub(super) fn decode_tree(tree: &Tree) -> Result<Go, Error> {
    let Some(root) = tree.root else {
        return Ok(Go::Nil);
    };
    let mut d = Decoder {
        tree,
        expanding: Vec::new(),
        // `unmarshal` of the document node counts once before its child.
        decode_count: 1,
        alias_count: 0,
        alias_depth: 0,
    };
    d.unmarshal(root).map_err(Error::Yaml)
}

/// `work` (decoding `tree` and writing its JSON, both recursive) on a stack
/// deep enough for it: a path of the recursion visits a node at most once
/// (an alias met again inside its own expansion is an error), so its depth
/// is at most the node count. A small tree runs on the caller's stack.
pub(super) fn on_stack_for<T: Send>(
    tree: &Tree,
    work: impl FnOnce() -> Result<T, Error> + Send,
) -> Result<T, Error> {
    if tree.nodes.len() <= 256 {
        return work();
    }
    let stack = (tree.nodes.len() * 4096).clamp(8 << 20, 1 << 30);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn_scoped(scope, work)
            .map_err(|e| Error::Yaml(format!("no thread for the decoder: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(Error::Yaml("the decoder panicked".into())))
    })
}

impl Decoder<'_> {
    /// `unmarshal(n, out)` with `out` a fresh `interface{}`.
    fn unmarshal(&mut self, id: usize) -> Result<Go, String> {
        self.count()?;
        let tree = self.tree;
        match &tree.nodes[id] {
            Kind::Alias { .. } => self.alias(id, |d, target| d.unmarshal(target)),
            Kind::Scalar {
                value,
                tag,
                implicit,
            } => scalar(value, tag, *implicit),
            Kind::Sequence(children) => {
                let mut items = Vec::with_capacity(children.len());
                for &child in children {
                    items.push(self.unmarshal(child)?);
                }
                Ok(Go::Seq(items))
            }
            Kind::Mapping(_) => {
                let mut map = Vec::new();
                self.mapping(id, &mut map)?;
                Ok(Go::Map(map))
            }
        }
    }

    /// The counting at the top of `unmarshal`, and its budget.
    fn count(&mut self) -> Result<(), String> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err("document contains excessive aliasing".into());
        }
        Ok(())
    }

    /// `alias(n, out)`: `then` on the alias's target, the alias marked as
    /// being expanded meanwhile.
    fn alias<T>(
        &mut self,
        id: usize,
        then: impl FnOnce(&mut Self, usize) -> Result<T, String>,
    ) -> Result<T, String> {
        let tree = self.tree;
        let Kind::Alias { name, target } = &tree.nodes[id] else {
            unreachable!("alias() is called on alias nodes");
        };
        if self.expanding.contains(&id) {
            return Err(format!("anchor '{name}' value contains itself"));
        }
        self.expanding.push(id);
        self.alias_depth += 1;
        let result = then(self, *target);
        self.alias_depth -= 1;
        self.expanding.retain(|&a| a != id);
        result
    }

    /// `unmarshal(n, out)` with `out` an existing map, as `merge` calls it:
    /// the mapping node `id` (or an alias of one) decoded into `map`.
    fn unmarshal_into(&mut self, id: usize, map: &mut Vec<(Go, Go)>) -> Result<(), String> {
        self.count()?;
        let tree = self.tree;
        match &tree.nodes[id] {
            Kind::Alias { .. } => self.alias(id, |d, target| d.unmarshal_into(target, map)),
            Kind::Mapping(_) => self.mapping(id, map),
            // `merge` has checked that it is a mapping.
            _ => Err("map merge requires map or sequence of maps as the value".into()),
        }
    }

    /// `mapping(n, out)` into a map: each pair in order, a merge key's
    /// mapping set into the map where it stands (so it overrides the keys
    /// before it, and the keys after it override it), a repeated key
    /// replacing the earlier value.
    fn mapping(&mut self, id: usize, map: &mut Vec<(Go, Go)>) -> Result<(), String> {
        let tree = self.tree;
        let Kind::Mapping(children) = &tree.nodes[id] else {
            unreachable!("mapping() is called on mapping nodes");
        };
        for pair in children.chunks(2) {
            let (key, value) = (pair[0], pair[1]);
            if self.is_merge(key) {
                self.merge(value, map)?;
                continue;
            }
            let k = self.unmarshal(key)?;
            if matches!(k, Go::Map(_) | Go::Seq(_)) {
                return Err("invalid map key".into());
            }
            let v = self.unmarshal(value)?;
            set(map, k, v);
        }
        Ok(())
    }

    /// `isMerge`: a scalar `<<`, plain and untagged or tagged `!!merge`.
    fn is_merge(&self, id: usize) -> bool {
        matches!(&self.tree.nodes[id], Kind::Scalar { value, tag, implicit }
            if value == "<<" && (*implicit || tag == MERGE))
    }

    fn is_mapping(&self, id: usize) -> bool {
        matches!(self.tree.nodes[id], Kind::Mapping(_))
    }

    /// `merge(n, out)`: a mapping, an alias of one, or a sequence of those
    /// applied last to first (so the first one's keys win).
    fn merge(&mut self, id: usize, map: &mut Vec<(Go, Go)>) -> Result<(), String> {
        const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
        let tree = self.tree;
        match &tree.nodes[id] {
            Kind::Mapping(_) => self.unmarshal_into(id, map),
            Kind::Alias { target, .. } => {
                if !self.is_mapping(*target) {
                    return Err(WANT_MAP.into());
                }
                self.unmarshal_into(id, map)
            }
            Kind::Sequence(children) => {
                for &child in children.iter().rev() {
                    let ok = match &tree.nodes[child] {
                        Kind::Alias { target, .. } => self.is_mapping(*target),
                        Kind::Mapping(_) => true,
                        _ => false,
                    };
                    if !ok {
                        return Err(WANT_MAP.into());
                    }
                    self.unmarshal_into(child, map)?;
                }
                Ok(())
            }
            Kind::Scalar { .. } => Err(WANT_MAP.into()),
        }
    }
}

/// `out.SetMapIndex(k, v)`.
fn set(map: &mut Vec<(Go, Go)>, key: Go, value: Go) {
    match map.iter_mut().find(|(k, _)| k.same_key(&key)) {
        Some(entry) => entry.1 = value,
        None => map.push((key, value)),
    }
}

/// `scalar(n, out)` into an `interface{}`: a quoted or block scalar
/// without a tag is its text; else `resolve`, `!!binary` decoded from
/// base64, a timestamp kept as its text.
fn scalar(value: &str, tag: &str, implicit: bool) -> Result<Go, String> {
    if tag.is_empty() && !implicit {
        return Ok(Go::Str(value.as_bytes().to_vec()));
    }
    let (rtag, resolved) = resolve::resolve(tag, value)?;
    if rtag == BINARY {
        return base64_std(value)
            .map(Go::Str)
            .ok_or_else(|| "!!binary value contains invalid base64 data".into());
    }
    if rtag == TIMESTAMP {
        return Ok(Go::Str(value.as_bytes().to_vec()));
    }
    Ok(resolved)
}

/// `base64.StdEncoding.DecodeString`: the standard alphabet with `=`
/// padding required, `\r` and `\n` skipped anywhere.
fn base64_std(text: &str) -> Option<Vec<u8>> {
    let symbols: Vec<u8> = text.bytes().filter(|&c| c != b'\n' && c != b'\r').collect();
    if symbols.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(symbols.len() / 4 * 3);
    let quads = symbols.chunks(4).collect::<Vec<_>>();
    for (n, quad) in quads.iter().enumerate() {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        // Padding only at the very end, at most two.
        if pad > 2 || (pad > 0 && n + 1 != quads.len()) {
            return None;
        }
        let mut bits = 0u32;
        for &c in &quad[..4 - pad] {
            bits = bits << 6 | value(c)?;
        }
        bits <<= 6 * pad as u32;
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_go_reads_it() {
        assert_eq!(base64_std("gIGC"), Some(vec![0x80, 0x81, 0x82]));
        assert_eq!(base64_std("QQ=="), Some(b"A".to_vec()));
        assert_eq!(base64_std("QUI=\n"), Some(b"AB".to_vec()));
        assert_eq!(base64_std("=="), None);
        assert_eq!(base64_std("QQ"), None);
        assert_eq!(base64_std("Q=Q="), None);
    }
}
