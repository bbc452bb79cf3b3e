//! A Markdown page as CommonMark with GitHub's tables reads it
//! (pulldown-cmark): its headings and the anchors GitHub gives them, its
//! links, the reference links it uses without defining, its tables and its
//! code blocks.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use pulldown_cmark::{BrokenLink, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// A heading: its level (1 to 6), its text as rendered (code spans without
/// their backticks, a link's text without its target) and where it is.
pub struct Heading {
    pub level: usize,
    pub text: String,
    pub range: Range<usize>,
}

/// A table cell: its source (trimmed), its text as rendered and its code
/// spans.
pub struct Cell {
    pub source: String,
    pub text: String,
    pub code: Vec<String>,
}

/// A code block: its info string (empty for an indented block), its
/// content and whether it is inside a list item.
pub struct CodeBlock {
    pub fenced: bool,
    pub info: String,
    pub body: String,
    pub in_list_item: bool,
    /// Whether anything but the block stands before it on its first line
    /// (indentation, a list item's marker).
    pub indented: bool,
}

pub struct Page {
    pub headings: Vec<Heading>,
    /// The target of every inline link, image and autolink, and of every
    /// reference definition (`[name]: target`), in the page's order.
    pub links: Vec<String>,
    /// The names of the reference links (`[text][name]`, `[name][]`) the
    /// page uses and never defines: they show as brackets.
    pub undefined_references: BTreeSet<String>,
    /// Each table's rows, its header row first.
    pub tables: Vec<Vec<Vec<Cell>>>,
    pub code_blocks: Vec<CodeBlock>,
    /// The text outside code blocks as rendered (code spans included), one
    /// entry per text event.
    pub prose: Vec<String>,
}

/// GitHub's flavour, as far as a page of this repository uses it.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

pub fn read(text: &str) -> Page {
    let mut undefined = BTreeSet::new();
    let mut broken = |link: BrokenLink| {
        if matches!(link.link_type, LinkType::Reference | LinkType::Collapsed) {
            undefined.insert(link.reference.to_string());
        }
        None
    };
    let parser = Parser::new_with_broken_link_callback(text, options(), Some(&mut broken));
    let mut definitions: Vec<(usize, String)> = parser
        .reference_definitions()
        .iter()
        .map(|(_, def)| (def.span.start, def.dest.to_string()))
        .collect();
    definitions.sort();

    let mut page = Page {
        headings: Vec::new(),
        links: Vec::new(),
        undefined_references: BTreeSet::new(),
        tables: Vec::new(),
        code_blocks: Vec::new(),
        prose: Vec::new(),
    };
    let mut inline_links = Vec::new();
    let mut heading: Option<Heading> = None;
    let mut cell: Option<Cell> = None;
    let mut block: Option<CodeBlock> = None;
    let mut list_items = 0usize;
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some(Heading {
                    level: level as usize,
                    text: String::new(),
                    range,
                });
            }
            Event::End(TagEnd::Heading(_)) => page.headings.extend(heading.take()),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => match link_type {
                // Their targets are the definitions', listed once below.
                LinkType::Reference | LinkType::Collapsed | LinkType::Shortcut => {}
                LinkType::Email => inline_links.push((range.start, format!("mailto:{dest_url}"))),
                _ => inline_links.push((range.start, dest_url.to_string())),
            },
            Event::Start(Tag::Table(_)) => page.tables.push(Vec::new()),
            Event::Start(Tag::TableHead) | Event::Start(Tag::TableRow) => {
                if let Some(table) = page.tables.last_mut() {
                    table.push(Vec::new());
                }
            }
            Event::Start(Tag::TableCell) => {
                cell = Some(Cell {
                    source: text[range].trim().to_owned(),
                    text: String::new(),
                    code: Vec::new(),
                });
            }
            Event::End(TagEnd::TableCell) => {
                let row = page.tables.last_mut().and_then(|t| t.last_mut());
                if let (Some(row), Some(cell)) = (row, cell.take()) {
                    row.push(cell);
                }
            }
            Event::Start(Tag::Item) => list_items += 1,
            Event::End(TagEnd::Item) => list_items -= 1,
            Event::Start(Tag::CodeBlock(kind)) => {
                block = Some(CodeBlock {
                    fenced: matches!(kind, CodeBlockKind::Fenced(_)),
                    info: match kind {
                        CodeBlockKind::Fenced(info) => info.trim().to_owned(),
                        CodeBlockKind::Indented => String::new(),
                    },
                    body: String::new(),
                    in_list_item: list_items > 0,
                    indented: text[..range.start]
                        .rsplit('\n')
                        .next()
                        .is_some_and(|before| !before.is_empty()),
                });
            }
            Event::End(TagEnd::CodeBlock) => page.code_blocks.extend(block.take()),
            Event::Text(t) => {
                match &mut block {
                    Some(block) => block.body.push_str(&t),
                    None => page.prose.push(t.to_string()),
                }
                if let Some(heading) = &mut heading {
                    heading.text.push_str(&t);
                }
                if let Some(cell) = &mut cell {
                    cell.text.push_str(&t);
                }
            }
            Event::Code(code) => {
                page.prose.push(code.to_string());
                if let Some(heading) = &mut heading {
                    heading.text.push_str(&code);
                }
                if let Some(cell) = &mut cell {
                    cell.text.push_str(&code);
                    cell.code.push(code.to_string());
                }
            }
            _ => {}
        }
    }
    let mut links = inline_links;
    links.extend(definitions);
    links.sort();
    page.links = links.into_iter().map(|(_, target)| target).collect();
    for heading in &mut page.headings {
        heading.text = heading.text.trim().to_owned();
    }
    page.undefined_references = undefined;
    page
}

