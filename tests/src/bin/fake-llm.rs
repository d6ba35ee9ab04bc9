//! `fake-llm [--bind ADDR]`: the scripted fake LLM provider as a process, for end-to-end
//! tests. Script it with `POST /_script`, read what it was sent with `GET /_requests`.

use clap::Parser;
use kennel_tests::fake_llm::FakeLlm;

#[derive(Parser)]
#[command(about = "A scripted LLM provider speaking the OpenAI and Anthropic wire protocols, for tests.")]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: std::net::SocketAddr,
    /// Answer every request the script does not cover with this text (load tests).
    #[arg(long)]
    reply: Option<String>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let fake = FakeLlm::start_on(args.bind).await;
    if let Some(text) = args.reply {
        fake.set_fallback(kennel_tests::fake_llm::Scripted::text(&text));
    }
    println!("fake-llm listening on {}", fake.base_url());
    std::future::pending::<()>().await;
}
