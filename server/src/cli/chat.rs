//! `kennel chat AGENT`: a conversation in the terminal. Each line typed is a turn on the
//! daemon (`POST /api/agents/{id}/messages`, with a person present); while it runs, the
//! agent's event stream shows the reply as it is written and each tool call as it happens.
//! Lines starting with `/` are the chat's own commands; Ctrl-C stops the running turn through
//! `POST /api/agents/{id}/sessions/{session}/cancel`. `--quiet` and `--json` make stdout a
//! script's: the replies only, or one JSON result per turn.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use kennel_kernel::session::TERMINAL_LABEL;
use kennel_kernel::text::shorten;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::daemon::{Daemon, EventStream};
use super::keyboard::{Keep, Keyboard, Typed};

#[derive(Deserialize)]
struct AgentInfo {
    id: Uuid,
    name: String,
    status: String,
}

#[derive(Deserialize)]
struct SessionInfo {
    id: Uuid,
    agent_id: Uuid,
}

/// How long events of a finished turn may trail its answer before the chat stops waiting.
const TRAILING_EVENTS: Duration = Duration::from_millis(500);
/// What the chat asks with: a message, or the answer to an agent's question.
const PROMPT: &str = "you> ";
const ANSWER_PROMPT: &str = "answer> ";
/// Arguments and results are shown on one line, cut to this many characters.
const SHOWN_CHARS: usize = 160;

/// What the chat writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The reply as it is written, tool calls and notes as they happen (banners on stderr
    /// when stdout is not a terminal).
    Live,
    /// Each reply only, whole; failures on stderr.
    Quiet,
    /// One JSON object per turn: the API's turn result, or `{"error": …}`.
    Json,
}

/// What the person typed: a message for the agent, or a command for the chat itself.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Message(&'a str),
    Help,
    Exit,
    /// The next message opens a new session.
    New,
    /// Which session the chat is in.
    Session,
    Unknown(&'a str),
}

const HELP: &str = "\
/help      this list
/session   the session's id (continue it later with `kennel chat AGENT --session ID`)
/new       the next message opens a new session
/exit      leave (also /quit, Ctrl-D, or Ctrl-C at the prompt)
//text     send a message that starts with /
Ctrl-C while the agent works stops the turn; the agent goes on running.";

/// The commands [`Line::of`] knows, for Tab to complete.
pub(super) const COMMANDS: [&str; 5] = ["/help", "/session", "/new", "/exit", "/quit"];

impl Line<'_> {
    fn of(typed: &str) -> Line<'_> {
        let typed = typed.trim();
        if typed.starts_with("//") {
            return Line::Message(&typed[1..]);
        }
        match typed {
            "/help" | "/?" => Line::Help,
            "/exit" | "/quit" => Line::Exit,
            "/new" => Line::New,
            "/session" => Line::Session,
            command if command.starts_with('/') => Line::Unknown(command.split_whitespace().next().unwrap_or(command)),
            message => Line::Message(message),
        }
    }
}

