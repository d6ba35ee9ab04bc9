//! The media family through the real path (image and speech generation, transcription): the registry, the grant,
//! argument checks, real ffmpeg on recordings the test makes (espeak-ng speech, an
//! ffmpeg-made video with an audio track, a 25-minute recording walked window by window), and
//! the fake provider's OpenAI transcription endpoint (a real multipart upload).

use std::path::{Path, PathBuf};
use std::process::Command;

use kennel_tests::fake_llm::FakeLlm;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::agent_from;

async fn media_daemon() -> (kennel_tests::Home, kennel_tests::Daemon, kennel_tests::Api, FakeLlm) {
    let llm = FakeLlm::start().await;
    let config = format!(
        "[media.providers.local]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\
         [media.tools]\nmedia_transcribe = \"local\"\nspeech_to_text = \"local\"\n\
         image_generate = \"local\"\ntext_to_speech = \"local\"\n\
         image_analyze = \"local\"\nmedia_describe = \"local\"\n\
         [media.models]\nmedia_transcribe = \"whisper-large\"\n",
        llm.base_url()
    );
    let (home, d, api) = crate::daemon_with_config(&config).await;
    (home, d, api, llm)
}

fn workspace(home: &kennel_tests::Home, agent: &str) -> PathBuf {
    let dir = home.path().join("workspaces").join(agent);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A recording of `secs` seconds of tone, as a small mono MP3.
fn tone(path: &Path, secs: u32) {
    let source = format!("sine=frequency=330:duration={secs}:sample_rate=8000");
    run(
        "ffmpeg",
        &["-v", "error", "-y", "-f", "lavfi", "-i", &source, "-ac", "1", "-b:a", "16k", path.to_str().unwrap()],
    );
}

/// A test-pattern video of `secs` seconds (MPEG-4), with a tone as its audio track if asked.
fn video(path: &Path, secs: u32, with_audio: bool) {
    let picture = format!("testsrc=duration={secs}:size=320x240:rate=10");
    let mut args = vec!["-v", "error", "-y", "-f", "lavfi", "-i", &picture];
    let sound = format!("sine=frequency=500:duration={secs}");
    if with_audio {
        args.extend(["-f", "lavfi", "-i", &sound, "-c:a", "aac", "-shortest"]);
    }
    args.extend(["-c:v", "mpeg4", path.to_str().unwrap()]);
    run("ffmpeg", &args);
}

fn transcriptions(llm: &FakeLlm) -> Vec<Value> {
    llm.requests().into_iter().filter(|r| r.protocol == "transcription").map(|r| r.body).collect()
}

#[tokio::test]
async fn a_long_recording_is_transcribed_window_by_window_into_a_file_to_its_end() {
    let (home, _d, api, llm) = media_daemon().await;
    let scribe = agent_from(&api, json!({"name": "scribe", "tools": ["media_transcribe"]})).await;
    tone(&workspace(&home, &scribe).join("meeting.mp3"), 1500);

    let mut start = 0.0;
    let mut windows = Vec::new();
    loop {
        let args = json!({"audio_or_video": "meeting.mp3", "start_sec": start, "max_secs": 600, "out_path": "notes/meeting.txt", "language": "en"});
        let r = api.invoke(&scribe, "media_transcribe", args).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let c = r.body["content"].clone();
        assert!(c.get("text").is_none(), "the transcript goes to the file, not the context: {c}");
        windows.push(c.clone());
        if c["has_more"] == false {
            assert_eq!(c["next_start_sec"], Value::Null);
            break;
        }
        start = c["next_start_sec"].as_f64().expect("where the next window starts");
        assert!(windows.len() < 5, "the walk ends: {windows:?}");
    }
    assert_eq!(windows.len(), 3, "{windows:?}");
    let secs: Vec<f64> = windows.iter().map(|w| w["window"]["secs"].as_f64().unwrap()).collect();
    assert!((secs[0] - 600.0).abs() < 0.05 && (secs[1] - 600.0).abs() < 0.05, "{secs:?}");
    assert!((secs[2] - 300.0).abs() < 1.0, "the last window is what was left: {secs:?}");
    assert!((windows[2]["duration_sec"].as_f64().unwrap() - 1500.0).abs() < 1.0);

    let file = std::fs::read(workspace(&home, &scribe).join("notes/meeting.txt")).unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    assert_eq!(text.lines().count(), 3, "the first window created it, the others appended: {text:?}");
    assert!(text.starts_with("[600.00 s of audio/wav]\n"), "{text:?}");
    let last = windows.last().unwrap();
    assert_eq!(last["written_to"], "notes/meeting.txt");
    assert_eq!(last["file_bytes"], file.len());
    assert_eq!(last["sha256"], hex::encode(Sha256::digest(&file)));
    assert_eq!(last["window_preview"], text.lines().last().unwrap());

    let sent = transcriptions(&llm);
    assert_eq!(sent.len(), 3);
    assert_eq!((sent[0]["model"].as_str(), sent[0]["language"].as_str()), (Some("whisper-large"), Some("en")));
    assert_eq!(sent[0]["file"]["content_type"], "audio/wav");
    assert_eq!(sent[0]["response_format"], "json");

    // Starting over at 0 replaces the file.
    let again = api
        .invoke(
            &scribe,
            "media_transcribe",
            json!({"audio_or_video": "meeting.mp3", "max_secs": 60, "out_path": "notes/meeting.txt"}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.text);
    let text = std::fs::read_to_string(workspace(&home, &scribe).join("notes/meeting.txt")).unwrap();
    assert_eq!(text, "[60.00 s of audio/wav]");

    // Just past the end (inside the margin) is an empty last window; further is refused.
    let tail =
        api.invoke(&scribe, "media_transcribe", json!({"audio_or_video": "meeting.mp3", "start_sec": 1505})).await;
    assert_eq!(tail.status, 200, "{}", tail.text);
    assert_eq!(
        (tail.body["content"]["text"].as_str(), tail.body["content"]["has_more"].as_bool()),
        (Some(""), Some(false))
    );
    let past =
        api.invoke(&scribe, "media_transcribe", json!({"audio_or_video": "meeting.mp3", "start_sec": 1600})).await;
    assert_eq!(past.error_kind(), "InvalidArguments", "{}", past.text);
    assert!(
        past.error_message().contains("recording is 1500.") && past.error_message().contains("past its end"),
        "{}",
        past.text
    );
    assert_eq!(transcriptions(&llm).len(), 4, "neither the empty window nor the refusal reached the provider");
}

#[tokio::test]
async fn speech_and_video_are_transcribed_and_an_unknown_extension_is_refused_or_guessed() {
    let (home, _d, api, llm) = media_daemon().await;
    let ear = agent_from(&api, json!({"name": "ear", "tools": ["media_transcribe", "speech_to_text"]})).await;
    let dir = workspace(&home, &ear);
    run("espeak-ng", &["-w", dir.join("hello.wav").to_str().unwrap(), "Hello from the kennel."]);
    video(&dir.join("clip.mp4"), 4, true);
    std::fs::copy(dir.join("hello.wav"), dir.join("voice.memo")).unwrap();

    let spoken = api.invoke(&ear, "speech_to_text", json!({"audio_or_video": "hello.wav", "prompt": "kennel"})).await;
    assert_eq!(spoken.status, 200, "{}", spoken.text);
    let secs = spoken.body["content"]["duration_sec"].as_f64().unwrap();
    assert!(secs > 0.5 && secs < 5.0, "{}", spoken.text);
    assert_eq!(spoken.body["content"]["text"], format!("[{secs:.2} s of audio/wav]"));

    let from_video = api.invoke(&ear, "media_transcribe", json!({"audio_or_video": "clip.mp4"})).await;
    assert_eq!(from_video.status, 200, "{}", from_video.text);
    let window = from_video.body["content"]["window"]["secs"].as_f64().unwrap();
    assert!((window - 4.0).abs() < 0.2, "the video's audio track: {}", from_video.text);
    assert_eq!(from_video.body["content"]["has_more"], false);

    // An extension media_transcribe does not know is refused; speech_to_text sends the file
    // as it is, its type guessed from its first bytes.
    let refused = api.invoke(&ear, "media_transcribe", json!({"audio_or_video": "voice.memo"})).await;
    assert_eq!(refused.error_kind(), "InvalidArguments");
    assert!(refused.error_message().contains(".mp3") && refused.error_message().contains(".mp4"), "{}", refused.text);
    let guessed = api.invoke(&ear, "speech_to_text", json!({"audio_or_video": "voice.memo"})).await;
    assert_eq!(guessed.status, 200, "{}", guessed.text);
    assert_eq!(guessed.body["content"]["sent_as"], "audio/wav");
    let last = transcriptions(&llm).pop().unwrap();
    assert_eq!(last["file"]["file_name"], "voice.memo");
    assert_eq!(last["file"]["bytes"], std::fs::metadata(dir.join("voice.memo")).unwrap().len());
}

#[tokio::test]
async fn both_size_limits_refuse_with_the_size_measured_and_paths_stay_in_the_workspace() {
    let (home, _d, api, llm) = media_daemon().await;
    let ear = agent_from(&api, json!({"name": "ear", "tools": ["media_transcribe", "speech_to_text"]})).await;
    let dir = workspace(&home, &ear);
    let big = std::fs::File::create(dir.join("huge.mp3")).unwrap();
    big.set_len(50_000_001).unwrap();
    let too_big = api.invoke(&ear, "media_transcribe", json!({"audio_or_video": "huge.mp3"})).await;
    assert_eq!(too_big.error_kind(), "InvalidArguments", "{}", too_big.text);
    assert!(
        too_big.error_message().contains("50,000,001 bytes")
            && too_big.error_message().contains("at most 50,000,000 bytes"),
        "{}",
        too_big.text
    );

    // 700 s of audio is 22.4 MB as the WAV that would be sent: refused before sending.
    tone(&dir.join("long.mp3"), 700);
    let long = api.invoke(&ear, "speech_to_text", json!({"audio_or_video": "long.mp3"})).await;
    assert_eq!(long.error_kind(), "InvalidArguments", "{}", long.text);
    assert!(
        long.error_message().contains("22,400,0") && long.error_message().contains("at most 20,000,000 bytes"),
        "{}",
        long.text
    );
    assert!(long.error_message().contains("media_transcribe"), "says what to use instead");

    // Paths: outside, absolute, encoded, a link out, a URL: none is read.
    let outside = home.path().join("secret.mp3");
    tone(&outside, 2);
    std::os::unix::fs::symlink(&outside, dir.join("link.mp3")).unwrap();
    for path in [
        "../secret.mp3",
        "/etc/passwd.mp3",
        outside.to_str().unwrap(),
        "%2e%2e/secret.mp3",
        "link.mp3",
        "http://127.0.0.1/a.mp3",
        "notes/../../secret.mp3",
    ] {
        for tool in ["media_transcribe", "speech_to_text"] {
            let r = api.invoke(&ear, tool, json!({"audio_or_video": path})).await;
            assert!([403, 404, 422].contains(&r.status), "{tool} {path}: {}", r.text);
        }
    }
    let out = api
        .invoke(
            &ear,
            "media_transcribe",
            json!({"audio_or_video": "long.mp3", "max_secs": 5, "out_path": "../escape.txt"}),
        )
        .await;
    assert_eq!(out.error_kind(), "InvalidArguments", "{}", out.text);
    assert!(!home.path().join("workspaces/escape.txt").exists());
    // A playlist saved under a media name, naming a file elsewhere and a URL: ffmpeg reads
    // only single-file formats, so neither is opened.
    let playlist = format!(
        "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile:{}\n#EXTINF:2,\n{}/audio/x.mp3\n#EXT-X-ENDLIST\n",
        outside.display(),
        llm.base_url()
    );
    std::fs::write(dir.join("playlist.mp4"), playlist).unwrap();
    for tool in ["media_transcribe", "speech_to_text"] {
        let r = api.invoke(&ear, tool, json!({"audio_or_video": "playlist.mp4"})).await;
        assert_eq!(r.error_kind(), "InvalidArguments", "{tool}: {}", r.text);
    }
    let bad = api.invoke(&ear, "media_transcribe", json!({"audio_or_video": "long.mp3", "max_secs": 900})).await;
    assert_eq!(bad.error_kind(), "InvalidArguments");
    assert!(bad.text.contains("max_secs"), "{}", bad.text);
    assert!(transcriptions(&llm).is_empty(), "nothing was sent");
}

#[tokio::test]
async fn without_a_media_provider_the_tools_are_excluded_with_the_reason() {
    let (_home, _d, api) = crate::daemon().await;
    let tools = api.get("/api/tools?limit=200").await;
    let find = |name: &str| tools.body.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().expect(name);
    for name in ["media_transcribe", "speech_to_text"] {
        let t = find(name);
        assert_eq!(t["family"], "media");
        assert_eq!(t["availability"]["state"], "excluded");
        assert!(t["availability"]["reason"].as_str().unwrap().contains(&format!("[media.tools] {name}")), "{t}");
    }
    let agent = agent_from(&api, json!({"name": "ear", "tools": ["media_transcribe"]})).await;
    let r = api.invoke(&agent, "media_transcribe", json!({"audio_or_video": "a.mp3"})).await;
    assert_eq!(r.error_kind(), "Unavailable", "{}", r.text);
}

#[tokio::test]
async fn generated_images_and_speech_land_in_the_workspace_and_only_their_facts_come_back() {
    let (home, _d, api, llm) = media_daemon().await;
    let maker =
        agent_from(&api, json!({"name": "maker", "tools": ["image_generate", "text_to_speech", "speech_to_text"]}))
            .await;

    let image = api
        .invoke(&maker, "image_generate", json!({"prompt": "a kennel at dawn", "size": "512x512", "style": "natural"}))
        .await;
    assert_eq!(image.status, 200, "{}", image.text);
    let c = &image.body["content"];
    let path = c["path"].as_str().unwrap();
    assert!(path.starts_with("output/image-") && path.ends_with(".png"), "{c}");
    assert_eq!(
        (c["mime"].as_str(), c["width"].as_u64(), c["height"].as_u64()),
        (Some("image/png"), Some(512), Some(512))
    );
    assert_eq!(c["revised_prompt"], "a kennel at dawn, in flat blue");
    let on_disk = std::fs::read(workspace(&home, &maker).join(path)).unwrap();
    assert_eq!(c["bytes"], on_disk.len());
    assert!(!image.text.contains("b64") && image.text.len() < 1000, "no image bytes in the answer: {}", image.text);
    let sent = llm.requests().into_iter().find(|r| r.protocol == "image").unwrap().body;
    assert_eq!(
        (sent["model"].as_str(), sent["style"].as_str(), sent["response_format"].as_str()),
        (Some("gpt-image-1"), Some("natural"), Some("b64_json"))
    );

    let text = "Dinner is at seven. The kennel closes at nine.";
    let spoken = api.invoke(&maker, "text_to_speech", json!({"text": text, "voice": "nova"})).await;
    assert_eq!(spoken.status, 200, "{}", spoken.text);
    let c = &spoken.body["content"];
    let audio = c["path"].as_str().unwrap().to_string();
    assert!(audio.starts_with("output/speech-") && audio.ends_with(".mp3"), "{c}");
    let secs = c["duration_sec"].as_f64().unwrap();
    assert!((secs - text.chars().count() as f64 * 0.05).abs() < 0.2, "its length, from ffprobe: {c}");
    // What was made can be heard again.
    let heard = api.invoke(&maker, "speech_to_text", json!({"audio_or_video": audio})).await;
    assert_eq!(heard.status, 200, "{}", heard.text);
    assert!(heard.body["content"]["text"].as_str().unwrap().contains("s of audio/wav"));

    for (tool, args, field) in [
        ("image_generate", json!({"prompt": "x", "size": "13x13"}), "size"),
        ("image_generate", json!({"prompt": "  "}), "prompt"),
        ("image_generate", json!({"prompt": "x", "style": "<b>"}), "style"),
        ("text_to_speech", json!({"text": "x".repeat(4097)}), "text"),
        ("text_to_speech", json!({"text": "hi", "voice": "../../etc"}), "voice"),
    ] {
        let r = api.invoke(&maker, tool, args).await;
        assert_eq!(r.error_kind(), "InvalidArguments", "{tool}: {}", r.text);
        assert_eq!(r.body["error"]["fields"][0]["field"], field, "{tool}: {}", r.text);
    }
}

#[tokio::test]
async fn images_are_asked_about_and_a_video_is_described_from_four_frames_across_it() {
    let (home, _d, api, llm) = media_daemon().await;
    let eye =
        agent_from(&api, json!({"name": "eye", "tools": ["image_generate", "image_analyze", "media_describe"]})).await;
    let dir = workspace(&home, &eye);
    video(&dir.join("walk.mp4"), 8, false);
    let made = api.invoke(&eye, "image_generate", json!({"prompt": "a blue square", "size": "256x256"})).await;
    let image = made.body["content"]["path"].as_str().expect("an image").to_string();

    llm.push(kennel_tests::fake_llm::Scripted::text("It is a flat blue square."));
    let asked = api.invoke(&eye, "image_analyze", json!({"image": image, "question": "What colour is it?"})).await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    assert_eq!(asked.body["content"]["answer"], "It is a flat blue square.");
    let chat = llm.requests().into_iter().rev().find(|r| r.protocol == "openai").unwrap().body;
    let parts = chat["messages"][0]["content"].as_array().unwrap().clone();
    assert_eq!(parts[0]["text"], "What colour is it?");
    assert!(
        parts[1]["image_url"]["url"].as_str().unwrap().starts_with("data:image/png;base64,iVBOR"),
        "the PNG itself"
    );

    llm.push(kennel_tests::fake_llm::Scripted::text("A test pattern with a moving counter."));
    let described = api.invoke(&eye, "media_describe", json!({"image_or_video": "walk.mp4"})).await;
    assert_eq!(described.status, 200, "{}", described.text);
    let c = &described.body["content"];
    assert_eq!(
        (c["kind"].as_str(), c["description"].as_str()),
        (Some("video"), Some("A test pattern with a moving counter."))
    );
    assert_eq!(c["frames_at_sec"], json!([1.0, 3.0, 5.0, 7.0]), "the middles of the four quarters: {c}");
    let chat = llm.requests().into_iter().rev().find(|r| r.protocol == "openai").unwrap().body;
    let frames: Vec<&str> = chat["messages"][0]["content"].as_array().unwrap()[1..]
        .iter()
        .map(|p| p["image_url"]["url"].as_str().unwrap())
        .collect();
    assert_eq!(frames.len(), 4);
    assert!(frames.iter().all(|f| f.starts_with("data:image/jpeg;base64,/9j/")), "four JPEG frames");
    assert_eq!(frames.iter().collect::<std::collections::BTreeSet<_>>().len(), 4, "four different moments");

    let not_image = api.invoke(&eye, "image_analyze", json!({"image": "walk.mp4", "question": "?"})).await;
    assert_eq!(not_image.error_kind(), "InvalidArguments", "{}", not_image.text);
    let url = api.invoke(&eye, "media_describe", json!({"image_or_video": "https://example.com/cat.png"})).await;
    assert_eq!(url.error_kind(), "InvalidArguments");
    assert!(url.error_message().contains("not a URL"), "{}", url.text);
}

fn replicate_config(llm: &FakeLlm, allowed: bool) -> String {
    let port = llm.addr.port();
    let hosts = if allowed { format!("allowed_hosts = [\"127.0.0.1:{port}\"]\n") } else { String::new() };
    format!(
        "[media]\n{hosts}[media.providers.rep]\nkind = \"replicate\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\
         [media.tools]\nvideo_generate = \"rep\"\nmusic_generate = \"rep\"\n\
         [media.models]\nmusic_generate = \"meta/musicgen\"\n",
        llm.base_url()
    )
}

#[tokio::test]
async fn a_video_job_survives_a_restart_and_lands_in_the_workspace_and_music_waits_for_its_file() {
    let llm = FakeLlm::start().await;
    let home = kennel_tests::Home::with_config(&replicate_config(&llm, true));
    let token = home.token("tests").await;
    let d = home.start().await;
    let api = d.api(&token);
    let director = agent_from(&api, json!({"name": "director", "tools": ["media.*"]})).await;

    let started =
        api.invoke(&director, "video_generate", json!({"prompt": "a dog runs on a beach", "duration_secs": 5})).await;
    assert_eq!(started.status, 200, "{}", started.text);
    let task = started.body["content"]["task_id"].as_str().unwrap().to_string();
    assert_eq!(started.body["content"]["status"], "starting");
    let sent = llm.requests().into_iter().find(|r| r.protocol == "prediction").unwrap().body;
    assert_eq!(
        (sent["model"].as_str(), sent["body"]["input"]["duration"].as_u64()),
        (Some("minimax/video-01"), Some(5))
    );

    // The daemon restarts while the provider works; the job is still there.
    d.stop().await;
    let d = home.start().await;
    let api = d.api(&token);
    let first = api.invoke(&director, "video_status", json!({"task_id": task})).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(
        (first.body["content"]["status"].as_str(), first.body["content"]["done"].as_bool()),
        (Some("processing"), Some(false))
    );
    let done = api.invoke(&director, "video_status", json!({"task_id": task})).await;
    let c = done.body["content"].clone();
    assert_eq!(
        (c["status"].as_str(), c["done"].as_bool(), c["mime"].as_str()),
        (Some("succeeded"), Some(true), Some("video/mp4")),
        "{c}"
    );
    let path = c["path"].as_str().unwrap();
    assert!(path.starts_with("output/video-") && path.ends_with(".mp4"), "{c}");
    let file = home.path().join("workspaces").join(&director).join(path);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), c["bytes"].as_u64().unwrap());
    let again = api.invoke(&director, "video_status", json!({"task_id": task})).await;
    assert_eq!(again.body["content"]["path"], path, "downloaded once, then answered from the store");

    let music =
        api.invoke(&director, "music_generate", json!({"prompt": "a calm piano piece", "lyrics": "la la"})).await;
    assert_eq!(music.status, 200, "{}", music.text);
    let track = music.body["content"]["path"].as_str().unwrap();
    assert!(track.starts_with("output/music-") && track.ends_with(".mp3"), "{}", music.text);

    // A failed job says why; another agent's job is not found; a bad task id neither.
    let failing = api.invoke(&director, "video_generate", json!({"prompt": "please fail"})).await;
    let failing = failing.body["content"]["task_id"].as_str().unwrap().to_string();
    api.invoke(&director, "video_status", json!({"task_id": failing})).await;
    let failed = api.invoke(&director, "video_status", json!({"task_id": failing})).await;
    assert_eq!(failed.body["content"]["status"], "failed", "{}", failed.text);
    assert!(failed.body["content"]["error"].as_str().unwrap().contains("please fail"));
    let other = agent_from(&api, json!({"name": "other", "tools": ["video_status"]})).await;
    assert_eq!(api.invoke(&other, "video_status", json!({"task_id": task})).await.error_kind(), "NotFound");
    let bad = api.invoke(&director, "music_generate", json!({"prompt": "please fail"})).await;
    assert_eq!(bad.error_kind(), "Failed", "{}", bad.text);
}

