use clap::Parser;

/// mimalloc instead of glibc's malloc: the host allocates and frees small
/// buffers for every job (the port's job hashes, Redis replies, the
/// sandbox's store), and glibc's malloc and free were a fifth of its CPU
/// per job (docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    no_transparent_huge_pages();
    // The crash points `FAILPOINTS` names (test builds only).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "airlock=info,warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colours only for a terminal: logs in files stay greppable.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // TLS for the CLI's HTTPS connections uses ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = airlock::cli::Cli::parse();
    match airlock::cli::execute(cli).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}

/// Turns transparent huge pages off for this process. mimalloc asks for
/// them (`MADV_HUGEPAGE`) on its heap, so on a kernel in THP `madvise`
/// mode every fresh 2 MiB of heap is zeroed at once on its first fault: a
/// quarter of the CPU of compiling a StarlingMonkey component (`perf`:
/// `clear_page_erms` under `folio_zero_user`), 4.5 s against 3.0 s for
/// `airlock run` of a rebuilt handler. Guests' linear memories are not
/// affected (they never ask for huge pages). Best effort: an older
/// kernel without the option changes nothing.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `PR_SET_THP_DISABLE` takes plain integers and touches no
    // memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