pub async fn chat(home: &Path, agent: &str, session: Option<Uuid>, output: Output) -> anyhow::Result<()> {
    let daemon = Daemon::of(home)?;
    let agent: AgentInfo = daemon.get(&format!("/api/agents/{}", super::agent_ref(agent)?)).await?;
    if agent.status != "running" {
        bail!(
            "agent `{0}` is {1}: start it with `kennel agent start {0}` or Start on its page",
            agent.name,
            agent.status
        );
    }
    let mut session = match session {
        Some(id) => {
            let found: SessionInfo = daemon.get(&format!("/api/sessions/{id}")).await?;
            if found.agent_id != agent.id {
                bail!("session {id} is another agent's, not `{}`'s", agent.name);
            }
            Some(found.id)
        }
        None => None,
    };
    // Subscribed before the first message, so no event of its turn is missed.
    let mut events = daemon.events(&format!("/api/agents/{}/events", agent.id)).await?;

    let interactive = std::io::stdin().is_terminal();
    match session {
        Some(id) => banner(output, &format!("chatting with `{}` in session {id}", agent.name)),
        None => banner(output, &format!("chatting with `{}`", agent.name)),
    }
    if interactive {
        banner(output, "/help lists the chat's commands; /exit or Ctrl-D leaves");
    }
    let mut keyboard = Keyboard::open(home);
    // One listener for the whole chat, so a Ctrl-C between two waits is not lost.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let (mut turns, mut failed) = (0, 0);
    loop {
        if keyboard.left_waiting_at(ANSWER_PROMPT) {
            eprintln!("(the question is no longer waiting: what you type now goes to the agent)");
        }
        let typed = tokio::select! {
            typed = keyboard.next(PROMPT, Keep::Remembered) => typed?,
            // A signal at the prompt leaves as Ctrl-C always did (the read waiting on the
            // terminal would keep a clean return from ending the process).
            _ = interrupts.recv() => leave(&keyboard),
        };
        let typed = match typed {
            Typed::Line(typed) => typed,
            Typed::End => break,
            Typed::Interrupted => leave(&keyboard),
        };
        let message = match Line::of(&typed) {
            Line::Message("") => continue,
            Line::Message(message) => message,
            Line::Exit => break,
            Line::Help => {
                eprintln!("{HELP}");
                continue;
            }
            Line::New => {
                session = None;
                eprintln!("(the next message opens a new session)");
                continue;
            }
            Line::Session => {
                match session {
                    Some(id) => eprintln!("session {id}"),
                    None => eprintln!("no session yet: the next message opens one"),
                }
                continue;
            }
            Line::Unknown(command) => {
                let command = super::terminal_safe(command);
                eprintln!("unknown command `{command}`: /help lists them (// sends a message that starts with /)");
                continue;
            }
        };
        turns += 1;
        // Opened with the first message, so a chat that says nothing leaves no session.
        let id = match session {
            Some(id) => id,
            None => {
                let path = format!("/api/agents/{}/sessions", agent.id);
                let id = daemon.post::<SessionInfo>(&path, &json!({ "label": TERMINAL_LABEL })).await?.id;
                banner(output, &format!("(session {id}: continue it later with --session {id})"));
                *session.insert(id)
            }
        };
        if !turn(&daemon, &agent, id, message, (&mut events, &mut keyboard, &mut interrupts), output).await? {
            failed += 1;
        }
    }
    if interactive {
        println!();
    } else if failed > 0 {
        // A script learns from the exit status that something went wrong.
        bail!("{failed} of {turns} turns failed");
    }
    Ok(())
}

/// A line about the chat itself (whom it talks to, its session): on stdout for a person at
/// a terminal, on stderr when stdout is piped, and nowhere with `--quiet` or `--json`, so
/// what a script reads from stdout is only what the agent said.
fn banner(output: Output, text: &str) {
    match output {
        Output::Live if std::io::stdout().is_terminal() => println!("{text}"),
        Output::Live => eprintln!("{text}"),
        Output::Quiet | Output::Json => {}
    }
}

/// Leaves the chat as Ctrl-C does: the terminal as it was found, status 130.
fn leave(keyboard: &Keyboard) -> ! {
    keyboard.restore();
    println!();
    std::process::exit(130);
}

/// Runs one turn, showing its events until it ends; whether it succeeded. A turn that fails
/// is shown and the chat goes on; only losing the daemon ends it. Ctrl-C cancels the turn (a
/// second one, while it ends, leaves the chat).
async fn turn(
    daemon: &Daemon,
    agent: &AgentInfo,
    session: Uuid,
    message: &str,
    (events, keyboard, interrupts): (&mut EventStream, &mut Keyboard, &mut tokio::signal::unix::Signal),
    output: Output,
) -> anyhow::Result<bool> {
    let path = format!("/api/agents/{}/messages", agent.id);
    let body = json!({ "message": message, "session": session });
    let answer = daemon.post::<Value>(&path, &body);
    tokio::pin!(answer);
    let mut view = TurnView::new(&agent.name, session, message, output);
    let mut cancelling = false;
    let answer = loop {
        tokio::select! {
            answer = &mut answer => break answer,
            _ = interrupts.recv() => stop_turn(daemon, agent, session, &mut cancelling, keyboard, &mut view).await,
            event = events.next() => match event? {
                Some((name, data)) => {
                    view.show(&name, &data);
                    let Some(asked) = view.asked(&name, &data) else { continue };
                    // The turn waits for the answer: the next line typed (or piped) is it.
                    tokio::select! {
                        typed = keyboard.next(ANSWER_PROMPT, Keep::Forgotten) => match typed? {
                            Typed::Line(line) => send_answer(daemon, &asked, &line, &mut view).await,
                            Typed::End => view.aside("(no answer: the input ended; the turn goes on when it stops waiting)"),
                            Typed::Interrupted => stop_turn(daemon, agent, session, &mut cancelling, keyboard, &mut view).await,
                        },
                        done = &mut answer => break done,
                    }
                }
                None => bail!("the daemon closed the event stream (it is stopping)"),
            },
        }
    };
    // The answer can overtake the turn's last events; give them a moment.
    while !view.ended {
        match tokio::time::timeout(TRAILING_EVENTS, events.next()).await {
            Ok(Ok(Some((name, data)))) => view.show(&name, &data),
            _ => break,
        }
    }
    match answer {
        Ok(result) => {
            let followed = view.turn.as_deref().is_some_and(|t| result["turn_id"].as_str() == Some(t));
            match output {
                Output::Live => view.finish(result["reply"].as_str().unwrap_or_default(), followed),
                Output::Quiet => quiet_reply(result["reply"].as_str().unwrap_or_default()),
                Output::Json => println!("{result}"),
            }
            Ok(true)
        }
        Err(e) if e.is::<super::daemon::NoDaemon>() => Err(e),
        Err(e) => {
            match output {
                Output::Live => view.failed(&e.to_string()),
                Output::Quiet => eprintln!("turn failed: {}", super::terminal_safe(&e.to_string())),
                Output::Json => println!("{}", json!({ "error": e.to_string() })),
            }
            Ok(false)
        }
    }
}

