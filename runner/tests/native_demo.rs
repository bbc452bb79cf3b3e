//! `make demo` runs the policy crate linked natively (`policy-demo`), so that
//! a newcomer does not wait for the wasm engine to build. This checks that it
//! prints exactly what `policy-runner demo` prints from `policy.wasm` in the
//! engine: every patch operation, warning and changed field, in every mode.

mod common;

use common::built_module;
use policy_runner::demo;
use policy_runner::native::NativePolicy;

#[test]
fn the_native_demo_prints_what_the_module_in_the_engine_prints() {
    let mut module = built_module();
    let mut from_module = Vec::new();
    demo::run(&mut module, &mut from_module).expect("the demo runs on policy.wasm");
    let mut native = Vec::new();
    demo::run(&mut NativePolicy, &mut native).expect("the demo runs natively");
    let (from_module, native) = (
        String::from_utf8_lossy(&from_module),
        String::from_utf8_lossy(&native),
    );
    assert!(
        from_module.contains("--- mode nativeSidecar: accepted"),
        "{from_module}"
    );
    assert!(
        native == from_module,
        "the native demo differs from the module's:\n--- policy.wasm\n{from_module}\n--- native\n{native}"
    );
}

#[test]
fn the_native_policy_speaks_the_same_protocol() {
    let module = built_module();
    assert_eq!(
        NativePolicy.protocol_version().expect("native"),
        module.protocol_version().expect("policy.wasm")
    );
}
