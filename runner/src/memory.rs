//! Observing a guest's linear memory.
//!
//! wasmtime-provider keeps its `Store` and `Instance` private and the waPC
//! host owns the provider, so the `memory` export cannot be read after a call.
//! Instead, the engine is given a memory creator that allocates the linear
//! memory itself and can report its size. The module, the waPC host and the
//! calls stay the real ones; only where the guest's bytes live changes (and
//! the bounds-check strategy with it, so this engine is for measuring memory,
//! not time).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime_provider::wasmtime::{Config, Engine, LinearMemory, MemoryCreator, MemoryType};

/// Host page size the allocation is aligned to.
const CHUNK: usize = 4096;

#[repr(C, align(4096))]
struct Chunk([u8; CHUNK]);

/// A linear memory in a `Vec` of zeroed, page-aligned chunks. It may move
/// when it grows; the engine is configured to allow that (explicit bounds
/// checks, base reloaded after calls).
struct VecMemory {
    chunks: Vec<Chunk>,
    /// From `as_mut_ptr`, refreshed after every reallocation, so wasm code
    /// may write through it.
    base: *mut u8,
    size: Arc<AtomicUsize>,
}

// SAFETY: `base` points into `chunks`, which this struct owns; wasmtime
// serializes access to a store's memories.
unsafe impl Send for VecMemory {}
// SAFETY: as above; `&VecMemory` only hands out the pointer and sizes.
unsafe impl Sync for VecMemory {}

impl VecMemory {
    fn new(bytes: usize, size: Arc<AtomicUsize>) -> VecMemory {
        let mut memory = VecMemory {
            chunks: Vec::new(),
            base: std::ptr::null_mut(),
            size,
        };
        memory.resize(bytes);
        memory
    }

    fn resize(&mut self, bytes: usize) {
        self.chunks
            .resize_with(bytes.div_ceil(CHUNK), || Chunk([0; CHUNK]));
        self.base = self.chunks.as_mut_ptr().cast::<u8>();
        self.size.store(bytes, Ordering::Relaxed);
    }
}

// SAFETY: the memory is zero-filled, page aligned, exactly `byte_size` bytes
// long and never accessed outside wasmtime; without guard pages the engine
// bounds-checks every access (see `probing_engine`).
unsafe impl LinearMemory for VecMemory {
    fn byte_size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }

    fn byte_capacity(&self) -> usize {
        // Any growth may reallocate: say so, so wasmtime does not assume a
        // fixed base.
        self.byte_size()
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime_provider::wasmtime::Result<()> {
        self.resize(new_size);
        Ok(())
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base
    }
}

/// Creates `VecMemory`s and remembers each one's size cell.
struct ProbingCreator {
    memories: Arc<Mutex<Vec<Arc<AtomicUsize>>>>,
}

// SAFETY: every memory it returns satisfies `LinearMemory`'s contract above.
unsafe impl MemoryCreator for ProbingCreator {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        _maximum: Option<usize>,
        _reserved_size_in_bytes: Option<usize>,
        _guard_size_in_bytes: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        let size = Arc::new(AtomicUsize::new(0));
        self.memories
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&size));
        Ok(Box::new(VecMemory::new(minimum, size)))
    }
}

/// Reads the current size of the linear memories an engine created.
#[derive(Clone, Default)]
pub struct MemoryProbe {
    memories: Arc<Mutex<Vec<Arc<AtomicUsize>>>>,
}

impl std::fmt::Debug for MemoryProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryProbe")
            .field("last_size", &self.last_size())
            .finish()
    }
}

impl MemoryProbe {
    /// Size in bytes of the most recently created linear memory (the guest
    /// instance created last), if any.
    pub fn last_size(&self) -> Option<usize> {
        self.memories
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .map(|size| size.load(Ordering::Relaxed))
    }
}

/// An engine whose linear memories can be observed through the probe.
pub fn probing_engine() -> Result<(Engine, MemoryProbe), String> {
    let probe = MemoryProbe::default();
    let mut config = Config::new();
    config
        .with_host_memory(Arc::new(ProbingCreator {
            memories: Arc::clone(&probe.memories),
        }))
        // No virtual reservation and no guard pages: the memory is a plain
        // heap allocation, so every access must be bounds-checked and the
        // base may move when the guest grows its memory.
        .memory_reservation(0)
        .memory_guard_size(0)
        .memory_reservation_for_growth(0)
        .memory_may_move(true)
        .guard_before_linear_memory(false)
        // Copy-on-write images need an mmap-backed memory.
        .memory_init_cow(false);
    let engine = Engine::new(&config).map_err(|e| e.to_string())?;
    Ok((engine, probe))
}