/// Ctrl-C during a turn: the first stops the turn, a second one (while it ends) leaves.
async fn stop_turn(
    daemon: &Daemon,
    agent: &AgentInfo,
    session: Uuid,
    cancelling: &mut bool,
    keyboard: &Keyboard,
    view: &mut TurnView<'_>,
) {
    if *cancelling {
        leave(keyboard);
    }
    *cancelling = true;
    view.aside("(stopping the turn: Ctrl-C again leaves the chat)");
    let cancel = format!("/api/agents/{}/sessions/{session}/cancel", agent.id);
    if let Err(e) = daemon.post::<Value>(&cancel, &json!({})).await {
        view.aside(&format!("(the turn was not stopped: {e})"));
    }
}

/// A reply, whole, on its own line (`--quiet`).
fn quiet_reply(reply: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe ends the chat at the next read; nothing to do here.
    let _ = writeln!(out, "{}", super::terminal_safe(reply)).and_then(|()| out.flush());
}

/// An `ask_user` question of the followed turn, by id.
struct Asked(String);

/// Sends the line typed as the answer (the daemon reads a choice's number as that choice).
async fn send_answer(daemon: &Daemon, asked: &Asked, line: &str, view: &mut TurnView<'_>) {
    let path = format!("/api/questions/{}/answer", asked.0);
    if let Err(e) = daemon.post::<Value>(&path, &json!({ "answer": line.trim() })).await {
        view.aside(&format!("the answer was not taken: {e}"));
    }
}

/// What the terminal shows of one turn, from its events: those of the turn that started in
/// this session with this message (another person's turn in the same session, or a late
/// event of an earlier one, is not shown).
struct TurnView<'a> {
    agent: &'a str,
    session: String,
    message: &'a str,
    /// The id of the turn followed, from its `turn_started`.
    turn: Option<String>,
    /// The stream lagged: some events were missed.
    missed: bool,
    /// The reply's text is being written on the current line.
    writing: bool,
    /// The text streamed in the current model call.
    text: String,
    /// A `turn_failed` event was shown.
    shown_failure: bool,
    ended: bool,
    /// Only `Output::Live` shows the turn as it happens.
    output: Output,
}

