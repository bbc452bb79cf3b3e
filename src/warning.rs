//! Admission warnings reach the `kubectl` user, who reads them in a
//! terminal: the API server asks for at most 120 characters each. Every
//! warning goes out with the policy's name in front.

pub const MAX_CHARS: usize = 120;
const PREFIX: &str = "istio-job-sidecar: ";

/// Whether `text` goes out whole, prefix included, without being cut.
pub fn fits(text: &str) -> bool {
    room(text) >= text.chars().count()
}

fn room(text: &str) -> usize {
    if text.starts_with("istio-job-sidecar") {
        MAX_CHARS
    } else {
        MAX_CHARS - PREFIX.len()
    }
}

/// `text` as the user sees it: with the policy's prefix (unless it already
/// names the policy), cut to `MAX_CHARS` characters.
pub fn format(text: &str) -> String {
    let mut out = String::with_capacity(MAX_CHARS + 4);
    let room = room(text);
    if room < MAX_CHARS {
        out.push_str(PREFIX);
    }
    if text.chars().count() <= room {
        out.push_str(text);
    } else {
        out.extend(text.chars().take(room - 1));
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_prefixed_and_short() {
        let long = "é".repeat(500);
        let w = format(&long);
        assert_eq!(w.chars().count(), MAX_CHARS);
        assert!(w.starts_with(PREFIX) && w.ends_with('…'));
        assert!(!fits(&long));
        assert_eq!(format("short"), "istio-job-sidecar: short");
        assert!(fits("short"));
    }

    #[test]
    fn fits_exactly_at_the_limit() {
        let most = "a".repeat(MAX_CHARS - PREFIX.len());
        assert!(fits(&most));
        assert_eq!(format(&most).chars().count(), MAX_CHARS);
        assert!(!format(&most).ends_with('…'));
        let over = "a".repeat(MAX_CHARS - PREFIX.len() + 1);
        assert!(!fits(&over));
        assert!(format(&over).ends_with('…'));
    }
}