#[tokio::test]
async fn a_finished_video_on_a_host_the_guard_does_not_allow_is_not_downloaded() {
    let llm = FakeLlm::start().await;
    let (_home, _d, api) = crate::daemon_with_config(&replicate_config(&llm, false)).await;
    let director = agent_from(&api, json!({"name": "director", "tools": ["media.*"]})).await;
    let started = api.invoke(&director, "video_generate", json!({"prompt": "a cat"})).await;
    let task = started.body["content"]["task_id"].as_str().unwrap().to_string();
    api.invoke(&director, "video_status", json!({"task_id": task})).await;
    let refused = api.invoke(&director, "video_status", json!({"task_id": task})).await;
    assert_eq!(refused.error_kind(), "Forbidden", "loopback is reached only through an IP entry: {}", refused.text);
    assert!(refused.error_message().contains("[media] allowed_hosts"), "{}", refused.text);
}

#[tokio::test]
async fn without_ffmpeg_the_tools_that_need_it_are_excluded_and_the_others_stay() {
    let llm = FakeLlm::start().await;
    let config = format!(
        "[media]\nffmpeg = \"/nonexistent/bin/ffmpeg\"\n[media.providers.local]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\
         [media.tools]\nmedia_transcribe = \"local\"\nspeech_to_text = \"local\"\nmedia_describe = \"local\"\nimage_generate = \"local\"\n",
        llm.base_url()
    );
    let (_home, _d, api) = crate::daemon_with_config(&config).await;
    let tools = api.get("/api/tools?limit=200").await;
    let state = |name: &str| {
        let t = tools.body.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().expect(name);
        (
            t["availability"]["state"].as_str().unwrap().to_string(),
            t["availability"]["reason"].as_str().unwrap_or_default().to_string(),
        )
    };
    for name in ["media_transcribe", "speech_to_text", "media_describe"] {
        let (s, reason) = state(name);
        assert_eq!(s, "excluded", "{name}");
        assert!(reason.contains("/nonexistent/bin/ffmpeg") && reason.contains("does not exist"), "{name}: {reason}");
    }
    assert_eq!(state("image_generate").0, "registered", "needs no ffmpeg");
}