/// GitHub's anchor for a heading: lower case, every character but letters,
/// digits, spaces, `-` and `_` dropped, spaces turned into `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

impl Page {
    /// The anchors GitHub gives the page's headings; a repeated heading
    /// gets `-1`, `-2`...
    pub fn anchors(&self) -> BTreeSet<String> {
        let mut seen = BTreeMap::<String, usize>::new();
        let mut out = BTreeSet::new();
        for heading in &self.headings {
            let base = slug(&heading.text);
            let n = seen.entry(base.clone()).or_insert(0);
            out.insert(if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            *n += 1;
        }
        out
    }

    /// The source of the section under the heading `title` (of any level),
    /// up to the next heading of its level or above.
    pub fn section<'t>(&self, text: &'t str, title: &str) -> Option<&'t str> {
        let at = self.headings.iter().position(|h| h.text == title)?;
        let level = self.headings[at].level;
        let end = self.headings[at + 1..]
            .iter()
            .find(|h| h.level <= level)
            .map_or(text.len(), |h| h.range.start);
        Some(&text[self.headings[at].range.end..end])
    }
}

// --- The reader itself, on small pages ---------------------------------------

#[test]
fn reads_links_of_every_form_but_inside_code() {
    let page = read(concat!(
        "See [a](a.md#x \"title\"), ![img](img.png), <https://example.com/>,\n",
        "<someone@example.com> and [b][ref]; not `[c](c.md)`.\n\n",
        "```text\n[d](d.md)\n```\n\n",
        "[ref]: b.md\n",
        "[unused]: u.md\n",
    ));
    assert_eq!(
        page.links,
        [
            "a.md#x",
            "img.png",
            "https://example.com/",
            "mailto:someone@example.com",
            "b.md",
            "u.md"
        ]
    );
    assert!(page.undefined_references.is_empty());
}

#[test]
fn reports_a_reference_link_never_defined() {
    let page = read("[text][missing], [missing too][] and [a shortcut] in brackets\n");
    assert_eq!(
        page.undefined_references,
        BTreeSet::from(["missing".to_owned(), "missing too".to_owned()])
    );
}

#[test]
fn gives_headings_github_anchors() {
    let page = read(concat!(
        "# The record `istio-job-sidecar/applied`\n\n",
        "Setext\n======\n\n",
        "## Twice\n\n## Twice\n\n",
        "```md\n# not a heading\n```\n",
    ));
    let texts: Vec<&str> = page.headings.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "The record istio-job-sidecar/applied",
            "Setext",
            "Twice",
            "Twice"
        ]
    );
    assert_eq!(
        page.anchors(),
        BTreeSet::from(
            [
                "the-record-istio-job-sidecarapplied",
                "setext",
                "twice",
                "twice-1"
            ]
            .map(str::to_owned)
        )
    );
}

#[test]
fn reads_tables_and_code_blocks() {
    let text = concat!(
        "## Layout\n\n",
        "| module | what |\n|---|---|\n",
        "| `a.rs`, `b/c.rs` | the *first* [row](x.md) |\n\n",
        "- an item\n\n  ```yaml\n  key: value\n  ```\n\n",
        "## Next\n\n    indented code\n",
    );
    let page = read(text);
    assert_eq!(page.tables.len(), 1);
    let rows = &page.tables[0];
    assert_eq!(rows.len(), 2, "the header row and one row");
    assert_eq!(rows[1][0].code, ["a.rs", "b/c.rs"]);
    assert_eq!(rows[1][1].text, "the first row");
    assert_eq!(rows[1][1].source, "the *first* [row](x.md)");
    let blocks: Vec<(&str, &str, bool)> = page
        .code_blocks
        .iter()
        .map(|b| (b.info.as_str(), b.body.as_str(), b.in_list_item))
        .collect();
    assert_eq!(
        blocks,
        [
            ("yaml", "key: value\n", true),
            ("", "indented code\n", false)
        ]
    );
    assert!(page.code_blocks[0].indented);
    assert!(!read("```\nx\n```\n").code_blocks[0].indented);
    assert!(page.prose.iter().any(|t| t == "a.rs"));
    assert!(!page.prose.iter().any(|t| t.contains("key: value")));
    let layout = page.section(text, "Layout").unwrap();
    assert!(layout.contains("| module |") && !layout.contains("indented"));
}
