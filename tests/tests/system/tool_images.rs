//! A tool result's image reaches the model: the kernel in-process with a test tool marked
//! `returns_image` (it writes a PNG to the agent's workspace, as a screenshot tool does),
//! turns answered by the fake provider over both wire protocols, and the requests it received
//! read back.

use std::path::Path;

use base64::Engine;
use kennel_kernel::Kernel;
use kennel_kernel::agent::{ManifestInput, SpawnRequest};
use kennel_kernel::config::Config;
use kennel_kernel::tool::{CallContext, Caller, Needs, NoArgs, Provided, Tool, ToolDef};
use kennel_kernel::turn::TurnRequest;
use kennel_kernel::workspace::Workspaces;
use kennel_tests::fake_llm::{FakeLlm, Recorded, Scripted};
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xdf, 0xc0, 0xf0, 0x1f, 0x00, 0x06, 0x80, 0x02, 0x7f, 0x10, 0x4c, 0x1b,
    0xe1, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
const SHOT: &str = "screenshots/shot.png";

/// Writes [`PNG`] to the caller's workspace and answers as a screenshot tool does.
struct Screenshot(std::sync::Arc<Workspaces>);

impl Tool for Screenshot {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("test_screenshot", "test", "writes a PNG to the workspace").returns_image()
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> kennel_kernel::Result<Value> {
        let file = self.0.write(ctx.agent.id, SHOT, PNG.to_vec()).await?;
        Ok(json!({"path": file.path, "media_type": "image/png", "bytes": file.bytes, "width": 1, "height": 1}))
    }
}

/// A kernel with providers `anthropic`, `openai` (images unset) and `vision` (OpenAI-kind,
/// `images = true` for model `m`), all at `llm`, and an agent of each granted the tool.
async fn open(home: &Path, llm: &FakeLlm) -> Kernel {
    let config = format!(
        "{}{}{}{}[providers.vision.models.m]\nimages = true\n",
        kennel_tests::fake_llm::default_provider("anthropic"),
        llm.provider_config("anthropic", "anthropic"),
        llm.provider_config("openai", "openai"),
        llm.provider_config("vision", "openai"),
    );
    let config = Config::parse(Path::new("config.toml"), &config).unwrap();
    let kernel = Kernel::open_with(home, config).await.unwrap();
    kernel.tool_list().provide(
        "test",
        vec![Provided::typed(Screenshot(kernel.services().need()), &Needs::nothing())],
        "gone",
    );
    for provider in ["anthropic", "openai", "vision"] {
        let agent_type = format!("{provider}-type");
        let manifest = json!({"name": agent_type, "provider": provider, "model": "m", "tools": ["test_screenshot"]});
        kernel
            .agents()
            .create_type(kennel_kernel::error::from_value::<ManifestInput>(manifest).unwrap())
            .await
            .unwrap();
        let spawn = SpawnRequest { agent_type, name: Some(provider.into()), ..Default::default() };
        kernel.spawn_agent(spawn).await.unwrap();
    }
    kernel
}

/// One turn of `agent` that takes a screenshot; the request that sent its result.
async fn screenshot_turn(
    kernel: &Kernel,
    llm: &FakeLlm,
    agent: &str,
    session: Option<uuid::Uuid>,
) -> (Recorded, uuid::Uuid) {
    llm.push(Scripted::call("test_screenshot", json!({})));
    llm.push(Scripted::text("I see it."));
    let before = llm.requests().len();
    let mut req = TurnRequest::headless("take a screenshot", Caller::Token("test".into()));
    req.session = session;
    let turn = kernel.send_message(agent, req).await.unwrap_or_else(|e| panic!("{agent}: {}", e.message));
    assert_eq!(turn.reply, "I see it.");
    let requests = llm.requests();
    assert_eq!(requests.len(), before + 2, "one call for the tool, one with its result");
    (requests[before + 1].clone(), turn.session_id)
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn a_tool_results_image_goes_to_models_that_take_images_and_its_path_to_others() {
    let llm = FakeLlm::start().await;
    let home = tempfile::tempdir().unwrap();
    let kernel = open(home.path(), &llm).await;

    // Anthropic: the image in the tool result, as the file's bytes.
    let (sent, session) = screenshot_turn(&kernel, &llm, "anthropic", None).await;
    assert_eq!(sent.protocol, "anthropic");
    let messages = sent.body["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result");
    let content = result["content"].as_array().unwrap_or_else(|| panic!("text and image blocks: {result}"));
    assert_eq!(content[0]["type"], "text");
    assert!(content[0]["text"].as_str().unwrap().contains(SHOT));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64(PNG)}})
    );
    // The stored session keeps the image's path, not its bytes.
    let stored = kernel.sessions().messages(session).await.unwrap();
    let stored = serde_json::to_value(&stored[2].message).unwrap();
    assert_eq!(stored["image"], json!({"path": SHOT, "media_type": "image/png"}));

    // The agent deleted the file: the next turn sends its path, and does not fail.
    let folder = home.path().join("workspaces").join(kernel.agents().get("anthropic").unwrap().id.to_string());
    std::fs::remove_file(folder.join(SHOT)).unwrap();
    llm.push(Scripted::text("It is gone."));
    let mut req = TurnRequest::headless("and now?", Caller::Token("test".into()));
    req.session = Some(session);
    kernel.send_message("anthropic", req).await.unwrap();
    let again = llm.requests().last().unwrap().clone();
    let result = &again.body["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    let text = result["content"].as_str().unwrap_or_else(|| panic!("text only: {result}"));
    assert!(text.ends_with(&format!("\n[image saved at {SHOT} in your workspace]")), "{text}");

    // OpenAI-compatible without `images`: the path in the tool message, no image part.
    let (sent, _) = screenshot_turn(&kernel, &llm, "openai", None).await;
    assert_eq!(sent.protocol, "openai");
    let last = sent.body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool");
    let text = last["content"].as_str().unwrap();
    assert!(
        text.ends_with(&format!("\n[image saved at {SHOT} in your workspace; this model is not sent images]")),
        "{text}"
    );
    assert!(!sent.body.to_string().contains("image_url"), "{}", sent.body);

    // OpenAI-compatible with `images = true`: the tool message, then a user message with the image.
    let (sent, _) = screenshot_turn(&kernel, &llm, "vision", None).await;
    let messages = sent.body["messages"].as_array().unwrap();
    let (tool, images) = (&messages[messages.len() - 2], &messages[messages.len() - 1]);
    assert_eq!(tool["role"], "tool");
    assert!(!tool["content"].as_str().unwrap().contains("[image saved"), "{tool}");
    assert_eq!(
        images["content"][2],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", base64(PNG))}})
    );
    assert_eq!(images["role"], "user");
}
