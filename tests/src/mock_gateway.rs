//! The mock mail gateway and ledger of `make run`, for tests.

/// `host/scripts/mock-gateway.js` (what `make run` starts) on a free port.
pub struct MockGateway {
    /// Its base URL.
    pub url: String,
    child: std::process::Child,
}

impl MockGateway {
    /// Starts it; `key` is the API key it accepts.
    pub fn start(key: &str) -> MockGateway {
        MockGateway::start_with_ledger_delay(key, 0)
    }

    /// Starts it with a ledger that answers `delay_ms` late.
    pub fn start_with_ledger_delay(key: &str, delay_ms: u64) -> MockGateway {
        MockGateway::spawn(crate::free_port(), key, delay_ms, &[])
    }

    /// Starts it on `port` as the example shop's backend too
    /// (`/app/`): it pays through the Airlock API at `airlock_url` with
    /// `app_token`, its ledger answering `delay_ms` late.
    pub fn start_shop(port: u16, delay_ms: u64, airlock_url: &str, app_token: &str) -> MockGateway {
        let env = [
            ("AIRLOCK_URL", airlock_url),
            ("AIRLOCK_APP_TOKEN", app_token),
        ];
        MockGateway::spawn(port, "unused", delay_ms, &env)
    }

    fn spawn(port: u16, key: &str, delay_ms: u64, env: &[(&str, &str)]) -> MockGateway {
        let mut child = std::process::Command::new("node")
            .arg(crate::workspace_root().join("host/scripts/mock-gateway.js"))
            .env("MOCK_GATEWAY_LISTEN", format!("127.0.0.1:{port}"))
            .env("MOCK_GATEWAY_KEY", key)
            .env("MOCK_GATEWAY_LEDGER_DELAY_MS", delay_ms.to_string())
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node runs the mock gateway");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(line.starts_with("mock gateway on"), "{line}");
        // Keep reading: the gateway logs a line per request.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        MockGateway {
            url: format!("http://127.0.0.1:{port}"),
            child,
        }
    }
}

impl Drop for MockGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
