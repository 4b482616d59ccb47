use clap::Parser;

/// mimalloc instead of glibc's malloc: the host allocates and frees small
/// buffers for every job (the port's job hashes, Redis replies, the
/// sandbox's store), and glibc's malloc and free were a fifth of its CPU
/// per job (docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
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
