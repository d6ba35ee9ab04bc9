//! What a person types into `kennel chat`. On a terminal, each line is edited as in a shell
//! (arrows, Home/End, Ctrl-W, Ctrl-R to search) and kept in a history shared by every chat on
//! this home; piped, lines are read as they come.
//!
//! The line editor blocks while it reads, so it lives on a thread of its own and the chat asks
//! it for one line at a time. Between two asks the terminal is in its normal mode, so the
//! reply streams, and Ctrl-C reaches the chat as a signal that stops the turn.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Config, Context, Editor, Helper};
use tokio::io::AsyncBufReadExt;

use super::chat::COMMANDS;

/// Where the chat's history is kept, in the home (private to its owner).
pub const HISTORY_FILE: &str = "chat-history";
/// Lines the history keeps; older ones are dropped.
const HISTORY_LINES: usize = 1000;

/// One thing typed.
#[derive(Debug, PartialEq, Eq)]
pub enum Typed {
    Line(String),
    /// Ctrl-D on an empty line, or the end of piped input.
    End,
    /// Ctrl-C while the editor had the terminal.
    Interrupted,
}

/// Which lines go into the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// A message or a command, recalled with the arrows next time.
    Remembered,
    /// An answer to an agent's question: of no use later.
    Forgotten,
}

pub struct Keyboard {
    source: Source,
}

enum Source {
    Terminal(EditorThread),
    /// `prompted`: stdin is a terminal (but stdout is not), so prompts are written plainly.
    Piped {
        lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
        prompted: bool,
    },
}

impl Keyboard {
    /// Edited lines when stdin and stdout are a terminal the editor can drive, else plain ones.
    pub fn open(home: &Path) -> Keyboard {
        let stdin = std::io::stdin().is_terminal();
        if stdin
            && std::io::stdout().is_terminal()
            && let Some(editor) = EditorThread::start(home.join(HISTORY_FILE))
        {
            return Keyboard { source: Source::Terminal(editor) };
        }
        let lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        Keyboard { source: Source::Piped { lines, prompted: stdin } }
    }

    /// The next line typed after `prompt`. Cancel-safe: when the chat stops waiting (the turn
    /// ended before its question was answered), the line being typed is the next call's.
    pub async fn next(&mut self, prompt: &str, keep: Keep) -> std::io::Result<Typed> {
        match &mut self.source {
            Source::Terminal(editor) => editor.next(prompt, keep).await,
            Source::Piped { lines, prompted } => {
                if *prompted {
                    let mut out = std::io::stdout().lock();
                    out.write_all(prompt.as_bytes())?;
                    out.flush()?;
                }
                Ok(lines.next_line().await?.map_or(Typed::End, Typed::Line))
            }
        }
    }

    /// Whether a line is being typed at `prompt` that an earlier call asked for and left.
    pub fn left_waiting_at(&self, prompt: &str) -> bool {
        matches!(&self.source, Source::Terminal(editor) if editor.waiting.as_deref() == Some(prompt))
    }

    /// Puts the terminal back as the chat found it, for leaving while the editor holds it
    /// (a signal at the prompt ends the process without the editor's own clean-up).
    pub fn restore(&self) {
        if let Source::Terminal(editor) = &self.source {
            editor.found.restore();
        }
    }
}

/// One ask of the editor thread.
struct Ask {
    prompt: String,
    keep: Keep,
}

struct EditorThread {
    asks: std::sync::mpsc::Sender<Ask>,
    typed: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<Typed>>,
    /// The prompt of an ask not answered yet.
    waiting: Option<String>,
    found: TerminalMode,
}

impl EditorThread {
    /// None when the terminal cannot be edited (the editor then says why in its error).
    fn start(history: PathBuf) -> Option<EditorThread> {
        let config = Config::builder()
            .max_history_size(HISTORY_LINES)
            .ok()?
            .history_ignore_dups(true)
            .ok()?
            // A line typed with a leading space is not kept, as in a shell: for a secret.
            .history_ignore_space(true)
            .auto_add_history(false)
            .build();
        let mut editor = Editor::<Commands, DefaultHistory>::with_config(config).ok()?;
        editor.set_helper(Some(Commands));
        // A first chat has no history yet; an unreadable one is started afresh.
        let _ = editor.load_history(&history);
        let found = TerminalMode::of_stdin()?;
        let (asks, asked) = std::sync::mpsc::channel::<Ask>();
        let (answers, typed) = tokio::sync::mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("chat-keyboard".into())
            .spawn(move || {
                // Ends when the chat drops its side.
                while let Ok(ask) = asked.recv() {
                    let line = read(&mut editor, &ask, &history);
                    if answers.send(line).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(EditorThread { asks, typed, waiting: None, found })
    }

    async fn next(&mut self, prompt: &str, keep: Keep) -> std::io::Result<Typed> {
        if self.waiting.is_none() {
            self.asks
                .send(Ask { prompt: prompt.to_string(), keep })
                .map_err(|_| std::io::Error::other("the line editor stopped"))?;
            self.waiting = Some(prompt.to_string());
        }
        let typed = self.typed.recv().await.unwrap_or_else(|| Err(std::io::Error::other("the line editor stopped")));
        self.waiting = None;
        typed
    }
}

/// Reads one line; a line to keep is added to the history and appended to its file at once,
/// so two chats open at the same time both keep theirs.
fn read(editor: &mut Editor<Commands, DefaultHistory>, ask: &Ask, history: &Path) -> std::io::Result<Typed> {
    match editor.readline(&ask.prompt) {
        Ok(line) => {
            if ask.keep == Keep::Remembered
                && !line.trim().is_empty()
                && editor.add_history_entry(line.as_str()).unwrap_or(false)
            {
                // A history that cannot be written costs the recall, not the message.
                let _ = editor.append_history(history);
            }
            Ok(Typed::Line(line))
        }
        Err(ReadlineError::Eof) => Ok(Typed::End),
        Err(ReadlineError::Interrupted) => Ok(Typed::Interrupted),
        Err(ReadlineError::Io(e)) => Err(e),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

/// Completes the chat's own commands with Tab; no hints, colours or multi-line input.
struct Commands;

impl Helper for Commands {}
impl Highlighter for Commands {}
impl Validator for Commands {}
impl Hinter for Commands {
    type Hint = String;
}

impl Completer for Commands {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        let typed = &line[..pos];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Ok((pos, Vec::new()));
        }
        Ok((0, COMMANDS.iter().filter(|c| c.starts_with(typed)).map(|c| c.to_string()).collect()))
    }
}

/// The terminal's settings when the chat started.
struct TerminalMode(libc::termios);

impl TerminalMode {
    fn of_stdin() -> Option<TerminalMode> {
        // SAFETY: termios is plain data that tcgetattr fills in whole on success.
        let mut mode: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 0 is open (it was found to be a terminal) and `mode` is writable.
        (unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut mode) } == 0).then_some(TerminalMode(mode))
    }

    fn restore(&self) {
        // SAFETY: the settings read from this terminal, set back on it. A failure leaves the
        // terminal as it is; the process is leaving.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_the_chats_commands_only() {
        let history = DefaultHistory::new();
        let context = Context::new(&history);
        let complete = |line: &str| Commands.complete(line, line.len(), &context).unwrap();
        assert_eq!(complete("/se"), (0, vec!["/session".to_string()]));
        assert_eq!(complete("/"), (0, COMMANDS.map(String::from).to_vec()));
        assert_eq!(complete("/help me"), (8, Vec::new()));
        assert_eq!(complete("hello /he"), (9, Vec::new()));
    }
}
