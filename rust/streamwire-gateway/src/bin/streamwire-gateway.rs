//! `streamwire-gateway`: the PIP-64 REST gateway as a plain binary (no Python needed).
//! Flags and environment: see `GatewayConfig::USAGE`; stops cleanly on Ctrl-C or SIGTERM.
//! Its log (access records, engine events) is logfmt on stderr, at `--log-level`.

use streamwire_gateway::config::{GatewayConfig, USAGE};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let config = match GatewayConfig::parse(&args, |k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("streamwire-gateway: {e}");
            std::process::exit(2);
        }
    };
    streamwire_gateway::logging::install_stderr(config.log_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("streamwire-gateway: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let listen = config.listen;
    let scheme = if config.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    let result = runtime.block_on(async move {
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
        };
        eprintln!("streamwire-gateway listening on {scheme}://{listen}");
        streamwire_gateway::serve(config, shutdown).await
    });
    streamwire_gateway::logging::flush();
    if let Err(e) = result {
        eprintln!("streamwire-gateway: {e}");
        std::process::exit(1);
    }
}
