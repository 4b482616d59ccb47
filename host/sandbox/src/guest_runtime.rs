//! The tokio runtime guests run on, owned by the sandbox and shut down
//! without blocking when it is dropped (see the crate docs for why guests
//! get a runtime of their own).

/// The runtime guests run on, owned by the sandbox.
pub(crate) struct GuestRuntime {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl GuestRuntime {
    pub(crate) fn start(threads: usize) -> std::io::Result<GuestRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("airlock-guest")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(GuestRuntime {
            runtime: Some(runtime),
            handle,
        })
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for GuestRuntime {
    fn drop(&mut self) {
        // A runtime may not be dropped (blocking) inside another's context.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
