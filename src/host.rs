//! Calls to Kubewarden's host (its capabilities: here, the Kubernetes
//! resources of a context-aware policy). In the module, the waPC host call;
//! natively (the tests, the runner's policy linked natively), the host a
//! caller installed on this thread with `set_native`, or none.

#[cfg(not(target_arch = "wasm32"))]
pub use native::{set_native, NativeHost};

/// The host's answer to `operation` of `binding`/`namespace` with `payload`.
pub fn call(
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    // The host's message is not shown (the caller says what failed), and
    // formatting waPC's error would cost the module its Display code.
    #[cfg(target_arch = "wasm32")]
    return wapc_guest::host_call(binding, namespace, operation, payload)
        .map_err(|_| String::new());
    #[cfg(not(target_arch = "wasm32"))]
    native::answer(binding, namespace, operation, payload)
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::cell::RefCell;
    use std::rc::Rc;

    /// What a native host answers to `(binding, namespace, operation, payload)`.
    pub type NativeHost = Rc<dyn Fn(&str, &str, &str, &[u8]) -> Result<Vec<u8>, String>>;

    thread_local! {
        static HOST: RefCell<Option<NativeHost>> = const { RefCell::new(None) };
    }

    /// Answer this thread's host calls with `host` (`None`: no host, every
    /// call fails as with a host that grants none); the host before.
    pub fn set_native(host: Option<NativeHost>) -> Option<NativeHost> {
        HOST.with(|h| h.replace(host))
    }

    pub(super) fn answer(b: &str, n: &str, o: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        match HOST.with(|h| h.borrow().clone()) {
            Some(host) => host(b, n, o, payload),
            None => Err(format!("no host answers {b}/{n}/{o}")),
        }
    }
}