/// A media provider that says "later" (429 with `Retry-After`, a 5xx) is asked again, backing
/// off, the multipart transcription upload included; a refusal (400) is not, nor is a "later"
/// past `max_retries`.
#[tokio::test]
async fn a_provider_that_says_later_is_asked_again_and_a_refusal_is_not() {
    let (home, _d, api, llm) = media_daemon().await;
    let maker = agent_from(&api, json!({"name": "maker", "tools": ["image_generate", "speech_to_text"]})).await;
    let count = |protocol: &str| llm.requests().iter().filter(|r| r.protocol == protocol).count();

    llm.refuse_media_next(429, Some(1));
    llm.refuse_media_next(503, None);
    let started = std::time::Instant::now();
    let image = api.invoke(&maker, "image_generate", json!({"prompt": "a kennel at dawn"})).await;
    assert_eq!(image.status, 200, "{}", image.text);
    assert_eq!(count("image"), 3, "two refusals, then the image");
    assert!(started.elapsed() >= std::time::Duration::from_millis(1400), "waited 1 s as asked, then 0.5 s");

    llm.refuse_media_next(400, None);
    let refused = api.invoke(&maker, "image_generate", json!({"prompt": "a kennel at dusk"})).await;
    assert!(refused.error_message().contains("(400 Bad Request)"), "{}", refused.text);
    assert_eq!(count("image"), 4, "a refusal is not asked again");

    for _ in 0..4 {
        llm.refuse_media_next(500, Some(0));
    }
    let gave_up = api.invoke(&maker, "image_generate", json!({"prompt": "a kennel at noon"})).await;
    assert!(gave_up.error_message().contains("(500 Internal Server Error)"), "{}", gave_up.text);
    assert_eq!(count("image"), 8, "the first try and max_retries = 3 more");

    tone(&workspace(&home, &maker).join("note.mp3"), 2);
    llm.refuse_media_next(502, Some(0));
    let heard = api.invoke(&maker, "speech_to_text", json!({"audio_or_video": "note.mp3"})).await;
    assert_eq!(heard.status, 200, "{}", heard.text);
    let sent = transcriptions(&llm);
    assert_eq!(sent.len(), 2, "the upload was sent again");
    assert_eq!(sent[0]["file"], sent[1]["file"], "whole both times: {sent:?}");
}
