//! Prints the `validate` payload a `validate_structured` input (a libFuzzer
//! artifact) builds: `payload <artifact>`. That payload is what goes into
//! fuzz/regressions/validate/.

#![forbid(unsafe_code)]

use arbitrary::{Arbitrary, Unstructured};
use fuzz_harness::Input;

fn main() {
    let path = std::env::args().nth(1).expect("usage: payload <artifact>");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // libfuzzer-sys's `fuzz_target!(|input: Input|)` decodes with
    // `arbitrary_take_rest`.
    let input = Input::arbitrary_take_rest(Unstructured::new(&bytes)).expect("decodes");
    println!("{}", input.payload());
}
