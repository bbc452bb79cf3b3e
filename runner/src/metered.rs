//! Counting a guest call's work: wasmtime fuel (WebAssembly instructions
//! executed) and the growth of the guest's linear memory, per call.
//!
//! wasmtime-provider 2.19 keeps its `Store` private, and a store of an
//! engine with `Config::consume_fuel` starts with no fuel: through that
//! provider every call would trap at its first instruction, and the count
//! could not be read. So a metered policy is a second waPC engine provider
//! over the same wasmtime, behind the same `wapc::WapcHost` (the same
//! `ModuleState`, host callback, `__guest_call` export and WASI context as
//! wasmtime-provider builds them: stdio inherited, no arguments, no
//! environment, no preopened directory), which sets the fuel before each
//! call and reads what is left after it. The policy-server engine
//! (`host::Policy::load`) is untouched; `tests/cost.rs` checks that both
//! answer every golden case alike.
//!
//! Fuel is the count wasmtime keeps (most operators cost 1; `nop`, `drop`,
//! `block`, `loop` cost 0): a function of the module and its input only,
//! the same on every machine and every run. Memory is the guest's linear
//! memory in 64 KiB pages before and after the call; a linear memory never
//! shrinks, so on a fresh instance (policy-server rehydrates one per
//! evaluation) the size after the call is the call's peak.

use std::sync::{Arc, Mutex, PoisonError};

use wapc::{wapc_functions, ModuleState, WebAssemblyEngineProvider, HOST_NAMESPACE};
use wasmtime_provider::wasmtime::{
    self, AsContext, AsContextMut, Caller, Config, Engine, Instance, Linker, Memory, Module, Store,
    Trap, TypedFunc,
};

use wasmtime_provider::wasmtime::error::format_err;

use crate::error::{Error, Result};

/// The bytes of one page of a wasm linear memory.
pub const PAGE: u64 = 65536;

/// Fuel for a call meant to be measured, not stopped: more than any call
/// can use, with room for wasmtime's own arithmetic on it.
pub const UNBOUNDED_FUEL: u64 = u64::MAX / 2;

/// What one call cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCost {
    /// Fuel consumed: WebAssembly instructions executed.
    pub fuel: u64,
    /// The call stopped because it used all the fuel it was given.
    pub out_of_fuel: bool,
    /// Linear memory before the call, in pages.
    pub pages_before: u64,
    /// Linear memory after the call, in pages: its peak.
    pub pages_after: u64,
}

impl CallCost {
    /// The guest's linear memory before the call, in bytes.
    pub fn memory_before_bytes(&self) -> u64 {
        self.pages_before * PAGE
    }

    /// The guest's linear memory after the call, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.pages_after * PAGE
    }

    /// What the call grew the linear memory by, in bytes.
    pub fn growth_bytes(&self) -> u64 {
        self.pages_after.saturating_sub(self.pages_before) * PAGE
    }
}

/// Where a metered provider leaves each call's cost for its `Policy`.
pub(crate) type Meter = Arc<Mutex<Option<CallCost>>>;

pub(crate) fn read(meter: &Meter) -> Option<CallCost> {
    *meter.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A module compiled once on a fuel-counting engine, instantiated afresh
/// for each metered `Policy`.
#[derive(Clone)]
pub struct MeteredModule {
    module: Module,
    linker: Arc<Linker<Data>>,
    fuel: u64,
}

impl std::fmt::Debug for MeteredModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeteredModule")
            .field("fuel", &self.fuel)
            .finish()
    }
}