impl<'a> TurnView<'a> {
    fn new(agent: &'a str, session: Uuid, message: &'a str, output: Output) -> TurnView<'a> {
        TurnView {
            agent,
            session: session.to_string(),
            message,
            turn: None,
            missed: false,
            writing: false,
            text: String::new(),
            shown_failure: false,
            ended: false,
            output,
        }
    }

    fn show(&mut self, name: &str, data: &Value) {
        if name == "lagged" {
            self.note("(the terminal fell behind and missed some of the turn; the reply follows whole)");
            self.missed = true;
            return;
        }
        let turn = data["turn_id"].as_str();
        if self.turn.is_none()
            && name == "turn_started"
            && data["session_id"].as_str() == Some(&self.session)
            && data["message"].as_str() == Some(self.message)
        {
            self.turn = turn.map(str::to_string);
        }
        if turn.is_none() || turn != self.turn.as_deref() {
            return;
        }
        let s = |key: &str| data[key].as_str().unwrap_or_default().to_string();
        match name {
            "model_call" => self.text.clear(),
            "text_delta" => {
                if !self.writing {
                    self.out(&format!("{}> ", self.agent));
                    self.writing = true;
                }
                let piece = s("text");
                self.text.push_str(&piece);
                self.out(&piece);
            }
            "tool_call_started" => {
                let args = one_line(&data["arguments"].to_string());
                self.note(&format!("→ {} {args}", s("name")));
            }
            "tool_call_finished" => {
                let took = data["duration_us"].as_u64().unwrap_or(0) as f64 / 1000.0;
                let summary = one_line(&s("summary"));
                self.note(&format!("← {} {} ({took:.1} ms) {summary}", s("name"), s("outcome")));
            }
            "question" => {
                self.aside(&format!("? {}", s("question")));
                for (i, choice) in data["choices"].as_array().into_iter().flatten().enumerate() {
                    self.aside(&format!("  {}. {}", i + 1, choice.as_str().unwrap_or_default()));
                }
            }
            "approval" => self.aside(&format!(
                "(`{}` waits for approval: {}. Decide with `kennel approvals approve {}` or `deny`)",
                s("tool"),
                s("reason"),
                s("approval_id")
            )),
            "reply_reset" => {
                self.note("(the provider's stream broke off; the reply starts again)");
                self.text.clear();
            }
            "queued" => self.note(&format!("(waiting for a free place at provider `{}`)", s("provider"))),
            "fallback" => self.note(&format!("(moving from {} to {}: {})", s("from"), s("to"), one_line(&s("reason")))),
            "compacted" => self.note(&format!(
                "(the conversation was compacted to fit the model's context window: {} messages summarised, {} results stubbed)",
                data["summarised"], data["stubbed"]
            )),
            "turn_ended" => {
                let ended = s("ended");
                if ended != "reply" {
                    self.note(&format!("(the turn ended: {})", ended.replace('_', " ")));
                }
                self.ended = true;
            }
            "turn_failed" => {
                self.note(&format!("turn failed: {}", s("message")));
                self.shown_failure = true;
                self.ended = true;
            }
            _ => {}
        }
    }

    /// The question `event` asks, if it is one of the followed turn's.
    fn asked(&self, name: &str, data: &Value) -> Option<Asked> {
        if name != "question" || self.turn.is_none() || data["turn_id"].as_str() != self.turn.as_deref() {
            return None;
        }
        Some(Asked(data["question_id"].as_str()?.to_string()))
    }

    /// The turn's answer: its reply is on screen already unless the stream missed some of
    /// it (or the provider does not stream, or the events followed were another turn's), then
    /// it is shown whole.
    fn finish(&mut self, reply: &str, followed: bool) {
        if !reply.is_empty() && (self.text != reply || self.missed || !followed) {
            if self.writing {
                self.out("\n");
            }
            self.out(&format!("{}> {reply}", self.agent));
            self.writing = true;
        }
        self.end_line();
    }

    fn failed(&mut self, message: &str) {
        if !self.shown_failure {
            self.note(&format!("turn failed: {message}"));
        }
        self.end_line();
    }

    /// A line about the turn (a tool call, a note), on a line of its own.
    fn note(&mut self, line: &str) {
        self.end_line();
        self.out(&format!("  {line}\n"));
    }

    fn end_line(&mut self) {
        if self.writing {
            self.out("\n");
            self.writing = false;
        }
    }

    /// A line the person must see whatever the output (a question, a stop): with the turn
    /// when it is shown live, else on stderr, out of what a script reads.
    fn aside(&mut self, line: &str) {
        match self.output {
            Output::Live => self.note(line),
            Output::Quiet | Output::Json => eprintln!("{}", super::terminal_safe(line)),
        }
    }

    /// Writes the live turn to the terminal, escape sequences the agent wrote made harmless.
    fn out(&self, text: &str) {
        if self.output != Output::Live {
            return;
        }
        let mut out = std::io::stdout().lock();
        // A closed terminal ends the chat at the next read; nothing to do here.
        let _ = out.write_all(super::terminal_safe(text).as_bytes()).and_then(|()| out.flush());
    }
}

/// `text` on one line, cut short.
fn one_line(text: &str) -> String {
    shorten(&text.split_whitespace().collect::<Vec<_>>().join(" "), SHOWN_CHARS)
}
