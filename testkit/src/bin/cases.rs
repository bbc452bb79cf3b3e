//! The names of the golden cases of `policy_testkit::cases`, one a line:
//! what `e2e.bats` runs through kwctl, so that a case added to the list is
//! run there with no other edit. The inputs and answers themselves are
//! written by `tests/golden.rs` (`make golden`).
//!
//! ```text
//! cases --list
//! ```

#![forbid(unsafe_code)]

use policy_testkit::cases::Cases;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args != ["--list"] {
        eprintln!("usage: cases --list");
        std::process::exit(2);
    }
    for name in Cases::all().names() {
        println!("{name}");
    }
}