impl MeteredModule {
    /// Compiles `bytes`; each call of an instance may execute at most
    /// `fuel` instructions (past it the call traps, as an out-of-fuel
    /// guest error), and so does the instance's initialization.
    pub fn new(bytes: &[u8], fuel: u64) -> Result<MeteredModule> {
        let mut config = Config::new();
        config.consume_fuel(true);
        let engine = Engine::new(&config).map_err(|e| Error::Load(e.to_string()))?;
        let module = Module::new(&engine, bytes).map_err(|e| Error::Load(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        wasi_common::sync::add_to_linker(&mut linker, |data: &mut Data| &mut data.wasi)
            .map_err(|e| Error::Load(e.to_string()))?;
        add_wapc_to_linker(&mut linker).map_err(|e| Error::Load(e.to_string()))?;
        Ok(MeteredModule {
            module,
            linker: Arc::new(linker),
            fuel,
        })
    }

    /// The same module with another fuel limit per call.
    pub fn with_fuel(&self, fuel: u64) -> MeteredModule {
        MeteredModule {
            fuel,
            ..self.clone()
        }
    }

    /// The fuel each call may consume.
    pub fn fuel(&self) -> u64 {
        self.fuel
    }

    pub(crate) fn provider(&self, meter: Meter) -> Box<dyn WebAssemblyEngineProvider> {
        Box::new(MeteredProvider {
            module: self.clone(),
            meter,
            running: None,
        })
    }
}

/// The store's data: WASI, and the waPC state once the host gave it.
pub(crate) struct Data {
    wasi: wasi_common::WasiCtx,
    host: Option<Arc<ModuleState>>,
}

struct Running {
    store: Store<Data>,
    instance: Instance,
    guest_call: TypedFunc<(i32, i32), i32>,
}

impl Running {
    fn pages(&mut self) -> u64 {
        self.instance
            .get_memory(&mut self.store, "memory")
            .map_or(0, |memory| memory.size(&self.store))
    }
}

struct MeteredProvider {
    module: MeteredModule,
    meter: Meter,
    running: Option<Running>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl WebAssemblyEngineProvider for MeteredProvider {
    fn init(&mut self, host: Arc<ModuleState>) -> std::result::Result<(), BoxError> {
        let wasi = wasi_common::sync::WasiCtxBuilder::new()
            .inherit_stdio()
            .build();
        let engine = self.module.module.engine();
        let mut store = Store::new(
            engine,
            Data {
                wasi,
                host: Some(host),
            },
        );
        store.set_fuel(self.module.fuel)?;
        let instance = self
            .module
            .linker
            .instantiate(&mut store, &self.module.module)?;
        // The waPC start functions, as wasmtime-provider calls them; a WASI
        // exit with status 0 is a guest that returned from `main`.
        for start in wapc_functions::REQUIRED_STARTS {
            if let Ok(function) = instance.get_typed_func::<(), ()>(&mut store, start) {
                if let Err(e) = function.call(&mut store, ()) {
                    let exited = e
                        .downcast_ref::<wasi_common::I32Exit>()
                        .is_some_and(|exit| exit.0 == 0);
                    if !exited {
                        return Err(format!("{start}: {e}").into());
                    }
                }
            }
        }
        let guest_call = instance
            .get_typed_func::<(i32, i32), i32>(&mut store, wapc_functions::GUEST_CALL)
            .map_err(|_| format!("the module exports no {}", wapc_functions::GUEST_CALL))?;
        self.running = Some(Running {
            store,
            instance,
            guest_call,
        });
        Ok(())
    }

    fn call(&mut self, op_length: i32, msg_length: i32) -> std::result::Result<i32, BoxError> {
        let fuel = self.module.fuel;
        let running = self
            .running
            .as_mut()
            .ok_or("the metered provider was called before init")?;
        running.store.set_fuel(fuel)?;
        let pages_before = running.pages();
        let outcome = running
            .guest_call
            .call(&mut running.store, (op_length, msg_length));
        let left = running.store.get_fuel()?;
        let out_of_fuel = matches!(
            outcome
                .as_ref()
                .err()
                .and_then(|e| e.downcast_ref::<Trap>()),
            Some(Trap::OutOfFuel)
        );
        let cost = CallCost {
            fuel: fuel - left,
            out_of_fuel,
            pages_before,
            pages_after: running.pages(),
        };
        *self.meter.lock().unwrap_or_else(PoisonError::into_inner) = Some(cost);
        match outcome {
            Ok(result) => Ok(result),
            // As wasmtime-provider: a trap is the guest's error, the call's
            // result 0.
            Err(e) => {
                let message = if out_of_fuel {
                    format!("guest code ran out of fuel: more than {fuel} instructions")
                } else {
                    e.to_string()
                };
                if let Some(host) = &running.store.data().host {
                    host.set_guest_error(message);
                }
                Ok(0)
            }
        }
    }

    fn replace(&mut self, _module: &[u8]) -> std::result::Result<(), BoxError> {
        Err("a metered module cannot be replaced: make a new one".into())
    }
}

/// The guest's exported memory and the waPC state, as every waPC host
/// function needs them.
fn parts(caller: &mut Caller<'_, Data>) -> wasmtime::Result<(Memory, Arc<ModuleState>)> {
    let memory = caller
        .get_export("memory")
        .and_then(|export| export.into_memory())
        .ok_or_else(|| format_err!("the module exports no memory"))?;
    let host = caller
        .data()
        .host
        .clone()
        .ok_or_else(|| format_err!("waPC host call before init"))?;
    Ok((memory, host))
}

/// `len` bytes of the guest's memory at `ptr`; out of bounds is an error
/// (a trap), never a panic.
fn bytes(
    caller: &Caller<'_, Data>,
    memory: Memory,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<Vec<u8>> {
    let start = usize::try_from(ptr)?;
    let end = start.checked_add(usize::try_from(len)?);
    end.and_then(|end| memory.data(caller.as_context()).get(start..end))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| format_err!("guest memory out of bounds: {len} bytes at {ptr}"))
}

fn text(caller: &Caller<'_, Data>, memory: Memory, ptr: i32, len: i32) -> wasmtime::Result<String> {
    String::from_utf8(bytes(caller, memory, ptr, len)?).map_err(|e| format_err!("not UTF-8: {e}"))
}

fn write(
    caller: &mut Caller<'_, Data>,
    memory: Memory,
    ptr: i32,
    data: &[u8],
) -> wasmtime::Result<()> {
    memory
        .write(caller.as_context_mut(), usize::try_from(ptr)?, data)
        .map_err(|e| format_err!("{e}"))
}

fn length(data: Option<usize>) -> i32 {
    data.map_or(0, |len| i32::try_from(len).unwrap_or(i32::MAX))
}

/// The waPC host functions (wapc.io's protocol: the guest asks for its
/// request, hands back its response or error, calls the host and reads
/// its answer), on `ModuleState` as wasmtime-provider answers them.
fn add_wapc_to_linker(linker: &mut Linker<Data>) -> wasmtime::Result<()> {
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::GUEST_REQUEST_FN,
        |mut caller: Caller<'_, Data>, op_ptr: i32, ptr: i32| {
            let (memory, host) = parts(&mut caller)?;
            if let Some(invocation) = host.get_guest_request() {
                write(&mut caller, memory, ptr, &invocation.msg)?;
                write(&mut caller, memory, op_ptr, invocation.operation.as_bytes())?;
            }
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_CONSOLE_LOG,
        |mut caller: Caller<'_, Data>, ptr: i32, len: i32| {
            let (memory, host) = parts(&mut caller)?;
            host.do_console_log(&text(&caller, memory, ptr, len)?);
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_CALL,
        |mut caller: Caller<'_, Data>,
         bd_ptr: i32,
         bd_len: i32,
         ns_ptr: i32,
         ns_len: i32,
         op_ptr: i32,
         op_len: i32,
         ptr: i32,
         len: i32| {
            let (memory, host) = parts(&mut caller)?;
            let payload = bytes(&caller, memory, ptr, len)?;
            let binding = text(&caller, memory, bd_ptr, bd_len)?;
            let namespace = text(&caller, memory, ns_ptr, ns_len)?;
            let operation = text(&caller, memory, op_ptr, op_len)?;
            Ok(host
                .do_host_call(&binding, &namespace, &operation, &payload)
                .unwrap_or(0))
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_RESPONSE_FN,
        |mut caller: Caller<'_, Data>, ptr: i32| {
            let (memory, host) = parts(&mut caller)?;
            if let Some(response) = host.get_host_response() {
                write(&mut caller, memory, ptr, &response)?;
            }
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_RESPONSE_LEN_FN,
        |mut caller: Caller<'_, Data>| {
            let (_, host) = parts(&mut caller)?;
            Ok(length(host.get_host_response().map(|r| r.len())))
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::GUEST_RESPONSE_FN,
        |mut caller: Caller<'_, Data>, ptr: i32, len: i32| {
            let (memory, host) = parts(&mut caller)?;
            host.set_guest_response(bytes(&caller, memory, ptr, len)?);
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::GUEST_ERROR_FN,
        |mut caller: Caller<'_, Data>, ptr: i32, len: i32| {
            let (memory, host) = parts(&mut caller)?;
            host.set_guest_error(text(&caller, memory, ptr, len)?);
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_ERROR_FN,
        |mut caller: Caller<'_, Data>, ptr: i32| {
            let (memory, host) = parts(&mut caller)?;
            if let Some(error) = host.get_host_error() {
                write(&mut caller, memory, ptr, error.as_bytes())?;
            }
            Ok(())
        },
    )?;
    linker.func_wrap(
        HOST_NAMESPACE,
        wapc_functions::HOST_ERROR_LEN_FN,
        |mut caller: Caller<'_, Data>| {
            let (_, host) = parts(&mut caller)?;
            Ok(length(host.get_host_error().map(|e| e.len())))
        },
    )?;
    Ok(())
}

/// One request's work counted and timed (`policy-runner cost`).
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    /// What the call cost on the metered engine.
    pub cost: CallCost,
    /// The median time of a call on policy-server's engine.
    pub median: std::time::Duration,
    /// Timed calls.
    pub calls: usize,
}

impl Measurement {
    /// Instructions per second: the fuel over the median time.
    pub fn instructions_per_second(&self) -> f64 {
        self.cost.fuel as f64 / self.median.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fuel {} instructions{}; linear memory {:.1} MiB after the call ({:.1} MiB grown); \
             median {:.3} ms over {} calls on policy-server's engine: {:.2e} instructions/s",
            self.cost.fuel,
            if self.cost.out_of_fuel {
                " (out of fuel)"
            } else {
                ""
            },
            self.cost.memory_bytes() as f64 / 1048576.0,
            self.cost.growth_bytes() as f64 / 1048576.0,
            self.median.as_secs_f64() * 1000.0,
            self.calls,
            self.instructions_per_second()
        )
    }
}

/// `validate` of `request` with `settings` (the Node list answered with
/// `nodes`): its cost on a fresh metered instance, then `calls` timed
/// calls on one instance of policy-server's engine (the guest's call
/// alone, as fuel counts it: the payload made once, the answer not read).
pub fn cost(
    bytes: &[u8],
    request: &serde_json::Value,
    settings: &serde_json::Value,
    nodes: Option<Vec<u8>>,
    calls: usize,
) -> Result<Measurement> {
    let payload = crate::protocol::validate_payload(request, settings)?;
    let module = MeteredModule::new(bytes, UNBOUNDED_FUEL)?;
    let metered = crate::Policy::metered(&module)?;
    metered.set_nodes(nodes.clone());
    metered.call("validate", &payload)?;
    let cost = metered
        .last_cost()
        .ok_or_else(|| Error::Input("no cost recorded".into()))?;
    let ordinary = crate::Policy::from_bytes(bytes)?;
    ordinary.set_nodes(nodes);
    let mut times = Vec::with_capacity(calls.max(1));
    for _ in 0..calls.max(1) {
        let start = std::time::Instant::now();
        ordinary.call("validate", &payload)?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(Measurement {
        cost,
        median: times.get(times.len() / 2).copied().unwrap_or_default(),
        calls: times.len(),
    })
}
